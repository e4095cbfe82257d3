"""kazoo over TLS (client certificates, x509 ACLs) and with SASL DIGEST-MD5 (pure-sasl).

Runs after TlsCheck.java has created its nodes; prints one line per observation so that the
transcripts of Debian's ZooKeeper and zkr can be compared. Usage: kazoo_tls.py PLAIN SECURE CERTDIR
"""
import logging
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, ConnectionClosedError, KazooException, NoAuthError

logging.basicConfig(level=logging.CRITICAL)
plain, secure, certs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


def out(line):
    print(line, flush=True)


def client(label, port, report=True, **kw):
    zk = KazooClient(hosts=f"127.0.0.1:{port}", timeout=10, connection_retry={"max_tries": 0}, **kw)
    try:
        zk.start(timeout=6)
    except Exception as e:  # noqa: BLE001 - the transcript records what kind of failure it was
        if report:
            out(f"{label}: not connected ({type(e).__name__})")
        try:
            zk.stop()
            zk.close()
        except Exception:  # noqa: BLE001
            pass
        return None
    if report:
        out(f"{label}: connected")
    return zk


def tls(name):
    return dict(use_ssl=True, verify_certs=True, ca=f"{certs}/ca.pem",
                certfile=f"{certs}/{name}.pem", keyfile=f"{certs}/{name}.key")


def get(label, zk, path):
    try:
        out(f"{label}: get {path} -> {zk.get(path)[0].decode()}")
    except NoAuthError:
        out(f"{label}: get {path} -> NoAuth")
    except KazooException as e:
        out(f"{label}: get {path} -> {type(e).__name__}")


def done(zk):
    if zk is not None:
        zk.stop()
        zk.close()


a = client("kazoo tls alice", secure, **tls("alice"))
if a:
    get("kazoo tls alice", a, "/tls-creator")
    get("kazoo tls alice", a, "/tls-explicit")
    for acl in a.get_acls("/tls-creator")[0]:
        out(f"kazoo tls alice: acl /tls-creator {acl.id.scheme}:{acl.id.id} perms={acl.perms}")
    a.create("/tls-kazoo", b"k", acl=[__import__("kazoo.security", fromlist=["ACL"]).make_acl("auth", "", all=True)])
    for acl in a.get_acls("/tls-kazoo")[0]:
        out(f"kazoo tls alice: acl /tls-kazoo {acl.id.scheme}:{acl.id.id} perms={acl.perms}")
    a.delete("/tls-kazoo")
done(a)
b = client("kazoo tls bob", secure, **tls("bob"))
if b:
    get("kazoo tls bob", b, "/tls-creator")
    get("kazoo tls bob", b, "/tls-explicit")
done(b)
done(client("kazoo tls no-cert", secure, use_ssl=True, verify_certs=True, ca=f"{certs}/ca.pem"))

s = client("kazoo sasl bob", plain,
           sasl_options={"mechanism": "DIGEST-MD5", "username": "bob", "password": "bob-secret"})
if s:
    get("kazoo sasl bob", s, "/sasl-explicit")
done(s)
# ZooKeeper answers the failed SASL step with AuthFailed (-115) and closes the connection at once.
# kazoo's start() then either fails (it read the close first) or returns, and the next request
# fails with AuthFailedError (it read the reply first): seen both ways from Debian's ZooKeeper
# 3.8 (CI, 2026-12-03: ZooKeeper's side timed out while zkr's connected). Both are the same
# refusal, so the transcript records only that; the wire suite checks the reply and the close.
w = client("kazoo sasl wrong password", plain, report=False,
           sasl_options={"mechanism": "DIGEST-MD5", "username": "bob", "password": "nope"})
outcome = "refused"
if w:
    try:
        w.get("/sasl-explicit")
        outcome = "answered"
    except (AuthFailedError, ConnectionClosedError):
        pass
    except KazooException as e:
        outcome = type(e).__name__
out(f"kazoo sasl wrong password: {outcome}")
done(w)
out("done")
