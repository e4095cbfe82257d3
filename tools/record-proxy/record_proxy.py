#!/usr/bin/env python3
"""Recording TCP proxy for the ZooKeeper client protocol (stdlib only).

Listens on 127.0.0.1:LISTEN, forwards every accepted connection to
127.0.0.1:UPSTREAM, and cuts both byte streams into ZooKeeper frames
(4-byte big-endian length prefix + payload).  Every client connection is
written to its own fixture file in OUT_DIR:

    # comment                       (free text, ignored by parsers)
    C <hex>                         client->server frame payload, no length prefix
    S <hex>                         server->client frame payload, no length prefix

Lines appear in the order the proxy read the frames.  A frame is written to
the file *before* its last byte is forwarded, so a reply can never appear
above the request that caused it.  Before every frame the proxy writes a
`# ...` line with a short decoding (xid / opcode / zxid / error), purely
for human readers.

Naming: the current *label* (set over the control port, default "unnamed")
names the file: the first connection accepted under label L is written to
L.txt.  If a second connection arrives under the same label (e.g. the Java
client reconnecting after a forced drop), L.txt is renamed to L-1.txt and
the new connection goes to L-2.txt, then L-3.txt, ...

Control port (127.0.0.1:CONTROL, one text command per line, reply "ok ..."):

    label NAME [DESCRIPTION...]  subsequent connections belong to NAME;
                                 DESCRIPTION goes into the header comment
    hold                         connections accepted from now on are not
                                 connected upstream until "release"
    release                      undo "hold", let held connections proceed
    drop                         close every live proxied connection (both
                                 sides) - forces the client to reconnect
    wait [SECONDS]               reply "ok" once no proxied connection is
                                 live any more (default 10 s, else "timeout")
    note TEXT                    add "# TEXT" to the files of live connections
    quit                         stop the proxy

Usage:
    record_proxy.py --listen 23182 --upstream 23181 --control 23183 --out DIR
"""

import argparse
import os
import socket
import struct
import sys
import textwrap
import threading

HOST = "127.0.0.1"

OPCODES = {
    0: "notification", 1: "create", 2: "delete", 3: "exists", 4: "getData",
    5: "setData", 6: "getACL", 7: "setACL", 8: "getChildren", 9: "sync",
    11: "ping", 12: "getChildren2", 13: "check", 14: "multi", 15: "create2",
    16: "reconfig", 17: "checkWatches", 18: "removeWatches",
    19: "createContainer", 20: "deleteContainer", 21: "createTTL",
    22: "multiRead", 100: "auth", 101: "setWatches", 102: "sasl",
    103: "getEphemerals", 104: "getAllChildrenNumber", 105: "setWatches2",
    106: "addWatch", 107: "whoAmI", -10: "createSession", -11: "closeSession",
    -1: "error",
}

ERRORS = {
    0: "Ok", -1: "SystemError", -2: "RuntimeInconsistency",
    -3: "DataInconsistency", -4: "ConnectionLoss", -5: "MarshallingError",
    -6: "Unimplemented", -7: "OperationTimeout", -8: "BadArguments",
    -13: "NewConfigNoQuorum", -14: "ReconfigInProgress",
    -100: "APIError", -101: "NoNode", -102: "NoAuth", -103: "BadVersion",
    -108: "NoChildrenForEphemerals", -110: "NodeExists", -111: "NotEmpty",
    -112: "SessionExpired", -113: "InvalidCallback", -114: "InvalidACL",
    -115: "AuthFailed", -118: "SessionMoved", -119: "NotReadOnly",
    -120: "EphemeralOnLocalSession", -121: "NoWatcher",
    -122: "RequestTimeout", -123: "ReconfigDisabled",
    -124: "SessionClosedRequireSaslAuth", -125: "QuotaExceeded",
    -127: "Throttled",
}

EVENTS = {
    -1: "None", 1: "NodeCreated", 2: "NodeDeleted", 3: "NodeDataChanged",
    4: "NodeChildrenChanged", 5: "DataWatchRemoved", 6: "ChildWatchRemoved",
    7: "PersistentWatchRemoved",
}

SPECIAL_XIDS = {-1: "notification", -2: "ping", -4: "auth"}


def _int(b, off):
    return struct.unpack_from(">i", b, off)[0]


def _long(b, off):
    return struct.unpack_from(">q", b, off)[0]


class _Reader:
    def __init__(self, b, off):
        self.b, self.off = b, off

    def int(self):
        v = _int(self.b, self.off)
        self.off += 4
        return v

    def long(self):
        v = _long(self.b, self.off)
        self.off += 8
        return v

    def bool(self):
        v = self.b[self.off]
        self.off += 1
        return v

    def buf(self):
        n = self.int()
        if n < 0:
            return None
        if self.off + n > len(self.b):
            raise IndexError
        v = self.b[self.off:self.off + n]
        self.off += n
        return v

    def str(self):
        v = self.buf()
        return "(null)" if v is None else v.decode("utf-8", "replace")

    def stat(self):
        self.off += 68
        if self.off > len(self.b):
            raise IndexError


def _multi_ops(payload):
    """Summary of the ops inside a multi / multiRead request."""
    r = _Reader(payload, 8)
    out = []
    while True:
        op, done, _err = r.int(), r.bool(), r.int()
        if done:
            return out
        path = r.str()
        if op in (1, 15, 19, 21):
            r.buf()
            for _ in range(max(r.int(), 0)):
                r.int(), r.str(), r.str()
            r.int()
            if op == 21:
                r.long()
        elif op in (2, 13):
            r.int()
        elif op == 5:
            r.buf()
            r.int()
        elif op in (4, 8):
            r.bool()
        else:
            out.append("%s %s ..." % (OPCODES.get(op, op), path))
            return out
        out.append("%s %s" % (OPCODES.get(op, op), path))


def _multi_results(payload):
    """Summary of the per-op results of a multi / multiRead reply."""
    r = _Reader(payload, 16)
    out = []
    while True:
        op, done, err = r.int(), r.bool(), r.int()
        if done:
            return out
        if op == -1:
            out.append("error %d" % r.int())
            continue
        name = OPCODES.get(op, str(op))
        if op == 1:
            out.append("%s %s" % (name, r.str()))
        elif op in (15, 19, 21):
            out.append("%s %s" % (name, r.str()))
            r.stat()
        elif op == 5:
            r.stat()
            out.append(name)
        elif op in (2, 13):
            out.append(name)
        elif op == 8:
            kids = [r.str() for _ in range(max(r.int(), 0))]
            out.append("%s %s" % (name, kids))
        elif op == 4:
            data = r.buf()
            r.stat()
            out.append("%s %r" % (name, data))
        else:
            out.append(name + " ...")
            return out


def describe(direction, index, payload, pending=None):
    """One-line human description of a frame (never used by parsers).
    pending maps request xid -> opcode for the connection (kept up to date
    here) so replies can name the request they answer."""
    if pending is None:
        pending = {}
    try:
        if index == 0 and direction == "C":
            proto, zxid, timeout, sid = struct.unpack_from(">iqiq", payload, 0)
            plen = _int(payload, 24)
            rest = len(payload) - 28 - max(plen, 0)
            return ("ConnectRequest protocolVersion=%d lastZxidSeen=0x%x "
                    "timeOut=%d sessionId=0x%x passwd=%d bytes%s"
                    % (proto, zxid, timeout, sid, plen,
                       " readOnly=%d" % payload[-1] if rest == 1 else ""))
        if index == 0 and direction == "S":
            proto, timeout, sid = struct.unpack_from(">iiq", payload, 0)
            plen = _int(payload, 16)
            rest = len(payload) - 20 - max(plen, 0)
            return ("ConnectResponse protocolVersion=%d timeOut=%d "
                    "sessionId=0x%x passwd=%d bytes%s"
                    % (proto, timeout, sid, plen,
                       " readOnly=%d" % payload[-1] if rest == 1 else ""))
        xid = _int(payload, 0)
        if direction == "C":
            op = _int(payload, 4)
            pending[xid] = op
            text = "request xid=%d%s op=%d %s" % (
                xid, " (%s)" % SPECIAL_XIDS[xid] if xid in SPECIAL_XIDS else "",
                op, OPCODES.get(op, "UNKNOWN"))
            if op in (14, 22):
                text += " ops=[%s]" % ", ".join(_multi_ops(payload))
            return text
        zxid = _long(payload, 4)
        err = _int(payload, 12)
        op = pending.pop(xid, None) if xid >= 0 else None
        text = "reply xid=%d%s zxid=%s err=%d %s" % (
            xid, " (%s)" % SPECIAL_XIDS[xid] if xid in SPECIAL_XIDS else "",
            "0x%x" % zxid if zxid >= 0 else str(zxid), err, ERRORS.get(err, "?"))
        if op is not None:
            text += " (to %s)" % OPCODES.get(op, "op %d" % op)
        if op in (14, 22) and err == 0 and len(payload) > 16:
            text += " results=[%s]" % ", ".join(_multi_results(payload))
        if xid == -1 and len(payload) >= 28:
            etype = _int(payload, 16)
            state = _int(payload, 20)
            plen = _int(payload, 24)
            path = payload[28:28 + plen].decode("utf-8", "replace")
            text += " WatcherEvent type=%d %s state=%d path=%s" % (
                etype, EVENTS.get(etype, "?"), state, path)
        return text
    except (struct.error, IndexError):
        return "(undecodable %s frame, %d bytes)" % (direction, len(payload))


class Proxy:
    def __init__(self, listen, upstream, control, out_dir):
        self.listen = listen
        self.upstream = upstream
        self.control = control
        self.out_dir = out_dir
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.label = "unnamed"
        self.description = ""
        self.counts = {}          # label -> connections seen
        self.first_file = {}      # label -> (Conn of first connection)
        self.live = set()
        self.held = threading.Event()
        self.released = threading.Event()
        self.released.set()
        self.stopping = threading.Event()

    # ----------------------------------------------------------- fixtures
    def open_fixture(self, conn):
        with self.lock:
            label, desc = self.label, self.description
            n = self.counts.get(label, 0) + 1
            self.counts[label] = n
            if n == 1:
                name = label + ".txt"
                self.first_file[label] = conn
            else:
                name = "%s-%d.txt" % (label, n)
                if n == 2:
                    first = self.first_file[label]
                    new_first = os.path.join(self.out_dir, label + "-1.txt")
                    os.rename(first.path, new_first)
                    first.path = new_first
            conn.path = os.path.join(self.out_dir, name)
            conn.fh = open(conn.path, "w", encoding="ascii", newline="\n")
            conn.write_locked("# scenario: %s (connection %d)" % (label, n))
            for para in desc.split("\\n"):
                for line in textwrap.wrap(para.strip(), 96):
                    conn.write_locked("# " + line)
            conn.write_locked("# recorded from Apache ZooKeeper 3.8 (Debian "
                              "package) with tools/record-proxy")
            self.live.add(conn)

    def finished(self, conn):
        with self.lock:
            self.live.discard(conn)
            conn.fh.close()
            self.cond.notify_all()

    # ------------------------------------------------------------ serving
    def serve(self):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((HOST, self.listen))
        ls.listen(64)
        cs = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        cs.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        cs.bind((HOST, self.control))
        cs.listen(16)
        threading.Thread(target=self.control_loop, args=(cs,), daemon=True).start()
        print("record_proxy: listening on %s:%d -> %s:%d, control %d, out %s"
              % (HOST, self.listen, HOST, self.upstream, self.control,
                 self.out_dir), file=sys.stderr, flush=True)
        ls.settimeout(0.2)
        while not self.stopping.is_set():
            try:
                client, _ = ls.accept()
            except socket.timeout:
                continue
            client.settimeout(None)
            conn = Conn(self, client)
            self.open_fixture(conn)
            threading.Thread(target=conn.start, daemon=True).start()
        ls.close()

    def control_loop(self, cs):
        while True:
            s, _ = cs.accept()
            threading.Thread(target=self.control_client, args=(s,),
                             daemon=True).start()

    def control_client(self, s):
        f = s.makefile("rw", encoding="utf-8", newline="\n")
        try:
            for line in f:
                reply = self.command(line.rstrip("\r\n"))
                f.write(reply + "\n")
                f.flush()
                if reply == "ok quit":
                    break
        except OSError:
            pass
        finally:
            try:
                f.close()
                s.close()
            except OSError:
                pass

    def command(self, line):
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "label":
            name, _, desc = arg.strip().partition(" ")
            if not name or "/" in name:
                return "error bad label"
            with self.lock:
                self.label, self.description = name, desc
            return "ok"
        if cmd == "hold":
            self.released.clear()
            return "ok"
        if cmd == "release":
            self.released.set()
            return "ok"
        if cmd == "drop":
            with self.lock:
                victims = list(self.live)
            for c in victims:
                c.drop()
            return "ok %d" % len(victims)
        if cmd == "wait":
            timeout = float(arg) if arg.strip() else 10.0
            with self.cond:
                ok = self.cond.wait_for(lambda: not self.live, timeout)
            return "ok" if ok else "timeout"
        if cmd == "note":
            with self.lock:
                for c in self.live:
                    c.write_locked("# " + arg)
            return "ok"
        if cmd == "quit":
            self.stopping.set()
            return "ok quit"
        return "error unknown command"


class Conn:
    def __init__(self, proxy, client):
        self.proxy = proxy
        self.client = client
        self.server = None
        self.path = None
        self.fh = None
        self.dropped = False
        self.frames = {"C": 0, "S": 0}
        self.pending = {}

    def write_locked(self, line):
        self.fh.write(line + "\n")
        self.fh.flush()

    def write(self, line):
        with self.proxy.lock:
            self.write_locked(line)

    def drop(self):
        with self.proxy.lock:
            if self.dropped:
                return
            self.dropped = True
            self.write_locked("# proxy dropped the connection here "
                              "(forced disconnect)")
        for s in (self.client, self.server):
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def start(self):
        self.proxy.released.wait()
        try:
            self.server = socket.create_connection((HOST, self.proxy.upstream))
        except OSError as e:
            self.write("# could not connect upstream: %s" % e)
            self.client.close()
            self.proxy.finished(self)
            return
        if self.dropped:       # dropped while waiting for upstream
            self.server.close()
        t1 = threading.Thread(target=self.pump, args=(self.client, self.server, "C"))
        t2 = threading.Thread(target=self.pump, args=(self.server, self.client, "S"))
        t1.start()
        t2.start()
        t1.join()
        t2.join()
        for s in (self.client, self.server):
            try:
                s.close()
            except OSError:
                pass
        self.proxy.finished(self)

    def pump(self, src, dst, tag):
        who = "client" if tag == "C" else "server"
        buf = b""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            buf += data
            while len(buf) >= 4:
                (n,) = struct.unpack_from(">i", buf, 0)
                if n < 0 or len(buf) < 4 + n:
                    break
                payload = buf[4:4 + n]
                buf = buf[4 + n:]
                with self.proxy.lock:
                    if not self.dropped:
                        idx = self.frames[tag]
                        self.frames[tag] += 1
                        self.write_locked("# %s" % describe(tag, idx, payload, self.pending))
                        self.write_locked("%s %s" % (tag, payload.hex()))
            try:
                dst.sendall(data)
            except OSError:
                break
        with self.proxy.lock:
            if not self.dropped:
                if buf:
                    self.write_locked("# %s sent %d bytes that are not a complete "
                                      "frame: %s" % (who, len(buf), buf.hex()))
                self.write_locked("# %s closed the connection" % who)
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--upstream", type=int, required=True)
    ap.add_argument("--control", type=int, required=True)
    ap.add_argument("--out", required=True, help="directory for fixture files")
    ap.add_argument("--label", default="unnamed", help="initial label")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    p = Proxy(a.listen, a.upstream, a.control, a.out)
    p.label = a.label
    p.serve()


if __name__ == "__main__":
    main()
