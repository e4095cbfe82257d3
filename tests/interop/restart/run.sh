#!/usr/bin/env bash
# A Java-client session with an ephemeral node survives a zkr restart (SIGTERM, then SIGKILL)
# with no SessionExpired and the node still there. Needs ZKR_BIN; Debian's libzookeeper-java.
# Prints "N passed, N failed"; exit 1 on failure.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ZKR_BIN=${ZKR_BIN:?set ZKR_BIN to the zkr binary}
WORK=$(mktemp -d)
CP=$(printf '/usr/share/java/%s.jar:' zookeeper zookeeper-jute slf4j-api slf4j-nop netty-all commons-io)
javac -d "$WORK" -cp "$CP" "$HERE/RestartSurvivor.java" || exit 2
PORT=$((29000 + RANDOM % 900))
ZKR_PID=""
start_zkr() {
    "$ZKR_BIN" serve --admin-enable false --bind 127.0.0.1 --port "$PORT" --data-dir "$WORK/data" >>"$WORK/zkr.log" 2>&1 &
    ZKR_PID=$!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "zkr did not start"; tail -20 "$WORK/zkr.log"; exit 2
}
cleanup() { [ -n "$ZKR_PID" ] && kill -9 "$ZKR_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

passed=0; failed=0
for how in TERM KILL; do
    rm -rf "$WORK/data"
    start_zkr
    coproc JAVA { java -cp "$WORK:$CP" RestartSurvivor "127.0.0.1:$PORT" 2>"$WORK/java.err"; }
    read -r -t 30 line <&"${JAVA[0]}" || line=""
    if [ "$line" != READY ]; then
        echo "FAIL restart/$how: client not ready ($line)"; cat "$WORK/java.err"; failed=$((failed+1)); continue
    fi
    kill -"$how" "$ZKR_PID"; wait "$ZKR_PID" 2>/dev/null
    sleep 1
    start_zkr
    echo RESTARTED >&"${JAVA[1]}"
    read -r -t 60 result <&"${JAVA[0]}" || result="FAIL no answer"
    wait "$JAVA_PID" 2>/dev/null
    if [[ "$result" == OK* ]]; then
        echo "PASS restart/$how: $result"; passed=$((passed+1))
    else
        echo "FAIL restart/$how: $result"; tail -5 "$WORK/java.err"; tail -20 "$WORK/zkr.log"; failed=$((failed+1))
    fi
    kill -9 "$ZKR_PID" 2>/dev/null; wait "$ZKR_PID" 2>/dev/null; ZKR_PID=""
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
