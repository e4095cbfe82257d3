#!/usr/bin/python3
"""A writer for benches/wayback_1m.sh: setData on one node in a loop over a raw ZooKeeper
connection, one request in flight; on any error it reconnects (new session) every 10 ms.
Every acknowledged write's time (epoch ms) and zxid go to OUT, one "ms zxid" line each.
Stops when STOP_FILE exists.

  wayback_writer.py PORT PATH OUT STOP_FILE
"""

import os
import socket
import struct
import sys
import time


def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise OSError("closed")
        b += c
    return b


def frame(s):
    return recvn(s, struct.unpack(">i", recvn(s, 4))[0])


def connect(port):
    # a short connect timeout: a SYN sent while the server is starting can hang for seconds
    s = socket.create_connection(("127.0.0.1", port), timeout=0.2)
    s.settimeout(2)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd, readOnly
    req = struct.pack(">iqiq", 0, 0, 10000, 0) + struct.pack(">i", 16) + b"\0" * 16 + b"\0"
    s.sendall(struct.pack(">i", len(req)) + req)
    frame(s)
    return s


def main():
    port, path, out, stop = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3], sys.argv[4]
    data = b"w" * 64
    xid = 0
    with open(out, "w", buffering=1) as f:
        s = None
        while not os.path.exists(stop):
            try:
                if s is None:
                    s = connect(port)
                xid += 1
                body = struct.pack(">ii", xid, 5) + struct.pack(">i", len(path)) + path
                body += struct.pack(">i", len(data)) + data + struct.pack(">i", -1)
                s.sendall(struct.pack(">i", len(body)) + body)
                reply = frame(s)
                rxid, zxid, err = struct.unpack(">iqi", reply[:16])
                if rxid != xid or err != 0:
                    raise OSError("xid %d err %d" % (rxid, err))
                f.write("%d %d\n" % (int(time.time() * 1000), zxid))
            except (OSError, struct.error):
                if s is not None:
                    s.close()
                s = None
                time.sleep(0.01)


if __name__ == "__main__":
    main()
