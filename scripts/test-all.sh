#!/usr/bin/env bash
# The whole zkr test suite: Rust unit and integration tests (with the golden protocol fixtures),
# then the interop suite, which runs the same scenarios with real ZooKeeper clients against
# Debian's ZooKeeper and against zkr and compares what the clients see.
# Installs what it needs itself (Debian packages); safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
echo "== installing test dependencies (apt-get)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
  zookeeper zookeeper-bin libzookeeper-java python3-kazoo netcat-openbsd \
  libnetty-java python3-pure-sasl openssl prometheus maven libgssapi-krb5-2 >/dev/null

T0=$SECONDS
echo "== cargo build --release"
cargo build --release --locked
echo "cargo build: $((SECONDS - T0))s"

T0=$SECONDS
echo "== cargo test"
cargo test --release --locked --lib --bins --tests 2>&1 | tee /tmp/zkr-cargo-test.log | grep -E '^(test result|running|failures:|---- )|panicked' || true
if grep -qE '^test result: FAILED|error(\[E[0-9]+\])?:' /tmp/zkr-cargo-test.log; then
  cat /tmp/zkr-cargo-test.log | tail -80
  echo "cargo test failed"
  exit 1
fi
echo "cargo test (compile and run): $((SECONDS - T0))s"

echo "== cargo bench --no-run (micro-benchmarks compile)"
T0=$SECONDS
cargo bench --locked --no-run 2>&1 | tail -n 2
echo "cargo bench --no-run: $((SECONDS - T0))s"

export ZKR_BIN="$PWD/target/release/zkr"
FAILED=()
TIMES=()
# suite NAME "what it checks" command...: runs one suite, records its time, never stops the run
suite() {
  local name="$1" what="$2" start=$SECONDS
  shift 2
  echo "== $what"
  "$@" || FAILED+=("$name")
  TIMES+=("$name $((SECONDS - start))s")
}
suite interop "interop suite (real clients, zkr vs Debian ZooKeeper)" bash tests/interop/run.sh
suite import "import-zookeeper: data written by Debian's ZooKeeper, imported, compared node by node" bash tests/interop/import/run.sh
suite restart "Java-client session across zkr restarts" bash tests/interop/restart/run.sh
suite dubboview "zkr dubbo: CLI tables/--json against zkr and Debian ZooKeeper, web page in headless Chromium" bash tests/interop/dubboview/run.sh
suite ops "operations: four-letter words, AdminServer, /metrics, JSON logs, SIGTERM (vs ZooKeeper 3.8; go-zookeeper, zktop, collectd)" bash tests/interop/ops/run.sh
suite metrics "Prometheus metrics where scrapers look: metricsProvider.httpPort, a real Prometheus scraping Debian ZooKeeper (its PrometheusMetricsProvider) and zkr side by side" bash tests/interop/metrics/run.sh
suite config "zoo.cfg keys as docs/config.md says: Debian's shipped zoo.cfg and every documented key at its default start both servers; zkr logs exactly the keys called ignored" bash tests/interop/config/run.sh
suite dubbo "Dubbo interop: unmodified Dubbo 3.3 and 3.2 (Maven Central) vs Debian ZooKeeper and zkr" bash tests/interop/dubbo/run.sh
suite clients "other ecosystems' clients (kazoo recipes + kazoo's own tests, Go, Node, C cli_mt), zkr vs ZooKeeper" bash tests/interop/clients/run.sh
suite kazoo-ensemble "kazoo 2.11's own test suite on 3-member ensembles (kazoo's launcher, ZOOKEEPER_CLUSTER_SIZE=3): Debian ZooKeeper vs zkr" bash tests/interop/kazoo-ensemble/run.sh
suite hostile "hostile input: ACL matrix vs Debian ZooKeeper (limits, garbage, fuzzing run in cargo test)" bash tests/interop/hostile/run.sh
suite tls "TLS (secureClientPort, x509) and SASL DIGEST-MD5: Java client and kazoo, zkr vs Debian ZooKeeper" bash tests/interop/tls/run.sh
suite kerberos "Kerberos (SASL GSSAPI) on a real KDC (krb5-kdc): the Java client, Curator and kazoo log in to Debian ZooKeeper and zkr with the same zoo.cfg, JAAS file and keytab; ids, ACLs, whoAmI, super user, bad tokens, a keytab without the principal, the KDC down, enforce.auth" bash tests/interop/kerberos/run.sh
suite quorum-tls "TLS between ensemble members (sslQuorum, keytool stores): the same zoo.cfg forms Debian ZooKeeper and zkr ensembles, zkCli across members, an untrusted member kept out, port unification" bash tests/interop/quorum-tls/run.sh
suite docker "Docker image without an engine: docker-compose config, entrypoint files vs the official zookeeper image's, the compose file's 3 members as processes (leader, failover)" bash tests/interop/docker/run.sh
suite ensemble "3-member ensembles, zkr vs Debian ZooKeeper: the Java client's session and watches and Curator's recipes across kill -9 of the connected member and of the leader; the Java client on a follower with and without zkr.keepClientsOnLeaderLoss" bash tests/interop/ensemble/run.sh
suite zab "zkr observing live ZooKeeper 3.8 (Debian) and 3.9.5, 3.7.2, 3.6.4, 3.5.10 (Maven Central) ensembles beside ZooKeeper's own observer: kazoo's registry scenario through each, transcripts equal" bash tests/interop/zab/run.sh
suite faults "fault suite, short matrix: 3-member zkr ensembles in network namespaces under every nemesis (kill -9, partitions, SIGSTOP, log/snapshot damage, wipe, a deaf follower, a leader that refuses one follower), kill at session birth, lost acknowledged writes (a damaged first or last record, a wiped disk), SessionMoved; nine workloads checked (porcupine linearizability, set, unique ids, counter, sessions, watches, session births, pipelined writes, reply order)" bash tests/faults/run.sh --short
suite disk-faults "disk-fault matrix, zkr: every file a member keeps damaged one way at a time (flipped, truncated, zeroed, deleted, an older copy) on a follower while the two others run: the member comes back by itself, no acknowledged write lost" bash tests/faults/run.sh --disk --server zkr
suite disk-faults-leader "disk-fault matrix, zkr, the leader's files: the leader killed and damaged while the two others elect; it comes back by itself and votes again, no acknowledged write lost" bash tests/faults/run.sh --disk --server zkr --schedule a-leader
suite bench-smoke "load generator smoke run (zkr bench, every workload, against zkr)" bash tests/bench/smoke.sh
suite matrix "compatibility matrix (docs/compatibility.md from every suite's rows)" /usr/bin/python3 tests/interop/matrix.py generate
echo "suite times: ${TIMES[*]}"
echo "whole run: $((SECONDS / 60)) min $((SECONDS % 60)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "failed suites: ${FAILED[*]}"
  exit 1
fi
echo "all suites passed"
