"""A tiny TCP forwarder that a test can cut and restore.

Used to force a client to lose its connection without the client sending
closeSession (the server only sees the TCP connection go away), and to
let it reconnect later through the same address.

While the forwarder is cut, new connections are accepted and closed at
once, so the client sees a dropped connection and keeps retrying.
"""

import socket
import threading


class Forwarder:
    def __init__(self, listen_port, target_host, target_port):
        self.target = (target_host, target_port)
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", listen_port))
        self.ls.listen(128)
        self.port = self.ls.getsockname()[1]
        self.addr = "127.0.0.1:%d" % self.port
        self.lock = threading.Lock()
        self.up = True
        self.closed = False
        self.pairs = set()
        t = threading.Thread(target=self._accept_loop, daemon=True)
        t.start()

    def _accept_loop(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            with self.lock:
                up = self.up and not self.closed
            if not up:
                _kill(c)
                continue
            try:
                s = socket.create_connection(self.target, timeout=5)
                s.settimeout(None)
            except OSError:
                _kill(c)
                continue
            for x in (c, s):
                x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = (c, s)
            with self.lock:
                if not self.up or self.closed:
                    _kill(c)
                    _kill(s)
                    continue
                self.pairs.add(pair)
            threading.Thread(target=self._pump, args=(c, s, pair), daemon=True).start()
            threading.Thread(target=self._pump, args=(s, c, pair), daemon=True).start()

    def _pump(self, a, b, pair):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        with self.lock:
            self.pairs.discard(pair)
        _kill(a)
        _kill(b)

    def cut(self):
        """Drop every forwarded connection and refuse new ones."""
        with self.lock:
            self.up = False
            pairs = list(self.pairs)
            self.pairs.clear()
        for c, s in pairs:
            _kill(c)
            _kill(s)

    def restore(self):
        with self.lock:
            self.up = True

    def close(self):
        with self.lock:
            self.closed = True
        self.cut()
        try:
            self.ls.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.ls.close()


def _kill(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
