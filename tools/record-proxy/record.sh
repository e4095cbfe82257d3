#!/usr/bin/env bash
# Records the ZooKeeper protocol fixtures in protocol-fixtures/.
#
#   tools/record-proxy/record.sh                 # all scenarios, replaces protocol-fixtures/*.txt
#   tools/record-proxy/record.sh create2 multi   # only these scenarios (other files untouched)
#
# For every scenario: start a fresh throwaway ZooKeeper 3.8 (own temp dir and
# zoo.cfg, empty data dir), run the scenario's client through the recording
# proxy, stop ZooKeeper.  Fixtures are first written to a temp dir and only
# copied into protocol-fixtures/ when every scenario succeeded.
#
# Ports (127.0.0.1 only): ZooKeeper $ZKR_REC_PORT (default 23181), proxy +1,
# proxy control port +2.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$ROOT/protocol-fixtures"
ZK_PORT="${ZKR_REC_PORT:-23181}"
PROXY_PORT=$((ZK_PORT + 1))
CTL_PORT=$((ZK_PORT + 2))
ZKSERVER=/usr/share/zookeeper/bin/zkServer.sh
J=/usr/share/java
CP="$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar:$J/netty-all.jar:$J/commons-io.jar"

WORK="$(mktemp -d /tmp/zkr-record.XXXXXX)"
ZKDIR=""
PROXY_PID=""

log() { echo "[record] $*" >&2; }

zk_stop() {
    if [ -n "$ZKDIR" ] && [ -f "$ZKDIR/pid" ]; then
        ZOOCFGDIR="$ZKDIR" ZOO_LOG_DIR="$ZKDIR" ZOOPIDFILE="$ZKDIR/pid" \
            "$ZKSERVER" stop "$ZKDIR/zoo.cfg" >/dev/null 2>&1 || true
    fi
    ZKDIR=""
}

cleanup() {
    zk_stop
    if [ -n "$PROXY_PID" ]; then kill "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; fi
    if [ "${KEEP_WORK:-0}" = 1 ]; then log "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

port_free() { ! (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$ZK_PORT" "$PROXY_PORT" "$CTL_PORT"; do
    port_free "$p" || { log "port $p is in use; set ZKR_REC_PORT to another base"; exit 1; }
done

zk_start() {
    ZKDIR="$WORK/zk-$1"
    mkdir -p "$ZKDIR/data"
    cat > "$ZKDIR/zoo.cfg" <<EOF
tickTime=2000
dataDir=$ZKDIR/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
extendedTypesEnabled=true
4lw.commands.whitelist=*
maxClientCnxns=0
EOF
    ZOOCFGDIR="$ZKDIR" ZOO_LOG_DIR="$ZKDIR" ZOOPIDFILE="$ZKDIR/pid" \
        "$ZKSERVER" start "$ZKDIR/zoo.cfg" >"$ZKDIR/start.log" 2>&1 || { cat "$ZKDIR/start.log" >&2; return 1; }
    for _ in $(seq 100); do
        # timeout: a 4lw connection accepted while the server is still starting
        # can stay unanswered, and nc -q1 then waits forever
        if [ "$(echo ruok | timeout 2 nc -q1 127.0.0.1 "$ZK_PORT" 2>/dev/null)" = imok ]; then return 0; fi
        sleep 0.1
    done
    log "ZooKeeper did not come up"; return 1
}

log "compiling Scenarios.java"
mkdir -p "$WORK/classes" "$WORK/out"
javac -nowarn -cp "$CP" -d "$WORK/classes" "$HERE/Scenarios.java"
RUNCP="$CP:$WORK/classes"

python3 "$HERE/record_proxy.py" --listen "$PROXY_PORT" --upstream "$ZK_PORT" \
    --control "$CTL_PORT" --out "$WORK/out" 2>"$WORK/proxy.log" &
PROXY_PID=$!
for _ in $(seq 50); do port_free "$CTL_PORT" || break; sleep 0.1; done

JAVA_SCENARIOS="$(java -cp "$RUNCP" Scenarios --list)"
RAW_SCENARIOS="$(python3 "$HERE/raw_client.py" --list)"
if [ $# -gt 0 ]; then WANT=" $* "; else WANT=""; fi

ran=0
for kind in java raw; do
    if [ $kind = java ]; then list="$JAVA_SCENARIOS"; else list="$RAW_SCENARIOS"; fi
    for name in $list; do
        if [ -n "$WANT" ] && [[ "$WANT" != *" $name "* ]]; then continue; fi
        log "scenario $name"
        zk_start "$name"
        if [ $kind = java ]; then
            timeout 120 java -cp "$RUNCP" Scenarios "$PROXY_PORT" "$ZK_PORT" "$CTL_PORT" "$name" 2>"$WORK/$name.log" \
                || { cat "$WORK/$name.log" >&2; log "scenario $name FAILED"; exit 1; }
        else
            timeout 120 python3 "$HERE/raw_client.py" "$PROXY_PORT" "$CTL_PORT" "$name" 2>"$WORK/$name.log" \
                || { cat "$WORK/$name.log" >&2; log "scenario $name FAILED"; exit 1; }
        fi
        zk_stop
        ran=$((ran + 1))
    done
done
[ "$ran" -gt 0 ] || { log "no such scenario: $*"; exit 1; }

mkdir -p "$OUT"
if [ -z "$WANT" ]; then rm -f "$OUT"/*.txt; else
    for name in "$@"; do rm -f "$OUT/$name.txt" "$OUT/$name"-[0-9]*.txt; done
fi
cp "$WORK"/out/*.txt "$OUT"/
log "wrote $(ls "$WORK"/out/*.txt | wc -l) fixture files to $OUT"
