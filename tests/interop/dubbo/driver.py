#!/usr/bin/python3
"""Unmodified Dubbo against Debian's ZooKeeper and against zkr, side by side.

    driver.py --label "Dubbo 3.3.6 (...)" --cp CLASSPATH --zkr-bin BIN --port-base 28000 \
              --work DIR --tsv FILE

Two sides run the same scenario in lockstep: "zookeeper" (Debian's ZooKeeper) and "zkr". Each side has two
servers: one for the plain Dubbo instances and one for the digest-auth instances
(zookeeper://zkr:secret@...), so that every znode of the auth world is created by an authenticated Dubbo
with its CREATOR_ALL ACL. Every Dubbo process (Node.java) hosts one plain and one auth instance.

Steps: p1 and the consumer start; p2 joins; p2 is SIGKILLed; p3 joins; the servers are restarted while the
consumer keeps calling; a configurators rule written with zkCli disables p3, then is removed; p3 is stopped
with SIGTERM; everything is stopped. Every step is checked on both sides (see CHECKS) and timed; the timeline
is printed side by side, one line per check goes to the TSV, and the exit status is 1 if any check failed on
either side (a check that fails on ZooKeeper too means the scenario or the machine is broken).
"""

import argparse
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError

USER, PASSWORD = "zkr", "secret"
# p2, the provider that is SIGKILLed, has a short session so that its expiry comes soon; everyone else has a
# longer one, so that a server restart (a cold ZooKeeper JVM takes seconds) stays well inside it: Curator gives a
# session up by itself once it has been SUSPENDED for the whole session timeout.
SESSION_SHORT_MS = 4000
SESSION_MS = 15000
# "at once" for a graceful shutdown: far below any session timeout in play, so it cannot be an expiry
AT_ONCE_S = 5.0
SIDES = ("zookeeper", "zkr")
MODES = ("plain", "auth")
IFACE = {"plain": "zkr.interop.dubbo.Greeter", "auth": "zkr.interop.dubbo.SecureGreeter"}
PAPP = {"plain": "zkr-interop-provider", "auth": "zkr-interop-provider-auth"}
ZK_BIN_DIR = "/usr/share/zookeeper/bin"
# Debian's zkEnv.sh gives ZooKeeper no SLF4J binding, so it logs nothing; zkServer.sh puts SERVER_JVMFLAGS
# after its own -cp and the last -cp wins, so this adds slf4j-simple (see tests/interop/lib/servers.sh).
ZK_LOGGING_FLAGS = ("-cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
                    " -Dorg.slf4j.simpleLogger.showDateTime=true")
JAVA_OPTS = [
    "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx256m",
    # Dubbo registers the host's first non-loopback address unless every interface is ignored
    "-Ddubbo.network.interface.ignored=.*",
    "-Ddubbo.service.shutdown.wait=2000",
    # with every interface ignored, each NetUtils.getLocalHost() logs a warning with a stack trace
    "-Dorg.slf4j.simpleLogger.log.org.apache.dubbo.common.utils.NetUtils=error",
    "-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
]

# (id, feature as printed and written to the TSV); each is checked per mode (plain, auth) on both sides,
# except those in ONLY_AUTH
CHECKS = [
    ("reg_iface", "provider registers: /dubbo/<iface>/providers"),
    ("reg_app", "provider registers: /services/<app> (application-level discovery)"),
    ("discover", "consumer discovers it (both directories); 100 calls succeed"),
    ("tree", "znode tree after registration (paths, ephemeral flag, ACLs) equals ZooKeeper's"),
    ("noauth", "ACLs: unauthenticated client gets the same answers (NoAuth where ZooKeeper says so)"),
    ("join", "second provider joins: both directories list it; calls spread over both"),
    ("kill_kept", "SIGKILLed provider: its nodes stay until the session expires"),
    ("kill_gone", "SIGKILLed provider: nodes gone after the session timeout"),
    ("kill_consumer", "SIGKILLed provider: consumer drops it; 100 calls succeed on the rest"),
    ("restart_exact", "server restart: exact providers, /services and consumers nodes, nothing twice or lost"),
    ("restart_sessions", "server restart: Dubbo's sessions survive (same ephemeralOwner)"),
    ("restart_calls", "server restart: calls keep succeeding during and after recovery"),
    ("restart_tree", "znode tree after recovery equals ZooKeeper's"),
    ("rule_on", "configurators rule written with zkCli (weight=0 for p3) reaches the consumer; calls avoid p3"),
    ("rule_off", "configurators rule deleted: the override goes away; calls reach p3 again"),
    ("graceful", "provider stopped with SIGTERM: nodes gone at once (long before the session timeout)"),
    ("graceful_consumer", "provider stopped with SIGTERM: consumer drops it; 100 calls succeed"),
    ("shutdown", "everything stopped gracefully: no ephemeral node left"),
    ("final_tree", "znode tree at the end equals ZooKeeper's"),
]


# checks that only mean something with digest auth (the plain world has world ACLs: nothing to deny)
ONLY_AUTH = {"noauth": ("auth",)}


def say(msg):
    print(f"[dubbo] {msg}", file=sys.stderr, flush=True)


class Fatal(Exception):
    """A step cannot go on (a process did not start): the remaining checks are reported as not run."""


# ------------------------------------------------------------------------------------------------ servers


class Server:
    """A ZooKeeper (Debian's, via zkServer.sh start-foreground) or a zkr, with a data dir kept across restarts."""

    def __init__(self, side, mode, port, work, zkr_bin):
        self.side, self.mode, self.port = side, mode, port
        self.dir = os.path.join(work, f"{side}-{mode}")
        self.zkr_bin = zkr_bin
        self.proc = None
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        with open(os.path.join(self.dir, "zoo.cfg"), "w") as f:
            f.write(
                "tickTime=500\ninitLimit=10\nsyncLimit=5\nminSessionTimeout=1000\nmaxSessionTimeout=20000\n"
                f"maxClientCnxns=0\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                f"dataDir={self.dir}/data\nadmin.enableServer=false\n4lw.commands.whitelist=*\n"
            )

    def start(self):
        log = open(os.path.join(self.dir, "server.log"), "a")
        cfg = os.path.join(self.dir, "zoo.cfg")
        if self.side == "zookeeper":
            env = dict(os.environ, ZOOCFGDIR=self.dir, ZOO_LOG_DIR=self.dir, ZOOPIDFILE=f"{self.dir}/pid",
                       JMXDISABLE="true",
                       SERVER_JVMFLAGS=f"{ZK_LOGGING_FLAGS} -Xmx256m -XX:+UseSerialGC -Dzookeeper.log.dir={self.dir}")
            # start-foreground execs the JVM, so this pid is the server's
            cmd = [f"{ZK_BIN_DIR}/zkServer.sh", "start-foreground", cfg]
        else:
            env = dict(os.environ)
            cmd = [self.zkr_bin, "serve", "--config", cfg, "--data-dir", f"{self.dir}/data"]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    def ready(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(16) == b"imok"
        except OSError:
            return False

    def wait_ready(self, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if self.ready():
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        return False

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, n=15):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


# ------------------------------------------------------------------------------------------------ Dubbo processes


class Jvm:
    """A Node.java process; its stdout lines are kept with the time they were read."""

    def __init__(self, side, role, name, instances, cp, work, java_opts):
        self.side, self.role, self.name = side, role, name
        self.errlog = os.path.join(work, f"{side}-{name}.log")
        self.lines = []
        self.cv = threading.Condition()
        self.proc = subprocess.Popen(
            ["java", *JAVA_OPTS, *java_opts, "-cp", cp, "zkr.interop.dubbo.Node", role, name, *instances],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.errlog, "w"), text=True, bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append((time.time(), line.rstrip("\n")))
                self.cv.notify_all()
        with self.cv:
            self.lines.append((time.time(), "EOF"))
            self.cv.notify_all()

    def send(self, cmd):
        try:
            self.proc.stdin.write(cmd + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def wait_line(self, pred, start, timeout):
        """The first line at index >= start that satisfies pred, or None after timeout (or at EOF)."""
        end = time.time() + timeout
        i = start
        with self.cv:
            while True:
                while i < len(self.lines):
                    t, line = self.lines[i]
                    i += 1
                    if pred(line):
                        return line
                    if line == "EOF":
                        return None
                left = end - time.time()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def mark(self):
        with self.cv:
            return len(self.lines)

    def snapshot(self):
        with self.cv:
            return list(self.lines)

    def signal(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def err_tail(self, n=8):
        try:
            with open(self.errlog, errors="replace") as f:
                lines = [ln for ln in f if "ERROR" in ln or "Exception" in ln]
            return "".join(lines[-n:])
        except OSError:
            return ""


# ------------------------------------------------------------------------------------------------ the scenario


class Scenario:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        os.makedirs(self.work, exist_ok=True)
        base = args.port_base
        self.servers = {}
        self.ports = {}  # side -> {port: provider name}
        self.dport = {}  # (side, mode, provider) -> dubbo port
        for si, side in enumerate(SIDES):
            self.ports[side] = {}
            for mi, mode in enumerate(MODES):
                self.servers[(side, mode)] = Server(side, mode, base + 1 + si * 10 + mi, self.work, args.zkr_bin)
                for pi, p in enumerate(("p1", "p2", "p3")):
                    port = base + 100 + si * 50 + mi * 10 + pi + 1
                    self.dport[(side, mode, p)] = port
                    self.ports[side][port] = p
        self.obs = {}  # (side, mode) -> kazoo client (authenticated on the auth servers)
        self.jvms = {side: {} for side in SIDES}
        self.timeline = []  # (step, mode, what, {side: text})
        self.results = {}  # (check id, mode) -> {side: (ok, note)}
        self.step_name = ""

    # -------------------------------------------------------------- recording

    def step(self, name):
        self.step_name = name
        say(name)
        self.timeline.append((name, None, None, {}))
        return time.time()

    def tl(self, mode, what, per_side):
        self.timeline.append((self.step_name, mode, what, dict(per_side)))

    def check(self, cid, mode, side, ok, note=""):
        self.results.setdefault((cid, mode), {})[side] = (bool(ok), note)

    # -------------------------------------------------------------- observing the servers

    def registry_url(self, side, mode, session_ms):
        port = self.servers[(side, mode)].port
        auth = f"{USER}:{PASSWORD}@" if mode == "auth" else ""
        return f"zookeeper://{auth}127.0.0.1:{port}?session={session_ms}"

    def instance(self, side, mode, provider=None):
        session = SESSION_SHORT_MS if provider == "p2" else SESSION_MS
        spec = f"{mode}|{self.registry_url(side, mode, session)}"
        return spec + (f"|{self.dport[(side, mode, provider)]}" if provider else "")

    def name_of(self, side, text):
        """Replaces 127.0.0.1:<dubbo port> by the provider's name (p1, p2, p3)."""
        return re.sub(r"127\.0\.0\.1:(\d+)", lambda m: self.ports[side].get(int(m.group(1)), m.group(0)), text)

    def kids(self, side, mode, path):
        """Children of path, None when the server cannot be asked right now."""
        try:
            return self.obs[(side, mode)].get_children(path)
        except NoNodeError:
            return []
        except Exception:  # connection loss while a server restarts
            return None

    def providers(self, side, mode):
        k = self.kids(side, mode, f"/dubbo/{IFACE[mode]}/providers")
        if k is None:
            return None
        return sorted(self.name_of(side, urllib.parse.urlsplit(urllib.parse.unquote(c)).netloc) for c in k)

    def services(self, side, mode):
        k = self.kids(side, mode, f"/services/{PAPP[mode]}")
        return None if k is None else sorted(self.name_of(side, c) for c in k)

    def consumers(self, side, mode):
        k = self.kids(side, mode, f"/dubbo/{IFACE[mode]}/consumers")
        return None if k is None else ["c"] * len(k)

    def owners(self, side, mode):
        """ephemeralOwner of every Dubbo ephemeral of this mode, by node kind and name."""
        out = {}
        kz = self.obs[(side, mode)]
        for kind, path, fn in (("providers", f"/dubbo/{IFACE[mode]}/providers", self.providers),
                               ("services", f"/services/{PAPP[mode]}", self.services),
                               ("consumers", f"/dubbo/{IFACE[mode]}/consumers", None)):
            for c in self.kids(side, mode, path) or []:
                try:
                    st = kz.exists(f"{path}/{c}")
                except Exception:
                    st = None
                if kind == "consumers":
                    name = "c"
                elif kind == "providers":
                    name = self.name_of(side, urllib.parse.urlsplit(urllib.parse.unquote(c)).netloc)
                else:
                    name = self.name_of(side, c)
                out[f"{kind}/{name}"] = st.ephemeralOwner if st else None
        return out

    def tree(self, side, mode):
        """Every node under /dubbo and /services: normalised path -> (ephemeral, ACL)."""
        kz = self.obs[(side, mode)]
        out = {}

        def norm(path):
            parts = []
            for comp in path.split("/")[1:]:
                d = urllib.parse.unquote(comp)
                if "://" in d:
                    u = urllib.parse.urlsplit(d)
                    d = f"{u.scheme}://{u.netloc}{u.path}"
                parts.append(self.name_of(side, d))
            return "/" + "/".join(parts)

        def walk(path):
            try:
                acl, st = kz.get_acls(path)
                kids = kz.get_children(path)
            except NoNodeError:
                return
            except NoAuthError:
                out[norm(path)] = "NoAuth"
                return
            acls = ",".join(sorted(f"{a.id.scheme}:{a.id.id}:{a.perms}" for a in acl))
            out[norm(path)] = f"{'ephemeral' if st.ephemeralOwner else 'persistent'} {acls}"
            for k in kids:
                walk(f"{path}/{k}")

        for root in ("/dubbo", "/services"):
            walk(root)
        return out

    def compare_trees(self, cid, label):
        for mode in MODES:
            trees = {}
            for side in SIDES:
                try:
                    trees[side] = self.tree(side, mode)
                except Exception as e:  # noqa: BLE001 - reported as a failed check
                    trees[side] = {"<error>": repr(e)}
            ref, got = trees["zookeeper"], trees["zkr"]
            diff = [f"{p}: zookeeper={ref.get(p)} zkr={got.get(p)}"
                    for p in sorted(set(ref) | set(got)) if ref.get(p) != got.get(p)]
            with open(os.path.join(self.work, f"tree-{label}-{mode}.txt"), "w") as f:
                for side in SIDES:
                    f.write(f"== {side}\n")
                    for p in sorted(trees[side]):
                        f.write(f"{p}  {trees[side][p]}\n")
            note = f"{len(ref)} nodes" if not diff else f"{len(diff)} differ, e.g. {diff[0]}"
            self.check(cid, mode, "zookeeper", bool(ref) and "<error>" not in ref, f"{len(ref)} nodes")
            self.check(cid, mode, "zkr", not diff, note)
            self.tl(mode, f"znode tree ({label})", {"zookeeper": f"{len(ref)} nodes",
                                                    "zkr": "same" if not diff else f"{len(diff)} differ"})

    # -------------------------------------------------------------- the consumer's view

    def dirs(self, side, mode):
        """The consumer's last reported directories: (iface names, app names, which one in use)."""
        c = self.jvms[side].get("c")
        if c is None:
            return None
        last = None
        for _, line in c.snapshot():
            if line.startswith(f"DIR {mode} "):
                last = line
        if last is None:
            return None
        m = re.match(r"DIR \S+ \d+ iface=\[(.*?)\] app=\[(.*?)\] use=(\S+)", last)
        if not m:
            return ("?", "?", last)

        def names(s):
            return sorted(self.name_of(side, a) for a in s.split(",") if a)

        return names(m.group(1)), names(m.group(2)), m.group(3)

    def dir_is(self, side, mode, want):
        d = self.dirs(side, mode)
        return d is not None and d[0] == want and d[1] == want

    def ticks(self, side, mode, t0, t1):
        """Background calls reported between t0 and t1: (ok, fail, {provider: n}, errors)."""
        ok = fail = 0
        by, errs = {}, set()
        c = self.jvms[side].get("c")
        for _, line in (c.snapshot() if c else []):
            m = re.match(rf"TICK {mode} (\d+) ok=(\d+) fail=(\d+) by=(\S+) err=(\S+)", line)
            if not m or not (t0 <= int(m.group(1)) / 1000 <= t1):
                continue
            ok += int(m.group(2))
            fail += int(m.group(3))
            if m.group(4) != "-":
                for kv in m.group(4).split(","):
                    k, v = kv.split(":")
                    by[k] = by.get(k, 0) + int(v)
            if m.group(5) != "-":
                errs.add(m.group(5))
        return ok, fail, by, errs

    def calls(self, n=100):
        """n synchronous calls per side and mode: {(side, mode): (ok, fail, {provider: n}, err)}."""
        out = {}
        pending = []
        for side in SIDES:
            c = self.jvms[side].get("c")
            for mode in MODES:
                if c is None:
                    out[(side, mode)] = (0, n, {}, "no consumer")
                    continue
                pending.append((side, mode, c, c.mark()))
                c.send(f"call {mode} {n}")
        for side, mode, c, start in pending:
            line = c.wait_line(lambda ln, m=mode: ln.startswith(f"CALLS {m} "), start, 120)
            if line is None:
                out[(side, mode)] = (0, n, {}, "no answer")
                continue
            m = re.match(r"CALLS \S+ ok=(\d+) fail=(\d+) by=(\S+) err=(\S+)", line)
            by = {}
            if m.group(3) != "-":
                by = {k: int(v) for k, v in (kv.split(":") for kv in m.group(3).split(","))}
            out[(side, mode)] = (int(m.group(1)), int(m.group(2)), by, m.group(4))
        return out

    def calls_check(self, cid, want, what):
        """100 calls that must all succeed and reach exactly the providers in want (each at least once)."""
        res = self.calls(100)
        for mode in MODES:
            texts = {}
            for side in SIDES:
                ok, fail, by, err = res[(side, mode)]
                good = ok == 100 and fail == 0 and sorted(by) == want
                by_s = ",".join(f"{k}:{v}" for k, v in sorted(by.items())) or "-"
                texts[side] = f"{ok} ok, {fail} failed ({by_s})" + ("" if err == "-" else f" {err}")
                self.check(cid, mode, side, good, texts[side])
            self.tl(mode, what, texts)
        return res

    # -------------------------------------------------------------- waiting

    def wait_until(self, what, t0, cond, timeout, modes=MODES):
        """Polls cond(side, mode) -> bool until it holds for every side and mode; returns {(side, mode): secs}."""
        return self.wait_many(t0, [(what, cond, timeout)], modes)[0]

    def wait_many(self, t0, items, modes=MODES):
        """Polls several (what, cond, timeout from now) at once, so that each one's time is its own; one
        {(side, mode): secs since t0} per item, without the pairs that did not get there in time."""
        start = time.time()
        pending = {(i, s, m) for i in range(len(items)) for s in SIDES for m in modes}
        got = [{} for _ in items]
        while pending:
            now = time.time()
            for key in sorted(pending):
                i, s, m = key
                if now > start + items[i][2]:
                    pending.discard(key)
                    continue
                try:
                    ok = items[i][1](s, m)
                except Exception:  # noqa: BLE001 - a server being restarted; try again
                    ok = False
                if ok:
                    got[i][(s, m)] = time.time() - t0
                    pending.discard(key)
            if pending:
                time.sleep(0.05)
        for i, (what, _, timeout) in enumerate(items):
            for mode in modes:
                self.tl(mode, what, {s: (f"+{got[i][(s, mode)]:.1f}s" if (s, mode) in got[i] else
                                         f"not within {timeout:.0f}s") for s in SIDES})
        return got

    def start_jvms(self, name, role, provider=None, wait=False):
        """wait: the process is configured but registers only on "go" (see go())."""
        for side in SIDES:
            inst = (["--wait"] if wait else []) + [self.instance(side, m, provider) for m in MODES]
            self.jvms[side][name] = Jvm(side, role, name, inst, self.args.cp, self.work, self.args.java_opt)

    def go(self, name):
        for side in SIDES:
            j = self.jvms[side][name]
            if j.wait_line(lambda ln: ln == "WAITING" or ln.startswith("ERROR"), 0, 120) != "WAITING":
                raise Fatal(f"{side}: Dubbo {name} did not start:\n{j.snapshot()[-3:]}\n{j.err_tail()}")
            j.send("go")

    def wait_ready(self, names, timeout=120):
        for side in SIDES:
            for name in names:
                j = self.jvms[side][name]
                if j.wait_line(lambda ln: ln == "READY ALL" or ln.startswith("ERROR"), 0, timeout) != "READY ALL":
                    raise Fatal(f"{side}: Dubbo {name} did not start:\n{j.snapshot()[-3:]}\n{j.err_tail()}")

    # -------------------------------------------------------------- steps

    def run(self):
        try:
            self.setup()
            self.s1_register()
            self.s2_join()
            self.s3_sigkill()
            self.s4_third()
            self.s5_restart()
            self.s6_rule()
            self.s7_graceful()
            self.s8_shutdown()
        except Fatal as e:
            say(f"FATAL: {e}")
            self.fatal = str(e).splitlines()[0]
        finally:
            self.teardown()

    def setup(self):
        self.step("0 servers start")
        for s in self.servers.values():
            s.start()
        for (side, mode), s in self.servers.items():
            if not s.wait_ready():
                raise Fatal(f"{side} ({mode}) did not start on port {s.port}:\n{s.log_tail()}")
        self.connect_observers()

    def connect_observers(self):
        """One kazoo client per server (authenticated on the auth servers) to look at the nodes Dubbo makes."""
        for kz in self.obs.values():
            try:
                kz.stop()
                kz.close()
            except Exception:  # noqa: BLE001 - an observer of a restarted server
                pass
        for (side, mode), s in self.servers.items():
            auth = [("digest", f"{USER}:{PASSWORD}")] if mode == "auth" else None
            kz = KazooClient(hosts=f"127.0.0.1:{s.port}", auth_data=auth, timeout=10)
            kz.start(timeout=30)
            self.obs[(side, mode)] = kz

    def s1_register(self):
        t0 = self.step("1 provider p1 and the consumer start")
        self.start_jvms("p1", "provider", "p1")
        self.start_jvms("c", "consumer")
        self.wait_ready(["p1", "c"])
        # times from the start of the step: JVM start-up and Dubbo's bootstrap included
        got_p, got_s, got = self.wait_many(t0, [
            ("p1 in /dubbo/<iface>/providers", lambda s, m: self.providers(s, m) == ["p1"], 30),
            ("p1 in /services/<app>", lambda s, m: self.services(s, m) == ["p1"], 30),
            ("consumer directories list p1", lambda s, m: self.dir_is(s, m, ["p1"]), 30)])
        for (s, m) in ((s, m) for s in SIDES for m in MODES):
            self.check("reg_iface", m, s, (s, m) in got_p, f"{self.providers(s, m)}")
            self.check("reg_app", m, s, (s, m) in got_s, f"{self.services(s, m)}")
        res = self.calls_check("discover", ["p1"], "100 calls")
        for (s, m) in ((s, m) for s in SIDES for m in MODES):
            if (s, m) not in got:
                self.check("discover", m, s, False, f"directories: {self.dirs(s, m)}")
        # the consumer's own nodes and the metadata it reports land asynchronously: wait for them, then compare
        self.wait_until("consumer in /dubbo/<iface>/consumers", t0, lambda s, m: self.consumers(s, m) == ["c"], 30)
        self.compare_trees("tree", "registered")
        self.noauth()
        return res

    def noauth(self):
        """What an unauthenticated client gets from the auth servers, which only Dubbo with digest auth wrote."""
        paths = ["/dubbo", f"/dubbo/{IFACE['auth']}/providers", f"/services/{PAPP['auth']}", "/dubbo/config/dubbo"]
        answers = {}
        for side in SIDES:
            kz = KazooClient(hosts=f"127.0.0.1:{self.servers[(side, 'auth')].port}", timeout=10)
            kz.start(timeout=30)
            out = []
            for p in paths:
                for op, fn in (("ls", kz.get_children), ("get", kz.get)):
                    try:
                        r = fn(p)
                        out.append(f"{op} {p}: ok ({len(r) if op == 'ls' else 'data'})")
                    except NoAuthError:
                        out.append(f"{op} {p}: NoAuth")
                    except NoNodeError:
                        out.append(f"{op} {p}: NoNode")
            try:
                kz.create(f"/dubbo/{IFACE['auth']}/providers/intruder", b"x", ephemeral=True)
                out.append("create under providers: ok")
            except NoAuthError:
                out.append("create under providers: NoAuth")
            except Exception as e:  # noqa: BLE001
                out.append(f"create under providers: {type(e).__name__}")
            kz.stop()
            kz.close()
            answers[side] = out
        ref, got = answers["zookeeper"], answers["zkr"]
        denied = sum("NoAuth" in a for a in ref)
        self.check("noauth", "auth", "zookeeper", all("NoAuth" in a for a in ref),
                   f"{denied}/{len(ref)} NoAuth")
        diff = [f"{a} / {b}" for a, b in zip(ref, got) if a != b]
        self.check("noauth", "auth", "zkr", not diff, f"{len(ref) - len(diff)}/{len(ref)} same" +
                   (f"; first difference (zookeeper / zkr): {diff[0]}" if diff else ""))
        self.tl("auth", "unauthenticated ls/get/create", {"zookeeper": f"{denied}/{len(ref)} NoAuth",
                                                          "zkr": "same" if not diff else diff[0]})

    def s2_join(self):
        t0 = self.step("2 provider p2 joins")
        self.start_jvms("p2", "provider", "p2")
        self.wait_ready(["p2"])
        self.wait_until("p2 registered (providers and /services)", t0,
                        lambda s, m: self.providers(s, m) == ["p1", "p2"] and self.services(s, m) == ["p1", "p2"], 30)
        got = self.wait_until("consumer directories list p1, p2", t0,
                              lambda s, m: self.dir_is(s, m, ["p1", "p2"]), 30)
        self.calls_check("join", ["p1", "p2"], "100 calls")
        for (s, m) in ((s, m) for s in SIDES for m in MODES):
            if (s, m) not in got:
                self.check("join", m, s, False, f"directories: {self.dirs(s, m)}")

    def s3_sigkill(self):
        t0 = self.step(f"3 p2 is killed with SIGKILL (its session timeout: {SESSION_SHORT_MS} ms)")
        for side in SIDES:
            self.jvms[side]["p2"].signal(signal.SIGKILL)
        # p3's JVM starts now, while the session expires: it registers in step 4
        self.start_jvms("p3", "provider", "p3", wait=True)
        time.sleep(max(0.0, t0 + 1.0 - time.time()))
        for s in SIDES:
            for m in MODES:
                p, v = self.providers(s, m), self.services(s, m)
                self.check("kill_kept", m, s, p == ["p1", "p2"] and v == ["p1", "p2"],
                           f"1 s after the kill: providers {p}, /services {v}")
        svc_ms = self.args.services_session_ms
        gone_p, gone_s = self.wait_many(t0, [
            ("p2 gone from /dubbo/<iface>/providers", lambda s, m: self.providers(s, m) == ["p1"],
             SESSION_SHORT_MS / 1000 + 20),
            (f"p2 gone from /services/<app> (session {svc_ms} ms)", lambda s, m: self.services(s, m) == ["p1"],
             svc_ms / 1000 + 20)])
        for s in SIDES:
            for m in MODES:
                tp, ts = gone_p.get((s, m)), gone_s.get((s, m))
                # a session expires between (timeout - time since the client's last ping) and timeout + a tick
                ok = (tp is not None and SESSION_SHORT_MS / 2000 <= tp <= SESSION_SHORT_MS / 1000 + 10
                      and ts is not None and svc_ms / 2000 <= ts <= svc_ms / 1000 + 10)
                fmt = lambda t: f"{t:.1f}s" if t is not None else "never"  # noqa: E731
                self.check("kill_gone", m, s, ok, f"gone after {fmt(tp)} (providers), {fmt(ts)} (/services)")
        got = self.wait_until("consumer directories drop p2", t0, lambda s, m: self.dir_is(s, m, ["p1"]), 30)
        t1 = time.time()
        for m in MODES:
            texts = {}
            for s in SIDES:
                ok, fail, by, errs = self.ticks(s, m, t0, t1)
                texts[s] = f"{ok} ok, {fail} failed" + (f" ({','.join(sorted(errs))})" if errs else "")
            self.tl(m, "background calls meanwhile", texts)
        self.calls_check("kill_consumer", ["p1"], "100 calls")
        for (s, m) in ((s, m) for s in SIDES for m in MODES):
            if (s, m) not in got:
                self.check("kill_consumer", m, s, False, f"directories: {self.dirs(s, m)}")

    def s4_third(self):
        t0 = self.step("4 provider p3 joins")
        self.go("p3")
        self.wait_ready(["p3"])
        self.wait_until("p3 registered", t0, lambda s, m: self.providers(s, m) == ["p1", "p3"] and
                        self.services(s, m) == ["p1", "p3"], 30)
        self.wait_until("consumer directories list p1, p3", t0, lambda s, m: self.dir_is(s, m, ["p1", "p3"]), 30)
        self.calls(20)

    def exact(self, side, mode):
        return (self.providers(side, mode) == ["p1", "p3"] and self.services(side, mode) == ["p1", "p3"]
                and self.consumers(side, mode) == ["c"])

    def s5_restart(self):
        before = {(s, m): self.owners(s, m) for s in SIDES for m in MODES}
        t0 = self.step("5 the servers restart (SIGTERM, same data dir) while the consumer keeps calling")
        time.sleep(1.0)  # some background calls before the restart
        threads = [threading.Thread(target=srv.stop) for srv in self.servers.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        down = time.time()
        time.sleep(1.0)
        for srv in self.servers.values():
            srv.start()
        up = {}
        for key, srv in self.servers.items():
            if not srv.wait_ready(90):
                raise Fatal(f"{key} did not restart:\n{srv.log_tail()}")
            up[key] = time.time()
        for m in MODES:
            self.tl(m, "server down / up again", {s: f"+{down - t0:.1f}s / +{up[(s, m)] - t0:.1f}s" for s in SIDES})
        # fresh observers: kazoo's own reconnect backoff would otherwise be part of what is measured
        self.connect_observers()
        got = self.wait_until("exact nodes again (providers p1,p3; /services p1,p3; 1 consumer)", t0,
                              lambda s, m: self.exact(s, m), 60)
        dgot = self.wait_until("consumer directories list p1, p3", t0, lambda s, m: self.dir_is(s, m, ["p1", "p3"]),
                               30)
        # a late duplicate or loss (a second registration, Dubbo's retry timer) shows after a while
        time.sleep(3.0)
        for s in SIDES:
            for m in MODES:
                p, v, c = self.providers(s, m), self.services(s, m), self.consumers(s, m)
                ok = (s, m) in got and self.exact(s, m)
                self.check("restart_exact", m, s, ok, f"providers {p}, /services {v}, consumers {len(c or [])}")
        self.owners_before_restart = before
        self.sessions_kept("right after recovery")
        t1 = time.time()
        stats = {}
        for m in MODES:
            texts = {}
            for s in SIDES:
                stats[(s, m)] = self.ticks(s, m, t0, t1)
                ok, fail, by, errs = stats[(s, m)]
                texts[s] = f"{ok} ok, {fail} failed" + (f" ({','.join(sorted(errs))})" if errs else "")
            self.tl(m, "background calls during the restart", texts)
        res = self.calls(100)
        for m in MODES:
            texts = {}
            for s in SIDES:
                ok, fail, by, err = res[(s, m)]
                bok, bfail, _, _ = stats[(s, m)]
                good = (ok == 100 and fail == 0 and sorted(by) == ["p1", "p3"] and bok > 0 and bfail == 0
                        and (s, m) in dgot)
                by_s = ",".join(f"{k}:{v}" for k, v in sorted(by.items())) or "-"
                texts[s] = f"{ok} ok, {fail} failed ({by_s})"
                self.check("restart_calls", m, s, good,
                           f"during: {bok} ok, {bfail} failed; after: {texts[s]}" +
                           ("" if (s, m) in dgot else f"; directories {self.dirs(s, m)}"))
            self.tl(m, "100 calls after recovery", texts)
        self.compare_trees("restart_tree", "recovered")

    def zkcli(self, side, script):
        """Runs Debian's zkCli.sh with the script on stdin against this side's plain server."""
        port = self.servers[(side, "plain")].port
        env = dict(os.environ, CLIENT_JVMFLAGS="-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx128m")
        return subprocess.Popen([f"{ZK_BIN_DIR}/zkCli.sh", "-server", f"127.0.0.1:{port}"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env), script

    def rule_path(self, mode):
        return f"/dubbo/config/dubbo/{IFACE[mode]}::.configurators"

    def s6_rule(self):
        # weight=0 rather than disabled=true: Dubbo 3.3's application-level directory keeps a disabled provider's
        # (destroyed) invoker when the rule goes away, so calls never return to it, on ZooKeeper as on zkr
        t0 = self.step("6 a configurators rule (weight=0 for p3) is written with zkCli")
        procs = {}
        for side in SIDES:
            lines = []
            for mode in MODES:
                if mode == "auth":
                    lines += [f"connect 127.0.0.1:{self.servers[(side, 'auth')].port}",
                              f"addauth digest {USER}:{PASSWORD}"]
                rule = ("{configVersion: v3.0, scope: service, key: %s, enabled: true, configs: [{side: consumer, "
                        "addresses: ['0.0.0.0'], providerAddresses: ['127.0.0.1:%d'], parameters: {weight: '0'}}]}"
                        % (IFACE[mode], self.dport[(side, mode, "p3")]))
                acl = " auth::cdrwa" if mode == "auth" else ""
                lines.append(f'create {self.rule_path(mode)} "{rule}"{acl}')
            lines.append("quit")
            procs[side] = self.zkcli(side, "\n".join(lines) + "\n")
        for side, (p, script) in procs.items():
            try:
                out, _ = p.communicate(script, timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            with open(os.path.join(self.work, f"zkcli-{side}.out"), "w") as f:
                f.write(out)
            created = out.count("Created /dubbo/config/dubbo/")
            if created != 2:
                say(f"{side}: zkCli created {created} of 2 rules:\n" +
                    "\n".join(ln for ln in out.splitlines() if "INFO" not in ln and "WARN" not in ln)[-800:])
        self.tl("plain", "zkCli wrote the rules", {s: f"+{time.time() - t0:.1f}s" for s in SIDES})
        got = self.wait_until("consumer directories: p3 weight 0", t0,
                              lambda s, m: self.dir_is(s, m, ["p1", "p3(w=0)"]), 30)
        self.calls_check("rule_on", ["p1"], "100 calls")
        for (s, m) in ((s, m) for s in SIDES for m in MODES):
            if (s, m) not in got:
                self.check("rule_on", m, s, False, f"directories: {self.dirs(s, m)}")
        t0 = self.step("6b the rule is deleted (kazoo)")
        for s in SIDES:
            for m in MODES:
                try:
                    self.obs[(s, m)].delete(self.rule_path(m))
                except Exception as e:  # noqa: BLE001 - shows as a failed check below
                    say(f"{s}/{m}: deleting the rule failed: {e!r}")
        got = self.wait_until("consumer directories: p3 weight back", t0,
                              lambda s, m: self.dir_is(s, m, ["p1", "p3"]), 30)
        self.calls_check("rule_off", ["p1", "p3"], "100 calls")
        for (s, m) in ((s, m) for s in SIDES for m in MODES):
            if (s, m) not in got:
                self.check("rule_off", m, s, False, f"directories: {self.dirs(s, m)}")

    def sessions_kept(self, when):
        """Every Dubbo ephemeral still owned by the session that owned it before the restart. Checked right after
        recovery and again some seconds later: a server keeps a session whose client never re-attached until it
        expires, and a client (Curator) gives up a session that stayed SUSPENDED for its whole timeout."""
        before = self.owners_before_restart
        texts = {}
        for s in SIDES:
            bad = []
            for m in MODES:
                after = self.owners(s, m)
                if after != before[(s, m)] or None in after.values():
                    bad += [f"{m}:{k}" for k in sorted(set(before[(s, m)]) | set(after))
                            if before[(s, m)].get(k) != after.get(k) or after.get(k) is None]
                prev = self.results.get(("restart_sessions", m), {}).get(s, (True, ""))
                mine = [b for b in bad if b.startswith(f"{m}:")]
                note = f"{when}: " + ("same sessions" if not mine else f"changed: {mine}")
                self.check("restart_sessions", m, s, prev[0] and not mine,
                           (prev[1] + "; " if prev[1] else "") + note)
            texts[s] = "yes" if not bad else f"NO: {bad}"
        self.tl("plain", f"sessions kept ({when})", texts)

    def s7_graceful(self):
        self.sessions_kept("before step 7")
        t0 = self.step("7 p3 is stopped with SIGTERM (Dubbo's graceful shutdown)")
        for side in SIDES:
            self.jvms[side]["p3"].signal(signal.SIGTERM)
        gone = self.wait_until("p3's nodes gone", t0, lambda s, m: self.providers(s, m) == ["p1"] and
                               self.services(s, m) == ["p1"], SESSION_MS / 1000 + 20)
        for s in SIDES:
            for m in MODES:
                t = gone.get((s, m))
                ok = t is not None and t < AT_ONCE_S
                self.check("graceful", m, s, ok, f"gone after {t:.1f}s" if t is not None else "never gone")
        got = self.wait_until("consumer directories drop p3", t0, lambda s, m: self.dir_is(s, m, ["p1"]), 30)
        self.calls_check("graceful_consumer", ["p1"], "100 calls")
        for (s, m) in ((s, m) for s in SIDES for m in MODES):
            if (s, m) not in got:
                self.check("graceful_consumer", m, s, False, f"directories: {self.dirs(s, m)}")

    def s8_shutdown(self):
        t0 = self.step("8 the consumer and p1 stop gracefully")
        for side in SIDES:
            for name in ("c", "p1"):
                self.jvms[side][name].send("stop")
        got = self.wait_until("no ephemeral left", t0, lambda s, m: self.providers(s, m) == [] and
                              self.services(s, m) == [] and self.consumers(s, m) == [], SESSION_MS / 1000 + 20)
        for s in SIDES:
            for m in MODES:
                t = got.get((s, m))
                ok = t is not None and t < AT_ONCE_S
                self.check("shutdown", m, s, ok, f"after {t:.1f}s" if t is not None else
                           f"left: {self.providers(s, m)} {self.services(s, m)} {self.consumers(s, m)}")
        self.compare_trees("final_tree", "final")

    def teardown(self):
        for side in SIDES:
            for j in self.jvms[side].values():
                if j.proc.poll() is None:
                    j.send("stop")
        end = time.time() + 15
        for side in SIDES:
            for j in self.jvms[side].values():
                try:
                    j.proc.wait(max(0.1, end - time.time()))
                except subprocess.TimeoutExpired:
                    j.proc.kill()
                    j.proc.wait()
        for kz in self.obs.values():
            try:
                kz.stop()
                kz.close()
            except Exception:  # noqa: BLE001
                pass
        for s in self.servers.values():
            s.stop()

    # -------------------------------------------------------------- reporting

    def report(self):
        label = self.args.label
        width = 62
        print(f"\n== {label}: timeline (seconds from the start of each step)")
        print(f"{'':{width}}  {'zookeeper':30}  zkr")
        for step, mode, what, per in self.timeline:
            if mode is None:
                print(step)
                continue
            key = f"  [{mode}] {what}"
            print(f"{key:{width}}  {per.get('zookeeper', ''):30}  {per.get('zkr', '')}")
        passed = failed = ref_failed = 0
        rows = []
        fatal = getattr(self, "fatal", None)
        print(f"\n== {label}: checks (a check passes when zkr passes it; ZooKeeper's result is the reference)")
        if fatal:
            print(f"   the scenario stopped early: {fatal}")
        for cid, feature in CHECKS:
            for mode in ONLY_AUTH.get(cid, MODES):
                r = self.results.get((cid, mode), {})
                z = r.get("zookeeper", (False, "not run"))
                k = r.get("zkr", (False, "not run"))
                passed += k[0]
                failed += not k[0]
                ref_failed += not z[0]
                name = f"{'digest auth: ' if mode == 'auth' else ''}{feature}"
                flag = "PASS" if k[0] else "FAIL"
                print(f"{flag} [{mode}] {feature}" + ("" if z[0] else "   (ZooKeeper did not pass it)"))
                if not (k[0] and z[0]):
                    print(f"       zookeeper: {'ok' if z[0] else 'FAILED'} - {z[1]}")
                    print(f"       zkr:       {'ok' if k[0] else 'FAILED'} - {k[1]}")
                note = k[1] if k[1] == z[1] else f"zookeeper: {z[1]}; zkr: {k[1]}"
                rows.append((label, name, "pass" if z[0] else "fail", "pass" if k[0] else "fail", note))
        os.makedirs(os.path.dirname(os.path.abspath(self.args.tsv)), exist_ok=True)
        with open(self.args.tsv, "w") as f:
            for row in rows:
                f.write("\t".join(c.replace("\t", " ").replace("\n", " ") for c in row) + "\n")
        if ref_failed:
            print(f"{label}: ZooKeeper itself did not pass {ref_failed} of these checks in this run (see above)")
        print(f"{label}: {passed} passed, {failed} failed")
        return passed, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--label", required=True)
    ap.add_argument("--cp", required=True, help="class path: Node's classes and Dubbo's jars")
    ap.add_argument("--zkr-bin", required=True)
    ap.add_argument("--port-base", type=int, default=28000)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tsv", required=True)
    ap.add_argument("--services-session-ms", type=int, default=SESSION_SHORT_MS,
                    help="session timeout of the provider's /services client as the server grants it (Dubbo 3.2 "
                         "asks Curator's default 60 s there, whatever the registry's session parameter says)")
    ap.add_argument("--java-opt", action="append", default=[], help="an extra JVM option for the Dubbo processes")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    logging.basicConfig(filename=os.path.join(args.work, "kazoo.log"), level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    sc = Scenario(args)
    sc.run()
    _, failed = sc.report()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
