#!/usr/bin/python3
"""The write load of benches/admin_snapshot_stall.sh: open-loop setData at RATE/s for SECS seconds
over SESSIONS raw ZooKeeper connections (request n is due at t0 + n/RATE and goes to session
n mod SESSIONS, each session writing its own node PREFIX<k>, which must exist). A sender thread
sends each request when it is due (several at once if it wakes late); a receiver thread matches
replies. Every acknowledged write becomes one line "due_ns ack_ns err" in OUT (CLOCK_MONOTONIC ns,
so the script can place the snapshot's curl in the same clock with `python3 -c time.monotonic_ns()`
or, as it does, by the epoch offset printed in OUT's first line "# epoch_ns_minus_mono_ns X").
Latency is counted from the due time, so a stalled server is not hidden by a stalled sender.

  admin_snapshot_writer.py PORT PREFIX RATE SECS SESSIONS OUT
"""

import selectors
import socket
import struct
import sys
import threading
import time


def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise OSError("closed")
        b += c
    return b


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = struct.pack(">iqiq", 0, 0, 30000, 0) + struct.pack(">i", 16) + b"\0" * 16 + b"\0"
    s.sendall(struct.pack(">i", len(req)) + req)
    recvn(s, struct.unpack(">i", recvn(s, 4))[0])
    s.settimeout(None)
    return s


def main():
    port, prefix, rate = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    secs, sessions, out = float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    socks = [connect(port) for _ in range(sessions)]
    data = b"w" * 100
    total = int(rate * secs)
    # per session: FIFO of (xid, due_ns) in flight
    inflight = [[] for _ in range(sessions)]
    heads = [0] * sessions
    lock = threading.Lock()
    acks = []
    t0 = time.monotonic_ns() + 200_000_000
    step = 1e9 / rate

    def sender():
        n = 0
        xids = [0] * sessions
        paths = [(prefix + str(k)).encode() for k in range(sessions)]
        while n < total:
            now = time.monotonic_ns()
            due = t0 + int(n * step)
            if due > now:
                time.sleep((due - now) / 1e9)
                continue
            while n < total and t0 + int(n * step) <= now:
                k = n % sessions
                xids[k] += 1
                p = paths[k]
                body = struct.pack(">ii", xids[k], 5) + struct.pack(">i", len(p)) + p
                body += struct.pack(">i", len(data)) + data + struct.pack(">i", -1)
                with lock:
                    inflight[k].append((xids[k], t0 + int(n * step)))
                socks[k].sendall(struct.pack(">i", len(body)) + body)
                n += 1

    def receiver():
        sel = selectors.DefaultSelector()
        bufs = [b""] * sessions
        for k, s in enumerate(socks):
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, k)
        want = total
        while want > 0:
            for key, _ in sel.select(timeout=1.0):
                k = key.data
                try:
                    c = socks[k].recv(1 << 20)
                except BlockingIOError:
                    continue
                if not c:
                    raise OSError("session %d closed" % k)
                now = time.monotonic_ns()
                b = bufs[k] + c
                i = 0
                while len(b) - i >= 4:
                    ln = struct.unpack_from(">i", b, i)[0]
                    if len(b) - i - 4 < ln:
                        break
                    xid, _zxid, err = struct.unpack_from(">iqi", b, i + 4)
                    i += 4 + ln
                    if xid < 0:  # a notification or a ping
                        continue
                    with lock:
                        fx, due = inflight[k][heads[k]]
                        heads[k] += 1
                    if fx != xid:
                        raise OSError("reply out of order: %d for %d" % (xid, fx))
                    acks.append((due, now, err))
                    want -= 1
                bufs[k] = b[i:]

    snd = threading.Thread(target=sender)
    rcv = threading.Thread(target=receiver)
    rcv.start()
    snd.start()
    snd.join()
    rcv.join(timeout=60)
    offset = time.time_ns() - time.monotonic_ns()
    with open(out, "w") as f:
        f.write("# epoch_ns_minus_mono_ns %d t0 %d rate %g secs %g sessions %d\n" % (offset, t0, rate, secs, sessions))
        for due, ack, err in acks:
            f.write("%d %d %d\n" % (due, ack, err))
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
