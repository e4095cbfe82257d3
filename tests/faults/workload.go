package main

// Workloads: each runs its own clients on its own znode prefix under /jepsen while the nemesis
// works, then reads what it needs after the heal and judges its history. Several workloads run
// at once in one run, each giving its own cell of the result table.

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

const root = "/jepsen"

// Env is what a workload gets from the run.
type Env struct {
	Addrs  []string
	Seed   int64
	Start  time.Time
	Events *EventLog
	Short  bool
	Work   string // the run's directory (the register checker writes its visualization there)
}

// now is the history clock: nanoseconds since the run began (monotonic).
func (e *Env) now() int64 { return time.Since(e.Start).Nanoseconds() }

func (e *Env) rng(salt int64) *rand.Rand { return rand.New(rand.NewSource(e.Seed*7919 + salt)) }

// Cell is one workload's result in one run.
type Cell struct {
	Workload string   `json:"workload"`
	Ops      int64    `json:"ops"`
	OK       int64    `json:"ok"`
	Fail     int64    `json:"fail"`
	Unknown  int64    `json:"unknown"`
	Valid    bool     `json:"valid"`
	Verdict  string   `json:"verdict"`
	Problems []string `json:"problems,omitempty"`
	Errors   []string `json:"errors,omitempty"`
}

type Workload interface {
	Name() string
	Setup(env *Env) error
	Run(ctx context.Context, env *Env)
	// Final runs after the heal, with the workload's sessions still open.
	Final(env *Env)
	Close()
	Result() Cell
}

// counts are the op tallies every workload keeps, with the errors behind fail and unknown.
type counts struct {
	ops, ok, fail, unknown atomic.Int64
	errMu                  sync.Mutex
	errs                   map[string]int
}

// note counts one op that ended with err (nil: acknowledged) and returns its outcome.
func (c *counts) note(err error) Outcome {
	o := classify(err)
	c.noteAs(o, err)
	return o
}

// opLog, when set (--op-log), gets a line for every op that did not succeed.
var opLog func(format string, args ...interface{})

// noteAs counts one op with a known outcome and the error behind it, if any.
func (c *counts) noteAs(o Outcome, err error) {
	c.add(o)
	if err != nil && opLog != nil {
		opLog("%p outcome %d: %v", c, o, err)
	}
	if err != nil {
		c.errMu.Lock()
		if c.errs == nil {
			c.errs = map[string]int{}
		}
		c.errs[err.Error()]++
		c.errMu.Unlock()
	}
}

func (c *counts) add(o Outcome) {
	c.ops.Add(1)
	switch o {
	case OK:
		c.ok.Add(1)
	case Fail:
		c.fail.Add(1)
	default:
		c.unknown.Add(1)
	}
}

func (c *counts) cell(name string) Cell {
	cell := Cell{Workload: name, Ops: c.ops.Load(), OK: c.ok.Load(), Fail: c.fail.Load(), Unknown: c.unknown.Load()}
	c.errMu.Lock()
	defer c.errMu.Unlock()
	var keys []string
	for k := range c.errs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.errs[keys[i]] > c.errs[keys[j]] })
	for _, k := range keys {
		cell.Errors = append(cell.Errors, fmt.Sprintf("%d× %s", c.errs[k], strings.TrimPrefix(k, "zk: ")))
	}
	return cell
}

// problems collects checker findings (bounded, so a broken run does not print megabytes).
type problems struct {
	mu    sync.Mutex
	list  []string
	total int
}

func (p *problems) add(format string, args ...interface{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	if len(p.list) < 20 {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

func (p *problems) fill(c *Cell, okVerdict string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.Problems = append([]string(nil), p.list...)
	if p.total > len(p.list) {
		c.Problems = append(c.Problems, fmt.Sprintf("… %d more", p.total-len(p.list)))
	}
	if p.total == 0 {
		c.Valid, c.Verdict = true, okVerdict
	} else if c.Verdict == "" {
		c.Verdict = fmt.Sprintf("%d violation(s)", p.total)
	}
}

// worker holds one client session of a workload and replaces it after a timeout.
type worker struct {
	env   *Env
	first int
	s     *Session
}

func newWorker(env *Env, first int) *worker { return &worker{env: env, first: first} }

func (w *worker) conn() (*zk.Conn, error) {
	if w.s == nil {
		s, err := dialSession(w.env.Addrs, w.first)
		if err != nil {
			return nil, err
		}
		w.s = s
	}
	return w.s.Conn, nil
}

// drop abandons the session (after a timeout its replies can no longer be trusted to come).
func (w *worker) drop() {
	if w.s != nil {
		w.s.Close()
		w.s = nil
	}
}

func (w *worker) after(err error) {
	if err == errTimeout {
		w.drop()
	}
}

func (w *worker) close() { w.drop() }

// ensure creates path (and its parents) if missing, retrying for a while.
func ensure(c *zk.Conn, path string, data []byte) error {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	p := ""
	for i, part := range parts {
		p += "/" + part
		d := []byte(nil)
		if i == len(parts)-1 {
			d = data
		}
		var err error
		for try := 0; try < 50; try++ {
			_, err = call(func() (string, error) { return c.Create(p, d, 0, zk.WorldACL(zk.PermAll)) })
			if err == nil || err == zk.ErrNodeExists {
				err = nil
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("create %s: %v", p, err)
		}
	}
	return nil
}

// finalSession opens a session for the checks after the heal.
func finalSession(env *Env) (*Session, error) {
	s, err := dialSession(env.Addrs, 0)
	if err != nil {
		return nil, err
	}
	if err := s.WaitSession(30 * time.Second); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// retry runs f until it succeeds or d has passed.
func retry[T any](d time.Duration, f func() (T, error)) (T, error) {
	deadline := time.Now().Add(d)
	for {
		v, err := call(f)
		if err == nil || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// syncedChildren reads a znode's children after a sync.
func syncedChildren(c *zk.Conn, path string) ([]string, error) {
	return retry(30*time.Second, func() ([]string, error) {
		if _, err := c.Sync(path); err != nil {
			return nil, err
		}
		ch, _, err := c.Children(path)
		return ch, err
	})
}

func pace(ctx context.Context, r *rand.Rand, lo, hi time.Duration) bool {
	d := lo + time.Duration(r.Int63n(int64(hi-lo)+1))
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func sortedStrings(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func newWorkload(name string) (Workload, bool) {
	switch name {
	case "register":
		return &registerWL{}, true
	case "set":
		return &setWL{}, true
	case "unique-ids":
		return &idsWL{}, true
	case "counter":
		return &counterWL{}, true
	case "sessions":
		return &sessionsWL{}, true
	case "watches":
		return &watchesWL{}, true
	case "session-birth":
		return &birthsWL{}, true
	case "pipelined":
		return &pipelinedWL{}, true
	case "reply-order":
		return &orderWL{}, true
	}
	return nil, false
}

var workloadNames = []string{"register", "set", "unique-ids", "counter", "sessions", "watches", "session-birth", "pipelined", "reply-order"}

var workloadWhat = map[string]string{
	"register":      "CAS register on one znode: reads after sync, setData, setData with version; porcupine checks linearizability",
	"set":           "set on one znode, each add a versioned CAS; after the heal one read: every acknowledged add present, no failed add present",
	"unique-ids":    "sequential creates: no name handed out twice, every acknowledged name present with its own data",
	"counter":       "multi of 3 sequential creates; getChildren count between 3×acknowledged and 3×attempted, a multiple of 3, every acknowledged name present",
	"sessions":      "ephemerals of live sessions never vanish; ephemerals of sessions that stopped pinging vanish within timeout + election time",
	"watches":       "data watches: a reply showing a newer version never arrives before the watch event on a connected session; versions never go back; every watcher hears the last change",
	"session-birth": "new sessions all the time (the leader first, a follower first, a create in flight), kept idle: none told it expired while its client was back within the session timeout",
	"reply-order":   "3 raw jute sessions pipeline bursts of 8-48 mixed requests (create, delete, setData, getData/exists/getChildren with and without watches, sync, multi, multiRead): every reply in xid order, no connection lost outside a fault (its window: from the fault to 12 s after its heal), a burst on every member in order after the final heal",
	"pipelined":     "one session at a follower with up to 16 setData of 32 KB in flight: never told it expired, writes acknowledged again within 10 s of every heal, every key's final value intact and not older than its last acknowledged write",
}
