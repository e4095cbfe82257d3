package main

// The disk-fault matrix (issue 38, item 2), schedule (a): one member of a 3-member ensemble is
// killed -9, one of its files is damaged one way, and it is started again while the two others
// run and a client keeps writing. Each cell records whether the member came back by itself
// (serving and caught up within 30 s) and how long that took, the acknowledged writes the
// ensemble lost, and the first line its log gave an operator. A member that does not come back is
// then wiped (myid kept) and started again, so that every cell starts from a healthy ensemble.
// zkr's files and ZooKeeper 3.8's own are damaged side by side.
//
//	harness diskfaults [--server zkr|zookeeper|both] [--cells substring] [--report docs/disk-faults.md]

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

const diskPath = root + "/disk"

// diskCell damages one file of a stopped member; it returns what it did, or "" if the file
// does not exist on this member (the cell is skipped then, and said so).
type diskCell struct {
	file, damage string
	apply        func(c *Cluster, m *Member, old map[string][]byte) string
}

// config: the file is the operator's configuration (myid), not state: refusing to start with
// the file and the reason is the right answer, as ZooKeeper does.
func (c diskCell) config() bool { return c.file == "myid" }

type diskResult struct {
	cell     diskCell
	did      string
	back     bool
	took     time.Duration
	lost     int
	line     string
	repaired string
}

// Damage kinds applied to a whole file.
func flipAt(path string, frac float64) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	off := int(float64(len(b)-1) * frac)
	b[off] ^= 0x5a
	if os.WriteFile(path, b, 0o644) != nil {
		return ""
	}
	return fmt.Sprintf("flipped byte %d of %d", off, len(b))
}

func truncateTo(path string, n int64) string {
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	if n > st.Size() {
		n = st.Size()
	}
	if os.Truncate(path, n) != nil {
		return ""
	}
	return fmt.Sprintf("truncated from %d to %d bytes", st.Size(), n)
}

func zeroFrom(path string, from int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) <= from {
		return ""
	}
	for i := from; i < int64(len(b)); i++ {
		b[i] = 0
	}
	if os.WriteFile(path, b, 0o644) != nil {
		return ""
	}
	return fmt.Sprintf("zeroed bytes %d..%d", from, len(b))
}

func remove(path string) string {
	if os.Remove(path) != nil {
		return ""
	}
	return "deleted"
}

func restoreOld(path string, old map[string][]byte) string {
	b, ok := old[path]
	if !ok {
		return ""
	}
	if os.WriteFile(path, b, 0o644) != nil {
		return ""
	}
	return fmt.Sprintf("older copy restored (%d bytes, taken 2 s before the kill)", len(b))
}

// unreadable writes a marker file with unreadable content (a marker damaged in place).
func unreadable(path string) string {
	if os.WriteFile(path, []byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0x17}, 0o644) != nil {
		return ""
	}
	return "written with 6 bytes of garbage"
}

// fileCells is each damage kind on one file, found on the stopped member by `find`.
func fileCells(name string, find func(c *Cluster, m *Member) string, withOld bool) []diskCell {
	on := func(f func(p string, old map[string][]byte) string) func(*Cluster, *Member, map[string][]byte) string {
		return func(c *Cluster, m *Member, old map[string][]byte) string {
			p := find(c, m)
			if p == "" {
				return ""
			}
			return f(p, old)
		}
	}
	cells := []diskCell{
		{name, "one byte flipped", on(func(p string, _ map[string][]byte) string { return flipAt(p, 0.5) })},
		{name, "truncated to half", on(func(p string, _ map[string][]byte) string {
			st, err := os.Stat(p)
			if err != nil {
				return ""
			}
			return truncateTo(p, st.Size()/2)
		})},
		{name, "zeroed", on(func(p string, _ map[string][]byte) string { return zeroFrom(p, 0) })},
		{name, "deleted", on(func(p string, _ map[string][]byte) string { return remove(p) })},
	}
	if withOld {
		cells = append(cells, diskCell{name, "older copy restored", on(restoreOld)})
	}
	return cells
}

func inData(rel string) func(c *Cluster, m *Member) string {
	return func(c *Cluster, m *Member) string {
		p := filepath.Join(m.DataDir, rel)
		if _, err := os.Stat(p); err != nil {
			return ""
		}
		return p
	}
}

// logRecordCell damages one record of the member's newest log file (which = "first", "middle",
// "last"), or cuts the file at a record boundary or inside a record.
func logRecordCell(which, damage string) diskCell {
	return diskCell{"newest log file, " + which + " record", damage, func(c *Cluster, m *Member, _ map[string][]byte) string {
		path, recs, end := c.newestLog(m)
		if path == "" || len(recs) < 3 {
			return ""
		}
		i := map[string]int{"first": 0, "middle": len(recs) / 2, "last": len(recs) - 1}[which]
		start, next := recs[i], end
		if i+1 < len(recs) {
			next = recs[i+1]
		}
		base := filepath.Base(path)
		switch damage {
		case "one byte flipped":
			what, err := flipMiddle(c, path, start, next)
			if err != nil {
				return ""
			}
			return fmt.Sprintf("%s: flipped byte %s (record %d of %d)", base, what, i+1, len(recs))
		case "cut at its start (a record boundary)":
			return fmt.Sprintf("%s: %s (record %d of %d)", base, truncateTo(path, start), i+1, len(recs))
		case "cut inside it":
			return fmt.Sprintf("%s: %s (record %d of %d)", base, truncateTo(path, start+(next-start)/2), i+1, len(recs))
		case "zeroed":
			b, err := os.ReadFile(path)
			if err != nil {
				return ""
			}
			for j := start; j < next && j < int64(len(b)); j++ {
				b[j] = 0
			}
			if os.WriteFile(path, b, 0o644) != nil {
				return ""
			}
			return fmt.Sprintf("%s: zeroed record %d of %d", base, i+1, len(recs))
		}
		return ""
	}}
}

// logCells are the newest log file's cells, the same for both servers (c.newestLog reads
// either format).
func logCells() []diskCell {
	var cells []diskCell
	for _, w := range []string{"first", "middle", "last"} {
		cells = append(cells, logRecordCell(w, "one byte flipped"))
	}
	return append(cells,
		logRecordCell("middle", "cut at its start (a record boundary)"),
		logRecordCell("last", "cut inside it"),
		logRecordCell("last", "zeroed"),
		diskCell{"newest log file", "deleted", func(c *Cluster, m *Member, _ map[string][]byte) string {
			p, _, _ := c.newestLog(m)
			if p == "" {
				return ""
			}
			return filepath.Base(p) + " " + remove(p)
		}},
	)
}

func zkrCells() []diskCell {
	cells := logCells()
	for _, f := range []string{"raft/vote", "raft/committed", "raft/purged", "raft/incarnation"} {
		cells = append(cells, fileCells(f, inData(f), true)...)
	}
	newestSnap := func(c *Cluster, m *Member) string { return c.newestSnapshot(m) }
	cells = append(cells, fileCells("newest snapshot (tree file)", newestSnap, false)...)
	cells = append(cells, fileCells("newest snapshot's .meta", func(c *Cluster, m *Member) string {
		s := c.newestSnapshot(m)
		if s == "" {
			return ""
		}
		return inData(strings.TrimPrefix(s+".meta", m.DataDir+"/"))(c, m)
	}, false)...)
	cells = append(cells,
		diskCell{"both snapshots", "deleted", func(c *Cluster, m *Member, _ map[string][]byte) string {
			dir := filepath.Join(m.DataDir, "raft", "snap")
			ents, err := os.ReadDir(dir)
			if err != nil || len(ents) == 0 {
				return ""
			}
			for _, e := range ents {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
			return fmt.Sprintf("deleted %d files of raft/snap", len(ents))
		}},
		diskCell{"raft/amnesia (marker)", "present, unreadable", func(c *Cluster, m *Member, _ map[string][]byte) string {
			return unreadable(filepath.Join(m.DataDir, "raft", "amnesia"))
		}},
		diskCell{"raft/diverged (marker)", "present, unreadable", func(c *Cluster, m *Member, _ map[string][]byte) string {
			return unreadable(filepath.Join(m.DataDir, "raft", "diverged"))
		}},
	)
	cells = append(cells, fileCells("myid", inData("myid"), false)...)
	cells = append(cells, fileCells("secret", inData("secret"), false)...)
	return cells
}

func zookeeperCells() []diskCell {
	cells := logCells()
	for _, f := range []string{"version-2/acceptedEpoch", "version-2/currentEpoch"} {
		cells = append(cells, fileCells(f, inData(f), true)...)
	}
	cells = append(cells, fileCells("newest snapshot", func(c *Cluster, m *Member) string { return c.newestSnapshot(m) }, false)...)
	cells = append(cells, fileCells("myid", inData("myid"), false)...)
	return cells
}

// diskWriter creates sequential znodes under diskPath and remembers the acknowledged ones.
type diskWriter struct {
	mu    sync.Mutex
	acked map[string]bool
	stop  chan struct{}
	done  chan struct{}
}

func startDiskWriter(addrs []string) (*diskWriter, error) {
	s, err := finalSession(&Env{Addrs: addrs})
	if err != nil {
		return nil, err
	}
	if err := ensure(s.Conn, diskPath, nil); err != nil {
		s.Close()
		return nil, err
	}
	w := &diskWriter{acked: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer s.Close()
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			name, err := call(func() (string, error) {
				return s.Conn.Create(diskPath+"/w-", []byte("x"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
			})
			if err == nil {
				w.mu.Lock()
				w.acked[filepath.Base(name)] = true
				w.mu.Unlock()
			}
		}
	}()
	return w, nil
}

// missing counts acknowledged znodes the ensemble no longer has.
func (w *diskWriter) missing(addrs []string) (int, error) {
	// The acknowledged set first: a create acknowledged after the read is not missing.
	w.mu.Lock()
	acked := make([]string, 0, len(w.acked))
	for a := range w.acked {
		acked = append(acked, a)
	}
	w.mu.Unlock()
	s, err := finalSession(&Env{Addrs: addrs})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	names, err := syncedChildren(s.Conn, diskPath)
	if err != nil {
		return 0, err
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	n := 0
	for _, a := range acked {
		if !have[a] {
			n++
		}
	}
	return n, nil
}

// firstOperatorLine is the first warning or error the member logged since its newest start.
func firstOperatorLine(m *Member, kind string) string {
	f, err := os.Open(m.Log)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "===== harness: start") {
			lines = lines[:0]
			continue
		}
		lines = append(lines, l)
	}
	for _, l := range lines {
		bad := strings.Contains(l, " ERROR ") || strings.Contains(l, " WARN ") || strings.Contains(l, "Error:")
		if kind == "zookeeper" {
			bad = strings.Contains(l, "ERROR") || strings.Contains(l, "Exception") && !strings.Contains(l, "INFO")
		}
		// The peers' connection churn around a restart is not about the disk.
		if bad && !strings.Contains(l, "cannot reach member") && !strings.Contains(l, "Connection refused") &&
			!strings.Contains(l, "Cannot open channel") {
			if i := strings.Index(l, "Z "); i > 0 && i < 40 && kind == "zkr" {
				l = l[i+2:]
			}
			if len(l) > 220 {
				l = l[:220] + "…"
			}
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func runDiskFaults(args []string) {
	fs := flag.NewFlagSet("diskfaults", flag.ExitOnError)
	servers := fs.String("server", "both", "zkr, zookeeper or both")
	only := fs.String("cells", "", "run only cells whose file or damage contains this")
	zkrBin := fs.String("zkr", "target/release/zkr", "the zkr binary")
	out := fs.String("out", "tests/faults/.work/disk", "member logs and data")
	report := fs.String("report", "", "write the markdown matrix here")
	sched := fs.String("schedule", "a", "a (a follower damaged), a-leader (the leader damaged), b (the two-fault schedule), or all")
	_ = fs.Parse(args)
	if abs, err := filepath.Abs(*zkrBin); err == nil {
		*zkrBin = abs
	}
	zk.DefaultLogger = quietLogger{}
	started := time.Now()
	var kinds []string
	if *servers == "both" {
		kinds = []string{"zkr", "zookeeper"}
	} else {
		kinds = []string{*servers}
	}
	if err := setupNetwork(3); err != nil {
		cleanupNetwork()
		fatal("network setup: %v", err)
	}
	defer cleanupNetwork()
	schedules := []string{*sched}
	if *sched == "all" {
		schedules = []string{"a", "a-leader", "b"}
	}
	results := map[string][]diskResult{}
	var sections []string
	failed := 0
	for _, sc := range schedules {
		for _, kind := range kinds {
			sections = append(sections, kind+"/"+sc)
		}
	}
	for _, section := range sections {
		kind, sc, _ := strings.Cut(section, "/")
		cells := zkrCells()
		if kind == "zookeeper" {
			cells = zookeeperCells()
		}
		var sel []diskCell
		for _, c := range cells {
			if *only == "" || strings.Contains(c.file+" "+c.damage, *only) {
				sel = append(sel, c)
			}
		}
		rs, err := runDiskCells(kind, sc, sel, *zkrBin, filepath.Join(*out, kind))
		if err != nil {
			fatal("%s: %v", section, err)
		}
		results[section] = rs
		for _, r := range rs {
			if kind == "zkr" && r.did != "" && (r.lost > 0 || !r.back && !r.cell.config()) {
				failed++
			}
		}
	}
	if *report != "" {
		writeDiskReport(*report, sections, results, time.Since(started))
	}
	fmt.Printf("diskfaults: %d zkr cells lost writes or stayed out (configuration files aside), in %.0fs\n", failed, time.Since(started).Seconds())
	if failed > 0 {
		cleanupNetwork()
		os.Exit(1)
	}
}

// diskSchedule names what happens around one cell's damage (see the report's text).
var diskSchedule = map[string]string{
	"a": "Schedule (a): a follower is killed -9, one of its files is damaged, and it is started again while the two " +
		"others run.",
	"a-leader": "Schedule (a), the leader: the leader is killed -9, one of its files is damaged, and it is started again " +
		"while the two others elect a new leader and run.",
	"b": "Schedule (b), the two-fault schedule of issue 38 item 1, per file: follower F2 is killed; for 1.5 s the " +
		"creates are acknowledged by the leader L and follower F1 alone; L and F1 are killed -9, one of F1's files is " +
		"damaged, F1 and F2 are started (6 s without L: they must not serve a tree without those creates), then L " +
		"returns. *back*: F1 serves and has what the leader has within 30 s of L's return; *lost*: acknowledged creates " +
		"gone once all three run again (for good).",
}

func runDiskCells(kind, sched string, cells []diskCell, zkrBin, work string) ([]diskResult, error) {
	_ = os.RemoveAll(work)
	events := &EventLog{start: time.Now()}
	c, err := newCluster(kind, 3, work, zkrBin, events)
	if err != nil {
		return nil, err
	}
	defer c.StopAll()
	for _, m := range c.Members {
		if err := c.Start(m); err != nil {
			return nil, err
		}
	}
	if c.WaitLeader(60*time.Second) == nil {
		return nil, fmt.Errorf("no leader within 60 s")
	}
	w, err := startDiskWriter(c.Addrs())
	if err != nil {
		return nil, err
	}
	defer func() { close(w.stop); <-w.done }()
	rng := rand.New(rand.NewSource(1))
	var rs []diskResult
	lostBefore := 0
	for _, cell := range cells {
		if _, ok, why := c.WaitConverged(60 * time.Second); !ok {
			return rs, fmt.Errorf("before %s / %s: not converged: %s", cell.file, cell.damage, why)
		}
		l := c.Leader()
		var victim, other *Member
		for _, m := range c.Members {
			if m != l && (victim == nil || rng.Intn(2) == 0) {
				victim = m
			}
		}
		for _, m := range c.Members {
			if m != l && m != victim {
				other = m
			}
		}
		if sched == "a-leader" {
			victim = l
		}
		// Older copies of the small files, 2 s before the kill.
		old := map[string][]byte{}
		_ = filepath.Walk(victim.DataDir, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && info.Size() < 1<<16 {
				if b, err := os.ReadFile(p); err == nil {
					old[p] = b
				}
			}
			return nil
		})
		time.Sleep(2 * time.Second)
		var r diskResult
		if sched == "b" {
			c.Kill(other)
			time.Sleep(1500 * time.Millisecond)
			c.Kill(l)
			c.Kill(victim)
			r = diskResult{cell: cell, did: cell.apply(c, victim, old)}
			for _, m := range []*Member{victim, other} {
				if err := c.Start(m); err != nil {
					return rs, err
				}
			}
			time.Sleep(6 * time.Second)
			if err := c.Start(l); err != nil {
				return rs, err
			}
		} else {
			c.Kill(victim)
			r = diskResult{cell: cell, did: cell.apply(c, victim, old)}
			if err := c.Start(victim); err != nil {
				return rs, err
			}
		}
		if r.did == "" {
			r.line = "(no such file on this member: skipped)"
		} else {
			took, back := waitCaughtUp(c, victim, 30*time.Second)
			r.back, r.took = back, took
		}
		time.Sleep(500 * time.Millisecond)
		r.line = firstOperatorLine(victim, kind)
		if !r.back && r.did != "" {
			st := "running, not serving"
			if !victim.Running() {
				st = "exited (" + victim.ExitStatus() + ")"
			}
			c.Kill(victim)
			ents, _ := os.ReadDir(victim.DataDir)
			for _, e := range ents {
				if e.Name() != "myid" {
					_ = os.RemoveAll(filepath.Join(victim.DataDir, e.Name()))
				}
			}
			_ = os.WriteFile(filepath.Join(victim.DataDir, "myid"), []byte(fmt.Sprintf("%d\n", victim.ID)), 0o644)
			_ = c.Start(victim)
			_, ok := waitCaughtUp(c, victim, 60*time.Second)
			r.repaired = fmt.Sprintf("%s; wiped (myid kept) and started: %v", st, map[bool]string{true: "caught up", false: "still out"}[ok])
		}
		if sched == "b" {
			// A leader whose committed writes the others went on without stops by design (it
			// says so, and sets its state aside when started again): it is started again, and
			// the cell counts what all three have once they run.
			for _, m := range c.Members {
				if !m.Running() {
					r.repaired += fmt.Sprintf("member %d stopped (%s): %s; started again. ", m.ID, m.ExitStatus(), firstOperatorLine(m, kind))
					_ = c.Start(m)
				}
			}
			c.WaitConverged(60 * time.Second)
		}
		if n, err := w.missing(c.Addrs()); err == nil {
			r.lost, lostBefore = n-lostBefore, n
		}
		fmt.Printf("%-10s %-8s %-34s %-38s back=%-5v %5.1fs lost=%d %s\n", kind, sched, cell.file, cell.damage, r.back, r.took.Seconds(), r.lost, r.line+" "+r.repaired)
		rs = append(rs, r)
	}
	return rs, nil
}

func writeDiskReport(path string, sections []string, results map[string][]diskResult, took time.Duration) {
	var b strings.Builder
	wr := func(format string, args ...interface{}) { fmt.Fprintf(&b, format, args...) }
	wr("# Disk faults: every file a member keeps, damaged one way at a time\n\n")
	wr("Generated by `bash tests/faults/run.sh --disk` (tests/faults/diskfaults.go, issue 38 item 2) on %s, %d cores, "+
		"in %.0f minutes. Do not edit by hand: run the command again.\n\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), took.Minutes())
	wr("A 3-member ensemble (tickTime=500) takes a sequential create every 20 ms from one client. " +
		"Schedule (a): a follower is killed -9, one of its files is damaged, and it is started again while the two others run. " +
		"*back*: the member serves and has what the leader had at its restart within 30 s, by itself; *lost*: " +
		"acknowledged creates the ensemble no longer has after the cell; *line*: the first warning or error the member " +
		"logged after the restart (what an operator reads). A member that is not back is wiped (myid kept) and started " +
		"again before the next cell, and the cell says whether that brought it back. Each section below names its " +
		"schedule; the two-fault schedule (b) is also tests/faults' lose-acked-log, lose-acked-last and " +
		"lose-acked-wipe nemeses and the crash-point tests (tests/ensemble_crash.rs).\n\n")
	for _, section := range sections {
		kind, sc, _ := strings.Cut(section, "/")
		wr("## %s, schedule %s\n\n%s\n\n| file | damage | what was done | back | time | lost | line |\n|---|---|---|---|---:|---:|---|\n",
			serverTitle[kind], sc, diskSchedule[sc])
		for _, r := range results[section] {
			back := "yes"
			if r.back && r.repaired != "" {
				back = "yes; " + md(r.repaired)
			}
			if r.did == "" {
				back = "–"
			} else if !r.back && r.cell.config() {
				back = "no (configuration: refuses with the file and reason): " + md(r.repaired)
			} else if !r.back {
				back = "**no**: " + md(r.repaired)
			}
			wr("| %s | %s | %s | %s | %.1f s | %d | %s |\n", r.cell.file, r.cell.damage, md(r.did), back, r.took.Seconds(), r.lost, md(r.line))
		}
		wr("\n")
	}
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
}
