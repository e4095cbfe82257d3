"""kazoo (python3-kazoo 2.8) with SASL GSSAPI through pure-sasl and python3-kerberos (MIT, the ccache in
KRB5CCNAME, filled by kinit -kt bob.keytab). kazoo 2.8 has no whoAmI call: the request (opcode 107)
is sent through kazoo's own connection with a small request class. Prints one line per observation.
Usage: kazoo_krb.py PORT full|existing-ticket
"""
import logging
import struct
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoAuthError
from kazoo.protocol.serialization import read_string
from kazoo.security import ACL, Id, Permissions

logging.basicConfig(level=logging.CRITICAL)
PORT, MODE = int(sys.argv[1]), sys.argv[2]


def out(line):
    print(line, flush=True)


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


def whoami(zk):
    try:
        result = zk.handler.async_result()
        zk._call(WhoAmI(), result)
        ids = result.get(timeout=10)
        out(f"kazoo bob: whoAmI -> [{', '.join(ids)}]")
        return ids
    except KazooException as e:
        out(f"kazoo bob: whoAmI -> {type(e).__name__}")
        return []


zk = KazooClient(hosts=f"localhost:{PORT}", timeout=10, connection_retry={"max_tries": 0},
                 sasl_options={"mechanism": "GSSAPI", "service": "zookeeper"})
try:
    zk.start(timeout=10)
    out("kazoo bob: connected")
except Exception as e:  # noqa: BLE001 - the transcript records the kind of failure
    out(f"kazoo bob: not connected ({type(e).__name__})")
    sys.exit(0)
ids = whoami(zk)
sid = next((i.split(":", 1)[1] for i in ids if i.startswith("sasl:")), "bob")
path = "/kz" if MODE == "full" else "/kz-again"
acl = [ACL(Permissions.ALL, Id("sasl", sid))]
try:
    zk.create(path, b"kz-data", acl=acl)
    out(f"kazoo bob: create {path} [sasl:{sid}:31] -> ok")
except KazooException as e:
    out(f"kazoo bob: create {path} -> {type(e).__name__}")
try:
    acls, _ = zk.get_acls(path)
    out(f"kazoo bob: getACL {path} -> [{', '.join(f'{a.id.scheme}:{a.id.id}:{a.perms}' for a in acls)}]")
    out(f"kazoo bob: getData {path} -> {zk.get(path)[0].decode()}")
except NoAuthError:
    out(f"kazoo bob: getData {path} -> NoAuth")
except KazooException as e:
    out(f"kazoo bob: getData {path} -> {type(e).__name__}")
zk.stop()
zk.close()
out("done")
