#!/usr/bin/env bash
# zoo.cfg keys as docs/config.md describes them: Debian's shipped zoo.cfg, and a zoo.cfg holding the
# keys of ZooKeeper 3.8's admin guide with their default values (every documented key but the
# ensemble, TLS and metrics ones, which need peers, stores or ports), start both Debian's ZooKeeper
# and zkr; a client works on both; and the keys zkr logs as unused are exactly the keys of that
# file that docs/config.md calls "ignored". Writes matrix rows to .work/matrix/config.tsv and
# prints "N passed, M failed".
#
#   ZKR_BIN=target/release/zkr bash tests/interop/config/run.sh
# Ports: CONFIG_PORT_BASE (32100) .. +99.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
REPO="$(cd "$INTEROP/../.." && pwd)"
# shellcheck source=../lib/servers.sh
. "$INTEROP/lib/servers.sh"
PY=/usr/bin/python3
if [ -z "${ZKR_BIN:-}" ]; then
    for c in "$REPO/target/release/zkr" "$REPO/target/debug/zkr"; do [ -x "$c" ] && { ZKR_BIN="$c"; break; }; done
fi
[ -n "${ZKR_BIN:-}" ] && [ -x "$ZKR_BIN" ] || { echo "set ZKR_BIN to the zkr binary" >&2; exit 2; }
WORK=$(mktemp -d)
MATRIX_TSV="$INTEROP/.work/matrix/config.tsv"
mkdir -p "$(dirname "$MATRIX_TSV")"
: >"$MATRIX_TSV"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    sleep 0.3
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
passed=0; failed=0
pass() { echo "PASS config/$1"; passed=$((passed + 1)); }
fail() { echo "FAIL config/$1"; failed=$((failed + 1)); }
row() { printf '%s\t%s\t%s\t%s\t\n' "zoo.cfg (docs/config.md)" "$1" "$2" "$3" >>"$MATRIX_TSV"; }
for p in zookeeper zookeeper-bin python3-kazoo netcat-openbsd; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || {
        SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
        { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq zookeeper zookeeper-bin python3-kazoo netcat-openbsd; } >"$WORK/apt.log" 2>&1 || { tail "$WORK/apt.log"; exit 2; }
        break
    }
done
BASE=$(srv_pick_base "${CONFIG_PORT_BASE:-32100}" 100 4) || { echo "no free ports" >&2; exit 2; }

# start KIND NAME CFG-BODY: writes DIR/zoo.cfg (dataDir and clientPort set here), starts the
# server, waits until it answers srvr; sets SERVER_PID and PORT.
start() {
    local kind=$1 name=$2 body=$3 dir="$WORK/$2"
    mkdir -p "$dir/data"
    PORT=$BASE; [ "$kind" = zkr ] && PORT=$((BASE + 1))
    { printf '%s\n' "$body" | grep -v -E '^(dataDir|clientPort)='; echo "dataDir=$dir/data"; echo "clientPort=$PORT"; } >"$dir/zoo.cfg"
    if [ "$kind" = zk ]; then
        ZOOCFGDIR="$dir" ZOO_LOG_DIR="$dir" ZOOPIDFILE="$dir/pid" \
            SERVER_JVMFLAGS="$ZK_LOGGING_FLAGS -Dzookeeper.log.dir=$dir -Xmx256m" \
            /usr/share/zookeeper/bin/zkServer.sh start-foreground "$dir/zoo.cfg" >"$dir/log" 2>&1 </dev/null &
    else
        "$ZKR_BIN" serve --config "$dir/zoo.cfg" --admin-enable false >"$dir/log" 2>&1 </dev/null &
    fi
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    # srvr is the one four-letter word both answer with the default whitelist
    for _ in $(seq 300); do
        echo srvr | timeout 5 nc -q1 127.0.0.1 "$PORT" 2>/dev/null | grep -q '^Zookeeper version' && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.3
    done
    srv_diagnose "$kind" "$PORT" "$SERVER_PID" "$dir/log"
    return 1
}
stop() { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; }
works() { # port: a kazoo create/get round trip
    timeout 30 "$PY" - "127.0.0.1:$1" <<'PY'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=15)
zk.create("/cfg", b"ok")
assert zk.get("/cfg")[0] == b"ok"
zk.stop()
PY
}

# the file Debian ships, and one with every documented key at ZooKeeper's default
DEBIAN_CFG=$(grep -v '^#' /etc/zookeeper/conf/zoo.cfg)
ALL_CFG=$("$PY" - "$REPO/docs/config.md" "$WORK/ignored.txt" <<'PY'
import re, sys
# ZooKeeper's defaults (zookeeperAdmin.md) for the keys that can sit in a standalone zoo.cfg
# without peers, stores or ports; "4lw" so that ruok answers.
defaults = {
    "tickTime": "2000", "minSessionTimeout": "4000", "maxSessionTimeout": "40000", "maxClientCnxns": "60",
    "maxCnxns": "0", "nio.sessionlessCnxnTimeout": "10000", "globalOutstandingLimit": "1000",
    "tcpKeepAlive": "false", "clientTcpKeepAlive": "false", "maxResponseCacheSize": "400",
    "maxGetChildrenResponseCacheSize": "400", "localSessionsEnabled": "false",
    "localSessionsUpgradingEnabled": "false", "extendedTypesEnabled": "true", "emulate353TTLNodes": "false",
    "4lw.commands.whitelist": "*", "enforceQuota": "false", "jute.maxbuffer": "1048575",
    "requestThrottleLimit": "0", "requestThrottleStallTime": "100", "requestThrottleDropStale": "true",
    "requestStaleLatencyCheck": "false", "requestStaleConnectionCheck": "true", "throttledOpWaitTime": "0",
    "advancedFlowControlEnabled": "false", "enableEagerACLCheck": "false", "skipACL": "no",
    "watchManagerName": "org.apache.zookeeper.server.watch.WatchManager", "watcherCleanThreadsNum": "2",
    "watcherCleanThreshold": "1000", "watcherCleanIntervalInSeconds": "600", "maxInProcessingDeadWatchers": "-1",
    "bitHashCacheSize": "10", "znode.container.maxPerMinute": "10000", "snapCount": "100000",
    "snapSizeLimitInKb": "4194304", "preAllocSize": "65536", "autopurge.snapRetainCount": "3",
    "autopurge.purgeInterval": "0", "forceSync": "yes", "syncEnabled": "true", "fsync.warningthresholdms": "1000",
    "flushDelay": "0", "maxBatchSize": "1000", "digest.enabled": "true", "snapshot.trust.empty": "false",
    "audit.enable": "false", "largeRequestMaxBytes": "104857600", "largeRequestThreshold": "-1",
    "DigestAuthenticationProvider.superDigest": "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
    "X509AuthenticationProvider.superUser": "CN=nobody", "superUser": "nobody",
    "sessionRequireClientSASLAuth": "false", "enforce.auth.enabled": "false",
    "admin.enableServer": "false", "initLimit": "10", "syncLimit": "5", "standaloneEnabled": "true",
    "reconfigEnabled": "false",
}
doc = open(sys.argv[1], encoding="utf-8").read()
verdict = {}
for line in doc.splitlines():
    if not line.startswith("| `"):
        continue
    cells = line.split(" | ")
    for key in re.findall(r"`([^`]+)`", cells[0]):
        verdict.setdefault(key, cells[-1].strip(" |").split(" ")[0].rstrip(":(").lower())
missing = [k for k in defaults if k not in verdict]
if missing:
    sys.exit("keys not in docs/config.md: %s" % missing)
with open(sys.argv[2], "w") as f:
    for k in sorted(defaults):
        if verdict[k].startswith("ignored"):
            f.write(k + "\n")
for k, v in defaults.items():
    print("%s=%s" % (k, v))
PY
) || { fail "the documented keys: $ALL_CFG"; echo "0 passed, 1 failed"; exit 1; }

for cfg in debian all; do
    body=$DEBIAN_CFG what="Debian's shipped /etc/zookeeper/conf/zoo.cfg"
    [ $cfg = all ] && body=$ALL_CFG what="$(wc -l <<<"$ALL_CFG") keys of ZooKeeper's admin guide at their defaults"
    res=()
    for kind in zk zkr; do
        if start $kind "$kind-$cfg" "$body" && works "$PORT" >/dev/null 2>"$WORK/$kind-$cfg.err"; then
            res+=(ok)
        else
            res+=(fails); tail -n 5 "$WORK/$kind-$cfg.err" "$WORK/$kind-$cfg/log" 2>/dev/null
        fi
        stop
    done
    if [ "${res[0]}" = ok ] && [ "${res[1]}" = ok ]; then
        pass "$cfg: $what: both servers start and serve"
    else
        fail "$cfg: $what: ZooKeeper ${res[0]}, zkr ${res[1]}"
    fi
    row "$what: starts and serves" "${res[0]}" "${res[1]}"
done

# the keys zkr logged as unused = those docs/config.md calls ignored
sed -n 's/.*zoo.cfg key not used by zkr, ignored.*key=\([^ ]*\).*/\1/p' "$WORK/zkr-all/log" | sed 's/\x1b\[[0-9;]*m//g' | sort -u >"$WORK/logged.txt"
if [ -s "$WORK/ignored.txt" ] && diff -u "$WORK/ignored.txt" "$WORK/logged.txt" >"$WORK/ignored.diff"; then
    pass "ignored keys: zkr logs exactly the $(wc -l <"$WORK/ignored.txt") keys docs/config.md calls ignored"
    row "keys logged as unused = keys docs/config.md calls ignored" ok ok
else
    fail "ignored keys: zkr's log and docs/config.md disagree (- doc, + log)"
    cat "$WORK/ignored.diff"
    row "keys logged as unused = keys docs/config.md calls ignored" ok differs
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
