#!/usr/bin/python3
"""kazoo interop scenarios.

Usage:
    scenarios.py --list
    scenarios.py SCENARIO HOST:PORT [PROXY_PORT]
    scenarios.py --cleanup HOST:PORT      # remove the suite's test nodes

Each scenario prints a JSON-lines transcript of everything the client
observed (one object per step, keys sorted).  The runner (run.sh) runs
the same scenario against Apache ZooKeeper and against zkr and compares
the transcripts after normalisation (see lib/compare.py).

PROXY_PORT is a free local port for scenarios that need to cut a
client's TCP connection (lib/tcpfwd.py).  Exit status is non-zero if
the scenario itself breaks (an unexpected exception, a timeout while
connecting...).  Expected ZooKeeper errors are part of the transcript.
"""

import faulthandler
import hashlib
import json
import os
import struct
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import kazoo.exceptions as kex  # noqa: E402
from kazoo.client import KazooClient  # noqa: E402
from kazoo.protocol.states import ZnodeStat  # noqa: E402
from kazoo.retry import KazooRetry  # noqa: E402
from kazoo.security import ACL, Id, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_digest_acl  # noqa: E402

from tcpfwd import Forwarder  # noqa: E402


# --------------------------------------------------------------------------
# kazoo 2.8 does not know the error codes added in ZooKeeper 3.5+; an unknown
# code in a reply would kill kazoo's connection thread.  Register them so they
# show up in the transcript as ordinary errors instead.
def _register_error(code, name):
    if code in kex.EXCEPTIONS:
        return
    cls = type(name, (kex.ZookeeperError,), {"code": code})
    kex.EXCEPTIONS[code] = cls


for _code, _name in [(-120, "EphemeralOnLocalSessionError"), (-121, "NoWatcherError"),
                     (-122, "ReconfigDisabledError"), (-123, "SessionClosedRequireSaslAuthError"),
                     (-124, "QuotaExceededError"), (-125, "ThrottledOpError"),
                     (-9, "UnknownSystemError9"), (-10, "UnknownSystemError10")]:
    _register_error(_code, _name)


class UnknownErrorCode(kex.ZookeeperError):
    pass


kex.EXCEPTIONS.default_factory = lambda: UnknownErrorCode


# --------------------------------------------------------------------------
# transcript helpers

_out_lock = threading.Lock()


def enc(v):
    if isinstance(v, ZnodeStat):
        return {
            "czxid": v.czxid, "mzxid": v.mzxid, "ctime": v.ctime, "mtime": v.mtime,
            "version": v.version, "cversion": v.cversion, "aversion": v.aversion,
            "ephemeralOwner": v.ephemeralOwner, "dataLength": v.dataLength,
            "numChildren": v.numChildren, "pzxid": v.pzxid,
        }
    if isinstance(v, ACL):
        return {"perms": v.perms, "scheme": v.id.scheme, "id": v.id.id}
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return "hex:" + bytes(v).hex()
    if isinstance(v, BaseException):
        return {"err": type(v).__name__}
    if isinstance(v, dict):
        return {str(k): enc(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [enc(x) for x in v]
    return v


def emit(step, **kw):
    line = json.dumps(dict(step=step, **{k: enc(x) for k, x in kw.items()}), sort_keys=True)
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def op(step, fn, *a, **kw):
    """Run one client call; record its result or its ZooKeeper error."""
    try:
        r = fn(*a, **kw)
    except kex.ZookeeperError as e:
        emit(step, err=type(e).__name__)
        return e
    emit(step, ok=r)
    return r


def children(step, c, path, **kw):
    """get_children with sorted names (ZooKeeper returns them unordered)."""
    try:
        r = c.get_children(path, include_data=True, **kw)
    except kex.ZookeeperError as e:
        emit(step, err=type(e).__name__)
        return e
    names, stat = r
    emit(step, children=sorted(names), stat=stat)
    return sorted(names)


class Events:
    """Collects watch events from any number of watchers, in arrival order."""

    def __init__(self):
        self.cv = threading.Condition()
        self.items = []

    def watcher(self, label):
        def w(ev):
            with self.cv:
                self.items.append([label, ev.type, ev.state, ev.path])
                self.cv.notify_all()
        return w

    def wait(self, n, timeout=10.0, settle=0.3):
        deadline = time.time() + timeout
        with self.cv:
            while len(self.items) < n:
                left = deadline - time.time()
                if left <= 0:
                    break
                self.cv.wait(left)
        time.sleep(settle)  # catch unexpected extra events

    def take(self):
        with self.cv:
            r, self.items = self.items, []
        return r

    def expect(self, step, n, timeout=10.0, settle=0.3, ordered=True):
        self.wait(n, timeout, settle)
        evs = self.take()
        if ordered:
            emit(step, events=evs)
        else:
            emit(step, events_unordered=sorted(evs))
        return evs


class StateLog:
    """Records kazoo's low-level KeeperState transitions (deduplicated)."""

    def __init__(self, client):
        self.cv = threading.Condition()
        self.states = []
        orig = client._session_callback

        def cb(state):
            with self.cv:
                if not self.states or self.states[-1] != state:
                    self.states.append(state)
                self.cv.notify_all()
            return orig(state)
        client._session_callback = cb

    def wait_for(self, state, timeout=15.0, count=1):
        deadline = time.time() + timeout
        with self.cv:
            while self.states.count(state) < count:
                left = deadline - time.time()
                if left <= 0:
                    raise RuntimeError("timed out waiting for state %s (have %s)" % (state, self.states))
                self.cv.wait(left)

    def get(self):
        with self.cv:
            return [str(s) for s in self.states]


def fast_retry():
    return KazooRetry(max_tries=-1, delay=0.1, backoff=1, max_jitter=0.1, max_delay=0.2)


def client(addr, timeout=10.0, start=True, **kw):
    c = KazooClient(hosts=addr, timeout=timeout, connection_retry=fast_retry(), **kw)
    if start:
        c.start(timeout=20)
    return c


def stop(*clients):
    for c in clients:
        try:
            c.stop()
            c.close()
        except Exception:
            pass


def fresh(c, root):
    """Remove what an earlier run against the same server left behind."""
    if c.exists(root):
        c.delete(root, recursive=True)


def wait_until(pred, timeout=15.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


# --------------------------------------------------------------------------
# raw requests for opcodes that kazoo 2.8 has no API for
# (our own jute encoding; kazoo's connection only needs .type, .serialize()
# and .deserialize())

def _jstr(s):
    if s is None:
        return struct.pack("!i", -1)
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("!i", len(b)) + b


def _jacl(acl):
    out = struct.pack("!i", len(acl))
    for a in acl:
        out += struct.pack("!i", a.perms) + _jstr(a.id.scheme) + _jstr(a.id.id)
    return out


def _read_jstr(buf, off):
    (n,) = struct.unpack_from("!i", buf, off)
    off += 4
    if n < 0:
        return None, off
    return bytes(buf[off:off + n]).decode("utf-8"), off + n


_STAT = struct.Struct("!qqqqiiiqiiq")


def _read_create2(buf, off):
    path, off = _read_jstr(buf, off)
    stat = ZnodeStat._make(_STAT.unpack_from(buf, off))
    return (path, stat), off + _STAT.size


class RawCreate:
    """CreateRequest body under an arbitrary opcode (create2=15,
    createContainer=19, createTTL=21 with ttl)."""

    def __init__(self, opcode, path, data, acl, flags, ttl=None):
        self.type = opcode
        self.path, self.data, self.acl, self.flags, self.ttl = path, data, acl, flags, ttl

    def serialize(self):
        b = _jstr(self.path) + _jstr(self.data) + _jacl(self.acl) + struct.pack("!i", self.flags)
        if self.ttl is not None:
            b += struct.pack("!q", self.ttl)
        return bytearray(b)

    def deserialize(self, buf, off):
        if self.type == 1:
            return _read_jstr(buf, off)[0]
        return _read_create2(buf, off)[0]


class RawWatchCheck:
    """checkWatches (17) / removeWatches (18): path + watcher type
    (1 children, 2 data, 3 any)."""

    def __init__(self, opcode, path, wtype):
        self.type = opcode
        self.path, self.wtype = path, wtype

    def serialize(self):
        return bytearray(_jstr(self.path) + struct.pack("!i", self.wtype))

    def deserialize(self, buf, off):
        return True


def raw(c, request, timeout=10):
    ar = c.handler.async_result()
    c._call(request, ar)
    return ar.get(timeout=timeout)


# --------------------------------------------------------------------------
# scenarios

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__[3:]] = fn
    return fn


@scenario
def sc_crud(addr, proxy_port):
    R = "/kz_crud"
    c = client(addr)
    fresh(c, R)
    op("create_root", c.create, R, b"root")
    op("create_dup", c.create, R, b"x")
    op("create_noparent", c.create, R + "/a/b", b"")
    op("create_a", c.create, R + "/a", b"alpha")
    op("create_bin", c.create, R + "/bin", bytes(range(256)))
    op("create_empty", c.create, R + "/empty")
    op("create_unicode", c.create, R + "/\u00fcn\u00efc\u00f8d\u00e9-\u96ea", "\u2603".encode("utf-8"))
    op("create2_include_data", c.create, R + "/c2", b"two", include_data=True)
    op("create_makepath", c.create, R + "/deep/er/node", b"d", makepath=True)
    op("create_big", c.create, R + "/big", b"x" * 500000)
    op("get_a", c.get, R + "/a")
    op("get_bin", c.get, R + "/bin")
    op("get_empty", c.get, R + "/empty")
    op("get_unicode", c.get, R + "/\u00fcn\u00efc\u00f8d\u00e9-\u96ea")
    data, st = c.get(R + "/big")
    emit("get_big", length=len(data), sha1=hashlib.sha1(data).hexdigest(), stat=st)
    op("get_missing", c.get, R + "/nope")
    op("exists_a", c.exists, R + "/a")
    op("exists_missing", c.exists, R + "/nope")
    op("set_a_v0", c.set, R + "/a", b"beta", version=0)
    op("set_a_badversion", c.set, R + "/a", b"gamma", version=0)
    op("set_a_any", c.set, R + "/a", b"gamma", version=-1)
    op("set_a_same_data", c.set, R + "/a", b"gamma")
    op("set_missing", c.set, R + "/nope", b"")
    op("set_a_empty", c.set, R + "/a", b"")
    op("get_a_after_sets", c.get, R + "/a")
    children("children_root", c, R)
    children("children_missing", c, R + "/nope")
    children("children_leaf", c, R + "/a")
    op("delete_notempty", c.delete, R)
    op("delete_a_badversion", c.delete, R + "/a", version=0)
    op("delete_a_v4", c.delete, R + "/a", version=4)
    op("delete_a_again", c.delete, R + "/a")
    op("delete_big_any", c.delete, R + "/big", version=-1)
    op("stat_root_after_deletes", c.exists, R)
    op("ensure_path", c.ensure_path, R + "/x/y/z")
    op("stat_x_y", c.exists, R + "/x/y")
    op("sync", c.sync, R)
    op("delete_recursive", c.delete, R + "/deep", recursive=True)
    children("children_root_end", c, R)
    op("get_root_end", c.get, R)
    stop(c)


@scenario
def sc_sequential(addr, proxy_port):
    R = "/kz_seq"
    c = client(addr)
    fresh(c, R)
    op("create_root", c.create, R)
    for i in range(3):
        op("create_seq_%d" % i, c.create, R + "/s-", b"%d" % i, sequence=True)
    op("create_plain", c.create, R + "/plain")
    op("create_seq_after_plain", c.create, R + "/s-", sequence=True)
    op("delete_plain", c.delete, R + "/plain")
    op("create_seq_after_delete", c.create, R + "/s-", sequence=True)
    op("create_seq_noprefix", c.create, R + "/", sequence=True)
    op("create_ephemeral_seq", c.create, R + "/e-", ephemeral=True, sequence=True)
    op("create_seq_include_data", c.create, R + "/d-", b"data", sequence=True, include_data=True)
    op("create_seq_dup_name_again", c.create, R + "/s-", sequence=True)
    op("create_nested_parent", c.create, R + "/p")
    op("create_nested_seq", c.create, R + "/p/x", sequence=True)
    op("create_seq_missing_parent", c.create, R + "/missing/x", sequence=True)
    tx = c.transaction()
    tx.create(R + "/t-", b"", sequence=True)
    tx.create(R + "/t-", b"", sequence=True)
    op("multi_seq", tx.commit)
    children("children", c, R)
    op("stat_root", c.exists, R)
    op("stat_p", c.exists, R + "/p")
    stop(c)


@scenario
def sc_ephemeral_close(addr, proxy_port):
    R = "/kz_eph_close"
    obs = client(addr)
    fresh(obs, R)
    op("create_root", obs.create, R)
    a = client(addr)
    emit("session_a", session_id=a.client_id[0])
    emit("session_obs", session_id=obs.client_id[0])
    op("a_create_ephemeral", a.create, R + "/e", b"owner-a", ephemeral=True)
    op("a_create_child_of_ephemeral", a.create, R + "/e/child", b"")
    op("a_create_persistent", a.create, R + "/p", b"stays")
    op("obs_get_e", obs.get, R + "/e")
    ev = Events()
    op("obs_exists_watch_e", obs.exists, R + "/e", watch=ev.watcher("exists_e"))
    children("obs_children_watch_root", obs, R, watch=ev.watcher("children_root"))
    op("obs_get_watch_p", obs.get, R + "/p", watch=ev.watcher("data_p"))
    stop(a)
    ev.expect("events_after_close", 2)
    op("obs_exists_e_after", obs.exists, R + "/e")
    children("obs_children_after", obs, R)
    op("obs_stat_root", obs.exists, R)
    op("obs_get_p", obs.get, R + "/p")
    # ephemeral deleted explicitly by its owner, while watched
    b = client(addr)
    op("b_create_ephemeral", b.create, R + "/e2", b"", ephemeral=True)
    op("obs_exists_watch_e2", obs.exists, R + "/e2", watch=ev.watcher("exists_e2"))
    op("b_delete_ephemeral", b.delete, R + "/e2")
    ev.expect("events_after_delete", 1)
    stop(b)
    ev.expect("events_after_b_close_none", 0, timeout=0.5)
    stop(obs)


@scenario
def sc_ephemeral_expiry(addr, proxy_port):
    R = "/kz_eph_expiry"
    host, port = addr.rsplit(":", 1)
    fwd = Forwarder(int(proxy_port), host, int(port))
    obs = client(addr)
    fresh(obs, R)
    op("create_root", obs.create, R)
    victim = client(fwd.addr, timeout=1.0, start=False)
    sl = StateLog(victim)
    victim.start(timeout=20)
    emit("victim_session", session_id=victim.client_id[0])
    op("victim_create_ephemeral", victim.create, R + "/e", b"short-lived", ephemeral=True)
    op("victim_create_ephemeral_seq", victim.create, R + "/q-", b"", ephemeral=True, sequence=True)
    ev = Events()
    op("obs_exists_watch_e", obs.exists, R + "/e", watch=ev.watcher("exists_e"))
    op("obs_get_watch_e", obs.get, R + "/e", watch=ev.watcher("data_e"))
    fwd.cut()  # victim loses its socket, no closeSession reaches the server
    op("obs_exists_right_after_cut", obs.exists, R + "/e")
    # the session expires after ~1s (+ tick); the ephemerals go with it
    # both watchers sit on the same path; kazoo keeps them in a set, so the
    # order it calls them in is arbitrary
    ev.expect("events_after_expiry", 2, timeout=15, settle=0.5, ordered=False)
    children("children_after_expiry", obs, R)
    op("stat_root_after_expiry", obs.exists, R)
    # let the victim reconnect: the server must tell it the session expired
    fwd.restore()
    sl.wait_for("EXPIRED_SESSION", timeout=20)
    sl.wait_for("CONNECTED", timeout=20, count=2)  # kazoo then opens a new session
    emit("victim_states", states=sl.get())
    emit("victim_new_session", session_id=victim.client_id[0])
    op("victim_exists_e_new_session", victim.exists, R + "/e")
    stop(victim)
    stop(obs)
    fwd.close()


@scenario
def sc_reattach(addr, proxy_port):
    R = "/kz_reattach"
    host, port = addr.rsplit(":", 1)
    fwd = Forwarder(int(proxy_port), host, int(port))
    obs = client(addr)
    fresh(obs, R)
    op("create_root", obs.create, R)
    a = client(fwd.addr, timeout=10.0, start=False)
    asl = StateLog(a)
    a.start(timeout=20)
    sid, passwd = a.client_id
    emit("session_a", session_id=sid, passwd_len=len(passwd))
    op("a_create_ephemeral", a.create, R + "/e", b"a", ephemeral=True)
    fwd.cut()
    asl.wait_for("CONNECTING")
    a.stop()  # stops retrying; no closeSession can get through
    # re-attach to the same session from a brand new client
    b = client(addr, timeout=10.0, client_id=(sid, passwd), start=False)
    bsl = StateLog(b)
    b.start(timeout=20)
    emit("b_states", states=bsl.get())
    emit("b_session", session_id=b.client_id[0], same_session=(b.client_id[0] == sid),
         same_passwd=(b.client_id[1] == passwd))
    op("b_exists_e", b.exists, R + "/e")
    op("b_create_ephemeral", b.create, R + "/e2", b"b", ephemeral=True)
    op("obs_get_e2", obs.get, R + "/e2")
    ev = Events()
    op("obs_exists_watch_e", obs.exists, R + "/e", watch=ev.watcher("exists_e"))
    op("obs_exists_watch_e2", obs.exists, R + "/e2", watch=ev.watcher("exists_e2"))
    stop(b)
    ev.expect("events_after_close", 2, ordered=False)
    children("children_after_close", obs, R)
    # the closed session can no longer be resumed
    c = client(addr, timeout=10.0, client_id=(sid, passwd), start=False)
    csl = StateLog(c)
    c.start(timeout=20)
    emit("c_states", states=csl.get())
    emit("c_session", session_id=c.client_id[0], same_session=(c.client_id[0] == sid))
    stop(c, obs)
    fwd.close()


@scenario
def sc_wrong_password(addr, proxy_port):
    R = "/kz_wrongpw"
    a = client(addr)
    fresh(a, R)
    op("create_root", a.create, R)
    op("a_create_ephemeral", a.create, R + "/e", b"", ephemeral=True)
    sid, passwd = a.client_id
    emit("session_a", session_id=sid)
    bad = bytes((x ^ 0x5A) for x in passwd)
    b = client(addr, client_id=(sid, bad), start=False)
    bsl = StateLog(b)
    b.start(timeout=20)
    emit("b_states", states=bsl.get())
    emit("b_session", session_id=b.client_id[0], same_session=(b.client_id[0] == sid))
    op("b_exists_e", b.exists, R + "/e")
    # the legitimate owner is not affected
    op("a_get_e", a.get, R + "/e")
    op("a_set_e", a.set, R + "/e", b"still-mine")
    # short password
    c = client(addr, client_id=(sid, b"short"), start=False)
    csl = StateLog(c)
    c.start(timeout=20)
    emit("c_states", states=csl.get())
    emit("c_session", session_id=c.client_id[0], same_session=(c.client_id[0] == sid))
    # a session id that never existed
    d = client(addr, client_id=(0x0123456789ABCDE, passwd), start=False)
    dsl = StateLog(d)
    d.start(timeout=20)
    emit("d_states", states=dsl.get())
    emit("d_session", session_id=d.client_id[0])
    op("a_exists_e_end", a.exists, R + "/e")
    stop(b, c, d, a)


@scenario
def sc_multi(addr, proxy_port):
    R = "/kz_multi"
    c = client(addr)
    fresh(c, R)
    op("create_root", c.create, R)
    op("create_x", c.create, R + "/x", b"x0")
    ev = Events()
    op("watch_x", c.get, R + "/x", watch=ev.watcher("data_x"))
    children("watch_root_children", c, R, watch=ev.watcher("children_root"))
    tx = c.transaction()
    tx.create(R + "/a", b"a")
    tx.create(R + "/a/b", b"ab")
    tx.set_data(R + "/x", b"x1", version=0)
    tx.check(R + "/x", 1)
    tx.delete(R + "/a/b")
    op("multi_ok", tx.commit)
    ev.expect("events_after_multi_ok", 2)
    op("get_x", c.get, R + "/x")
    children("children_after_ok", c, R)
    op("watch_x_again", c.get, R + "/x", watch=ev.watcher("data_x"))
    # a failing transaction rolls back everything
    tx = c.transaction()
    tx.create(R + "/new1", b"")
    tx.set_data(R + "/x", b"x2", version=1)
    tx.check(R + "/x", 7)
    tx.create(R + "/new2", b"")
    op("multi_badversion", tx.commit)
    tx = c.transaction()
    tx.create(R + "/new1", b"")
    tx.create(R + "/new1", b"")
    op("multi_nodeexists", tx.commit)
    tx = c.transaction()
    tx.delete(R + "/missing")
    tx.create(R + "/new3", b"")
    op("multi_nonode_first", tx.commit)
    tx = c.transaction()
    tx.create(R + "/new4", b"")
    tx.delete(R)
    op("multi_notempty_last", tx.commit)
    tx = c.transaction()
    tx.create(R + "/eph", b"", ephemeral=True)
    tx.create(R + "/eph/child", b"")
    op("multi_child_of_ephemeral", tx.commit)
    ev.expect("events_after_failed_multis", 0, timeout=0.5)
    op("get_x_unchanged", c.get, R + "/x")
    children("children_unchanged", c, R)
    op("stat_root", c.exists, R)
    tx = c.transaction()
    op("multi_empty", tx.commit)
    children("watch_root_children_again", c, R, watch=ev.watcher("children_root"))
    tx = c.transaction()
    tx.create(R + "/s-", b"", sequence=True)
    tx.set_data(R + "/x", b"x2")
    tx.delete(R + "/x", version=2)
    op("multi_seq_set_delete", tx.commit)
    ev.expect("events_after_multi_delete", 2)
    children("children_end", c, R)
    stop(c)


@scenario
def sc_acl(addr, proxy_port):
    R = "/kz_acl"
    admin = client(addr)
    fresh(admin, R)
    op("create_root", admin.create, R)
    user = client(addr, auth_data=[("digest", "alice:secret")])
    other = client(addr)
    bob = client(addr, auth_data=[("digest", "bob:hunter2")])
    op("user_create_creator_all", user.create, R + "/private", b"secret-data", acl=CREATOR_ALL_ACL)
    op("user_create_child", user.create, R + "/private/child", b"c", acl=CREATOR_ALL_ACL)
    op("other_create_creator_all_noauth", other.create, R + "/nope", b"", acl=CREATOR_ALL_ACL)
    op("user_get_acl", user.get_acls, R + "/private")
    op("other_get", other.get, R + "/private")
    op("other_set", other.set, R + "/private", b"hacked")
    op("other_delete_child", other.delete, R + "/private/child")
    op("other_delete_nonempty_in_open_parent", other.delete, R + "/private")
    op("other_get_acl", other.get_acls, R + "/private")
    children("other_children", other, R + "/private")
    op("other_exists", other.exists, R + "/private")
    op("other_create_child", other.create, R + "/private/child2", b"")
    op("other_sync", other.sync, R + "/private")
    op("bob_get", bob.get, R + "/private")
    op("user_get", user.get, R + "/private")
    op("user_set", user.set, R + "/private", b"v2")
    # world-readable node whose admin is a digest user: ACL reads are redacted
    mixed = READ_ACL_UNSAFE + [make_digest_acl("alice", "secret", all=True)]
    op("user_create_mixed", user.create, R + "/mixed", b"m", acl=mixed)
    op("other_get_mixed", other.get, R + "/mixed")
    op("other_get_acl_mixed", other.get_acls, R + "/mixed")
    op("user_get_acl_mixed", user.get_acls, R + "/mixed")
    op("other_set_mixed", other.set, R + "/mixed", b"x")
    op("other_set_acl_mixed", other.set_acls, R + "/mixed", OPEN_ACL_UNSAFE)
    op("user_set_acl_badversion", user.set_acls, R + "/mixed", OPEN_ACL_UNSAFE, version=5)
    op("user_set_acl_mixed", user.set_acls, R + "/mixed", READ_ACL_UNSAFE + [make_digest_acl("bob", "hunter2", all=True)], version=0)
    op("bob_set_mixed", bob.set, R + "/mixed", b"bob-was-here")
    op("user_set_mixed_now_denied", user.set, R + "/mixed", b"x")
    op("bob_get_acl_mixed", bob.get_acls, R + "/mixed")
    # add auth later on an existing session
    op("other_add_auth", other.add_auth, "digest", "alice:secret")
    op("other_get_after_auth", other.get, R + "/private")
    op("other_get_acl_after_auth", other.get_acls, R + "/private")
    # read-only node
    op("admin_create_readonly", admin.create, R + "/ro", b"ro", acl=READ_ACL_UNSAFE)
    op("admin_set_readonly", admin.set, R + "/ro", b"x")
    op("admin_create_under_readonly", admin.create, R + "/ro/c", b"")
    op("admin_get_acl_ro", admin.get_acls, R + "/ro")
    op("admin_delete_readonly", admin.delete, R + "/ro")
    # invalid ACLs
    op("admin_create_empty_acl", admin.create, R + "/empty_acl", b"", acl=[])
    op("admin_create_bad_scheme", admin.create, R + "/bad", b"", acl=[ACL(31, Id("nosuchscheme", "x"))])
    op("admin_create_ip_acl", admin.create, R + "/ip", b"", acl=[ACL(31, Id("ip", "127.0.0.1"))])
    op("admin_get_ip", admin.get, R + "/ip")
    op("admin_create_ip_other", admin.create, R + "/ip2", b"", acl=[ACL(31, Id("ip", "10.1.2.3"))])
    op("admin_get_ip_other", admin.get, R + "/ip2")
    op("user_delete_private_child", user.delete, R + "/private/child")
    op("user_delete_private", user.delete, R + "/private")
    stop(user, other, bob)
    op("admin_stat_root", admin.exists, R)
    stop(admin)


@scenario
def sc_containers(addr, proxy_port):
    R = "/kz_containers"
    c = client(addr)
    fresh(c, R)
    op("create_root", c.create, R)
    op("create_container", raw, c, RawCreate(19, R + "/cont", b"c", OPEN_ACL_UNSAFE, 4))
    op("create_container_dup", raw, c, RawCreate(19, R + "/cont", b"c", OPEN_ACL_UNSAFE, 4))
    op("create_container_wrong_flags", raw, c, RawCreate(19, R + "/cont2", b"", OPEN_ACL_UNSAFE, 0))
    op("create_container_flag_via_create", raw, c, RawCreate(1, R + "/cont3", b"", OPEN_ACL_UNSAFE, 4))
    op("create_container_flag_via_create2", raw, c, RawCreate(15, R + "/cont4", b"", OPEN_ACL_UNSAFE, 4))
    op("create_empty_container", raw, c, RawCreate(19, R + "/never_used", b"", OPEN_ACL_UNSAFE, 4))
    op("get_cont", c.get, R + "/cont")
    op("create_child", c.create, R + "/cont/child", b"")
    op("create_grandchild", c.create, R + "/cont/child/gc", b"")
    ev = Events()
    op("exists_watch_cont", c.exists, R + "/cont", watch=ev.watcher("exists_cont"))
    time.sleep(2.5)  # container with children must survive several checks
    op("exists_cont_with_children", c.exists, R + "/cont")
    op("delete_grandchild", c.delete, R + "/cont/child/gc")
    op("delete_child", c.delete, R + "/cont/child")
    ev.expect("events_container_removed", 1, timeout=20, settle=0.3)
    op("exists_cont_after", c.exists, R + "/cont")
    # an empty container that never had children is kept
    op("exists_never_used", c.exists, R + "/never_used")
    children("children_root", c, R)
    # a container with an ephemeral child goes away once the session closes
    op("create_container2", raw, c, RawCreate(19, R + "/cont_eph", b"", OPEN_ACL_UNSAFE, 4))
    e = client(addr)
    op("create_ephemeral_in_container", e.create, R + "/cont_eph/e", b"", ephemeral=True)
    op("exists_watch_cont_eph", c.exists, R + "/cont_eph", watch=ev.watcher("exists_cont_eph"))
    stop(e)
    ev.expect("events_cont_eph_removed", 1, timeout=20, settle=0.3)
    # a container inside a multi
    tx = c.transaction()
    tx.create(R + "/plain_in_tx", b"")
    op("multi_plain", tx.commit)
    children("children_end", c, R)
    stop(c)


@scenario
def sc_ttl(addr, proxy_port):
    R = "/kz_ttl"
    c = client(addr)
    fresh(c, R)
    op("create_root", c.create, R)
    op("create_ttl", raw, c, RawCreate(21, R + "/t", b"ttl", OPEN_ACL_UNSAFE, 5, ttl=1000))
    op("create_ttl_seq", raw, c, RawCreate(21, R + "/ts-", b"", OPEN_ACL_UNSAFE, 6, ttl=1000))
    op("create_ttl_long", raw, c, RawCreate(21, R + "/long", b"", OPEN_ACL_UNSAFE, 5, ttl=3600000))
    op("create_ttl_zero", raw, c, RawCreate(21, R + "/z", b"", OPEN_ACL_UNSAFE, 5, ttl=0))
    op("create_ttl_negative", raw, c, RawCreate(21, R + "/n", b"", OPEN_ACL_UNSAFE, 5, ttl=-5))
    op("create_ttl_too_big", raw, c, RawCreate(21, R + "/big", b"", OPEN_ACL_UNSAFE, 5, ttl=1 << 41))
    op("create_ttl_wrong_mode", raw, c, RawCreate(21, R + "/w", b"", OPEN_ACL_UNSAFE, 0, ttl=1000))
    op("create_ttl_ephemeral_mode", raw, c, RawCreate(21, R + "/w2", b"", OPEN_ACL_UNSAFE, 1, ttl=1000))
    op("create_ttl_flag_via_create", raw, c, RawCreate(1, R + "/w3", b"", OPEN_ACL_UNSAFE, 5))
    op("create_ttl_with_child", raw, c, RawCreate(21, R + "/parent", b"", OPEN_ACL_UNSAFE, 5, ttl=1000))
    op("create_child_of_ttl", c.create, R + "/parent/child", b"")
    op("get_t", c.get, R + "/t")
    ev = Events()
    op("exists_watch_t", c.exists, R + "/t", watch=ev.watcher("exists_t"))
    ev.expect("events_ttl_expired", 1, timeout=20, settle=0.3)
    wait_until(lambda: not any(n == "t" or n.startswith("ts-") for n in c.get_children(R)),
               timeout=20, what="ttl node removal")
    children("children_after_expiry", c, R)
    op("delete_child_of_ttl", c.delete, R + "/parent/child")
    wait_until(lambda: c.exists(R + "/parent") is None, timeout=20, what="ttl parent removal")
    children("children_end", c, R)
    stop(c)


@scenario
def sc_raw_watch_ops(addr, proxy_port):
    R = "/kz_rawwatch"
    c = client(addr)
    fresh(c, R)
    op("create_root", c.create, R)
    op("check_watches_none_data", raw, c, RawWatchCheck(17, R, 2))
    op("check_watches_none_child", raw, c, RawWatchCheck(17, R, 1))
    op("check_watches_none_any", raw, c, RawWatchCheck(17, R, 3))
    op("remove_watches_none", raw, c, RawWatchCheck(18, R, 3))
    op("check_watches_missing_node", raw, c, RawWatchCheck(17, R + "/missing", 3))
    ev = Events()
    op("get_watch", c.get, R, watch=ev.watcher("data_root"))
    op("check_watches_data", raw, c, RawWatchCheck(17, R, 2))
    op("check_watches_child_only_data_set", raw, c, RawWatchCheck(17, R, 1))
    op("check_watches_any", raw, c, RawWatchCheck(17, R, 3))
    op("remove_watches_data", raw, c, RawWatchCheck(18, R, 2))
    op("check_watches_after_remove", raw, c, RawWatchCheck(17, R, 2))
    children("children_watch", c, R, watch=ev.watcher("children_root"))
    op("check_watches_child", raw, c, RawWatchCheck(17, R, 1))
    op("remove_watches_any", raw, c, RawWatchCheck(18, R, 3))
    op("check_watches_child_after_remove", raw, c, RawWatchCheck(17, R, 1))
    # removed watches must not fire (kazoo still has the callbacks registered)
    op("set_root", c.set, R, b"changed")
    op("create_child", c.create, R + "/c", b"")
    ev.expect("events_after_removed_watches", 0, timeout=0.5)
    stop(c)


# ------------------------------------------------------------------ dubbo

IFACE = "org.apache.dubbo.demo.DemoService"
N_PROVIDERS = 1000
N_CONSUMERS = 200


def provider_name(i):
    params = [
        ("anyhost", "true"), ("application", "demo-provider"), ("background", "false"),
        ("deprecated", "false"), ("dubbo", "2.0.2"), ("dynamic", "true"), ("generic", "false"),
        ("interface", IFACE), ("metadata-type", "remote"),
        ("methods", "sayHello,sayHelloAsync,greet,greetAsync,ping,echo,shutdown"),
        ("pid", str(20000 + i)), ("prefer.serialization", "fastjson2,hessian2"),
        ("release", "3.2.10"), ("revision", "3.2.10"), ("service-name-mapping", "true"),
        ("side", "provider"), ("threadpool", "fixed"), ("threads", "200"),
        ("timeout", "3000"), ("timestamp", str(1700000000000 + i * 37)), ("weight", "100"),
    ]
    url = "dubbo://10.%d.%d.%d:20880/%s?%s" % (i // 250, i % 250, 7, IFACE, urllib.parse.urlencode(params))
    enc_url = urllib.parse.quote(url, safe="")
    pad = 600 - len(enc_url)
    if pad > 0:
        url += "&tag=" + ("x" * max(1, pad - 10))
        enc_url = urllib.parse.quote(url, safe="")
    return enc_url


@scenario
def sc_dubbo(addr, proxy_port):
    base = "/dubbo/" + IFACE
    prov = base + "/providers"
    p = client(addr)
    fresh(p, "/dubbo")
    for sub in ("providers", "consumers", "configurators", "routers"):
        p.ensure_path(base + "/" + sub)
    names = [provider_name(i) for i in range(N_PROVIDERS)]
    for k in range(0, N_PROVIDERS, 100):
        rs = [p.create_async(prov + "/" + n, b"", ephemeral=True) for n in names[k:k + 100]]
        for r in rs:
            r.get(timeout=30)
    emit("providers_created", count=N_PROVIDERS, name_len_min=min(map(len, names)),
         name_len_max=max(map(len, names)))
    op("providers_stat", p.exists, prov)

    consumers = [client(addr, start=False) for _ in range(N_CONSUMERS)]
    evs = [[] for _ in range(N_CONSUMERS)]
    lock = threading.Lock()
    for c in consumers:
        c.start_async()
    for c in consumers:
        wait_until(lambda: c.connected, timeout=30, what="consumer connect")

    def cb(i):
        def w(ev):
            with lock:
                evs[i].append((ev.type, ev.state, ev.path))
        return w

    def list_all(watch):
        asyncs = []
        for i, c in enumerate(consumers):
            asyncs.append(c.get_children_async(prov, watch=cb(i) if watch else None))
        counts, hashes = {}, set()
        for a in asyncs:
            ch = a.get(timeout=60)
            counts[len(ch)] = counts.get(len(ch), 0) + 1
            hashes.add(hashlib.sha1("\n".join(sorted(ch)).encode()).hexdigest())
        return counts, sorted(hashes)

    rs = [c.create_async(base + "/consumers/" + urllib.parse.quote(
        "consumer://10.9.%d.%d/%s?category=consumers&side=consumer" % (i // 250, i % 250, IFACE), safe=""),
        b"", ephemeral=True) for i, c in enumerate(consumers)]
    for r in rs:
        r.get(timeout=30)
    counts, hashes = list_all(True)
    emit("consumers_listed", consumers=N_CONSUMERS, children_count_histogram=counts,
         distinct_listings=len(hashes), listing_sha1=hashes)

    def gather(step):
        def done():
            with lock:
                return all(len(e) >= 1 for e in evs)
        try:
            wait_until(done, timeout=30, what="consumer events")
        except RuntimeError:
            pass
        time.sleep(1.0)
        with lock:
            hist, kinds = {}, set()
            for e in evs:
                hist[len(e)] = hist.get(len(e), 0) + 1
                kinds.update(e)
                e.clear()
        emit(step, events_per_consumer_histogram=hist, distinct_events=sorted(kinds))

    op("delete_one_provider", p.delete, prov + "/" + names[N_PROVIDERS // 2])
    gather("after_one_provider_deleted")
    counts, hashes = list_all(True)
    emit("consumers_relisted", children_count_histogram=counts, distinct_listings=len(hashes))
    op("providers_stat_after_delete", p.exists, prov)
    # the provider session goes away: 999 ephemerals vanish at once
    stop(p)
    gather("after_provider_session_closed")
    counts, hashes = list_all(False)
    emit("consumers_final_listing", children_count_histogram=counts, distinct_listings=len(hashes))
    st = consumers[0].exists(prov)
    emit("providers_stat_end", stat=st)
    st = consumers[0].exists(base + "/consumers")
    emit("consumers_dir_stat", numChildren=st.numChildren, cversion=st.cversion)
    ts = [threading.Thread(target=stop, args=(c,)) for c in consumers]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    obs = client(addr)
    children("consumers_after_stop", obs, base + "/consumers")
    stop(obs)


# ------------------------------------------------------------------ cleanup

TEST_ROOT_PREFIXES = ("kz_", "j_", "zc_", "dubbo")
TEST_IDENTITIES = ["alice:secret", "bob:hunter2", "carol:pw", "dave:pw2"]


def cleanup(addr):
    """Delete every top-level node the suite creates, even ACL-protected
    ones (only needed when reusing a server, e.g. ZKR_ADDR)."""
    c = client(addr, auth_data=[("digest", x) for x in TEST_IDENTITIES])

    def rm(path):
        try:
            kids = c.get_children(path)
        except kex.NoNodeError:
            return
        except kex.NoAuthError:
            kids = []
        for k in kids:
            rm(path.rstrip("/") + "/" + k)
        try:
            c.delete(path)
        except kex.NoNodeError:
            pass
        except kex.ZookeeperError as e:
            sys.stderr.write("cleanup: cannot delete %s: %s\n" % (path, type(e).__name__))

    for k in c.get_children("/"):
        if k.startswith(TEST_ROOT_PREFIXES):
            rm("/" + k)
    stop(c)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--cleanup":
        cleanup(sys.argv[2])
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "--list":
        for name in SCENARIOS:
            print(name)
        return 0
    if len(sys.argv) < 3 or sys.argv[1] not in SCENARIOS:
        sys.stderr.write(__doc__)
        sys.stderr.write("scenarios: %s\n" % " ".join(SCENARIOS))
        return 2
    name, addr = sys.argv[1], sys.argv[2]
    proxy_port = sys.argv[3] if len(sys.argv) > 3 else "0"
    # kazoo's blocking calls have no timeout: if a server stops answering,
    # dump every thread's stack and give up instead of hanging
    faulthandler.dump_traceback_later(float(os.environ.get("INTEROP_WATCHDOG_SECS", "75")), exit=True)
    SCENARIOS[name](addr, proxy_port)
    return 0


if __name__ == "__main__":
    try:
        rc = main()
    except BaseException:
        import traceback
        traceback.print_exc()
        rc = 1
    sys.stdout.flush()
    # kazoo may leave non-daemon threads behind if something went wrong
    os._exit(rc)
