"""kazoo against a zkr observer of a ZooKeeper ensemble, beside a kazoo client of ZooKeeper
itself: a Dubbo-shaped registry where providers register on either side and a consumer on zkr
watches them. Run by tests/zab_observer.rs: argv[1] is zkr's host:port, argv[2] a ZooKeeper
member's. Exits non-zero on the first difference."""

import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError

ZKR, ZK = sys.argv[1], sys.argv[2]
PROVIDERS = "/dubbo/org.example.GreetingService/providers"
P1 = "dubbo%3A%2F%2F10.0.0.1%3A20880%2Forg.example.GreetingService%3Fside%3Dprovider"
P2 = "dubbo%3A%2F%2F10.0.0.2%3A20880%2Forg.example.GreetingService%3Fside%3Dprovider"


def until(what, f, secs=10):
    deadline = time.time() + secs
    while not f():
        if time.time() > deadline:
            raise AssertionError("timed out waiting for: " + what)
        time.sleep(0.05)


on_zkr = KazooClient(hosts=ZKR, timeout=10)
on_zkr.start(timeout=20)
on_zk = KazooClient(hosts=ZK, timeout=10)
on_zk.start(timeout=20)

on_zkr.ensure_path(PROVIDERS)
seen = []
lock = threading.Lock()


@on_zkr.ChildrenWatch(PROVIDERS)
def providers(children):
    with lock:
        seen.append(sorted(children))


# A provider registered on ZooKeeper shows up in the watch of a consumer on zkr.
on_zk.create(PROVIDERS + "/" + P1, b"", ephemeral=True)
until("the consumer on zkr sees the provider registered on ZooKeeper", lambda: seen and seen[-1] == [P1])

# A provider registered through zkr is on ZooKeeper, with the same Stat.
on_zkr.create(PROVIDERS + "/" + P2, b"v1", ephemeral=True)
until("the watch on zkr fires for zkr's own write", lambda: seen[-1] == sorted([P1, P2]))
on_zk.sync(PROVIDERS)
d1, s1 = on_zk.get(PROVIDERS + "/" + P2)
d2, s2 = on_zkr.get(PROVIDERS + "/" + P2)
assert (d1, s1) == (d2, s2), (d1, s1, d2, s2)
assert s2.ephemeralOwner == on_zkr.client_id[0], (s2.ephemeralOwner, on_zkr.client_id)

# The leader's errors come back as the same exceptions.
try:
    on_zkr.create(PROVIDERS + "/" + P2, b"")
    raise AssertionError("a second create of the same path succeeded")
except NodeExistsError:
    pass
try:
    on_zkr.set(PROVIDERS + "/" + P2, b"v2", version=7)
    raise AssertionError("a set with a wrong version succeeded")
except BadVersionError:
    pass

# A transaction through zkr.
tx = on_zkr.transaction()
tx.create("/zab-tx", b"1")
tx.set_data(PROVIDERS + "/" + P2, b"v2", version=0)
results = tx.commit()
assert results[0] == "/zab-tx" and results[1].version == 1, results
on_zk.sync("/")
assert on_zk.get("/zab-tx")[0] == b"1"
assert on_zk.get(PROVIDERS + "/" + P2)[0] == b"v2"

# The provider on zkr stops: its session's close goes through the leader and its node is gone
# for the consumer on ZooKeeper's side too.
gone = threading.Event()
on_zk.exists(PROVIDERS + "/" + P2, watch=lambda e: gone.set())
on_zkr.stop()
on_zkr.close()
assert gone.wait(10), "the ephemeral of the session closed on zkr went away on ZooKeeper"
assert on_zk.get_children(PROVIDERS) == [P1]
on_zk.stop()
on_zk.close()
print("kazoo on the zkr observer: registry, watches, errors, transaction, session close: OK")
