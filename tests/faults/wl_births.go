package main

// Session births: new sessions all the time, each told it exists by a handshake and then idle
// for a moment, with the leader first in its host list (half of them), a follower first, or a
// create in flight right after the handshake. A session the client was told exists must
// never be told it expired while its client kept reconnecting within the session timeout: the
// nemesis kill-leader-at-birth kills the leader right after such handshakes (the schedule
// that found zkr's members calling a session expired before they had applied its creation)
// and hands those sessions to this checker too.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

const birthsPath = root + "/births"

// expiredTooSoon: a session told it expired after less than this without a connection was
// expired while its client was still within its timeout (tick rounding and the members'
// session reports take up to a second of the timeout).
const expiredTooSoon = sessionTimeout - 2*time.Second

// birthProbes carries the sessions kill-leader-at-birth opened right before its kill.
var birthProbes = make(chan *Session, 64)

type birthsWL struct {
	counts
	p       problems
	mu      sync.Mutex
	watched []*birth
	events  *EventLog
}

type birth struct {
	s    *Session
	what string
}

func (w *birthsWL) Name() string { return "session-birth" }

func (w *birthsWL) Setup(env *Env) error {
	w.events = env.Events
	// Probes left by an earlier run of the same process belong to a cluster that is gone.
	for len(birthProbes) > 0 {
		(<-birthProbes).Close()
	}
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	return ensure(s.Conn, birthsPath, nil)
}

// leaderIndex is the position in env.Addrs of the member that says it leads, or -1.
func leaderIndex(env *Env) int {
	for i, a := range env.Addrs {
		ip := a
		for j := len(a) - 1; j >= 0; j-- {
			if a[j] == ':' {
				ip = a[:j]
				break
			}
		}
		if out, err := flw(ip, "srvr"); err == nil && kv(out)["Mode"] == "leader" {
			return i
		}
	}
	return -1
}

func (w *birthsWL) Run(ctx context.Context, env *Env) {
	var wg sync.WaitGroup
	for k := 0; k < 3; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			r := env.rng(900 + int64(k))
			for n := 0; ctx.Err() == nil; n++ {
				first, what := r.Intn(len(env.Addrs)), "a member first"
				leader := leaderIndex(env)
				switch n % 3 {
				case 0:
					if leader >= 0 {
						first, what = leader, "the leader first"
					}
				case 1:
					if leader >= 0 {
						first, what = (leader+1)%len(env.Addrs), "a follower first"
					}
				}
				s, err := dialSession(env.Addrs, first)
				if err != nil {
					w.noteAs(Unknown, err)
					continue
				}
				if s.WaitSession(5*time.Second) != nil {
					w.noteAs(Unknown, fmt.Errorf("no session within 5s"))
					s.Close()
					continue
				}
				if n%3 == 2 {
					// One write in flight right after the handshake, and nothing else.
					what = "a create in flight"
					go func() {
						_, _ = s.Conn.Create(fmt.Sprintf("%s/b-%d-%d", birthsPath, k, n), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
					}()
				}
				w.watch(&birth{s: s, what: what})
				if !pace(ctx, r, 300*time.Millisecond, 1500*time.Millisecond) {
					break
				}
			}
		}(k)
	}
	// Sessions the nemesis made right before it killed the leader.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-birthProbes:
				w.watch(&birth{s: s, what: "the leader first, killed right after the handshake"})
			}
		}
	}()
	wg.Wait()
}

// watch keeps a born session for sessionTimeout+election time (its fate is judged in Final),
// then closes it.
func (w *birthsWL) watch(b *birth) {
	w.mu.Lock()
	w.watched = append(w.watched, b)
	w.mu.Unlock()
}

func (w *birthsWL) Final(env *Env) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.watched {
		id := b.s.expiredID.Load()
		switch {
		case b.s.expired.Load() == 0:
			w.noteAs(OK, nil)
		case b.s.expiredAfter.Load() != 0 && time.Duration(b.s.expiredAfter.Load()) < expiredTooSoon:
			w.noteAs(Fail, fmt.Errorf("session lost"))
			w.p.add("session 0x%x (%s) was told it expired %.1fs after it lost its connection (timeout %v)",
				id, b.what, time.Duration(b.s.expiredAfter.Load()).Seconds(), sessionTimeout)
		default:
			// Expired after being cut off for longer than its timeout: allowed.
			w.noteAs(Unknown, fmt.Errorf("expired after its timeout without a connection"))
		}
	}
}

func (w *birthsWL) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.watched {
		b.s.Close()
	}
	w.watched = nil
	for len(birthProbes) > 0 {
		(<-birthProbes).Close()
	}
}

func (w *birthsWL) Result() Cell {
	c := w.cell(w.Name())
	w.p.fill(&c, "no session the client was told exists was expired within its timeout")
	return c
}
