package main

// The nemeses of "no leader is ever elected without an acknowledged write" (issue 22, item 4):
// a follower F2 is killed; writes are acknowledged by the leader L and the other follower F1
// alone; L is killed and stays down; F1 is killed and loses its record of those writes (one
// byte of the first of them flipped, or of the last record F1 wrote, complete and fsync'd:
// a bad sector; or its data directory wiped: a replaced disk); F1 and F2 restart. The two of them must not elect a leader: it would serve a tree
// without writes the clients were told were committed, and L, when it returns, would be told
// to throw them away. L comes back at the heal, and every acknowledged write must be there:
// the workloads' checkers count a lost acknowledged write as a violation whatever the members
// agree on. With 5 members the same is done with two followers down.

import (
	"fmt"
	mrand "math/rand"
	"os"
	"path/filepath"
	"time"
)

func init() {
	nemeses = append(nemeses,
		Nemesis{
			Name: "lose-acked-log", What: "writes acknowledged by the leader and one follower; the leader killed, that follower's record of the first of them damaged (a flipped byte); the others restart without the leader",
			Destructive: true,
			Hold:        holdBetween(5*time.Second, 7*time.Second),
			Apply:       func(f *Faults, r *mrand.Rand) string { return loseAcked(f, r, damageFirst) },
		},
		Nemesis{
			// Issue 38 item 1: a complete last record damaged after its fsync is not a torn write
			// (which was never acknowledged): cutting it as one let F1 and F2 elect without it.
			Name: "lose-acked-last", What: "writes acknowledged by the leader and one follower; the leader killed, a byte in the middle of that follower's last record flipped (complete and fsync'd, so not a torn write); the others restart without the leader",
			Destructive: true,
			Hold:        holdBetween(5*time.Second, 7*time.Second),
			Apply:       func(f *Faults, r *mrand.Rand) string { return loseAcked(f, r, damageLast) },
		},
		Nemesis{
			Name: "lose-acked-wipe", What: "writes acknowledged by the leader and one follower; the leader killed, that follower's data directory wiped (myid kept); the others restart without the leader",
			Destructive: true,
			Hold:        holdBetween(5*time.Second, 7*time.Second),
			Apply:       func(f *Faults, r *mrand.Rand) string { return loseAcked(f, r, damageWipe) },
		},
	)
}

// What happens to F1's record of the writes.
type damage int

const (
	damageFirst damage = iota // a byte of the first record written after the others went down
	damageLast                // a byte of the last record in F1's newest log file
	damageWipe                // the data directory wiped, myid kept
)

func loseAcked(f *Faults, r *mrand.Rand, how damage) string {
	l, which := f.leaderOr(r)
	var others []*Member
	for _, m := range f.c.Members {
		if m != l {
			others = append(others, m)
		}
	}
	r.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	// F1 keeps the quorum with L; the rest are down while the writes happen.
	f1, down := others[0], others[1:]
	quorum := f.c.N()/2 + 1
	down = down[:len(others)-(quorum-1)]
	var did []string
	for _, m := range down {
		f.c.Kill(m)
		did = append(did, fmt.Sprintf("kill -9 m%d", m.ID))
	}
	// Where F1's log ends now: the writes acknowledged from here on are the ones at stake.
	path, recs, _ := f.c.newestLog(f1)
	mark := len(recs)
	time.Sleep(1500 * time.Millisecond)
	f.kill(l)
	f.c.Kill(f1)
	did = append(did, fmt.Sprintf("writes for 1.5s with m%d (%s) and m%d, then kill -9 m%d and m%d", l.ID, which, f1.ID, l.ID, f1.ID))
	switch how {
	case damageWipe:
		ents, _ := os.ReadDir(f1.DataDir)
		for _, e := range ents {
			if e.Name() != "myid" {
				_ = os.RemoveAll(filepath.Join(f1.DataDir, e.Name()))
			}
		}
		did = append(did, fmt.Sprintf("wiped m%d's data directory (myid kept)", f1.ID))
	case damageLast:
		did = append(did, flipLastRecord(f.c, f1))
	default:
		did = append(did, flipFirstRecordAfter(f.c, f1, path, mark))
	}
	f.victim = f1
	for _, m := range append([]*Member{f1}, down...) {
		if err := f.c.Start(m); err != nil {
			did = append(did, fmt.Sprintf("restart m%d failed: %v", m.ID, err))
		} else {
			did = append(did, fmt.Sprintf("restart m%d", m.ID))
		}
	}
	did = append(did, fmt.Sprintf("m%d stays down until the heal", l.ID))
	return joinDid(did)
}

// flipFirstRecordAfter flips one byte inside the payload of the first record F1 wrote after
// it had `mark` records in `path` (the first record of a newer file if it rolled over).
func flipFirstRecordAfter(c *Cluster, m *Member, path string, mark int) string {
	now, recs, end := c.newestLog(m)
	if now != path {
		mark = 0
	}
	if now == "" || mark >= len(recs) {
		return fmt.Sprintf("m%d wrote no record after the mark: nothing damaged", m.ID)
	}
	start := recs[mark]
	next := end
	if mark+1 < len(recs) {
		next = recs[mark+1]
	}
	what, err := flipMiddle(c, now, start, next)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("flipped a byte of m%d's %s at %s (record %d of %d, the first written after the others went down)",
		m.ID, filepath.Base(now), what, mark+1, len(recs))
}

// flipLastRecord flips one byte inside the payload of the last record of the member's newest
// log file that holds records.
func flipLastRecord(c *Cluster, m *Member) string {
	now, recs, end := c.newestLog(m)
	if now == "" || len(recs) == 0 {
		return fmt.Sprintf("m%d has no record: nothing damaged", m.ID)
	}
	what, err := flipMiddle(c, now, recs[len(recs)-1], end)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("flipped a byte of m%d's %s at %s (its last record, %d of %d)", m.ID, filepath.Base(now), what, len(recs), len(recs))
}

// flipMiddle flips the byte halfway into the payload of the record at [start, next).
func flipMiddle(c *Cluster, path string, start, next int64) (string, error) {
	hdr := int64(8)
	if c.Kind != "zkr" {
		hdr = 12
	}
	off := start + hdr + (next-start-hdr)/2
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("open failed: %v", err)
	}
	defer fh.Close()
	b := make([]byte, 1)
	if _, err := fh.ReadAt(b, off); err != nil {
		return "", fmt.Errorf("read failed: %v", err)
	}
	b[0] ^= 0x5a
	if _, err := fh.WriteAt(b, off); err != nil {
		return "", fmt.Errorf("write failed: %v", err)
	}
	return fmt.Sprint(off), nil
}

func joinDid(did []string) string {
	out := ""
	for i, d := range did {
		if i > 0 {
			out += ", "
		}
		out += d
	}
	return out
}
