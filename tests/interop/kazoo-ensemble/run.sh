#!/usr/bin/env bash
# kazoo 2.11's own test suite on 3-member ensembles: Debian's ZooKeeper 3.8 and zkr, each started
# by kazoo's own launcher (kazoo.testing.common.ZookeeperCluster, ZOOKEEPER_CLUSTER_SIZE=3) on the
# zoo.cfg files it writes: server.N=localhost:peerPort:electionPort:participant lines, myid in
# dataDir, peerType, initLimit/syncLimit, reconfigEnabled=true, 4lw.commands.whitelist=*, local
# sessions settings, a TLS port with JKS stores, a super digest and a JAAS file as JVM system
# properties. For ZooKeeper it runs `java ... QuorumPeerMain zoo.cfg`; for zkr the clients
# suite's shim (ZKR_KAZOO_LAUNCH=zkr) runs `zkr serve --config zoo.cfg` with the zkr flags of
# those system properties. kazoo stops and restarts the ensemble between test classes, and some
# tests stop members themselves (TestReadOnlyMode, the request-queuing tests).
#
# Both runs are compared by compare.py: both pass/fail/skip totals, every test whose outcome
# differs, and the documented differences (known-differences.json, scenario "kazoo-ensemble").
# The check fails if a test passing on ZooKeeper fails on zkr twice (first run and one re-run of
# just those tests) without an entry there, if kazoo's TestReconfig or TestReadOnlyMode did not
# run on both, or if ZooKeeper passed fewer tests than the recorded baseline.
#
#   ZKR_BIN=target/release/zkr bash tests/interop/kazoo-ensemble/run.sh
#   ZKR_BIN=... bash tests/interop/kazoo-ensemble/run.sh kazoo/tests/test_lock.py   # a subset
#
# KAZOO_ENSEMBLE_SEQUENTIAL=1 runs the two sides one after the other (default: side by side).
# KAZOO_ENSEMBLE_OBSERVER_START_ID=3 makes member 3 an observer (kazoo's ZOOKEEPER_OBSERVER_START_ID).
# Ports: KAZOO_ENSEMBLE_PORT_BASE (25000) .. +899. Work and logs in tests/interop/.work/kazoo-ensemble
# (each member's log in run.*/logs/<side>/). Writes matrix rows to .work/matrix/kazoo-ensemble.tsv.
# Prints one PASS/FAIL line and "N passed, M failed". Exit 0 passed, 1 failed, 2 setup problem.

set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
REPO="$(cd "$INTEROP/../.." && pwd)"
# shellcheck source=../lib/servers.sh
. "$HERE/../lib/servers.sh"
WORK="$INTEROP/.work/kazoo-ensemble"
PY=/usr/bin/python3
PORT_BASE=${KAZOO_ENSEMBLE_PORT_BASE:-25000}
KAZOO_VERSION=2.11.0
SIDE_TIMEOUT=1500

say() { echo "[kazoo-ensemble] $*" >&2; }
die() { say "ERROR: $*"; exit 2; }

T0=$(date +%s)
mkdir -p "$WORK"
if [ -z "${ZKR_BIN:-}" ]; then
    for c in "$REPO/target/release/zkr" "$REPO/target/debug/zkr"; do [ -x "$c" ] && { ZKR_BIN="$c"; break; }; done
fi
[ -x "${ZKR_BIN:-}" ] || die "set ZKR_BIN=path/to/zkr"
ZKR_BIN="$(cd "$(dirname "$ZKR_BIN")" && pwd)/$(basename "$ZKR_BIN")"
TARGETS=("$@")
export KAZOO_ENSEMBLE_SUBSET=1
[ "${#TARGETS[@]}" -gt 0 ] || { TARGETS=(kazoo/tests); KAZOO_ENSEMBLE_SUBSET=0; }

# ---------------------------------------------------------------- dependencies
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
apt_missing=()
for p in zookeeper libzookeeper-java libnetty-java libslf4j-java python3-venv netcat-openbsd; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || apt_missing+=("$p")
done
if [ "${#apt_missing[@]}" -gt 0 ]; then
    say "apt-get install ${apt_missing[*]}"
    { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_missing[@]}"; } >"$WORK/apt.log" 2>&1 ||
        { tail -n 20 "$WORK/apt.log" >&2; die "apt-get failed"; }
fi
command -v java >/dev/null || die "no java on PATH (Debian's zookeeper package should have brought one)"
ZK_VERSION=$(dpkg-query -W -f='${Version}' zookeeper | sed 's/[-+~].*//')
# kazoo's test_build checks the server's `srvr` version against ZOOKEEPER_VERSION: zkr's side is
# given the ZooKeeper version zkr reports (src/server/ops.rs), not Debian's
ZKR_ZK_VERSION=$(sed -n 's/^pub const VERSION: &str = concat!("\([0-9.]*\)-zkr-.*/\1/p' "$REPO/src/server/ops.rs")
[ -n "$ZKR_ZK_VERSION" ] || die "cannot read the ZooKeeper version zkr reports from src/server/ops.rs"

VENV="$WORK/kazoo-venv"
KSRC="$WORK/kazoo-$KAZOO_VERSION"
REQ_HASH=$(cat "$HERE/requirements.txt" "$INTEROP/clients/kazoo-suite/requirements.txt" | sha1sum | cut -c1-12)
deps() {
    if [ "$(cat "$VENV/.requirements" 2>/dev/null)" != "$REQ_HASH" ]; then
        rm -rf "$VENV"
        "$PY" -m venv "$VENV" && (cd "$HERE" && "$VENV/bin/pip" install -q -r requirements.txt) || return 1
        echo "$REQ_HASH" >"$VENV/.requirements"
    fi
    [ -d "$KSRC/kazoo/tests" ] && return 0
    rm -rf "$WORK/sdist" && mkdir -p "$WORK/sdist" &&
        "$VENV/bin/pip" download -q --no-deps --no-binary :all: -d "$WORK/sdist" "kazoo==$KAZOO_VERSION" &&
        tar -xzf "$WORK/sdist/kazoo-$KAZOO_VERSION.tar.gz" -C "$WORK"
}
deps >"$WORK/deps.log" 2>&1 || { tail -n 30 "$WORK/deps.log" >&2; die "installing pytest, pyOpenSSL, pyjks, pure-sasl or the kazoo sdist failed"; }
say "dependencies ready after $(( $(date +%s) - T0 ))s (ZooKeeper $ZK_VERSION, kazoo $KAZOO_VERSION)"

# ZooKeeper's class path: Netty (kazoo's zoo.cfg asks for NettyServerCnxnFactory; Debian's
# netty-all.jar is an empty shell, the module jars hold the classes) and slf4j-simple, so that
# each member logs to stderr, which the shim keeps in logs/zookeeper/.
CP=$(printf '/usr/share/java/%s.jar:' zookeeper zookeeper-jute slf4j-api slf4j-simple commons-io)
for m in buffer codec common handler resolver transport transport-native-epoll transport-native-unix-common; do
    [ -f "/usr/share/java/netty-$m.jar" ] && CP="$CP/usr/share/java/netty-$m.jar:"
done

# ---------------------------------------------------------------- runs
RUN_DIR="$WORK/run.$$"
rm -rf "$WORK"/run.*
mkdir -p "$RUN_DIR/out"
PID_FILES=()
cleanup() {  # members a killed pytest left running: only pids the shim recorded, still on our zoo.cfg
    local f pid cfg
    for f in "${PID_FILES[@]}"; do
        [ -f "$f" ] || continue
        while read -r pid cfg; do
            if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$cfg"; then
                say "stopping member pid $pid left running ($cfg)"
                kill -9 "$pid" 2>/dev/null
            fi
        done <"$f"
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# two blocks of kazoo's ports (member i: offset+10i .. +4: client, election, peer, admin, secure)
BASE=$(srv_pick_base "$PORT_BASE" 900 55) || die "no 55 free ports in $PORT_BASE-$((PORT_BASE + 899))"
for b in "$BASE" $((BASE + 30)); do
    ports=()
    for i in 0 1 2; do for j in 0 1 2 3 4; do ports+=($((b + 10 * i + j))); done; done
    srv_ports_free "${ports[@]}" || die "ports of the block at $b are taken"
done

read -r -a IGNORED <<<"$("$PY" "$HERE/compare.py" --pytest-args)"   # modules left out for both
run_side() {  # side offset name [pytest targets...]
    local side=$1 offset=$2 name=$3 version=$ZK_VERSION
    shift 3
    [ "$side" = zkr ] && version=$ZKR_ZK_VERSION
    mkdir -p "$RUN_DIR/tmp/$name" "$RUN_DIR/logs/$name"
    PID_FILES+=("$RUN_DIR/out/$name.pids")
    (cd "$KSRC" && TMPDIR="$RUN_DIR/tmp/$name" ZKR_BIN="$ZKR_BIN" ZKR_KAZOO_LAUNCH="$side" \
        ZKR_KAZOO_LOG_DIR="$RUN_DIR/logs/$name" ZKR_KAZOO_PID_FILE="$RUN_DIR/out/$name.pids" RUST_LOG=info \
        ZOOKEEPER_CLASSPATH="$CP" ZOOKEEPER_VERSION="$version" ZOOKEEPER_CLUSTER_SIZE=3 \
        ZOOKEEPER_OBSERVER_START_ID="${KAZOO_ENSEMBLE_OBSERVER_START_ID:--1}" ZOOKEEPER_PORT_OFFSET="$offset" PYTHONPATH="$INTEROP/clients/kazoo-suite:$KSRC" \
        timeout "$SIDE_TIMEOUT" "$VENV/bin/python" -m pytest -p zkr_kazoo_shim -p no:cacheprovider -q \
        -o addopts= -o log_cli=false -W ignore --timeout 120 --junitxml="$RUN_DIR/out/$name.xml" \
        "${IGNORED[@]}" "$@" >"$RUN_DIR/out/$name.log" 2>&1)
    local rc=$?
    echo "$name: pytest exit $rc, $(grep -E '[0-9]+ (passed|failed)' "$RUN_DIR/out/$name.log" | tail -n 1)" >&2
    return 0
}

s0=$(date +%s)
say "ZooKeeper ensemble on ports $BASE.., zkr ensemble on ports $((BASE + 30)).."
if [ "${KAZOO_ENSEMBLE_SEQUENTIAL:-0}" = 1 ]; then
    t=$(date +%s); run_side zookeeper "$BASE" zookeeper "${TARGETS[@]}"; ZK_SECS=$(( $(date +%s) - t ))
    t=$(date +%s); run_side zkr $((BASE + 30)) zkr "${TARGETS[@]}"; ZKR_SECS=$(( $(date +%s) - t ))
else
    # side by side: the suite mostly waits (sessions, timeouts, ensembles starting)
    PID_FILES+=("$RUN_DIR/out/zookeeper.pids" "$RUN_DIR/out/zkr.pids")
    ( t=$(date +%s); run_side zookeeper "$BASE" zookeeper "${TARGETS[@]}"; echo $(( $(date +%s) - t )) >"$RUN_DIR/out/zookeeper.secs" ) &
    p1=$!
    ( t=$(date +%s); run_side zkr $((BASE + 30)) zkr "${TARGETS[@]}"; echo $(( $(date +%s) - t )) >"$RUN_DIR/out/zkr.secs" ) &
    p2=$!
    wait "$p1" "$p2"
    ZK_SECS=$(cat "$RUN_DIR/out/zookeeper.secs" 2>/dev/null || echo "?")
    ZKR_SECS=$(cat "$RUN_DIR/out/zkr.secs" 2>/dev/null || echo "?")
fi
say "ZooKeeper run ${ZK_SECS}s, zkr run ${ZKR_SECS}s"

# tests that passed on ZooKeeper but not on zkr get one more run against zkr alone, so that a
# timing hiccup on a loaded machine is not taken for a difference (a real one fails twice)
O="$RUN_DIR/out"
if [ -f "$O/zookeeper.xml" ] && [ -f "$O/zkr.xml" ]; then
    "$PY" "$HERE/compare.py" --regressions "$O/zookeeper.xml" "$O/zkr.xml" >"$O/rerun-ids"
    if [ -s "$O/rerun-ids" ]; then
        say "running $(wc -l <"$O/rerun-ids") kazoo tests again against zkr: $(tr '\n' ' ' <"$O/rerun-ids")"
        mapfile -t again <"$O/rerun-ids"
        run_side zkr $((BASE + 30)) zkr-rerun "${again[@]}"
    fi
fi

MATRIX_TSV="$INTEROP/.work/matrix/kazoo-ensemble.tsv"
mkdir -p "$(dirname "$MATRIX_TSV")"
: >"$MATRIX_TSV"
PASSED=0
FAILED=0
took="$(( $(date +%s) - s0 ))s: ZooKeeper ${ZK_SECS}s, zkr ${ZKR_SECS}s"
if "$PY" "$HERE/compare.py" --compare "$O/zookeeper.xml" "$O/zkr.xml" "$MATRIX_TSV" "$O/zkr-rerun.xml" >"$O/summary" 2>&1; then
    echo "PASS kazoo-ensemble [$took]"
    PASSED=1
else
    echo "FAIL kazoo-ensemble: zkr fails kazoo tests that pass on ZooKeeper, or the runs are incomplete [$took]"
    FAILED=1
    say "pytest output: $O/{zookeeper,zkr,zkr-rerun}.log; members' logs: $RUN_DIR/logs/"
fi
sed 's/^/    /' "$O/summary"
say "total time $(( $(date +%s) - T0 ))s"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
