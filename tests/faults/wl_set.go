package main

// The set, the unique ids and the counter: checked by one read (or listing) after the heal.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	setPath     = root + "/set"
	idsPath     = root + "/ids"
	counterPath = root + "/counter"
	counterN    = 3
)

// ---------------------------------------------------------------- set

type setWL struct {
	counts
	mu        sync.Mutex
	acked     map[int64]bool
	failed    map[int64]bool
	attempted map[int64]bool
	workers   []*worker
	final     []int64
	finalErr  error
}

func (w *setWL) Name() string { return "set" }

func (w *setWL) Setup(env *Env) error {
	w.acked, w.failed, w.attempted = map[int64]bool{}, map[int64]bool{}, map[int64]bool{}
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	return ensure(s.Conn, setPath, nil)
}

func parseSet(data []byte) []int64 {
	var out []int64
	for _, f := range strings.Split(string(data), ",") {
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err == nil {
			out = append(out, v)
		}
	}
	return out
}

// add puts x into the set with read + versioned setData, retrying on BadVersion.
func (w *setWL) add(c *zk.Conn, wk *worker, x int64) (Outcome, error) {
	type got struct {
		data []byte
		ver  int32
	}
	var last error
	for attempt := 0; attempt < 8; attempt++ {
		g, err := call(func() (got, error) {
			d, st, err := c.Get(setPath)
			if err != nil {
				return got{}, err
			}
			return got{d, st.Version}, nil
		})
		if err != nil {
			wk.after(err)
			if err == errTimeout {
				return Fail, err // nothing of this add was written: every setData so far was refused
			}
			last = err
			time.Sleep(50 * time.Millisecond)
			continue
		}
		next := string(g.data)
		if next != "" {
			next += ","
		}
		next += strconv.FormatInt(x, 10)
		_, err = call(func() (*zk.Stat, error) { return c.Set(setPath, []byte(next), g.ver) })
		switch classify(err) {
		case OK:
			return OK, nil
		case Unknown:
			wk.after(err)
			return Unknown, err
		}
		last = err
		// BadVersion: someone else got in first; read again.
	}
	return Fail, last
}

func (w *setWL) Run(ctx context.Context, env *Env) {
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wk := newWorker(env, i+1)
		w.workers = append(w.workers, wk)
		wg.Add(1)
		go func(id int, wk *worker) {
			defer wg.Done()
			r := env.rng(200 + int64(id))
			for n := int64(0); pace(ctx, r, 10*time.Millisecond, 40*time.Millisecond); n++ {
				c, err := wk.conn()
				if err != nil {
					continue
				}
				x := int64(id)*10_000_000 + n
				w.mu.Lock()
				w.attempted[x] = true
				w.mu.Unlock()
				o, err := w.add(c, wk, x)
				w.noteAs(o, err)
				w.mu.Lock()
				switch o {
				case OK:
					w.acked[x] = true
				case Fail:
					w.failed[x] = true
				}
				w.mu.Unlock()
			}
		}(i, wk)
	}
	wg.Wait()
}

func (w *setWL) Final(env *Env) {
	s, err := finalSession(env)
	if err != nil {
		w.finalErr = err
		return
	}
	defer s.Close()
	data, err := retry(30*time.Second, func() ([]byte, error) {
		if _, err := s.Conn.Sync(setPath); err != nil {
			return nil, err
		}
		d, _, err := s.Conn.Get(setPath)
		return d, err
	})
	w.final, w.finalErr = parseSet(data), err
}

func (w *setWL) Close() {
	for _, wk := range w.workers {
		wk.close()
	}
}

func (w *setWL) Result() Cell {
	c := w.cell(w.Name())
	if w.finalErr != nil {
		c.Verdict = "final read failed: " + w.finalErr.Error()
		return c
	}
	var p problems
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[int64]int{}
	for _, x := range w.final {
		seen[x]++
	}
	lost := 0
	for x := range w.acked {
		if seen[x] == 0 {
			lost++
			p.add("acknowledged add %d missing from the final read", x)
		}
	}
	for x, n := range seen {
		switch {
		case n > 1:
			p.add("%d present %d times", x, n)
		case !w.attempted[x]:
			p.add("%d present but never added", x)
		case w.failed[x]:
			p.add("%d present although every setData of its add was refused", x)
		}
	}
	p.fill(&c, fmt.Sprintf("ok: %d acknowledged adds all present (%d elements)", len(w.acked), len(w.final)))
	if lost > 0 {
		c.Verdict = fmt.Sprintf("%d acknowledged adds lost", lost)
	}
	return c
}

// ---------------------------------------------------------------- unique ids

type idsWL struct {
	counts
	mu       sync.Mutex
	acked    map[string]string // name -> the data its create wrote
	dup      []string
	workers  []*worker
	children map[string]bool
	data     map[string]string
	finalErr error
}

func (w *idsWL) Name() string { return "unique-ids" }

func (w *idsWL) Setup(env *Env) error {
	w.acked = map[string]string{}
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	return ensure(s.Conn, idsPath, nil)
}

func (w *idsWL) Run(ctx context.Context, env *Env) {
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wk := newWorker(env, i+2)
		w.workers = append(w.workers, wk)
		wg.Add(1)
		go func(id int, wk *worker) {
			defer wg.Done()
			r := env.rng(300 + int64(id))
			for n := 0; pace(ctx, r, 10*time.Millisecond, 30*time.Millisecond); n++ {
				c, err := wk.conn()
				if err != nil {
					continue
				}
				data := fmt.Sprintf("%d-%d", id, n)
				path, err := call(func() (string, error) {
					return c.Create(idsPath+"/id-", []byte(data), zk.FlagSequence, zk.WorldACL(zk.PermAll))
				})
				o := w.note(err)
				wk.after(err)
				if o == OK {
					name := path[strings.LastIndex(path, "/")+1:]
					w.mu.Lock()
					if prev, ok := w.acked[name]; ok {
						w.dup = append(w.dup, fmt.Sprintf("%s handed out twice (%s and %s)", name, prev, data))
					}
					w.acked[name] = data
					w.mu.Unlock()
				}
			}
		}(i, wk)
	}
	wg.Wait()
}

func (w *idsWL) Final(env *Env) {
	s, err := finalSession(env)
	if err != nil {
		w.finalErr = err
		return
	}
	defer s.Close()
	ch, err := syncedChildren(s.Conn, idsPath)
	if err != nil {
		w.finalErr = err
		return
	}
	w.children = map[string]bool{}
	for _, c := range ch {
		w.children[c] = true
	}
	w.data = map[string]string{}
	w.mu.Lock()
	names := make([]string, 0, len(w.acked))
	for n := range w.acked {
		if w.children[n] {
			names = append(names, n)
		}
	}
	w.mu.Unlock()
	w.data, w.finalErr = readAll(s.Conn, idsPath, names)
}

// readAll reads many znodes' data, a few requests at a time.
func readAll(c *zk.Conn, parent string, names []string) (map[string]string, error) {
	out := map[string]string{}
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func(n string) {
			defer wg.Done()
			defer func() { <-sem }()
			d, err := retry(20*time.Second, func() ([]byte, error) { d, _, err := c.Get(parent + "/" + n); return d, err })
			mu.Lock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("get %s: %v", n, err)
			}
			out[n] = string(d)
			mu.Unlock()
		}(n)
	}
	wg.Wait()
	return out, firstErr
}

func (w *idsWL) Close() {
	for _, wk := range w.workers {
		wk.close()
	}
}

func (w *idsWL) Result() Cell {
	c := w.cell(w.Name())
	if w.finalErr != nil {
		c.Verdict = "final read failed: " + w.finalErr.Error()
		return c
	}
	var p problems
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.dup {
		p.add("%s", d)
	}
	for name, data := range w.acked {
		switch {
		case !w.children[name]:
			p.add("acknowledged %s missing (a gap)", name)
		case w.data[name] != data:
			p.add("%s holds %q, its acknowledged create wrote %q", name, w.data[name], data)
		}
	}
	if int64(len(w.children)) > c.OK+c.Unknown {
		p.add("%d children, but only %d creates could have succeeded", len(w.children), c.OK+c.Unknown)
	}
	p.fill(&c, fmt.Sprintf("ok: %d ids unique and present (%d children)", len(w.acked), len(w.children)))
	return c
}

// ---------------------------------------------------------------- counter

type counterWL struct {
	counts
	mu       sync.Mutex
	names    []string
	workers  []*worker
	children map[string]bool
	finalErr error
}

func (w *counterWL) Name() string { return "counter" }

func (w *counterWL) Setup(env *Env) error {
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	return ensure(s.Conn, counterPath, nil)
}

func (w *counterWL) Run(ctx context.Context, env *Env) {
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wk := newWorker(env, i)
		w.workers = append(w.workers, wk)
		wg.Add(1)
		go func(id int, wk *worker) {
			defer wg.Done()
			r := env.rng(400 + int64(id))
			for pace(ctx, r, 10*time.Millisecond, 40*time.Millisecond) {
				c, err := wk.conn()
				if err != nil {
					continue
				}
				ops := make([]interface{}, counterN)
				for k := range ops {
					ops[k] = &zk.CreateRequest{Path: counterPath + "/c-", Data: nil, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagSequence}
				}
				res, err := call(func() ([]zk.MultiResponse, error) { return c.Multi(ops...) })
				o := w.note(err)
				wk.after(err)
				if o == OK {
					w.mu.Lock()
					for _, r := range res {
						w.names = append(w.names, r.String[strings.LastIndex(r.String, "/")+1:])
					}
					w.mu.Unlock()
				}
			}
		}(i, wk)
	}
	wg.Wait()
}

func (w *counterWL) Final(env *Env) {
	s, err := finalSession(env)
	if err != nil {
		w.finalErr = err
		return
	}
	defer s.Close()
	ch, err := syncedChildren(s.Conn, counterPath)
	w.children, w.finalErr = map[string]bool{}, err
	for _, c := range ch {
		w.children[c] = true
	}
}

func (w *counterWL) Close() {
	for _, wk := range w.workers {
		wk.close()
	}
}

func (w *counterWL) Result() Cell {
	c := w.cell(w.Name())
	if w.finalErr != nil {
		c.Verdict = "final read failed: " + w.finalErr.Error()
		return c
	}
	var p problems
	count := int64(len(w.children))
	lo, hi := c.OK*counterN, (c.OK+c.Unknown)*counterN
	if count < lo || count > hi {
		p.add("count %d outside [%d, %d]", count, lo, hi)
	}
	if count%counterN != 0 {
		p.add("count %d is not a multiple of %d: a multi was applied in part", count, counterN)
	}
	w.mu.Lock()
	for _, n := range w.names {
		if !w.children[n] {
			p.add("acknowledged %s missing", n)
		}
	}
	w.mu.Unlock()
	p.fill(&c, fmt.Sprintf("ok: count %d in [%d, %d]", count, lo, hi))
	return c
}
