#!/usr/bin/env bash
# Operations suite: four-letter words, the AdminServer, /metrics, JSON logs and SIGTERM.
#  - check.py: zkr's 4lw answers and AdminServer JSON compared with Debian's ZooKeeper 3.8
#    (run with its Jetty AdminServer) under the same workload; /metrics through
#    prometheus_client's parser; zktop's parser reading `stat`; counter resets.
#  - flw/: go-zookeeper's FLWRuok / FLWSrvr / FLWCons parsers against zkr.
#  - collectd's zookeeper plugin (a C reader of `mntr`) against zkr.
#  - the default whitelist, an AdminServer port already taken, JSON logs with 0x session ids,
#    SIGTERM: exit 0, log flushed, port closed.
# Needs ZKR_BIN. Installs what it needs (Debian packages, Go modules). Ports: OPS_PORT_BASE
# (default 30100) .. +99. Prints "N passed, M failed"; exit 1 on failure.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ZKR_BIN=${ZKR_BIN:?set ZKR_BIN to the zkr binary}
BASE=${OPS_PORT_BASE:-30100}
PY=/usr/bin/python3
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
say() { echo "[ops] $*" >&2; }

# ---------------------------------------------------------------- dependencies
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
PKGS="zookeeper libzookeeper-java python3-kazoo python3-prometheus-client zktop collectd-core netcat-openbsd"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
if [ -n "$missing" ]; then
    say "installing:$missing"
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing; } \
        >"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log"; echo "0 passed, 1 failed"; exit 1; }
fi

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: ${2:-}"; failed=$((failed + 1)); }

wait_port() { # port [pid]
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null && return 1
        sleep 0.1
    done
    return 1
}

# ---------------------------------------------------------------- servers
ZK_PORT=$BASE; ZK_ADMIN=$((BASE + 1)); ZKR_PORT=$((BASE + 2)); ZKR_ADMIN=$((BASE + 3))
mkdir -p "$WORK/zk" "$WORK/zkr"
cat >"$WORK/zk/zoo.cfg" <<EOF
tickTime=2000
dataDir=$WORK/zk/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=$ZK_ADMIN
EOF
# ZooKeeper with its Jetty AdminServer: Debian's zkServer.sh classpath lacks Jetty, so start
# the main class directly with the jars libzookeeper-java depends on.
CP=""
for j in zookeeper zookeeper-jute slf4j-api slf4j-nop jetty9-util jetty9-http jetty9-io jetty9-security \
         jetty9-server jetty9-servlet servlet-api jackson-core jackson-databind jackson-annotations \
         netty-all netty-buffer netty-codec netty-common netty-handler netty-resolver netty-transport \
         netty-transport-native-unix-common commons-io commons-cli; do
    [ -f "/usr/share/java/$j.jar" ] && CP="$CP${CP:+:}/usr/share/java/$j.jar"
done
(cd "$WORK/zk" && exec java -Xmx256m -XX:+UseSerialGC -cp "$CP" org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg \
    >"$WORK/zk/out.log" 2>&1) &
ZK_PID=$!; PIDS+=("$ZK_PID")

sed -e "s/^clientPort=.*/clientPort=$ZKR_PORT/" -e "s/^admin.serverPort=.*/admin.serverPort=$ZKR_ADMIN/" \
    -e "s#^dataDir=.*#dataDir=$WORK/zkr/data#" "$WORK/zk/zoo.cfg" >"$WORK/zkr/zoo.cfg"
RUST_LOG=zkr=debug "$ZKR_BIN" serve --log-format json --config "$WORK/zkr/zoo.cfg" >"$WORK/zkr/stdout" 2>"$WORK/zkr/log.json" &
ZKR_PID=$!; PIDS+=("$ZKR_PID")

if ! wait_port "$ZKR_PORT" "$ZKR_PID"; then
    cat "$WORK/zkr/log.json"; echo "0 passed, 1 failed"; exit 1
fi
for _ in $(seq 300); do
    [ "$(echo ruok | nc -q1 127.0.0.1 "$ZK_PORT" 2>/dev/null)" = imok ] && wait_port "$ZK_ADMIN" && break
    sleep 0.2
done
wait_port "$ZK_ADMIN" || { tail -30 "$WORK/zk/out.log"; echo "0 passed, 1 failed"; exit 1; }

# ---------------------------------------------------------------- side by side + value checks
"$PY" "$HERE/check.py" "127.0.0.1:$ZK_PORT" "$ZK_ADMIN" "127.0.0.1:$ZKR_PORT" "$ZKR_ADMIN" >"$WORK/check.out" 2>&1
cat "$WORK/check.out"
passed=$((passed + $(grep -c '^PASS' "$WORK/check.out")))
failed=$((failed + $(grep -c '^FAIL' "$WORK/check.out")))
grep -q '^PASS zktop/node count' "$WORK/check.out" || { fail "check.py ran to the end" "$(tail -5 "$WORK/check.out")"; }
kill "$ZK_PID" 2>/dev/null; wait "$ZK_PID" 2>/dev/null

# ---------------------------------------------------------------- go-zookeeper's parsers
if (cd "$HERE/flw" && go build -o "$WORK/flw" . ) >"$WORK/go.log" 2>&1; then
    "$WORK/flw" "127.0.0.1:$ZKR_PORT" >"$WORK/flw.out" 2>&1
    cat "$WORK/flw.out"
    passed=$((passed + $(grep -c '^PASS' "$WORK/flw.out")))
    failed=$((failed + $(grep -c '^FAIL' "$WORK/flw.out")))
    grep -q '^PASS go/FLWCons finds the session' "$WORK/flw.out" || fail "go program ran to the end"
else
    fail "go-zookeeper program builds" "$(tail -5 "$WORK/go.log")"
fi

# ---------------------------------------------------------------- collectd reads mntr
mkdir -p "$WORK/collectd"
cat >"$WORK/collectd/collectd.conf" <<EOF
Interval 1
BaseDir "$WORK/collectd"
PIDFile "$WORK/collectd/pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
Hostname "zkr"
FQDNLookup false
LoadPlugin zookeeper
LoadPlugin csv
<Plugin zookeeper>
  Host "127.0.0.1"
  Port "$ZKR_PORT"
</Plugin>
<Plugin csv>
  DataDir "$WORK/collectd/csv"
</Plugin>
EOF
NODES=$(echo mntr | nc -q1 127.0.0.1 "$ZKR_PORT" | awk -F'\t' '$1=="zk_znode_count"{print $2}')
timeout 4 collectd -f -C "$WORK/collectd/collectd.conf" >"$WORK/collectd/log" 2>&1
csv() { tail -n1 "$WORK"/collectd/csv/zkr/zookeeper/$1-* 2>/dev/null | cut -d, -f2 | cut -d. -f1; }
if [ -n "$NODES" ] && [ "$(csv gauge-znode)" = "$NODES" ]; then pass "collectd/zookeeper plugin reads zk_znode_count ($NODES)"
else fail "collectd/zookeeper plugin reads zk_znode_count" "mntr=$NODES collectd=$(csv gauge-znode); $(cat "$WORK/collectd/log")"; fi
if [ "$(csv packets-received)" -gt 0 ] 2>/dev/null && [ "$(csv gauge-ephemerals)" = 0 ] && [ -n "$(csv latency-max)" ]; then
    pass "collectd/zookeeper plugin reads packets, ephemerals, latency"
else fail "collectd/zookeeper plugin reads packets, ephemerals, latency" "$(ls "$WORK"/collectd/csv/zkr/zookeeper/ 2>&1)"; fi

# ---------------------------------------------------------------- default whitelist, taken admin port
D2=$WORK/zkr2; P2=$((BASE + 4))
# the admin port of the first zkr is taken: zkr logs it and serves anyway, as ZooKeeper does
"$ZKR_BIN" serve --bind 127.0.0.1 --port "$P2" --admin-port "$ZKR_ADMIN" --data-dir "$D2" 2>"$WORK/zkr2.log" &
Z2=$!; PIDS+=("$Z2")
if wait_port "$P2" "$Z2"; then
    a=$(echo stat | nc -q1 127.0.0.1 "$P2"); b=$(echo srvr | nc -q1 127.0.0.1 "$P2" | head -1)
    [ "$a" = "stat is not executed because it is not in the whitelist." ] && [[ "$b" == "Zookeeper version: "* ]] \
        && pass "whitelist/default is srvr only" || fail "whitelist/default is srvr only" "$a / $b"
    grep -q "cannot start the AdminServer" "$WORK/zkr2.log" && pass "admin/taken port is logged, clients still served" \
        || fail "admin/taken port is logged" "$(cat "$WORK/zkr2.log")"
else
    fail "second zkr starts with its admin port taken" "$(cat "$WORK/zkr2.log")"
fi
kill -9 "$Z2" 2>/dev/null; wait "$Z2" 2>/dev/null

# ---------------------------------------------------------------- JSON logs, SIGTERM
# A session that is created, re-attached with a wrong password and closed: session log lines.
"$PY" - "127.0.0.1:$ZKR_PORT" <<'EOF' >"$WORK/sess.out" 2>&1
import sys
from kazoo.client import KazooClient
from kazoo.exceptions import SessionExpiredError
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
sid, _ = zk.client_id
bad = KazooClient(hosts=sys.argv[1], client_id=(sid, b"x" * 16), connection_retry={"max_tries": 0})
try:
    bad.start(timeout=5)
except Exception:
    pass
bad.stop()
zk.stop()
print("ok")
EOF
kill -TERM "$ZKR_PID"
for _ in $(seq 300); do kill -0 "$ZKR_PID" 2>/dev/null || break; sleep 0.1; done
wait "$ZKR_PID"; rc=$?
[ "$rc" = 0 ] && pass "sigterm/exit code 0" || fail "sigterm/exit code 0" "rc=$rc"
(exec 3<>"/dev/tcp/127.0.0.1/$ZKR_PORT") 2>/dev/null && fail "sigterm/client port closed" || pass "sigterm/client port closed"
(exec 3<>"/dev/tcp/127.0.0.1/$ZKR_ADMIN") 2>/dev/null && fail "sigterm/admin port closed" || pass "sigterm/admin port closed"
"$PY" - "$WORK/zkr/log.json" >"$WORK/logs.out" 2>&1 <<'EOF'
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()
bad = [l for l in lines if not l.startswith("{")]
recs = [json.loads(l) for l in lines if l.startswith("{")]
def res(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + str(detail)[:2000]))
res("logs/every line is a JSON object", not bad and recs, bad[:3])
res("logs/level, target, message, timestamp", all({"level", "target", "message", "timestamp"} <= r.keys() for r in recs))
sess = [r for r in recs if "session" in r]
msgs = {r["message"] for r in sess}
res("logs/session lines present (created, re-attach refused, closed)",
    {"session created", "session closed"} <= msgs and any(m.startswith("re-attach refused") for m in msgs), msgs)
res("logs/session ids in 0x hex", sess and all(re.fullmatch(r"0x[0-9a-f]+", str(r["session"])) for r in sess),
    [r for r in sess if not re.fullmatch(r"0x[0-9a-f]+", str(r["session"]))])
res("logs/no decimal session id in any message",
    not [r for r in recs if re.search(r"session[^0-9a-z]*[0-9]{6,}", r.get("message", ""))])
res("logs/flushed up to the last line at SIGTERM", recs and recs[-1]["message"] == "stopped", recs[-1:])
EOF
cat "$WORK/logs.out"
passed=$((passed + $(grep -c '^PASS' "$WORK/logs.out")))
failed=$((failed + $(grep -c '^FAIL' "$WORK/logs.out")))
grep -q '^PASS logs/flushed' "$WORK/logs.out" || { [ "$failed" -gt 0 ] || fail "log checks ran" "$(tail -3 "$WORK/logs.out")"; }

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
