package main

// Pipelined writes (issue 22, item 3: a leader pause under heavy pipelined writes). One session,
// connected to a follower first, keeps up to 16 setData of 32 KB in flight at once: one znode per
// writer, a writer's writes one after the other, the writers' overlapping on the one connection.
// A shared pace of 50 writes a second (1.6 MB/s) keeps the other workloads of the run their
// share of two cores; while the ensemble stalls (a paused leader) all 16 pile up in flight.
// The checker: the session is never told it expired; after every heal a write is acknowledged
// again within 10 s (unless the next fault came first), and after the final heal every key is
// written once more within 10 s (while the ensemble converges); every key's final value is
// intact, one of its own writes and not older than its last acknowledged one (a write whose
// outcome was unknown is never applied after a later acknowledged write of the same session),
// and its version is not below the last acknowledged version.

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	pipelinedPath    = root + "/pipelined"
	pipelinedWriters = 16
	pipelinedSize    = 32 << 10
	pipelinedRate    = 50 // writes a second, all writers together
	resumeMax        = 10 * time.Second
	// pipelinedWait bounds one write; go-zookeeper fails a request itself when its connection
	// goes (4 s without a reply), so this is only a net.
	pipelinedWait = 60 * time.Second
)

type pipeAck struct {
	n   int64
	ver int32
	at  int64
}

// pipeKey is one writer's znode.
type pipeKey struct {
	i         int
	attempted int64 // the highest n sent
	failed    map[int64]bool
	acks      []pipeAck
	final     []byte
	finalVer  int32
	finalErr  error
}

type pipelinedWL struct {
	counts
	s        *Session
	first    int
	keys     []*pipeKey
	mu       sync.Mutex
	ackAt    []int64
	stopAt   int64
	out, max atomic.Int64
	events   *EventLog
	// After the run: every key written once more from the final heal on (from Final's start
	// when there was nothing to heal), each within resumeMax; afterHeal is how long that took.
	finalStarted, resumed chan struct{}
	startFinal            sync.Once
	afterHeal             time.Duration
	afterHealErr          error
}

func (w *pipelinedWL) Name() string { return "pipelined" }

func pipeValue(i int, n int64) []byte {
	b := make([]byte, pipelinedSize)
	h := fmt.Sprintf("pipelined k%d n%d|", i, n)
	copy(b, h)
	for j := len(h); j < len(b); j++ {
		b[j] = byte('a' + (int64(j)*7+n)%26)
	}
	return b
}

// pipeN is the n a value of key i was written with, or -1 if it is none of its values.
func pipeN(i int, data []byte) int64 {
	var k int
	var n int64
	if _, err := fmt.Sscanf(string(data[:min(len(data), 40)]), "pipelined k%d n%d|", &k, &n); err != nil || k != i {
		return -1
	}
	if !bytes.Equal(data, pipeValue(i, n)) {
		return -1
	}
	return n
}

func (w *pipelinedWL) key(i int) string { return fmt.Sprintf("%s/k%d", pipelinedPath, i) }

func (w *pipelinedWL) Setup(env *Env) error {
	w.events = env.Events
	w.finalStarted, w.resumed = make(chan struct{}), make(chan struct{})
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := ensure(s.Conn, pipelinedPath, nil); err != nil {
		return err
	}
	for i := 0; i < pipelinedWriters; i++ {
		if err := ensure(s.Conn, w.key(i), pipeValue(i, 0)); err != nil {
			return err
		}
		w.keys = append(w.keys, &pipeKey{i: i, failed: map[int64]bool{}})
	}
	// The session starts at a follower.
	w.first = 1
	if l := leaderIndex(env); l >= 0 {
		w.first = (l + 1) % len(env.Addrs)
	}
	if w.s, err = dialSession(env.Addrs, w.first); err != nil {
		return err
	}
	return w.s.WaitSession(30 * time.Second)
}

func (w *pipelinedWL) Run(ctx context.Context, env *Env) {
	pace := time.NewTicker(time.Second / pipelinedRate)
	defer pace.Stop()
	var wg sync.WaitGroup
	for _, k := range w.keys {
		wg.Add(1)
		go func(k *pipeKey) {
			defer wg.Done()
			for w.more(ctx, env) {
				select {
				case <-pace.C:
					w.write(env, k)
				case <-time.After(time.Second):
				}
			}
		}(k)
	}
	wg.Wait()
	w.mu.Lock()
	w.stopAt = env.now()
	w.mu.Unlock()
	go func() {
		defer close(w.resumed)
		w.afterFinalHeal(env)
	}()
}

// afterFinalHeal waits for the final heal (or for Final, if there was nothing to heal), then
// writes every key once, each within resumeMax of it.
func (w *pipelinedWL) afterFinalHeal(env *Env) {
	from := int64(-1)
	for from < 0 {
		for _, h := range w.events.HealTimes() {
			if h > w.stopAt {
				from = h
			}
		}
		select {
		case <-w.finalStarted:
			if from < 0 {
				from = env.now()
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
	deadline := env.Start.Add(time.Duration(from) + resumeMax)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	for _, k := range w.keys {
		wg.Add(1)
		go func(k *pipeKey) {
			defer wg.Done()
			var err error
			for time.Now().Before(deadline) {
				if err = w.write(env, k); err == nil {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
			errMu.Lock()
			w.afterHealErr = fmt.Errorf("k%d: %v", k.i, err)
			errMu.Unlock()
		}(k)
	}
	wg.Wait()
	w.afterHeal = time.Duration(env.now() - from)
}

// more: until the run's end, and after it while a heal of the run has no acknowledged write
// after it yet, at most resumeMax and unless another fault came since.
func (w *pipelinedWL) more(ctx context.Context, env *Env) bool {
	if ctx.Err() == nil {
		return true
	}
	now := env.now()
	faults := w.events.FaultTimes()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.events.HealTimes() {
		if now > h+int64(resumeMax) || w.ackedSince(h) {
			continue
		}
		cut := false
		for _, f := range faults {
			cut = cut || f > h
		}
		if !cut {
			return true
		}
	}
	return false
}

// ackedSince: an acknowledgement at or after t (w.mu held).
func (w *pipelinedWL) ackedSince(t int64) bool {
	return len(w.ackAt) > 0 && w.ackAt[len(w.ackAt)-1] >= t
}

// write sends key k's next value and waits for its outcome.
func (w *pipelinedWL) write(env *Env, k *pipeKey) error {
	w.mu.Lock()
	k.attempted++
	n := k.attempted
	w.mu.Unlock()
	out := w.out.Add(1)
	for m := w.max.Load(); out > m && !w.max.CompareAndSwap(m, out); m = w.max.Load() {
	}
	type result struct {
		st  *zk.Stat
		err error
	}
	ch := make(chan result, 1)
	go func() {
		st, err := w.s.Conn.Set(w.key(k.i), pipeValue(k.i, n), -1)
		ch <- result{st, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-time.After(pipelinedWait):
		r.err = errTimeout
	}
	w.out.Add(-1)
	o := w.note(r.err)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch o {
	case OK:
		at := env.now()
		k.acks = append(k.acks, pipeAck{n, r.st.Version, at})
		w.ackAt = append(w.ackAt, at)
	case Fail:
		k.failed[n] = true
	}
	return r.err
}

func (w *pipelinedWL) Final(env *Env) {
	w.startFinal.Do(func() { close(w.finalStarted) })
	<-w.resumed
	s, err := finalSession(env)
	if err != nil {
		for _, k := range w.keys {
			k.finalErr = err
		}
		return
	}
	defer s.Close()
	for _, k := range w.keys {
		type got struct {
			data []byte
			ver  int32
		}
		g, err := retry(30*time.Second, func() (got, error) {
			if _, err := s.Conn.Sync(w.key(k.i)); err != nil {
				return got{}, err
			}
			d, st, err := s.Conn.Get(w.key(k.i))
			if err != nil {
				return got{}, err
			}
			return got{d, st.Version}, nil
		})
		w.mu.Lock()
		k.final, k.finalVer, k.finalErr = g.data, g.ver, err
		w.mu.Unlock()
	}
}

func (w *pipelinedWL) Close() {
	if w.finalStarted != nil {
		w.startFinal.Do(func() { close(w.finalStarted) })
	}
	if w.s != nil {
		w.s.Close()
	}
}

func (w *pipelinedWL) Result() Cell {
	c := w.cell(w.Name())
	var p problems
	w.mu.Lock()
	defer w.mu.Unlock()
	sid := int64(0)
	if w.s != nil {
		sid = w.s.Conn.SessionID()
		if n := w.s.expired.Load(); n > 0 {
			p.add("the session was told it expired %d time(s) (the last after %.1fs without a connection)", n,
				time.Duration(w.s.expiredAfter.Load()).Seconds())
		}
	}
	// Writes acknowledged again within resumeMax of every heal during the run.
	acks := append([]int64(nil), w.ackAt...)
	sort.Slice(acks, func(i, j int) bool { return acks[i] < acks[j] })
	faults := w.events.FaultTimes()
	var judged, cut int
	var slowest time.Duration
	for _, h := range w.events.HealTimes() {
		if h > w.stopAt {
			continue // the final heal: Final's writes judge it
		}
		i := sort.Search(len(acks), func(i int) bool { return acks[i] >= h })
		if i < len(acks) && acks[i]-h <= int64(resumeMax) {
			judged++
			if d := time.Duration(acks[i] - h); d > slowest {
				slowest = d
			}
			continue
		}
		next := int64(-1)
		for _, f := range faults {
			if f > h && (next < 0 || f < next) {
				next = f
			}
		}
		if next >= 0 && next < h+int64(resumeMax) || w.stopAt < h+int64(resumeMax) {
			cut++
			continue
		}
		judged++
		first := "none since"
		if i < len(acks) {
			first = fmt.Sprintf("the first %.1fs after it", float64(acks[i]-h)/1e9)
		}
		p.add("no write acknowledged within %v of the heal at %.1fs (%s)", resumeMax, float64(h)/1e9, first)
	}
	if w.afterHealErr != nil {
		p.add("not every key written within %v of the final heal: %v", resumeMax, w.afterHealErr)
	}
	// Every key: intact, not older than its last acknowledged write, version not below it.
	var acked int
	for _, k := range w.keys {
		acked += len(k.acks)
		for j := 1; j < len(k.acks); j++ {
			if k.acks[j].ver <= k.acks[j-1].ver {
				p.add("k%d: write n%d acknowledged at version %d after n%d at version %d", k.i, k.acks[j].n, k.acks[j].ver,
					k.acks[j-1].n, k.acks[j-1].ver)
			}
		}
		if k.finalErr != nil {
			p.add("k%d: final read failed: %v", k.i, k.finalErr)
			continue
		}
		n := pipeN(k.i, k.final)
		var last pipeAck
		if len(k.acks) > 0 {
			last = k.acks[len(k.acks)-1]
		}
		switch {
		case n < 0:
			p.add("k%d: final value (%d bytes) is none of its writes", k.i, len(k.final))
		case n > k.attempted:
			p.add("k%d: final value n%d was never written (last sent n%d)", k.i, n, k.attempted)
		case k.failed[n]:
			p.add("k%d: final value n%d was refused when written", k.i, n)
		case n < last.n:
			p.add("k%d: final value n%d (version %d) is older than the last acknowledged write n%d (version %d)", k.i, n,
				k.finalVer, last.n, last.ver)
		case k.finalVer < last.ver:
			p.add("k%d: final version %d below the last acknowledged %d", k.i, k.finalVer, last.ver)
		case n == last.n && k.finalVer != last.ver:
			p.add("k%d: final value is the last acknowledged write n%d but at version %d, acknowledged at %d", k.i, n,
				k.finalVer, last.ver)
		}
	}
	reconnects := int64(0)
	if w.s != nil {
		reconnects = w.s.connects.Load() - 1
	}
	p.fill(&c, fmt.Sprintf("ok: session 0x%x never expired (%d reconnects), %d writes of 32 KB acknowledged, up to %d in flight; "+
		"writes back within %.1fs of each of %d heals (%d cut short by the next fault), %.1fs after the final one; every key intact and current",
		sid, reconnects, acked, w.max.Load(), slowest.Seconds(), judged, cut, w.afterHeal.Seconds()))
	return c
}
