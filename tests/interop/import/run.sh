#!/usr/bin/env bash
# Import test: Apache ZooKeeper 3.8 (Debian) writes a data directory, zkr
# imports it with `zkr import-zookeeper`, and the tree served by zkr must equal
# the tree served by ZooKeeper restarted on the same data. See README.md.
#
#   tests/interop/import/run.sh                       # all variants, zkr from target/release
#   ZKR_BIN=path/to/zkr tests/interop/import/run.sh   # a given zkr binary
#   IMPORT_BOTH_ZK=1 tests/interop/import/run.sh      # "imported" side = 2nd ZooKeeper on a copy
#   tests/interop/import/run.sh kill clean            # some variants (kill, clean, samedir, ensemble,
#                                                     #   export, roundtrip, wayback, adminsnap,
#                                                     #   adminsnap39)
#
# The ensemble variant imports into member 1 of a new 3-member zkr ensemble (127.0.0.1 ports):
# member 1 seeds it, members 2 and 3 start empty and catch up; each member must then serve the
# tree ZooKeeper serves, with the same digest, and hand out zxids above every imported one.
#
# The export variant is the way back: zkr serves the workload, is killed, `zkr export-zookeeper`
# writes a ZooKeeper dataDir (plain, then snappy), and ZooKeeper 3.8 started on it must serve the
# tree zkr served, Stat for Stat, keep the ephemerals until their sessions expire, and refuse the
# re-attach of zkr-born sessions (their passwords are not ZooKeeper's). The roundtrip variant goes
# ZooKeeper -> import -> zkr (more writes) -> export (gzip) -> ZooKeeper, and the imported sessions
# re-attach to ZooKeeper with ZooKeeper's passwords. The wayback variant is the way back from an
# ensemble: three zkr members with zkr.zookeeperPasswords=true serve the workload and stop, each
# member's directory is exported, ZooKeeper 3.8 starts as a 3-member ensemble on the same ports,
# serves the tree zkr served, and takes the zkr-born sessions' re-attach; ZooKeeper 3.9.5 then does
# the same standalone (a snappy export) and as a 3-member ensemble (exports made with --config and
# the members' snapshot.compression.method=gz).
# The adminsnap variant streams a snapshot
# from zkr's AdminServer (`/commands/snapshot`) and starts ZooKeeper 3.8 on it. The adminsnap39
# variant puts the backup commands side by side with ZooKeeper 3.9.5's: each server's stream is
# served by the other (ZooKeeper started on zkr's, zkr's `/commands/restore` of ZooKeeper's),
# and both refuse a truncated restore whole.
#
# Prints one PASS/FAIL line per check and ends with "N passed, N failed".
# Exit status: 0 all passed, 1 something failed, 2 setup problem.

set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
# shellcheck source=../lib/servers.sh
. "$HERE/../lib/servers.sh"
WORK="$HERE/.work"
PY=/usr/bin/python3
ZK_BIN_DIR=/usr/share/zookeeper/bin
SUPER_PW="super:secret"
ALL_VARIANTS="kill clean samedir ensemble export roundtrip wayback adminsnap adminsnap39"
MIN_FILES=3   # snapshot.* and log.* files the workload must leave behind (each)
SWEEP_MS=1000 # container/TTL sweep interval of the servers started on the imported data
export IMPORT_HOLDER_TIMEOUT=${IMPORT_HOLDER_TIMEOUT:-20}  # session timeout (s) of the session holding ephemerals

say() { echo "[import] $*" >&2; }
die() { say "ERROR: $*"; exit 2; }

VARIANTS=()
for a in "$@"; do
    case "$a" in
        -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        kill|clean|samedir|ensemble|export|roundtrip|wayback|adminsnap|adminsnap39) VARIANTS+=("$a") ;;
        *) die "unknown argument '$a' (variants: $ALL_VARIANTS)" ;;
    esac
done
[ "${#VARIANTS[@]}" -gt 0 ] || read -r -a VARIANTS <<<"$ALL_VARIANTS"

# ---------------------------------------------------------------- dependencies

[ -x "$PY" ] || die "$PY not found"
"$PY" -c 'import kazoo' 2>/dev/null || die "$PY cannot import kazoo (apt-get install python3-kazoo)"
[ -x "$ZK_BIN_DIR/zkServer.sh" ] || die "$ZK_BIN_DIR/zkServer.sh not found (apt-get install zookeeper)"
command -v nc >/dev/null 2>&1 || die "nc not found (apt-get install netcat-openbsd)"
command -v timeout >/dev/null 2>&1 || die "timeout not found (coreutils)"

BOTH_ZK="${IMPORT_BOTH_ZK:-0}"
if [ "$BOTH_ZK" != "1" ]; then
    ZKR_BIN="${ZKR_BIN:-$REPO/target/release/zkr}"
    [ -x "$ZKR_BIN" ] || die "ZKR_BIN=$ZKR_BIN is not executable (build it, or IMPORT_BOTH_ZK=1)"
    "$ZKR_BIN" import-zookeeper --help 2>&1 | grep -q -- --zk-data-dir ||
        die "$ZKR_BIN has no import-zookeeper command (or IMPORT_BOTH_ZK=1 to test the harness)"
fi
SUPER_DIGEST="super:$("$PY" -c 'import base64,hashlib,sys; print(base64.b64encode(hashlib.sha1(sys.argv[1].encode()).digest()).decode())' "$SUPER_PW")"

# ---------------------------------------------------------------- run directory

mkdir -p "$WORK/runs"
for d in $(ls -1d "$WORK"/runs/*.* 2>/dev/null | sort | head -n -3); do
    kill -0 "${d##*.}" 2>/dev/null || rm -rf "$d"
done
RUN_DIR="$WORK/runs/$(date +%Y%m%d-%H%M%S).$$"
mkdir -p "$RUN_DIR"
ln -sfn "$RUN_DIR" "$WORK/last"
if [ "$BOTH_ZK" != "1" ]; then
    # a private copy: a cargo build during the run must not swap the binary
    cp "$ZKR_BIN" "$RUN_DIR/zkr" || die "cannot copy $ZKR_BIN"
    ZKR_SRC="$ZKR_BIN"
    ZKR_BIN="$RUN_DIR/zkr"
fi

# ---------------------------------------------------------------- ports (26000-26999)

BASE=$(srv_pick_base 26000 1000 12) || die "no free ports in 26000-26999"
ZK_PORT=$BASE        # ZooKeeper: the workload, then restarted on the same data
IMP_PORT=$((BASE + 1))  # zkr on the imported directory (or the 2nd ZooKeeper); ensemble: member 1
MEMBER_PORTS=("$IMP_PORT" $((BASE + 2)) $((BASE + 3)))  # ensemble variant: client ports of members 1-3
PEER_BASE=$((BASE + 4))      # .. +2: their peer ports; PEER_BASE+3 .. +5: election ports

# ---------------------------------------------------------------- processes

PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 1 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stop_pid() {  # pid signal: signal it and wait (up to 10 s) until it is gone
    kill "-$2" "$1" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$1" 2>/dev/null
    sleep 0.2
}

ruok() { [ "$(echo ruok | nc -q1 -w2 127.0.0.1 "$1" 2>/dev/null)" = "imok" ]; }

write_cfg() {  # file port dataDir [dataLogDir]
    {
        echo "tickTime=2000"
        echo "clientPort=$2"
        echo "clientPortAddress=127.0.0.1"
        echo "dataDir=$3"
        [ -n "${4:-}" ] && echo "dataLogDir=$4"
        echo "snapCount=50"
        echo "admin.enableServer=false"
        echo "extendedTypesEnabled=true"
        echo "maxClientCnxns=0"
        echo "4lw.commands.whitelist=*"
    } >"$1"
}

start_zk() {  # cfg port logfile [extra jvm flags] -> LAST_PID, LAST_START
    local dir
    dir="$(dirname "$1")"
    LAST_START=$(date +%s.%N)
    # start-foreground (backgrounded here) execs the JVM, so $! is the server
    # pid and its output stays here; Debian's zkEnv.sh ignores ZOO_LOG_DIR
    # with "zkServer.sh start".
    ZOOCFGDIR="$dir" ZOO_LOG_DIR="$dir" ZOOPIDFILE="$dir/pid" JMXDISABLE=true \
        SERVER_JVMFLAGS="$ZK_LOGGING_FLAGS -Dzookeeper.DigestAuthenticationProvider.superDigest=$SUPER_DIGEST -Dzookeeper.log.dir=$dir -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 ${4:-}" \
        "$ZK_BIN_DIR/zkServer.sh" start-foreground "$1" >>"$3" 2>&1 </dev/null &
    LAST_PID=$!
    disown "$LAST_PID"
    PIDS+=("$LAST_PID")
    srv_wait_ruok "$2" "$LAST_PID" 90 && return 0
    srv_diagnose zookeeper "$2" "$LAST_PID" "$3"
    die "ZooKeeper ($1) did not start on port $2"
}

# ZooKeeper 3.9.5 from Maven Central (Maven resolves it with tests/interop/zab/zk39/pom.xml, once
# per run, with its AdminServer's Jetty: -Padmin): its classpath -> ZK39_CP; 1 if Maven fails (its
# log: dir/mvn-zk39.log)
zk39_classpath() {  # dir
    [ -n "${ZK39_CP:-}" ] && return 0
    mvn -B -q -f "$HERE/../zab/zk39/pom.xml" -Padmin dependency:build-classpath -Dzookeeper.version=3.9.5 \
        -Dmdep.outputFile="$1/zk39.classpath" >"$1/mvn-zk39.log" 2>&1 || return 1
    ZK39_CP=$(cat "$1/zk39.classpath")
}

# ZooKeeper 3.9.5 (zk39_classpath first) on cfg, with the super digest, not waited for -> LAST_PID,
# LAST_START
launch_zk39() {  # cfg logfile [extra jvm flags...]
    LAST_START=$(date +%s.%N)
    java -cp "$ZK39_CP" -Dzookeeper.log.dir="$(dirname "$2")" \
        -Dzookeeper.DigestAuthenticationProvider.superDigest="$SUPER_DIGEST" \
        -Dznode.container.checkIntervalMs="$SWEEP_MS" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${@:3}" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$1" >"$2" 2>&1 </dev/null &
    LAST_PID=$!
    disown "$LAST_PID"
    PIDS+=("$LAST_PID")
}

# launch_zk39, then 1 if it does not answer ruok within 90 s
start_zk39() {  # cfg port logfile [extra jvm flags...]
    launch_zk39 "$1" "$3" "${@:4}"
    srv_wait_ruok "$2" "$LAST_PID" 90
}

start_zkr() {  # datadir port logfile [extra serve flags] -> LAST_PID, LAST_START
    LAST_START=$(date +%s.%N)
    "$ZKR_BIN" serve --admin-enable false --bind 127.0.0.1 --port "$2" --data-dir "$1" --super-digest "$SUPER_DIGEST" \
        --container-check-interval-ms "$SWEEP_MS" "${@:4}" >"$3.stdout" 2>"$3" </dev/null &
    LAST_PID=$!
    disown "$LAST_PID"
    PIDS+=("$LAST_PID")
    for _ in $(seq 1 150); do
        nc -z -w1 127.0.0.1 "$2" 2>/dev/null && return 0
        kill -0 "$LAST_PID" 2>/dev/null || break
        sleep 0.2
    done
    return 1
}

# start_members DIR: a 3-member zkr ensemble, member i's dataDir DIR/m<i> (member 1's holds the
# import), zoo.cfg DIR/m<i>.cfg; waits until every member serves -> MEMBER_PIDS, LAST_START
start_members() {
    local dir=$1 i j pid
    MEMBER_PIDS=()
    LAST_START=$(date +%s.%N)
    for i in 1 2 3; do
        mkdir -p "$dir/m$i"
        echo "$i" >"$dir/m$i/myid"
        {
            echo "tickTime=2000"
            echo "initLimit=10"
            echo "syncLimit=5"
            echo "dataDir=$dir/m$i"
            echo "clientPort=${MEMBER_PORTS[$((i - 1))]}"
            echo "clientPortAddress=127.0.0.1"
            echo "snapCount=50"
            echo "extendedTypesEnabled=true"
            echo "4lw.commands.whitelist=*"
            [ -n "${MEMBER_EXTRA_CFG:-}" ] && echo "$MEMBER_EXTRA_CFG"
            for j in 1 2 3; do
                echo "server.$j=127.0.0.1:$((PEER_BASE + j - 1)):$((PEER_BASE + j + 2));127.0.0.1:${MEMBER_PORTS[$((j - 1))]}"
            done
        } >"$dir/m$i.cfg"
    done
    # member 1 first, as the README says: it holds the seed
    for i in 1 2 3; do
        "$ZKR_BIN" serve --config "$dir/m$i.cfg" --admin-enable false --super-digest "$SUPER_DIGEST" \
            --container-check-interval-ms "$SWEEP_MS" >"$dir/m$i.stdout" 2>"$dir/m$i.log" </dev/null &
        pid=$!
        disown "$pid"
        PIDS+=("$pid")
        MEMBER_PIDS+=("$pid")
    done
    for i in 1 2 3; do
        srv_wait_ruok "${MEMBER_PORTS[$((i - 1))]}" "${MEMBER_PIDS[$((i - 1))]}" 60 || return 1
    done
}

mntr_value() {  # port key
    echo mntr | nc -q1 -w2 127.0.0.1 "$1" 2>/dev/null | awk -v k="$2" '$1 == k { print $2 }'
}

# ---------------------------------------------------------------- checks

PASSED=0
FAILED=0
FAILED_NAMES=()
pass() { echo "PASS $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $*"; FAILED=$((FAILED + 1)); FAILED_NAMES+=("${*%%:*}"); }
indent() { sed 's/^/    /'; }

# runs "zkimport.py compare", prints its lines and counts them
compare() {  # [types] label expected.json actual.json expected_name actual_name
    local out cmd=compare
    [ "$1" = types ] && { cmd=compare-types; shift; }
    out=$(timeout 60 "$PY" "$HERE/zkimport.py" "$cmd" "$@" 2>&1)
    echo "$out"
    local p f
    p=$(grep -c '^PASS ' <<<"$out")
    f=$(grep -c '^FAIL ' <<<"$out")
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    [ "$f" -gt 0 ] && FAILED_NAMES+=($(grep '^FAIL ' <<<"$out" | awk '{print $2}' | tr -d :))
    if [ $((p + f)) -eq 0 ]; then
        fail "$1/compare: the comparison did not run"
    fi
}

count_files() {  # dir prefix
    ls -1 "$1" 2>/dev/null | grep -c "^$2\."
}

# ---------------------------------------------------------------- one variant
#   kill     dataDir + separate dataLogDir, ZooKeeper killed with SIGKILL
#   clean    dataDir + separate dataLogDir, ZooKeeper stopped with SIGTERM
#   samedir  no dataLogDir (logs next to the snapshots), SIGKILL

run_variant() {
    local v="$1" d="$RUN_DIR/$1" logdir="" sig=KILL
    case "$v" in
        kill|ensemble) logdir="$d/zk/datalog" ;;
        clean) logdir="$d/zk/datalog"; sig=TERM ;;
        samedir) ;;
    esac
    mkdir -p "$d/zk/data" "$d/imported"
    [ -n "$logdir" ] && mkdir -p "$logdir"
    write_cfg "$d/zk/zoo.cfg" "$ZK_PORT" "$d/zk/data" "$logdir"
    local t0
    t0=$(date +%s)

    say "$v: ZooKeeper on 127.0.0.1:$ZK_PORT, workload"
    start_zk "$d/zk/zoo.cfg" "$ZK_PORT" "$d/zk/server.log"
    local zk_pid=$LAST_PID
    "$PY" "$HERE/zkimport.py" workload "127.0.0.1:$ZK_PORT" "$d/prestop.json" "$d/ready" "$d/zk/data/version-2" \
        >"$d/workload.log" 2>&1 </dev/null &
    local wl_pid=$!
    disown "$wl_pid"
    PIDS+=("$wl_pid")
    for _ in $(seq 1 600); do
        [ -f "$d/ready" ] && break
        kill -0 "$wl_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ ! -f "$d/ready" ]; then
        tail -n 30 "$d/workload.log" >&2
        die "$v: the workload did not finish (log: $d/workload.log)"
    fi
    say "$v: workload done ($(head -n 1 "$d/ready")), stopping ZooKeeper with SIG$sig"
    stop_pid "$zk_pid" "$sig"
    stop_pid "$wl_pid" KILL   # the holder session must not reconnect to the restarted server

    local snapdir="$d/zk/data/version-2" txndir="${logdir:-$d/zk/data}/version-2"
    local nsnap nlog
    nsnap=$(count_files "$snapdir" snapshot)
    nlog=$(count_files "$txndir" log)
    local shape="$nsnap snapshot.* in ${snapdir#$RUN_DIR/}, $nlog log.* in ${txndir#$RUN_DIR/}"
    if [ -n "$logdir" ] && [ "$(count_files "$snapdir" log)" -ne 0 ]; then
        fail "$v/shape: log files in dataDir although dataLogDir is set ($shape)"
    elif [ "$nsnap" -ge "$MIN_FILES" ] && [ "$nlog" -ge "$MIN_FILES" ]; then
        pass "$v/shape: $shape; $(sed -n 2p "$d/ready")"
    else
        fail "$v/shape: want at least $MIN_FILES of each: $shape"
    fi
    (cd "$d/zk" && ls -l data/version-2 ${logdir:+datalog/version-2}) >"$d/files.txt" 2>&1

    # import (before ZooKeeper restarts and writes a new snapshot)
    local imp_ok=1 s0 secs
    s0=$(date +%s%N)
    if [ "$BOTH_ZK" = "1" ]; then
        cp -a --sparse=always "$d/zk/data" "$d/imported/data"
        [ -n "$logdir" ] && cp -a --sparse=always "$logdir" "$d/imported/datalog"
        write_cfg "$d/imported/zoo.cfg" "$IMP_PORT" "$d/imported/data" "${logdir:+$d/imported/datalog}"
        pass "$v/import: copied the ZooKeeper directories (IMPORT_BOTH_ZK=1)"
    else
        local target="$d/imported/zkr"
        [ "$v" = ensemble ] && target="$d/imported/m1"
        local args=(import-zookeeper --zk-data-dir "$d/zk/data" --data-dir "$target")
        [ -n "$logdir" ] && args+=(--zk-data-log-dir "$logdir")
        echo "$ZKR_BIN ${args[*]}" >"$d/import.log"
        timeout 60 "$ZKR_BIN" "${args[@]}" >>"$d/import.log" 2>&1 </dev/null
        local rc=$?
        secs=$(( ($(date +%s%N) - s0) / 1000000 ))
        if [ "$rc" -eq 0 ]; then
            pass "$v/import: zkr import-zookeeper exit 0 (${secs} ms)"
        else
            fail "$v/import: zkr import-zookeeper exit $rc (log: $d/import.log)"
            tail -n 15 "$d/import.log" | indent
            imp_ok=0
        fi
    fi

    # restart ZooKeeper on the original data; start the imported side
    local sweep="-Dznode.container.checkIntervalMs=$SWEEP_MS"
    start_zk "$d/zk/zoo.cfg" "$ZK_PORT" "$d/zk/server-restarted.log" "$sweep"
    local zk2_pid=$LAST_PID zk2_start=$LAST_START imp_pid="" imp_start="" imp_name
    if [ "$imp_ok" -eq 1 ]; then
        if [ "$BOTH_ZK" = "1" ]; then
            imp_name=zookeeper2
            start_zk "$d/imported/zoo.cfg" "$IMP_PORT" "$d/imported/server.log" "$sweep"
            imp_pid=$LAST_PID imp_start=$LAST_START
        elif [ "$v" = ensemble ]; then
            imp_name=member-1
            if start_members "$d/imported"; then
                imp_pid=${MEMBER_PIDS[0]} imp_start=$LAST_START
                pass "$v/serve: 3 members serve, member 1 seeded from the import ($(grep -c 'seeded the ensemble' "$d/imported/m1.log") seed line in its log)"
            else
                fail "$v/serve: the ensemble seeded from the imported directory did not start (logs: $d/imported/m*.log)"
                for i in 1 2 3; do sed "s/\x1b\[[0-9;]*m//g" "$d/imported/m$i.log" | tail -n 6 | indent; done
                imp_ok=0
            fi
        else
            imp_name=zkr
            if start_zkr "$d/imported/zkr" "$IMP_PORT" "$d/imported/zkr.log"; then
                imp_pid=$LAST_PID imp_start=$LAST_START
            else
                fail "$v/serve: zkr did not start on the imported directory (log: $d/imported/zkr.log)"
                sed "s/\x1b\[[0-9;]*m//g" "$d/imported/zkr.log" | tail -n 15 | indent
                imp_ok=0
            fi
        fi
    fi

    # walk both right away: restored sessions expire after their timeout (40 s)
    timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:$ZK_PORT" "$d/zookeeper.json" --probe \
        2>"$d/walk-zookeeper.log" ||
        { cat "$d/walk-zookeeper.log" >&2; die "$v: walking the restarted ZooKeeper failed"; }
    if [ "$imp_ok" -eq 1 ] && [ "$v" = ensemble ]; then
        for i in 1 2 3; do
            if ! timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:${MEMBER_PORTS[$((i - 1))]}" "$d/member-$i.json" \
                --sync 2>"$d/walk-member-$i.log"; then
                fail "$v/walk: walking member $i failed (log: $d/walk-member-$i.log)"
                tail -n 8 "$d/walk-member-$i.log" | indent
                imp_ok=0
            fi
        done
    elif [ "$imp_ok" -eq 1 ]; then
        if ! timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:$IMP_PORT" "$d/$imp_name.json" --probe \
            2>"$d/walk-$imp_name.log"; then
            fail "$v/walk: walking $imp_name failed (log: $d/walk-$imp_name.log)"
            tail -n 8 "$d/walk-$imp_name.log" | indent
            imp_ok=0
        fi
    fi

    # the reference: ZooKeeper restarted on its data serves the tree it had
    compare "$v/reference" "$d/prestop.json" "$d/zookeeper.json" before-stop zookeeper-restarted
    if [ "$imp_ok" -eq 1 ] && [ "$v" = ensemble ]; then
        ensemble_checks "$d"
    elif [ "$imp_ok" -eq 1 ]; then
        compare "$v" "$d/zookeeper.json" "$d/$imp_name.json" zookeeper "$imp_name"

        # behaviour after the walk: containers / TTL nodes are swept once empty
        timeout 60 "$PY" "$HERE/zkimport.py" types "127.0.0.1:$ZK_PORT" "$d/types-zookeeper.json" \
            2>"$d/types-zookeeper.log" &
        local tp=$!
        timeout 60 "$PY" "$HERE/zkimport.py" types "127.0.0.1:$IMP_PORT" "$d/types-$imp_name.json" \
            2>"$d/types-$imp_name.log"
        local trc=$?
        wait "$tp" || die "$v: the types check failed on ZooKeeper: $(tail -n 1 "$d/types-zookeeper.log")"
        if [ "$trc" -ne 0 ]; then
            fail "$v/types: client error against $imp_name (log: $d/types-$imp_name.log)"
            tail -n 5 "$d/types-$imp_name.log" | indent
        else
            compare types "$v" "$d/types-zookeeper.json" "$d/types-$imp_name.json" zookeeper "$imp_name"
        fi

    fi
    if [ "$imp_ok" -eq 1 ]; then
        # kill and ensemble variants: the restored holder sessions expire after their timeout
        if [ "$v" = kill ] || [ "$v" = ensemble ]; then
            timeout 120 "$PY" "$HERE/zkimport.py" expiry "127.0.0.1:$ZK_PORT" "$zk2_start" \
                "$d/expiry-zookeeper.json" 2>"$d/expiry-zookeeper.log" &
            local ep=$!
            timeout 120 "$PY" "$HERE/zkimport.py" expiry "127.0.0.1:$IMP_PORT" "$imp_start" \
                "$d/expiry-$imp_name.json" 2>"$d/expiry-$imp_name.log"
            local erc=$?
            wait "$ep" || die "$v: the expiry check failed on ZooKeeper: $(tail -n 1 "$d/expiry-zookeeper.log")"
            local ez ei
            ez=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["gone_after"])' "$d/expiry-zookeeper.json")
            ei=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["gone_after"])' "$d/expiry-$imp_name.json" 2>/dev/null)
            local msg="ephemerals of the restored sessions gone ${ez}s after start on zookeeper, ${ei:-?}s on $imp_name (session timeout ${IMPORT_HOLDER_TIMEOUT}s)"
            if [ "$erc" -eq 0 ] && "$PY" -c 'import sys; t=float(sys.argv[1]); sys.exit(0 if all(v != "None" and t - 1 <= float(v) <= t + 8 for v in sys.argv[2:]) else 1)' \
                "$IMPORT_HOLDER_TIMEOUT" "$ez" "$ei"; then
                pass "$v/session-expiry: $msg"
            else
                fail "$v/session-expiry: $msg; want both within [timeout-1, timeout+8]"
            fi
        fi
        if [ -n "$imp_pid" ] && ! kill -0 "$imp_pid" 2>/dev/null; then
            fail "$v/alive: $imp_name exited during the checks"
        fi
    fi
    stop_pid "$zk2_pid" TERM
    if [ "$v" = ensemble ]; then
        for p in "${MEMBER_PIDS[@]}"; do stop_pid "$p" TERM; done
    elif [ -n "$imp_pid" ]; then
        stop_pid "$imp_pid" TERM
    fi
    say "$v: done in $(( $(date +%s) - t0 ))s"
}

# the ensemble variant's checks: every member serves ZooKeeper's tree (/zookeeper/config aside:
# an ensemble's lists its members), all three agree on zk_digest, and a new write gets a zxid
# above every imported one (the seed's term is above the imported epoch)
ensemble_checks() {
    local d=$1 i digests=() zxids=() max next
    for i in 1 2 3; do
        compare "$v/member-$i" "$d/zookeeper.json" "$d/member-$i.json" zookeeper "member-$i" --skip /zookeeper/config
    done
    for i in 1 2 3; do
        digests+=("$(mntr_value "${MEMBER_PORTS[$((i - 1))]}" zk_digest)")
        zxids+=("$(mntr_value "${MEMBER_PORTS[$((i - 1))]}" zk_digest_zxid)")
    done
    if [ -n "${digests[0]}" ] && [ "${digests[0]}" = "${digests[1]}" ] && [ "${digests[0]}" = "${digests[2]}" ] &&
        [ "${zxids[0]}" = "${zxids[1]}" ] && [ "${zxids[0]}" = "${zxids[2]}" ]; then
        pass "$v/digest: zk_digest ${digests[0]} at zxid ${zxids[0]} on all 3 members"
    else
        fail "$v/digest: members disagree: zk_digest ${digests[*]}, zk_digest_zxid ${zxids[*]}"
    fi
    max=$("$PY" "$HERE/zkimport.py" max-zxid "$d/zookeeper.json")
    next=$("$PY" - "127.0.0.1:${MEMBER_PORTS[1]}" <<'PY'
import sys
from kazoo.client import KazooClient
c = KazooClient(hosts=sys.argv[1], timeout=10)
c.start(timeout=15)
c.create("/zkr-import-ensemble-probe", b"x")
print("0x%x" % c.exists("/zkr-import-ensemble-probe").czxid)
c.delete("/zkr-import-ensemble-probe")
c.stop()
PY
)
    if [ -n "$next" ] && [ $((next)) -gt $((max)) ]; then
        pass "$v/zxid: a write through member 2 got zxid $next, above the highest imported zxid $max"
    else
        fail "$v/zxid: a write through member 2 got zxid '${next}', not above the highest imported zxid $max"
    fi
}

# . "$HERE/export.sh": the export and roundtrip variants (run_export, run_roundtrip)
# shellcheck source=export.sh
. "$HERE/export.sh"
# shellcheck source=wayback.sh
. "$HERE/wayback.sh"
# shellcheck source=adminsnap39.sh
. "$HERE/adminsnap39.sh"

T0=$(date +%s)
say "run directory $RUN_DIR; ports $ZK_PORT (ZooKeeper), $IMP_PORT (imported)"
[ "$BOTH_ZK" = "1" ] && say "IMPORT_BOTH_ZK=1: the imported side is a 2nd ZooKeeper on a copy of the data" ||
    say "zkr: $ZKR_SRC"
for v in "${VARIANTS[@]}"; do
    case "$v" in
        export) run_export ;;
        roundtrip) run_roundtrip ;;
        wayback) run_wayback ;;
        adminsnap) run_adminsnap ;;
        adminsnap39) run_adminsnap39 ;;
        *) run_variant "$v" ;;
    esac
done

[ "$FAILED" -gt 0 ] && say "failed: ${FAILED_NAMES[*]}; files in $RUN_DIR"
say "total time $(( $(date +%s) - T0 ))s"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
