#!/usr/bin/env python3
"""Hand-rolled ZooKeeper client (stdlib only) for requests the official Java
client cannot send.  It talks through record_proxy.py like Scenarios.java.

Usage: raw_client.py PROXY_PORT CONTROL_PORT NAME
       raw_client.py --list

Scenarios:
  check-standalone  standalone check (op 13) outside of a multi; the 3.8 Java
                    client only has Op.check inside multi.
  unknown-opcode    a request with an opcode the server does not know.
  reattach-badpw    two raw connections: session + re-attach with a wrong
                    password (the Java client would auto-reconnect and make
                    the recording timing dependent).
"""

import socket
import struct
import sys

HOST = "127.0.0.1"
PROXY_PORT = None


# ---- jute encoding (big endian; buffer/string = int length + bytes, -1 = null)
def jint(v):
    return struct.pack(">i", v)


def jlong(v):
    return struct.pack(">q", v)


def jbool(v):
    return b"\x01" if v else b"\x00"


def jbuf(b):
    return jint(-1) if b is None else jint(len(b)) + b


def jstr(s):
    return jbuf(None if s is None else s.encode("utf-8"))


def jacl_world_all():
    # vector<ACL> with one entry: perms=ALL(31), Id(scheme "world", id "anyone")
    return jint(1) + jint(31) + jstr("world") + jstr("anyone")


class Raw:
    def __init__(self, port):
        self.s = socket.create_connection((HOST, port))
        self.s.settimeout(5)
        self.xid = 0

    def send_frame(self, payload):
        self.s.sendall(jint(len(payload)) + payload)

    def read_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise EOFError("server closed the connection")
            out += chunk
        return out

    def read_frame(self):
        (n,) = struct.unpack(">i", self.read_exact(4))
        return self.read_exact(n)

    def connect(self, timeout=30000, session_id=0, passwd=bytes(16)):
        """Sends a ConnectRequest; returns (timeout, session id, password)."""
        self.send_frame(jint(0) + jlong(0) + jint(timeout) + jlong(session_id)
                        + jbuf(passwd) + jbool(False))
        resp = self.read_frame()
        proto, to, sid = struct.unpack_from(">iiq", resp, 0)
        (plen,) = struct.unpack_from(">i", resp, 16)
        print("[raw] connected session 0x%x timeout %d" % (sid, to), file=sys.stderr)
        return to, sid, resp[20:20 + plen]

    def request(self, op, body=b"", timeout=5):
        """Sends one request and returns (err, reply body) of the matching reply,
        or None when the server closed the connection / did not answer within
        timeout seconds."""
        self.xid += 1
        xid = self.xid
        self.send_frame(jint(xid) + jint(op) + body)
        self.s.settimeout(timeout)
        try:
            while True:
                f = self.read_frame()
                rxid, zxid, err = struct.unpack_from(">iqi", f, 0)
                if rxid == xid:
                    print("[raw] op %d -> err %d" % (op, err), file=sys.stderr)
                    return err, f[16:]
        except (EOFError, socket.timeout, ConnectionError) as e:
            print("[raw] op %d -> no reply (%s)" % (op, e), file=sys.stderr)
            return None

    def wait_eof(self, timeout=5):
        """True if the server closes the connection within timeout seconds."""
        self.s.settimeout(timeout)
        try:
            while True:
                self.read_frame()
        except (EOFError, ConnectionError):
            return True
        except socket.timeout:
            return False

    def close(self):
        self.request(-11)
        self.s.close()


def ctl(port, cmd):
    with socket.create_connection((HOST, port)) as s:
        s.sendall((cmd + "\n").encode("utf-8"))
        reply = s.makefile("r", encoding="utf-8").readline().strip()
    if not reply.startswith("ok"):
        raise RuntimeError("proxy said %r to %r" % (reply, cmd))
    return reply


def reattach_badpw(c, proxy_port):
    _, sid, pw = c.connect()
    other = Raw(proxy_port)
    bad = bytes(b ^ 0x5a for b in pw)
    other.connect(session_id=sid, passwd=bad)   # -> timeOut 0, sessionId 0
    other.wait_eof()                            # server hangs up on connection 2
    other.s.close()
    c.wait_eof()                                # ... and has closed connection 1 too
    c.s.close()


def check_standalone(c):
    c.connect()
    # ZooKeeper 3.8 sends no reply at all for a *successful* standalone
    # check, so those requests only wait 2 s before moving on.
    c.request(1, jstr("/chk") + jbuf(b"v") + jacl_world_all() + jint(0))   # create /chk
    c.request(13, jstr("/chk") + jint(0), timeout=2)                       # check ok
    c.request(13, jstr("/chk") + jint(5), timeout=2)                       # BadVersion
    c.request(13, jstr("/nope") + jint(0), timeout=2)                      # NoNode
    c.request(13, jstr("/chk") + jint(-1), timeout=2)                      # any version
    c.request(3, jstr("/chk") + jbool(False))                              # exists /chk
    c.close()


def unknown_opcode(c):
    c.connect()
    c.request(3, jstr("/") + jbool(False))     # exists / (a normal request first)
    c.request(77, jstr("/"))                   # opcode 77 is not defined
    if c.wait_eof():                           # 3.8 answers -6, then hangs up
        c.s.close()
        return
    c.request(3, jstr("/") + jbool(False))     # (only if the session survived)
    c.close()


SCENARIOS = {
    "check-standalone": (
        "standalone check (op 13, CheckVersionRequest path+version) sent by a hand-rolled client"
        " (tools/record-proxy/raw_client.py) because the 3.8 Java client can only send check inside"
        " multi: create /chk (op 1); check /chk version 0 (matches); check /chk version 5 -> BadVersion"
        " (-103); check /nope version 0 -> NoNode (-101); check /chk version -1 (any); exists /chk;"
        " closeSession. NOTE: ZooKeeper 3.8 sends NO reply for a successful standalone check (the"
        " request still uses up a zxid, see the zxids of the following replies); only failed checks"
        " get an error reply.",
        check_standalone),
    "reattach-badpw": (
        "re-attach with a wrong password, hand-rolled client (tools/record-proxy/raw_client.py) so"
        " that nothing reconnects automatically. Connection 1: new session, stays open and idle."
        " Connection 2: ConnectRequest with connection 1's session id and a wrong password ->"
        " ConnectResponse with timeOut 0, sessionId 0 and an all-zero password, then the server closes"
        " connection 2. The server ALSO closes connection 1: a ConnectRequest naming a live session"
        " disconnects that session's current connection before the password is checked.",
        lambda c: reattach_badpw(c, PROXY_PORT)),
    "unknown-opcode": (
        "a request with the undefined opcode 77 (body: a path string) sent by a hand-rolled client"
        " (tools/record-proxy/raw_client.py), preceded by exists / (op 3). ZooKeeper 3.8 replies with"
        " err -6 (Unimplemented), zxid -1 and then closes the connection (the client waits for that"
        " and sends nothing more).",
        unknown_opcode),
}


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(SCENARIOS))
        return
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    proxy_port, control_port, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    global PROXY_PORT
    PROXY_PORT = proxy_port
    desc, fn = SCENARIOS[name]
    ctl(control_port, "label %s %s" % (name, desc))
    fn(Raw(proxy_port))
    ctl(control_port, "wait 15")
    ctl(control_port, "label unnamed")


if __name__ == "__main__":
    main()
