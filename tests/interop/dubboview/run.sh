#!/usr/bin/env bash
# zkr dubbo, end to end. A Java fixture (ZooKeeper client + Curator x-discovery from Debian's jars)
# writes a Dubbo 3 registry: URL-encoded provider/consumer nodes, ephemeral from live sessions,
# /services instances, config centre, metadata. Then:
#   1. against zkr: every `zkr dubbo` command, text and --json, equals expected/<case> (session ids
#      substituted), plus the error cases;
#   2. the web page, served by zkr's AdminServer at /dubbo (and identically by `zkr dubbo web`), in
#      Debian's headless Chromium driven by playwright-core
#      (browser.js): DOM contents, live refresh on add/remove, a click, a checked screenshot;
#   3. against Debian's ZooKeeper 3.8: the same fixture, the same commands, the same expected files.
# Needs ZKR_BIN. Ports DUBBOVIEW_PORT_BASE (default 31000) +1 zkr, +2 ZooKeeper, +80 zkr dubbo web, +81 admin.
# Installs chromium, the Java jars and npm packages itself. Prints "N passed, M failed".
# DUBBOVIEW_UPDATE=1 rewrites expected/ from zkr's output instead of comparing (review the diff).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ZKR_BIN=${ZKR_BIN:?set ZKR_BIN to the zkr binary}
BASE=${DUBBOVIEW_PORT_BASE:-31000}
ZKR_PORT=$((BASE + 1)) ZK_PORT=$((BASE + 2)) WEB_PORT=$((BASE + 80)) ADMIN_PORT=$((BASE + 81))
WORK="$HERE/.work"
RUN=$(mktemp -d)
mkdir -p "$WORK"

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
need_pkgs=()
[ -x /usr/bin/chromium ] || need_pkgs+=(chromium)
[ -f /usr/share/java/curator-x-discovery.jar ] || need_pkgs+=(libcurator-discovery-java)
[ -f /usr/share/java/zookeeper.jar ] || need_pkgs+=(libzookeeper-java)
[ -x /usr/share/zookeeper/bin/zkServer.sh ] || need_pkgs+=(zookeeper zookeeper-bin)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${need_pkgs[@]}" >/dev/null \
        || { echo "FAIL setup: apt-get install ${need_pkgs[*]}"; exit 2; }
fi
if [ ! -d "$WORK/node_modules/playwright-core" ] || [ ! -d "$WORK/node_modules/pngjs" ]; then
    (cd "$WORK" && npm install --no-audit --no-fund --silent playwright-core@1 pngjs@7 >/dev/null) \
        || { echo "FAIL setup: npm install playwright-core pngjs"; exit 2; }
fi
CP=$(printf '/usr/share/java/%s.jar:' zookeeper zookeeper-jute slf4j-api slf4j-nop netty-all commons-io \
    curator-client curator-framework curator-x-discovery guava jackson-core jackson-databind jackson-annotations)
javac -d "$RUN/classes" -cp "$CP" "$HERE/fixture/DubboFixture.java" \
    "$HERE/fixture/org/apache/dubbo/registry/zookeeper/ZookeeperInstance.java" || { echo "FAIL setup: javac"; exit 2; }

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    [ -f "$RUN/zk/pid" ] && kill -9 "$(cat "$RUN/zk/pid")" 2>/dev/null
    rm -rf "$RUN"
}
trap cleanup EXIT

passed=0 failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

wait_port() {
    for _ in $(seq 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# Starts the fixture against $1 (host:port); its commands go through $RUN/ctl.
FIX_PID="" HOLD_PID=""
start_fixture() {
    rm -f "$RUN/ctl" "$RUN/fixture.out"
    mkfifo "$RUN/ctl"
    sleep 100000 >"$RUN/ctl" &
    HOLD_PID=$!
    PIDS+=("$HOLD_PID")
    java -cp "$RUN/classes:$CP" DubboFixture "$1" <"$RUN/ctl" >"$RUN/fixture.out" 2>"$RUN/fixture.err" &
    FIX_PID=$!
    PIDS+=("$FIX_PID")
    for _ in $(seq 600); do
        grep -q '^READY' "$RUN/fixture.out" && return 0
        kill -0 "$FIX_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "fixture did not get ready"; cat "$RUN/fixture.err"; return 1
}
stop_fixture() {
    # Opening the FIFO blocks without a reader: only if the fixture is still there, and not forever.
    kill -0 "$FIX_PID" 2>/dev/null && timeout 10 sh -c "echo quit >'$RUN/ctl'"
    for _ in $(seq 100); do grep -q '^BYE' "$RUN/fixture.out" && break; sleep 0.1; done
    kill "$HOLD_PID" "$FIX_PID" 2>/dev/null
    wait "$FIX_PID" "$HOLD_PID" 2>/dev/null
}
session() { awk -v n="$1" '$1 == "SESSION" && $2 == n { print $3 }' "$RUN/fixture.out"; }

# The cases: name | arguments after -server.
CASES=(
    "services|services"
    "services.json|services --json"
    "providers-demo|providers org.apache.dubbo.demo.DemoService"
    "providers-demo.json|providers org.apache.dubbo.demo.DemoService --json"
    "providers-greeting|providers org.apache.dubbo.demo.GreetingService"
    "providers-order|providers org.apache.dubbo.demo.OrderService"
    "consumers-demo|consumers org.apache.dubbo.demo.DemoService"
    "consumers-order.json|consumers org.apache.dubbo.demo.OrderService --json"
    "instances|instances"
    "instances-app.json|instances demo-provider --json"
    "config|config"
    "config.json|config --json"
)

# Runs every case against the server on port $2; labels results with $1.
check_cli() {
    local label=$1 port=$2 sub=()
    for s in P1 P2 C1 I1 I2; do
        local id
        id=$(session "$s")
        [ -n "$id" ] || { fail "$label: fixture printed no session $s"; return; }
        sub+=(-e "s/$id/{$s}/g")
    done
    for c in "${CASES[@]}"; do
        local name=${c%%|*} args=${c#*|}
        # shellcheck disable=SC2086
        "$ZKR_BIN" dubbo -server "127.0.0.1:$port" $args >"$RUN/out" 2>"$RUN/err"
        local rc=$?
        sed "${sub[@]}" "$RUN/out" >"$RUN/got"
        if [ "${DUBBOVIEW_UPDATE:-}" = 1 ] && [ "$label" = zkr ]; then
            cp "$RUN/got" "$HERE/expected/$name"
        fi
        if [ $rc -eq 0 ] && [ -s "$HERE/expected/$name" ] && diff -u "$HERE/expected/$name" "$RUN/got" >"$RUN/diff"; then
            pass "$label: zkr dubbo $args"
        else
            fail "$label: zkr dubbo $args (exit $rc)"
            cat "$RUN/err"
            head -40 "$RUN/diff"
        fi
    done
    # An interface the registry does not have: an error, exit 1.
    "$ZKR_BIN" dubbo -server "127.0.0.1:$port" providers org.example.Nope >"$RUN/out" 2>"$RUN/err"
    local rc=$?
    if [ $rc -eq 1 ] && [ "$(cat "$RUN/err")" = "zkr dubbo: no service org.example.Nope under /dubbo" ] && [ ! -s "$RUN/out" ]; then
        pass "$label: unknown interface is an error"
    else
        fail "$label: unknown interface: exit $rc, stderr $(cat "$RUN/err")"
    fi
}

mkdir -p "$HERE/expected"

# ---------------------------------------------------------------- zkr
# The AdminServer serves the Dubbo view at /dubbo; the browser test reads it there.
"$ZKR_BIN" serve --bind 127.0.0.1 --port "$ZKR_PORT" --admin-port "$ADMIN_PORT" --data-dir "$RUN/zkr-data" >"$RUN/zkr.log" 2>&1 &
ZKR_PID=$!
PIDS+=("$ZKR_PID")
wait_port "$ZKR_PORT" || { echo "FAIL zkr did not start"; tail "$RUN/zkr.log"; exit 2; }
if start_fixture "127.0.0.1:$ZKR_PORT"; then
    check_cli zkr "$ZKR_PORT"
    "$ZKR_BIN" dubbo -server "127.0.0.1:$ZKR_PORT" web --listen "127.0.0.1:$WEB_PORT" >"$RUN/web.log" 2>&1 &
    WEB_PID=$!
    PIDS+=("$WEB_PID")
    if wait_port "$WEB_PORT" && wait_port "$ADMIN_PORT"; then
        # The standalone `zkr dubbo web` serves the same page as the admin port.
        if python3 -c 'import sys, urllib.request
a = urllib.request.urlopen(sys.argv[1], timeout=30).read()
b = urllib.request.urlopen(sys.argv[2], timeout=30).read()
sys.exit(0 if a == b and b"<html" in a.lower() else 1)' "http://127.0.0.1:$WEB_PORT/dubbo" "http://127.0.0.1:$ADMIN_PORT/dubbo"; then
            pass "web: zkr dubbo web and the admin port serve the same page"
        else
            fail "web: zkr dubbo web and the admin port serve different pages"
        fi
        code=$(python3 -c 'import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=b"", method="POST"), timeout=30); print(200)
except urllib.error.HTTPError as e:
    print(e.code)' "http://127.0.0.1:$ADMIN_PORT/dubbo/api/services")
        [ "$code" = 405 ] && pass "web: read-only (POST is 405)" || fail "web: POST answered $code"
        if NODE_PATH="$WORK/node_modules" PAGE_URL="http://127.0.0.1:$ADMIN_PORT/dubbo" CTL="$RUN/ctl" \
            FIXTURE_OUT="$RUN/fixture.out" SHOT="$WORK/dubbo-view.png" S_P1=$(session P1) S_P2=$(session P2) \
            S_C1=$(session C1) S_I1=$(session I1) timeout 180 node "$HERE/browser.js" >"$RUN/browser.out" 2>&1; then
            pass "web: headless Chromium ($(tail -1 "$RUN/browser.out"); screenshot $WORK/dubbo-view.png)"
        else
            fail "web: headless Chromium"
            cat "$RUN/browser.out"
        fi
    else
        fail "web: zkr dubbo web or the admin port did not listen"
        cat "$RUN/web.log"
    fi
    kill "$WEB_PID" 2>/dev/null
    stop_fixture
else
    fail "zkr: fixture"
fi
kill "$ZKR_PID" 2>/dev/null
wait "$ZKR_PID" 2>/dev/null
# A server that is not there: a clear error, exit 1.
"$ZKR_BIN" dubbo -server "127.0.0.1:$ZKR_PORT" services >"$RUN/out" 2>"$RUN/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'ConnectionLoss' "$RUN/err"; then
    pass "no server: exit 1, $(cat "$RUN/err")"
else
    fail "no server: exit $rc, $(cat "$RUN/err")"
fi

# ---------------------------------------------------------------- Debian's ZooKeeper
mkdir -p "$RUN/zk/data"
cat >"$RUN/zk/zoo.cfg" <<CFG
tickTime=2000
dataDir=$RUN/zk/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
maxClientCnxns=0
CFG
ZOOCFGDIR="$RUN/zk" ZOO_LOG_DIR="$RUN/zk" ZOOPIDFILE="$RUN/zk/pid" \
    /usr/share/zookeeper/bin/zkServer.sh start "$RUN/zk/zoo.cfg" >/dev/null 2>&1
if wait_port "$ZK_PORT" && start_fixture "127.0.0.1:$ZK_PORT"; then
    check_cli zookeeper "$ZK_PORT"
    stop_fixture
else
    fail "zookeeper: server or fixture did not start"
fi
ZOOCFGDIR="$RUN/zk" ZOO_LOG_DIR="$RUN/zk" ZOOPIDFILE="$RUN/zk/pid" \
    /usr/share/zookeeper/bin/zkServer.sh stop "$RUN/zk/zoo.cfg" >/dev/null 2>&1

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
