"""A TCP proxy that logs the jute frames of one client connection, for the SASL GSSAPI exchange.

Listens on 127.0.0.1:LISTEN, forwards the first connection to 127.0.0.1:TARGET and logs every frame
in both directions until either side closes; then exits. Two outputs:
  DETAIL  one line per frame: direction, xid, opcode / reply header (zxid, err), the SASL token's
          length and its first bytes (0x60: a GSS-API initial context token carrying a Kerberos
          AP-REQ or AP-REP; 0x0504: a Kerberos CFX wrap token, RFC 4121)
  SHAPE   the same without lengths and zxids (empty / token kind only), which run.sh compares
          between ZooKeeper and zkr.
Usage: sasl_capture.py LISTEN TARGET DETAIL SHAPE   (prints "listening" on stdout when ready)
"""
import socket
import struct
import sys
import threading

LISTEN, TARGET = int(sys.argv[1]), int(sys.argv[2])
DETAIL, SHAPE = sys.argv[3], sys.argv[4]
OPS = {0: "notification", 1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData", 6: "getACL",
       7: "setACL", 8: "getChildren", 11: "ping", 12: "getChildren2", 15: "create2", 100: "setAuth",
       101: "setWatches", 102: "sasl", 107: "whoAmI", -11: "closeSession"}
lock = threading.Lock()
pending = {}  # xid -> opcode
detail, shape = [], []


def kind(tok):
    if not tok:
        return "empty"
    if tok[0] == 0x60:
        return "gss-initial-context-token"
    if tok[:2] == b"\x05\x04":
        return "krb5-cfx-wrap-token"
    if tok[:2] == b"\x02\x00" or tok[:2] == b"\x03\x00":
        return "krb5-token-%02x%02x" % (tok[0], tok[1])
    return "other"


def token(body, off):
    if len(body) < off + 4:
        return None
    (n,) = struct.unpack(">i", body[off:off + 4])
    if n < 0:
        return b""
    return body[off + 4:off + 4 + n]


def log(d, s):
    with lock:
        detail.append(d)
        if s is not None:
            shape.append(s)


def client_frame(i, body):
    if i == 0:
        proto, last_zxid, timeout, sid, plen = struct.unpack(">iqiqi", body[:28])
        log(f"C>S ConnectRequest len={len(body)} protocolVersion={proto} timeOut={timeout} sessionId={sid} "
            f"passwd_len={plen} readOnly_byte={'yes' if len(body) > 28 + plen else 'no'}",
            "C>S ConnectRequest")
        return
    xid, op = struct.unpack(">ii", body[:8])
    with lock:
        pending[xid] = op
    name = OPS.get(op, str(op))
    if op == 102:
        tok = token(body, 8)
        log(f"C>S xid={xid} op=102 sasl token_len={len(tok)} first_bytes={tok[:4].hex()} ({kind(tok)})",
            f"C>S sasl {kind(tok)}")
    else:
        log(f"C>S xid={xid} op={op} {name} len={len(body)}", None if op == 11 else f"C>S {name}")


def server_frame(i, body):
    if i == 0:
        proto, timeout, sid = struct.unpack(">iiq", body[:16])
        log(f"S>C ConnectResponse len={len(body)} protocolVersion={proto} timeOut={timeout}",
            "S>C ConnectResponse")
        return
    xid, zxid, err = struct.unpack(">iqi", body[:16])
    with lock:
        op = pending.pop(xid, None)
    name = OPS.get(op, str(op)) if op is not None else ("ping" if xid == -2 else "?")
    if op == 102:
        tok = token(body, 16) if err == 0 else None
        tl = len(tok) if tok is not None else "-"
        fb = tok[:4].hex() if tok else ""
        log(f"S>C xid={xid} zxid={zxid} err={err} (sasl reply) frame_len={len(body)} token_len={tl} "
            f"first_bytes={fb} ({kind(tok) if tok is not None else 'no token'})",
            f"S>C sasl reply err={err} {kind(tok) if tok is not None else 'no token'}")
    elif name == "ping":
        log(f"S>C xid={xid} err={err} (ping reply)", None)
    else:
        log(f"S>C xid={xid} zxid={zxid} err={err} ({name} reply) len={len(body)}", f"S>C {name} reply err={err}")


def pump(src, dst, handler, who):
    buf = b""
    n = 0
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:
            log(f"{who} closed the connection", None)  # who closes first after closeSession races
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            return
        buf += data
        while len(buf) >= 4:
            (ln,) = struct.unpack(">i", buf[:4])
            if len(buf) < 4 + ln:
                break
            body, buf = buf[4:4 + ln], buf[4 + ln:]
            try:
                handler(n, body)
            except struct.error:
                log(f"{who} frame {n}: len={len(body)} (unparsed)", f"{who} unparsed")
            n += 1
        try:
            dst.sendall(data)
        except OSError:
            pass


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", LISTEN))
ls.listen(1)
print("listening", flush=True)
ls.settimeout(60)
c, _ = ls.accept()
s = socket.create_connection(("127.0.0.1", TARGET))
t1 = threading.Thread(target=pump, args=(c, s, client_frame, "client"))
t2 = threading.Thread(target=pump, args=(s, c, server_frame, "server"))
t1.start()
t2.start()
t1.join(60)
t2.join(5)
with open(DETAIL, "w") as f:
    f.write("\n".join(detail) + "\n")
with open(SHAPE, "w") as f:
    f.write("\n".join(shape) + "\n")
