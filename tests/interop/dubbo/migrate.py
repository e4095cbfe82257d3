#!/usr/bin/python3
"""Unmodified Dubbo through a live migration from a ZooKeeper ensemble to a zkr ensemble.

    migrate.py --label "Dubbo 3.3.6 (...)" --cp CLASSPATH --zkr-bin BIN --port-base 28300 \
               --work DIR --tsv FILE --pidfile FILE

Three Debian ZooKeeper 3.8 participants (zkServer.sh start-foreground, 127.0.0.1, tickTime 500 so that
they start fast) and three zkr ZAB observers (`zkr serve --config zoo.cfg`, peerType=observer,
zkr.ensembleProtocol=zab, myids 9, 10, 11 on 127.0.0.9, .10, .11, tickTime 2000, one AdminServer port
for all three); every zoo.cfg holds the same six server lines. Every Dubbo process uses the registry
address zookeeper://<zk1>?backup=<zk2>,<zk3>,<zkr9>,<zkr10>,<zkr11>:

  1 the ZooKeeper ensemble and the zkr observers start; providers p1, p2 and the consumer register;
    the consumer calls all the time (about 18 calls a second)
  2 the zkr observers serve the same tree as the ZooKeeper members
  3 the ZooKeeper participants are stopped (SIGTERM; followers first, then the leader) and
    `zkr takeover --config <observer 9's zoo.cfg> --zookeeper-data <their dataDirs>` turns the observers
    into a zkr ensemble, once their logs show that the observers hold every txn ZooKeeper may have committed;
    Dubbo's Curator clients move to the zkr hosts of their address list
  4 about 20 s after the takeover: no call failed since before step 3, calls kept flowing, the
    providers' and the consumer's ephemerals are on every zkr member, owned by the same sessions
    (no session expired: Dubbo would have registered again), one leader and two followers
  5 provider p3, started after the takeover, registers on the zkr ensemble and is called
  6 the way back (wayback.py): the zkr members stop, each member's directory is exported with
    `zkr export-zookeeper`, ZooKeeper 3.8 starts as a 3-member ensemble on the zkr members' hosts and
    ports; every Dubbo session re-attaches (same ephemeral owners), calls succeed, p4 registers

Prints a timeline, one PASS/FAIL line per check and "N passed, M failed"; writes one TSV row per check
for tests/interop/matrix.py (the migration has one verdict, written in both columns). Every process it
starts is written to --pidfile while it runs (run.sh kills what a crashed driver left behind) and is
stopped before it exits.
"""

import argparse
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ensemble import Fatal, Member, Pids, Side  # noqa: E402
from wayback import WAYBACK_CHECKS, way_back  # noqa: E402

from kazoo.client import KazooClient  # noqa: E402

ZK_IDS = (1, 2, 3)
ZKR_IDS = (9, 10, 11)
ZK_TICK_MS = 500
ZKR_TICK_MS = 2000
SESSION_MS = 15000  # every Dubbo process: the takeover must stay well inside it
AFTER_S = 20.0  # calls are watched until this long after the takeover
PROVIDERS = ("p1", "p2", "p3", "p4")

CHECKS = [
    ("setup", "ZooKeeper leads (one leader, two followers), the zkr observers synced; p1, p2 and the consumer "
              "registered on every server; 100 calls succeed"),
    ("observed_tree", "the zkr observers serve the same tree as the ZooKeeper members (every node, data, Stat)"),
    ("takeover", "ZooKeeper's participants stopped (followers, then the leader); zkr takeover exits 0"),
    ("zkr_members", "the zkr ensemble: one leader, two followers, the same tree and digest on all three"),
    ("calls", "no failed call from before ZooKeeper stopped to 20 s after the takeover; calls keep flowing to "
              "p1 and p2; 100 calls succeed"),
    ("nodes", "the providers' and the consumer's ephemerals are on every zkr member, owned by the same sessions; "
              "every Dubbo session is served by zkr; the consumer keeps both providers"),
    ("no_expiry", "no Dubbo session expired (ephemeralOwner unchanged, no expiry in any Dubbo log)"),
    ("new_provider", "p3, started after the takeover, registers on the zkr ensemble and is called"),
] + WAYBACK_CHECKS


ADMIN_USER, ADMIN_PASSWORD = "super", "migrate-s3cret"


def super_digest(user, password):
    """DigestAuthenticationProvider.generateDigest: user:base64(sha1(user:password))."""
    import base64
    import hashlib
    return f"{user}:" + base64.b64encode(hashlib.sha1(f"{user}:{password}".encode()).digest()).decode()


def say(msg):
    print(f"[dubbo-migrate] {msg}", file=sys.stderr, flush=True)


class Server(Member):
    """A ZooKeeper participant or a zkr observer: its own zoo.cfg (six server lines) and data dir."""

    def __init__(self, kind, mid, host, port, servers, work, zkr_bin, pids, admin_port):
        self.side, self.id, self.host, self.port = kind, mid, host, port
        self.pids, self.zkr_bin, self.proc = pids, zkr_bin, None
        self.dir = os.path.join(work, f"{kind}-{mid}")
        self.cfg = os.path.join(self.dir, "zoo.cfg")
        data = os.path.join(self.dir, "data")
        os.makedirs(data, exist_ok=True)
        with open(os.path.join(data, "myid"), "w") as f:
            f.write(f"{mid}\n")
        if kind == "zookeeper":
            text = (f"tickTime={ZK_TICK_MS}\ninitLimit=10\nsyncLimit=5\nminSessionTimeout=1000\n"
                    f"maxSessionTimeout=20000\nmaxClientCnxns=0\nclientPort={port}\nclientPortAddress={host}\n"
                    f"dataDir={data}\nadmin.enableServer=false\n4lw.commands.whitelist=*\n")
        else:
            # The takeover needs ZooKeeper's admin authentication: the super user's digest here,
            # its password in ZKR_ADMIN_AUTH for zkr takeover.
            text = (f"tickTime={ZKR_TICK_MS}\ninitLimit=10\nsyncLimit=5\nmaxClientCnxns=0\nclientPort={port}\n"
                    f"clientPortAddress={host}\ndataDir={data}\nadmin.serverAddress={host}\n"
                    f"admin.serverPort={admin_port}\n4lw.commands.whitelist=*\n"
                    f"DigestAuthenticationProvider.superDigest={super_digest(ADMIN_USER, ADMIN_PASSWORD)}\n"
                    f"peerType=observer\nzkr.ensembleProtocol=zab\n")
        with open(self.cfg, "w") as f:
            f.write(text + servers)

    def four(self, word):
        import socket
        try:
            with socket.create_connection((self.host, self.port), timeout=2) as s:
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

    def log_tail(self, n=15):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class Migration(Side):
    """The scenario; Side's helpers (providers, owners, tree_hash, ticks, calls, consumer_kept ...) work on
    self.members / self.obs keyed by myid."""

    def __init__(self, args, pids):
        self.side, self.args, self.pids = "zkr", args, pids
        self.work = args.work
        os.makedirs(self.work, exist_ok=True)
        b = args.port_base
        host = {m: "127.0.0.1" for m in ZK_IDS}
        host.update({m: f"127.0.0.{m}" for m in ZKR_IDS})
        client = {m: b + m for m in ZK_IDS}
        client.update({m: b + 30 + m - 8 for m in ZKR_IDS})
        quorum = {m: b + 10 + m for m in ZK_IDS}
        quorum.update({m: b + 40 + m - 8 for m in ZKR_IDS})
        election = {m: b + 20 + m for m in ZK_IDS}
        election.update({m: b + 50 + m - 8 for m in ZKR_IDS})
        self.admin_port = b + 60
        # the way back: ZooKeeper participants 9, 10, 11 on the zkr members' addresses
        self.back_servers = "".join(f"server.{m}={host[m]}:{quorum[m]}:{election[m]};{host[m]}:{client[m]}\n"
                                    for m in ZKR_IDS)
        servers = "".join(f"server.{m}={host[m]}:{quorum[m]}:{election[m]}"
                          f"{':observer' if m in ZKR_IDS else ''};{host[m]}:{client[m]}\n"
                          for m in ZK_IDS + ZKR_IDS)
        self.members = {m: Server("zookeeper" if m in ZK_IDS else "zkr", m, host[m], client[m], servers, self.work,
                                  args.zkr_bin, pids, self.admin_port) for m in ZK_IDS + ZKR_IDS}
        self.dport = {p: b + 70 + i for i, p in enumerate(PROVIDERS, start=1)}
        self.names = {port: p for p, port in self.dport.items()}
        self.obs, self.obs_lock = {}, threading.Lock()
        self.jvms = {}
        self.timeline = []
        self.results = {}
        self.step_name = ""
        self.fatal = None

    def step(self, name):
        self.step_name = name
        say(name)
        self.timeline.append((name, None, None))
        return time.time()

    def check(self, cid, ok, note):
        self.results[cid] = (bool(ok), note)
        say(f"{'ok' if ok else 'FAILED'} {cid}: {note}")

    def registry(self, session_ms):
        hosts = [f"{self.members[m].host}:{self.members[m].port}" for m in ZK_IDS + ZKR_IDS]
        return f"zookeeper://{hosts[0]}?backup={','.join(hosts[1:])}&session={session_ms}"

    def up(self):
        return [m for m in self.members if self.members[m].alive()]

    def connect_observer(self, mid):
        mem = self.members[mid]
        kz = KazooClient(hosts=f"{mem.host}:{mem.port}", timeout=10)
        try:
            kz.start(timeout=15)
        except Exception:
            self.drop(kz)
            raise
        with self.obs_lock:
            old = self.obs.get(mid)
            self.obs[mid] = kz
        if old is not None:
            self.drop(old)

    def agree(self, mids, digest):
        """(True, how) when the tree read from each of mids is the same (and, with digest, mntr's zk_digest)."""
        hashes, marks = {}, {}
        for m in mids:
            try:
                hashes[m] = self.tree_hash(m)
            except Exception as e:  # noqa: BLE001 - not serving yet
                return False, f"server.{m}: tree not readable ({type(e).__name__})"
            if digest:
                x = self.members[m].mntr()
                marks[m] = (x.get("zk_digest"), x.get("zk_digest_zxid"))
        if len(set(hashes.values())) != 1:
            return False, "trees differ: " + " ".join(f"server.{m}={h}/{n} nodes" for m, (h, n) in sorted(hashes.items()))
        if digest and (len(set(marks.values())) != 1 or None in marks[mids[0]]):
            return False, "mntr digests differ: " + " ".join(f"server.{m}={v}" for m, v in sorted(marks.items()))
        h, n = hashes[mids[0]]
        return True, f"{n} nodes, tree hash {h}" + (" and mntr zk_digest %s at zxid %s" % marks[mids[0]]
                                                    if digest else "") + f" on servers {','.join(map(str, mids))}"

    def wait_agree(self, what, t0, mids, digest, timeout):
        last = [""]

        def cond():
            ok, how = self.agree(mids, digest)
            last[0] = how
            return ok

        return self.wait_for(what, t0, cond, timeout, every=0.2), last[0]

    def modes_of(self, mids):
        return " ".join(f"server.{m}={self.members[m].mode() or '-'}" for m in mids)

    # what the ZooKeeper client, Curator and Dubbo log when a session is gone (not the ZooKeeper client's
    # "Attempting reconnect except it is a SessionExpiredException" of every lost connection, nor Dubbo's
    # "session expire timeout value is ..." of every SUSPENDED)
    EXPIRY = re.compile(r"State change: LOST|has expired|Injecting a session expiration|expired event|"
                        r"session \S+ expired", re.I)

    def expiry_lines(self):
        """Lines of the Dubbo processes' logs that say a session expired."""
        out = []
        for name, j in self.jvms.items():
            try:
                with open(j.errlog, errors="replace") as f:
                    out += [f"{name}: {ln.strip()}" for ln in f
                            if self.EXPIRY.search(ln)]
            except OSError:
                pass
        return out

    # -------------------------------------------------------------- steps

    def run(self):
        try:
            self.s1_start()
            self.s2_tree()
            self.s3_takeover()
            self.s4_after()
            self.s5_new_provider()
            way_back(self, ZKR_IDS, Server, self.back_servers, SESSION_MS)
        except Fatal as e:
            say(f"FATAL: {e}")
            self.fatal = str(e).splitlines()[0]
        except Exception as e:  # noqa: BLE001 - reported
            say(f"driver error: {traceback.format_exc()}")
            self.fatal = f"driver error: {e!r}"
        finally:
            self.teardown()

    def start_servers(self, ids):
        for m in ids:
            self.members[m].start()
        for m in ids:
            mem, end = self.members[m], time.time() + 90
            while mem.four("ruok") != "imok":
                if not mem.alive() or time.time() > end:
                    raise Fatal(f"server.{m} did not start on {mem.host}:{mem.port}:\n{mem.log_tail()}")
                time.sleep(0.1)

    def s1_start(self):
        t0 = self.step("1 ZooKeeper (3 participants) and 3 zkr observers start; p1, p2 and the consumer register")
        self.start_servers(ZK_IDS)
        if self.wait_for("ZooKeeper: one leader, two followers", t0, lambda: self.one_leader(list(ZK_IDS)),
                         60) is None:
            raise Fatal(f"no ZooKeeper leader: {self.modes_of(ZK_IDS)}")
        self.tl("modes", self.modes_of(ZK_IDS))
        self.start_servers(ZKR_IDS)
        t_obs = self.wait_for("zkr observers synced (Mode: observer)", t0,
                              lambda: all(self.members[m].mode() == "observer" for m in ZKR_IDS), 60)
        self.tl("modes", self.modes_of(ZKR_IDS))
        if t_obs is None:
            raise Fatal(f"the zkr observers did not sync: {self.modes_of(ZKR_IDS)}\n"
                        f"{self.members[ZKR_IDS[0]].log_tail()}")
        for m in ZK_IDS + ZKR_IDS:
            self.connect_observer(m)
        self.tl("registry", self.registry(SESSION_MS))
        self.start_jvm("p1", "provider", SESSION_MS, "p1")
        self.start_jvm("p2", "provider", SESSION_MS, "p2")
        self.start_jvm("c", "consumer", SESSION_MS)
        for name in ("p1", "p2", "c"):
            self.wait_ready(name)
        want = ["p1", "p2"]
        t = self.wait_for("p1, p2, consumer on every server; consumer directories list p1, p2", t0,
                          lambda: all(self.exact(m, want) for m in ZK_IDS + ZKR_IDS) and self.dir_is(want), 60)
        ok, text = self.calls_ok(want)
        self.check("setup", t is not None and ok,
                   f"{self.modes_of(ZK_IDS + ZKR_IDS)}; " +
                   ("registered" if t is not None else
                    f"providers {[self.providers(m) for m in ZK_IDS + ZKR_IDS]}, directories {self.dirs()}") +
                   f"; {text}")
        if t is None:
            raise Fatal("Dubbo did not register")

    def s2_tree(self):
        t0 = self.step("2 the zkr observers serve ZooKeeper's tree")
        t, how = self.wait_agree("the six servers serve the same tree", t0, list(ZK_IDS + ZKR_IDS), False, 30)
        self.tl("agreement", how)
        self.check("observed_tree", t is not None, how)

    def s3_takeover(self):
        want = ["p1", "p2"]
        zk_leader = self.leader(list(ZK_IDS))
        if zk_leader is None:
            raise Fatal(f"no single ZooKeeper leader before the takeover: {self.modes_of(ZK_IDS)}")
        self.before = self.owners(zk_leader)
        bad = [f"server.{m}: {o}" for m in ZKR_IDS for o in [self.owners(m)] if o != self.before]
        self.tl("Dubbo ephemerals (owner sessions)",
                ", ".join(f"{k}=0x{v:x}" if v else f"{k}=-" for k, v in sorted(self.before.items())))
        if bad:
            self.tl("the zkr observers differ", "; ".join(bad))
        if len(self.before) != 5 or None in self.before.values():
            raise Fatal(f"the Dubbo ephemerals before the takeover are not as expected: {self.before}")
        self.sessions = self.dubbo_sessions()
        where = {m: len(self.members[m].sessions() & self.sessions) for m in ZK_IDS + ZKR_IDS}
        self.tl("Dubbo sessions by server", f"{len(self.sessions)} sessions: " +
                ", ".join(f"server.{m}={n}" for m, n in where.items()))
        # the kazoo clients of this driver go; new ones are opened on the zkr ensemble after the takeover
        for m in list(self.obs):
            self.drop_observer(m)
        self.t_calls = time.time()
        time.sleep(2.0)  # background calls before ZooKeeper stops
        t0 = self.step("3 ZooKeeper's participants stop (SIGTERM, followers first); zkr takeover")
        self.t_stop = t0
        order = [m for m in ZK_IDS if m != zk_leader] + [zk_leader]
        for m in order:
            took = self.members[m].stop(signal.SIGTERM)
            self.tl(f"server.{m} SIGTERM", f"{'leader' if m == zk_leader else 'follower'}, down in {took:.1f}s "
                                           f"(+{time.time() - t0:.1f}s)")
        t_zk_down = time.time()
        if self.args.delay_takeover:
            self.tl("takeover delayed (--delay-takeover)", f"{self.args.delay_takeover:.0f}s")
            time.sleep(self.args.delay_takeover)
        # The stopped participants' data: zkr takeover checks that the observers hold every txn
        # ZooKeeper may have committed (a write acknowledged just before the stop, never sent to them).
        data = ",".join(os.path.join(self.members[m].dir, "data") for m in ZK_IDS)
        cmd = [self.args.zkr_bin, "takeover", "--config", self.members[ZKR_IDS[0]].cfg, "--zookeeper-data", data]
        env = dict(os.environ, ZKR_ADMIN_AUTH=f"digest:{ADMIN_USER}:{ADMIN_PASSWORD}")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True, env=env)
        self.pids.add(proc)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        self.pids.reap(proc)
        self.t_takeover = time.time()
        with open(os.path.join(self.work, "takeover.out"), "w") as f:
            f.write(out)
        for line in out.splitlines():
            self.tl("zkr takeover", line)
        self.tl("zkr takeover exit", f"{proc.returncode}, {self.t_takeover - t_zk_down:.1f}s after the last "
                                     f"ZooKeeper participant stopped (+{self.t_takeover - t0:.1f}s)")
        self.check("takeover", proc.returncode == 0,
                   f"stopped server.{', server.'.join(map(str, order))}; zkr takeover exit {proc.returncode} after "
                   f"{self.t_takeover - t_zk_down:.1f}s: " + " | ".join(out.splitlines()[-3:]))
        if proc.returncode != 0:
            for m in ZKR_IDS:
                say(f"server.{m} log tail:\n{self.members[m].log_tail(30)}")
        self.t_back = self.wait_for(f"all {len(self.sessions)} Dubbo sessions served by zkr", t0,
                                    lambda: self.sessions <= self.dubbo_sessions(), 60)
        # this driver's own clients on each zkr member
        for m in ZKR_IDS:
            self.wait_for(f"server.{m} takes a new client", t0, lambda m=m: self.connect_observer(m) or True, 30,
                          every=0.5)
        self.kept_t0 = t0
        self.want = want

    def s4_after(self):
        want = self.want
        t0 = self.step(f"4 the zkr ensemble, until {AFTER_S:.0f} s after the takeover")
        mids = list(ZKR_IDS)
        t_l = self.wait_for("one leader, two followers", t0, lambda: self.one_leader(mids), 30)
        self.tl("modes", self.modes_of(mids))
        t_a, how = self.wait_agree("the three members agree", t0, mids, True, 30)
        self.check("zkr_members", t_l is not None and t_a is not None, f"{self.modes_of(mids)}; {how}")
        time.sleep(max(0.0, self.t_takeover + AFTER_S - time.time()))  # calls keep running meanwhile
        t1 = time.time()
        text = self.ticks_text(self.t_calls, t1)
        ok, fail, by, errs, n, gap = self.ticks(self.t_calls, t1)
        self.tl("background calls, 2 s before ZooKeeper stopped to 20 s after the takeover", text)
        ok_b, fail_b, by_b, _, _, gap_b = self.ticks(self.t_stop, self.t_takeover)
        self.tl("  of these, while ZooKeeper stopped and the takeover ran",
                f"{ok_b} ok, {fail_b} failed; longest gap {gap_b:.1f}s")
        late = self.t_takeover + AFTER_S / 2
        ok_a, fail_a, by_a, _, _, gap_a = self.ticks(late, t1)
        after = f"{ok_a} ok, {fail_a} failed ({','.join(f'{k}:{v}' for k, v in sorted(by_a.items())) or '-'})"
        self.tl(f"  of these, the last {t1 - late:.0f}s", after)
        ok100, text100 = self.calls_ok(want)
        self.check("calls", fail == 0 and ok > 0 and ok_a > 0 and sorted(by_a) == want and ok100,
                   f"{text}; last {t1 - late:.0f}s: {after}; {text100}")
        bad = []
        owners = {}
        for m in mids:
            owners[m] = self.owners(m)
            if not self.exact(m, want):
                bad.append(f"server.{m}: providers {self.providers(m)}, /services {self.services(m)}, "
                           f"consumers {self.consumers(m)}")
            elif owners[m] != self.before:
                bad.append(f"server.{m}: sessions changed "
                           f"{sorted(k for k in owners[m] if owners[m][k] != self.before.get(k))}")
        if self.t_back is None:
            left = self.sessions - self.dubbo_sessions()
            bad.append(f"{len(left)} Dubbo sessions not served by zkr: {[hex(s) for s in sorted(left)]}")
        kept, dtext = self.consumer_kept(self.kept_t0, want)
        if not kept:
            bad.append(dtext)
        self.check("nodes", not bad, "; ".join(bad) if bad else
                   f"p1, p2, their /services and the consumer on server.9-11, owned by the same sessions; "
                   f"{len(self.sessions)} Dubbo sessions back on zkr after {self.t_back:.1f}s; {dtext}")
        changed = sorted({k for o in owners.values() for k in set(o) | set(self.before)
                          if o.get(k) != self.before.get(k)})
        exp = self.expiry_lines()
        self.check("no_expiry", not changed and not exp,
                   ("ephemeralOwner changed: " + ", ".join(changed) if changed else
                    "every ephemeralOwner unchanged") + ("; " + " | ".join(exp[:3]) if exp else
                                                         "; no Dubbo log mentions an expired session"))

    def s5_new_provider(self):
        t0 = self.step("5 p3 starts after the takeover")
        self.start_jvm("p3", "provider", SESSION_MS, "p3")
        self.wait_ready("p3")
        self.tl("p3 ready", f"+{time.time() - t0:.1f}s")
        want3 = ["p1", "p2", "p3"]
        t = self.wait_for("p3 on every zkr member; consumer directories list it", t0,
                          lambda: all(self.exact(m, want3) for m in ZKR_IDS) and self.dir_is(want3), 60)
        ok, text = self.calls_ok(want3)
        self.tl("background calls during step 5", self.ticks_text(t0, time.time()))
        self.check("new_provider", t is not None and ok,
                   ("registered" if t is not None else
                    f"providers {[self.providers(m) for m in ZKR_IDS]}, directories {self.dirs()}") + f"; {text}")


# ------------------------------------------------------------------------------------------------ report


def report(args, run, elapsed):
    label = f"{args.label}, live migration from ZooKeeper 3.8 to zkr"
    print(f"\n== {label}: timeline (seconds from the start of each step)")
    for step, what, text in run.timeline:
        if what is None:
            print(step)
        else:
            print(f"  {what}: {text}")
    print(f"\n== {label}: checks")
    if run.fatal:
        print(f"   the scenario stopped early: {run.fatal}")
    passed = failed = 0
    rows = []
    for cid, feature in CHECKS:
        ok, note = run.results.get(cid, (False, "not run"))
        passed += ok
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} [migrate] {feature}")
        print(f"       {'ok' if ok else 'FAILED'} - {note}")
        v = "pass" if ok else "fail"
        rows.append((label, feature, v, v, f"one run from ZooKeeper to zkr (one verdict): {note}"))
    os.makedirs(os.path.dirname(os.path.abspath(args.tsv)), exist_ok=True)
    with open(args.tsv, "w") as f:
        for row in rows:
            f.write("\t".join(c.replace("\t", " ").replace("\n", " ") for c in row) + "\n")
    print(f"{label}: took {elapsed:.0f}s")
    print(f"{label}: {passed} passed, {failed} failed")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--label", required=True)
    ap.add_argument("--cp", required=True, help="class path: Node's classes and Dubbo's jars")
    ap.add_argument("--zkr-bin", required=True)
    ap.add_argument("--port-base", type=int, default=28300, help="ports used: base+1 .. base+74")
    ap.add_argument("--work", required=True)
    ap.add_argument("--tsv", required=True)
    ap.add_argument("--pidfile", required=True)
    ap.add_argument("--java-opt", action="append", default=[], help="an extra JVM option for the Dubbo processes")
    ap.add_argument("--delay-takeover", type=float, default=0.0,
                    help="for checking the checks: seconds between ZooKeeper's stop and the takeover (past the "
                         "session timeout, sessions expire and the checks must fail)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    logging.basicConfig(filename=os.path.join(args.work, "kazoo.log"), level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    pids = Pids(args.pidfile)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.time()
    run = None
    try:
        run = Migration(args, pids)
        run.run()
    finally:
        pids.kill_all()
    failed = report(args, run, time.time() - started)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
