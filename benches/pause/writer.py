"""Pipelined 32 KB writes through one member, for scripts/bench-ensemble.sh's `pause` figure.

    python3 writer.py HOST:PORT OUT_FILE SECONDS

One kazoo session (30 s timeout) keeps up to 64 setData of 32 KB in flight on /pause for
SECONDS, then writes to OUT_FILE one line per acknowledged write (its time, epoch ms) and a
last line `expired=0|1` (1 if the session was ever told it expired).
"""

import sys
import threading
import time

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import SessionExpiredError

host, out, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
zk = KazooClient(hosts=host, timeout=30.0)
state = {"expired": False}


def listen(s):
    if s == KazooState.LOST:
        state["expired"] = True


zk.add_listener(listen)
zk.start(timeout=30)
zk.ensure_path("/pause")
data = b"w" * 32768
slots = threading.Semaphore(64)
acks = []
lock = threading.Lock()


def done(result):
    try:
        result.get()
        with lock:
            acks.append(int(time.time() * 1000))
    except SessionExpiredError:
        state["expired"] = True
    except Exception:
        pass
    finally:
        slots.release()


print("ready", flush=True)
end = time.time() + secs
while time.time() < end:
    if not slots.acquire(timeout=0.5):
        continue
    try:
        zk.set_async("/pause", data).rawlink(done)
    except Exception:
        slots.release()
        time.sleep(0.05)
time.sleep(2)
with open(out, "w") as f:
    with lock:
        for a in acks:
            f.write(f"{a}\n")
    f.write(f"expired={int(state['expired'])}\n")
try:
    zk.stop()
except Exception:
    pass
