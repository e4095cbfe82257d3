#!/usr/bin/python3
"""Unmodified Dubbo on a 3-member ensemble: zkr's and, side by side, Debian ZooKeeper's.

    ensemble.py --label "Dubbo 3.3.6 (...)" --cp CLASSPATH --zkr-bin BIN --port-base 28200 \
                --work DIR --tsv FILE --pidfile FILE

Each side ("zookeeper", "zkr") runs three members on 127.0.0.1, each from an ordinary ZooKeeper
ensemble zoo.cfg (server.N lines with client ports, myid in dataDir): zkServer.sh start-foreground
for Debian's ZooKeeper 3.8, `zkr serve --config zoo.cfg` for zkr. Every Dubbo process uses the
registry address zookeeper://m1?backup=m2,m3. The two sides run at the same time, each at its own
pace, with the same steps:

  1 the ensemble starts (one leader, two followers); providers p1, p2 and the consumer register
  2 the leader is SIGKILLed while the consumer calls (about 18 calls a second, all the time)
  3 p3 (a 4 s session) joins and is SIGKILLed, the old leader still down: two members left
  4 the old leader restarts on its data dir: follower again, caught up
  5 rolling restart under load: member 1 SIGTERM, member 2 SIGKILL, member 3 SIGTERM, each
    restarted on its data dir and followed again and caught up before the next

"Caught up": the three members' trees are the same when a client reads each one (paths, data,
every Stat field, / to the leaves, /zookeeper left out), and mntr agrees: zkr's zk_digest and
zk_digest_zxid; ZooKeeper 3.8 has no digest in mntr, so there zk_znode_count,
zk_ephemerals_count and zk_approximate_data_size.

Prints a timeline of both sides, one PASS/FAIL line per check ("PASS" when zkr passes; ZooKeeper's
result is shown as the reference) and "N passed, M failed"; writes one TSV row per check for
tests/interop/matrix.py. Every process it starts is written to --pidfile while it runs (run.sh
kills what a crashed driver left behind) and is stopped before it exits.
"""

import argparse
import hashlib
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from driver import ZK_BIN_DIR, ZK_LOGGING_FLAGS, Jvm  # noqa: E402

from kazoo.client import KazooClient  # noqa: E402
from kazoo.exceptions import NoNodeError  # noqa: E402

SIDES = ("zookeeper", "zkr")
MEMBERS = (1, 2, 3)
TICK_MS = 500
SESSION_MS = 15000  # everyone but p3: a failover must stay well inside it (see driver.py)
SESSION_SHORT_MS = 4000  # p3, SIGKILLed in step 3
IFACE = "zkr.interop.dubbo.Greeter"
PAPP = "zkr-interop-provider"
PROVIDERS = ("p1", "p2", "p3")
# what a rolling restart sends to each member in turn
ROLLING = ((1, signal.SIGTERM), (2, signal.SIGKILL), (3, signal.SIGTERM))

CHECKS = [
    ("setup", "one leader, two followers; p1, p2 and the consumer registered on every member"),
    ("leader_calls", "leader SIGKILLed under RPC load: no failed call"),
    ("leader_nodes", "leader SIGKILLed: provider nodes stay on the surviving members, same sessions"),
    ("leader_consumer", "leader SIGKILLed: the consumer keeps both providers; 100 calls succeed"),
    ("kill_kept", "SIGKILLed provider: its nodes stay until its session expires"),
    ("kill_gone", "SIGKILLed provider: nodes gone from every surviving member within the timeout + 2 ticks"),
    ("kill_consumer", "SIGKILLed provider: the consumer drops it; 100 calls succeed on the rest"),
    ("rejoin", "the killed leader restarts on its data dir: follower, caught up"),
    ("rolling_members", "rolling restart (SIGTERM, SIGKILL, SIGTERM): each member follower again and caught up"),
    ("rolling_calls", "rolling restart: no failed call"),
    ("rolling_nodes", "rolling restart: provider and consumer nodes kept, same sessions; the consumer keeps both "
                      "providers"),
]


_out = threading.Lock()


def say(msg):
    with _out:
        print(f"[dubbo-ensemble] {msg}", file=sys.stderr, flush=True)


class Fatal(Exception):
    """A step cannot go on (a process did not start): the remaining checks are reported as not run."""


class Pids:
    """Every process this driver runs, kept in a file (one pid a line) while it runs."""

    def __init__(self, path):
        self.path, self.live, self.lock = path, {}, threading.Lock()
        self._write()

    def _write(self):
        with open(self.path + ".tmp", "w") as f:
            f.write("".join(f"{p}\n" for p in self.live))
        os.replace(self.path + ".tmp", self.path)

    def add(self, proc):
        with self.lock:
            self.live[proc.pid] = proc
            self._write()

    def reap(self, proc, timeout=10):
        """Waits for proc, SIGKILLs it after timeout, and forgets it."""
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        with self.lock:
            self.live.pop(proc.pid, None)
            self._write()

    def kill_all(self):
        with self.lock:
            procs = list(self.live.values())
        for p in procs:
            if p.poll() is None:
                p.kill()
            self.reap(p)


# ------------------------------------------------------------------------------------------------ members


class Member:
    """One ensemble member: its own zoo.cfg (the same server.N lines everywhere) and data dir, kept across
    restarts."""

    def __init__(self, side, mid, ports, work, zkr_bin, pids):
        self.side, self.id, self.pids, self.zkr_bin = side, mid, pids, zkr_bin
        self.port = ports[mid]["client"]
        self.dir = os.path.join(work, f"{side}-m{mid}")
        self.cfg = os.path.join(self.dir, "zoo.cfg")
        self.proc = None
        data = os.path.join(self.dir, "data")
        os.makedirs(data, exist_ok=True)
        with open(os.path.join(data, "myid"), "w") as f:
            f.write(f"{mid}\n")
        servers = "".join(f"server.{i}=127.0.0.1:{p['peer']}:{p['election']};127.0.0.1:{p['client']}\n"
                          for i, p in sorted(ports.items()))
        with open(self.cfg, "w") as f:
            f.write(f"tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\nminSessionTimeout=1000\n"
                    f"maxSessionTimeout=20000\nmaxClientCnxns=0\nclientPort={self.port}\n"
                    f"clientPortAddress=127.0.0.1\ndataDir={data}\nadmin.enableServer=false\n"
                    f"4lw.commands.whitelist=*\n{servers}")

    def start(self):
        log = open(os.path.join(self.dir, "server.log"), "a")
        log.write(f"---- started by ensemble.py at {time.strftime('%H:%M:%S')}\n")
        log.flush()
        if self.side == "zookeeper":
            env = dict(os.environ, ZOOCFGDIR=self.dir, ZOO_LOG_DIR=self.dir, ZOOPIDFILE=f"{self.dir}/pid",
                       JMXDISABLE="true",
                       SERVER_JVMFLAGS=f"{ZK_LOGGING_FLAGS} -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
                                       f"-Dzookeeper.log.dir={self.dir}")
            # start-foreground execs the JVM, so this pid is the server's
            cmd = [f"{ZK_BIN_DIR}/zkServer.sh", "start-foreground", self.cfg]
        else:
            env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"))
            cmd = [self.zkr_bin, "serve", "--config", self.cfg]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        self.pids.add(self.proc)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Sends sig and waits for the exit (SIGKILL after timeout); seconds it took."""
        if not self.alive():
            return 0.0
        t = time.time()
        self.proc.send_signal(sig)
        self.pids.reap(self.proc, timeout)
        return time.time() - t

    def four(self, word):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(word.encode())
                s.shutdown(socket.SHUT_WR)
                chunks = []
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    chunks.append(b)
                return b"".join(chunks).decode(errors="replace")
        except OSError:
            return None

    def mode(self):
        """leader / follower / None (down, or not serving)."""
        m = re.search(r"^Mode: (\S+)", self.four("srvr") or "", re.M)
        return m.group(1) if m else None

    def mntr(self):
        out = {}
        for line in (self.four("mntr") or "").splitlines():
            k, _, v = line.partition("\t")
            out[k] = v
        return out

    def sessions(self):
        """Session ids of the client connections this member serves (cons)."""
        return set(int(x, 16) for x in re.findall(r"sid=0x([0-9a-f]+)", self.four("cons") or ""))

    def log_tail(self, n=15):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


# ------------------------------------------------------------------------------------------------ one side


class Side:
    """The whole scenario against one server's ensemble."""

    def __init__(self, side, args, pids, port_base):
        self.side, self.args, self.pids = side, args, pids
        self.work = os.path.join(args.work, side)
        os.makedirs(self.work, exist_ok=True)
        ports = {mid: {"client": port_base + mid, "peer": port_base + 10 + mid, "election": port_base + 20 + mid}
                 for mid in MEMBERS}
        self.members = {mid: Member(side, mid, ports, self.work, args.zkr_bin, pids) for mid in MEMBERS}
        self.dport = {p: port_base + 30 + i for i, p in enumerate(PROVIDERS, start=1)}
        self.names = {port: p for p, port in self.dport.items()}
        self.obs = {}  # member id -> kazoo client connected to that member only
        self.obs_lock = threading.Lock()
        self.jvms = {}
        self.timeline = []  # (step, what, text)
        self.results = {}  # check id -> (ok, note)
        self.step_name = ""
        self.fatal = None

    # -------------------------------------------------------------- recording

    def step(self, name):
        self.step_name = name
        say(f"{self.side}: {name}")
        self.timeline.append((name, None, None))
        return time.time()

    def tl(self, what, text):
        self.timeline.append((self.step_name, what, text))

    def check(self, cid, ok, note):
        self.results[cid] = (bool(ok), note)
        say(f"{self.side}: {'ok' if ok else 'FAILED'} {cid}: {note}")

    # -------------------------------------------------------------- the ensemble

    def registry(self, session_ms):
        a, b, c = (self.members[m].port for m in MEMBERS)
        return f"zookeeper://127.0.0.1:{a}?backup=127.0.0.1:{b},127.0.0.1:{c}&session={session_ms}"

    def up(self):
        return [m for m in MEMBERS if self.members[m].alive()]

    def modes(self, mids=None):
        return {m: self.members[m].mode() for m in (mids or self.up())}

    def modes_text(self, mids=None):
        return " ".join(f"m{m}={v or '-'}" for m, v in sorted(self.modes(mids).items()))

    def leader(self, mids=None):
        ls = [m for m, v in self.modes(mids).items() if v == "leader"]
        return ls[0] if len(ls) == 1 else None

    def one_leader(self, mids):
        v = sorted((self.modes(mids)).values(), key=str)
        return v == ["follower"] * (len(mids) - 1) + ["leader"]

    def connect_observer(self, mid):
        kz = KazooClient(hosts=f"127.0.0.1:{self.members[mid].port}", timeout=10)
        kz.start(timeout=30)
        with self.obs_lock:
            old = self.obs.get(mid)
            self.obs[mid] = kz
        if old is not None:
            self.drop(old)

    def drop_observer(self, mid):
        with self.obs_lock:
            kz = self.obs.pop(mid, None)
        if kz is not None:
            threading.Thread(target=self.drop, args=(kz,), daemon=True).start()

    @staticmethod
    def drop(kz):
        try:
            kz.stop()
            kz.close()
        except Exception:  # noqa: BLE001 - an observer of a dead member
            pass

    def observer_sessions(self):
        with self.obs_lock:
            return {kz.client_id[0] for kz in self.obs.values() if kz.client_id}

    def dubbo_sessions(self):
        """Every session served by a member that is up, but this driver's own."""
        s = set()
        for m in self.up():
            s |= self.members[m].sessions()
        return s - self.observer_sessions()

    def kids(self, mid, path):
        """Children of path on member mid; None when that member cannot be asked."""
        kz = self.obs.get(mid)
        if kz is None:
            return None
        try:
            return kz.get_children(path)
        except NoNodeError:
            return []
        except Exception:  # noqa: BLE001 - connection loss while members come and go
            return None

    def name_of(self, text):
        return re.sub(r"127\.0\.0\.1:(\d+)", lambda m: self.names.get(int(m.group(1)), m.group(0)), text)

    def providers(self, mid):
        k = self.kids(mid, f"/dubbo/{IFACE}/providers")
        return None if k is None else sorted(
            self.name_of(urllib.parse.urlsplit(urllib.parse.unquote(c)).netloc) for c in k)

    def services(self, mid):
        k = self.kids(mid, f"/services/{PAPP}")
        return None if k is None else sorted(self.name_of(c) for c in k)

    def consumers(self, mid):
        k = self.kids(mid, f"/dubbo/{IFACE}/consumers")
        return None if k is None else len(k)

    def exact(self, mid, want):
        return self.providers(mid) == want and self.services(mid) == want and self.consumers(mid) == 1

    def owners(self, mid):
        """ephemeralOwner of every Dubbo ephemeral on member mid, by node kind and name."""
        kz = self.obs.get(mid)
        out = {}
        for kind, path in (("providers", f"/dubbo/{IFACE}/providers"), ("services", f"/services/{PAPP}"),
                           ("consumers", f"/dubbo/{IFACE}/consumers")):
            for c in self.kids(mid, path) or []:
                try:
                    st = kz.exists(f"{path}/{c}")
                except Exception:  # noqa: BLE001
                    st = None
                name = {"providers": lambda: self.name_of(urllib.parse.urlsplit(urllib.parse.unquote(c)).netloc),
                        "services": lambda: self.name_of(c), "consumers": lambda: "c"}[kind]()
                out[f"{kind}/{name}"] = st.ephemeralOwner if st else None
        return out

    def tree_hash(self, mid):
        """sha1 over every node but /zookeeper's: path, data and every Stat field; (hash, nodes)."""
        kz = self.obs.get(mid)
        h = hashlib.sha1()
        n = 0

        def walk(path):
            nonlocal n
            data, st = kz.get(path)
            kids = kz.get_children(path)
            h.update(repr((path, data, st.czxid, st.mzxid, st.pzxid, st.ctime, st.mtime, st.version, st.cversion,
                           st.aversion, st.ephemeralOwner, st.numChildren)).encode())
            n += 1
            for k in sorted(kids):
                child = ("" if path == "/" else path) + "/" + k
                if child != "/zookeeper":
                    walk(child)

        walk("/")
        return h.hexdigest()[:12], n

    def caught_up(self):
        """(True, how) when the three members agree: the tree read from each, and mntr's digest (zkr) or
        counts (ZooKeeper 3.8, which has no digest in mntr)."""
        hashes, marks = {}, {}
        for m in MEMBERS:
            try:
                hashes[m] = self.tree_hash(m)
            except Exception as e:  # noqa: BLE001 - a member not serving yet
                return False, f"m{m}: tree not readable ({type(e).__name__})"
            x = self.members[m].mntr()
            if self.side == "zkr":
                marks[m] = (x.get("zk_digest"), x.get("zk_digest_zxid"))
            else:
                marks[m] = (x.get("zk_znode_count"), x.get("zk_ephemerals_count"), x.get("zk_approximate_data_size"))
        if len(set(hashes.values())) != 1:
            return False, "trees differ: " + " ".join(f"m{m}={h}" for m, (h, _) in sorted(hashes.items()))
        if len(set(marks.values())) != 1 or None in marks[1]:
            return False, "mntr differs: " + " ".join(f"m{m}={v}" for m, v in sorted(marks.items()))
        h, n = hashes[1]
        what = "zk_digest %s at zxid %s" % marks[1] if self.side == "zkr" else \
            "znodes %s, ephemerals %s, data size %s" % marks[1]
        return True, f"{n} nodes, tree hash {h} and mntr {what} on all three"

    # -------------------------------------------------------------- the consumer's view

    def dir_lines(self, t0=0.0):
        """(time, iface names, app names) of the consumer's DIR lines printed at or after t0."""
        out = []
        for _, line in self.jvms["c"].snapshot():
            m = re.match(r"DIR plain (\d+) iface=\[(.*?)\] app=\[(.*?)\] use=(\S+)", line)
            if m and int(m.group(1)) / 1000 >= t0:
                out.append((int(m.group(1)) / 1000, self.names_list(m.group(2)), self.names_list(m.group(3))))
        return out

    def names_list(self, s):
        return sorted(self.name_of(a) for a in s.split(",") if a)

    def dirs(self):
        d = self.dir_lines()
        return (d[-1][1], d[-1][2]) if d else None

    def dir_is(self, want):
        return self.dirs() == (want, want)

    def consumer_kept(self, t0, want, settle=15):
        """The consumer's directories since t0: (ok, text). The interface-level one (/dubbo/<iface>/providers,
        whose ephemerals nobody re-creates) must never change. The application-level one may drop a provider for
        a while: on every reconnect curator-x-discovery re-registers the provider's instance by deleting and
        re-creating its /services node (ServiceDiscoveryImpl.reRegisterServices), and Dubbo passes a listing
        taken in between to the directory, with its next one up to 5 s later (RegistryNotifier, delay-notification)
        - on ZooKeeper as on zkr. It must list every provider again within settle seconds."""
        back = self.wait_for("consumer directories list " + ", ".join(want), time.time(),
                             lambda: self.dir_is(want), settle)
        lines = self.dir_lines(t0)
        iface = [d for d in lines if d[1] != want]
        app = [d for d in lines if d[2] != want]
        ok = back is not None and not iface
        text = (f"directories now {self.dirs()}; interface-level " +
                (f"changed to {iface[0][1]} at +{iface[0][0] - t0:.1f}s" if iface else "never changed") +
                "; application-level " +
                (f"showed {', '.join(sorted(set(str(d[2]) for d in app)))} for a while (provider re-registered on "
                 f"reconnect)" if app else "never changed"))
        return ok, text

    def ticks(self, t0, t1):
        """Background calls reported in (t0, t1]: ok, fail, {provider: n}, errors, number of ticks, longest gap."""
        ok = fail = n = 0
        by, errs, times = {}, set(), [t0]
        for _, line in self.jvms["c"].snapshot():
            m = re.match(r"TICK plain (\d+) ok=(\d+) fail=(\d+) by=(\S+) err=(\S+)", line)
            if not m or not (t0 < int(m.group(1)) / 1000 <= t1):
                continue
            times.append(int(m.group(1)) / 1000)
            n += 1
            ok += int(m.group(2))
            fail += int(m.group(3))
            if m.group(4) != "-":
                for kv in m.group(4).split(","):
                    k, v = kv.split(":")
                    by[k] = by.get(k, 0) + int(v)
            if m.group(5) != "-":
                errs.add(m.group(5))
        times.append(t1)
        gap = max(b - a for a, b in zip(times, times[1:]))
        return ok, fail, by, errs, n, gap

    def ticks_text(self, t0, t1):
        ok, fail, by, errs, n, gap = self.ticks(t0, t1)
        by_s = ",".join(f"{k}:{v}" for k, v in sorted(by.items())) or "-"
        return (f"{ok} ok, {fail} failed ({by_s}){' ' + ','.join(sorted(errs)) if errs else ''}; "
                f"longest gap between reports {gap:.1f}s")

    def calls(self, n=100):
        """n synchronous calls: (ok, fail, {provider: n}, err)."""
        c = self.jvms["c"]
        start = c.mark()
        c.send(f"call plain {n}")
        line = c.wait_line(lambda ln: ln.startswith("CALLS plain "), start, 120)
        if line is None:
            return 0, n, {}, "no answer"
        m = re.match(r"CALLS \S+ ok=(\d+) fail=(\d+) by=(\S+) err=(\S+)", line)
        by = {} if m.group(3) == "-" else {k: int(v) for k, v in (kv.split(":") for kv in m.group(3).split(","))}
        return int(m.group(1)), int(m.group(2)), by, m.group(4)

    def calls_ok(self, want):
        ok, fail, by, err = self.calls(100)
        by_s = ",".join(f"{k}:{v}" for k, v in sorted(by.items())) or "-"
        text = f"100 calls: {ok} ok, {fail} failed ({by_s})" + ("" if err == "-" else f" {err}")
        self.tl("100 calls", text)
        return ok == 100 and fail == 0 and sorted(by) == want, text

    # -------------------------------------------------------------- waiting

    def wait_for(self, what, t0, cond, timeout, every=0.05):
        """Polls cond() until true; records and returns the seconds since t0, or None after timeout."""
        end = time.time() + timeout
        while True:
            try:
                ok = cond()
            except Exception:  # noqa: BLE001 - members coming and going
                ok = False
            if ok:
                t = time.time() - t0
                self.tl(what, f"+{t:.1f}s")
                return t
            if time.time() > end:
                self.tl(what, f"not within {timeout:.0f}s")
                return None
            time.sleep(every)

    def start_member(self, mid, timeout=90):
        mem = self.members[mid]
        mem.start()
        end = time.time() + timeout
        while time.time() < end:
            if mem.four("ruok") == "imok":
                return True
            if not mem.alive():
                break
            time.sleep(0.1)
        raise Fatal(f"m{mid} did not start on port {mem.port}:\n{mem.log_tail()}")

    def start_jvm(self, name, role, session_ms, provider=None, wait=False):
        inst = f"plain|{self.registry(session_ms)}" + (f"|{self.dport[provider]}" if provider else "")
        j = Jvm(self.side, role, name, (["--wait"] if wait else []) + [inst], self.args.cp, self.work,
                self.args.java_opt)
        self.pids.add(j.proc)
        self.jvms[name] = j

    def wait_ready(self, name, timeout=120):
        j = self.jvms[name]
        if j.wait_line(lambda ln: ln == "READY ALL" or ln.startswith("ERROR"), 0, timeout) != "READY ALL":
            raise Fatal(f"Dubbo {name} did not start: {j.snapshot()[-3:]}\n{j.err_tail()}")

    def wait_caught_up(self, what, t0, timeout):
        last = [""]

        def cond():
            ok, how = self.caught_up()
            last[0] = how
            return ok

        t = self.wait_for(what, t0, cond, timeout, every=0.2)
        return t, last[0]

    # -------------------------------------------------------------- steps

    def run(self):
        try:
            self.s1_start()
            self.s2_leader_killed()
            self.s3_provider_killed()
            self.s4_rejoin()
            self.s5_rolling()
        except Fatal as e:
            say(f"{self.side}: FATAL: {e}")
            self.fatal = str(e).splitlines()[0]
        except Exception as e:  # noqa: BLE001 - reported, the other side goes on
            say(f"{self.side}: driver error: {traceback.format_exc()}")
            self.fatal = f"driver error: {e!r}"
        finally:
            self.teardown()

    def s1_start(self):
        t0 = self.step("1 the ensemble starts; p1, p2 and the consumer register")
        for m in MEMBERS:
            self.members[m].start()
        for m in MEMBERS:
            mem, end = self.members[m], time.time() + 90
            while mem.four("ruok") != "imok":
                if not mem.alive() or time.time() > end:
                    raise Fatal(f"m{m} did not start on port {mem.port}:\n{mem.log_tail()}")
                time.sleep(0.1)
        if self.wait_for("one leader, two followers", t0, lambda: self.one_leader(MEMBERS), 60) is None:
            raise Fatal(f"no leader: {self.modes_text()}")
        self.tl("modes", self.modes_text())
        for m in MEMBERS:
            self.connect_observer(m)
        # p3 starts now and registers only in step 3 (its JVM start-up is out of the way)
        self.start_jvm("p1", "provider", SESSION_MS, "p1")
        self.start_jvm("p2", "provider", SESSION_MS, "p2")
        self.start_jvm("c", "consumer", SESSION_MS)
        self.start_jvm("p3", "provider", SESSION_SHORT_MS, "p3", wait=True)
        for name in ("p1", "p2", "c"):
            self.wait_ready(name)
        want = ["p1", "p2"]
        t = self.wait_for("p1, p2, consumer on every member; consumer directories list p1, p2", t0,
                          lambda: all(self.exact(m, want) for m in MEMBERS) and self.dir_is(want), 60)
        ok, text = self.calls_ok(want)
        self.check("setup", t is not None and ok,
                   f"{self.modes_text()}; " + ("registered" if t is not None else
                                              f"providers {[self.providers(m) for m in MEMBERS]}, "
                                              f"directories {self.dirs()}") + f"; {text}")
        if t is None:
            raise Fatal("Dubbo did not register")

    def s2_leader_killed(self):
        want = ["p1", "p2"]
        time.sleep(2.0)  # background calls before the kill
        old = self.leader(MEMBERS)
        if old is None:
            raise Fatal(f"no single leader before the kill: {self.modes_text()}")
        rest = [m for m in MEMBERS if m != old]
        before = self.owners(rest[0])
        sessions = self.dubbo_sessions()
        on_leader = len(self.members[old].sessions() & sessions)
        t0 = self.step("2 the leader is SIGKILLed while the consumer calls")
        self.members[old].stop(signal.SIGKILL)
        self.drop_observer(old)
        self.tl("killed", f"m{old}, serving {on_leader} of the {len(sessions)} Dubbo sessions")
        self.old_leader = old
        # every poll also looks at the providers on the survivors: a moment without them is a lost registration
        seen_wrong = []

        def watching(cond):
            def f():
                for m in rest:
                    p = self.providers(m)
                    if p is not None and p != want:
                        seen_wrong.append(f"m{m} {p} at +{time.time() - t0:.1f}s")
                return cond()
            return f

        t_leader = self.wait_for("a new leader", t0, watching(lambda: self.one_leader(rest)), 30)
        self.tl("modes", self.modes_text(rest))
        t_back = self.wait_for(f"all {len(sessions)} Dubbo sessions served by the surviving members", t0,
                               watching(lambda: sessions <= self.dubbo_sessions()), 30)
        # some more seconds of calls after the clients came back
        time.sleep(3.0)
        t1 = time.time()
        ok, fail, by, errs, n, gap = self.ticks(t0, t1)
        text = self.ticks_text(t0, t1)
        self.tl("background calls from the kill until 3 s after the sessions came back", text)
        self.check("leader_calls", t_leader is not None and fail == 0 and ok > 0,
                   f"{text}; new leader after " + (f"{t_leader:.1f}s" if t_leader is not None else "-"))
        bad = []
        for m in rest:
            after = self.owners(m)
            if not self.exact(m, want):
                bad.append(f"m{m}: providers {self.providers(m)}, /services {self.services(m)}, "
                           f"consumers {self.consumers(m)}")
            elif after != before:
                bad.append(f"m{m}: sessions changed {sorted(k for k in after if after[k] != before.get(k))}")
        if t_back is None:
            left = sessions - self.dubbo_sessions()
            bad.append(f"{len(left)} Dubbo sessions not back: {[hex(s) for s in sorted(left)]}")
        if seen_wrong:
            bad.append(f"providers seen as {seen_wrong[0]}")
        self.check("leader_nodes", not bad,
                   "; ".join(bad) if bad else f"p1, p2 (and their /services, the consumer) on m{rest[0]} and "
                   f"m{rest[1]}, owned by the same sessions; {len(sessions)} sessions back after {t_back:.1f}s")
        kept, dtext = self.consumer_kept(t0, want)
        ok100, text100 = self.calls_ok(want)
        self.check("leader_consumer", kept and ok100, f"{dtext}; {text100}")

    def s3_provider_killed(self):
        rest = [m for m in MEMBERS if m != self.old_leader]
        t0 = self.step(f"3 p3 (session {SESSION_SHORT_MS} ms) joins and is SIGKILLed, the old leader still down")
        j = self.jvms["p3"]
        if j.wait_line(lambda ln: ln == "WAITING" or ln.startswith("ERROR"), 0, 120) != "WAITING":
            raise Fatal(f"Dubbo p3 did not start: {j.snapshot()[-3:]}\n{j.err_tail()}")
        j.send("go")
        self.wait_ready("p3")
        want3, want = ["p1", "p2", "p3"], ["p1", "p2"]
        if self.wait_for("p3 registered on both members; consumer directories list it", t0,
                         lambda: all(self.exact(m, want3) for m in rest) and self.dir_is(want3), 60) is None:
            self.check("kill_kept", False, f"p3 never registered: {[self.providers(m) for m in rest]}, "
                       f"directories {self.dirs()}")
            return
        svc_ms = self.args.services_session_ms
        t0 = self.step("3b p3 is SIGKILLed")
        j.signal(signal.SIGKILL)
        self.pids.reap(j.proc)
        time.sleep(max(0.0, t0 + 1.0 - time.time()))
        kept = {m: (self.providers(m), self.services(m)) for m in rest}
        self.check("kill_kept", all(v == (want3, want3) for v in kept.values()),
                   "1 s after the kill: " + "; ".join(f"m{m} providers {p}, /services {s}"
                                                       for m, (p, s) in kept.items()))
        gone = {}
        for m in rest:
            gone[(m, "providers")] = (SESSION_SHORT_MS, None)
            gone[(m, "/services")] = (svc_ms, None)
        end = t0 + max(SESSION_SHORT_MS, svc_ms) / 1000 + 20
        while time.time() < end and any(t is None for _, t in gone.values()):
            for (m, kind), (ms, t) in list(gone.items()):
                if t is None and (self.providers(m) if kind == "providers" else self.services(m)) == want:
                    gone[(m, kind)] = (ms, time.time() - t0)
            time.sleep(0.05)
        # A session is due between its timeout less the time since the client's last ping (a third of the
        # timeout) and the timeout rounded up to the next tick; one more tick for the close to commit
        # and reach every member.
        bad, texts = [], []
        for (m, kind), (ms, t) in sorted(gone.items()):
            low, high = ms / 1000 / 2, ms / 1000 + 2 * TICK_MS / 1000
            texts.append(f"m{m} {kind} {t:.1f}s" if t is not None else f"m{m} {kind} never")
            if t is None or not low <= t <= high:
                bad.append(f"m{m} {kind}: " + (f"{t:.1f}s, not in [{low:.1f}, {high:.1f}]s" if t is not None
                                                 else "never gone"))
        self.tl("p3 gone (time from the kill)", ", ".join(texts))
        self.check("kill_gone", not bad, ("; ".join(bad) + " | " if bad else "") +
                   f"sessions {SESSION_SHORT_MS} ms (providers), {svc_ms} ms (/services); gone: " + ", ".join(texts))
        got = self.wait_for("consumer directories drop p3", t0, lambda: self.dir_is(want), 30)
        self.tl("background calls meanwhile", self.ticks_text(t0, time.time()))
        ok100, text100 = self.calls_ok(want)
        self.check("kill_consumer", got is not None and ok100, f"directories {self.dirs()}; {text100}")

    def s4_rejoin(self):
        old = self.old_leader
        t0 = self.step("4 the old leader restarts on its data dir")
        self.start_member(old)
        self.tl("answers ruok", f"m{old} +{time.time() - t0:.1f}s")
        t_f = self.wait_for("follower again", t0, lambda: self.members[old].mode() == "follower", 60)
        self.connect_observer(old)
        t_c, how = self.wait_caught_up("all three caught up", t0, 60)
        p = self.providers(old)
        self.tl("modes", self.modes_text())
        self.check("rejoin", t_f is not None and t_c is not None and p == ["p1", "p2"],
                   f"{self.modes_text()}; follower after " + (f"{t_f:.1f}s" if t_f is not None else "-") +
                   f", caught up after " + (f"{t_c:.1f}s" if t_c is not None else "-") + f": {how}; "
                   f"providers on m{old}: {p}")

    def s5_rolling(self):
        want = ["p1", "p2"]
        before = self.owners(1)
        sessions = self.dubbo_sessions()
        time.sleep(1.0)
        t0 = self.step("5 rolling restart under load: m1 SIGTERM, m2 SIGKILL, m3 SIGTERM")
        bad_members = []
        for mid, sig in ROLLING:
            ts = time.time()
            role = self.members[mid].mode()
            took = self.members[mid].stop(sig)
            self.drop_observer(mid)
            self.tl(f"m{mid} {sig.name}", f"was {role}, down in {took:.1f}s")
            others = [m for m in MEMBERS if m != mid]
            if role == "leader":
                # as between the steps of any rolling restart, the ensemble is healthy again before the member
                # comes back: the other two have a leader (zkr's leader restarted faster than the followers'
                # election timeout would take up its committed term again, see docs/dubbo-interop.md)
                self.wait_for(f"m{mid}: the other two elect a leader", ts, lambda: self.one_leader(others), 30)
            self.start_member(mid)
            t_f = self.wait_for(f"m{mid}: follower again", ts,
                                lambda: self.members[mid].mode() == "follower" and self.one_leader(MEMBERS), 60)
            self.connect_observer(mid)
            t_c, how = self.wait_caught_up(f"m{mid}: all three caught up", ts, 60)
            if t_f is None or t_c is None:
                bad_members.append(f"m{mid}: {self.modes_text()}; {how}")
            else:
                self.tl(f"m{mid}: agreement", how)
        t_back = self.wait_for(f"all {len(sessions)} Dubbo sessions served", t0,
                               lambda: sessions <= self.dubbo_sessions(), 30)
        time.sleep(2.0)
        t1 = time.time()
        self.tl("modes", self.modes_text())
        self.check("rolling_members", not bad_members,
                   "; ".join(bad_members) if bad_members else f"{self.modes_text()}; {self.caught_up()[1]}")
        ok, fail, by, errs, n, gap = self.ticks(t0, t1)
        text = self.ticks_text(t0, t1)
        self.tl("background calls during the rolling restart", f"{t1 - t0:.0f}s: {text}")
        kept, dtext = self.consumer_kept(t0, want)
        ok100, text100 = self.calls_ok(want)
        self.check("rolling_calls", fail == 0 and ok > 0 and ok100, f"{text}; {text100}")
        bad = []
        for m in MEMBERS:
            after = self.owners(m)
            if not self.exact(m, want):
                bad.append(f"m{m}: providers {self.providers(m)}, /services {self.services(m)}, "
                           f"consumers {self.consumers(m)}")
            elif after != before:
                bad.append(f"m{m}: sessions changed {sorted(k for k in after if after[k] != before.get(k))}")
        if t_back is None:
            bad.append(f"Dubbo sessions not back: {sorted(hex(s) for s in sessions - self.dubbo_sessions())}")
        if not kept:
            bad.append(dtext)
        self.check("rolling_nodes", not bad, "; ".join(bad) if bad else
                   f"p1, p2, their /services and the consumer on all three members, owned by the same "
                   f"{len(sessions)} sessions; {dtext}")

    def teardown(self):
        for j in self.jvms.values():
            if j.proc.poll() is None:
                j.send("stop")
        end = time.time() + 15
        for name, j in self.jvms.items():
            self.pids.reap(j.proc, max(0.1, end - time.time()))
            with open(os.path.join(self.work, f"{name}.out"), "w") as f:
                f.writelines(f"{time.strftime('%H:%M:%S', time.localtime(t))}.{int(t * 1000) % 1000:03d} {line}\n"
                             for t, line in j.snapshot())
        for m in list(self.obs):
            self.drop_observer(m)
        for mem in self.members.values():
            mem.stop()


# ------------------------------------------------------------------------------------------------ report


def report(args, sides, elapsed):
    label = f"{args.label}, 3-member ensemble"
    width = 58
    print(f"\n== {label}: timeline (seconds from the start of each step or restart)")
    # rows in the order each side met them: a row only one side has goes after that side's previous row
    keys, per = [], {}
    for s in SIDES:
        prev = -1
        for step, what, text in sides[s].timeline:
            k = (step, what)
            if k not in per:
                keys.insert(prev + 1, k)
                per[k] = {}
            per[k][s] = text
            prev = keys.index(k)
    col = 44
    print(f"{'':{width}}  {'zookeeper':{col}}  zkr")
    for k in keys:
        step, what = k
        if what is None:
            print(step)
            continue
        z, r = per[k].get("zookeeper", ""), per[k].get("zkr", "")
        key = f"  {what}"
        if len(key) > width or len(z) > col:
            print(key)
            print(f"{'':{width}}  zookeeper: {z}\n{'':{width}}  zkr:       {r}")
        else:
            print(f"{key:{width}}  {z:{col}}  {r}")
    print(f"\n== {label}: checks (a check passes when zkr passes it; ZooKeeper's result is the reference)")
    for s in SIDES:
        if sides[s].fatal:
            print(f"   {s}: the scenario stopped early: {sides[s].fatal}")
    passed = failed = ref_failed = 0
    rows = []
    for cid, feature in CHECKS:
        z = sides["zookeeper"].results.get(cid, (False, "not run"))
        k = sides["zkr"].results.get(cid, (False, "not run"))
        passed += k[0]
        failed += not k[0]
        ref_failed += not z[0]
        print(f"{'PASS' if k[0] else 'FAIL'} [ensemble] {feature}" + ("" if z[0] else "   (ZooKeeper did not pass it)"))
        print(f"       zookeeper: {'ok' if z[0] else 'FAILED'} - {z[1]}")
        print(f"       zkr:       {'ok' if k[0] else 'FAILED'} - {k[1]}")
        rows.append((label, feature, "pass" if z[0] else "fail", "pass" if k[0] else "fail",
                     f"zookeeper: {z[1]}; zkr: {k[1]}"))
    os.makedirs(os.path.dirname(os.path.abspath(args.tsv)), exist_ok=True)
    with open(args.tsv, "w") as f:
        for row in rows:
            f.write("\t".join(c.replace("\t", " ").replace("\n", " ") for c in row) + "\n")
    if ref_failed:
        print(f"{label}: ZooKeeper itself did not pass {ref_failed} of these checks in this run (see above)")
    print(f"{label}: took {elapsed:.0f}s")
    print(f"{label}: {passed} passed, {failed} failed")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--label", required=True)
    ap.add_argument("--cp", required=True, help="class path: Node's classes and Dubbo's jars")
    ap.add_argument("--zkr-bin", required=True)
    ap.add_argument("--port-base", type=int, default=28200, help="ports used: base+1 .. base+83")
    ap.add_argument("--work", required=True)
    ap.add_argument("--tsv", required=True)
    ap.add_argument("--pidfile", required=True)
    ap.add_argument("--services-session-ms", type=int, default=SESSION_SHORT_MS,
                    help="session timeout of p3's /services client as the servers grant it (see driver.py)")
    ap.add_argument("--java-opt", action="append", default=[], help="an extra JVM option for the Dubbo processes")
    ap.add_argument("--serial", action="store_true", help="run the two sides one after the other")
    ap.add_argument("--sides", default=",".join(SIDES), help="for debugging: the sides to run (zookeeper,zkr)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    logging.basicConfig(filename=os.path.join(args.work, "kazoo.log"), level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    pids = Pids(args.pidfile)
    # SIGTERM/SIGINT: stop everything started so far, like a normal end
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.time()
    try:
        sides = {s: Side(s, args, pids, args.port_base + i * 50) for i, s in enumerate(SIDES)}
        threads = [threading.Thread(target=sides[s].run, name=s, daemon=True)
                   for s in SIDES if s in args.sides.split(",")]
        for t in threads:
            t.start()
            if args.serial:
                t.join()
        for t in threads:
            t.join()
    finally:
        pids.kill_all()
    failed = report(args, sides, time.time() - started)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
