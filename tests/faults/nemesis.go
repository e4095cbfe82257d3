package main

// Nemeses: the faults, each applied and healed on a seeded schedule. A run repeats one nemesis:
// quiet for a few seconds, fault, hold, heal, until the run's time is up; then everything is
// healed. The destructive ones (log and snapshot damage, wiping) wait after each heal until the
// damaged member has caught up again, so no two members ever lose data at once (with two, no
// server can keep acknowledged writes, ZooKeeper included).

import (
	"fmt"
	mrand "math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

type Nemesis struct {
	Name        string
	What        string
	Destructive bool
	// Hold is how long the fault stays before it is healed.
	Hold func(r *mrand.Rand) time.Duration
	// Apply makes the fault and says what it did.
	Apply func(h *Faults, r *mrand.Rand) string
	// Checker, when set, judges what the nemesis itself did: a cell of its own in the runs of
	// this nemesis, reachable from Apply as Faults.checker.
	Checker func(c *Cluster) Workload
}

// Faults is the state the nemeses share: who is down, paused or cut off.
type Faults struct {
	c           *Cluster
	mu          sync.Mutex
	killed      map[int]bool
	paused      map[int]bool
	partitioned bool
	victim      *Member // the member a destructive nemesis damaged
	checker     Workload
}

func newFaults(c *Cluster) *Faults {
	return &Faults{c: c, killed: map[int]bool{}, paused: map[int]bool{}}
}

func (f *Faults) kill(m *Member) {
	f.c.Kill(m)
	f.mu.Lock()
	f.killed[m.ID] = true
	f.mu.Unlock()
}

// Heal undoes every fault: partitions flushed, paused members resumed, killed ones restarted.
func (f *Faults) Heal() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var did []string
	if f.partitioned {
		healPartitions(f.c.N())
		f.partitioned = false
		did = append(did, "partition healed")
	}
	for _, id := range sortedKeys(f.paused) {
		f.c.Resume(f.c.Member(id))
		did = append(did, fmt.Sprintf("SIGCONT m%d", id))
	}
	f.paused = map[int]bool{}
	for _, id := range sortedKeys(f.killed) {
		if err := f.c.Start(f.c.Member(id)); err != nil {
			did = append(did, fmt.Sprintf("restart m%d failed: %v", id, err))
		} else {
			did = append(did, fmt.Sprintf("restart m%d", id))
		}
	}
	f.killed = map[int]bool{}
	if len(did) == 0 {
		return "nothing to heal"
	}
	return strings.Join(did, ", ")
}

func sortedKeys(m map[int]bool) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

func (f *Faults) random(r *mrand.Rand) *Member { return f.c.Members[r.Intn(f.c.N())] }

// leaderOr returns the leader, or a random member when there is none right now.
func (f *Faults) leaderOr(r *mrand.Rand) (*Member, string) {
	if l := f.c.WaitLeader(3 * time.Second); l != nil {
		return l, "leader"
	}
	return f.random(r), "no leader, a random member"
}

func (f *Faults) partition(groups ...[]int) string {
	if err := applyPartition(f.c.N(), components(f.c.N(), groups...)); err != nil {
		return "partition failed: " + err.Error()
	}
	f.mu.Lock()
	f.partitioned = true
	f.mu.Unlock()
	var gs []string
	for _, g := range groups {
		gs = append(gs, fmt.Sprint(g))
	}
	return "partition " + strings.Join(gs, " | ")
}

func between(r *mrand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int63n(int64(hi-lo)+1))
}

func holdBetween(lo, hi time.Duration) func(*mrand.Rand) time.Duration {
	return func(r *mrand.Rand) time.Duration { return between(r, lo, hi) }
}

var nemeses = []Nemesis{
	{
		Name: "kill-random", What: "kill -9 a random member, restart it",
		Hold: holdBetween(2*time.Second, 5*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			m := f.random(r)
			f.kill(m)
			return fmt.Sprintf("kill -9 m%d", m.ID)
		},
	},
	{
		Name: "kill-leader", What: "kill -9 the leader, restart it",
		Hold: holdBetween(2*time.Second, 5*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			m, which := f.leaderOr(r)
			f.kill(m)
			return fmt.Sprintf("kill -9 m%d (%s)", m.ID, which)
		},
	},
	{
		Name: "kill-leader-at-birth", What: "open sessions with the leader first, kill -9 the leader right after their handshakes, restart it",
		Hold: holdBetween(2*time.Second, 5*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			m, which := f.leaderOr(r)
			// Three new sessions whose host list starts at the leader, all answered, and the
			// leader dies at once: the session-birth checker judges their fate.
			var born []*Session
			for k := 0; k < 3; k++ {
				if s, err := dialSession(f.c.Addrs(), m.ID-1); err == nil {
					born = append(born, s)
				}
			}
			ok := 0
			for _, s := range born {
				if s.WaitSession(3*time.Second) == nil {
					ok++
				}
			}
			f.kill(m)
			for _, s := range born {
				select {
				case birthProbes <- s:
				default:
					s.Close()
				}
			}
			return fmt.Sprintf("kill -9 m%d (%s) right after %d new sessions' handshakes", m.ID, which, ok)
		},
	},
	{
		Name: "kill-all", What: "kill -9 every member, restart them all",
		Hold: holdBetween(1*time.Second, 3*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			var wg sync.WaitGroup
			for _, m := range f.c.Members {
				wg.Add(1)
				go func(m *Member) { defer wg.Done(); f.kill(m) }(m)
			}
			wg.Wait()
			return "kill -9 every member"
		},
	},
	{
		Name: "partition-halves", What: "partition into random halves",
		Hold: holdBetween(3*time.Second, 8*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			ids := r.Perm(f.c.N())
			var a, b []int
			for i, x := range ids {
				if i < f.c.N()/2 {
					a = append(a, x+1)
				} else {
					b = append(b, x+1)
				}
			}
			sort.Ints(a)
			sort.Ints(b)
			return f.partition(a, b)
		},
	},
	{
		Name: "partition-leader", What: "isolate the leader from the other members",
		Hold: holdBetween(3*time.Second, 8*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			m, which := f.leaderOr(r)
			var rest []int
			for _, o := range f.c.Members {
				if o != m {
					rest = append(rest, o.ID)
				}
			}
			return f.partition([]int{m.ID}, rest) + " (m" + fmt.Sprint(m.ID) + " " + which + ")"
		},
	},
	{
		// The leader keeps a minority that still hears it: a follower there must stop serving
		// (its clients' pings reach no quorum) before the majority's new leader expires those
		// sessions. Found by partition-halves: the old leader kept appending the follower's
		// forwarded writes, the follower kept answering pings, and its sessions expired while
		// their clients were connected. Longer than a session timeout, so that it shows.
		Name: "partition-leader-minority", What: "cut the leader and a minority of followers from the majority, longer than the session timeout",
		Hold: holdBetween(sessionTimeout+time.Second, sessionTimeout+3*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			m, which := f.leaderOr(r)
			minority := []int{m.ID}
			var rest []int
			for _, i := range r.Perm(f.c.N()) {
				o := f.c.Members[i]
				switch {
				case o == m:
				case len(minority) < (f.c.N()-1)/2:
					minority = append(minority, o.ID)
				default:
					rest = append(rest, o.ID)
				}
			}
			sort.Ints(minority)
			sort.Ints(rest)
			return f.partition(minority, rest) + " (m" + fmt.Sprint(m.ID) + " " + which + ")"
		},
	},
	{
		Name: "partition-bridge", What: "two halves that each see one middle member",
		Hold: holdBetween(3*time.Second, 8*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			ids := r.Perm(f.c.N())
			mid := f.c.N() / 2
			var a, b []int
			for i, x := range ids {
				if i <= mid {
					a = append(a, x+1)
				}
				if i >= mid {
					b = append(b, x+1)
				}
			}
			return f.partition(a, b) + fmt.Sprintf(" (m%d in both)", ids[mid]+1)
		},
	},
	{
		Name: "pause", What: "SIGSTOP a member (half the time the leader) for longer than the session timeout, then SIGCONT",
		Hold: holdBetween(sessionTimeout+time.Second, sessionTimeout+3*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			m, which := f.random(r), "random"
			if r.Intn(2) == 0 {
				m, which = f.leaderOr(r)
			}
			f.c.Pause(m)
			f.mu.Lock()
			f.paused[m.ID] = true
			f.mu.Unlock()
			return fmt.Sprintf("SIGSTOP m%d (%s)", m.ID, which)
		},
	},
	{
		Name: "log-corrupt", What: "stop a member, truncate or overwrite the tail of its newest log file, restart it", Destructive: true,
		Hold: holdBetween(500*time.Millisecond, 2*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			m := f.random(r)
			f.kill(m)
			f.victim = m
			return fmt.Sprintf("kill -9 m%d, %s", m.ID, damageLog(f.c, m, r))
		},
	},
	{
		Name: "snapshot-corrupt", What: "stop a member, damage its newest snapshot, restart it", Destructive: true,
		Hold: holdBetween(500*time.Millisecond, 2*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			m := f.random(r)
			f.kill(m)
			f.victim = m
			return fmt.Sprintf("kill -9 m%d, %s", m.ID, damageSnapshot(f.c, m, r))
		},
	},
	{
		Name: "wipe", What: "stop a member, wipe its data directory (myid kept), restart it", Destructive: true,
		Hold: holdBetween(500*time.Millisecond, 2*time.Second),
		Apply: func(f *Faults, r *mrand.Rand) string {
			m := f.random(r)
			f.kill(m)
			f.victim = m
			ents, _ := os.ReadDir(m.DataDir)
			for _, e := range ents {
				if e.Name() != "myid" {
					_ = os.RemoveAll(filepath.Join(m.DataDir, e.Name()))
				}
			}
			return fmt.Sprintf("kill -9 m%d, wiped %s (%d entries, myid kept)", m.ID, m.DataDir, len(ents)-1)
		},
	},
}

func nemesisByName(name string) (Nemesis, bool) {
	for _, n := range nemeses {
		if n.Name == name {
			return n, true
		}
	}
	return Nemesis{}, false
}

func garbage(r *mrand.Rand, n int) []byte {
	b := make([]byte, n)
	_, _ = r.Read(b)
	for i := range b {
		if b[i] == 0 {
			b[i] = 0xa5
		}
	}
	return b
}

// damageLog truncates the newest log file inside one of its last records, or overwrites a few
// bytes of one of them with non-zero garbage (seeded: where, how much).
func damageLog(c *Cluster, m *Member, r *mrand.Rand) string {
	path, recs, end := c.newestLog(m)
	if path == "" {
		return "no log file with records: nothing damaged"
	}
	k := len(recs)
	if k > 5 {
		k = 5
	}
	pick := len(recs) - 1 - r.Intn(k)
	start := recs[pick]
	name := filepath.Base(path)
	span := end - start
	if r.Intn(2) == 0 {
		cut := start + 1 + r.Int63n(span-1)
		if err := os.Truncate(path, cut); err != nil {
			return "truncate failed: " + err.Error()
		}
		return fmt.Sprintf("truncated %s at byte %d (inside record %d of %d; data ended at %d)", name, cut, pick+1, len(recs), end)
	}
	off := start + r.Int63n(span)
	n := 1 + r.Intn(32)
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return "open failed: " + err.Error()
	}
	defer fh.Close()
	if _, err := fh.WriteAt(garbage(r, n), off); err != nil {
		return "write failed: " + err.Error()
	}
	return fmt.Sprintf("overwrote %d bytes of %s at byte %d with garbage (record %d of %d; data ended at %d)", n, name, off, pick+1, len(recs), end)
}

// damageSnapshot overwrites bytes of the newest snapshot with garbage, or truncates it.
func damageSnapshot(c *Cluster, m *Member, r *mrand.Rand) string {
	path := c.newestSnapshot(m)
	if path == "" {
		return "no snapshot yet: nothing damaged"
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() < 16 {
		return "snapshot too small to damage"
	}
	size := fi.Size()
	name := filepath.Base(path)
	if r.Intn(2) == 0 {
		cut := size/10 + r.Int63n(size*8/10)
		if err := os.Truncate(path, cut); err != nil {
			return "truncate failed: " + err.Error()
		}
		return fmt.Sprintf("truncated snapshot %s from %d to %d bytes", name, size, cut)
	}
	off := size/4 + r.Int63n(size/2)
	n := 8 + r.Intn(120)
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return "open failed: " + err.Error()
	}
	defer fh.Close()
	if _, err := fh.WriteAt(garbage(r, n), off); err != nil {
		return "write failed: " + err.Error()
	}
	return fmt.Sprintf("overwrote %d bytes of snapshot %s (%d bytes) at byte %d with garbage", n, name, size, off)
}
