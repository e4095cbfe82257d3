#!/usr/bin/env bash
# zkr as an observer of a live ZooKeeper ensemble, against ZooKeeper's own observer of the same
# ensemble: three ZooKeeper voters, a ZooKeeper observer (server.8) and zkr (server.9,
# zkr.ensembleProtocol=zab), all from one zoo.cfg's server lines. The same kazoo scenario
# (kazoo_observer.py: a Dubbo-shaped registry with providers on a voter and on the observer, a
# consumer's watch on the observer, errors, transactions, sync, a session's close) runs through
# each observer, and the two transcripts must be equal line by line. Once with Debian's
# ZooKeeper 3.8, then with ZooKeeper 3.9.5, 3.7.2, 3.6.4 and 3.5.10 from Maven Central
# (zk39/pom.xml, -Dzookeeper.version).
#
#   ZKR_BIN=target/release/zkr bash tests/interop/zab/run.sh
#
# Ports: ZAB_PORT_BASE (31400) .. +499. Work and logs in tests/interop/.work/zab. Writes matrix
# rows to .work/matrix/zab.tsv. Prints one PASS/FAIL line per version and "N passed, M failed".
# Exit 0 passed, 1 failed, 2 setup problem.

set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
REPO="$(cd "$INTEROP/../.." && pwd)"
# shellcheck source=../lib/servers.sh
. "$HERE/../lib/servers.sh"
WORK="$INTEROP/.work/zab"
PY=/usr/bin/python3
PORT_BASE=${ZAB_PORT_BASE:-31400}
ZKSERVER=/usr/share/zookeeper/bin/zkServer.sh
MATRIX_TSV="$INTEROP/.work/matrix/zab.tsv"

say() { echo "[zab] $*" >&2; }
die() { say "ERROR: $*"; exit 2; }

if [ -z "${ZKR_BIN:-}" ]; then
    for c in "$REPO/target/release/zkr" "$REPO/target/debug/zkr"; do [ -x "$c" ] && { ZKR_BIN="$c"; break; }; done
fi
[ -x "${ZKR_BIN:-}" ] || die "set ZKR_BIN=path/to/zkr"
[ -x "$ZKSERVER" ] || die "$ZKSERVER is missing: apt-get install zookeeper zookeeper-bin"
"$PY" -c "import kazoo" 2>/dev/null || die "kazoo is missing: apt-get install python3-kazoo"
rm -rf "$WORK"
mkdir -p "$WORK" "$(dirname "$MATRIX_TSV")"
rm -f "$MATRIX_TSV"

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
}
trap cleanup EXIT

mode_of() { echo srvr | timeout 3 nc -q1 127.0.0.1 "$1" 2>/dev/null | sed -n 's/^Mode: //p'; }

wait_mode() { # PORT MODE SECONDS
    local deadline=$(($(date +%s) + $3))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        [ "$(mode_of "$1")" = "$2" ] && return 0
        sleep 0.3
    done
    return 1
}

PASSED=0
FAILED=0

# side VERSION LABEL CLASSPATH(empty: Debian's zkServer.sh) BASE
side() {
    local version=$1 label=$2 cp=$3 base=$4 dir="$WORK/$1" servers="" i
    mkdir -p "$dir"
    for i in 1 2 3; do
        servers+="server.$i=127.0.0.1:$((base + 10 + i)):$((base + 20 + i));127.0.0.1:$((base + i))"$'\n'
    done
    servers+="server.8=127.0.0.1:$((base + 18)):$((base + 28)):observer;127.0.0.1:$((base + 8))"$'\n'
    servers+="server.9=127.0.0.1:$((base + 19)):$((base + 29)):observer;127.0.0.1:$((base + 9))"$'\n'
    local common="tickTime=500"$'\n'"initLimit=10"$'\n'"syncLimit=5"$'\n'"admin.enableServer=false"$'\n'"4lw.commands.whitelist=*"$'\n'
    for i in 1 2 3 8; do
        local d="$dir/m$i"
        mkdir -p "$d"
        echo "$i" >"$d/myid"
        { printf '%s' "$common"; echo "dataDir=$d"; [ "$i" = 8 ] && echo "peerType=observer"; printf '%s' "$servers"; } >"$d/zoo.cfg"
        if [ -z "$cp" ]; then
            SERVER_JVMFLAGS="$ZK_LOGGING_FLAGS" ZOOCFGDIR="$d" ZOO_LOG_DIR="$d" ZOOPIDFILE="$d/zk.pid" \
                "$ZKSERVER" start-foreground "$d/zoo.cfg" >"$d/zk.log" 2>&1 &
        else
            java -Xmx256m -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >"$d/zk.log" 2>&1 &
        fi
        PIDS+=($!)
    done
    local z="$dir/zkr"
    mkdir -p "$z/data"
    echo 9 >"$z/data/myid"
    { printf '%s' "$common"; echo "dataDir=$z/data"; echo "peerType=observer"; echo "zkr.ensembleProtocol=zab"; printf '%s' "$servers"; } >"$z/zoo.cfg"
    "$ZKR_BIN" serve --config "$z/zoo.cfg" >"$z/zkr.log" 2>&1 &
    PIDS+=($!)
    if ! wait_mode $((base + 8)) observer 90 || ! wait_mode $((base + 9)) observer 60; then
        say "FAIL $version: the observers did not sync (ZooKeeper's: $(mode_of $((base + 8)))), zkr's: $(mode_of $((base + 9))))"
        tail -n 20 "$dir/m8/zk.log" "$z/zkr.log" >&2
        FAILED=$((FAILED + 1))
        return
    fi
    local voter="127.0.0.1:$((base + 1))"
    "$PY" "$HERE/kazoo_observer.py" "127.0.0.1:$((base + 8))" "$voter" >"$dir/zookeeper.txt" 2>"$dir/zookeeper.err"
    local ref_rc=$?
    "$PY" "$HERE/kazoo_observer.py" "127.0.0.1:$((base + 9))" "$voter" >"$dir/zkr.txt" 2>"$dir/zkr.err"
    local zkr_rc=$?
    local client="kazoo on an observer of a ZooKeeper $label ensemble (ZooKeeper's observer vs zkr's)"
    "$PY" - "$dir/zookeeper.txt" "$dir/zkr.txt" "$client" "$MATRIX_TSV" <<'PY'
import sys
ref, ours, client, tsv = sys.argv[1:5]
def steps(p):
    out = {}
    for line in open(p, encoding="utf-8"):
        name, _, result = line.rstrip("\n").partition("\t")
        out[name] = result
    return out
a, b = steps(ref), steps(ours)
with open(tsv, "a", encoding="utf-8") as f:
    for name in list(a) + [n for n in b if n not in a]:
        ra, rb = a.get(name, "not reached"), b.get(name, "not reached")
        f.write("\t".join([client, name, ra, rb, "" if ra == rb else "differs"]) + "\n")
PY
    if [ $ref_rc -ne 0 ]; then
        say "FAIL $version: the scenario broke on ZooKeeper's observer"; cat "$dir/zookeeper.txt" "$dir/zookeeper.err" >&2
        FAILED=$((FAILED + 1))
    elif [ $zkr_rc -ne 0 ] || ! diff -u "$dir/zookeeper.txt" "$dir/zkr.txt" >"$dir/diff.txt"; then
        say "FAIL $version: zkr's observer differs from ZooKeeper's"; cat "$dir/diff.txt" "$dir/zkr.err" >&2
        FAILED=$((FAILED + 1))
    else
        echo "PASS zab/$version: kazoo through zkr's observer = through ZooKeeper's ($(wc -l <"$dir/zkr.txt") steps)"
        PASSED=$((PASSED + 1))
    fi
    cleanup
    PIDS=()
}

side 3.8 "3.8 (Debian)" "" "$PORT_BASE"
n=1
for v in 3.9.5 3.7.2 3.6.4 3.5.10; do
    cpfile="$WORK/zookeeper-$v.classpath"
    if mvn -B -q -f "$HERE/zk39/pom.xml" dependency:build-classpath -Dzookeeper.version="$v" \
        -Dmdep.outputFile="$cpfile" >"$WORK/mvn-$v.log" 2>&1; then
        side "${v%.*}" "$v (Maven Central)" "$(cat "$cpfile")" $((PORT_BASE + 100 * n))
    else
        tail -n 20 "$WORK/mvn-$v.log" >&2
        say "FAIL ${v%.*}: Maven could not resolve ZooKeeper $v"
        FAILED=$((FAILED + 1))
    fi
    n=$((n + 1))
done
echo "zab: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
