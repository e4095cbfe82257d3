"""pytest plugin: points kazoo's own test harness at an already-running server.

kazoo's KazooTestHarness/KazooTestCase normally launch a 3-node ZooKeeper cluster from a ZooKeeper
install (kazoo.testing.common.ZookeeperCluster). Loaded with `-p zkr_kazoo_shim`, this plugin
replaces that cluster by a one-server "cluster" at ZKR_KAZOO_SERVER (host:port) that is already
running (zkr, or Debian's ZooKeeper for the reference run). Starting/stopping servers is not
possible through it: a test that tries fails loudly (ExternalServerError); such tests are
deselected for both servers by run.sh with a stated reason.

With ZKR_KAZOO_LAUNCH=zookeeper or =zkr, kazoo's own launcher runs instead (ZookeeperCluster:
certificates made with pyOpenSSL, a JKS key and trust store written with pyjks, its zoo.cfg with
ssl.keyStore.location=keystore.jks and no type; with ZOOKEEPER_CLUSTER_SIZE=3, three members with
server.N lines, myid files and peerType); with =zkr the process it starts is
`$ZKR_BIN serve --config <kazoo's zoo.cfg>` (plus the zkr flags of the JVM system properties it
passes, see _zkr_flags) instead of `java ... QuorumPeerMain <zoo.cfg>`.
tests/interop/tls/run.sh uses this for kazoo's TestSSLClient, tests/interop/kazoo-ensemble/run.sh
for kazoo's whole suite on a 3-member ensemble.
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
else:
    import subprocess

    import kazoo.testing.common as _real_common

    _MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

    class _Launcher:
        """kazoo.testing.common's `subprocess`: with ZKR_KAZOO_LAUNCH=zkr, Popen starts zkr on
        kazoo's zoo.cfg instead of `java ... QuorumPeerMain <zoo.cfg>`; with either launch, a
        member's output goes to a log kept in ZKR_KAZOO_LOG_DIR (when set) and its pid is
        appended to ZKR_KAZOO_PID_FILE (when set), so that the suite can stop members a killed
        pytest left behind."""

        def __getattr__(self, name):
            return getattr(subprocess, name)

        @staticmethod
        def Popen(args, **kw):
            if _MAIN not in args:
                return subprocess.Popen(args, **kw)
            cfg = args[args.index(_MAIN) + 1]
            if LAUNCH == "zkr":
                args = [os.environ["ZKR_BIN"], "serve", "--config", cfg] + _zkr_flags(args)
                if os.environ.get("ZKR_KAZOO_LAUNCH_LOG"):
                    with open(os.environ["ZKR_KAZOO_LAUNCH_LOG"], "a") as f, open(cfg) as c:
                        ssl_lines = [x.strip() for x in c if x.startswith(("ssl.", "secureClientPort"))]
                        f.write(" ".join(args) + "\n" + "\n".join(ssl_lines) + "\n")
            log_path = _log_path(cfg)
            if log_path:
                log = open(log_path, "ab")
                test = os.environ.get("PYTEST_CURRENT_TEST", "-")
                log.write(("== %s (test: %s)\n" % (" ".join(args), test)).encode())
                log.flush()
                kw.setdefault("stdout", log)
                kw.setdefault("stderr", log)
            proc = subprocess.Popen(args, **kw)
            if os.environ.get("ZKR_KAZOO_PID_FILE"):
                with open(os.environ["ZKR_KAZOO_PID_FILE"], "a") as f:
                    f.write("%d %s\n" % (proc.pid, cfg))
            return proc

    def _zkr_flags(java_args):
        """zkr's flags for the JVM system properties kazoo's launcher passes to ZooKeeper.

        -Dzookeeper.DigestAuthenticationProvider.superDigest=X is --super-digest X (kazoo sets it
        from ZooKeeper 3.5 on: user super, password test). -Djava.security.auth.login.config=F is
        --jaas-config F when F has a Server section; kazoo writes an empty file unless
        ZOOKEEPER_JAAS_AUTH is set, and ZooKeeper then serves no SASL, as zkr does without the
        flag. -Dreadonlymode.enabled=true is --readonlymode-enabled true. The others (logging,
        file.encoding) have no zkr flag.
        """
        flags = []
        for a in java_args:
            if a.startswith("-Dzookeeper.DigestAuthenticationProvider.superDigest="):
                flags += ["--super-digest", a.split("=", 1)[1]]
            elif a == "-Dreadonlymode.enabled=true":
                flags += ["--readonlymode-enabled", "true"]
            elif a.startswith("-Djava.security.auth.login.config="):
                path = a.split("=", 1)[1]
                if os.path.exists(path) and "Server" in open(path).read():
                    flags += ["--jaas-config", path]
        return flags

    def _log_path(cfg):
        """A member's log: kept in ZKR_KAZOO_LOG_DIR as port<clientPort>.<kazoo's dir>.log, else
        zkr.log beside kazoo's zoo.cfg (removed with it); ZooKeeper's output is left alone then."""
        keep = os.environ.get("ZKR_KAZOO_LOG_DIR")
        if not keep:
            return os.path.join(os.path.dirname(cfg), "zkr.log") if LAUNCH == "zkr" else None
        os.makedirs(keep, exist_ok=True)
        member = "member"
        with open(cfg) as c:
            for line in c:
                if line.startswith("clientPort="):
                    member = "port" + line.split("=", 1)[1].strip()
        return os.path.join(keep, "%s.%s.log" % (member, os.path.basename(os.path.dirname(cfg))))

    _real_common.subprocess = _Launcher()

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
