package main

// The nemesis deaf-follower: a follower F is killed -9 and started again with its peer and
// election ports taking no connections (INPUT DROP rules for tcp dport 2888 and 3888 in F's
// namespace), while its own connections to the others work: F hears no leader, the others
// hear theirs. Raft without pre-vote loses here: F's election timer runs out, it campaigns with
// a higher term, and the first answer it gives the leader once the rules are flushed deposes a
// leader the rest of the ensemble follows (found by CI as a race on a plain restart: the leader's
// retries were 500 ms apart). ZooKeeper's F follows the established leader in its epoch.
//
// Its checker (the cell "leader-kept") holds the leader and its epoch (the high 32 bits of the
// zxid it reports) from the first round: the same member must lead in the same epoch at every
// poll (every 200 ms) until the workloads stop, and after the final heal. The nemesis never
// touches the leader, so any change is one the deaf follower caused.

import (
	"context"
	"fmt"
	mrand "math/rand"
	"os/exec"
	"strings"
	"sync"
	"time"
)

func init() {
	nemeses = append(nemeses, Nemesis{
		Name: "deaf-follower", What: "kill -9 a follower and start it again with its peer and election ports taking no connections (it hears no leader, reaches everyone); the leader must keep leading in its epoch",
		Hold:    holdBetween(3*time.Second, 6*time.Second),
		Apply:   deafFollower,
		Checker: func(c *Cluster) Workload { return &keptWL{c: c} },
	})
}

type keptWL struct {
	counts
	c      *Cluster
	mu     sync.Mutex
	leader *Member
	epoch  int64
	rounds int
	polls  int
	p      problems
}

func (w *keptWL) Name() string { return "leader-kept" }

func (w *keptWL) Setup(env *Env) error { return nil }

// check notes whether the leader of the first round still leads in its epoch.
func (w *keptWL) check(when string) {
	w.mu.Lock()
	l, epoch := w.leader, w.epoch
	w.mu.Unlock()
	if l == nil {
		return
	}
	st := w.c.Status(l)
	w.mu.Lock()
	w.polls++
	w.mu.Unlock()
	switch {
	case st.Mode != "leader":
		w.p.add("%s: m%d, the leader, says %q", when, l.ID, st.Mode)
		w.noteAs(Fail, nil)
	case st.Zxid>>32 != epoch:
		w.p.add("%s: m%d leads in epoch %d, not %d: it was deposed and elected again", when, l.ID, st.Zxid>>32, epoch)
		w.noteAs(Fail, nil)
	default:
		w.noteAs(OK, nil)
	}
}

// Run polls the leader while the nemesis works.
func (w *keptWL) Run(ctx context.Context, env *Env) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		w.check(fmt.Sprintf("at %.1fs", time.Since(env.Start).Seconds()))
	}
}

func (w *keptWL) Final(env *Env) { w.check("after the final heal") }

func (w *keptWL) Close() {}

func (w *keptWL) Result() Cell {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.cell(w.Name())
	if w.leader == nil {
		w.p.add("vacuous: no round found a leader")
		w.p.fill(&c, "")
		return c
	}
	summary := fmt.Sprintf("m%d led in epoch %d at all %d polls, through %d rounds of the nemesis", w.leader.ID, w.epoch, w.polls, w.rounds)
	if w.rounds == 0 {
		w.p.add("vacuous: no round ran")
	}
	w.p.fill(&c, "ok: "+summary)
	return c
}

// deafFollower is one round: the leader (and, on the first round, its epoch) noted, a random
// follower killed, its inbound peer and election ports dropped, the follower started again.
// Faults.Heal flushes the rules.
func deafFollower(f *Faults, r *mrand.Rand) string {
	w, _ := f.checker.(*keptWL)
	if w == nil {
		return "no leader-kept checker: nothing done"
	}
	l := f.c.WaitLeader(3 * time.Second)
	if l == nil {
		return "no leader: nothing done"
	}
	st := f.c.Status(l)
	w.mu.Lock()
	if w.leader == nil {
		w.leader, w.epoch = l, st.Zxid>>32
	}
	w.rounds++
	w.mu.Unlock()
	var followers []*Member
	for _, m := range f.c.Members {
		if m != l {
			followers = append(followers, m)
		}
	}
	m := followers[r.Intn(len(followers))]
	f.c.Kill(m)
	f.mu.Lock()
	f.partitioned = true
	f.mu.Unlock()
	rules := "*filter\n-A INPUT -p tcp -m multiport --dports 2888,3888 -j DROP\nCOMMIT\n"
	cmd := exec.Command("ip", "netns", "exec", nsName(m.ID), "iptables-restore", "--noflush")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("iptables-restore in m%d failed: %v: %s", m.ID, err, strings.TrimSpace(string(out)))
	}
	if err := f.c.Start(m); err != nil {
		f.mu.Lock()
		f.killed[m.ID] = true
		f.mu.Unlock()
		return fmt.Sprintf("kill -9 m%d, its peer ports deaf, restart failed: %v", m.ID, err)
	}
	return fmt.Sprintf("kill -9 m%d, restarted with its peer and election ports taking no connections (m%d leads, epoch %d)", m.ID, l.ID, st.Zxid>>32)
}
