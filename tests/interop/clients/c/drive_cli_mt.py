#!/usr/bin/python3
"""Drives the ZooKeeper C client's `cli_mt` (Debian zookeeper-bin) through its stdin commands.

    drive_cli_mt.py --list
    drive_cli_mt.py SCENARIO HOST:PORT

Each scenario runs one or more cli_mt processes (each its own session) and prints a JSON-lines
transcript: one object per command with the lines cli_mt printed for it, and one per awaited
watch event. Timings, dates and session ids are dropped; zxids and ephemeral owners become JSON
numbers so that lib/compare.py normalises them like the other clients' transcripts. Exits
non-zero if cli_mt cannot connect, dies, or an awaited watch event never arrives.
"""

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

CLI_MT = os.environ.get("CLI_MT", "/usr/lib/zookeeper/bin/cli_mt")
DROP = re.compile(r"^time = \d+ msec$|^\s*[cm]time ?=|^Got a new session id|ZOO_(INFO|DEBUG|WARN|ERROR)|"
                  r"^Watcher SESSION_EVENT state = CONNECTED_STATE$|^Quitting|^$")
ZXID = re.compile(r"^\s*([cm]zxid)=([0-9a-f]+)$")
OWNER = re.compile(r"^\s*ephemeralOwner = ([0-9a-f]+)$")
EVENT = re.compile(r"^Watcher (\w+) state = (\w+)( for path (.*))?$")


def emit(step, **kw):
    sys.stdout.write(json.dumps(dict(step=step, **kw), sort_keys=True) + "\n")
    sys.stdout.flush()


def fail(msg):
    sys.stderr.write("FATAL: %s\n" % msg)
    sys.stderr.flush()
    os._exit(1)


def parse(line):
    """One cli_mt output line as a transcript value (str, or a dict for zxids/owners)."""
    m = ZXID.match(line)
    if m:
        return {m.group(1): int(m.group(2), 16)}
    m = OWNER.match(line)
    if m:
        return {"ephemeralOwner": int(m.group(1), 16)}
    return line.strip()


class Cli:
    """One cli_mt process = one session. Output lines are read by a thread into a queue."""

    def __init__(self, name, addr):
        self.name = name
        self.p = subprocess.Popen(["stdbuf", "-oL", "-eL", CLI_MT, addr], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.q = queue.Queue()
        self.pending = []
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.time() + 20
        while True:
            line = self._next(deadline - time.time())
            if line is None:
                fail("%s: no session within 20s" % name)
            if line.startswith("Got a new session id"):
                break

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def _next(self, timeout):
        try:
            return self.q.get(timeout=max(timeout, 0.01))
        except queue.Empty:
            return None

    def _drain(self, first_wait, quiet=0.4):
        """Collects lines: waits up to first_wait for the first one, then until `quiet` s pass without one."""
        got = []
        line = self._next(first_wait)
        while line is not None:
            got.append(line)
            line = self._next(quiet)
        if self.p.poll() is not None and self.p.returncode not in (0, None) and not got:
            fail("%s: cli_mt exited with %s" % (self.name, self.p.returncode))
        self.pending += [x for x in got if not DROP.search(x)]

    def _sync(self, timeout=20.0):
        """Sends `sync /` and reads until its completion. cli_mt prints every asynchronous completion
        from its single completion thread in reply order, so everything the earlier commands print
        is in by then."""
        self.p.stdin.write("sync /\n")
        self.p.stdin.flush()
        deadline = time.time() + timeout
        got = []
        while True:
            line = self._next(deadline - time.time())
            if line is None:
                fail("%s: no reply to the `sync /` marker within %ss (got %r)" % (self.name, timeout, got))
            if line == "\tname = /" and got and got[-1] == "[/]: rc = 0":
                got.pop()
                break
            got.append(line)
        self.pending += [x for x in got if not DROP.search(x)]

    def cmd(self, command):
        """Runs a command; records it with the non-event lines printed since the last step."""
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        self._sync()
        lines = [x for x in self.pending if not EVENT.match(x)]
        # child names (tab-indented, no "=") come in ZooKeeper's hash-set order: sorted here
        names = sorted(x for x in lines if x.startswith("\t") and "=" not in x)
        it = iter(names)
        out = [parse(next(it) if x.startswith("\t") and "=" not in x else x) for x in lines]
        self.pending = [x for x in self.pending if EVENT.match(x)]
        emit("%s: %s" % (self.name, command), out=out)

    def event(self, label, n=1, timeout=10.0, ordered=True):
        """Waits for n watch events (lines "Watcher TYPE state = S for path P") and records them."""
        deadline = time.time() + timeout
        while sum(1 for x in self.pending if EVENT.match(x)) < n and time.time() < deadline:
            self._drain(deadline - time.time(), quiet=0.1)
        evs = [x for x in self.pending if EVENT.match(x)]
        if len(evs) < n:
            fail("%s: %s: expected %d watch event(s), got %r" % (self.name, label, n, evs))
        self._drain(0.3, quiet=0.1)  # an extra event would show up here
        evs = [x for x in self.pending if EVENT.match(x)]
        self.pending = [x for x in self.pending if not EVENT.match(x)]
        evs = [list(EVENT.match(x).group(1, 2, 4)) for x in evs]
        if ordered:
            emit("%s: %s" % (self.name, label), events=evs)
        else:  # compare.py sorts this key: the order is not defined
            emit("%s: %s" % (self.name, label), events_unordered=evs)

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        try:
            self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("%s: cli_mt did not quit" % self.name)


def cleanup(c, root, kids):
    for k in kids:
        c.p.stdin.write("delete %s/%s\n" % (root, k))
    c.p.stdin.write("delete %s\n" % root)
    c.p.stdin.flush()
    c._sync()
    c.pending = []


def sc_crud(addr):
    R = "/c_crud"
    a = Cli("A", addr)
    cleanup(a, R, ["a", "e", "s-0000000001", "s-0000000002"])
    for command in ["create %s" % R, "create %s" % R, "create %s/x/y" % R, "create %s/a" % R,
                    "set %s/a hello" % R, "get %s/a" % R, "exists %s/a" % R, "exists %s/missing" % R,
                    "get %s/missing" % R, "create +s %s/s-" % R, "create +s %s/s-" % R, "ls %s" % R,
                    "ls2 %s" % R, "create2 %s/e" % R, "sync %s" % R, "delete %s" % R,
                    "delete %s/a" % R, "delete %s/a" % R, "delete %s/e" % R, "delete %s/s-0000000001" % R,
                    "delete %s/s-0000000002" % R, "delete %s" % R, "exists %s" % R]:
        a.cmd(command)
    a.quit()


def sc_watches(addr):
    R = "/c_watch"
    c = Cli("C", addr)
    w = Cli("W", addr)
    cleanup(c, R, ["n", "later", "kid"])
    c.cmd("create %s" % R)
    c.cmd("create %s/n" % R)
    w.cmd("get %s/n" % R)        # cli_mt's get sets a data watch
    c.cmd("set %s/n v1" % R)
    w.event("data changed")
    c.cmd("set %s/n v2" % R)     # one-shot: no second event
    w.cmd("wexists %s/later" % R)
    c.cmd("create %s/later" % R)
    w.event("created")
    w.cmd("ls %s" % R)           # ls sets a child watch
    c.cmd("create %s/kid" % R)
    w.event("child added")
    w.cmd("ls %s" % R)
    c.cmd("delete %s/kid" % R)
    w.event("child removed")
    w.cmd("get %s/n" % R)
    c.cmd("delete %s/n" % R)
    w.event("deleted")
    c.cmd("delete %s/later" % R)
    c.cmd("delete %s" % R)
    w.event("none left", n=0, timeout=0.5)
    w.quit()
    c.quit()


def sc_ephemerals(addr):
    R = "/c_eph"
    o = Cli("Obs", addr)
    cleanup(o, R, ["e", "p"])
    o.cmd("create %s" % R)
    a = Cli("Owner", addr)
    a.cmd("create +e %s/e" % R)
    a.cmd("create +e %s/e/child" % R)
    a.cmd("create +es %s/es-" % R)
    o.cmd("exists %s/e" % R)
    o.cmd("wexists %s/e" % R)
    o.cmd("ls %s" % R)
    a.quit()                     # zookeeper_close: closeSession removes the ephemerals
    # ephemerals go in an undefined order, so the child event may come before or after the data event
    o.event("owner closed", n=2, ordered=False)
    o.cmd("ls %s" % R)
    o.cmd("delete %s" % R)
    o.quit()


SCENARIOS = {"crud": sc_crud, "watches": sc_watches, "ephemerals": sc_ephemerals}


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(SCENARIOS))
        return 0
    if len(sys.argv) != 3 or sys.argv[1] not in SCENARIOS:
        sys.stderr.write(__doc__)
        return 2
    if not os.access(CLI_MT, os.X_OK):
        fail("%s not found (Debian package zookeeper-bin)" % CLI_MT)
    threading.Timer(90, lambda: fail("watchdog: scenario took longer than 90s")).start()
    SCENARIOS[sys.argv[1]](sys.argv[2])
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    os._exit(rc)
