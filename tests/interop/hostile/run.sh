#!/usr/bin/env bash
# Hostile-input suite (issue #5): the ACL matrix, run against Debian's ZooKeeper 3.8 and against
# zkr and compared case by case; then each cargo-fuzz target for a few seconds under libFuzzer
# when asked: HOSTILE_FUZZ_SECS=N builds them on stable Rust (libFuzzer C++ runtime, several minutes
# cold) and runs each for N seconds. Default 0: CI runs the same targets through tests/fuzz_smoke.rs.
# The Rust tests of the same issue (tests/hostile_*.rs, tests/fuzz_smoke.rs) run in `cargo test`.
#
#   ZKR_BIN=target/release/zkr bash tests/interop/hostile/run.sh
#
# Ports: a free pair in HOSTILE_PORT_BASE (23000) .. +999, ZooKeeper then zkr. Prints "N passed, M failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
BASE=${HOSTILE_PORT_BASE:-23000}
ZKR_BIN=${ZKR_BIN:-$REPO/target/release/zkr}
FUZZ_SECS=${HOSTILE_FUZZ_SECS:-0}
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/zkr-hostile.XXXXXX)
PASSED=0
FAILED=0
ZK_PID=""
ZKR_PID=""
say() { echo "[hostile] $*" >&2; }
pass() { PASSED=$((PASSED + 1)); echo "PASS $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $1"; }
cleanup() {
    [ -n "$ZKR_PID" ] && kill "$ZKR_PID" 2>/dev/null
    [ -n "$ZK_PID" ] && kill "$ZK_PID" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# ---------------------------------------------------------------- dependencies
missing=""
for p in zookeeper zookeeper-bin netcat-openbsd python3; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    say "installing:$missing"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null ||
        { echo "FAIL cannot install$missing"; echo "0 passed, 1 failed"; exit 1; }
fi
[ -x "$ZKR_BIN" ] || { echo "FAIL no zkr binary at $ZKR_BIN (cargo build --release)"; echo "0 passed, 1 failed"; exit 1; }

# shellcheck source=../lib/servers.sh
. "$HERE/../lib/servers.sh"

# ---------------------------------------------------------------- servers
SUPER_PW="hostile-super-pw"
SUPER_DIGEST="super:$($PY -c "import hashlib,base64,sys;print(base64.b64encode(hashlib.sha1(sys.argv[1].encode()).digest()).decode())" "super:$SUPER_PW")"

# start_servers: ZooKeeper on $ZK_PORT and zkr on $ZKR_PORT, both answering ruok. A start that
# fails is diagnosed and tried again on other free ports (twice), so one taken port or one slow
# JVM start on a loaded machine does not fail the suite; a server that never starts still does.
start_servers() {
    local attempt
    for attempt in 1 2 3; do
        [ -n "$ZKR_PID" ] && { kill "$ZKR_PID" 2>/dev/null; wait "$ZKR_PID" 2>/dev/null; ZKR_PID=""; }
        [ -n "$ZK_PID" ] && { kill "$ZK_PID" 2>/dev/null; wait "$ZK_PID" 2>/dev/null; ZK_PID=""; }
        rm -rf "$WORK/zk" "$WORK/zkr"
        mkdir -p "$WORK/zk/data" "$WORK/zkr"
        local base
        base=$(srv_pick_base "$BASE" 1000 2) || { say "no two free ports in $BASE-$((BASE + 999))"; return 1; }
        ZK_PORT=$base
        ZKR_PORT=$((base + 1))
        cat >"$WORK/zk/zoo.cfg" <<CFG
tickTime=2000
dataDir=$WORK/zk/data
clientPort=$ZK_PORT
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
extendedTypesEnabled=true
CFG
        # zkServer.sh start-foreground keeps the JVM as our child, so its pid is ours to stop.
        SERVER_JVMFLAGS="$ZK_LOGGING_FLAGS -Dzookeeper.DigestAuthenticationProvider.superDigest=$SUPER_DIGEST -XX:+UseSerialGC" \
            /usr/share/zookeeper/bin/zkServer.sh start-foreground "$WORK/zk/zoo.cfg" >"$WORK/zk/out.log" 2>&1 &
        ZK_PID=$!
        echo "4lw.commands.whitelist=*" >"$WORK/zkr/zoo.cfg"
        "$ZKR_BIN" serve --config "$WORK/zkr/zoo.cfg" --bind 127.0.0.1 --port "$ZKR_PORT" --data-dir "$WORK/zkr/data" \
            --super-digest "$SUPER_DIGEST" --max-client-cnxns 0 --admin-enable false >"$WORK/zkr/log" 2>&1 &
        ZKR_PID=$!
        local ok=1
        srv_wait_ruok "$ZK_PORT" "$ZK_PID" 90 || { srv_diagnose zookeeper "$ZK_PORT" "$ZK_PID" "$WORK/zk/out.log"; ok=0; }
        srv_wait_ruok "$ZKR_PORT" "$ZKR_PID" 30 || { srv_diagnose zkr "$ZKR_PORT" "$ZKR_PID" "$WORK/zkr/log"; ok=0; }
        [ "$ok" = 1 ] && return 0
        say "attempt $attempt: a server did not start; trying again on other ports"
    done
    return 1
}

# ---------------------------------------------------------------- ACL matrix
if start_servers; then
    if timeout 300 $PY "$HERE/acl_matrix.py" "127.0.0.1:$ZK_PORT" "$SUPER_PW" >"$WORK/acl-zk.txt" 2>"$WORK/acl-zk.err" &&
        timeout 300 $PY "$HERE/acl_matrix.py" "127.0.0.1:$ZKR_PORT" "$SUPER_PW" >"$WORK/acl-zkr.txt" 2>"$WORK/acl-zkr.err" &&
        $PY "$HERE/compare_acl.py" "$WORK/acl-zk.txt" "$WORK/acl-zkr.txt"; then
        pass "acl-matrix"
    else
        tail -n 5 "$WORK"/acl-*.err
        fail "acl-matrix"
    fi
else
    fail "acl-matrix (a server did not start in 3 attempts; diagnostics above)"
fi
if grep -q "$SUPER_PW" "$WORK/zkr/log"; then fail "super password in zkr's log"; else pass "no-secret-in-log"; fi

# ---------------------------------------------------------------- libFuzzer short runs
if [ "$FUZZ_SECS" != 0 ]; then
    FLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
    FLAGS="$FLAGS -Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
    TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
    say "building the fuzz targets (libFuzzer, $TRIPLE)"
    if (cd "$REPO/fuzz" && RUSTFLAGS="$FLAGS" cargo build --release --locked --bins --target "$TRIPLE" \
        >"$WORK/fuzz-build.log" 2>&1); then
        for t in frames request connect_request replies txn_record tree_ops; do
            mkdir -p "$WORK/corpus-$t"
            if (cd "$WORK" && "$REPO/fuzz/target/$TRIPLE/release/$t" -max_total_time="$FUZZ_SECS" \
                -seed=1 -rss_limit_mb=1024 "$WORK/corpus-$t" "$REPO/fuzz/regressions/$t" >"$WORK/fuzz-$t.log" 2>&1); then
                pass "fuzz/$t ($(grep -o 'Done [0-9]* runs' "$WORK/fuzz-$t.log" | tail -1))"
            else
                tail -n 30 "$WORK/fuzz-$t.log"
                ls "$WORK"/crash-* 2>/dev/null
                fail "fuzz/$t (add the crash input to fuzz/regressions/$t/ and fix it)"
            fi
        done
    else
        tail -n 20 "$WORK/fuzz-build.log"
        fail "fuzz targets do not build"
    fi
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
