#!/usr/bin/env bash
# Differential interop suite: runs the same client scenarios (kazoo, the
# official Java client, zkCli.sh, Curator recipes) against Apache ZooKeeper 3.8
# (Debian) and against zkr, and compares what the clients observed.  See README.md.
#
#   ZKR_BIN=target/release/zkr tests/interop/run.sh            # everything
#   ZKR_BIN=... tests/interop/run.sh kazoo java/multi crud      # a subset
#   ZKR_ADDR=127.0.0.1:2181 tests/interop/run.sh               # running zkr
#   INTEROP_BOTH_ZK=1 tests/interop/run.sh                     # ZK vs ZK
#   tests/interop/run.sh --list                                # scenario names
#
# Prints one PASS/FAIL line per scenario and ends with "N passed, N failed".
# Exit status: 0 all passed, 1 something failed, 2 setup problem.

set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=lib/servers.sh
. "$HERE/lib/servers.sh"
WORK="$HERE/.work"
PY=/usr/bin/python3
ZK_BIN_DIR=/usr/share/zookeeper/bin
# each scenario program gives up by itself after INTEROP_WATCHDOG_SECS (75)
SCENARIO_TIMEOUT=${INTEROP_SCENARIO_TIMEOUT:-110}
# a hung server must not keep CI busy for long: once the budget is spent the
# remaining scenarios are reported as FAIL without running them
BUDGET_SECS=${INTEROP_BUDGET_SECS:-900}
JARS="zookeeper zookeeper-jute slf4j-api slf4j-nop netty-all commons-io"
CP=""
for j in $JARS; do CP="$CP${CP:+:}/usr/share/java/$j.jar"; done
# Curator scenarios (curator/*.java): the jars above plus Curator 5 and what it needs
CUR_JARS="curator-client curator-framework curator-recipes curator-x-discovery guava jackson-core jackson-databind jackson-annotations"
CUR_CP="$CP"
for j in $CUR_JARS; do CUR_CP="$CUR_CP:/usr/share/java/$j.jar"; done
# ports are taken from PORT_BASE .. PORT_BASE+999
PORT_BASE=${INTEROP_PORT_BASE:-24000}
JAVA_OPTS_INTEROP="-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k"

say() { echo "[interop] $*" >&2; }
die() { say "ERROR: $*"; exit 2; }

# ---------------------------------------------------------------- arguments

LIST_ONLY=0
FILTERS=()
for a in "$@"; do
    case "$a" in
        --list) LIST_ONLY=1 ;;
        -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) FILTERS+=("$a") ;;
    esac
done

# ---------------------------------------------------------------- dependencies

ensure_deps() {
    local pkgs="zookeeper zookeeper-bin libzookeeper-java python3-kazoo netcat-openbsd"
    pkgs="$pkgs libcurator-framework-java libcurator-recipes-java libcurator-discovery-java"
    local missing="" p
    for p in $pkgs; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
    done
    local extra=""
    command -v javac >/dev/null 2>&1 || extra="default-jdk-headless"
    [ -x /usr/bin/timeout ] || extra="$extra coreutils"
    if [ -z "$missing" ] && [ -z "$extra" ]; then
        return 0
    fi
    say "installing packages:$missing $extra"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "need root or sudo to install:$missing $extra"
        sudo="sudo"
    fi
    mkdir -p "$WORK"
    if ! { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
           $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
               zookeeper zookeeper-bin libzookeeper-java python3-kazoo netcat-openbsd \
               libcurator-framework-java libcurator-recipes-java libcurator-discovery-java $extra; \
         } >"$WORK/apt.log" 2>&1; then
        tail -n 30 "$WORK/apt.log" >&2
        die "package installation failed (log: $WORK/apt.log)"
    fi
}

ensure_deps
[ -x "$PY" ] || die "$PY not found"
"$PY" -c 'import kazoo' 2>/dev/null || die "$PY cannot import kazoo (python3-kazoo)"
[ -x "$ZK_BIN_DIR/zkServer.sh" ] || die "$ZK_BIN_DIR/zkServer.sh not found"
for j in $JARS $CUR_JARS; do [ -f "/usr/share/java/$j.jar" ] || die "/usr/share/java/$j.jar not found"; done

mkdir -p "$WORK/runs"

# ---------------------------------------------------------------- Java client build
# compiled into a directory named after the source hash, so that concurrent runs
# (and edits) never see a half-written build

JHASH=$(cat "$HERE/java/Interop.java" | sha1sum | cut -c1-12)
JDIR="$WORK/java-$JHASH"
if [ ! -f "$JDIR/Interop.class" ]; then
    tmp=$(mktemp -d "$WORK/java-build.XXXXXX")
    javac -nowarn -encoding UTF-8 -d "$tmp" -cp "$CP" "$HERE/java/Interop.java" >"$tmp/javac.log" 2>&1 ||
        { cat "$tmp/javac.log" >&2; rm -rf "$tmp"; die "javac failed"; }
    mv -T "$tmp" "$JDIR" 2>/dev/null || rm -rf "$tmp"
fi
JAVA_CP="$JDIR:$CP"

# the Curator scenarios, built the same way from every curator/*.java
CHASH=$(cat "$HERE"/curator/*.java | sha1sum | cut -c1-12)
CDIR="$WORK/curator-$CHASH"
if [ ! -f "$CDIR/CuratorScenarios.class" ]; then
    tmp=$(mktemp -d "$WORK/curator-build.XXXXXX")
    javac -nowarn -encoding UTF-8 -d "$tmp" -cp "$CUR_CP" "$HERE"/curator/*.java >"$tmp/javac.log" 2>&1 ||
        { cat "$tmp/javac.log" >&2; rm -rf "$tmp"; die "javac failed (curator)"; }
    mv -T "$tmp" "$CDIR" 2>/dev/null || rm -rf "$tmp"
fi
CUR_JAVA_CP="$CDIR:$CUR_CP"

# ---------------------------------------------------------------- scenario list

ALL=()
for n in $("$PY" "$HERE/kazoo/scenarios.py" --list); do ALL+=("kazoo/$n"); done
for n in $(java $JAVA_OPTS_INTEROP -cp "$JAVA_CP" Interop --list); do ALL+=("java/$n"); done
for f in "$HERE"/zkcli/*.zk; do ALL+=("zkcli/$(basename "$f" .zk)"); done
# zkr cli: each script against both servers, and (unless it says "#! vs-zkcli: skip") zkCli.sh
# against zkr cli on the reference ZooKeeper
for f in "$HERE"/zkrcli/*.zk "$HERE"/zkrcli/*.oneshot; do
    n=$(basename "$f"); n=${n%.*}
    ALL+=("zkrcli/$n")
    grep -q '^#! vs-zkcli: skip' "$f" || ALL+=("zkrcli/vs-zkcli/$n")
done
for n in $(java $JAVA_OPTS_INTEROP -cp "$CUR_JAVA_CP" CuratorScenarios --list); do ALL+=("curator/$n"); done
[ "${#ALL[@]}" -gt 10 ] || die "could not list scenarios"

SELECTED=()
for s in "${ALL[@]}"; do
    if [ "${#FILTERS[@]}" -eq 0 ]; then SELECTED+=("$s"); continue; fi
    for f in "${FILTERS[@]}"; do
        # shellcheck disable=SC2053
        if [[ "$s" == $f || "$s" == "$f"/* || "$s" == *"$f"* ]]; then SELECTED+=("$s"); break; fi
    done
done

if [ "$LIST_ONLY" -eq 1 ]; then
    printf '%s\n' "${SELECTED[@]}"
    exit 0
fi
[ "${#SELECTED[@]}" -gt 0 ] || die "no scenario matches: ${FILTERS[*]} (see --list)"

# ---------------------------------------------------------------- run directory
# everything a run writes (server dirs, transcripts) lives in its own directory;
# $WORK/last points at the latest one

old_runs=$(ls -1d "$WORK"/runs/*.* 2>/dev/null | sort | head -n -3)
for d in $old_runs; do
    kill -0 "${d##*.}" 2>/dev/null || rm -rf "$d"
done
find "$WORK" -maxdepth 1 -name 'java-*' ! -name "java-$JHASH" -mmin +60 -exec rm -rf {} + 2>/dev/null
find "$WORK" -maxdepth 1 -name 'curator-*' ! -name "curator-$CHASH" -mmin +60 -exec rm -rf {} + 2>/dev/null
RUN_DIR="$WORK/runs/$(date +%Y%m%d-%H%M%S).$$"
mkdir -p "$RUN_DIR/out"
# one row per scenario for the compatibility matrix (tests/interop/matrix.py generate)
MATRIX_TSV="$WORK/matrix/interop.tsv"
mkdir -p "$WORK/matrix"
: >"$MATRIX_TSV"
matrix_row() {  # scenario ref_rc zkr_rc cmp_rc [diff]
    "$PY" "$HERE/matrix.py" add-row "$MATRIX_TSV" "${1%%/*}" "$1" "${1#*/}" "$2" "$3" "$4" "${5:-}" ||
        say "warning: could not write the matrix row of $1"
}
ln -sfn "$RUN_DIR" "$WORK/last"

# ---------------------------------------------------------------- ports

BASE=$(srv_pick_base "$PORT_BASE" 1000 4) || die "no free ports in $PORT_BASE-$((PORT_BASE + 999))"
REF_PORT=$BASE
ZKR_PORT=$((BASE + 1))
REF_PROXY_PORT=$((BASE + 2))
ZKR_PROXY_PORT=$((BASE + 3))

# ---------------------------------------------------------------- servers

PIDS=()
ZKR_PID=""
ZKR_LOG=""

cleanup_servers() {
    local p
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
}
trap cleanup_servers EXIT
trap 'exit 130' INT TERM

write_cfg() {  # dir port
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
enforceQuota=true
EOF
}

ruok() { [ "$(echo ruok | nc -q1 -w2 127.0.0.1 "$1" 2>/dev/null)" = "imok" ]; }

start_zookeeper() {  # name port [restart]
    local d="$RUN_DIR/$1"
    mkdir -p "$d/data"
    write_cfg "$d" "$2"
    [ "${3:-}" = restart ] || : >"$d/server.log"
    # zkServer.sh start-foreground (backgrounded here) execs the JVM, so $! is
    # the server pid and its output lands in our directory; Debian's zkEnv.sh
    # would send "zkServer.sh start" output to /var/log/zookeeper.
    ZOOCFGDIR="$d" ZOO_LOG_DIR="$d" ZOOPIDFILE="$d/pid" \
        SERVER_JVMFLAGS="$ZK_LOGGING_FLAGS -Dznode.container.checkIntervalMs=1000 -Dzookeeper.log.dir=$d -Xmx512m" \
        "$ZK_BIN_DIR/zkServer.sh" start-foreground "$d/zoo.cfg" >>"$d/server.log" 2>&1 </dev/null &
    local pid=$!
    PIDS+=("$pid")
    LAST_PID=$pid
    srv_wait_ruok "$2" "$pid" 90 && return 0
    srv_diagnose "$1" "$2" "$pid" "$d/server.log"
    [ "${3:-}" = restart ] && { say "ZooKeeper ($1) did not restart on port $2"; return 1; }
    die "ZooKeeper ($1) did not start on port $2"
}

start_zkr() {  # port [restart]
    local d="$RUN_DIR/zkr"
    mkdir -p "$d/data"
    write_cfg "$d" "$1"
    ZKR_LOG="$d/zkr.log"
    if [ "${2:-}" != restart ]; then : >"$d/zkr.stdout"; : >"$ZKR_LOG"; fi
    "$ZKR_BIN" serve --config "$d/zoo.cfg" --data-dir "$d/data" --container-check-interval-ms 1000 \
        >>"$d/zkr.stdout" 2>>"$ZKR_LOG" </dev/null &
    ZKR_PID=$!
    PIDS+=("$ZKR_PID")
    for _ in $(seq 1 150); do
        if ruok "$1" || nc -z -w1 127.0.0.1 "$1" 2>/dev/null; then return 0; fi
        kill -0 "$ZKR_PID" 2>/dev/null || break
        sleep 0.2
    done
    tail -n 40 "$ZKR_LOG" >&2
    [ "${2:-}" = restart ] && { say "zkr did not restart on port $1"; return 1; }
    die "zkr did not start on port $1 ($ZKR_BIN)"
}

# Restart of the server one side talks to, on the request of a scenario (see
# run_with_restart): stopped with SIGTERM (SIGKILL after 10 s), started again on
# the same port with the same configuration and data directory.
stop_pid() {
    kill "$1" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$1" 2>/dev/null
    sleep 0.2
}

restart_server() {  # side (ref|zkr)
    local old_pid
    [ "$1" = ref ] && old_pid=$REF_PID || old_pid=$ZKR_PID
    case "$1" in
        ref)
            stop_pid "$REF_PID"
            start_zookeeper zookeeper "$REF_PORT" restart || return 1
            REF_PID=$LAST_PID ;;
        zkr)
            case "$ZKR_KIND" in
                zookeeper)
                    stop_pid "$ZKR_PID"
                    start_zookeeper zookeeper2 "$ZKR_PORT" restart || return 1
                    ZKR_PID=$LAST_PID ;;
                bin)
                    stop_pid "$ZKR_PID"
                    start_zkr "$ZKR_PORT" restart || return 1 ;;
                *)
                    say "cannot restart a zkr given by ZKR_ADDR"
                    return 1 ;;
            esac ;;
    esac
    say "restarted the $1 side (pid $old_pid -> $([ "$1" = ref ] && echo "$REF_PID" || echo "$ZKR_PID"))"
}

T0=$(date +%s)
say "starting reference ZooKeeper on 127.0.0.1:$REF_PORT"
start_zookeeper zookeeper "$REF_PORT"
REF_PID=$LAST_PID
REF_ADDR="127.0.0.1:$REF_PORT"
ZKR_KIND=addr

if [ "${INTEROP_BOTH_ZK:-0}" = "1" ]; then
    say "INTEROP_BOTH_ZK=1: the 'zkr' side is a second ZooKeeper on 127.0.0.1:$ZKR_PORT"
    start_zookeeper zookeeper2 "$ZKR_PORT"
    ZKR_PID=$LAST_PID
    ZKR_KIND=zookeeper
    ZKR_LOG="$RUN_DIR/zookeeper2/server.log"
    ZKR_ADDR_USED="127.0.0.1:$ZKR_PORT"
elif [ -n "${ZKR_ADDR:-}" ]; then
    say "using running zkr at $ZKR_ADDR"
    ZKR_ADDR_USED="$ZKR_ADDR"
    nc -z -w2 "${ZKR_ADDR%:*}" "${ZKR_ADDR##*:}" 2>/dev/null || die "cannot connect to ZKR_ADDR=$ZKR_ADDR"
else
    if [ -z "${ZKR_BIN:-}" ]; then
        for c in "$REPO/target/release/zkr" "$REPO/target/debug/zkr"; do
            [ -x "$c" ] && { ZKR_BIN="$c"; break; }
        done
    fi
    [ -n "${ZKR_BIN:-}" ] || die "set ZKR_BIN=path/to/zkr (or ZKR_ADDR=host:port, or INTEROP_BOTH_ZK=1)"
    [ -x "$ZKR_BIN" ] || die "ZKR_BIN=$ZKR_BIN is not executable"
    say "starting zkr ($ZKR_BIN) on 127.0.0.1:$ZKR_PORT"
    start_zkr "$ZKR_PORT"
    ZKR_KIND=bin
    ZKR_ADDR_USED="127.0.0.1:$ZKR_PORT"
fi

# leftovers from earlier runs only matter on a reused server, but are cheap to remove
for addr in "$REF_ADDR" "$ZKR_ADDR_USED"; do
    timeout 60 "$PY" "$HERE/kazoo/scenarios.py" --cleanup "$addr" >/dev/null 2>"$RUN_DIR/cleanup.err" ||
        say "warning: cleanup of $addr failed: $(tail -n 1 "$RUN_DIR/cleanup.err")"
done

# ---------------------------------------------------------------- running scenarios

# Runs a scenario that may ask for a server restart: a line "RESTART" on its
# stdout makes the harness restart the server of this side and answer with one
# line on its stdin, "RESTARTED" or "RESTART_FAILED".  The RESTART line is left
# out of the transcript; what the harness did goes to <out>.restart.log.
run_with_restart() {  # side out_prefix command...
    local side="$1" out="$2" line pid rc rfd wfd
    shift 2
    rm -f "$out.stdin" "$out.stdout"
    mkfifo "$out.stdin" "$out.stdout" || return 2
    : >"$out.txt"
    timeout "$SCENARIO_TIMEOUT" "$@" <"$out.stdin" >"$out.stdout" 2>"$out.err" &
    pid=$!
    exec {wfd}<>"$out.stdin"   # read-write: never blocks, and no SIGPIPE if the client is gone
    exec {rfd}<"$out.stdout"
    while IFS= read -r line <&"$rfd" || [ -n "$line" ]; do
        if [ "$line" = RESTART ]; then
            if restart_server "$side" >>"$out.restart.log" 2>&1 {rfd}<&- {wfd}>&-; then
                echo RESTARTED >&"$wfd"
            else
                echo RESTART_FAILED >&"$wfd"
            fi
        else
            printf '%s\n' "$line" >>"$out.txt"
        fi
    done
    exec {rfd}<&- {wfd}>&-
    wait "$pid"
    rc=$?
    rm -f "$out.stdin" "$out.stdout"
    return "$rc"
}

# zkrcli/NAME runs `zkr cli` against each side's server. zkrcli/vs-zkcli/NAME runs zkCli.sh as
# the "zookeeper" side and `zkr cli` as the "zkr" side, both against the reference ZooKeeper.
zkrcli_side() {  # name side addr proxy_port out_prefix
    local name="$1" client=zkr addr="$3" proxy="$4" bin="${ZKR_BIN:-}" f c
    if [ "${name%%/*}" = vs-zkcli ]; then
        name="${name#vs-zkcli/}" addr="$REF_ADDR" proxy="$REF_PROXY_PORT"
        [ "$2" = ref ] && client=zkcli
    fi
    if [ -z "$bin" ]; then
        for c in "$REPO/target/release/zkr" "$REPO/target/debug/zkr"; do [ -x "$c" ] && { bin="$c"; break; }; done
    fi
    [ -n "$bin" ] || { echo "no zkr binary for zkr cli: set ZKR_BIN" >"$5.err"; return 2; }
    f="$HERE/zkrcli/$name.zk"
    [ -f "$f" ] || f="$HERE/zkrcli/$name.oneshot"
    ZKR_BIN="$bin" CLIENT_JVMFLAGS="$JAVA_OPTS_INTEROP" timeout "$SCENARIO_TIMEOUT" \
        "$PY" "$HERE/zkrcli/drive.py" "$client" "$f" "$addr" "$proxy" >"$5.txt" 2>"$5.err"
}

run_side() {  # scenario side addr proxy_port out_prefix
    local client="${1%%/*}" name="${1#*/}" out="$5"
    case "$client" in
        kazoo)
            timeout "$SCENARIO_TIMEOUT" "$PY" "$HERE/kazoo/scenarios.py" "$name" "$3" "$4" >"$out.txt" 2>"$out.err" ;;
        java)
            timeout "$SCENARIO_TIMEOUT" java $JAVA_OPTS_INTEROP -cp "$JAVA_CP" Interop "$name" "$3" "$4" \
                >"$out.txt" 2>"$out.err" ;;
        zkcli)
            CLIENT_JVMFLAGS="$JAVA_OPTS_INTEROP" "$HERE/zkcli/run_zkcli.sh" "$HERE/zkcli/$name.zk" "$3" \
                >"$out.txt" 2>"$out.err" ;;
        zkrcli)
            zkrcli_side "$name" "$2" "$3" "$4" "$out" ;;
        curator)
            run_with_restart "$2" "$out" java $JAVA_OPTS_INTEROP -cp "$CUR_JAVA_CP" CuratorScenarios "$name" "$3" ;;
        *) echo "unknown client $client" >"$out.err"; return 2 ;;
    esac
}

indent() { sed 's/^/    /'; }

PASSED=0
FAILED=0
FAILED_NAMES=()
for sc in "${SELECTED[@]}"; do
    base="$RUN_DIR/out/${sc//\//.}"
    rm -f "$base".*
    fmt=json
    [ "${sc%%/*}" = zkcli ] && fmt=zkcli
    [ "${sc%%/*}" = zkrcli ] && fmt=zkcli
    s0=$(date +%s%N)
    if [ -n "$ZKR_PID" ] && ! kill -0 "$ZKR_PID" 2>/dev/null; then
        echo "FAIL $sc: zkr is not running any more"
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$sc")
        continue
    fi
    if [ $(( $(date +%s) - T0 )) -gt "$BUDGET_SECS" ]; then
        echo "FAIL $sc: not run, the time budget (INTEROP_BUDGET_SECS=$BUDGET_SECS) is used up"
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$sc")
        continue
    fi
    run_side "$sc" ref "$REF_ADDR" "$REF_PROXY_PORT" "$base.zookeeper"
    ref_rc=$?
    run_side "$sc" zkr "$ZKR_ADDR_USED" "$ZKR_PROXY_PORT" "$base.zkr"
    zkr_rc=$?
    secs=$(( ($(date +%s%N) - s0) / 100000000 ))
    took="$((secs / 10)).$((secs % 10))s"
    if [ "$ref_rc" -ne 0 ]; then
        echo "FAIL $sc: scenario failed against the reference ZooKeeper (exit $ref_rc) [$took]"
        tail -n 15 "$base.zookeeper.err" | indent
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$sc")
        matrix_row "$sc" "$ref_rc" "$zkr_rc" 1
        continue
    fi
    "$PY" "$HERE/lib/compare.py" --format "$fmt" --scenario "$sc" --known "$HERE/known-differences.json" \
        "$base.zookeeper.txt" "$base.zkr.txt" >"$base.diff" 2>&1
    cmp_rc=$?
    matrix_row "$sc" 0 "$zkr_rc" "$cmp_rc" "$base.diff"
    if [ "$zkr_rc" -ne 0 ]; then
        echo "FAIL $sc: client error against zkr (exit $zkr_rc) [$took]"
        tail -n 15 "$base.zkr.err" | indent
        [ "$cmp_rc" -ne 0 ] && head -n 25 "$base.diff" | indent
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$sc")
    elif [ "$cmp_rc" -ne 0 ]; then
        echo "FAIL $sc: transcripts differ (- zookeeper, + zkr) [$took]"
        indent <"$base.diff"
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$sc")
    else
        echo "PASS $sc [$took]"
        PASSED=$((PASSED + 1))
    fi
done

if [ "$FAILED" -gt 0 ]; then
    say "transcripts and client stderr are in $RUN_DIR/out/ (<scenario>.{zookeeper,zkr}.{txt,err,diff})"
    if [ -n "$ZKR_LOG" ] && [ -f "$ZKR_LOG" ]; then
        say "last lines of the zkr-side server log ($ZKR_LOG):"
        tail -n 30 "$ZKR_LOG" | sed "s/\x1b\[[0-9;]*m//g" | indent >&2
    fi
fi
[ "$FAILED" -gt 0 ] && say "failed: ${FAILED_NAMES[*]}"
say "total time $(( $(date +%s) - T0 ))s"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
