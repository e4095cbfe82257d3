package main

// Clients: go-zookeeper sessions in the root namespace. Each session's host list is rotated
// deterministically from a chosen first member (no random shuffle), every call has a deadline,
// and errors are sorted into definite failures and unknown outcomes.

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	sessionTimeout = 6 * time.Second
	opTimeout      = 8 * time.Second
)

// rotatingHosts hands out the servers in order from a fixed first one.
type rotatingHosts struct {
	mu      sync.Mutex
	servers []string
	next    int
	tried   int
}

func (h *rotatingHosts) Init(servers []string) error { return nil }
func (h *rotatingHosts) Len() int                    { return len(h.servers) }
func (h *rotatingHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[h.next%len(h.servers)]
	h.next++
	h.tried++
	retry := h.tried > len(h.servers)
	if retry {
		h.tried = 1
	}
	return s, retry
}
func (h *rotatingHosts) Connected() {
	h.mu.Lock()
	h.tried = 0
	h.mu.Unlock()
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...interface{}) {}

// Session is one client session with what the workloads need to know about its life.
type Session struct {
	Conn *zk.Conn
	// Connects counts StateHasSession events: a change means the session reconnected.
	connects atomic.Int64
	expired  atomic.Int64
	frozen   atomic.Bool
	// lostAt is when the session last lost its connection (unix ns; 0 while it never did);
	// expiredAfter is how long it had been without one when it was told it expired.
	lostAt       atomic.Int64
	expiredAfter atomic.Int64
	withSession  atomic.Bool
	// lastID is the id of the session it last had; expiredID the one it was last told expired.
	lastID    atomic.Int64
	expiredID atomic.Int64
	connMu    sync.Mutex
	netConn   net.Conn
}

// dialSession opens a session whose host list starts at member `first` (0-based).
func dialSession(addrs []string, first int) (*Session, error) {
	s := &Session{}
	hosts := make([]string, len(addrs))
	for i := range addrs {
		hosts[i] = addrs[(first+i)%len(addrs)]
	}
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		if s.frozen.Load() {
			return nil, errors.New("frozen by the harness")
		}
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		s.connMu.Lock()
		s.netConn = c
		s.connMu.Unlock()
		return &boundedConn{Conn: c, max: sessionTimeout * 2 / 3}, nil
	}
	conn, _, err := zk.Connect(hosts, sessionTimeout,
		zk.WithHostProvider(&rotatingHosts{servers: hosts}),
		zk.WithLogger(quietLogger{}),
		zk.WithLogInfo(false),
		zk.WithDialer(dialer),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			if opLog != nil && s.Conn != nil && ev.State != zk.StateConnecting {
				opLog("session 0x%x (first host %d): %v %s", s.Conn.SessionID(), first, ev.State, ev.Server)
			}
			switch ev.State {
			case zk.StateHasSession:
				s.connects.Add(1)
				s.withSession.Store(true)
				if s.Conn != nil {
					s.lastID.Store(s.Conn.SessionID())
				}
			case zk.StateDisconnected:
				// go-zk says Disconnected after every failed attempt too (a member that
				// accepts the connection and does not answer the handshake): the session
				// lost its connection at the first one after it last had it.
				if s.withSession.Swap(false) {
					s.lostAt.Store(time.Now().UnixNano())
				}
			case zk.StateExpired:
				if at := s.lostAt.Load(); at != 0 {
					s.expiredAfter.Store(time.Now().UnixNano() - at)
				}
				// go-zk has cleared the id by now and opens a new session next.
				s.expiredID.Store(s.lastID.Load())
				s.expired.Add(1)
			}
		}))
	if err != nil {
		return nil, err
	}
	s.Conn = conn
	return s, nil
}

// WaitSession waits until the session is established.
func (s *Session) WaitSession(d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if s.Conn.State() == zk.StateHasSession {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no session within %v", d)
}

// Freeze cuts the session off from every server without closing it: the connection is
// dropped and no new one can be made, so the session stops pinging and must expire.
func (s *Session) Freeze() {
	s.frozen.Store(true)
	s.connMu.Lock()
	if s.netConn != nil {
		_ = s.netConn.Close()
	}
	s.connMu.Unlock()
}

// Close ends the session (in the background: a frozen session cannot send closeSession and
// go-zookeeper then waits a while before it gives up).
func (s *Session) Close() {
	go s.Conn.Close()
}

// boundedConn caps every read and write deadline go-zookeeper sets at `max` from now.
// go-zookeeper waits 10 × its read timeout (40 s here) for a handshake's answer: a member that
// accepts the TCP connection but does not answer (SIGSTOPped: the kernel still completes the
// handshake) holds such a client far beyond its session timeout, and its session expires while
// other members serve. The Java client gives a handshake at most its read timeout (2/3 of the
// session timeout), which this restores.
type boundedConn struct {
	net.Conn
	max time.Duration
}

func (c *boundedConn) clamp(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	if limit := time.Now().Add(c.max); t.After(limit) {
		return limit
	}
	return t
}

func (c *boundedConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *boundedConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *boundedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }

var errTimeout = errors.New("harness: no reply within the op timeout")

// call runs f with a deadline. After a timeout f's goroutine is abandoned (its reply, if it
// ever comes, is ignored) and the caller should drop the session.
func call[T any](f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(opTimeout):
		var zero T
		return zero, errTimeout
	}
}

// Outcome of a write: ok, a definite failure (the server said no), or unknown.
type Outcome int

const (
	OK Outcome = iota
	Fail
	Unknown
)

// classify sorts a write's error. Only an answer from the server that the change was refused
// is a definite failure; a lost connection, an expired session or a timeout leaves the outcome
// unknown (it may have been applied).
func classify(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode),
		errors.Is(err, zk.ErrNotEmpty), errors.Is(err, zk.ErrBadArguments):
		return Fail
	default:
		return Unknown
	}
}
