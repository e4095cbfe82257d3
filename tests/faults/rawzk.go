package main

// A bare ZooKeeper client connection (jute over TCP, /work/shared/PROTOCOL.md), for what
// go-zookeeper cannot do: re-attach a session on a chosen member while its first connection is
// still open, and send a request there without waiting for it. One handshake, then requests and
// their replies, read by the caller; no watches, no automatic pings, no reconnect.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

const (
	opCreate       = 1
	opSetData      = 5
	opPing         = 11
	opCloseSession = -11
	xidPing        = -2
	xidWatchEvent  = -1
	errSessionMove = -118
)

type rawConn struct {
	conn     net.Conn
	xid      int32
	lastZxid int64
	// Session is what the handshake answered (Timeout 0: expired or unknown).
	Session  int64
	Password []byte
	Timeout  int32
}

// rawStat is the part of a Stat the checks use.
type rawStat struct {
	Czxid, Mzxid int64
	Version      int32
}

type rawReply struct {
	Xid  int32
	Zxid int64
	Err  int32
	Body []byte
}

// rawDial connects to addr and opens a session (sid 0) or re-attaches one (sid and its
// password), asking for the harness's session timeout.
func rawDial(addr string, sid int64, passwd []byte, lastZxid int64, d time.Duration) (*rawConn, error) {
	conn, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return nil, err
	}
	c := &rawConn{conn: conn, lastZxid: lastZxid}
	if len(passwd) == 0 {
		passwd = make([]byte, 16)
	}
	// ConnectRequest{protocolVersion, lastZxidSeen, timeOut, sessionId, passwd} + readOnly.
	var b []byte
	b = be32(b, 0)
	b = be64(b, lastZxid)
	b = be32(b, int32(sessionTimeout/time.Millisecond))
	b = be64(b, sid)
	b = buffer(b, passwd)
	b = append(b, 0)
	_ = conn.SetDeadline(time.Now().Add(d))
	if err := c.writeFrame(b); err != nil {
		conn.Close()
		return nil, err
	}
	resp, err := c.readFrame()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	// ConnectResponse{protocolVersion, timeOut, sessionId, passwd}(+ readOnly).
	if len(resp) < 20 {
		conn.Close()
		return nil, fmt.Errorf("handshake: %d-byte answer", len(resp))
	}
	c.Timeout = int32(binary.BigEndian.Uint32(resp[4:]))
	c.Session = int64(binary.BigEndian.Uint64(resp[8:]))
	n := int(int32(binary.BigEndian.Uint32(resp[16:])))
	if n > 0 && 20+n <= len(resp) {
		c.Password = append([]byte(nil), resp[20:20+n]...)
	}
	_ = conn.SetDeadline(time.Time{})
	return c, nil
}

// send writes one request and returns its xid.
func (c *rawConn) send(op int32, body []byte) (int32, error) {
	xid := int32(xidPing)
	if op != opPing {
		c.xid++
		xid = c.xid
	}
	b := be32(be32(nil, xid), op)
	_ = c.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	return xid, c.writeFrame(append(b, body...))
}

// read returns the next reply that is not a watch event, waiting until deadline.
func (c *rawConn) read(deadline time.Time) (rawReply, error) {
	_ = c.conn.SetReadDeadline(deadline)
	for {
		b, err := c.readFrame()
		if err != nil {
			return rawReply{}, err
		}
		if len(b) < 16 {
			return rawReply{}, fmt.Errorf("%d-byte reply", len(b))
		}
		r := rawReply{Xid: int32(binary.BigEndian.Uint32(b)), Zxid: int64(binary.BigEndian.Uint64(b[4:])),
			Err: int32(binary.BigEndian.Uint32(b[12:])), Body: b[16:]}
		if r.Zxid > c.lastZxid {
			c.lastZxid = r.Zxid
		}
		if r.Xid != xidWatchEvent {
			return r, nil
		}
	}
}

// call sends one request and reads replies until its own (pings' replies are skipped).
func (c *rawConn) call(op int32, body []byte, d time.Duration) (rawReply, error) {
	xid, err := c.send(op, body)
	if err != nil {
		return rawReply{}, err
	}
	deadline := time.Now().Add(d)
	for {
		r, err := c.read(deadline)
		if err != nil || r.Xid == xid {
			return r, err
		}
	}
}

func (c *rawConn) Close() { c.conn.Close() }

func (c *rawConn) writeFrame(b []byte) error {
	_, err := c.conn.Write(append(be32(nil, int32(len(b))), b...))
	return err
}

func (c *rawConn) readFrame() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.conn, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 1<<20 {
		return nil, errors.New("frame too long")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(c.conn, b)
	return b, err
}

// setDataReq: SetDataRequest{path, data, version}.
func setDataReq(path string, data []byte, version int32) []byte {
	return be32(buffer(buffer(nil, []byte(path)), data), version)
}

// createReq: CreateRequest{path, data, acl [world:anyone ALL], flags}.
func createReq(path string, data []byte, flags int32) []byte {
	b := buffer(buffer(nil, []byte(path)), data)
	b = be32(b, 1)
	b = be32(b, 31)
	b = buffer(b, []byte("world"))
	b = buffer(b, []byte("anyone"))
	return be32(b, flags)
}

// parseStat reads the Stat at the start of b (czxid, mzxid, ctime, mtime, version, ...).
func parseStat(b []byte) (rawStat, bool) {
	if len(b) < 68 {
		return rawStat{}, false
	}
	return rawStat{Czxid: int64(binary.BigEndian.Uint64(b)), Mzxid: int64(binary.BigEndian.Uint64(b[8:])),
		Version: int32(binary.BigEndian.Uint32(b[32:]))}, true
}

func be32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func be64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func buffer(b, v []byte) []byte     { return append(be32(b, int32(len(v))), v...) }
