"""pytest plugin: points kazoo's own test harness at an already-running server.

kazoo's KazooTestHarness/KazooTestCase normally launch a 3-node ZooKeeper cluster from a ZooKeeper
install (kazoo.testing.common.ZookeeperCluster). Loaded with `-p zkr_kazoo_shim`, this plugin
replaces that cluster by a one-server "cluster" at ZKR_KAZOO_SERVER (host:port) that is already
running (zkr, or Debian's ZooKeeper for the reference run). Starting/stopping servers is not
possible through it: a test that tries fails loudly (ExternalServerError); such tests are
deselected for both servers by run.sh with a stated reason.

With ZKR_KAZOO_LAUNCH=zookeeper or =zkr, kazoo's own launcher runs instead (ZookeeperCluster:
certificates made with pyOpenSSL, a JKS key and trust store written with pyjks, its zoo.cfg with
ssl.keyStore.location=keystore.jks and no type); with =zkr the process it starts is
`$ZKR_BIN serve --config <kazoo's zoo.cfg>` instead of `java ... QuorumPeerMain <zoo.cfg>`.
tests/interop/tls/run.sh uses this for kazoo's TestSSLClient.
"""

import os
import sys
import types


class ExternalServerError(RuntimeError):
    pass


LAUNCH = os.environ.get("ZKR_KAZOO_LAUNCH")

if LAUNCH is None:
    # kazoo.testing.common imports pyOpenSSL and pyjks only to build a TLS cluster; none is
    # launched here, so a stand-in module keeps those out of the test environment
    _common = types.ModuleType("kazoo.testing.common")

    class _NoCluster:
        def __init__(self, *a, **kw):
            raise ExternalServerError("this run uses an external server, it cannot launch a cluster")

    _common.ZookeeperCluster = _NoCluster
    sys.modules["kazoo.testing.common"] = _common
elif LAUNCH == "zkr":
    import subprocess

    import kazoo.testing.common as _real_common

    class _ZkrInsteadOfJava:
        """kazoo.testing.common's `subprocess`, with Popen starting zkr on kazoo's zoo.cfg."""

        def __getattr__(self, name):
            return getattr(subprocess, name)

        @staticmethod
        def Popen(args, **kw):
            main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
            if main in args:
                cfg = args[args.index(main) + 1]
                args = [os.environ["ZKR_BIN"], "serve", "--config", cfg]
                if os.environ.get("ZKR_KAZOO_LAUNCH_LOG"):
                    with open(os.environ["ZKR_KAZOO_LAUNCH_LOG"], "a") as f, open(cfg) as c:
                        ssl_lines = [x.strip() for x in c if x.startswith(("ssl.", "secureClientPort"))]
                        f.write(" ".join(args) + "\n" + "\n".join(ssl_lines) + "\n")
                log = open(os.path.join(os.path.dirname(cfg), "zkr.log"), "ab")
                kw.setdefault("stdout", log)
                kw.setdefault("stderr", log)
            return subprocess.Popen(args, **kw)

    _real_common.subprocess = _ZkrInsteadOfJava()

import kazoo.testing.harness as harness  # noqa: E402


class ExternalServer:
    def __init__(self, address):
        self.address = address
        self.running = True

    @property
    def secure_address(self):
        raise ExternalServerError("no TLS port on the external server")

    def _refuse(self, *a, **kw):
        raise ExternalServerError("cannot stop/start/reset the external server")

    run = stop = reset = destroy = _refuse


class ExternalCluster(list):
    def start(self):
        pass

    def stop(self):
        pass

    def terminate(self):
        pass  # called by KazooTestCase.tearDownClass; the server outlives the tests

    def get_logs(self, *a, **kw):
        return []

    def get_ssl_client_configuration(self):
        raise ExternalServerError("no TLS on the external server")


_CLUSTER = None


def get_global_cluster():
    global _CLUSTER
    if _CLUSTER is None:
        addr = os.environ.get("ZKR_KAZOO_SERVER")
        if not addr:
            raise ExternalServerError("set ZKR_KAZOO_SERVER=host:port")
        _CLUSTER = ExternalCluster([ExternalServer(addr)])
    return _CLUSTER


if LAUNCH is None:
    harness.get_global_cluster = get_global_cluster
