"""The SASL GSSAPI exchange (opcode 102) at the byte level: a raw jute socket client with python3-gssapi
(MIT Kerberos, the ccache in KRB5CCNAME). Prints one line per observation: reply headers, token kinds
and lengths of the server's unwrapped security-layer message, the whoAmI list, and what a garbage,
truncated or wrong-service token gets and whether the server then closes the connection.
Usage: krb_wire.py PORT exchange|unhappy|plain-create
"""
import os
import time
import socket
import struct
import sys

import gssapi

PORT, MODE = int(sys.argv[1]), sys.argv[2]


def out(line):
    print(line, flush=True)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        try:
            chunk = s.recv(n - len(buf))
        except (ConnectionResetError, socket.timeout):
            return None
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
    assert recv_frame(s) is not None, "no ConnectResponse"
    return s


def request(s, xid, op, payload):
    body = struct.pack(">ii", xid, op) + payload
    s.sendall(struct.pack(">i", len(body)) + body)
    frame = recv_frame(s)
    if frame is None:
        return None
    rxid, _zxid, err = struct.unpack(">iqi", frame[:16])
    return rxid, err, frame[16:]


def sasl(s, xid, token):
    r = request(s, xid, 102, struct.pack(">i", len(token)) + token)
    if r is None:
        return None
    rxid, err, rest = r
    tok = None
    if len(rest) >= 4:
        (n,) = struct.unpack(">i", rest[:4])
        tok = rest[4:4 + n] if n >= 0 else b""
    return rxid, err, tok, len(rest)


def kind(tok):
    if tok is None:
        return "no token"
    if not tok:
        return "empty token"
    if tok[0] == 0x60:
        return "GSS initial-context token (AP-REP)" if b"\x02\x00" in tok[:20] else "GSS initial-context token"
    if tok[:2] == b"\x05\x04":
        return "krb5 CFX wrap token"
    return "other token"


def closed(s):
    s.settimeout(3)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


def ustring(b, off):
    (n,) = struct.unpack(">i", b[off:off + 4])
    return b[off + 4:off + 4 + n].decode(), off + 4 + n


def whoami(s, xid):
    r = request(s, xid, 107, b"")
    if r is None:
        return "connection closed"
    _, err, rest = r
    if err != 0:
        return f"err={err}"
    (n,) = struct.unpack(">i", rest[:4])
    off, ids = 4, []
    for _ in range(n):
        scheme, off = ustring(rest, off)
        user, off = ustring(rest, off)
        ids.append(f"{scheme}:{user}")
    return "[" + ", ".join(ids) + "]"


def ctx(service_host, mutual):
    name = gssapi.Name(service_host, gssapi.NameType.hostbased_service)
    flags = [gssapi.RequirementFlag.integrity]
    if mutual:
        flags += [gssapi.RequirementFlag.mutual_authentication]
    return gssapi.SecurityContext(name=name, usage="initiate", flags=flags)


def exchange(label, mutual):
    s = session()
    c = ctx("zookeeper@localhost", mutual)
    tok = c.step()
    xid = 1
    out(f"{label}: C>S sasl {kind(tok)}")
    r = sasl(s, xid, tok)
    step = 0
    while r is not None and r[1] == 0 and not c.complete:
        step += 1
        out(f"{label}: S>C reply {step} err={r[1]} {kind(r[2])}")
        tok = c.step(r[2])
        xid += 1
        out(f"{label}: C>S sasl {kind(tok) if tok else 'empty token'}")
        r = sasl(s, xid, tok or b"")
    if r is None or r[1] != 0:
        out(f"{label}: failed: {r and r[1]}")
        return
    step += 1
    out(f"{label}: S>C reply {step} err={r[1]} {kind(r[2])}")
    # the server's security-layer offer (RFC 4752 3.1): 4 bytes, wrapped
    offer = c.unwrap(r[2])
    layer = offer.message
    out(f"{label}: security-layer offer: {len(layer)} bytes, layers=0x{layer[0]:02x} "
        f"max_buffer={int.from_bytes(layer[1:4], 'big')} encrypted={offer.encrypted}")
    authz = b""  # no authorization id: the server uses the authenticated principal
    answer = c.wrap(bytes([1, 0, 0, 0]) + authz, False).message
    xid += 1
    out(f"{label}: C>S sasl {kind(answer)} (layer 1 = none, max_buffer 0, no authzid)")
    r = sasl(s, xid, answer)
    if r is None:
        out(f"{label}: connection closed, no reply")
        return
    step += 1
    out(f"{label}: S>C reply {step} err={r[1]} {kind(r[2])}")
    xid += 1
    out(f"{label}: whoAmI -> {whoami(s, xid)}")
    s.close()


def bad_token(label, token):
    s = session()
    r = sasl(s, 1, token)
    if r is None:
        out(f"{label}: connection closed, no reply")
    else:
        out(f"{label}: reply xid={r[0]} err={r[1]} body_after_header={r[3]} bytes ({kind(r[2])})")
    out(f"{label}: connection closed afterwards: {closed(s)}")
    s.close()


if MODE == "exchange":
    exchange("without mutual auth (as the Java client)", False)
    exchange("with mutual auth (as pure-sasl/kazoo)", True)
elif MODE == "unhappy":
    bad_token("garbage token (64 random bytes)", os.urandom(64))
    good = ctx("zookeeper@localhost", False).step()
    bad_token("truncated token (first half of a valid AP-REQ token)", good[: len(good) // 2])
    bad_token("ticket for zookeeper/otherhost", ctx("zookeeper@otherhost", False).step())
    # a replayed token: a valid AP-REQ taken once, then sent again on a new connection
    once = ctx("zookeeper@localhost", False).step()
    s = session()
    r = sasl(s, 1, once)
    out(f"replayed token: first use err={r[1] if r else None} {kind(r[2]) if r else ''}")
    s.close()
    bad_token("replayed token: second use", once)
    # a valid first token, then garbage as the answer to the security-layer offer
    s = session()
    r = sasl(s, 1, ctx("zookeeper@localhost", False).step())
    out(f"valid token then garbage: first reply err={r[1] if r else None} {kind(r[2]) if r else ''}")
    r = sasl(s, 2, b"\x05\x04\x00\xff" + os.urandom(40))
    out(f"valid token then garbage: second reply {'none, connection closed' if r is None else 'err=%d body_after_header=%d bytes (%s)' % (r[1], r[3], kind(r[2]))}")
    out(f"valid token then garbage: connection closed afterwards: {closed(s)}")
    s.close()
elif MODE == "expired":
    # The ccache holds a ticket of a few seconds (kinit -l); the server's krb5.conf allows 2 s
    # of clock skew. A token made and sent at once logs in; one made while the ticket was valid
    # and sent after it expired is refused.
    fresh = ctx("zookeeper@localhost", False).step()
    s = session()
    r = sasl(s, 1, fresh)
    out(f"token sent at once: reply err={r[1] if r else None} {kind(r[2]) if r else ''}")
    s.close()
    late = ctx("zookeeper@localhost", False).step()
    time.sleep(float(os.environ.get("KRB_EXPIRE_WAIT", "8")))
    bad_token("token sent after its ticket expired", late)
elif MODE == "plain-create":
    s = session()
    path = b"/wire-plain"
    payload = struct.pack(">i", len(path)) + path + struct.pack(">i", 1) + b"x"
    payload += struct.pack(">i", 1) + struct.pack(">i", 31) + struct.pack(">i", 5) + b"world" + struct.pack(">i", 6) + b"anyone"
    payload += struct.pack(">i", 0)
    r = request(s, 1, 1, payload)
    out(f"plain create: {'connection closed, no reply' if r is None else 'xid=%d err=%d' % (r[0], r[1])}")
    out(f"plain create: connection closed afterwards: {closed(s)}")
    s.close()
out("done")
