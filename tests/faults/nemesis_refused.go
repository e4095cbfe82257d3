package main

// The nemesis refused-by-leader: the leader's host answers every TCP segment from one follower F
// with a reset (REJECT --reject-with tcp-reset in the leader's namespace, for F's address only).
// To F the leader looks dead: its replication stream is reset and the leader's peer port
// refuses it, as a killed process's would. The other followers hear the leader as before. zkr's
// fast path for a dead leader (elect at once when its stream ends and its port refuses, instead
// of waiting out the election timeout) raised F's term without asking anyone, and the first
// answer F gave the leader after the heal deposed a leader the rest of the ensemble followed.
// ZooKeeper's F goes looking, learns from the others' notifications that the leader is
// established, and follows it once it can connect again.
//
// Its checker is deaf-follower's (the cell "leader-kept"): the leader of the first round must
// lead in the same epoch at every poll and after the final heal.

import (
	"fmt"
	mrand "math/rand"
	"time"
)

func init() {
	nemeses = append(nemeses, Nemesis{
		Name: "refused-by-leader", What: "the leader's host resets every TCP segment from one follower (it looks dead to that follower alone); the leader must keep leading in its epoch",
		Hold:    holdBetween(3*time.Second, 6*time.Second),
		Apply:   refusedByLeader,
		Checker: func(c *Cluster) Workload { return &keptWL{c: c} },
	})
}

// refusedByLeader is one round: the leader (and, on the first round, its epoch) noted, a random
// follower's segments reset by the leader's host. Faults.Heal flushes the rules.
func refusedByLeader(f *Faults, r *mrand.Rand) string {
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
	f.mu.Lock()
	f.partitioned = true
	f.mu.Unlock()
	if _, err := sh("ip", "netns", "exec", nsName(l.ID), "iptables", "-A", "INPUT", "-s", m.IP, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"); err != nil {
		return fmt.Sprintf("iptables in m%d failed: %v", l.ID, err)
	}
	return fmt.Sprintf("m%d (the leader, epoch %d) resets every TCP segment from m%d", l.ID, st.Zxid>>32, m.ID)
}
