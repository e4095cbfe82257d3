"""kazoo (python3-kazoo 2.8) with SASL GSSAPI (pure-sasl, the ccache in KRB5CCNAME) for quorum.sh:
one session on one server, the steps given on the command line, one line per observation.
Usage: kazoo_quorum.py LABEL PORT STEP...   where STEP is whoami | create:PATH:DATA | read:PATH
(read: sync, then getData). The label starts each line; the port is not printed.
"""
import logging
import struct
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.protocol.serialization import read_string

logging.basicConfig(level=logging.CRITICAL)
LABEL, PORT, STEPS = sys.argv[1], int(sys.argv[2]), sys.argv[3:]


def out(line):
    print(f"{LABEL}: {line}", flush=True)


class WhoAmI:
    type = 107

    def serialize(self):
        return b""

    @classmethod
    def deserialize(cls, b, offset):
        (n,) = struct.unpack_from(">i", b, offset)
        offset += 4
        ids = []
        for _ in range(n):
            scheme, offset = read_string(b, offset)
            user, offset = read_string(b, offset)
            ids.append(f"{scheme}:{user}")
        return ids


zk = KazooClient(hosts=f"localhost:{PORT}", timeout=10, connection_retry={"max_tries": 0},
                 sasl_options={"mechanism": "GSSAPI", "service": "zookeeper"})
try:
    zk.start(timeout=15)
except Exception as e:  # noqa: BLE001 - the transcript records the kind of failure
    out(f"not connected ({type(e).__name__})")
    sys.exit(1)
rc = 0
for step in STEPS:
    kind, _, rest = step.partition(":")
    try:
        if kind == "whoami":
            result = zk.handler.async_result()
            zk._call(WhoAmI(), result)
            out(f"whoAmI -> [{', '.join(result.get(timeout=10))}]")
        elif kind == "create":
            path, _, data = rest.partition(":")
            zk.create(path, data.encode())
            out(f"create {path} {data} -> ok")
        elif kind == "read":
            zk.sync(rest)
            out(f"sync, getData {rest} -> {zk.get(rest)[0].decode()}")
        else:
            out(f"unknown step {step}")
            rc = 2
    except KazooException as e:
        out(f"{step} -> {type(e).__name__}")
        rc = 1
zk.stop()
zk.close()
sys.exit(rc)
