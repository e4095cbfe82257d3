package main

// Watches: a writer sets one znode over and over; watchers read it with a data watch and then
// poll it with plain reads. ZooKeeper's ordering promise: a client sees the watch event before
// any reply that shows the change. So once a plain read on the same connection shows a newer
// version than the watched read, the event must already have been delivered (go-zookeeper
// delivers events and replies from one reader, in arrival order). Across a reconnect the client
// library re-sends its watches concurrently with other requests, so the order check applies
// only within one connection; the event must still come (setWatches), within a bound.
// Versions a watcher sees never go back within one session. After the heal every watcher must
// hear one last change.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	watchPath    = root + "/watched"
	eventLateMax = 10 * time.Second
)

type watchesWL struct {
	counts
	writer   *worker
	watchers []*watcher
	p        problems
	lastSet  atomic.Int64
}

type watcher struct {
	id     int
	s      *Session
	events atomic.Int64
	polls  atomic.Int64
	// ch is the pending watch of the last watched read, ver its version.
	mu  sync.Mutex
	ch  <-chan zk.Event
	ver int32
	sid int64
}

func (w *watchesWL) Name() string { return "watches" }

func (w *watchesWL) Setup(env *Env) error {
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := ensure(s.Conn, watchPath, []byte("0")); err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		s, err := dialSession(env.Addrs, i)
		if err != nil {
			return err
		}
		if err := s.WaitSession(20 * time.Second); err != nil {
			return err
		}
		w.watchers = append(w.watchers, &watcher{id: i, s: s})
	}
	return nil
}

func (w *watchesWL) Run(ctx context.Context, env *Env) {
	var wg sync.WaitGroup
	w.writer = newWorker(env, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := env.rng(600)
		for n := int64(1); pace(ctx, r, 20*time.Millisecond, 60*time.Millisecond); n++ {
			c, err := w.writer.conn()
			if err != nil {
				continue
			}
			_, err = call(func() (*zk.Stat, error) { return c.Set(watchPath, []byte(strconv.FormatInt(n, 10)), -1) })
			w.note(err)
			w.writer.after(err)
			if err == nil {
				w.lastSet.Store(n)
			}
		}
	}()
	for _, wt := range w.watchers {
		wg.Add(1)
		go func(wt *watcher) {
			defer wg.Done()
			r := env.rng(700 + int64(wt.id))
			for ctx.Err() == nil {
				w.watchOnce(ctx, env, wt, r.Int63())
			}
		}(wt)
	}
	wg.Wait()
}

// watchOnce sets one data watch and follows it until its event (or the run's end).
func (w *watchesWL) watchOnce(ctx context.Context, env *Env, wt *watcher, seed int64) {
	c := wt.s.Conn
	gen := wt.s.connects.Load()
	type got struct {
		st *zk.Stat
		ch <-chan zk.Event
	}
	g, err := call(func() (got, error) { _, st, ch, err := c.GetW(watchPath); return got{st, ch}, err })
	if err != nil {
		if err == errTimeout {
			w.replace(env, wt)
		}
		time.Sleep(100 * time.Millisecond)
		return
	}
	sid := c.SessionID()
	wt.mu.Lock()
	if wt.sid == sid && g.st.Version < wt.ver {
		w.p.add("watcher %d: watched read at version %d after it had seen %d (same session)", wt.id, g.st.Version, wt.ver)
	}
	wt.sid, wt.ver, wt.ch = sid, g.st.Version, g.ch
	wt.mu.Unlock()
	v0 := g.st.Version
	var newerSince time.Time
	tick := time.NewTicker(time.Duration(20+seed%30) * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case ev := <-g.ch:
			w.event(wt, ev)
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		before := wt.s.connects.Load()
		st, err := call(func() (*zk.Stat, error) { _, st, err := c.Get(watchPath); return st, err })
		after := wt.s.connects.Load()
		if err != nil {
			if err == errTimeout {
				w.replace(env, wt)
				return
			}
			continue
		}
		wt.polls.Add(1)
		if c.SessionID() == sid && st.Version < v0 {
			w.p.add("watcher %d: read version %d after a watched read of %d (same session)", wt.id, st.Version, v0)
		}
		if st.Version <= v0 {
			continue
		}
		select {
		case ev := <-g.ch:
			w.event(wt, ev)
			return
		default:
		}
		if gen == before && before == after && c.SessionID() == sid {
			w.p.add("watcher %d: a reply showed version %d before the watch event for the change from %d (at %.1fs)",
				wt.id, st.Version, v0, float64(env.now())/1e9)
			// Wait for the event anyway, so one lost event is reported once.
		}
		if newerSince.IsZero() {
			newerSince = time.Now()
		} else if time.Since(newerSince) > eventLateMax {
			if c.SessionID() == sid && wt.s.expired.Load() == 0 {
				w.p.add("watcher %d: no event %v after a read showed version %d > %d (session 0x%x still alive)",
					wt.id, eventLateMax, st.Version, v0, sid)
			}
			return
		}
	}
}

func (w *watchesWL) event(wt *watcher, ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeDataChanged:
		wt.events.Add(1)
	case zk.EventNotWatching:
		// The session expired or closed: the watch is gone, which the client is told.
	default:
		w.p.add("watcher %d: unexpected event %v on %s", wt.id, ev.Type, ev.Path)
	}
}

func (w *watchesWL) replace(env *Env, wt *watcher) {
	wt.s.Close()
	if s, err := dialSession(env.Addrs, wt.id); err == nil {
		wt.s = s
	}
}

// Final: one last change that every watcher must hear.
func (w *watchesWL) Final(env *Env) {
	type pending struct {
		wt *watcher
		ch <-chan zk.Event
	}
	var ps []pending
	for _, wt := range w.watchers {
		if err := wt.s.WaitSession(20 * time.Second); err != nil {
			w.p.add("watcher %d: no session after the heal: %v", wt.id, err)
			continue
		}
		ch, err := retry(20*time.Second, func() (<-chan zk.Event, error) {
			_, _, ch, err := wt.s.Conn.GetW(watchPath)
			return ch, err
		})
		if err != nil {
			w.p.add("watcher %d: cannot set a watch after the heal: %v", wt.id, err)
			continue
		}
		ps = append(ps, pending{wt, ch})
	}
	s, err := finalSession(env)
	if err != nil {
		w.p.add("no session for the last change: %v", err)
		return
	}
	defer s.Close()
	if _, err := retry(20*time.Second, func() (*zk.Stat, error) { return s.Conn.Set(watchPath, []byte("final"), -1) }); err != nil {
		w.p.add("last change failed: %v", err)
		return
	}
	for _, p := range ps {
		select {
		case ev := <-p.ch:
			if ev.Type != zk.EventNodeDataChanged {
				w.p.add("watcher %d: last change gave event %v", p.wt.id, ev.Type)
			} else {
				p.wt.events.Add(1)
			}
		case <-time.After(eventLateMax):
			w.p.add("watcher %d: no event for the last change within %v", p.wt.id, eventLateMax)
		}
	}
}

func (w *watchesWL) Close() {
	if w.writer != nil {
		w.writer.close()
	}
	for _, wt := range w.watchers {
		wt.s.Close()
	}
}

func (w *watchesWL) Result() Cell {
	c := w.cell(w.Name())
	var events, polls int64
	for _, wt := range w.watchers {
		events += wt.events.Load()
		polls += wt.polls.Load()
	}
	w.p.fill(&c, fmt.Sprintf("ok: %d events, %d checked reads, none early or lost", events, polls))
	return c
}
