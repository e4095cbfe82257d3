"""kazoo against an observer of a ZooKeeper ensemble, beside a kazoo client of one of its voters:
a Dubbo-shaped registry where providers register on either side and a consumer on the observer
watches them. The observer is zkr (tests/zab_observer.rs, and the zab suite) or ZooKeeper's own
observer (the zab suite's reference side).

    kazoo_observer.py OBSERVER_HOST:PORT VOTER_HOST:PORT

Prints one line per step, "<step>\t<result>", with nothing in a result that differs between two
correct runs (no session ids or zxids), so two observers' transcripts compare line by line. Exits 1
after the first failed step."""

import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError

OBSERVER, VOTER = sys.argv[1], sys.argv[2]
PROVIDERS = "/dubbo/org.example.GreetingService/providers"
P1 = "dubbo%3A%2F%2F10.0.0.1%3A20880%2Forg.example.GreetingService%3Fside%3Dprovider"
P2 = "dubbo%3A%2F%2F10.0.0.2%3A20880%2Forg.example.GreetingService%3Fside%3Dprovider"


def until(what, f, secs=10):
    deadline = time.time() + secs
    while not f():
        if time.time() > deadline:
            raise AssertionError("timed out waiting for: " + what)
        time.sleep(0.05)


def step(name, f):
    try:
        result = f()
    except Exception as e:  # the transcript says which step broke and how
        print("%s\tFAIL: %s: %s" % (name, type(e).__name__, e), flush=True)
        sys.exit(1)
    print("%s\t%s" % (name, result or "ok"), flush=True)


on_obs = KazooClient(hosts=OBSERVER, timeout=10)
on_voter = KazooClient(hosts=VOTER, timeout=10)
seen = []
lock = threading.Lock()


def connect():
    on_obs.start(timeout=20)
    on_voter.start(timeout=20)


def watch_providers():
    on_obs.ensure_path(PROVIDERS)

    @on_obs.ChildrenWatch(PROVIDERS)
    def providers(children):
        with lock:
            seen.append(sorted(children))


def provider_on_voter():
    on_voter.create(PROVIDERS + "/" + P1, b"", ephemeral=True)
    until("the consumer on the observer sees the provider registered on a voter", lambda: seen and seen[-1] == [P1])


def provider_on_observer():
    on_obs.create(PROVIDERS + "/" + P2, b"v1", ephemeral=True)
    until("the watch on the observer fires for its own client's write", lambda: seen[-1] == sorted([P1, P2]))
    on_voter.sync(PROVIDERS)
    d1, s1 = on_voter.get(PROVIDERS + "/" + P2)
    d2, s2 = on_obs.get(PROVIDERS + "/" + P2)
    assert (d1, s1) == (d2, s2), (d1, s1, d2, s2)
    assert s2.ephemeralOwner == on_obs.client_id[0], (s2.ephemeralOwner, on_obs.client_id)
    return "same data and Stat on both, owned by the observer's session"


def node_exists():
    try:
        on_obs.create(PROVIDERS + "/" + P2, b"")
    except NodeExistsError:
        return "NodeExistsError"
    return "created twice"


def bad_version():
    try:
        on_obs.set(PROVIDERS + "/" + P2, b"v2", version=7)
    except BadVersionError:
        return "BadVersionError"
    return "set with a wrong version"


def transaction():
    tx = on_obs.transaction()
    tx.create("/zab-tx", b"1")
    tx.set_data(PROVIDERS + "/" + P2, b"v2", version=0)
    results = tx.commit()
    assert results[0] == "/zab-tx" and results[1].version == 1, results
    on_voter.sync("/")
    assert on_voter.get("/zab-tx")[0] == b"1"
    assert on_voter.get(PROVIDERS + "/" + P2)[0] == b"v2"
    failed = on_obs.transaction()
    failed.check(PROVIDERS + "/" + P2, 0)
    failed.create("/zab-tx-never", b"")
    return "committed; a failed check gives %s" % [type(r).__name__ for r in failed.commit()]


def sync_then_read():
    on_voter.set("/zab-tx", b"2")
    on_obs.sync("/zab-tx")
    return "read after sync: %r" % on_obs.get("/zab-tx")[0]


def session_close():
    gone = threading.Event()
    on_voter.exists(PROVIDERS + "/" + P2, watch=lambda e: gone.set())
    on_obs.stop()
    on_obs.close()
    assert gone.wait(10), "the ephemeral of the session closed on the observer went away on the voter"
    assert on_voter.get_children(PROVIDERS) == [P1]
    on_voter.delete("/zab-tx")
    on_voter.delete(PROVIDERS + "/" + P1)
    on_voter.stop()
    on_voter.close()


step("connect", connect)
step("watch providers", watch_providers)
step("provider registered on a voter", provider_on_voter)
step("provider registered on the observer", provider_on_observer)
step("create twice", node_exists)
step("set with a wrong version", bad_version)
step("transaction", transaction)
step("sync then read", sync_then_read)
step("session close removes its ephemeral", session_close)
