"""The SASL exchange (opcode 102) at the byte level, with a raw socket and a DIGEST-MD5 client
written here: reply headers (xid, zxid, err), the challenge with its nonce masked, rspauth, what
a wrong password and an unexpected initial token get, and whether the connection is closed.
Prints one line per observation; run.sh compares ZooKeeper's and zkr's. Usage: sasl_wire.py PORT
"""
import hashlib
import re
import socket
import struct
import sys

PORT = int(sys.argv[1])


def out(line):
    print(line, flush=True)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv_frame(s):
    head = recv_exact(s, 4)
    if head is None:
        return None
    return recv_exact(s, struct.unpack(">i", head)[0])


def session():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    body = struct.pack(">iqiqi", 0, 0, 30000, 0, 16) + b"\0" * 16 + b"\0"
    s.sendall(struct.pack(">i", len(body)) + body)
    resp = recv_frame(s)
    assert resp is not None, "no ConnectResponse"
    return s


def sasl(s, xid, token):
    body = struct.pack(">ii", xid, 102) + struct.pack(">i", len(token)) + token
    s.sendall(struct.pack(">i", len(body)) + body)
    frame = recv_frame(s)
    if frame is None:
        return None
    rxid, zxid, err = struct.unpack(">iqi", frame[:16])
    (tlen,) = struct.unpack(">i", frame[16:20]) if len(frame) >= 20 else (None,)
    tok = frame[20:20 + tlen] if tlen is not None and tlen >= 0 else None
    return rxid, zxid, err, tlen, tok, len(frame)


def closed(s):
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except (socket.timeout, ConnectionResetError):
        return False


def show(label, r):
    if r is None:
        out(f"{label}: connection closed, no reply")
        return
    rxid, zxid, err, tlen, tok, flen = r
    text = tok.decode(errors="replace") if tok is not None else None
    if text:
        text = re.sub(r'nonce="([^"]*)"', lambda m: f'nonce="<{len(m.group(1))} chars>"', text)
        text = re.sub(r"rspauth=([0-9a-f]*)", lambda m: f"rspauth=<{len(m.group(1))} hex>", text)
    out(f"{label}: xid={rxid} zxid={zxid} err={err} token_len={tlen} frame_len={flen} token={text!r}")


def h(b):
    return hashlib.md5(b).digest()


def response(user, password, nonce, cnonce, a2_prefix):
    uri = "zookeeper/zk-sasl-md5"
    a1 = h(f"{user}:zk-sasl-md5:{password}".encode()) + f":{nonce}:{cnonce}".encode()
    ha2 = h(f"{a2_prefix}:{uri}".encode()).hex()
    return h(f"{h(a1).hex()}:{nonce}:00000001:{cnonce}:auth:{ha2}".encode()).hex()


def exchange(label, user, password):
    s = session()
    r = sasl(s, 7, b"")
    show(f"{label} challenge", r)
    nonce = re.search(r'nonce="([^"]*)"', r[4].decode()).group(1)
    cnonce = "0123456789abcdef"
    resp = response(user, password, nonce, cnonce, "AUTHENTICATE")
    msg = (f'charset=utf-8,username="{user}",realm="zk-sasl-md5",nonce="{nonce}",nc=00000001,'
           f'cnonce="{cnonce}",digest-uri="zookeeper/zk-sasl-md5",maxbuf=65536,response={resp},qop=auth')
    r = sasl(s, 8, msg.encode())
    show(f"{label} response", r)
    if r is not None and r[2] == 0:
        want = response(user, password, nonce, cnonce, "")
        out(f"{label}: rspauth matches RFC 2831: {r[4].decode() == 'rspauth=' + want}")
        # a ping still works after a successful exchange
        body = struct.pack(">ii", -2, 11)
        s.sendall(struct.pack(">i", len(body)) + body)
        f = recv_frame(s)
        out(f"{label}: ping after auth -> xid={struct.unpack('>i', f[:4])[0]} err={struct.unpack('>i', f[12:16])[0]}")
    else:
        out(f"{label}: connection closed afterwards: {closed(s)}")
    s.close()


exchange("bob good password", "bob", "bob-secret")
exchange("bob wrong password", "bob", "nope")
exchange("unknown user", "dave", "x")
s = session()
show("initial token instead of empty", sasl(s, 9, b"hello"))
out(f"initial token: connection closed afterwards: {closed(s)}")
s.close()
out("done")
