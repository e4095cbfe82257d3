#!/usr/bin/python3
"""Helpers for tests/interop/import/run.sh (Debian's python3-kazoo 2.8).

  zkimport.py workload ADDR PRESTOP.json READY_FILE SNAPSHOT_DIR
      Writes about 500 txns to a fresh ZooKeeper (snapCount=50), the last
      ~20 of them certainly after the newest snapshot in SNAPSHOT_DIR; dumps
      the resulting tree (as the super user) to PRESTOP.json, writes
      READY_FILE, then sleeps forever: the two "holder" sessions (with their
      ephemerals) stay open until run.sh crashes/stops ZooKeeper and kills
      this process.

  zkimport.py dump ADDR OUT.json [--probe] [--sync]
      Walks the whole tree from "/" as the super user: data, Stat, ACL of
      every node.  With --probe it afterwards creates PROBE_PATH and records
      its czxid (tells the server's next zxid).  With --sync it first syncs
      (an ensemble member catches up with its leader before the walk).

  zkimport.py max-zxid DUMP.json
      Prints the highest czxid, mzxid or pzxid of the dump's nodes (hex).

  zkimport.py types ADDR OUT.json
      Deletes the children of the nodes in TYPES_EXPECTED and records which
      of them the server removes within a few seconds (containers, TTL nodes).

  zkimport.py expiry ADDR START_EPOCH_SECS OUT.json
      Waits until the ephemerals of both holder sessions are gone; records
      the seconds since START_EPOCH_SECS.

  zkimport.py more-writes ADDR
      A few writes on top of the workload's tree (the export round trip's
      "zkr with writes" step): creates, setData, setACL, a delete.

  zkimport.py reattach ADDR SESSIONS.json OUT.json [--close-first]
      Tries to re-attach to each session of SESSIONS.json (written by the
      workload when IMPORT_SESSIONS_OUT is set: id and password of the holder
      sessions) and records which ones the server accepted.  With
      --close-first only the first session is tried and, if accepted, closed
      (its ephemerals go); the others are not touched.

  Environment: WORKLOAD_QUOTA=1 makes the workload also set a quota on
  /app (the zookeeper_limits and zookeeper_stats nodes zkCli's setquota
  writes).

  zkimport.py compare-types LABEL EXPECTED.json ACTUAL.json EXPECTED_NAME ACTUAL_NAME

  zkimport.py compare LABEL EXPECTED.json ACTUAL.json [EXPECTED_NAME ACTUAL_NAME] [--skip PATH]...
      One "PASS ..." / "FAIL ..." line per check (path set, data, each Stat
      field, ACL, last zxid when both dumps have a probe).  A failure is
      followed by indented lines showing the first differences.  --skip
      leaves a path out of both (an ensemble's /zookeeper/config).
"""

import json
import os
import struct
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, NoNodeError, NodeExistsError,
                              NotEmptyError)
from kazoo.protocol.states import ZnodeStat
from kazoo.security import (ACL, ANYONE_ID_UNSAFE, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE,
                            READ_ACL_UNSAFE, Id, Permissions, make_digest_acl)

SUPER = ("digest", "super:secret")
ALICE = ("digest", "alice:alice-pw")
PROBE_PATH = "/zkr-import-probe"
HOLDER_TIMEOUT = float(os.environ.get("IMPORT_HOLDER_TIMEOUT", "20"))  # seconds (max 40 with tickTime=2000)
STAT_FIELDS = ["czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion",
               "aversion", "ephemeralOwner", "dataLength", "numChildren"]
ZXID_FIELDS = {"czxid", "mzxid", "pzxid", "ephemeralOwner"}


def log(*a):
    print("[zkimport]", *a, file=sys.stderr, flush=True)


def connect(addr, auth, timeout=10.0):
    c = KazooClient(hosts=addr, timeout=timeout, auth_data=list(auth),
                    connection_retry={"max_tries": 3, "delay": 0.2},
                    command_retry={"max_tries": 0})
    c.start(timeout=15)
    return c


# --------------------------------------------------------------------------
# raw requests kazoo 2.8 has no API for (container / TTL create, null data)

def _jbuf(b):
    if b is None:
        return struct.pack("!i", -1)
    return struct.pack("!i", len(b)) + b


def _jstr(s):
    return _jbuf(s.encode("utf-8"))


def _jacl(acls):
    out = struct.pack("!i", len(acls))
    for a in acls:
        out += struct.pack("!i", a.perms) + _jstr(a.id.scheme) + _jstr(a.id.id)
    return out


class RawCreate:
    """CreateRequest under opcode 1 (create), 19 (createContainer) or 21
    (createTTL, with ttl); data may be None (a null buffer on the wire)."""

    def __init__(self, opcode, path, data, acl, flags, ttl=None):
        self.type = opcode
        self.path, self.data, self.acl, self.flags, self.ttl = path, data, acl, flags, ttl

    def serialize(self):
        b = _jstr(self.path) + _jbuf(self.data) + _jacl(self.acl) + struct.pack("!i", self.flags)
        if self.ttl is not None:
            b += struct.pack("!q", self.ttl)
        return bytearray(b)

    def deserialize(self, buf, off):
        n = struct.unpack_from("!i", buf, off)[0]
        return bytes(buf[off + 4:off + 4 + n]).decode("utf-8")


class RawSetData:
    """setData (5) whose data may be None."""
    type = 5

    def __init__(self, path, data, version=-1):
        self.path, self.data, self.version = path, data, version

    def serialize(self):
        return bytearray(_jstr(self.path) + _jbuf(self.data) + struct.pack("!i", self.version))

    def deserialize(self, buf, off):
        return ZnodeStat._make(struct.unpack_from("!qqqqiiiqiiq", buf, off))


def raw(c, request, timeout=10):
    ar = c.handler.async_result()
    c._call(request, ar)
    return ar.get(timeout=timeout)


# --------------------------------------------------------------------------
# workload

def expect_error(exc, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except exc:
        return
    raise AssertionError("expected %s from %s%r" % (exc.__name__, fn.__name__, a))


def run_workload(addr, snapdir):
    """Returns (main client, clients to keep open, txn count estimate, tail description)."""
    R, W, C, D, A = (Permissions.READ, Permissions.WRITE, Permissions.CREATE,
                     Permissions.DELETE, Permissions.ADMIN)
    ALL = Permissions.ALL
    c = connect(addr, [ALICE])
    holder = connect(addr, [ALICE], timeout=HOLDER_TIMEOUT)
    n = 2

    def op(fn, *a, **kw):
        nonlocal n
        n += 1
        return fn(*a, **kw)

    # the root and the system subtree
    op(c.set, "/", b"root data")

    # nested paths (ensure_path creates every missing level with empty data)
    for p in ["/app/svc/a/b/c/d/e", "/app/svc/x/y", "/app/cfg/prod", "/app/cfg/test"]:
        op(c.ensure_path, p)
    op(c.create, "/app/svc/a/b/c/d/e/leaf", b"deep leaf")

    # data shapes
    op(c.create, "/data", b"")
    op(c.create, "/data/empty", b"")
    op(raw, c, RawCreate(1, "/data/null", None, OPEN_ACL_UNSAFE, 0))
    op(c.create, "/data/binary", bytes(range(256)) * 4)
    op(c.create, "/data/nul-byte", b"\x00")
    op(c.create, "/data/utf8", "h\u00e9llo w\u00f6rld \u2713 \U0001F600".encode("utf-8"))
    op(c.create, "/data/big", bytes((i * 7 + i // 256) % 256 for i in range(200000)))
    op(c.create, "/data/set-to-null", b"was set")
    op(raw, c, RawSetData("/data/set-to-null", None))
    op(c.create, "/data/set-to-empty", b"x")
    op(c.set, "/data/set-to-empty", b"")
    op(c.create, "/data/create2", b"via create2", include_data=True)
    for name in ["with space", "\u00fcn\u00efc\u00f8d\u00e9", "a.b-c_d", "x" * 200]:
        op(c.create, "/data/" + name, name.encode("utf-8"))

    # setData several times
    op(c.create, "/data/counter", b"0")
    for i in range(1, 15):
        op(c.set, "/data/counter", b"%d" % i)
    for i in range(3):
        op(c.set, "/data/binary", bytes([i]) * (100 * i), version=i)

    # sequential nodes, some deleted (cversion/pzxid move, names are not reused)
    op(c.create, "/queue", b"q")
    seqs = [op(c.create, "/queue/item-", b"%d" % i, sequence=True) for i in range(40)]
    for p in seqs[::3]:
        op(c.delete, p)
    op(c.create, "/queue/item-", b"after deletes", sequence=True)
    op(c.create, "/queue/", b"empty prefix", sequence=True)

    # churn: children created and deleted, a name deleted and created again
    op(c.create, "/churn", b"")
    for i in range(30):
        op(c.create, "/churn/c%02d" % i, b"v%d" % i)
    for i in range(0, 30, 2):
        op(c.delete, "/churn/c%02d" % i)
    for i in range(0, 10, 2):
        op(c.create, "/churn/c%02d" % i, b"again")
    op(c.ensure_path, "/churn/sub/a/b")
    op(c.create, "/churn/sub/a/b/c", b"")
    op(c.delete, "/churn/sub", recursive=True)
    n += 3
    op(c.create, "/churn/only-deleted-parent", b"")
    op(c.create, "/churn/only-deleted-parent/kid", b"")
    op(c.delete, "/churn/only-deleted-parent/kid")

    # ACLs
    op(c.create, "/acl", b"")
    op(c.create, "/acl/creator", b"alice's", acl=CREATOR_ALL_ACL)
    op(c.create, "/acl/creator/child", b"", acl=CREATOR_ALL_ACL)
    op(c.create, "/acl/world-read", b"read only", acl=READ_ACL_UNSAFE)
    op(c.create, "/acl/ip", b"ip", acl=[ACL(ALL, Id("ip", "127.0.0.1"))])
    op(c.create, "/acl/ip-net", b"", acl=[ACL(R, Id("ip", "10.0.0.0/8")),
                                          ACL(ALL, Id("ip", "127.0.0.0/8"))])
    op(c.create, "/acl/bob-only", b"bob's",
       acl=[make_digest_acl("bob", "bob-pw", all=True)])
    op(c.create, "/acl/mixed", b"mixed",
       acl=[make_digest_acl("bob", "bob-pw", read=True, write=True),
            ACL(R | C, ANYONE_ID_UNSAFE), ACL(ALL, Id("ip", "127.0.0.1")),
            ACL(R | W | C | D | A, Id("digest", "carol:8Vk7w0s3QHW7EYlrhbpJHDLiCqA="))])
    op(c.create, "/acl/changing", b"", acl=OPEN_ACL_UNSAFE)
    op(c.set_acls, "/acl/changing", READ_ACL_UNSAFE + CREATOR_ALL_ACL)
    op(c.set_acls, "/acl/changing", [ACL(R | W, ANYONE_ID_UNSAFE)] + CREATOR_ALL_ACL, version=1)
    op(c.set_acls, "/acl/changing", OPEN_ACL_UNSAFE, version=2)
    op(c.create, "/acl/same-as-open", b"", acl=OPEN_ACL_UNSAFE)  # shares an ACL-cache entry
    for i in range(5):
        op(c.create, "/acl/creator/n%d" % i, b"%d" % i, acl=CREATOR_ALL_ACL)

    # containers (createContainer, opcode 19, flags 4).  Only containers that
    # keep children or never had any, so ZooKeeper's container sweep (every
    # 60 s by default) cannot remove one between the stop and the walk.
    op(c.create, "/containers", b"")
    op(raw, c, RawCreate(19, "/containers/c1", b"cdata", OPEN_ACL_UNSAFE, 4))
    for i in range(4):
        op(c.create, "/containers/c1/k%d" % i, b"")
    op(c.delete, "/containers/c1/k0")
    op(raw, c, RawCreate(19, "/containers/never-used", b"", OPEN_ACL_UNSAFE, 4))
    op(raw, c, RawCreate(19, "/containers/acl", None, CREATOR_ALL_ACL, 4))
    op(c.create, "/containers/acl/k", b"")

    # TTL nodes (createTTL, opcode 21): flags 5 persistent, 6 persistent sequential
    op(c.create, "/ttl", b"")
    op(raw, c, RawCreate(21, "/ttl/t1", b"ttl one hour", OPEN_ACL_UNSAFE, 5, ttl=3600000))
    op(raw, c, RawCreate(21, "/ttl/t-", b"", OPEN_ACL_UNSAFE, 6, ttl=7200000))
    op(raw, c, RawCreate(21, "/ttl/t-", b"", OPEN_ACL_UNSAFE, 6, ttl=86400000))
    op(raw, c, RawCreate(21, "/ttl/big", b"", OPEN_ACL_UNSAFE, 5, ttl=(1 << 40) - 1))
    op(raw, c, RawCreate(21, "/ttl/parent", b"", OPEN_ACL_UNSAFE, 5, ttl=3600000))
    op(c.create, "/ttl/parent/child", b"")
    op(c.set, "/ttl/t1", b"touched")

    # node types observable only by behaviour (Stat.ephemeralOwner reads 0 for
    # containers and TTL nodes): run.sh empties these after the walk and
    # checks which ones the server then removes (see TYPES_EXPECTED)
    op(c.create, "/types", b"")
    op(raw, c, RawCreate(19, "/types/container", b"", OPEN_ACL_UNSAFE, 4))
    op(c.create, "/types/container/k", b"")
    op(raw, c, RawCreate(21, "/types/ttl-short", b"", OPEN_ACL_UNSAFE, 5, ttl=1000))
    op(c.create, "/types/ttl-short/k", b"")
    op(raw, c, RawCreate(21, "/types/ttl-long", b"", OPEN_ACL_UNSAFE, 5, ttl=3600000))
    op(c.create, "/types/ttl-long/k", b"")
    op(c.create, "/types/persistent", b"")
    op(c.create, "/types/persistent/k", b"")

    if os.environ.get("WORKLOAD_QUOTA") == "1":
        # as zkCli's "setquota -n 50 -b 100000 /app" writes it (SetQuotaCommand.createQuota)
        op(c.ensure_path, "/zookeeper/quota/app")
        n += 1
        op(c.create, "/zookeeper/quota/app/zookeeper_limits", b"count=50,bytes=100000")
        op(c.create, "/zookeeper/quota/app/zookeeper_stats", b"count=0,bytes=0")
        op(c.create, "/app/cfg/under-quota", b"counted")

    # multi transactions: a successful one and a failed one (ZooKeeper logs
    # the failed multi too, with error results, and it consumes a zxid)
    op(c.create, "/multi", b"")
    op(c.create, "/multi/old", b"")
    t = c.transaction()
    t.create("/multi/a", b"1")
    t.create("/multi/b", b"2")
    t.set_data("/multi/a", b"1b")
    t.check("/multi/old", 0)
    t.delete("/multi/old")
    t.create("/multi/seq-", b"", sequence=True)
    res = t.commit()
    assert not any(isinstance(r, Exception) for r in res), res
    n += 1
    t = c.transaction()
    t.create("/multi/never", b"")
    t.delete("/multi/does-not-exist")
    res = t.commit()
    assert any(isinstance(r, Exception) for r in res), res
    assert c.exists("/multi/never") is None
    n += 1

    # failed single writes (ZooKeeper logs an error txn for each)
    op(expect_error, NodeExistsError, c.create, "/multi/a", b"")
    op(expect_error, NoNodeError, c.delete, "/multi/nope")
    op(expect_error, BadVersionError, c.set, "/multi/a", b"", version=42)
    op(expect_error, NotEmptyError, c.delete, "/multi")

    # ephemerals of a session that stays open until ZooKeeper goes down and
    # is therefore in the snapshots
    op(c.create, "/eph", b"")
    op(holder.create, "/eph/h1", b"held", ephemeral=True)
    op(holder.create, "/eph/h2", b"", ephemeral=True, acl=CREATOR_ALL_ACL)
    for i in range(3):
        op(holder.create, "/eph/lock-", b"%d" % i, ephemeral=True, sequence=True)
    op(holder.create, "/containers/c1/eph", b"", ephemeral=True)

    # bulk: enough txns to span many snapshot/log files with snapCount=50
    op(c.create, "/bulk", b"")
    for i in range(150):
        op(c.create, "/bulk/n%03d" % i, b"value %d" % i)
    for i in range(0, 150, 2):
        op(c.set, "/bulk/n%03d" % i, b"changed %d" % i)
    for i in range(0, 150, 5):
        op(c.delete, "/bulk/n%03d" % i)
    for i in range(20):
        op(c.set, "/app/cfg/prod", b"rev %d" % i)

    # filler until ZooKeeper has just started a snapshot, so that the tail
    # below (fewer txns than the smallest snapshot interval, snapCount/2) is
    # certain to be only in the log after the newest snapshot (the first few
    # may also be in that fuzzy snapshot)
    op(c.create, "/filler", b"")
    snap0 = newest_snapshot(snapdir)
    for i in range(200):
        op(c.set, "/filler", b"%d" % i)
        if newest_snapshot(snapdir) != snap0:
            break
    else:
        raise AssertionError("no new snapshot in %s after 200 txns" % snapdir)
    snap = newest_snapshot(snapdir)

    # the tail (keep it under 25 txns): sessions created and closed,
    # ephemerals, a closeSession that deletes some, multis, an error txn
    tmp = connect(addr, [])
    op(tmp.create, "/eph/tmp1", b"", ephemeral=True)
    op(tmp.create, "/data/tmp-eph", b"elsewhere", ephemeral=True)
    tmp.stop()
    tmp.close()
    n += 2
    holder2 = connect(addr, [ALICE], timeout=HOLDER_TIMEOUT)
    n += 1
    op(holder2.create, "/eph/h2-1", b"second holder", ephemeral=True)
    op(holder2.create, "/eph/lock-", b"h2", ephemeral=True, sequence=True)
    op(holder.set, "/eph/h1", b"held, changed")
    op(raw, c, RawCreate(19, "/containers/eph-only", b"", OPEN_ACL_UNSAFE, 4))
    op(holder2.create, "/containers/eph-only/e", b"", ephemeral=True)
    t = c.transaction()
    t.create("/multi/never2", b"")
    t.set_data("/multi/does-not-exist", b"")
    res = t.commit()
    assert any(isinstance(r, Exception) for r in res), res
    n += 1
    t = c.transaction()
    t.create("/multi/tail", b"t")
    t.set_data("/multi/a", b"1c")
    t.delete("/multi/b")
    res = t.commit()
    assert not any(isinstance(r, Exception) for r in res), res
    n += 1
    op(expect_error, NodeExistsError, c.create, "/multi/a", b"")
    op(c.set, "/", b"root data, final")
    op(c.delete, "/churn/c01")
    op(c.set_acls, "/acl/changing", READ_ACL_UNSAFE, version=3)
    last = op(c.create, "/last", b"written last", include_data=True)[1].czxid
    tail = "%d txns in log files after snapshot.%x" % (last - snap, snap)
    if newest_snapshot(snapdir) != snap:  # slow machine: the filler overshot
        tail = "a snapshot was taken during the tail, after snapshot.%x" % snap
    return c, [holder, holder2], n, tail


def newest_snapshot(snapdir):
    # snapshot.<zxid>[.gz|.snappy]; zkr's snapshot.<zxid>.tmp is a snapshot still being written
    zx = [int(f.split(".")[1], 16) for f in os.listdir(snapdir)
          if f.startswith("snapshot.") and not f.endswith(".tmp")]
    return max(zx) if zx else -1


# --------------------------------------------------------------------------
# behaviour checks after the walk

TYPES_EXPECTED = {  # path -> still there after its only child is deleted
    "/types/container": False,
    "/types/ttl-short": False,
    "/types/ttl-long": True,
    "/types/persistent": True,
    "/containers/never-used": True,
}


def types(addr, out, wait=8.0):
    c = connect(addr, [SUPER])
    try:
        for p in TYPES_EXPECTED:
            for k in c.get_children(p):
                c.delete(p + "/" + k)
        deadline = time.time() + wait
        while True:
            state = {p: c.exists(p) is not None for p in TYPES_EXPECTED}
            if state == TYPES_EXPECTED or time.time() > deadline:
                break
            time.sleep(0.2)
    finally:
        c.stop()
        c.close()
    with open(out, "w") as f:
        json.dump(state, f, indent=1, sort_keys=True)


def expiry(addr, started, out, paths=("/eph/h1", "/eph/h2-1"), wait=90.0):
    """Seconds from the server's start until the ephemeral nodes of both
    holder sessions are gone (null if one is still there after `wait`)."""
    c = connect(addr, [SUPER])
    gone = None
    try:
        while time.time() < float(started) + wait:
            if all(c.exists(p) is None for p in paths):
                gone = round(time.time() - float(started), 1)
                break
            time.sleep(0.2)
    finally:
        c.stop()
        c.close()
    with open(out, "w") as f:
        json.dump({"gone_after": gone}, f)


def compare_types(label, exp_file, act_file, exp_name, act_name):
    with open(exp_file) as f:
        exp = json.load(f)
    with open(act_file) as f:
        act = json.load(f)
    bad = []
    for p, want in sorted(TYPES_EXPECTED.items()):
        if exp[p] != want or act[p] != want:
            bad.append("%s: expected %s; %s: %s, %s: %s" % (
                p, "kept" if want else "removed", exp_name, "kept" if exp[p] else "removed",
                act_name, "kept" if act[p] else "removed"))
    if bad:
        print("FAIL %s/types: after deleting their only child, container and TTL nodes "
              "are removed, others are kept" % label)
        for b in bad:
            print("    " + b)
        return 1
    print("PASS %s/types: emptied container and expired TTL node removed, others kept, on both"
          % label)
    return 0


def more_writes(addr):
    c = connect(addr, [ALICE])
    try:
        c.create("/roundtrip", b"written on zkr")
        c.create("/roundtrip/seq-", b"", sequence=True)
        c.set("/app/cfg/prod", b"changed on zkr")
        c.set_acls("/acl/same-as-open", READ_ACL_UNSAFE + CREATOR_ALL_ACL)
        c.delete("/bulk/n001")
        c.create("/app/cfg/under-quota-2", b"zkr")
    finally:
        c.stop()
        c.close()


def reattach(addr, sessions_file, out, close_first=False):
    """For each session: did the server accept its (id, password)?  Each try
    runs in a child process that exits without closeSession, so an accepted
    session is left as it was (only --close-first closes the first one)."""
    with open(sessions_file) as f:
        sessions = json.load(f)
    res = []
    for i, s in enumerate(sessions):
        if close_first and i > 0:
            break  # the others stay untouched, to expire on their own
        sid, pw = s["id"], bytes.fromhex(s["password"])
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            attached = False
            try:
                c = KazooClient(hosts=addr, timeout=HOLDER_TIMEOUT, client_id=(sid, pw),
                                connection_retry={"max_tries": 3, "delay": 0.2},
                                command_retry={"max_tries": 0})
                c.start(timeout=15)
                attached = c.client_id is not None and c.client_id[0] == sid
                if attached and close_first and i == 0:
                    c.stop()
            except Exception as e:  # noqa: BLE001 - any failure to attach is "not attached"
                log("re-attach 0x%x: %r" % (sid, e))
            os.write(w, b"1" if attached else b"0")
            os._exit(0)
        os.close(w)
        got = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
        res.append({"id": "0x%x" % sid, "attached": got == b"1"})
    with open(out, "w") as f:
        json.dump(res, f)


# --------------------------------------------------------------------------
# dump / compare

def walk(c):
    nodes = {}
    stack = ["/"]
    while stack:
        path = stack.pop()
        data, stat = c.get(path)
        acls, _ = c.get_acls(path)
        kids = c.get_children(path)
        nodes[path] = {
            "data": None if data is None else data.hex(),
            "stat": {f: getattr(stat, f) for f in STAT_FIELDS},
            "acl": sorted([a.perms, a.id.scheme, a.id.id] for a in acls),
            "children": sorted(kids),
        }
        for k in kids:
            stack.append(("" if path == "/" else path) + "/" + k)
    return nodes


def dump(addr, out, probe=False, sync=False):
    t0 = time.time()
    c = connect(addr, [SUPER])
    try:
        if sync:
            c.sync("/")
        dump_with(c, addr, out, t0, probe)
    finally:
        c.stop()
        c.close()


def dump_with(c, addr, out, t0, probe=False):
    nodes = walk(c)
    res = {"addr": addr, "nodes": nodes, "walk_secs": round(time.time() - t0, 3)}
    if probe:
        c.create(PROBE_PATH, b"probe")
        res["probe_czxid"] = c.exists(PROBE_PATH).czxid
    with open(out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    log("%s: %d nodes in %.2fs" % (addr, len(nodes), time.time() - t0))


def fmt_val(field, v):
    if field in ZXID_FIELDS and isinstance(v, int):
        return "0x%x" % (v & 0xFFFFFFFFFFFFFFFF)
    if field == "data" and v is not None:
        return (repr(bytes.fromhex(v)[:40]) + ("...(%d bytes)" % (len(v) // 2)
                                                if len(v) > 80 else ""))
    return repr(v)


def max_zxid(dump_file):
    with open(dump_file) as f:
        nodes = json.load(f)["nodes"]
    return max(n["stat"][k] for n in nodes.values() for k in ("czxid", "mzxid", "pzxid"))


def compare(label, exp_file, act_file, exp_name="expected", act_name="actual", skip=()):
    with open(exp_file) as f:
        exp = json.load(f)
    with open(act_file) as f:
        act = json.load(f)
    E, A = exp["nodes"], act["nodes"]
    for p in skip:
        E.pop(p, None)
        A.pop(p, None)
    failed = 0
    lines = []

    def check(name, diffs, ok_detail, nshow=6):
        nonlocal failed
        if diffs:
            failed += 1
            lines.append("FAIL %s/%s: %d difference(s) (expected = %s, actual = %s)"
                         % (label, name, len(diffs), exp_name, act_name))
            for d in diffs[:nshow]:
                lines.append("    " + d)
            if len(diffs) > nshow:
                lines.append("    ... %d more" % (len(diffs) - nshow))
        else:
            lines.append("PASS %s/%s: %s" % (label, name, ok_detail))

    missing = sorted(set(E) - set(A))
    extra = sorted(set(A) - set(E))
    neph = sum(1 for p in E if E[p]["stat"]["ephemeralOwner"] != 0)
    check("paths", ["missing: " + p for p in missing] + ["extra:   " + p for p in extra],
          "%d nodes on both, %d of them ephemeral" % (len(E), neph), nshow=10)
    common = sorted(set(E) & set(A))
    check("data", ["%s: %s != %s" % (p, fmt_val("data", E[p]["data"]), fmt_val("data", A[p]["data"]))
                   for p in common if E[p]["data"] != A[p]["data"]],
          "%d nodes" % len(common))
    for fld in STAT_FIELDS:
        diffs = ["%s: %s != %s" % (p, fmt_val(fld, E[p]["stat"][fld]), fmt_val(fld, A[p]["stat"][fld]))
                 for p in common if E[p]["stat"][fld] != A[p]["stat"][fld]]
        check("stat." + fld, diffs, "%d nodes" % len(common))
    check("acl", ["%s: %s != %s" % (p, E[p]["acl"], A[p]["acl"])
                  for p in common if E[p]["acl"] != A[p]["acl"]],
          "%d nodes" % len(common))
    if "probe_czxid" in exp and "probe_czxid" in act:
        e, a = exp["probe_czxid"], act["probe_czxid"]
        check("last-zxid", [] if e == a else
              ["czxid of a node created after a new session: 0x%x != 0x%x" % (e, a)],
              "next czxid 0x%x on both" % e)
    print("\n".join(lines), flush=True)
    return 1 if failed else 0


# --------------------------------------------------------------------------

def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "workload":
        addr, prestop, ready, snapdir = args
        t0 = time.time()
        c, holders, n, tail = run_workload(addr, snapdir)
        ids = " ".join("0x%x" % h.client_id[0] for h in holders)
        if os.environ.get("IMPORT_SESSIONS_OUT"):
            with open(os.environ["IMPORT_SESSIONS_OUT"], "w") as f:
                json.dump([{"id": h.client_id[0], "password": h.client_id[1].hex()} for h in holders], f)
        log("workload: about %d ops in %.1fs; %s; holder sessions %s"
            % (n, time.time() - t0, tail, ids))
        # the dump through the workload's own session (no further txns but
        # its closeSession): add_auth is no txn, and only the superuser can
        # read every node
        c.add_auth(*SUPER)
        dump_with(c, addr, prestop, time.time())
        c.stop()
        c.close()
        with open(ready, "w") as f:
            f.write("%d ops, holder sessions %s\n%s\n" % (n, ids, tail))
        threading.Event().wait()  # until killed; keeps the holder sessions open
    elif cmd == "dump":
        dump(args[0], args[1], probe="--probe" in args[2:], sync="--sync" in args[2:])
    elif cmd == "max-zxid":
        print("0x%x" % max_zxid(args[0]))
    elif cmd == "more-writes":
        more_writes(args[0])
    elif cmd == "reattach":
        reattach(args[0], args[1], args[2], close_first="--close-first" in args[3:])
    elif cmd == "types":
        types(args[0], args[1])
    elif cmd == "expiry":
        expiry(args[0], args[1], args[2])
    elif cmd == "compare-types":
        return compare_types(*args)
    elif cmd == "compare":
        pos, skip = [], []
        it = iter(args)
        for a in it:
            if a == "--skip":
                skip.append(next(it))
            else:
                pos.append(a)
        return compare(*pos, skip=skip)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
