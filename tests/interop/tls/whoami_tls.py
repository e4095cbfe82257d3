"""Over TLS with a client certificate, whoAmI (opcode 107) lists the identities the session got at
connect time, in the server's order, and getData shows whether they open a node.
Usage: whoami_tls.py SECURE_PORT CERTDIR CERTNAME|no-cert PATH
"""
import socket
import ssl
import struct
import sys

port, certs, name, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations(f"{certs}/ca.pem")
if name != "no-cert":
    ctx.load_cert_chain(f"{certs}/{name}.pem", f"{certs}/{name}.key")
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost")


def send(body):
    s.sendall(struct.pack(">i", len(body)) + body)


def recv():
    def exact(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c:
                raise EOFError("connection closed")
            b += c
        return b
    return exact(struct.unpack(">i", exact(4))[0])


def ustring(buf, at):
    (n,) = struct.unpack(">i", buf[at:at + 4])
    return buf[at + 4:at + 4 + n].decode(), at + 4 + n


send(struct.pack(">iqiqi", 0, 0, 30000, 0, 16) + b"\0" * 16 + b"\0")
recv()
send(struct.pack(">ii", 1, 107))
r = recv()
xid, zxid, err = struct.unpack(">iqi", r[:16])
if err != 0:
    print(f"{name}: whoami err={err}")
    sys.exit(1)
(count,) = struct.unpack(">i", r[16:20])
at = 20
for _ in range(count):
    scheme, at = ustring(r, at)
    user, at = ustring(r, at)
    print(f"{name}: whoami {scheme}:{user}")
p = path.encode()
send(struct.pack(">ii", 2, 4) + struct.pack(">i", len(p)) + p + b"\0")
r = recv()
print(f"{name}: get {path} err={struct.unpack('>iqi', r[:16])[2]}")
