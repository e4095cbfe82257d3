#!/usr/bin/env bash
# Other ecosystems' clients against Debian's ZooKeeper 3.8 and against zkr, compared:
#   kazoo-recipes/*  kazoo's recipes (Debian python3-kazoo 2.8)           kazoo/recipes.py
#   go/*             github.com/go-zookeeper/zk (Go module proxy)          go/main.go
#   node/*           node-zookeeper-client (npm)                           node/scenarios.js
#   c/*              the C client's cli_mt (Debian zookeeper-bin)          c/drive_cli_mt.py
#   kazoo-suite      kazoo 2.11's own test suite (PyPI sdist) through a harness shim, pass counts
#                    side by side; fails if a test passing on ZooKeeper fails on zkr (unless documented)
#
#   ZKR_BIN=target/release/zkr tests/interop/clients/run.sh            # everything
#   ZKR_BIN=... tests/interop/clients/run.sh go node/watches            # a subset (kazoo-suite by name)
#   tests/interop/clients/run.sh --list
#
# Installs its own dependencies (apt, pip into a venv, npm, go). Ports: CLIENTS_PORT_BASE (29000)
# .. +999. Writes matrix rows to tests/interop/.work/matrix/clients.tsv. Prints one PASS/FAIL line
# per check and ends with "N passed, M failed". Exit 0 all passed, 1 a check failed, 2 setup problem.

set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
REPO="$(cd "$INTEROP/../.." && pwd)"
# shellcheck source=../lib/servers.sh
. "$HERE/../lib/servers.sh"
WORK="$INTEROP/.work/clients"
PY=/usr/bin/python3
PORT_BASE=${CLIENTS_PORT_BASE:-29000}
KAZOO_VERSION=2.11.0
SCENARIO_TIMEOUT=120

say() { echo "[clients] $*" >&2; }
die() { say "ERROR: $*"; exit 2; }

LIST_ONLY=0
FILTERS=()
for a in "$@"; do
    case "$a" in
        --list) LIST_ONLY=1 ;;
        -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) FILTERS+=("$a") ;;
    esac
done

# ---------------------------------------------------------------- scenario list

ALL=()
for n in $("$PY" "$HERE/kazoo/recipes.py" --list); do ALL+=("kazoo-recipes/$n"); done
for n in crud watches ephemerals lock; do ALL+=("go/$n"); done
for n in crud watches ephemerals; do ALL+=("node/$n"); done
for n in $("$PY" "$HERE/c/drive_cli_mt.py" --list); do ALL+=("c/$n"); done
ALL+=("kazoo-suite")
SELECTED=()
for s in "${ALL[@]}"; do
    if [ "${#FILTERS[@]}" -eq 0 ]; then SELECTED+=("$s"); continue; fi
    for f in "${FILTERS[@]}"; do
        if [[ "$s" == $f || "$s" == "$f"/* || "$s" == *"$f"* ]]; then SELECTED+=("$s"); break; fi
    done
done
if [ "$LIST_ONLY" -eq 1 ]; then printf '%s\n' "${SELECTED[@]}"; exit 0; fi
[ "${#SELECTED[@]}" -gt 0 ] || die "no check matches: ${FILTERS[*]} (see --list)"
wants() { local s; for s in "${SELECTED[@]}"; do [[ "$s" == "$1"* ]] && return 0; done; return 1; }

# ---------------------------------------------------------------- dependencies

T0=$(date +%s)
mkdir -p "$WORK"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
apt_missing=""
for p in zookeeper zookeeper-bin python3-kazoo python3-venv netcat-openbsd coreutils; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || apt_missing="$apt_missing $p"
done
wants go && ! command -v go >/dev/null && apt_missing="$apt_missing golang-go"
wants node && ! command -v npm >/dev/null && apt_missing="$apt_missing nodejs npm"
if [ -n "$apt_missing" ]; then
    say "apt-get install$apt_missing"
    { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $apt_missing; } >"$WORK/apt.log" 2>&1 ||
        { tail -n 20 "$WORK/apt.log" >&2; die "apt-get failed"; }
fi
[ -x /usr/lib/zookeeper/bin/cli_mt ] || die "cli_mt missing (zookeeper-bin)"

# Go build, npm ci and the Python venv run side by side (mostly downloads); each logs to $WORK/*.log
dep_go() {
    (cd "$HERE/go" && go build -mod=readonly -o "$GO_BIN.tmp" .) && mv "$GO_BIN.tmp" "$GO_BIN"
}
dep_node() {
    rm -rf "$NODE_DIR" && mkdir -p "$NODE_DIR" && cp "$HERE"/node/package.json "$HERE"/node/package-lock.json "$NODE_DIR/" &&
        (cd "$NODE_DIR" && npm ci --no-audit --no-fund)
}
dep_kazoo() {
    if [ ! -x "$VENV/bin/pytest" ]; then
        rm -rf "$VENV"
        "$PY" -m venv "$VENV" && "$VENV/bin/pip" install -q -r "$HERE/kazoo-suite/requirements.txt" || return 1
    fi
    rm -rf "$WORK/sdist" && mkdir -p "$WORK/sdist" &&
        "$VENV/bin/pip" download -q --no-deps --no-binary :all: -d "$WORK/sdist" "kazoo==$KAZOO_VERSION" &&
        tar -xzf "$WORK/sdist/kazoo-$KAZOO_VERSION.tar.gz" -C "$WORK"
}
DEP_PIDS=()
DEP_NAMES=()
start_dep() {  # name
    say "$1: installing (log $WORK/$1.log)"
    ( s=$(date +%s); "dep_$1" >"$WORK/$1.log" 2>&1; rc=$?; echo "took $(( $(date +%s) - s ))s" >>"$WORK/$1.log"; exit $rc ) &
    DEP_PIDS+=($!)
    DEP_NAMES+=("$1")
}
if wants go; then
    GHASH=$(cat "$HERE"/go/go.mod "$HERE"/go/go.sum "$HERE"/go/main.go | sha1sum | cut -c1-12)
    GO_BIN="$WORK/zkclient-$GHASH"
    [ -x "$GO_BIN" ] || start_dep go   # go-zookeeper/zk from the Go module proxy
fi
if wants node; then
    NHASH=$(cat "$HERE"/node/package.json "$HERE"/node/package-lock.json | sha1sum | cut -c1-12)
    NODE_DIR="$WORK/node-$NHASH"
    [ -d "$NODE_DIR/node_modules/node-zookeeper-client" ] || start_dep node   # node-zookeeper-client from npm
fi
if wants kazoo-suite; then
    VENV="$WORK/kazoo-venv"
    KSRC="$WORK/kazoo-$KAZOO_VERSION"
    { [ -x "$VENV/bin/pytest" ] && [ -d "$KSRC/kazoo/tests" ]; } || start_dep kazoo   # pytest + kazoo sdist from PyPI
fi
for i in "${!DEP_PIDS[@]}"; do
    n=${DEP_NAMES[$i]}
    if wait "${DEP_PIDS[$i]}"; then
        say "$n: $(tail -n 1 "$WORK/$n.log")"
    else
        tail -n 30 "$WORK/$n.log" >&2
        die "installing the $n dependencies failed"
    fi
done
say "dependencies ready after $(( $(date +%s) - T0 ))s"

# ---------------------------------------------------------------- servers

BASE=$(srv_pick_base "$PORT_BASE" 1000 2) || die "no free ports in $PORT_BASE-$((PORT_BASE + 999))"
REF_ADDR="127.0.0.1:$BASE"
ZKR_ADDR="127.0.0.1:$((BASE + 1))"

RUN_DIR="$WORK/run.$$"
rm -rf "$WORK"/run.*
mkdir -p "$RUN_DIR/out"
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

write_cfg() {  # dir port
    mkdir -p "$1/data"
    cat >"$1/zoo.cfg" <<EOF
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=20000
maxClientCnxns=0
clientPort=$2
dataDir=$1/data
extendedTypesEnabled=true
4lw.commands.whitelist=*
admin.enableServer=false
EOF
}
ruok() { [ "$(echo ruok | nc -q1 -w2 127.0.0.1 "$1" 2>/dev/null)" = "imok" ]; }
wait_up() {  # port pid log
    srv_wait_ruok "$1" "$2" 90 && return 0
    srv_diagnose server "$1" "$2" "$3"
    die "server on port $1 did not start"
}

d="$RUN_DIR/zookeeper"
write_cfg "$d" "$BASE"
ZOOCFGDIR="$d" ZOO_LOG_DIR="$d" ZOOPIDFILE="$d/pid" SERVER_JVMFLAGS="$ZK_LOGGING_FLAGS -Dzookeeper.log.dir=$d -Xmx512m" \
    /usr/share/zookeeper/bin/zkServer.sh start-foreground "$d/zoo.cfg" >"$d/server.log" 2>&1 </dev/null &
REF_PID=$!
PIDS+=("$REF_PID")
if [ "${INTEROP_BOTH_ZK:-0}" = 1 ]; then
    d2="$RUN_DIR/zookeeper2"
    write_cfg "$d2" "$((BASE + 1))"
    ZOOCFGDIR="$d2" ZOO_LOG_DIR="$d2" ZOOPIDFILE="$d2/pid" SERVER_JVMFLAGS="$ZK_LOGGING_FLAGS -Dzookeeper.log.dir=$d2 -Xmx512m" \
        /usr/share/zookeeper/bin/zkServer.sh start-foreground "$d2/zoo.cfg" >"$d2/server.log" 2>&1 </dev/null &
    ZKR_PID=$!
    ZKR_LOG="$d2/server.log"
    say "INTEROP_BOTH_ZK=1: the zkr side is a second ZooKeeper"
else
    if [ -z "${ZKR_BIN:-}" ]; then
        for c in "$REPO/target/release/zkr" "$REPO/target/debug/zkr"; do [ -x "$c" ] && { ZKR_BIN="$c"; break; }; done
    fi
    [ -x "${ZKR_BIN:-}" ] || die "set ZKR_BIN=path/to/zkr"
    d2="$RUN_DIR/zkr"
    write_cfg "$d2" "$((BASE + 1))"
    ZKR_LOG="$d2/zkr.log"
    "$ZKR_BIN" serve --config "$d2/zoo.cfg" --data-dir "$d2/data" >"$d2/zkr.stdout" 2>"$ZKR_LOG" </dev/null &
    ZKR_PID=$!
fi
PIDS+=("$ZKR_PID")
wait_up "$BASE" "$REF_PID" "$d/server.log"
wait_up "$((BASE + 1))" "$ZKR_PID" "$ZKR_LOG"
say "ZooKeeper on $REF_ADDR, zkr on $ZKR_ADDR"

# ---------------------------------------------------------------- checks

MATRIX_TSV="$INTEROP/.work/matrix/clients.tsv"
mkdir -p "$(dirname "$MATRIX_TSV")"
: >"$MATRIX_TSV"
PASSED=0
FAILED=0
FAILED_NAMES=()
indent() { sed 's/^/    /'; }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); FAILED_NAMES+=("$1"); }

client_label() {
    case "$1" in
        kazoo-recipes) echo "kazoo recipes (python3-kazoo 2.8)" ;;
        go) echo "Go: go-zookeeper/zk" ;;
        node) echo "Node: node-zookeeper-client" ;;
        c) echo "C client: cli_mt" ;;
    esac
}

run_side() {  # scenario addr out_prefix
    local client="${1%%/*}" name="${1#*/}"
    case "$client" in
        kazoo-recipes) timeout "$SCENARIO_TIMEOUT" "$PY" "$HERE/kazoo/recipes.py" "$name" "$2" ;;
        go) timeout "$SCENARIO_TIMEOUT" "$GO_BIN" "$name" "$2" ;;
        node) NODE_PATH="$NODE_DIR/node_modules" timeout "$SCENARIO_TIMEOUT" node "$HERE/node/scenarios.js" "$name" "$2" ;;
        c) timeout "$SCENARIO_TIMEOUT" "$PY" "$HERE/c/drive_cli_mt.py" "$name" "$2" ;;
    esac >"$3.txt" 2>"$3.err"
}

for sc in "${SELECTED[@]}"; do
    [ "$sc" = kazoo-suite ] && continue
    base="$RUN_DIR/out/${sc//\//.}"
    s0=$(date +%s)
    run_side "$sc" "$REF_ADDR" "$base.zookeeper"; ref_rc=$?
    run_side "$sc" "$ZKR_ADDR" "$base.zkr"; zkr_rc=$?
    # an empty transcript proves nothing: the reference side must have recorded steps
    if [ "$ref_rc" -eq 0 ] && [ ! -s "$base.zookeeper.txt" ]; then ref_rc=3; echo "empty transcript" >>"$base.zookeeper.err"; fi
    cmp_rc=1
    if [ "$ref_rc" -eq 0 ]; then
        "$PY" "$INTEROP/lib/compare.py" --format json --scenario "$sc" --known "$INTEROP/known-differences.json" \
            "$base.zookeeper.txt" "$base.zkr.txt" >"$base.diff" 2>&1
        cmp_rc=$?
    fi
    "$PY" "$INTEROP/matrix.py" add-row "$MATRIX_TSV" "$(client_label "${sc%%/*}")" "$sc" "${sc#*/}" \
        "$ref_rc" "$zkr_rc" "$cmp_rc" "$base.diff"
    took="$(( $(date +%s) - s0 ))s"
    if [ "$ref_rc" -ne 0 ]; then
        fail "$sc" "scenario failed against ZooKeeper (exit $ref_rc) [$took]"; tail -n 15 "$base.zookeeper.err" | indent
    elif [ "$zkr_rc" -ne 0 ]; then
        fail "$sc" "client error against zkr (exit $zkr_rc) [$took]"; tail -n 15 "$base.zkr.err" | indent
    elif [ "$cmp_rc" -ne 0 ]; then
        fail "$sc" "transcripts differ (- zookeeper, + zkr) [$took]"; head -n 40 "$base.diff" | indent
    else
        echo "PASS $sc ($(wc -l <"$base.zkr.txt") steps) [$took]"
        PASSED=$((PASSED + 1))
    fi
done

if wants kazoo-suite; then
    s0=$(date +%s)
    # both runs at once: each has its own server, and the suite mostly waits on the network
    SUITE_PIDS=()
    for side in zookeeper zkr; do
        addr=$REF_ADDR
        [ "$side" = zkr ] && addr=$ZKR_ADDR
        (cd "$KSRC" && ZKR_KAZOO_SERVER="$addr" PYTHONPATH="$HERE/kazoo-suite:$KSRC" timeout 600 \
            "$VENV/bin/python" -m pytest -p zkr_kazoo_shim -p no:cacheprovider -q -o addopts= -o log_cli=false \
            --timeout 60 --junitxml="$RUN_DIR/out/kazoo-suite.$side.xml" \
            $("$PY" "$HERE/kazoo-suite/selection.py" --pytest-args) kazoo/tests \
            >"$RUN_DIR/out/kazoo-suite.$side.log" 2>&1) &
        SUITE_PIDS+=($!)
    done
    wait "${SUITE_PIDS[@]}"
    # tests that passed on ZooKeeper but not on zkr get one more run against zkr alone, so that a
    # timing hiccup on a loaded machine is not taken for a difference (a real one fails twice)
    KO="$RUN_DIR/out"
    if [ -f "$KO/kazoo-suite.zookeeper.xml" ] && [ -f "$KO/kazoo-suite.zkr.xml" ]; then
        "$PY" "$HERE/kazoo-suite/selection.py" --regressions "$KO/kazoo-suite.zookeeper.xml" "$KO/kazoo-suite.zkr.xml" \
            >"$KO/kazoo-suite.rerun-ids"
        if [ -s "$KO/kazoo-suite.rerun-ids" ]; then
            say "running $(wc -l <"$KO/kazoo-suite.rerun-ids") kazoo tests again against zkr"
            (cd "$KSRC" && ZKR_KAZOO_SERVER="$ZKR_ADDR" PYTHONPATH="$HERE/kazoo-suite:$KSRC" timeout 300 \
                "$VENV/bin/python" -m pytest -p zkr_kazoo_shim -p no:cacheprovider -q -o addopts= -o log_cli=false \
                --timeout 60 --junitxml="$KO/kazoo-suite.zkr-rerun.xml" $(cat "$KO/kazoo-suite.rerun-ids") \
                >"$KO/kazoo-suite.zkr-rerun.log" 2>&1)
        fi
    fi
    if "$PY" "$HERE/kazoo-suite/selection.py" --compare "$KO/kazoo-suite.zookeeper.xml" \
        "$KO/kazoo-suite.zkr.xml" "$MATRIX_TSV" "$KO/kazoo-suite.zkr-rerun.xml" >"$KO/kazoo-suite.summary" 2>&1; then
        echo "PASS kazoo-suite [$(( $(date +%s) - s0 ))s]"
        indent <"$KO/kazoo-suite.summary"
        PASSED=$((PASSED + 1))
    else
        fail kazoo-suite "zkr fails kazoo tests that pass on ZooKeeper [$(( $(date +%s) - s0 ))s]"
        indent <"$RUN_DIR/out/kazoo-suite.summary"
        say "logs: $RUN_DIR/out/kazoo-suite.{zookeeper,zkr}.log"
    fi
fi

if [ "$FAILED" -gt 0 ]; then
    say "transcripts: $RUN_DIR/out/ ; zkr log tail:"
    tail -n 20 "$ZKR_LOG" | sed "s/\x1b\[[0-9;]*m//g" | indent >&2
    say "failed: ${FAILED_NAMES[*]}"
fi
say "total time $(( $(date +%s) - T0 ))s"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
