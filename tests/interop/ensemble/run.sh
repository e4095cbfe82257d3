#!/usr/bin/env bash
# Real clients against a 3-member ensemble, zkr and Debian's ZooKeeper 3.8 side by side.
#
# Each side is three separate processes on 127.0.0.1 started from the same zoo.cfg shape
# (server.N=127.0.0.1:peer:election;client, myid in dataDir, tickTime/initLimit/syncLimit):
# `zkr serve --config zoo.cfg`, or `zkServer.sh start-foreground zoo.cfg`. On each side, in turn:
#   - EnsembleSession.java, the official Java client with the 3-host connect string: a session
#     with an ephemeral node and data/child/exist watches across kill -9 of its member, then of
#     the leader (see that file);
#   - EnsembleCurator.java, Curator 5 with ensembleTracker(true): what EnsembleTracker makes of
#     /zookeeper/config, and a PersistentNode, a LeaderLatch and an InterProcessMutex across
#     kill -9 of the connected member and of the leader.
# Then, zkr only, KeepClients.java: the Java client on a follower across a leader kill with
# zkr.keepClientsOnLeaderLoss=true (no Disconnected) and without (Disconnected, SyncConnected).
# The programs ask this script (lines starting with "@" on their stdout, see Ens.java) to find,
# kill and restart members. The checks each program makes are printed as PASS/FAIL lines for
# each side; after each SETTLE request this script checks that the running members agree
# (zkr: zk_digest and zk_digest_zxid of mntr; ZooKeeper, whose mntr has no digest: srvr's Zxid
# and zk_digest_mismatches_count 0). Finally each program's transcripts from both sides are
# normalised (session ids, zxids, ctime/mtime by lib/compare.py; ports and /zookeeper/config's
# version here) and must be equal, or differ only as known-differences.json says.
#
# Needs ZKR_BIN (default target/release/zkr); installs missing Debian packages. Ports: a block
# of 18 in 20000-20899 (see lib/servers.sh). KEEP_WORK=1 keeps the run directory (member logs,
# transcripts). Writes tests/interop/.work/matrix/ensemble.tsv. Prints PASS/FAIL lines and
# "N passed, M failed"; exit 1 if anything failed, 2 on a setup problem.
set -uo pipefail
STARTED=$SECONDS
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
ROOT="$(cd "$INTEROP/../.." && pwd)"
# shellcheck source=../lib/servers.sh
source "$INTEROP/lib/servers.sh"
PY=/usr/bin/python3
ZKR_BIN=${ZKR_BIN:-$ROOT/target/release/zkr}
[ -x "$ZKR_BIN" ] || { echo "no zkr binary at $ZKR_BIN (cargo build --release, or set ZKR_BIN)"; exit 2; }

# ---------------------------------------------------------------- dependencies, build
PKGS="zookeeper zookeeper-bin libzookeeper-java netcat-openbsd libcurator-framework-java libcurator-recipes-java"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=" $p"
done
command -v javac >/dev/null || missing+=" default-jdk-headless"
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing; } >/dev/null ||
        { echo "could not install:$missing"; exit 2; }
fi
CP=""
for j in zookeeper zookeeper-jute slf4j-api slf4j-nop netty-all commons-io curator-client curator-framework \
    curator-recipes guava; do
    [ -f "/usr/share/java/$j.jar" ] || { echo "/usr/share/java/$j.jar not found"; exit 2; }
    CP+="${CP:+:}/usr/share/java/$j.jar"
done
WORK=$(mktemp -d /tmp/zkr-ensemble.XXXXXX)
mkdir -p "$WORK/classes"
javac -nowarn -encoding UTF-8 -d "$WORK/classes" -cp "$CP" "$HERE"/*.java >"$WORK/javac.log" 2>&1 ||
    { cat "$WORK/javac.log"; rm -rf "$WORK"; exit 2; }
JAVA=(java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -cp "$WORK/classes:$CP")

# ---------------------------------------------------------------- members
# Ports: side zkr uses B..B+8, side zookeeper B+9..B+17: member i's client port base+i-1, peer
# port base+2+i, election port base+5+i.
B=$(srv_pick_base 20000 900 18) || { echo "no 18 free ports in 20000-20899"; exit 2; }
declare -A BASE=([zkr]=$B [zookeeper]=$((B + 9)))
declare -A PID=()    # "side i" -> pid of a running member
declare -A KILLED=() # "side i" -> 1 while killed by a program's request
client_port() { echo $((${BASE[$1]} + $2 - 1)); }
peer_port() { echo $((${BASE[$1]} + 2 + $2)); }
election_port() { echo $((${BASE[$1]} + 5 + $2)); }

cleanup() {
    local k
    for k in "${!PID[@]}"; do
        kill -9 "${PID[$k]}" 2>/dev/null
        wait "${PID[$k]}" 2>/dev/null
    done
    if [ "${KEEP_WORK:-}" = 1 ]; then echo "kept $WORK (KEEP_WORK=1)"; else rm -rf "$WORK"; fi
    echo "ensemble suite took $((SECONDS - STARTED))s"
}
trap cleanup EXIT

passed=0
failed=0
# fd 3 is the suite's output, also while stdout is a client program's stdin (SETTLE's checks)
exec 3>&1
pass() { echo "PASS ensemble/$1" >&3; passed=$((passed + 1)); }
fail() {
    echo "FAIL ensemble/$1: $2" >&3
    failed=$((failed + 1))
}

# write_config SIDE I: the member's zoo.cfg and myid, the same shape on both sides.
write_config() {
    local side=$1 i=$2 d="$WORK/$1/m$2" j
    mkdir -p "$d/data"
    echo "$i" >"$d/data/myid"
    {
        echo "tickTime=500"
        echo "initLimit=10"
        echo "syncLimit=5"
        echo "dataDir=$d/data"
        echo "maxClientCnxns=0"
        echo "minSessionTimeout=1000"
        echo "maxSessionTimeout=20000"
        echo "4lw.commands.whitelist=*"
        echo "admin.enableServer=false"
        for j in 1 2 3; do
            echo "server.$j=127.0.0.1:$(peer_port "$side" $j):$(election_port "$side" $j);$(client_port "$side" $j)"
        done
        [ "$side" = zkr ] && [ -n "${KEEP_CLIENTS:-}" ] && echo "zkr.keepClientsOnLeaderLoss=true"
    } >"$d/zoo.cfg"
}

start_member() {
    local side=$1 i=$2 d="$WORK/$1/m$2"
    if [ "$side" = zkr ]; then
        RUST_LOG=info "$ZKR_BIN" serve --config "$d/zoo.cfg" >>"$d.log" 2>&1 &
    else
        # start-foreground execs the JVM: $! is ZooKeeper itself (see tests/interop/README.md)
        ZOOCFGDIR="$d" ZOO_LOG_DIR="$d" \
            SERVER_JVMFLAGS="$ZK_LOGGING_FLAGS -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1" \
            /usr/share/zookeeper/bin/zkServer.sh start-foreground "$d/zoo.cfg" >>"$d.log" 2>&1 &
    fi
    PID["$side $i"]=$!
    unset "KILLED[$side $i]"
}

kill_member() {
    local side=$1 i=$2
    kill -9 "${PID[$side $i]}" 2>/dev/null
    wait "${PID[$side $i]}" 2>/dev/null
    unset "PID[$side $i]"
    KILLED["$side $i"]=1
}

running() { # SIDE: ids of the running members
    local i
    for i in 1 2 3; do [ -n "${PID[$1 $i]:-}" ] && echo "$i"; done
}
flw() { echo "$3" | timeout 5 nc -q1 127.0.0.1 "$(client_port "$1" "$2")" 2>/dev/null; }
mode() { flw "$1" "$2" srvr | sed -n 's/^Mode: //p'; }

# wait_settled SIDE SECONDS: every running member follows the one leader among them.
wait_settled() {
    local side=$1 deadline=$((SECONDS + $2)) i m leaders others
    while [ $SECONDS -lt "$deadline" ]; do
        leaders=0 others=0
        for i in $(running "$side"); do
            m=$(mode "$side" "$i")
            case $m in leader) leaders=$((leaders + 1)) ;; follower) ;; *) others=$((others + 1)) ;; esac
        done
        [ "$leaders" = 1 ] && [ "$others" = 0 ] && return 0
        sleep 0.2
    done
    return 1
}

# holder SIDE SID: the running member whose cons lists that session (retried: a client that
# just reconnected may not be listed yet).
holder() {
    local side=$1 sid=$2 i
    for _ in $(seq 25); do
        for i in $(running "$side"); do
            flw "$side" "$i" cons | grep -q "sid=$sid[,)]" && { echo "$i"; return 0; }
        done
        sleep 0.2
    done
    return 1
}

leader_of() {
    local side=$1 i
    for _ in $(seq 100); do
        for i in $(running "$side"); do
            [ "$(mode "$side" "$i")" = leader ] && { echo "$i"; return 0; }
        done
        sleep 0.2
    done
    return 1
}

live_addrs() {
    local side=$1 i out=""
    for i in $(running "$side"); do out+="127.0.0.1:$(client_port "$side" "$i"),"; done
    echo "${out%,}"
}

# settle SIDE LABEL: the running members agree on the state they applied.
settle() {
    local side=$1 label=$2 deadline=$((SECONDS + 20)) i seen why
    while :; do
        seen="" why=""
        for i in $(running "$side"); do
            if [ "$side" = zkr ]; then
                seen+="$(flw "$side" "$i" mntr | awk '$1=="zk_digest"||$1=="zk_digest_zxid"{printf "%s=%s ", $1, $2}')|"
            else
                seen+="zxid=$(flw "$side" "$i" srvr | sed -n 's/^Zxid: //p') $(flw "$side" "$i" mntr |
                    awk '$1=="zk_digest_mismatches_count"{printf "mismatches=%s", $2}')|"
            fi
        done
        if [ "$(tr '|' '\n' <<<"${seen%|}" | sort -u | wc -l)" = 1 ] && ! grep -q '=$\|= \|mismatches=[1-9]' <<<"$seen" &&
            [ "$(running "$side" | wc -l)" -ge 2 ]; then
            pass "$side/$PROG/$label: running members agree (${seen%%|*})"
            return
        fi
        [ $SECONDS -ge "$deadline" ] && break
        sleep 0.3
    done
    fail "$side/$PROG/$label" "running members disagree after 20s: $seen"
}

# answer SIDE REQUEST: one harness request of a client program (see Ens.java).
answer() {
    local side=$1 req=$2 i ids
    case $req in
        WHERE\ *)
            SID=${req#WHERE }
            if i=$(holder "$side" "${req#WHERE }"); then echo "member=$i mode=$(mode "$side" "$i")"; else echo "member=none"; fi
            ;;
        KILL_CONNECTED\ *)
            if i=$(holder "$side" "${req#KILL_CONNECTED }"); then
                local m
                m=$(mode "$side" "$i")
                kill_member "$side" "$i"
                echo "   $side/$PROG: killed member $i ($m), the one the session was on" >&3
                echo "killed=$i mode=$m"
            else
                echo "killed=none"
            fi
            ;;
        KILL_LEADER)
            if i=$(leader_of "$side"); then
                local h
                h=$(holder "$side" "$SID")
                kill_member "$side" "$i"
                echo "   $side/$PROG: killed member $i (leader); the session was on member ${h:-?}" >&3
                echo "killed=$i mode=leader"
            else
                echo "killed=none"
            fi
            ;;
        RESTART)
            ids=""
            for i in 1 2 3; do
                if [ -n "${KILLED[$side $i]:-}" ]; then
                    start_member "$side" "$i"
                    ids+="$i,"
                fi
            done
            if wait_settled "$side" 60 && [ "$(running "$side" | wc -l)" = 3 ]; then
                echo "restarted=${ids%,}"
            else
                echo "restart_failed"
            fi
            ;;
        LIVE) live_addrs "$side" ;;
        OTHER\ *)
            local h
            h=$(holder "$side" "${req#OTHER }")
            for i in $(running "$side"); do
                [ "$i" != "$h" ] && { echo "127.0.0.1:$(client_port "$side" "$i")"; return; }
            done
            echo "none"
            ;;
        SETTLE\ *)
            settle "$side" "${req#SETTLE }"
            echo ok
            ;;
        *) echo "unknown request" ;;
    esac
}

# run_program SIDE PROGRAM [ARG]: runs it against SIDE's ensemble, answering its requests; the
# transcript goes to $WORK/NAME.SIDE.txt, its stderr to .err (NAME: PROGRAM, or PROGRAM-ARG).
run_program() {
    local side=$1 prog=$2 arg=${3:-} name=$2${3:+-$3} line connect="" i
    local out="$WORK/$name.$side.txt"
    for i in 1 2 3; do connect+="127.0.0.1:$(client_port "$side" "$i"),"; done
    : >"$out"
    # shellcheck disable=SC2086 # ARG is one word or none
    coproc CLIENT { timeout 200 "${JAVA[@]}" "$prog" "${connect%,}" $arg 2>"$WORK/$name.$side.err"; }
    local cin=${CLIENT[1]} cout=${CLIENT[0]} cpid=$CLIENT_PID
    while IFS= read -r line <&"$cout"; do
        case $line in
            @*) answer "$side" "${line#@}" >&"$cin" ;;
            *) echo "$line" >>"$out" ;;
        esac
        # the program's own checks ({"check": NAME, "detail": …, "ok": BOOL, "step": "check"})
        if [[ $line =~ ^\{\"check\":\ \"([^\"]+)\",\ \"detail\":\ (.*),\ \"ok\":\ (true|false),\ \"step\":\ \"check\"\}$ ]]; then
            if [ "${BASH_REMATCH[3]}" = true ]; then
                pass "$side/$name/${BASH_REMATCH[1]}"
            else
                fail "$side/$name/${BASH_REMATCH[1]}" "${BASH_REMATCH[2]:0:600}"
            fi
        fi
    done
    wait "$cpid"
    echo $? >"$WORK/$name.$side.rc"
}

# start_side SIDE: the three members, until one leads and two follow.
start_side() {
    local side=$1 i
    for i in 1 2 3; do write_config "$side" "$i"; done
    for i in 1 2 3; do start_member "$side" "$i"; done
    for i in 1 2 3; do
        srv_wait_ruok "$(client_port "$side" "$i")" "${PID[$side $i]}" 90 ||
            srv_diagnose "$side member $i" "$(client_port "$side" "$i")" "${PID[$side $i]}" "$WORK/$side/m$i.log"
    done
    if wait_settled "$side" 60; then
        pass "$side/start: one leader, two followers ($(for i in 1 2 3; do printf '%s=%s ' "$i" "$(mode "$side" "$i")"; done))"
    else
        fail "$side/start" "no settled ensemble after 60s"
    fi
}

stop_side() {
    local side=$1 i
    for i in 1 2 3; do [ -n "${PID[$side $i]:-}" ] && kill_member "$side" "$i"; done
}

# report SIDE PROGRAM: the program ran to its end.
report() {
    local side=$1 prog=$2 rc
    rc=$(cat "$WORK/$prog.$side.rc" 2>/dev/null || echo "?")
    if [ "$rc" = 0 ] && grep -q '"step": "end"' "$WORK/$prog.$side.txt"; then
        pass "$side/$prog: ran to the end"
    else
        fail "$side/$prog" "exit status $rc; last lines of its stderr:"
        tail -n 25 "$WORK/$prog.$side.err" | sed 's/^/    /'
    fi
}

# normalise SIDE FILE: member ports become names (the ports differ between the sides).
normalise_ports() {
    local side=$1 i expr=()
    for i in 1 2 3; do
        expr+=(-e "s/\\b$(client_port "$side" "$i")\\b/CLIENT$i/g" -e "s/\\b$(peer_port "$side" "$i")\\b/PEER$i/g"
            -e "s/\\b$(election_port "$side" "$i")\\b/ELECTION$i/g")
    done
    sed "${expr[@]}" "$2"
}

# ENSEMBLE_SIDES / ENSEMBLE_PROGRAMS narrow a run while working on the suite (the comparison
# then fails for lack of the other side).
read -r -a PROGRAMS <<<"${ENSEMBLE_PROGRAMS:-EnsembleSession EnsembleCurator}"
for side in ${ENSEMBLE_SIDES:-zkr zookeeper}; do
    echo "== $side: 3 members"
    start_side "$side"
    for PROG in "${PROGRAMS[@]}"; do
        t0=$SECONDS
        run_program "$side" "$PROG"
        # put the killed members back for the next program
        [ -n "$(for k in "${!KILLED[@]}"; do [[ $k == "$side "* ]] && echo x; done)" ] &&
            answer "$side" RESTART >/dev/null
        report "$side" "$PROG"
        echo "   ($side/$PROG took $((SECONDS - t0))s)"
    done
    if [ "$failed" -gt 0 ]; then
        for i in 1 2 3; do
            echo "--- last lines of $side member $i's log"
            tail -n 12 "$WORK/$side/m$i.log" 2>/dev/null | cut -c1-300
        done
    fi
    stop_side "$side"
done

# ---------------------------------------------------------------- zkr.keepClientsOnLeaderLoss
# zkr only (ZooKeeper has no such option): the Java client on a follower across a leader kill,
# with the option (no Disconnected) and without (Disconnected then SyncConnected, as above).
if [[ " ${ENSEMBLE_SIDES:-zkr zookeeper} " == *" zkr "* ]]; then
    for mode in keep drop; do
        t0=$SECONDS
        echo "== zkr, $mode: 3 members$([ $mode = keep ] && echo ', zkr.keepClientsOnLeaderLoss=true')"
        # the programs' member logs stay for the comparison's diagnosis below
        [ -d "$WORK/zkr-programs" ] || mv "$WORK/zkr" "$WORK/zkr-programs"
        rm -rf "${WORK:?}/zkr"
        KEEP_CLIENTS=$([ $mode = keep ] && echo 1)
        start_side zkr
        run_program zkr KeepClients "$mode"
        report zkr "KeepClients-$mode"
        echo "   (zkr/KeepClients-$mode took $((SECONDS - t0))s)"
        stop_side zkr
    done
    KEEP_CLIENTS=""
fi

# ---------------------------------------------------------------- ZooKeeper vs zkr
# explain_zkr PROGRAM: what zkr's members did while PROGRAM ran (roles, connections closed or
# refused, sessions moved, forward streams), beside the program's own account on stderr.
explain_zkr() {
    local logs="$WORK/zkr-programs" i
    [ -d "$logs" ] || logs="$WORK/zkr"
    echo "--- $1 on zkr: the program's stderr"
    cut -c1-300 "$WORK/$1.zkr.err" 2>/dev/null | grep -v '^\s*at ' | tail -n 30 | sed 's/^/    /'
    for i in 1 2 3; do
        echo "--- zkr member $i: roles, closed and refused connections, moved sessions"
        grep -hE 'ensemble role|refusing|closing|re-attached elsewhere|moved|forward stream|without a quorum|leader is gone|expired|election' \
            "$logs/m$i.log" 2>/dev/null | grep -v 'openraft::' | cut -c1-260 | tail -n 40 | sed 's/^/    /'
    done
}

MATRIX_TSV="$INTEROP/.work/matrix/ensemble.tsv"
mkdir -p "$(dirname "$MATRIX_TSV")"
: >"$MATRIX_TSV"
for PROG in "${PROGRAMS[@]}"; do
    for side in zookeeper zkr; do normalise_ports "$side" "$WORK/$PROG.$side.txt" >"$WORK/$PROG.$side.norm"; done
    for side in zookeeper zkr; do
        echo "--- $PROG on $side (normalised)"
        "$PY" "$INTEROP/lib/compare.py" --format json --show "$WORK/$PROG.$side.norm" | cut -c1-400 | sed 's/^/    /'
    done
    if "$PY" "$INTEROP/lib/compare.py" --format json --scenario "ensemble/$PROG" \
        --known "$INTEROP/known-differences.json" --max-lines=80 \
        "$WORK/$PROG.zookeeper.norm" "$WORK/$PROG.zkr.norm" >"$WORK/$PROG.diff"; then
        pass "$PROG: zkr transcript = ZooKeeper transcript ($(wc -l <"$WORK/$PROG.zkr.norm") lines)"
        cmp=0
    else
        fail "$PROG" "transcripts differ (- ZooKeeper, + zkr):"
        sed 's/^/    /' "$WORK/$PROG.diff"
        explain_zkr "$PROG"
        cmp=1
    fi
    case $PROG in
        EnsembleSession) label="Java client, 3-member ensemble (Debian zookeeper.jar 3.8)" ;;
        EnsembleCurator) label="Curator 5, 3-member ensemble (Debian libcurator-java)" ;;
    esac
    # one row per check the program makes, then the transcript comparison
    "$PY" - "$WORK/$PROG.zookeeper.txt" "$WORK/$PROG.zkr.txt" "$label" "$cmp" >>"$MATRIX_TSV" <<'PY'
import json, sys
def checks(path):
    out = {}
    try:
        for line in open(path, encoding="utf-8"):
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if v.get("step") == "check":
                out[v["check"]] = out.get(v["check"], True) and v["ok"]
    except OSError:
        pass
    return out
zk, zkr = checks(sys.argv[1]), checks(sys.argv[2])
for name in list(dict.fromkeys(list(zk) + list(zkr))):
    res = lambda d: "missing" if name not in d else ("pass" if d[name] else "fail")
    print("\t".join([sys.argv[3], name.replace("_", " "), res(zk), res(zkr), ""]))
print("\t".join([sys.argv[3], "normalised transcript equal to ZooKeeper's", "ok", "ok" if sys.argv[4] == "0" else "differs", ""]))
PY
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
