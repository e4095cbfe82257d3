package main

// The CAS register: one znode, whose state is (value, version). Reads are sync + getData,
// writes setData with version -1, CAS setData with the version last read. porcupine checks the
// history for linearizability; a write whose outcome is unknown (no reply) may have taken
// effect at any point after its call, or never, which the nondeterministic model allows.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

const registerPath = root + "/register"

type regInput struct {
	Kind byte // 'r' read, 'w' write, 'c' compare-and-set
	Val  int64
	Exp  int32
}

type regOutput struct {
	Res Outcome
	Val int64
	Ver int32
}

type regState struct {
	Val int64
	Ver int32
}

var registerModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{regState{0, 0}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(regState), input.(regInput), output.(regOutput)
		switch in.Kind {
		case 'r':
			if out.Val == s.Val && out.Ver == s.Ver {
				return []interface{}{s}
			}
			return nil
		case 'w':
			next := regState{in.Val, s.Ver + 1}
			switch out.Res {
			case OK:
				if out.Ver == next.Ver {
					return []interface{}{next}
				}
				return nil
			default:
				return []interface{}{next, s}
			}
		default:
			next := regState{in.Val, in.Exp + 1}
			switch out.Res {
			case OK:
				if s.Ver == in.Exp && out.Ver == in.Exp+1 {
					return []interface{}{next}
				}
				return nil
			case Fail:
				if s.Ver != in.Exp {
					return []interface{}{s}
				}
				return nil
			default:
				if s.Ver == in.Exp {
					return []interface{}{next, s}
				}
				return []interface{}{s}
			}
		}
	},
	Equal: func(a, b interface{}) bool { return a.(regState) == b.(regState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(regInput), output.(regOutput)
		res := map[Outcome]string{OK: "ok", Fail: "fail", Unknown: "unknown"}[out.Res]
		switch in.Kind {
		case 'r':
			return fmt.Sprintf("read() -> %d@v%d", out.Val, out.Ver)
		case 'w':
			return fmt.Sprintf("write(%d) -> %s v%d", in.Val, res, out.Ver)
		}
		return fmt.Sprintf("cas(v%d, %d) -> %s v%d", in.Exp, in.Val, res, out.Ver)
	},
	DescribeState: func(state interface{}) string {
		s := state.(regState)
		return fmt.Sprintf("%d@v%d", s.Val, s.Ver)
	},
}

type registerWL struct {
	counts
	mu      sync.Mutex
	history []porcupine.Operation
	next    atomic.Int64
	workers []*worker
	work    string
}

func (w *registerWL) Name() string { return "register" }

func (w *registerWL) Setup(env *Env) error {
	w.work = env.Work
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := ensure(s.Conn, registerPath, []byte("0")); err != nil {
		return err
	}
	// The model starts at 0@v0: the znode must be fresh.
	_, st, err := s.Conn.Get(registerPath)
	if err != nil || st.Version != 0 {
		return fmt.Errorf("register znode not fresh: %v %v", st, err)
	}
	return nil
}

func (w *registerWL) record(client int, in regInput, call int64, out regOutput, ret int64) {
	w.mu.Lock()
	w.history = append(w.history, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	w.mu.Unlock()
}

func (w *registerWL) Run(ctx context.Context, env *Env) {
	clients := 3
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wk := newWorker(env, i)
		w.workers = append(w.workers, wk)
		wg.Add(1)
		go func(id int, wk *worker) {
			defer wg.Done()
			r := env.rng(100 + int64(id))
			lastVer := int32(0)
			for pace(ctx, r, 5*time.Millisecond, 25*time.Millisecond) {
				c, err := wk.conn()
				if err != nil {
					continue
				}
				p := r.Intn(100)
				switch {
				case p < 50:
					t0 := env.now()
					_, err := call(func() (string, error) { return c.Sync(registerPath) })
					if err != nil {
						w.noteAs(Fail, err)
						wk.after(err)
						continue
					}
					type got struct {
						data []byte
						st   *zk.Stat
					}
					g, err := call(func() (got, error) { d, st, err := c.Get(registerPath); return got{d, st}, err })
					t1 := env.now()
					if err != nil {
						w.noteAs(Fail, err)
						wk.after(err)
						continue
					}
					v, _ := strconv.ParseInt(string(g.data), 10, 64)
					lastVer = g.st.Version
					w.add(OK)
					w.record(id, regInput{Kind: 'r'}, t0, regOutput{Res: OK, Val: v, Ver: g.st.Version}, t1)
				default:
					val := w.next.Add(1)
					in := regInput{Kind: 'w', Val: val, Exp: -1}
					if p >= 75 {
						in.Kind, in.Exp = 'c', lastVer+int32(r.Intn(3))-1
						if r.Intn(2) == 0 || in.Exp < 0 {
							// Version -1 would make it an unconditional write.
							in.Exp = lastVer
						}
					}
					t0 := env.now()
					st, err := call(func() (*zk.Stat, error) {
						return c.Set(registerPath, []byte(strconv.FormatInt(val, 10)), in.Exp)
					})
					t1 := env.now()
					o := w.note(err)
					wk.after(err)
					switch o {
					case OK:
						lastVer = st.Version
						w.record(id, in, t0, regOutput{Res: OK, Val: val, Ver: st.Version}, t1)
					case Fail:
						if in.Kind == 'c' && err == zk.ErrBadVersion {
							w.record(id, in, t0, regOutput{Res: Fail}, t1)
						}
					default:
						// Unknown: it may take effect any time after its call.
						w.record(id, in, t0, regOutput{Res: Unknown}, math.MaxInt64/4)
					}
				}
			}
		}(i, wk)
	}
	wg.Wait()
}

func (w *registerWL) Final(env *Env) {}

func (w *registerWL) Close() {
	for _, wk := range w.workers {
		wk.close()
	}
}

func (w *registerWL) Result() Cell {
	c := w.cell(w.Name())
	w.mu.Lock()
	hist := append([]porcupine.Operation(nil), w.history...)
	w.mu.Unlock()
	timeout := 120 * time.Second
	if len(hist) == 0 {
		c.Verdict = "no operations completed"
		return c
	}
	model := registerModel.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, hist, timeout)
	switch res {
	case porcupine.Ok:
		c.Valid, c.Verdict = true, fmt.Sprintf("linearizable (%d ops checked)", len(hist))
	case porcupine.Illegal:
		c.Verdict = "NOT linearizable"
		if w.work != "" {
			c.Problems = append(c.Problems, staleReads(hist)...)
			if b, err := json.Marshal(hist); err == nil {
				path := filepath.Join(w.work, "register-history.json")
				if os.WriteFile(path, b, 0o644) == nil {
					c.Problems = append(c.Problems, "history: "+path)
				}
			}
		}
		if w.work != "" {
			path := filepath.Join(w.work, "register-porcupine.html")
			if err := porcupine.VisualizePath(model, info, path); err == nil {
				c.Problems = append(c.Problems, "porcupine's visualization: "+path)
			}
		}
	default:
		c.Verdict = fmt.Sprintf("checker gave up after %v (%d ops)", timeout, len(hist))
	}
	return c
}

// staleReads names reads that returned a version older than one acknowledged before the read
// began (the usual shape of a linearizability violation of a register), to say what porcupine
// found in words.
func staleReads(hist []porcupine.Operation) []string {
	var out []string
	for _, r := range hist {
		in, o := r.Input.(regInput), r.Output.(regOutput)
		if in.Kind != 'r' {
			continue
		}
		for _, w := range hist {
			wi, wo := w.Input.(regInput), w.Output.(regOutput)
			if wi.Kind == 'r' || wo.Res != OK || w.Return >= r.Call || wo.Ver <= o.Ver {
				continue
			}
			out = append(out, fmt.Sprintf("client %d read %d@v%d in [%.3fs, %.3fs], but client %d's write of %d@v%d was acknowledged at %.3fs",
				r.ClientId, o.Val, o.Ver, float64(r.Call)/1e9, float64(r.Return)/1e9, w.ClientId, wo.Val, wo.Ver, float64(w.Return)/1e9))
			break
		}
		if len(out) >= 5 {
			break
		}
	}
	return out
}
