package main

// Replies in request order (issue 43, item 3): ZooKeeper answers each session's requests in the
// order it sent them, whatever their kind, and a client that gets a reply out of order drops its
// connection (kazoo: "xids do not match"; the Java client: "Xid out of order"). go-zookeeper
// matches replies to requests by xid and would not notice, so this workload speaks jute itself
// (rawzk.go). Three sessions, each first on another member, send bursts of 8-48 requests without
// waiting: creates (plain and sequential), deletes, setData of 0-64 KB, getData, exists and
// getChildren with and without a watch, getChildren2, sync, and multi (check + setData) and
// multiRead, on a few znodes of their own. The checker: every reply carries the xid of the oldest
// request still unanswered on its connection (watch events and ping replies aside); a
// connection lost while no fault was in force (from a fault's start to 12 s, two session
// timeouts, after its heal) is a problem; after the final heal one burst on every member comes
// back whole and in order. A lost connection re-attaches the session on the next member.

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"
)

const (
	orderPath     = root + "/order"
	orderSessions = 3
	orderNodes    = 6
	// orderGrace: a connection lost this long after a heal still counts as the fault's doing
	// (a restarted member catching up, a partitioned one joining again).
	orderGrace = 2 * sessionTimeout
	// orderWait bounds the wait for one burst's replies; a burst held longer (a partition that
	// keeps a member without a quorum) is given up like a lost connection.
	orderWait = 30 * time.Second

	opDelete       = 2
	opExists       = 3
	opGetData      = 4
	opGetChildren  = 8
	opSync         = 9
	opGetChildren2 = 12
	opCheck        = 13
	opMulti        = 14
	opMultiRead    = 22
)

// A lost connection, when it happened (history clock) and what was lost.
type orderLoss struct {
	at   int64
	what string
}

type orderWL struct {
	counts
	problems
	mu     sync.Mutex
	losses []orderLoss
	bursts int64
	sent   int64
}

func (w *orderWL) Name() string { return "reply-order" }

func (w *orderWL) dir(s int) string { return fmt.Sprintf("%s/s%d", orderPath, s) }

func (w *orderWL) Setup(env *Env) error {
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	for i := 0; i < orderSessions; i++ {
		if err := ensure(s.Conn, w.dir(i), nil); err != nil {
			return err
		}
	}
	return nil
}

// orderSession is one raw session and the member it is on.
type orderSession struct {
	c      *rawConn
	member int
	sid    int64
	passwd []byte
}

// connect (re-)attaches the session on member m, or opens a new one if it has expired.
func (s *orderSession) connect(env *Env, m int) error {
	s.member = m % len(env.Addrs)
	c, err := rawDial(env.Addrs[s.member], s.sid, s.passwd, 0, 3*time.Second)
	if err != nil {
		return err
	}
	if c.Timeout == 0 {
		c.Close()
		// Expired (a partition longer than the timeout): the sessions workload judges that.
		if c, err = rawDial(env.Addrs[s.member], 0, nil, 0, 3*time.Second); err != nil {
			return err
		}
	}
	s.c, s.sid, s.passwd = c, c.Session, c.Password
	return nil
}

func (w *orderWL) Run(ctx context.Context, env *Env) {
	var wg sync.WaitGroup
	for i := 0; i < orderSessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w.session(ctx, env, i)
		}(i)
	}
	wg.Wait()
}

func (w *orderWL) session(ctx context.Context, env *Env, i int) {
	r := env.rng(int64(900 + i))
	s := &orderSession{}
	next := i
	defer func() {
		if s.c != nil {
			s.c.Close()
		}
	}()
	for ctx.Err() == nil {
		if s.c == nil {
			if err := s.connect(env, next); err != nil {
				next++
				pace(ctx, r, 200*time.Millisecond, 500*time.Millisecond)
				continue
			}
		}
		if lost := w.burst(env, r, s.c, w.dir(i)); lost != "" {
			w.lost(env, fmt.Sprintf("session 0x%x on m%d: %s", s.sid, s.member+1, lost))
			s.c.Close()
			s.c = nil
			next = s.member + 1
		}
		pace(ctx, r, 20*time.Millisecond, 120*time.Millisecond)
	}
}

func (w *orderWL) lost(env *Env, what string) {
	w.mu.Lock()
	w.losses = append(w.losses, orderLoss{at: env.now(), what: what})
	w.mu.Unlock()
}

// burst sends 8-48 requests without waiting, then reads their replies. A reply out of order is
// a problem; a lost connection is returned for the caller to judge.
func (w *orderWL) burst(env *Env, r *rand.Rand, c *rawConn, dir string) string {
	n := 8 + r.Intn(41)
	type sent struct {
		xid  int32
		kind string
	}
	var want []sent
	for k := 0; k < n; k++ {
		op, body, kind := orderRequest(r, dir)
		xid, err := c.send(op, body)
		w.ops.Add(1)
		if err != nil {
			w.unknown.Add(int64(len(want)) + 1)
			return fmt.Sprintf("send of request %d of %d failed: %v", k+1, n, err)
		}
		want = append(want, sent{xid, kind})
	}
	w.mu.Lock()
	w.bursts++
	w.sent += int64(n)
	w.mu.Unlock()
	deadline := time.Now().Add(orderWait)
	for k, s := range want {
		var rep rawReply
		var err error
		for {
			rep, err = c.read(deadline)
			if err != nil || rep.Xid != xidPing {
				break
			}
		}
		if err != nil {
			w.unknown.Add(int64(len(want) - k))
			return fmt.Sprintf("no reply to %d of %d requests: %v", len(want)-k, n, err)
		}
		if rep.Xid != s.xid {
			w.problems.add("session 0x%x: reply with xid %d where xid %d (%s) was the oldest unanswered, %d requests in flight",
				c.Session, rep.Xid, s.xid, s.kind, len(want)-k)
			w.unknown.Add(int64(len(want) - k))
			return "a reply out of order (the connection is given up)"
		}
		if rep.Err == 0 {
			w.ok.Add(1)
		} else {
			w.fail.Add(1)
		}
	}
	return ""
}

// orderRequest picks one request of a random kind on the session's own znodes.
func orderRequest(r *rand.Rand, dir string) (int32, []byte, string) {
	node := fmt.Sprintf("%s/n%d", dir, r.Intn(orderNodes))
	watch := byte(r.Intn(2))
	switch r.Intn(12) {
	case 0, 1:
		flags := int32(0)
		if r.Intn(3) == 0 {
			flags = 2 // sequential
		}
		return opCreate, createReq(node, orderData(r), flags), "create"
	case 2:
		return opDelete, be32(buffer(nil, []byte(node)), -1), "delete"
	case 3, 4:
		return opSetData, setDataReq(node, orderData(r), -1), "setData"
	case 5:
		return opGetData, append(buffer(nil, []byte(node)), watch), "getData"
	case 6:
		return opExists, append(buffer(nil, []byte(node)), watch), "exists"
	case 7:
		return opGetChildren, append(buffer(nil, []byte(dir)), watch), "getChildren"
	case 8:
		return opGetChildren2, append(buffer(nil, []byte(dir)), watch), "getChildren2"
	case 9:
		return opSync, buffer(nil, []byte(dir)), "sync"
	case 10:
		// multi: check(dir, any version fails unless 0) + setData(node): often refused whole.
		var b []byte
		b = multiHeader(b, opCheck)
		b = be32(buffer(b, []byte(dir)), int32(r.Intn(2)))
		b = multiHeader(b, opSetData)
		b = append(b, setDataReq(node, orderData(r), -1)...)
		b = append(be32(b, -1), 1)
		return opMulti, be32(b, -1), "multi"
	default:
		var b []byte
		b = multiHeader(b, opGetData)
		b = append(buffer(b, []byte(node)), 0)
		b = multiHeader(b, opGetChildren)
		b = append(buffer(b, []byte(dir)), 0)
		b = append(be32(b, -1), 1)
		return opMultiRead, be32(b, -1), "multiRead"
	}
}

// multiHeader: MultiHeader{type, done false, err -1}.
func multiHeader(b []byte, op int32) []byte { return be32(append(be32(b, op), 0), -1) }

// orderData is 0-64 KB, mostly small.
func orderData(r *rand.Rand) []byte {
	n := r.Intn(256)
	if r.Intn(8) == 0 {
		n = r.Intn(64 << 10)
	}
	return make([]byte, n)
}

func (w *orderWL) Final(env *Env) {
	// Every lost connection must fall inside a fault's window.
	faults, heals := env.Events.FaultTimes(), env.Events.HealTimes()
	inFault := func(t int64) bool {
		for i, f := range faults {
			end := int64(1 << 62)
			if i < len(heals) {
				end = heals[i] + orderGrace.Nanoseconds()
			}
			if t >= f && t <= end {
				return true
			}
		}
		return false
	}
	w.mu.Lock()
	losses := append([]orderLoss(nil), w.losses...)
	w.mu.Unlock()
	for _, l := range losses {
		if !inFault(l.at) {
			w.problems.add("connection lost at %.1fs with no fault in force: %s", float64(l.at)/1e9, l.what)
		}
	}
	// After the final heal every member answers a burst whole and in order.
	r := env.rng(999)
	for m := range env.Addrs {
		s := &orderSession{}
		var err error
		for try := 0; try < 10; try++ {
			if err = s.connect(env, m); err == nil {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			w.problems.add("m%d: no session after the final heal: %v", m+1, err)
			continue
		}
		if lost := w.burst(env, r, s.c, w.dir(m%orderSessions)); lost != "" {
			w.problems.add("m%d after the final heal: %s", m+1, lost)
		}
		s.c.Close()
	}
}

func (w *orderWL) Close() {}

func (w *orderWL) Result() Cell {
	c := w.counts.cell(w.Name())
	w.mu.Lock()
	verdict := fmt.Sprintf("ok: %d bursts, %d requests pipelined, every reply in order; %d connections lost, each during a fault",
		w.bursts, w.sent, len(w.losses))
	w.mu.Unlock()
	w.problems.fill(&c, verdict)
	return c
}
