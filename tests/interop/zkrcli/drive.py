#!/usr/bin/python3
"""Runs one zkrcli scenario with one client and prints what the client printed.

    drive.py CLIENT SCRIPT HOST:PORT PROXY_PORT

CLIENT  "zkr"   - `$ZKR_BIN cli -server ADDR` (ZKR_BIN must be set)
        "zkcli" - Debian's zkCli.sh -server ADDR ($ZKCLI overrides the path)
SCRIPT  NAME.zk      - the lines are typed into one session, as zkCli.sh reads a pipe
        NAME.oneshot - every line is one invocation: CLIENT -server ADDR WORDS...

Lines starting with "#" are not sent. Lines starting with "#!" are directives
(.zk only), run when reached:
  #! proxy          the session goes through a TCP forwarder on PROXY_PORT
                    (lib/tcpfwd.py); must come before the first command
  #! args WORDS...  more client arguments (e.g. -timeout 2000), before the first command
  #! wait N TEXT    wait until TEXT has appeared N times in the output
  #! cut            cut the forwarder (the client sees its connection drop)
  #! restore        let connections through again
  #! sleep SECONDS
  #! vs-zkcli: ...  not a directive: run.sh skips the zkCli.sh comparison
@SERVER@ in a line is replaced by the address the session connects to.

Output: the client's stdout and stderr merged, with the "ZooKeeper CLI
version:" line masked (zkCli.sh and zkr print different versions) and
Java stack-trace lines ("\tat ...") dropped, then "--- exit N". Exit status 1 if the client hung (watchdog) or a wait timed out.
"""

import os
import re
import shlex
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from tcpfwd import Forwarder  # noqa: E402

WATCHDOG = float(os.environ.get("INTEROP_WATCHDOG_SECS", "75"))
VERSION_PREFIX = "ZooKeeper CLI version:"
JAVA_FRAME = re.compile(r"^\tat \S+\(.*\)\r?\n?$")


def client_argv(client, addr, extra=()):
    if client == "zkr":
        zkr = os.environ.get("ZKR_BIN")
        if not zkr:
            sys.exit("drive.py: ZKR_BIN is not set")
        return [zkr, "cli", "-server", addr] + list(extra)
    if client == "zkcli":
        return [os.environ.get("ZKCLI", "/usr/share/zookeeper/bin/zkCli.sh"), "-server", addr] + list(extra)
    sys.exit("drive.py: unknown client %r" % client)


def mask(text):
    out = []
    for line in text.splitlines(keepends=True):
        if JAVA_FRAME.match(line):
            continue  # the stack trace after zkCli's "Exception in thread" line
        if line.startswith(VERSION_PREFIX):
            line = VERSION_PREFIX + " (masked)\n"
        out.append(line)
    return "".join(out)


class Session:
    """A client process whose output is collected by a thread."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        self.buf = bytearray()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            chunk = self.p.stdout.read1(65536)
            if not chunk:
                return
            with self.lock:
                self.buf.extend(chunk)

    def text(self):
        with self.lock:
            return self.buf.decode("utf-8", "replace")

    def send(self, line):
        try:
            self.p.stdin.write((line + "\n").encode("utf-8"))
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def wait_for(self, count, needle, deadline):
        while time.monotonic() < deadline:
            if self.text().count(needle) >= count:
                return True
            if self.p.poll() is not None:
                return self.text().count(needle) >= count
            time.sleep(0.02)
        return False

    def finish(self, deadline):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            rc = self.p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        self.reader.join(timeout=5)
        return rc


def run_session(client, script, addr, proxy_port):
    deadline = time.monotonic() + WATCHDOG
    lines = open(script, encoding="utf-8").read().splitlines()
    fwd = None
    extra = []
    session = None
    failed = None
    for line in lines:
        if line.startswith("#!"):
            words = line[2:].split()
            if not words:
                continue
            what = words[0]
            if what == "proxy":
                host, port = addr.rsplit(":", 1)
                fwd = Forwarder(int(proxy_port), host, int(port))
                continue
            if what == "args":
                extra += words[1:]
                continue
            if session is None and what in ("wait", "cut", "restore"):
                failed = "directive %r before the first command" % line
                break
            if what == "wait":
                count, needle = int(words[1]), line[2:].split(None, 2)[2]
                if not session.wait_for(count, needle, deadline):
                    failed = "timed out waiting for %d x %r" % (count, needle)
                    break
            elif what == "cut":
                fwd.cut()
            elif what == "restore":
                fwd.restore()
            elif what == "sleep":
                time.sleep(float(words[1]))
            continue
        if line.startswith("#"):
            continue
        if session is None:
            target = fwd.addr if fwd else addr
            session = Session(client_argv(client, target, extra))
        session.send(line.replace("@SERVER@", fwd.addr if fwd else addr))
    if session is None:
        session = Session(client_argv(client, addr, extra))
    rc = session.finish(deadline)
    if fwd:
        fwd.close()
    sys.stdout.write(mask(session.text()))
    if rc is None:
        print("--- watchdog: the client did not exit within %ss" % WATCHDOG)
        return 1
    print("--- exit %d" % rc)
    if failed:
        print("drive.py: " + failed, file=sys.stderr)
        return 1
    return 0


def run_oneshots(client, script, addr):
    deadline = time.monotonic() + WATCHDOG
    for line in open(script, encoding="utf-8").read().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        print("--- $ " + line)
        sys.stdout.flush()
        argv = client_argv(client, addr) + shlex.split(line.replace("@SERVER@", addr))
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print("--- watchdog: %r did not exit" % line)
            return 1
        sys.stdout.write(mask(p.stdout.decode("utf-8", "replace")))
        print("--- exit %d" % p.returncode)
    return 0


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    client, script, addr, proxy_port = argv[1:]
    sys.stdout.reconfigure(encoding="utf-8")
    if script.endswith(".oneshot"):
        return run_oneshots(client, script, addr)
    return run_session(client, script, addr, proxy_port)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
