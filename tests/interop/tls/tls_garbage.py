"""Garbage on the TLS port while a well-behaved TLS client keeps working (issue #5, item 8).

Sends plaintext to zkr's secureClientPort: a real ZooKeeper ConnectRequest, random bytes, an HTTP
request, four-letter words, a truncated ClientHello, connect-and-close and half-closed sockets,
from several threads. Meanwhile a kazoo client with a client certificate does setData/getData in
a loop and must see no error. Afterwards zkr's open files and mntr's alive connections must be
back at their baseline, its threads and memory within a small margin.

Usage: tls_garbage.py PLAIN SECURE CERTDIR ZKR_PID [connections]
Prints PASS/FAIL lines; exit 1 on a failure.
"""
import logging
import os
import random
import socket
import ssl
import struct
import sys
import threading
import time

from kazoo.client import KazooClient

logging.basicConfig(level=logging.CRITICAL)
plain, secure, certs, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
total = int(sys.argv[5]) if len(sys.argv) > 5 else 600
failed = 0


def check(ok, what):
    global failed
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failed += 1


def proc():
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status") if ":" in line)
    return fds, int(status["Threads"]), int(status["VmRSS"].split()[0])


def alive():
    with socket.create_connection(("127.0.0.1", plain), timeout=5) as s:
        s.sendall(b"mntr")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    for line in data.decode().splitlines():
        k, _, v = line.partition("\t")
        if k == "zk_num_alive_connections":
            return int(v)
    raise RuntimeError("mntr has no zk_num_alive_connections")


def connect_request():
    body = struct.pack(">iqiq", 0, 0, 30000, 0) + struct.pack(">i", 16) + b"\0" * 16 + b"\0"
    return struct.pack(">i", len(body)) + body


def garbage(i, rng):
    kind = i % 8
    with socket.create_connection(("127.0.0.1", secure), timeout=10) as s:
        if kind == 0:
            s.sendall(connect_request())
        elif kind == 1:
            s.sendall(rng.randbytes(rng.randint(1, 4096)))
        elif kind == 2:
            s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        elif kind == 3:
            s.sendall(b"ruok")
        elif kind == 4:
            # A ClientHello cut short: a TLS record header promising more than is sent.
            s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + rng.randbytes(20))
            return  # closed without waiting: the server must not wait for the rest
        elif kind == 5:
            pass  # connect and close
        elif kind == 6:
            s.sendall(connect_request()[:10])
            s.shutdown(socket.SHUT_WR)
        else:
            s.shutdown(socket.SHUT_WR)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass


def late_tls(certs, out):
    """Completes a TLS handshake 6 s after connecting, then sends nothing. zkr's one handshake
    deadline (nio.sessionlessCnxnTimeout, 10 s here) counts from the TCP accept, so the socket must
    close about 10 s after the connect: not 10 s after the TLS handshake (16 s), not never."""
    ctx = ssl.create_default_context(cafile=f"{certs}/ca.pem")
    ctx.check_hostname = False
    ctx.load_cert_chain(f"{certs}/alice.pem", f"{certs}/alice.key")
    t0 = time.monotonic()
    try:
        raw = socket.create_connection(("127.0.0.1", secure), timeout=40)
        time.sleep(6)
        with ctx.wrap_socket(raw) as s:
            try:
                while s.recv(4096):
                    pass
            except (OSError, ssl.SSLError):
                pass
        out.append(time.monotonic() - t0)
    except (OSError, ssl.SSLError) as e:
        out.append(repr(e))


def main():
    tls = dict(use_ssl=True, verify_certs=True, ca=f"{certs}/ca.pem",
               certfile=f"{certs}/alice.pem", keyfile=f"{certs}/alice.key")
    zk = KazooClient(hosts=f"127.0.0.1:{secure}", timeout=10, **tls)
    zk.start(timeout=15)
    zk.ensure_path("/garbage-tls")
    time.sleep(1)
    base_fds, base_threads, base_rss = proc()
    base_alive = alive()

    errors, ops = [], [0]
    done = threading.Event()

    def worker():
        n = 0
        while not done.is_set():
            try:
                zk.set("/garbage-tls", str(n).encode())
                data, _ = zk.get("/garbage-tls")
                if data != str(n).encode():
                    errors.append(f"read {data!r} after writing {n}")
                n += 1
                ops[0] += 1
            except Exception as e:  # noqa: BLE001 - any error of the good client is a failure
                errors.append(repr(e))
                time.sleep(0.1)

    good = threading.Thread(target=worker)
    good.start()
    late = []
    late_thread = threading.Thread(target=late_tls, args=(certs, late))
    late_thread.start()
    rng = random.Random(5)
    next_i = iter(range(total))
    lock = threading.Lock()
    refused = [0]

    def flood():
        r = random.Random(rng.random())
        while True:
            with lock:
                i = next(next_i, None)
            if i is None:
                return
            try:
                garbage(i, r)
            except OSError:
                refused[0] += 1

    threads = [threading.Thread(target=flood) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    late_thread.join()
    time.sleep(1)
    done.set()
    good.join()
    check(len(late) == 1 and isinstance(late[0], float) and 9.0 <= late[0] <= 13.0,
          f"tls-garbage: a TLS handshake done at 6 s and no ConnectRequest is closed at the 10 s deadline "
          f"counted from the connect (closed after {late})")
    check(not errors and ops[0] > 0,
          f"tls-garbage: the TLS client did {ops[0]} set+get pairs during {total} plaintext connections, "
          f"errors: {errors[:3]}")

    # Back to baseline: every garbage socket closed (handshake deadline at the latest).
    deadline = time.time() + 30
    while True:
        fds, threads_now, rss = proc()
        now_alive = alive()
        if (fds == base_fds and now_alive == base_alive) or time.time() > deadline:
            break
        time.sleep(0.5)
    check(fds == base_fds, f"tls-garbage: open files back to baseline ({fds} vs {base_fds})")
    check(now_alive == base_alive, f"tls-garbage: mntr alive connections back to baseline ({now_alive} vs {base_alive})")
    check(threads_now <= base_threads + 2, f"tls-garbage: threads {threads_now} vs baseline {base_threads}")
    check(rss <= base_rss + 48 * 1024, f"tls-garbage: RSS {rss} kB vs baseline {base_rss} kB (+48 MB allowed)")
    zk.stop()
    zk.close()


main()
sys.exit(1 if failed else 0)
