# The way back, sourced by run.sh (uses its helpers: start_zk, start_zkr, stop_pid, compare, pass, fail).
#
#   export     zkr serves the workload (snapCount 50: snapshots and log), is killed; `zkr
#              export-zookeeper` writes a plain and a snappy ZooKeeper dataDir; ZooKeeper 3.8 on
#              each must serve the tree zkr served (data, ACL, every Stat field); on the plain one
#              the zkr-born sessions' re-attach is refused (their passwords are zkr's), containers
#              and TTL nodes behave as such, and the ephemerals stay until their sessions expire.
#   roundtrip  ZooKeeper serves the workload and is killed; zkr imports it, serves more writes,
#              is stopped; the export (gzip) started as ZooKeeper serves what zkr served, and a
#              session born on the first ZooKeeper re-attaches with its ZooKeeper password.

export_check_reattach() {  # label sessions.json out.json want(attached|refused) [--close-first]
    local label=$1 sessions=$2 out=$3 want=$4
    if ! timeout 60 "$PY" "$HERE/zkimport.py" reattach "127.0.0.1:$ZK_PORT" "$sessions" "$out" "${@:5}" \
        2>"$out.log"; then
        fail "$label/reattach: client error (log: $out.log)"
        return
    fi
    local got
    got=$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(" ".join("%s=%s" % (s["id"], "attached" if s["attached"] else "refused") for s in r))' "$out")
    if [ "$want" = attached ] && ! grep -q refused <<<"$got" && [ -n "$got" ]; then
        pass "$label/reattach: ZooKeeper accepts the sessions' ZooKeeper passwords: $got"
    elif [ "$want" = refused ] && ! grep -q "=attached" <<<"$got" && [ -n "$got" ]; then
        pass "$label/reattach: zkr-born sessions cannot re-attach to ZooKeeper (passwords differ, as the README says): $got"
    else
        fail "$label/reattach: want every session $want: $got"
    fi
}

export_check_expiry() {  # label start_time
    timeout 120 "$PY" "$HERE/zkimport.py" expiry "127.0.0.1:$ZK_PORT" "$2" "$d/expiry-$1.json" \
        2>"$d/expiry-$1.log"
    local rc=$? gone
    gone=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["gone_after"])' "$d/expiry-$1.json" 2>/dev/null)
    if [ "$rc" -eq 0 ] && "$PY" -c 'import sys; t=float(sys.argv[1]); v=sys.argv[2]; sys.exit(0 if v != "None" and t - 1 <= float(v) <= t + 8 else 1)' \
        "$IMPORT_HOLDER_TIMEOUT" "$gone"; then
        pass "$1/session-expiry: the exported ephemerals were served until their sessions expired, gone ${gone}s after ZooKeeper started (timeout ${IMPORT_HOLDER_TIMEOUT}s)"
    else
        fail "$1/session-expiry: ephemerals gone after ${gone:-?}s; want within [timeout-1, timeout+8]"
    fi
}

export_zk() {  # label compression target -> exports into target; 0 if it worked
    local args=(export-zookeeper --data-dir "$d/zkr" --zk-data-dir "$3")
    [ "$2" != plain ] && args+=(--compression "$2")
    echo "$ZKR_BIN ${args[*]}" >>"$d/export.log"
    if timeout 60 "$ZKR_BIN" "${args[@]}" >>"$d/export.log" 2>&1 </dev/null; then
        pass "$1/export: zkr export-zookeeper exit 0: $(ls "$3/version-2" | tr '\n' ' ')"
        return 0
    fi
    fail "$1/export: zkr export-zookeeper failed (log: $d/export.log)"
    tail -n 5 "$d/export.log" | indent
    return 1
}

start_zk_on() {  # dataDir logfile -> ZK_ON_PID, ZK_ON_START
    write_cfg "$1.cfg" "$ZK_PORT" "$1"
    start_zk "$1.cfg" "$ZK_PORT" "$2" "-Dznode.container.checkIntervalMs=$SWEEP_MS"
    ZK_ON_PID=$LAST_PID ZK_ON_START=$LAST_START
}

export_workload() {  # addr snapdir: runs the workload until ready -> WL_PID
    WORKLOAD_QUOTA=1 IMPORT_SESSIONS_OUT="$d/sessions.json" "$PY" "$HERE/zkimport.py" workload "$1" \
        "$d/prestop.json" "$d/ready" "$2" >"$d/workload.log" 2>&1 </dev/null &
    WL_PID=$!
    disown "$WL_PID"
    PIDS+=("$WL_PID")
    for _ in $(seq 1 600); do
        [ -f "$d/ready" ] && return 0
        kill -0 "$WL_PID" 2>/dev/null || break
        sleep 0.1
    done
    tail -n 30 "$d/workload.log" >&2
    die "$v: the workload did not finish (log: $d/workload.log)"
}

run_export() {
    local v=export d="$RUN_DIR/export" t0
    t0=$(date +%s)
    [ "$BOTH_ZK" = "1" ] && { say "export: skipped (IMPORT_BOTH_ZK=1 has no zkr)"; return; }
    mkdir -p "$d"
    say "export: zkr on 127.0.0.1:$IMP_PORT, workload"
    start_zkr "$d/zkr" "$IMP_PORT" "$d/zkr.log" --snap-count 50 || die "export: zkr did not start (log: $d/zkr.log)"
    local zkr_pid=$LAST_PID
    export_workload "127.0.0.1:$IMP_PORT" "$d/zkr/snap"
    say "export: workload done ($(head -n 1 "$d/ready")), stopping zkr with SIGKILL"
    stop_pid "$zkr_pid" KILL
    stop_pid "$WL_PID" KILL

    # a used target is refused and left alone
    mkdir -p "$d/used" && echo mine >"$d/used/keep"
    if "$ZKR_BIN" export-zookeeper --data-dir "$d/zkr" --zk-data-dir "$d/used" >"$d/refused.log" 2>&1; then
        fail "export/refuse-used: exit 0 into a non-empty directory"
    elif grep -q "not empty" "$d/refused.log" && [ "$(ls "$d/used")" = keep ]; then
        pass "export/refuse-used: a non-empty target is refused and left as it was: $(head -c 160 "$d/refused.log")"
    else
        fail "export/refuse-used: unclear refusal or the target changed: $(cat "$d/refused.log")"
    fi

    local c
    for c in plain snappy; do
        export_zk "export-$c" "$c" "$d/zk-$c" || continue
        say "export: ZooKeeper on the $c export"
        start_zk_on "$d/zk-$c" "$d/zk-$c.log"
        timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:$ZK_PORT" "$d/zookeeper-$c.json" \
            2>"$d/walk-zookeeper-$c.log" || { fail "export-$c/walk: walking ZooKeeper failed"; stop_pid "$ZK_ON_PID" TERM; continue; }
        compare "export-$c" "$d/prestop.json" "$d/zookeeper-$c.json" zkr-before-stop "zookeeper-on-export"
        if [ "$c" = plain ]; then
            export_check_reattach export "$d/sessions.json" "$d/reattach.json" refused
            if timeout 60 "$PY" "$HERE/zkimport.py" types "127.0.0.1:$ZK_PORT" "$d/types.json" 2>"$d/types.log"; then
                compare types export "$d/types.json" "$d/types.json" zookeeper zookeeper
            else
                fail "export/types: client error (log: $d/types.log)"
            fi
            export_check_expiry export "$ZK_ON_START"
        fi
        stop_pid "$ZK_ON_PID" TERM
    done
    say "export: done in $(( $(date +%s) - t0 ))s"
}

run_roundtrip() {
    local v=roundtrip d="$RUN_DIR/roundtrip" t0
    t0=$(date +%s)
    [ "$BOTH_ZK" = "1" ] && { say "roundtrip: skipped (IMPORT_BOTH_ZK=1 has no zkr)"; return; }
    mkdir -p "$d/zk/data"
    write_cfg "$d/zk/zoo.cfg" "$ZK_PORT" "$d/zk/data"
    say "roundtrip: ZooKeeper on 127.0.0.1:$ZK_PORT, workload"
    start_zk "$d/zk/zoo.cfg" "$ZK_PORT" "$d/zk/server.log"
    local zk_pid=$LAST_PID
    export_workload "127.0.0.1:$ZK_PORT" "$d/zk/data/version-2"
    stop_pid "$zk_pid" KILL
    stop_pid "$WL_PID" KILL
    if ! timeout 60 "$ZKR_BIN" import-zookeeper --zk-data-dir "$d/zk/data" --data-dir "$d/zkr" >"$d/import.log" 2>&1; then
        fail "roundtrip/import: zkr import-zookeeper failed (log: $d/import.log)"
        return
    fi
    start_zkr "$d/zkr" "$IMP_PORT" "$d/zkr.log" || { fail "roundtrip/serve: zkr did not start"; return; }
    local zkr_pid=$LAST_PID
    if ! timeout 60 "$PY" "$HERE/zkimport.py" more-writes "127.0.0.1:$IMP_PORT" 2>"$d/more-writes.log" ||
        ! timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:$IMP_PORT" "$d/zkr.json" 2>"$d/walk-zkr.log"; then
        fail "roundtrip/zkr: writes or walk on zkr failed (logs: $d/more-writes.log, $d/walk-zkr.log)"
        return
    fi
    stop_pid "$zkr_pid" TERM
    pass "roundtrip/zkr: imported, 6 more writes served by zkr, stopped with SIGTERM"
    export_zk roundtrip gz "$d/zk-gz" || return
    start_zk_on "$d/zk-gz" "$d/zk-gz.log"
    if timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:$ZK_PORT" "$d/zookeeper.json" 2>"$d/walk-zookeeper.log"; then
        compare roundtrip "$d/zkr.json" "$d/zookeeper.json" zkr "zookeeper-on-export"
    else
        fail "roundtrip/walk: walking ZooKeeper on the export failed"
    fi
    # the first holder (born on the first ZooKeeper) re-attaches and closes; the second expires
    export_check_reattach roundtrip "$d/sessions.json" "$d/reattach.json" attached --close-first
    export_check_expiry roundtrip "$ZK_ON_START"
    stop_pid "$ZK_ON_PID" TERM
    say "roundtrip: done in $(( $(date +%s) - t0 ))s"
}

# adminsnap: zkr serves the workload with admin.snapshot.enabled; the snapshot streamed by
# `GET /commands/snapshot` (digest auth as the super user) goes into an empty dataDir as
# version-2/snapshot.<last_zxid header>, and ZooKeeper 3.8 started on it must serve the tree zkr
# served. Fails if the stream, the header or ZooKeeper's start fail.
run_adminsnap() {
    local v=adminsnap d="$RUN_DIR/adminsnap" t0 admin_port=$((BASE + 11))
    t0=$(date +%s)
    [ "$BOTH_ZK" = "1" ] && { say "adminsnap: skipped (IMPORT_BOTH_ZK=1 has no zkr)"; return; }
    command -v curl >/dev/null 2>&1 || { fail "adminsnap/setup: curl not found (apt-get install curl)"; return; }
    mkdir -p "$d/zkr"
    cat >"$d/zkr.cfg" <<CFG
tickTime=2000
clientPort=$IMP_PORT
clientPortAddress=127.0.0.1
dataDir=$d/zkr
snapCount=50
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=$admin_port
admin.snapshot.enabled=true
DigestAuthenticationProvider.superDigest=$SUPER_DIGEST
CFG
    say "adminsnap: zkr on 127.0.0.1:$IMP_PORT (AdminServer $admin_port), workload"
    "$ZKR_BIN" serve --config "$d/zkr.cfg" --container-check-interval-ms "$SWEEP_MS" \
        >"$d/zkr.log.stdout" 2>"$d/zkr.log" </dev/null &
    local zkr_pid=$!
    disown "$zkr_pid"
    PIDS+=("$zkr_pid")
    srv_wait_ruok "$IMP_PORT" "$zkr_pid" 30 || { fail "adminsnap/serve: zkr did not start (log: $d/zkr.log)"; return; }
    export_workload "127.0.0.1:$IMP_PORT" "$d/zkr/snap"
    local code
    code=$(curl -s -o "$d/snapshot.bin" -D "$d/headers" -w '%{http_code}' -H "Authorization: digest $SUPER_PW" \
        "http://127.0.0.1:$admin_port/commands/snapshot?streaming=true")
    local zxid size
    zxid=$(awk -F': ' 'tolower($1) == "last_zxid" { gsub("\r", "", $2); print $2 }' "$d/headers")
    size=$(awk -F': ' 'tolower($1) == "snapshot_size" { gsub("\r", "", $2); print $2 }' "$d/headers")
    stop_pid "$zkr_pid" KILL
    stop_pid "$WL_PID" KILL
    if [ "$code" != 200 ] || [ -z "$zxid" ] || [ "$size" != "$(stat -c %s "$d/snapshot.bin")" ]; then
        fail "adminsnap/stream: HTTP $code, last_zxid '$zxid', snapshot_size '$size' for $(stat -c %s "$d/snapshot.bin") bytes"
        return
    fi
    pass "adminsnap/stream: HTTP 200, last_zxid $zxid, $size bytes (snapshot_size agrees)"
    mkdir -p "$d/zk/version-2"
    cp "$d/snapshot.bin" "$d/zk/version-2/snapshot.${zxid#0x}"
    say "adminsnap: ZooKeeper on the streamed snapshot"
    start_zk_on "$d/zk" "$d/zk.log"
    if timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:$ZK_PORT" "$d/zookeeper.json" 2>"$d/walk.log"; then
        compare adminsnap "$d/prestop.json" "$d/zookeeper.json" zkr-before-snapshot "zookeeper-on-streamed-snapshot"
    else
        fail "adminsnap/walk: walking ZooKeeper failed (log: $d/walk.log)"
    fi
    stop_pid "$ZK_ON_PID" TERM
    say "adminsnap: done in $(( $(date +%s) - t0 ))s"
}
