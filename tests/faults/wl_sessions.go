package main

// Sessions: live sessions each hold an ephemeral, which must never vanish while the session
// lives; "dead" sessions create an ephemeral and then stop pinging (the harness cuts their
// connection and refuses them new ones), and their ephemeral must vanish within the session
// timeout plus election time, counted again from any fault or heal in between (a new leader
// gives every session a full timeout, in ZooKeeper and in zkr). An observer lists the
// ephemerals after a sync every 250 ms.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	sessionsPath = root + "/sessions"
	// expirySlack is the election time (and tick rounding) allowed on top of the timeout.
	expirySlack = 8 * time.Second
)

type liveSession struct {
	s       *Session
	name    string // its current ephemeral
	acked   int64  // when its create was acknowledged (history clock)
	expired bool
	gens    int
	// seen is how many expiries the client had reported when its ephemeral was made.
	seen int64
}

type deadSession struct {
	s      *Session
	name   string
	frozen int64 // when it was cut off
	gone   int64 // first observation without its ephemeral, 0 while seen
	// seen is the start of the last observation that still listed its ephemeral.
	seen int64
}

type vanish struct {
	name string
	at   int64
}

type observation struct {
	call, ret int64
	names     map[string]bool
}

type sessionsWL struct {
	counts
	mu       sync.Mutex
	live     []*liveSession
	dead     []*deadSession
	obs      []observation
	observer *Session
	events   *EventLog
	vanished []vanish        // live ephemerals the observer found missing
	expiredN map[string]bool // ephemerals whose session was seen to expire
	final    map[string]bool
	finalAt  int64
	finalErr error
	expiries int
}

func (w *sessionsWL) Name() string { return "sessions" }

func (w *sessionsWL) Setup(env *Env) error {
	w.events = env.Events
	w.expiredN = map[string]bool{}
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := ensure(s.Conn, sessionsPath, nil); err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		s, err := dialSession(env.Addrs, i)
		if err != nil {
			return err
		}
		l := &liveSession{s: s}
		w.live = append(w.live, l)
		if err := w.newEphemeral(env, l); err != nil {
			return err
		}
	}
	return nil
}

func (w *sessionsWL) newEphemeral(env *Env, l *liveSession) error {
	if err := l.s.WaitSession(30 * time.Second); err != nil {
		return err
	}
	l.gens++
	seen := l.s.expired.Load()
	name := fmt.Sprintf("live-%x-%d", l.s.Conn.SessionID(), l.gens)
	_, err := retry(20*time.Second, func() (string, error) {
		p, err := l.s.Conn.Create(sessionsPath+"/"+name, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err == zk.ErrNodeExists {
			return p, nil
		}
		return p, err
	})
	if err != nil {
		return err
	}
	w.mu.Lock()
	l.name, l.acked, l.seen = name, env.now(), seen
	w.mu.Unlock()
	return nil
}

func (w *sessionsWL) Run(ctx context.Context, env *Env) {
	var wg sync.WaitGroup
	// The observer.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			w.observe(env)
		}
	}()
	// Live sessions: a session that expires (the client saw Expired) gets a new ephemeral.
	for _, l := range w.live {
		wg.Add(1)
		go func(l *liveSession) {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				w.mu.Lock()
				seen := l.seen
				w.mu.Unlock()
				if n := l.s.expired.Load(); n != seen {
					w.mu.Lock()
					l.seen = n
					l.expired = true
					w.expiries++
					w.expiredN[l.name] = true
					w.mu.Unlock()
					env.Events.Add("sessions: live session of %s expired", l.name)
					if err := w.newEphemeral(env, l); err != nil {
						env.Events.Add("sessions: no new ephemeral after expiry: %v", err)
					} else {
						w.mu.Lock()
						l.expired = false
						w.mu.Unlock()
					}
				}
			}
		}(l)
	}
	// Dead sessions, one every 2-3 s.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := env.rng(500)
		for k := 0; pace(ctx, r, 2*time.Second, 3*time.Second); k++ {
			s, err := dialSession(env.Addrs, k)
			if err != nil {
				continue
			}
			if s.WaitSession(5*time.Second) != nil {
				s.Close()
				continue
			}
			name := fmt.Sprintf("dead-%x", s.Conn.SessionID())
			_, err = call(func() (string, error) {
				return s.Conn.Create(sessionsPath+"/"+name, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			})
			o := w.note(err)
			if o != OK {
				// Not acknowledged: its fate is not this checker's business (it expires anyway).
				s.Freeze()
				s.Close()
				continue
			}
			s.Freeze()
			w.mu.Lock()
			w.dead = append(w.dead, &deadSession{s: s, name: name, frozen: env.now()})
			w.mu.Unlock()
		}
	}()
	wg.Wait()
}

// observe lists the ephemerals after a sync and checks the live ones.
func (w *sessionsWL) observe(env *Env) {
	if w.observer == nil {
		s, err := dialSession(env.Addrs, 2)
		if err != nil {
			return
		}
		w.observer = s
	}
	s := w.observer
	t0 := env.now()
	names, err := call(func() ([]string, error) {
		if _, err := s.Conn.Sync(sessionsPath); err != nil {
			return nil, err
		}
		ch, _, err := s.Conn.Children(sessionsPath)
		return ch, err
	})
	t1 := env.now()
	if err != nil {
		if err == errTimeout {
			s.Close()
			w.observer = nil
		}
		return
	}
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs = append(w.obs, observation{t0, t1, set})
	for _, l := range w.live {
		if l.name != "" && !l.expired && l.acked < t0 && !set[l.name] {
			// Judged in Result, once we know whether the session expired after all.
			w.vanished = append(w.vanished, vanish{l.name, t0})
		}
	}
	for _, d := range w.dead {
		switch {
		case set[d.name] && d.gone == 0:
			d.seen = t0
		case !set[d.name] && d.gone == 0 && t0 > d.frozen:
			d.gone = t0
		}
	}
}

func (w *sessionsWL) Final(env *Env) {
	// A client learns that its session expired only when it reaches a member again: let every
	// live session reconnect, so that an expiry during the run is known before judging.
	for _, l := range w.live {
		_ = l.s.WaitSession(20 * time.Second)
		w.mu.Lock()
		if l.s.expired.Load() != l.seen {
			l.expired = true
			w.expiredN[l.name] = true
			w.expiries++
		}
		w.mu.Unlock()
	}
	// Keep looking until every dead session's ephemeral is gone or its deadline has passed.
	for {
		w.mu.Lock()
		waiting := false
		for _, d := range w.dead {
			if d.gone == 0 && env.now() < w.deadline(d.frozen) {
				waiting = true
			}
		}
		w.mu.Unlock()
		if !waiting {
			break
		}
		time.Sleep(250 * time.Millisecond)
		w.observe(env)
	}
	s, err := finalSession(env)
	if err != nil {
		w.finalErr = err
		return
	}
	defer s.Close()
	t0 := env.now()
	names, err := syncedChildren(s.Conn, sessionsPath)
	if err != nil {
		w.finalErr = err
		return
	}
	w.final, w.finalAt = map[string]bool{}, t0
	for _, n := range names {
		w.final[n] = true
	}
	w.mu.Lock()
	for _, d := range w.dead {
		if d.gone == 0 && !w.final[d.name] {
			d.gone = t0
		}
	}
	w.mu.Unlock()
}

// deadline is when a session cut off at `frozen` must be gone: timeout + slack, counted again
// from each fault or heal that falls inside that window.
func (w *sessionsWL) deadline(frozen int64) int64 {
	d := frozen + int64(sessionTimeout+expirySlack)
	for _, t := range w.events.Disruptions() {
		if t > frozen && t < d {
			if nd := t + int64(sessionTimeout+expirySlack); nd > d {
				d = nd
			}
		}
	}
	return d
}

func (w *sessionsWL) Close() {
	for _, l := range w.live {
		l.s.Close()
	}
	for _, d := range w.dead {
		d.s.Close()
	}
	if w.observer != nil {
		w.observer.Close()
	}
}

func (w *sessionsWL) Result() Cell {
	c := w.cell(w.Name())
	if w.finalErr != nil {
		c.Verdict = "final read failed: " + w.finalErr.Error()
		return c
	}
	var p problems
	w.mu.Lock()
	defer w.mu.Unlock()
	// A live ephemeral may vanish only because its session expired (the client saw Expired).
	for _, v := range w.vanished {
		if !w.expiredN[v.name] {
			p.add("ephemeral %s of a live session missing at %.1fs", v.name, float64(v.at)/1e9)
		}
	}
	for _, l := range w.live {
		if !l.expired && !w.final[l.name] {
			p.add("ephemeral %s of a live session missing after the heal", l.name)
		}
	}
	for _, d := range w.dead {
		dl := w.deadline(d.frozen)
		switch {
		case d.gone == 0:
			p.add("ephemeral %s of a session cut off at %.1fs still there at %.1fs", d.name, float64(d.frozen)/1e9, float64(w.finalAt)/1e9)
		case d.seen > dl:
			// Still listed after its deadline (an absence noticed late, when nobody looked for
			// a while, is not held against it).
			p.add("ephemeral %s of a session cut off at %.1fs still listed at %.1fs, after its deadline %.1fs", d.name,
				float64(d.frozen)/1e9, float64(d.seen)/1e9, float64(dl)/1e9)
		}
	}
	var worst float64
	for _, d := range w.dead {
		if d.gone > 0 {
			if s := float64(d.gone-d.frozen) / 1e9; s > worst {
				worst = s
			}
		}
	}
	p.fill(&c, fmt.Sprintf("ok: %d live sessions kept their ephemerals (%d expired), %d dead sessions' ephemerals gone (slowest %.1fs)",
		len(w.live), w.expiries, len(w.dead), worst))
	return c
}
