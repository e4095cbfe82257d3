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
  zookeeper zookeeper-bin libzookeeper-java python3-kazoo netcat-openbsd >/dev/null

echo "== cargo build --release"
cargo build --release --locked

echo "== cargo test"
cargo test --release --locked --lib --bins --tests 2>&1 | tee /tmp/zkr-cargo-test.log | grep -E '^(test result|running|failures:|---- )|panicked' || true
if grep -qE '^test result: FAILED|error(\[E[0-9]+\])?:' /tmp/zkr-cargo-test.log; then
  cat /tmp/zkr-cargo-test.log | tail -80
  echo "cargo test failed"
  exit 1
fi

echo "== cargo bench --no-run (micro-benchmarks compile)"
cargo bench --locked --no-run 2>&1 | tail -n 2

export ZKR_BIN="$PWD/target/release/zkr"
FAILED=()
echo "== interop suite (real clients, zkr vs Debian ZooKeeper)"
bash tests/interop/run.sh || FAILED+=("interop")
echo "== import-zookeeper: data written by Debian's ZooKeeper, imported, compared node by node"
bash tests/interop/import/run.sh || FAILED+=("import")
echo "== Java-client session across zkr restarts"
bash tests/interop/restart/run.sh || FAILED+=("restart")
echo "== load generator smoke run (zkr bench, every workload, against zkr)"
bash tests/bench/smoke.sh || FAILED+=("bench-smoke")
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "failed suites: ${FAILED[*]}"
  exit 1
fi
echo "all suites passed"
