#!/usr/bin/python3
"""kazoo recipe scenarios (Debian's python3-kazoo): Lock, Election, Counter, Queue, LockingQueue,
Barrier, DoubleBarrier, Party, DataWatch/ChildrenWatch, Semaphore, SetPartitioner, TreeCache.

    recipes.py --list
    recipes.py SCENARIO HOST:PORT

Prints a JSON-lines transcript of what the recipes observed (one object per step, keys sorted);
tests/interop/clients/run.sh runs each scenario against ZooKeeper and zkr and compares the
transcripts. Only what a recipe guarantees is recorded (who holds a lock, values, orders the
recipe defines), not timing. Exits non-zero if the scenario breaks (timeout, exception).
"""

import faulthandler
import json
import os
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent


def emit(step, **kw):
    sys.stdout.write(json.dumps(dict(step=step, **kw), sort_keys=True) + "\n")
    sys.stdout.flush()


def client(addr):
    c = KazooClient(hosts=addr, timeout=10.0)
    c.start(timeout=20)
    return c


def fresh(c, root):
    if c.exists(root):
        c.delete(root, recursive=True)


def wait_until(pred, timeout=15.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


def sc_lock(addr):
    R = "/kr_lock"
    a, b = client(addr), client(addr)
    fresh(a, R)
    la, lb = a.Lock(R, "alice"), b.Lock(R, "bob")
    emit("a_acquire", ok=la.acquire(timeout=10))
    emit("b_acquire_nonblocking", ok=lb.acquire(blocking=False))
    emit("contenders", names=la.contenders())
    got = threading.Event()
    t = threading.Thread(target=lambda: lb.acquire(timeout=20) and got.set())
    t.start()
    wait_until(lambda: len(a.get_children(R)) == 2, what="bob queued")
    emit("contenders_queued", names=la.contenders())
    emit("b_has_it_before_release", got=got.is_set())
    la.release()
    t.join(20)
    emit("b_after_release", got=got.is_set(), contenders=lb.contenders())
    lb.release()
    emit("empty_after_release", children=a.get_children(R))
    # read/write locks: a reader does not block a reader, a writer waits for both
    r1, r2, w = a.ReadLock(R + "/rw", "r1"), b.ReadLock(R + "/rw", "r2"), b.WriteLock(R + "/rw", "w")
    emit("read1", ok=r1.acquire(timeout=10))
    emit("read2", ok=r2.acquire(timeout=10))
    emit("write_while_reading", ok=w.acquire(blocking=False))
    r1.release()
    r2.release()
    emit("write_after_readers", ok=w.acquire(timeout=10))
    w.release()
    # a lock held by a closed session is released by the server
    la2 = a.Lock(R + "/eph", "a")
    emit("a_acquire_again", ok=la2.acquire(timeout=10))
    a.stop()
    a.close()
    emit("b_after_a_session_closed", ok=b.Lock(R + "/eph", "b").acquire(timeout=15))
    fresh(b, R)
    b.stop()


def sc_election(addr):
    R = "/kr_election"
    cs = [client(addr) for _ in range(3)]
    fresh(cs[0], R)
    leaders = []
    lock = threading.Lock()
    elections = [c.Election(R, "cand%d" % i) for i, c in enumerate(cs)]
    stop = [threading.Event() for _ in cs]

    def run(i):
        def lead():
            with lock:
                leaders.append(i)
            stop[i].wait(30)
        elections[i].run(lead)

    ts = []
    for i in range(3):
        t = threading.Thread(target=run, args=(i,), daemon=True)
        t.start()
        ts.append(t)
        wait_until(lambda: cs[0].exists(R) and len(cs[0].get_children(R)) == i + 1, what="candidate %d" % i)
    wait_until(lambda: leaders, what="a leader")
    emit("first_leader", leader=leaders[0], contenders=elections[1].contenders())
    stop[0].set()
    wait_until(lambda: len(leaders) == 2, what="second leader")
    emit("second_leader", leader=leaders[1], contenders=elections[2].contenders())
    # the leader's session goes away: the next candidate takes over
    cs[1].stop()
    wait_until(lambda: len(leaders) == 3, what="third leader")
    emit("third_leader", leader=leaders[2])
    stop[2].set()
    for c in (cs[0], cs[2]):
        c.stop()
    cs[1].close()
    c = client(addr)
    fresh(c, R)
    c.stop()


def sc_counter(addr):
    R = "/kr_counter"
    a, b = client(addr), client(addr)
    fresh(a, R)
    ca, cb = a.Counter(R), b.Counter(R)
    emit("initial", value=ca.value)
    ca += 5
    emit("after_add", value=cb.value)
    cb -= 2
    emit("after_sub", value=ca.value)
    done = []

    def bump(c):
        for _ in range(10):
            c += 1  # Counter.__add__ retries a versioned set until it wins
        done.append(1)

    ts = [threading.Thread(target=bump, args=(c,)) for c in (a.Counter(R), b.Counter(R))]
    [t.start() for t in ts]
    [t.join(30) for t in ts]
    if len(done) != 2:
        raise RuntimeError("a concurrent incrementer failed")
    emit("after_concurrent", value=ca.value, pre_value=ca.pre_value, post_value=ca.post_value)
    fc = a.Counter(R + "/f", default=0.5)
    fc += 1.25
    emit("float", value=fc.value)
    fresh(a, R)
    a.stop()
    b.stop()


def sc_queue(addr):
    R = "/kr_queue"
    a, b = client(addr), client(addr)
    fresh(a, R)
    q = a.Queue(R + "/q")
    for x in (b"one", b"two", b"three"):
        q.put(x)
    q.put(b"urgent", priority=10)
    q.put(b"first", priority=1)
    emit("len", n=len(q))
    qb = b.Queue(R + "/q")
    emit("get_order", items=[qb.get().decode() for _ in range(5)], empty=qb.get())
    lq = a.LockingQueue(R + "/lq")
    lq.put_all([b"a", b"b"], priority=50)
    lq.put(b"z", priority=5)
    lqb = b.LockingQueue(R + "/lq")
    item = lqb.get(timeout=10)
    emit("locking_get", item=item.decode(), len=len(lq))
    emit("other_consumer_sees", item=lq.get(timeout=10).decode())
    emit("consume", b=lqb.consume(), a=lq.consume())
    emit("holds_lock_after_consume", b=lqb.holds_lock(), a=lq.holds_lock())
    item2 = lqb.get(timeout=10)
    emit("next", item=item2.decode())
    emit("release", ok=lqb.release())
    emit("again", item=lq.get(timeout=10).decode(), consume=lq.consume(), left=len(lq))
    emit("empty_get", item=lq.get(timeout=0.5))
    fresh(a, R)
    a.stop()
    b.stop()


def sc_barrier(addr):
    R = "/kr_barrier"
    a, b = client(addr), client(addr)
    fresh(a, R)
    bar = a.Barrier(R + "/b")
    emit("create", ok=bar.create())
    passed = threading.Event()
    t = threading.Thread(target=lambda: b.Barrier(R + "/b").wait(20) and passed.set())
    t.start()
    time.sleep(0.5)
    emit("waiting_before_remove", passed=passed.is_set())
    emit("remove", ok=bar.remove())
    t.join(20)
    emit("passed_after_remove", passed=passed.is_set())
    emit("wait_no_barrier", ok=bar.wait(1))
    # double barrier for 2 parties
    db_a, db_b = a.DoubleBarrier(R + "/d", 2, "pa"), b.DoubleBarrier(R + "/d", 2, "pb")
    entered = []
    t = threading.Thread(target=lambda: (db_b.enter(), entered.append("pb")))
    t.start()
    time.sleep(0.5)
    emit("b_entered_alone", entered=list(entered))
    db_a.enter()
    t.join(20)
    emit("both_entered", entered=sorted(entered + ["pa"]), participating=db_a.participating)
    left = []
    t = threading.Thread(target=lambda: (db_b.leave(), left.append("pb")))
    t.start()
    db_a.leave()
    t.join(20)
    emit("both_left", left=left, participating=[db_a.participating, db_b.participating],
         children=sorted(a.get_children(R + "/d")))
    fresh(a, R)
    a.stop()
    b.stop()


def sc_party(addr):
    R = "/kr_party"
    a, b = client(addr), client(addr)
    fresh(a, R)
    pa, pb = a.Party(R + "/p", "alice"), b.Party(R + "/p", "bob")
    pa.join()
    pb.join()
    emit("members", names=sorted(pa), n=len(pb))
    pa.leave()
    emit("after_leave", names=sorted(pb))
    sp = a.ShallowParty(R + "/s", "x")
    sp.join()
    b.ShallowParty(R + "/s", "y").join()
    emit("shallow", names=sorted(sp), n=len(sp))
    b.stop()
    emit("after_session_closed", names=sorted(sp))
    fresh(a, R)
    a.stop()


def sc_watchers(addr):
    R = "/kr_watchers"
    a, b = client(addr), client(addr)
    fresh(a, R)
    a.ensure_path(R)
    seen = []
    cv = threading.Condition()

    def record(kind, *v):
        with cv:
            seen.append([kind] + list(v))
            cv.notify_all()

    def until(n):
        with cv:
            if not cv.wait_for(lambda: len(seen) >= n, 10):
                raise RuntimeError("watcher calls: %r" % seen)
        time.sleep(0.3)

    @b.DataWatch(R + "/d")
    def dw(data, stat, event):
        record("data", data and data.decode(), stat and stat.version, event and event.type)

    until(1)
    a.create(R + "/d", b"1")
    until(2)
    a.set(R + "/d", b"2")
    until(3)
    a.delete(R + "/d")
    until(4)
    kids = []

    @b.ChildrenWatch(R, send_event=True)
    def cw(children, event):
        kids.append([sorted(children), event and event.type])
        record("children")

    until(5)
    a.create(R + "/x")
    until(6)
    a.create(R + "/y")
    until(7)
    a.delete(R + "/x")
    until(8)
    emit("data_watch_calls", calls=[s for s in seen if s[0] == "data"])
    emit("children_watch_calls", calls=kids)
    fresh(a, R)
    a.stop()
    b.stop()


def sc_semaphore(addr):
    R = "/kr_semaphore"
    cs = [client(addr) for _ in range(3)]
    fresh(cs[0], R)
    sems = [c.Semaphore(R, "id%d" % i, max_leases=2) for i, c in enumerate(cs)]
    emit("s0", ok=sems[0].acquire(timeout=10))
    emit("s1", ok=sems[1].acquire(timeout=10))
    emit("s2_full", ok=sems[2].acquire(blocking=False))
    emit("lease_holders", holders=sorted(sems[2].lease_holders()))
    sems[0].release()
    emit("s2_after_release", ok=sems[2].acquire(timeout=10), holders=sorted(sems[0].lease_holders()))
    emit("wrong_max_leases", err=_err(lambda: cs[0].Semaphore(R, "bad", max_leases=3).acquire(timeout=2)))
    cs[1].stop()
    emit("after_session_closed", holders=sorted(sems[0].lease_holders()))
    sems[2].release()
    fresh(cs[0], R)
    cs[0].stop()
    cs[2].stop()


def _err(fn):
    try:
        fn()
        return None
    except Exception as e:
        return type(e).__name__


def sc_partitioner(addr):
    R = "/kr_partitioner"
    a, b = client(addr), client(addr)
    fresh(a, R)
    items = ["i%d" % n for n in range(6)]
    pa = a.SetPartitioner(R, set=items, identifier="alice", time_boundary=0.5)
    wait_until(lambda: pa.acquired, 20, "alice acquired")
    emit("alone", mine=sorted(pa))
    pb = b.SetPartitioner(R, set=items, identifier="bob", time_boundary=0.5)
    wait_until(lambda: pa.release or pa.acquired and len(list(pa)) < 6, 20, "alice asked to release")
    if pa.release:
        pa.release_set()
    wait_until(lambda: pa.acquired and pb.acquired, 30, "both acquired")
    emit("split", alice=sorted(pa), bob=sorted(pb))
    pb.finish()
    wait_until(lambda: pa.release, 20, "alice asked to release again")
    pa.release_set()
    wait_until(lambda: pa.acquired, 20, "alice alone again")
    emit("after_bob_left", alice=sorted(pa), bob_state=pb.state)
    pa.finish()
    fresh(a, R)
    a.stop()
    b.stop()


def sc_treecache(addr):
    R = "/kr_treecache"
    a, b = client(addr), client(addr)
    fresh(a, R)
    a.create(R + "/x/y", b"deep", makepath=True)
    events = []
    cv = threading.Condition()
    names = {getattr(TreeEvent, n): n for n in dir(TreeEvent) if n.isupper()}

    def listener(ev):
        with cv:
            path = ev.event_data.path if ev.event_data is not None else None
            data = ev.event_data.data.decode() if ev.event_data is not None and ev.event_data.data else None
            events.append([names.get(ev.event_type, ev.event_type), path, data])
            cv.notify_all()

    def until(pred, what):
        with cv:
            if not cv.wait_for(lambda: pred(events), 15):
                raise RuntimeError("tree cache: %s; events %r" % (what, events))
        time.sleep(0.3)

    tc = TreeCache(b, R)
    tc.listen(listener)
    tc.start()
    until(lambda e: any(x[0] == "INITIALIZED" for x in e), "initialized")
    emit("initial", events_unordered=events[:-1], last=events[-1][0])
    del events[:]
    a.set(R + "/x/y", b"changed")
    until(lambda e: e, "update")
    a.create(R + "/x/z", b"new")
    until(lambda e: len(e) >= 2, "add")
    a.delete(R + "/x/y")
    until(lambda e: len(e) >= 3, "remove")
    emit("changes", events=events)
    emit("current", children=sorted(tc.get_children(R + "/x")), z=tc.get_data(R + "/x/z").data.decode(),
         y=tc.get_data(R + "/x/y"))
    tc.close()
    fresh(a, R)
    a.stop()
    b.stop()


SCENARIOS = {n[3:]: f for n, f in sorted(globals().items()) if n.startswith("sc_")}


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(SCENARIOS))
        return 0
    if len(sys.argv) != 3 or sys.argv[1] not in SCENARIOS:
        sys.stderr.write(__doc__)
        return 2
    faulthandler.dump_traceback_later(90, exit=True)
    SCENARIOS[sys.argv[1]](sys.argv[2])
    return 0


if __name__ == "__main__":
    try:
        rc = main()
    except BaseException:
        import traceback
        traceback.print_exc()
        rc = 1
    sys.stdout.flush()
    os._exit(rc)
