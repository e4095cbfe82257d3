# The way back from a zkr ensemble, sourced by run.sh (uses its helpers: start_members,
# export_workload, export_check_reattach, start_zk, compare, pass, fail).
#
#   wayback    three zkr members with zkr.zookeeperPasswords=true (as `zkr takeover` leaves them)
#              serve the workload (snapCount 50: Raft snapshots and log entries after them) and are
#              stopped with SIGTERM while the workload's holder sessions are open; each member's
#              data directory is exported (`--myid i`); Debian's ZooKeeper 3.8 starts as a
#              3-member ensemble on the exports, on the same client, quorum and election ports;
#              every member must serve the tree zkr served (every field, /zookeeper/config aside:
#              each side's lists its own members), the three exports the same zxid, the holder
#              sessions (born on zkr) must re-attach with the passwords zkr gave them, and a
#              write must get a zxid above the exported one. Then ZooKeeper 3.9.5 from Maven Central
#              (tests/interop/zab/zk39/pom.xml) starts standalone on a snappy export of member 1 and must
#              serve the same tree and take the holders' re-attach; and as a 3-member ensemble on new
#              exports made with `--config m<i>.cfg` (the zkr members' zoo.cfg, which carries
#              snapshot.compression.method=gz: the export must write snapshot.<zxid>.gz), with the
#              same checks as the 3.8 ensemble. An unknown method in a zoo.cfg must be refused.

# the three ZooKeeper members' zoo.cfg on the exports (<dir>/<name><i>.cfg, dataDir <dir>/<name><i>):
# the zkr members' ports, ZooKeeper's keys
write_zk_member_cfgs() {  # dir [name]
    local dir=$1 name=${2:-zk} i j
    for i in 1 2 3; do
        write_cfg "$dir/$name$i.cfg" "${MEMBER_PORTS[$((i - 1))]}" "$dir/$name$i"
        {
            echo "initLimit=10"
            echo "syncLimit=5"
            for j in 1 2 3; do
                echo "server.$j=127.0.0.1:$((PEER_BASE + j - 1)):$((PEER_BASE + j + 2))"
            done
        } >>"$dir/$name$i.cfg"
    done
}

# waits until the three ZooKeeper members have formed a quorum -> 0, or 1 after 90 s
wait_zk_quorum() {
    local i modes
    for _ in $(seq 1 180); do
        modes=""
        for i in 1 2 3; do
            modes+="$(echo srvr | nc -q1 -w2 127.0.0.1 "${MEMBER_PORTS[$((i - 1))]}" 2>/dev/null | awk '/^Mode:/ {print $2}') "
        done
        [ "$(grep -o -E 'leader|follower' <<<"$modes" | wc -l)" -eq 3 ] && { WAYBACK_MODES=$modes; return 0; }
        sleep 0.5
    done
    WAYBACK_MODES=$modes
    return 1
}

run_wayback() {
    local v=wayback d="$RUN_DIR/wayback" t0 i zxids=() pids=() next max
    t0=$(date +%s)
    [ "$BOTH_ZK" = "1" ] && { say "wayback: skipped (IMPORT_BOTH_ZK=1 has no zkr)"; return; }
    mkdir -p "$d"
    say "wayback: 3 zkr members on ${MEMBER_PORTS[*]}, workload through member 1"
    # snapshot.compression.method: zkr serve starts with it (and ignores it); the 3.9 ensemble's
    # exports read it with --config
    MEMBER_EXTRA_CFG=$'zkr.zookeeperPasswords=true\nsnapshot.compression.method=gz' start_members "$d" ||
        die "wayback: the zkr ensemble did not start (logs: $d/m*.log)"
    export_workload "127.0.0.1:${MEMBER_PORTS[0]}" "$d/m1/raft/snap"
    # every member applies everything and hears the commit point before it stops
    for i in 1 2 3; do
        "$PY" -c 'import sys; from kazoo.client import KazooClient as K; c=K(hosts=sys.argv[1]); c.start(15); c.sync("/"); c.stop()' \
            "127.0.0.1:${MEMBER_PORTS[$((i - 1))]}" 2>>"$d/sync.log" || fail "wayback/sync: member $i"
    done
    sleep 2
    say "wayback: workload done ($(head -n 1 "$d/ready")), stopping the members with SIGTERM"
    for i in 1 2 3; do stop_pid "${MEMBER_PIDS[$((i - 1))]}" TERM; done
    stop_pid "$WL_PID" KILL

    for i in 1 2 3; do
        if timeout 60 "$ZKR_BIN" export-zookeeper --data-dir "$d/m$i" --zk-data-dir "$d/zk$i" --myid "$i" \
            >"$d/export-$i.log" 2>&1 </dev/null; then
            zxids+=("$(grep -o -E 'exported zxid 0x[0-9a-f]+' "$d/export-$i.log" | awk '{print $3}')")
        else
            fail "wayback/export: member $i: zkr export-zookeeper failed: $(tail -n 3 "$d/export-$i.log")"
            return
        fi
    done
    if [ -n "${zxids[0]}" ] && [ "${zxids[0]}" = "${zxids[1]}" ] && [ "${zxids[0]}" = "${zxids[2]}" ]; then
        pass "wayback/export: 3 member directories exported at the same zxid ${zxids[0]}: $(grep -h 'committed log' "$d/export-1.log" | head -c 120)"
    else
        fail "wayback/export: the members' exports differ: zxids ${zxids[*]}"
    fi
    if grep -q "sessions (imported" "$d"/export-*.log; then
        fail "wayback/export: some sessions lack ZooKeeper's password: $(grep -h 'of the sessions' "$d"/export-*.log | head -n 1)"
    fi

    say "wayback: ZooKeeper 3.8 as a 3-member ensemble on the exports"
    write_zk_member_cfgs "$d"
    for i in 1 2 3; do
        start_zk "$d/zk$i.cfg" "${MEMBER_PORTS[$((i - 1))]}" "$d/zk$i.log" "-Dznode.container.checkIntervalMs=$SWEEP_MS"
        pids+=("$LAST_PID")
    done
    if wait_zk_quorum; then
        pass "wayback/quorum: ZooKeeper's 3 members formed an ensemble on the exports: $WAYBACK_MODES"
    else
        fail "wayback/quorum: no ZooKeeper ensemble on the exports: $WAYBACK_MODES (logs: $d/zk*.log)"
        for i in 0 1 2; do stop_pid "${pids[$i]}" TERM; done
        return
    fi
    for i in 1 2 3; do
        if timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:${MEMBER_PORTS[$((i - 1))]}" "$d/zookeeper-$i.json" \
            2>"$d/walk-zookeeper-$i.log"; then
            compare "wayback-zk$i" "$d/prestop.json" "$d/zookeeper-$i.json" zkr-ensemble "zookeeper-member-$i" \
                --skip /zookeeper/config
        else
            fail "wayback-zk$i/walk: walking ZooKeeper member $i failed"
        fi
    done
    # the holders were born on zkr with zkr.zookeeperPasswords=true: they re-attach to ZooKeeper
    ZK_PORT=${MEMBER_PORTS[1]} export_check_reattach wayback "$d/sessions.json" "$d/reattach.json" attached
    max=${zxids[0]}
    next=$("$PY" - "127.0.0.1:${MEMBER_PORTS[2]}" <<'PY'
import sys
from kazoo.client import KazooClient
c = KazooClient(hosts=sys.argv[1], timeout=10)
c.start(timeout=15)
c.create("/zkr-wayback-probe", b"x")
print("0x%x" % c.exists("/zkr-wayback-probe").czxid)
c.stop()
PY
)
    if [ -n "$next" ] && [ $((next)) -gt $((max)) ]; then
        pass "wayback/zxid: a write on ZooKeeper got zxid $next, above the exported $max"
    else
        fail "wayback/zxid: a write on ZooKeeper got zxid '${next}', not above the exported $max"
    fi
    for i in 0 1 2; do stop_pid "${pids[$i]}" TERM; done
    wayback_zk39 "$d"
    wayback_zk39_ensemble "$d" "$max"
    say "wayback: done in $(( $(date +%s) - t0 ))s"
}

# ZooKeeper 3.9.5 from Maven Central (tests/interop/zab/zk39/pom.xml) on a second export of member 1:
# it must serve the tree zkr served and take the holder sessions' re-attach
wayback_zk39() {  # dir
    local d=$1 pid port=${MEMBER_PORTS[0]}
    if ! zk39_classpath "$d"; then
        fail "wayback-zk39/maven: Maven could not resolve ZooKeeper 3.9.5 (log: $d/mvn-zk39.log)"
        return
    fi
    if ! timeout 60 "$ZKR_BIN" export-zookeeper --data-dir "$d/m1" --zk-data-dir "$d/zk39" --compression snappy \
        >"$d/export-zk39.log" 2>&1 </dev/null; then
        fail "wayback-zk39/export: $(tail -n 2 "$d/export-zk39.log")"
        return
    fi
    write_cfg "$d/zk39.cfg" "$port" "$d/zk39"
    if ! start_zk39 "$d/zk39.cfg" "$port" "$d/zk39.log"; then
        fail "wayback-zk39/start: ZooKeeper 3.9.5 did not start on the snappy export (log: $d/zk39.log)"
        stop_pid "$LAST_PID" TERM
        return
    fi
    pid=$LAST_PID
    pass "wayback-zk39/start: ZooKeeper 3.9.5 (Maven Central) serves the snappy export of member 1"
    if timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:$port" "$d/zookeeper-39.json" 2>"$d/walk-zk39.log"; then
        compare wayback-zk39 "$d/prestop.json" "$d/zookeeper-39.json" zkr-ensemble zookeeper-3.9.5 --skip /zookeeper/config
    else
        fail "wayback-zk39/walk: walking ZooKeeper 3.9.5 failed"
    fi
    ZK_PORT=$port export_check_reattach wayback-zk39 "$d/sessions.json" "$d/reattach-39.json" attached
    stop_pid "$pid" TERM
}

# ZooKeeper 3.9.5 as a 3-member ensemble on new exports of the three members, each made with
# --config m<i>.cfg (dataDir and snapshot.compression.method=gz from the zkr member's zoo.cfg): the
# 3.8 ensemble's checks (every member serves what zkr served, the holders re-attach, a write gets a
# zxid above the exported one); before that, an unknown method is refused and nothing written
wayback_zk39_ensemble() {  # dir exported_zxid
    local d=$1 max=$2 i t0 pids=() walks=() next files ok=1
    t0=$(date +%s)
    [ -n "${ZK39_CP:-}" ] || { fail "wayback-zk39e/maven: no ZooKeeper 3.9.5 classpath"; return; }
    sed 's/^snapshot.compression.method=.*/snapshot.compression.method=gzip/' "$d/m1.cfg" >"$d/m1-bad.cfg"
    timeout 60 "$ZKR_BIN" export-zookeeper --config "$d/m1-bad.cfg" --zk-data-dir "$d/zk39-bad" \
        >"$d/export-zk39-bad.log" 2>&1 </dev/null
    local rc=$? line
    line=$(grep -n '^snapshot.compression.method=' "$d/m1-bad.cfg" | cut -d: -f1)
    if [ "$rc" -eq 2 ] && [ ! -e "$d/zk39-bad" ] &&
        grep -q -F "$d/m1-bad.cfg:$line: snapshot.compression.method must be gz, snappy or empty" "$d/export-zk39-bad.log"; then
        pass "wayback-zk39e/refused: an unknown snapshot.compression.method (gzip) is refused with the file and line, nothing written"
    else
        fail "wayback-zk39e/refused: exit $rc, want 2 and the file:line: $(tail -n 2 "$d/export-zk39-bad.log")"
    fi
    for i in 1 2 3; do
        if ! timeout 60 "$ZKR_BIN" export-zookeeper --config "$d/m$i.cfg" --zk-data-dir "$d/zk39-$i" --myid "$i" \
            >"$d/export-zk39-$i.log" 2>&1 </dev/null; then
            fail "wayback-zk39e/export: member $i: $(tail -n 2 "$d/export-zk39-$i.log")"
            return
        fi
        files+="$(ls "$d/zk39-$i/version-2" | grep '^snapshot\.' | tr '\n' ' ')"
        grep -q -F "exported zxid $max:" "$d/export-zk39-$i.log" || ok=0
        grep -q -F "snapshot.compression.method=gz from $d/m$i.cfg:" "$d/export-zk39-$i.log" || ok=0
    done
    if [ "$ok" -eq 1 ] && [ "$files" = "snapshot.${max#0x}.gz snapshot.${max#0x}.gz snapshot.${max#0x}.gz " ]; then
        pass "wayback-zk39e/export: --config m<i>.cfg: dataDir and snapshot.compression.method=gz from zoo.cfg, 3 exports at $max: $files"
    else
        fail "wayback-zk39e/export: want snapshot.${max#0x}.gz from each member's zoo.cfg: $files(logs: $d/export-zk39-*.log)"
    fi

    say "wayback: ZooKeeper 3.9.5 as a 3-member ensemble on the --config exports"
    write_zk_member_cfgs "$d" zk39-
    for i in 1 2 3; do
        echo "snapshot.compression.method=gz" >>"$d/zk39-$i.cfg"
        launch_zk39 "$d/zk39-$i.cfg" "$d/zk39-$i.log"
        pids+=("$LAST_PID")
    done
    if wait_zk_quorum; then
        pass "wayback-zk39e/quorum: ZooKeeper 3.9.5's 3 members formed an ensemble on the exports in $(( $(date +%s) - t0 ))s: $WAYBACK_MODES"
    else
        fail "wayback-zk39e/quorum: no ZooKeeper 3.9.5 ensemble on the exports: $WAYBACK_MODES (logs: $d/zk39-*.log)"
        for i in 0 1 2; do stop_pid "${pids[$i]}" TERM; done
        return
    fi
    # first, within the holders' session timeout counted from the ensemble's start
    ZK_PORT=${MEMBER_PORTS[1]} export_check_reattach wayback-zk39e "$d/sessions.json" "$d/reattach-39e.json" attached
    for i in 1 2 3; do
        timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:${MEMBER_PORTS[$((i - 1))]}" "$d/zookeeper-39e-$i.json" \
            2>"$d/walk-zk39e-$i.log" &
        walks+=("$!")
    done
    for i in 1 2 3; do
        if wait "${walks[$((i - 1))]}"; then
            compare "wayback-zk39e-$i" "$d/prestop.json" "$d/zookeeper-39e-$i.json" zkr-ensemble "zookeeper-3.9.5-member-$i" \
                --skip /zookeeper/config
        else
            fail "wayback-zk39e-$i/walk: walking ZooKeeper 3.9.5 member $i failed (log: $d/walk-zk39e-$i.log)"
        fi
    done
    next=$("$PY" - "127.0.0.1:${MEMBER_PORTS[2]}" <<'PY'
import sys
from kazoo.client import KazooClient
c = KazooClient(hosts=sys.argv[1], timeout=10)
c.start(timeout=15)
c.create("/zkr-wayback-probe-39", b"x")
print("0x%x" % c.exists("/zkr-wayback-probe-39").czxid)
c.stop()
PY
)
    if [ -n "$next" ] && [ $((next)) -gt $((max)) ]; then
        pass "wayback-zk39e/zxid: a write on ZooKeeper 3.9.5 got zxid $next, above the exported $max"
    else
        fail "wayback-zk39e/zxid: a write on ZooKeeper 3.9.5 got zxid '${next}', not above the exported $max"
    fi
    for i in 0 1 2; do stop_pid "${pids[$i]}" TERM; done
    say "wayback: ZooKeeper 3.9.5 ensemble done in $(( $(date +%s) - t0 ))s"
}
