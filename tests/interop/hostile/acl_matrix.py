#!/usr/bin/env python3
"""ACL matrix: every opcode x every permission bit (and ALL, none) x the schemes world, auth,
digest, ip and super, each run by a session that has or lacks the bit. Prints one line per case:

    <identity> <mask> <op> -> <error code>[ multi=<sub-codes>][ watch=<fired?>]

Run against Debian's ZooKeeper and against zkr; run.sh diffs the two outputs.

It speaks the wire protocol itself (jute over a socket, Python's standard library only) so that
no client library filters or rewrites a request: what is printed is exactly what the server said.

    acl_matrix.py HOST:PORT SUPER_PASSWORD
"""
import socket
import struct
import sys

READ, WRITE, CREATE, DELETE, ADMIN = 1, 2, 4, 8, 16
MASKS = [0, READ, WRITE, CREATE, DELETE, ADMIN, 31]
ALICE = "alice:alice-secret"


# ------------------------------------------------------------------ jute
def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def boolean(v):
    return b"\x01" if v else b"\x00"


def string(s):
    if s is None:
        return i32(-1)
    b = s.encode()
    return i32(len(b)) + b


def buf(b):
    if b is None:
        return i32(-1)
    return i32(len(b)) + b


def acls(lst):
    out = i32(len(lst))
    for perms, scheme, ident in lst:
        out += i32(perms) + string(scheme) + string(ident)
    return out


def strings(lst):
    return i32(len(lst)) + b"".join(string(s) for s in lst)


OPEN = [(31, "world", "anyone")]


class Reader:
    def __init__(self, data):
        self.d, self.o = data, 0

    def i32(self):
        v = struct.unpack_from(">i", self.d, self.o)[0]
        self.o += 4
        return v

    def i64(self):
        v = struct.unpack_from(">q", self.d, self.o)[0]
        self.o += 8
        return v

    def boolean(self):
        v = self.d[self.o] != 0
        self.o += 1
        return v

    def buf(self):
        n = self.i32()
        if n < 0:
            return None
        v = self.d[self.o:self.o + n]
        self.o += n
        return v

    def string(self):
        b = self.buf()
        return None if b is None else b.decode()

    def stat(self):
        self.o += 8 * 3 + 8 + 4 * 3 + 8 + 4 * 2 + 8


# ------------------------------------------------------------------ session
class Session:
    def __init__(self, addr, auth=None):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=20)
        self.xid = 0
        req = i32(0) + i64(0) + i32(30000) + i64(0) + buf(b"\0" * 16) + boolean(False)
        self._send(req)
        self._frame()
        if auth is not None:
            self._send(i32(-4) + i32(100) + i32(0) + string("digest") + buf(auth.encode()))
            h = self._reply_to(-4)
            assert h[2] == 0, "auth failed"

    def _send(self, payload):
        self.s.sendall(i32(len(payload)) + payload)

    def _frame(self):
        n = struct.unpack(">i", self._exact(4))[0]
        return self._exact(n)

    def _exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise EOFError("server closed the connection")
            out += chunk
        return out

    def _reply_to(self, xid):
        """Reads frames until the reply to xid; returns (xid, zxid, err, body, events_seen)."""
        events = 0
        while True:
            f = self._frame()
            r = Reader(f)
            x, z, e = r.i32(), r.i64(), r.i32()
            if x == -1:
                events += 1
                continue
            if x == xid:
                return (x, z, e, f[16:], events)

    def call(self, op, body):
        self.xid += 1
        self._send(i32(self.xid) + i32(op) + body)
        return self._reply_to(self.xid)

    def pipeline(self, reqs):
        """Sends every (op, body) at once, then reads the replies; returns their error codes."""
        xids = []
        out = b""
        for op, body in reqs:
            self.xid += 1
            xids.append(self.xid)
            p = i32(self.xid) + i32(op) + body
            out += i32(len(p)) + p
        self.s.sendall(out)
        return [self._reply_to(x)[2] for x in xids]

    def close(self):
        try:
            self.call(-11, b"")
        except Exception:
            pass
        self.s.close()


# ------------------------------------------------------------------ requests
def create(path, acl=OPEN, flags=0, op=1, ttl=None):
    body = string(path) + buf(b"d") + acls(acl) + i32(flags)
    if ttl is not None:
        body += i64(ttl)
    return (op, body)


def multi(ops):
    """ops: [(type, body)]; same framing for multi (14) and multiRead (22)."""
    out = b""
    for t, body in ops:
        out += i32(t) + boolean(False) + i32(-1) + body
    return out + i32(-1) + boolean(True) + i32(-1)


def multi_codes(body):
    r = Reader(body)
    codes = []
    while True:
        t, done, err = r.i32(), r.boolean(), r.i32()
        if done:
            return codes
        if t == -1:
            codes.append(r.i32())
        elif t == 1:
            r.string()
            codes.append(0)
        elif t == 15:
            r.string()
            r.stat()
            codes.append(0)
        elif t == 5:
            r.stat()
            codes.append(0)
        elif t == 4:
            r.buf()
            r.stat()
            codes.append(0)
        elif t == 8:
            n = r.i32()
            for _ in range(n):
                r.string()
            codes.append(0)
        else:
            codes.append(0)


def p_watch(path, watch):
    return string(path) + boolean(watch)


# (name, builder(node) -> (op, body), kind) ; kind: "plain" | "multi" | "watch:<trigger>"
def ops():
    return [
        ("create", lambda n: create(n + "/new"), "plain"),
        ("create2", lambda n: create(n + "/new", op=15), "plain"),
        ("createContainer", lambda n: create(n + "/new", flags=4, op=19), "plain"),
        ("createTTL", lambda n: create(n + "/new", flags=5, op=21, ttl=60000), "plain"),
        ("create-ephemeral", lambda n: create(n + "/new", flags=1), "plain"),
        ("delete-child", lambda n: (2, string(n + "/c") + i32(-1)), "plain"),
        ("exists", lambda n: (3, p_watch(n, False)), "plain"),
        ("getData", lambda n: (4, p_watch(n, False)), "plain"),
        ("setData", lambda n: (5, string(n) + buf(b"x") + i32(-1)), "plain"),
        ("getACL", lambda n: (6, string(n)), "plain"),
        ("setACL", lambda n: (7, string(n) + acls(OPEN) + i32(-1)), "plain"),
        ("getChildren", lambda n: (8, p_watch(n, False)), "plain"),
        ("getChildren2", lambda n: (12, p_watch(n, False)), "plain"),
        ("sync", lambda n: (9, string(n)), "plain"),
        ("multi-check", lambda n: (14, multi([(13, string(n) + i32(-1))])), "multi"),
        ("multi-create", lambda n: (14, multi([(1, create(n + "/new")[1])])), "multi"),
        ("multi-setData", lambda n: (14, multi([(5, string(n) + buf(b"x") + i32(-1))])), "multi"),
        ("multi-delete", lambda n: (14, multi([(2, string(n + "/c") + i32(-1))])), "multi"),
        ("multiRead-getData", lambda n: (22, multi([(4, p_watch(n, False))])), "multi"),
        ("multiRead-getChildren", lambda n: (22, multi([(8, p_watch(n, False))])), "multi"),
        ("getAllChildrenNumber", lambda n: (104, string(n)), "plain"),
        ("getEphemerals", lambda n: (103, string(n)), "plain"),
        ("exists-watch", lambda n: (3, p_watch(n, True)), "watch:data"),
        ("getData-watch", lambda n: (4, p_watch(n, True)), "watch:data"),
        ("getChildren-watch", lambda n: (8, p_watch(n, True)), "watch:child"),
        ("getChildren2-watch", lambda n: (12, p_watch(n, True)), "watch:child"),
        ("addWatch-persistent", lambda n: (106, string(n) + i32(0)), "watch:data"),
        ("addWatch-recursive", lambda n: (106, string(n) + i32(1)), "watch:data"),
        ("setWatches-data", lambda n: (101, i64(0x7FFFFFFFFFFFFFFF >> 8) + strings([n]) + strings([]) + strings([])),
         "watch:data"),
        ("setWatches-child", lambda n: (101, i64(0x7FFFFFFFFFFFFFFF >> 8) + strings([]) + strings([]) + strings([n])),
         "watch:child"),
        ("checkWatches-after-getData-watch", lambda n: (17, string(n) + i32(3)), "after-watch"),
        ("removeWatches-after-getData-watch", lambda n: (18, string(n) + i32(3)), "after-watch"),
    ]


def main():
    addr, super_pw = sys.argv[1], sys.argv[2]
    import base64
    import hashlib

    alice_digest = "alice:" + base64.b64encode(hashlib.sha1(ALICE.encode()).digest()).decode()
    root = Session(addr, "super:" + super_pw)
    alice = Session(addr, ALICE)
    anon = Session(addr)
    superuser = Session(addr, "super:" + super_pw)
    # identity name -> (acl builder(mask), session that runs the op, session that sets the acl)
    identities = [
        ("world", lambda m: [(m, "world", "anyone")], anon, root),
        ("digest", lambda m: [(m, "digest", alice_digest)], alice, root),
        ("digest-other", lambda m: [(m, "digest", alice_digest)], anon, root),
        ("auth", lambda m: [(m, "auth", "")], alice, alice),
        ("ip", lambda m: [(m, "ip", "127.0.0.1")], anon, root),
        ("ip-other", lambda m: [(m, "ip", "10.0.0.0/8")], anon, root),
        ("super", lambda m: [(m, "digest", alice_digest)], superuser, root),
    ]
    assert root.call(*create("/m"))[2] in (0, -110)
    case = 0
    for ident, acl_of, session, setter in identities:
        for mask in MASKS:
            for name, build, kind in ops():
                case += 1
                if case % 40 == 0:
                    for s in (anon, alice, superuser, root):
                        s.call(9, string("/"))  # keeps every session alive
                base = "/m/c%d" % case
                node = base + "/n"
                codes = root.pipeline([create(base), create(node), create(node + "/c")])
                assert codes == [0, 0, 0], (base, codes)
                err = setter.call(7, string(node) + acls(acl_of(mask)) + i32(-1))[2]
                assert err == 0, ("setACL", ident, mask, err)
                if kind == "after-watch":
                    pre = session.call(4, p_watch(node, True))[2]
                op, body = build(node)
                _, _, err, rbody, _ = session.call(op, body)
                line = "%s %d %s -> %d" % (ident, mask, name, err)
                if kind == "after-watch":
                    line += " getData-watch=%d" % pre
                if kind == "multi":
                    line += " multi=%s" % (",".join(str(c) for c in multi_codes(rbody)) if err == 0 else "-")
                if kind.startswith("watch:"):
                    # Trigger the watch (as super), then a later request of the session: a
                    # notification, if the watch was registered, arrives before its reply.
                    if kind == "watch:data":
                        root.call(5, string(node) + buf(b"t") + i32(-1))
                    else:
                        root.call(*create(node + "/t"))
                    events = session.call(9, string("/"))[4]
                    line += " watch=%s" % ("fired" if events else "none")
                print(line, flush=True)
                # Forget watches left on this case's node.
                session.call(18, string(node) + i32(3))
    for s in (anon, alice, superuser, root):
        s.close()


if __name__ == "__main__":
    main()
