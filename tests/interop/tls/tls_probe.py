"""TLS handshakes with Python's ssl (OpenSSL) against the secure port, one line each: which
protocol and cipher suite the server agreed to, or that it refused, and the subject of the
certificate it sent. run.sh runs it against Debian's ZooKeeper and zkr with the same zoo.cfg and
compares the lines. Usage: tls_probe.py SECURE_PORT CERTDIR LABEL [client-variant...]
variants: default, tls12 (at most TLSv1.2), tls13 (TLSv1.3 only)
"""
import socket
import ssl
import sys

port, certs, label = int(sys.argv[1]), sys.argv[2], sys.argv[3]
variants = sys.argv[4:] or ["default", "tls12", "tls13"]


def probe(variant):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(f"{certs}/ca.pem")
    ctx.load_cert_chain(f"{certs}/alice.pem", f"{certs}/alice.key")
    if variant == "tls12":
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    elif variant == "tls13":
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                subject = ",".join(f"{k}={v}" for rdn in s.getpeercert()["subject"] for k, v in rdn)
                return f"{s.version()} {s.cipher()[0]} server={subject}"
    except (ssl.SSLError, OSError) as e:
        return f"refused ({type(e).__name__})"


for v in variants:
    print(f"{label} client {v}: {probe(v)}", flush=True)
