// Command faults is zkr's Jepsen-style fault harness (issue #13, items 1-5): it starts
// ensembles of zkr or of Debian's ZooKeeper 3.8, one member per network namespace, runs
// workloads from clients in the root namespace while a nemesis breaks things on a seeded
// schedule, heals, requires convergence, checks every workload's history and writes the
// result table. See tests/faults/README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

// EventLog is a run's timeline: what the nemesis did and when.
type EventLog struct {
	mu          sync.Mutex
	start       time.Time
	lines       []string
	disruptions []int64
	faults      []int64
	heals       []int64
	quiet       bool
}

func (e *EventLog) Add(format string, args ...interface{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	line := fmt.Sprintf("%6.1fs  %s", time.Since(e.start).Seconds(), fmt.Sprintf(format, args...))
	e.lines = append(e.lines, line)
	if !e.quiet {
		fmt.Println("    " + line)
	}
}

// Disrupt marks a moment when the ensemble changed (a fault or a heal): session deadlines count
// again from there.
func (e *EventLog) Disrupt() {
	e.mu.Lock()
	e.disruptions = append(e.disruptions, time.Since(e.start).Nanoseconds())
	e.mu.Unlock()
}

// MarkFault notes that a nemesis starts a fault; MarkHeal that it healed (a disruption too).
func (e *EventLog) MarkFault() {
	e.mu.Lock()
	e.faults = append(e.faults, time.Since(e.start).Nanoseconds())
	e.mu.Unlock()
}

func (e *EventLog) MarkHeal() {
	e.mu.Lock()
	t := time.Since(e.start).Nanoseconds()
	e.disruptions = append(e.disruptions, t)
	e.heals = append(e.heals, t)
	e.mu.Unlock()
}

// FaultTimes and HealTimes are when the nemesis struck and healed (history clock).
func (e *EventLog) FaultTimes() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int64(nil), e.faults...)
}

func (e *EventLog) HealTimes() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int64(nil), e.heals...)
}

func (e *EventLog) Disruptions() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int64(nil), e.disruptions...)
}

func (e *EventLog) Lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.lines...)
}

// Run is one server × one nemesis, with every workload at once.
type Run struct {
	Server    string   `json:"server"`
	Nemesis   string   `json:"nemesis"`
	Seed      int64    `json:"seed"`
	Members   int      `json:"members"`
	Seconds   float64  `json:"seconds"`
	Faults    int      `json:"faults"`
	Recovered bool     `json:"recovered"`
	Recover   float64  `json:"recover_seconds"`
	NotWhy    string   `json:"not_recovered_why,omitempty"`
	TreeSame  bool     `json:"tree_same"`
	TreeWhy   string   `json:"tree_why,omitempty"`
	Cells     []Cell   `json:"cells"`
	Timeline  []string `json:"timeline"`
	Error     string   `json:"error,omitempty"`
	Replay    string   `json:"replay"`
	Wall      float64  `json:"wall_seconds"`
}

// runOK: no harness error, converged, the same tree on every member.
func (r *Run) runOK() bool { return r.Error == "" && r.Recovered && r.TreeSame }

// valid: runOK and every cell valid.
func (r *Run) valid() bool {
	if !r.runOK() {
		return false
	}
	for _, c := range r.Cells {
		if !c.Valid {
			return false
		}
	}
	return true
}

type options struct {
	mode       string
	servers    []string
	nemeses    []string
	workloads  []string
	seed       int64
	members    int
	duration   time.Duration
	zkrBin     string
	out        string
	report     string
	keep       bool
	opLog      bool
	recoverMax time.Duration
}

// defaultDuration is each mode's fault time per run.
var defaultDuration = map[string]time.Duration{"short": 12 * time.Second, "full": 60 * time.Second}

func runSeed(master int64, server, nemesis string) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s", master, server, nemesis)
	return int64(h.Sum64() & 0x7fffffffffff)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cleanup" {
		cleanupNetwork()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "diskfaults" {
		if os.Geteuid() != 0 {
			fatal("the fault harness needs root (network namespaces, iptables)")
		}
		runDiskFaults(os.Args[2:])
		return
	}
	var o options
	var servers, nems, wls string
	flag.StringVar(&o.mode, "mode", "short", "short (CI: every nemesis once, 12 s each) or full")
	flag.StringVar(&servers, "server", "", "zkr, zookeeper or both (default: short zkr, full both)")
	flag.StringVar(&nems, "nemesis", "all", "comma-separated nemeses, or all")
	flag.StringVar(&wls, "workload", "all", "comma-separated workloads (run at once), or all")
	flag.Int64Var(&o.seed, "seed", 0, "master seed (0: from the clock); each run's seed derives from it, the server and the nemesis")
	flag.IntVar(&o.members, "members", 0, "ensemble size (default 3 short, 5 full)")
	flag.DurationVar(&o.duration, "duration", 0, "nemesis time per run (default 12s short, 60s full)")
	flag.StringVar(&o.zkrBin, "zkr", "target/release/zkr", "the zkr binary")
	flag.StringVar(&o.out, "out", "tests/faults/.work", "where runs keep member logs, results.json and histories")
	flag.StringVar(&o.report, "report", "", "write the markdown result table here (the full run writes docs/faults.md)")
	flag.BoolVar(&o.opLog, "op-log", false, "write every failed op, with its time, to <run>/ops.log")
	flag.BoolVar(&o.keep, "keep", false, "keep every run's member logs and data, not only failed runs' logs")
	flag.Parse()
	if o.mode != "short" && o.mode != "full" {
		fatal("--mode must be short or full")
	}
	if servers == "" {
		servers = map[string]string{"short": "zkr", "full": "both"}[o.mode]
	}
	switch servers {
	case "both":
		o.servers = []string{"zkr", "zookeeper"}
	case "zkr", "zookeeper":
		o.servers = []string{servers}
	default:
		fatal("--server must be zkr, zookeeper or both")
	}
	if nems == "all" {
		for _, n := range nemeses {
			o.nemeses = append(o.nemeses, n.Name)
		}
	} else {
		for _, n := range strings.Split(nems, ",") {
			if _, ok := nemesisByName(n); !ok {
				fatal("unknown nemesis %q", n)
			}
			o.nemeses = append(o.nemeses, n)
		}
	}
	if wls == "all" {
		o.workloads = workloadNames
	} else {
		for _, n := range strings.Split(wls, ",") {
			if _, ok := newWorkload(n); !ok {
				fatal("unknown workload %q", n)
			}
			o.workloads = append(o.workloads, n)
		}
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano() % 1_000_000_000
	}
	if o.members == 0 {
		o.members = map[string]int{"short": 3, "full": 5}[o.mode]
	}
	if o.duration == 0 {
		o.duration = defaultDuration[o.mode]
	}
	o.recoverMax = 60 * time.Second
	if abs, err := filepath.Abs(o.zkrBin); err == nil {
		o.zkrBin = abs
	}
	if os.Geteuid() != 0 {
		fatal("the fault harness needs root (network namespaces, iptables)")
	}

	// Everything this process creates goes on any exit: normal, failure, or a signal.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		fmt.Printf("\ninterrupted (%v): cleaning up\n", s)
		cleanupNetwork()
		os.Exit(130)
	}()
	defer cleanupNetwork()
	zk.DefaultLogger = quietLogger{}

	started := time.Now()
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fatal("%v", err)
	}
	fmt.Printf("faults: mode %s, seed %d, %d members, %v per run, servers %v\n", o.mode, o.seed, o.members, o.duration, o.servers)
	fmt.Printf("        nemeses %v\n        workloads %v (at once)\n", o.nemeses, o.workloads)
	if err := setupNetwork(o.members); err != nil {
		cleanupNetwork()
		fatal("network setup: %v", err)
	}
	var runs []*Run
	for _, server := range o.servers {
		for _, nem := range o.nemeses {
			r := runOne(&o, server, nem)
			runs = append(runs, r)
			printRun(r)
		}
	}
	passed, failed := 0, 0
	zkrFailed := 0
	for _, r := range runs {
		for _, c := range r.Cells {
			okCell := c.Valid && r.runOK()
			if okCell {
				passed++
			} else {
				failed++
				if r.Server == "zkr" {
					zkrFailed++
				}
			}
		}
	}
	res, _ := json.MarshalIndent(map[string]interface{}{"mode": o.mode, "seed": o.seed, "members": o.members,
		"duration_seconds": o.duration.Seconds(), "runs": runs}, "", "  ")
	_ = os.WriteFile(filepath.Join(o.out, "results.json"), res, 0o644)
	if o.report != "" {
		if err := writeReport(o.report, &o, runs, time.Since(started)); err != nil {
			fmt.Printf("cannot write %s: %v\n", o.report, err)
		} else {
			fmt.Printf("wrote %s\n", o.report)
		}
	}
	fmt.Printf("%d passed, %d failed (%d of them zkr) in %.0fs\n", passed, failed, zkrFailed, time.Since(started).Seconds())
	cleanupNetwork()
	if zkrFailed > 0 {
		os.Exit(1)
	}
}

func fatal(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "faults: "+format+"\n", args...)
	os.Exit(2)
}

func printRun(r *Run) {
	for _, c := range r.Cells {
		status := "PASS"
		if !c.Valid || !r.runOK() {
			status = "FAIL"
		}
		why := c.Verdict
		if c.Valid && !r.runOK() {
			switch {
			case r.Error != "":
				why = "run error: " + r.Error
			case !r.Recovered:
				why = "no convergence: " + r.NotWhy
			case !r.TreeSame:
				why = "members' trees differ: " + r.TreeWhy
			}
		}
		fmt.Printf("%s faults/%s/%s/%s: %s (ops %d, ok %d, fail %d, unknown %d)\n", status, r.Server, r.Nemesis, c.Workload,
			why, c.Ops, c.OK, c.Fail, c.Unknown)
		for _, p := range c.Problems {
			fmt.Printf("    %s\n", p)
		}
		if len(c.Errors) > 0 {
			e := c.Errors
			if len(e) > 4 {
				e = append(e[:4:4], "…")
			}
			fmt.Printf("    errors: %s\n", strings.Join(e, ", "))
		}
	}
	if !r.valid() {
		fmt.Printf("    replay: %s\n", r.Replay)
	}
}

// runOne runs one server under one nemesis with all the workloads.
func runOne(o *options, server, nemName string) *Run {
	wall := time.Now()
	nem, _ := nemesisByName(nemName)
	seed := runSeed(o.seed, server, nemName)
	r := &Run{Server: server, Nemesis: nemName, Seed: seed, Members: o.members, Seconds: o.duration.Seconds(),
		Replay: fmt.Sprintf("bash tests/faults/run.sh --%s --server %s --nemesis %s --seed %d --members %d", o.mode, server, nemName, o.seed, o.members)}
	if len(o.workloads) != len(workloadNames) {
		r.Replay += " --workload " + strings.Join(o.workloads, ",")
	}
	if o.duration != defaultDuration[o.mode] {
		r.Replay += " --duration " + o.duration.String()
	}
	defer func() { r.Wall = time.Since(wall).Seconds() }()
	fmt.Printf("== %s under %s (seed %d)\n", server, nemName, seed)
	work := filepath.Join(o.out, server+"-"+nemName)
	_ = os.RemoveAll(work)
	if err := os.MkdirAll(work, 0o755); err != nil {
		r.Error = err.Error()
		return r
	}
	events := &EventLog{start: time.Now()}
	c, err := newCluster(server, o.members, work, o.zkrBin, events)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	healPartitions(o.members)
	defer func() {
		c.StopAll()
		r.Timeline = events.Lines()
		_ = os.WriteFile(filepath.Join(work, "timeline.txt"), []byte(strings.Join(r.Timeline, "\n")+"\n"), 0o644)
		if !o.keep {
			for _, m := range c.Members {
				_ = os.RemoveAll(m.DataDir)
			}
			if r.valid() {
				_ = os.RemoveAll(work)
			}
		}
	}()
	for _, m := range c.Members {
		if err := c.Start(m); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	if _, ok, why := c.WaitConverged(90 * time.Second); !ok {
		r.Error = "the ensemble did not form: " + why
		return r
	}
	events.Add("ensemble formed, leader m%d", leaderID(c))
	if o.opLog {
		f, err := os.Create(filepath.Join(work, "ops.log"))
		if err == nil {
			var mu sync.Mutex
			opLog = func(format string, args ...interface{}) {
				mu.Lock()
				fmt.Fprintf(f, "%7.3fs  %s\n", time.Since(events.start).Seconds(), fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			defer func() { opLog = nil; f.Close() }()
		}
	}
	env := &Env{Addrs: c.Addrs(), Seed: seed, Start: events.start, Events: events, Short: o.mode == "short", Work: work}
	// /jepsen and each workload's prefix.
	setup, err := finalSession(env)
	if err != nil {
		r.Error = "no session for setup: " + err.Error()
		return r
	}
	if err := ensure(setup.Conn, root, nil); err != nil {
		r.Error = err.Error()
		setup.Close()
		return r
	}
	setup.Close()
	var wls []Workload
	for _, name := range o.workloads {
		w, _ := newWorkload(name)
		wls = append(wls, w)
	}
	// A nemesis with a checker of its own gets a cell, after the workloads'.
	var checker Workload
	if nem.Checker != nil {
		checker = nem.Checker(c)
		wls = append(wls, checker)
	}
	for i, w := range wls {
		if err := w.Setup(env); err != nil {
			r.Error = fmt.Sprintf("%s setup: %v", w.Name(), err)
			for _, w := range wls[:i] {
				w.Close()
			}
			return r
		}
	}
	defer func() {
		for _, w := range wls {
			w.Close()
		}
	}()

	// Workloads and the nemesis, for o.duration; a watcher notes each new leader (a new leader
	// gives every session a full timeout: the sessions checker counts from there).
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go watchLeader(watchCtx, c, events)
	var wg sync.WaitGroup
	for _, w := range wls {
		wg.Add(1)
		go func(w Workload) { defer wg.Done(); w.Run(ctx, env) }(w)
	}
	faults := newFaults(c)
	faults.checker = checker
	rng := env.rng(1)
	r.Faults = schedule(ctx, nem, faults, rng, events)
	<-ctx.Done()
	cancel()
	// In-flight ops end within their timeout.
	wg.Wait()
	events.Add("workloads stopped")

	// Heal, converge.
	healed := faults.Heal()
	if healed != "nothing to heal" {
		events.MarkHeal()
	}
	events.Add("final heal: %s", healed)
	took, ok, why := c.WaitConverged(o.recoverMax)
	r.Recovered, r.Recover, r.NotWhy = ok, took.Seconds(), why
	if ok {
		events.Add("converged %.1fs after the heal", took.Seconds())
	} else {
		events.Add("NOT converged %v after the heal: %s", o.recoverMax, why)
	}
	for _, w := range wls {
		w.Final(env)
	}
	events.Add("final reads done")
	for _, w := range wls {
		r.Cells = append(r.Cells, w.Result())
	}
	for _, w := range wls {
		w.Close()
	}
	wls = nil
	// Every member holds the same tree (client-side hash, all znodes but /zookeeper), once the
	// sessions just closed are gone everywhere.
	if ok {
		for try := 0; try < 3; try++ {
			time.Sleep(time.Second)
			if _, ok, why := c.WaitConverged(30 * time.Second); !ok {
				r.TreeWhy = "no convergence after the sessions closed: " + why
				continue
			}
			t0 := time.Now()
			r.TreeSame, r.TreeWhy = sameTrees(c, events)
			events.Add("trees read in %.1fs", time.Since(t0).Seconds())
			if r.TreeSame {
				break
			}
		}
	}
	return r
}

// watchLeader records every change of leader until ctx ends.
func watchLeader(ctx context.Context, c *Cluster, events *EventLog) {
	last := leaderID(c)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
		if id := leaderID(c); id != 0 && id != last {
			last = id
			events.Disrupt()
			events.Add("leader now m%d", id)
		}
	}
}

func leaderID(c *Cluster) int {
	if l := c.Leader(); l != nil {
		return l.ID
	}
	return 0
}

// schedule applies the nemesis until ctx ends: quiet 2-4 s, fault, hold, heal.
func schedule(ctx context.Context, nem Nemesis, f *Faults, rng *rand.Rand, events *EventLog) int {
	n := 0
	for {
		quiet := between(rng, 2*time.Second, 4*time.Second)
		select {
		case <-ctx.Done():
			return n
		case <-time.After(quiet):
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < time.Second {
			return n
		}
		hold := nem.Hold(rng)
		events.MarkFault()
		what := nem.Apply(f, rng)
		events.Disrupt()
		events.Add("%s: %s", nem.Name, what)
		n++
		select {
		case <-time.After(hold):
		case <-ctx.Done():
			// The run's end heals it.
			if !nem.Destructive {
				return n
			}
			time.Sleep(hold)
		}
		healed := f.Heal()
		events.MarkHeal()
		events.Add("heal: %s", healed)
		if nem.Destructive && f.victim != nil {
			t, ok := waitCaughtUp(f.c, f.victim, 30*time.Second)
			if ok {
				events.Add("m%d caught up %.1fs after its restart", f.victim.ID, t.Seconds())
			} else {
				events.Add("m%d did NOT catch up within 30s (%s)", f.victim.ID, f.victim.ExitStatus())
			}
			f.victim = nil
		}
	}
}

// waitCaughtUp waits until m serves and has applied what the leader had when m restarted.
func waitCaughtUp(c *Cluster, m *Member, d time.Duration) (time.Duration, bool) {
	start := time.Now()
	var target int64 = -1
	for time.Since(start) < d {
		if !m.Running() {
			return time.Since(start), false
		}
		if target < 0 {
			if l := c.Leader(); l != nil && l != m {
				target = c.Status(l).Zxid
			}
		}
		st := c.Status(m)
		// A member that leads again has what the ensemble committed.
		if st.Mode == "leader" || target >= 0 && st.Mode == "follower" && st.Zxid >= target {
			return time.Since(start), true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), false
}

// sameTrees reads the whole tree from each member (no failover: one host per session) and
// compares hashes of every znode's path, data and stat.
func sameTrees(c *Cluster, events *EventLog) (bool, string) {
	type res struct {
		hash  uint64
		nodes int
		err   error
	}
	rs := make([]res, c.N())
	var wg sync.WaitGroup
	for i, m := range c.Members {
		wg.Add(1)
		go func(i int, m *Member) {
			defer wg.Done()
			h, n, err := treeHash(fmt.Sprintf("%s:%d", m.IP, clientPort))
			rs[i] = res{h, n, err}
		}(i, m)
	}
	wg.Wait()
	var parts []string
	same := true
	for i, x := range rs {
		if x.err != nil {
			same = false
			parts = append(parts, fmt.Sprintf("m%d: %v", i+1, x.err))
			continue
		}
		parts = append(parts, fmt.Sprintf("m%d %016x (%d znodes)", i+1, x.hash, x.nodes))
		if x.hash != rs[0].hash || rs[0].err != nil {
			same = false
		}
	}
	events.Add("trees: %s", strings.Join(parts, ", "))
	if same {
		return true, ""
	}
	return false, strings.Join(parts, ", ")
}

// treeHash walks one member's tree level by level, many reads in flight at once.
func treeHash(addr string) (uint64, int, error) {
	s, err := dialSession([]string{addr}, 0)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	if err := s.WaitSession(20 * time.Second); err != nil {
		return 0, 0, err
	}
	var lines []string
	level := []string{"/"}
	for len(level) > 0 {
		var mu sync.Mutex
		var next []string
		var firstErr error
		sem := make(chan struct{}, 32)
		var wg sync.WaitGroup
		for _, p := range level {
			wg.Add(1)
			sem <- struct{}{}
			go func(p string) {
				defer wg.Done()
				defer func() { <-sem }()
				type nd struct {
					data []byte
					st   *zk.Stat
					kids []string
				}
				n, err := retry(10*time.Second, func() (nd, error) {
					d, st, err := s.Conn.Get(p)
					if err != nil {
						return nd{}, err
					}
					kids, _, err := s.Conn.Children(p)
					return nd{d, st, kids}, err
				})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %v", p, err)
					}
					return
				}
				lines = append(lines, fmt.Sprintf("%s\x00%x\x00%d/%d/%d/%x/%x/%x", p, n.data, n.st.Version, n.st.Cversion,
					n.st.Aversion, n.st.EphemeralOwner, n.st.Czxid, n.st.Mzxid))
				for _, k := range n.kids {
					child := p + "/" + k
					if p == "/" {
						child = "/" + k
					}
					if child != "/zookeeper" {
						next = append(next, child)
					}
				}
			}(p)
		}
		wg.Wait()
		if firstErr != nil {
			return 0, 0, firstErr
		}
		level = next
	}
	sort.Strings(lines)
	h := fnv.New64a()
	for _, l := range lines {
		fmt.Fprintln(h, l)
	}
	return h.Sum64(), len(lines), nil
}
