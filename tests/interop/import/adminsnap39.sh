# The AdminServer backup commands side by side with ZooKeeper 3.9.5, sourced by run.sh (uses its
# helpers: zk39_classpath, launch_zk39, start_zk39, write_cfg, compare, pass, fail, stop_pid).
#
#   adminsnap39  zkr (admin.snapshot.enabled, admin.restore.enabled) and ZooKeeper 3.9.5 from Maven
#                Central (admin.enableServer, admin.snapshot.enabled, the super digest) each serve the
#                workload; each streams `/commands/snapshot?streaming=true` (digest super:secret).
#                1. A second ZooKeeper 3.9.5 starts on zkr's stream (version-2/snapshot.<last_zxid>)
#                   and must serve the tree zkr served, Stat for Stat.
#                2. zkr's `/commands/restore` takes ZooKeeper's stream as its body and must then
#                   serve ZooKeeper's tree, Stat for Stat.
#                3. The same stream cut in half, then without its last byte, is refused whole by zkr
#                   (its tree unchanged); ZooKeeper's answer to the same bodies is printed beside
#                   zkr's and ZooKeeper's tree must be unchanged too.

# curl against an AdminServer as the super user: prints the HTTP status; body to out, headers to out.h
admin_curl() {  # out url [curl args...]
    curl -s -m 60 -o "$1" -D "$1.h" -w '%{http_code}' -H "Authorization: digest $SUPER_PW" "${@:3}" "$2"
}

header_value() {  # headers-file name
    awk -F': ' -v k="$2" 'tolower($1) == k { gsub("\r", "", $2); print $2 }' "$1"
}

# the workload on addr, in the background; outputs in dir -> sets the pid variable named by $4
adminsnap39_workload() {  # addr dir snapdir pidvar
    WORKLOAD_QUOTA=1 IMPORT_SESSIONS_OUT="$2/sessions.json" "$PY" "$HERE/zkimport.py" workload "$1" \
        "$2/prestop.json" "$2/ready" "$3" >"$2/workload.log" 2>&1 </dev/null &
    printf -v "$4" '%s' "$!"
    disown "$!"
    PIDS+=("$!")
}

adminsnap39_wait_ready() {  # dir pid
    for _ in $(seq 1 900); do
        [ -f "$1/ready" ] && return 0
        kill -0 "$2" 2>/dev/null || break
        sleep 0.1
    done
    tail -n 30 "$1/workload.log" >&2
    die "adminsnap39: the workload did not finish (log: $1/workload.log)"
}

# streams a snapshot from an AdminServer into file; 0 and the zxid in SNAP_ZXID if it is whole
adminsnap39_stream() {  # label admin_port file
    local code size
    code=$(admin_curl "$3" "http://127.0.0.1:$2/commands/snapshot?streaming=true")
    SNAP_ZXID=$(header_value "$3.h" last_zxid)
    size=$(header_value "$3.h" snapshot_size)
    if [ "$code" = 200 ] && [ -n "$SNAP_ZXID" ] && [ "$size" = "$(stat -c %s "$3")" ]; then
        pass "$1: HTTP 200, last_zxid $SNAP_ZXID, $size bytes (snapshot_size agrees)"
        return 0
    fi
    fail "$1: HTTP $code, last_zxid '$SNAP_ZXID', snapshot_size '$size' for $(stat -c %s "$3") bytes"
    return 1
}

# POSTs a file to /commands/restore -> RESTORE_CODE, RESTORE_BODY (one line)
adminsnap39_restore() {  # admin_port body-file out
    RESTORE_CODE=$(admin_curl "$3" "http://127.0.0.1:$1/commands/restore" \
        -H 'Content-Type: application/octet-stream' --data-binary "@$2")
    RESTORE_BODY=$(tr -s ' \n' ' ' <"$3" 2>/dev/null | head -c 300)
}

dump_to() {  # port out.json -> 0 if the walk worked
    timeout 60 "$PY" "$HERE/zkimport.py" dump "127.0.0.1:$1" "$2" 2>"$2.log"
}

run_adminsnap39() {
    local v=adminsnap39 d="$RUN_DIR/adminsnap39" t0 zk_admin=$((BASE + 10)) zkr_admin=$((BASE + 11))
    local zk2_port=${MEMBER_PORTS[1]} zkr_pid zk_pid zk2_pid="" zkr_wl zk_wl zkr_zxid zk_zxid
    t0=$(date +%s)
    [ "$BOTH_ZK" = "1" ] && { say "adminsnap39: skipped (IMPORT_BOTH_ZK=1 has no zkr)"; return; }
    command -v curl >/dev/null 2>&1 || { fail "adminsnap39/setup: curl not found (apt-get install curl)"; return; }
    mkdir -p "$d/zkr/data" "$d/zk/data" "$d/zk-on-zkr/data/version-2"
    zk39_classpath "$d" || { fail "adminsnap39/maven: Maven could not resolve ZooKeeper 3.9.5 (log: $d/mvn-zk39.log)"; return; }

    # zkr and ZooKeeper 3.9.5, both with their AdminServer's backup commands on
    cat >"$d/zkr.cfg" <<CFG
tickTime=2000
clientPort=$IMP_PORT
clientPortAddress=127.0.0.1
dataDir=$d/zkr/data
snapCount=50
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=$zkr_admin
admin.snapshot.enabled=true
admin.restore.enabled=true
admin.rateLimiterIntervalInMS=0
DigestAuthenticationProvider.superDigest=$SUPER_DIGEST
CFG
    write_cfg "$d/zk.cfg" "$ZK_PORT" "$d/zk/data"
    {   # ZooKeeper makes zoo.cfg keys it does not know system properties "zookeeper.<key>"
        echo "admin.enableServer=true"
        echo "admin.serverAddress=127.0.0.1"
        echo "admin.serverPort=$zk_admin"
        echo "admin.snapshot.enabled=true"
        echo "admin.restore.enabled=true"
        echo "admin.rateLimiterIntervalInMS=0"
    } >>"$d/zk.cfg"
    say "adminsnap39: zkr on 127.0.0.1:$IMP_PORT (AdminServer $zkr_admin), ZooKeeper 3.9.5 on $ZK_PORT (AdminServer $zk_admin), the workload on both"
    "$ZKR_BIN" serve --config "$d/zkr.cfg" --container-check-interval-ms "$SWEEP_MS" \
        >"$d/zkr.log.stdout" 2>"$d/zkr.log" </dev/null &
    zkr_pid=$!
    disown "$zkr_pid"
    PIDS+=("$zkr_pid")
    start_zk39 "$d/zk.cfg" "$ZK_PORT" "$d/zk/server.log" ||
        { fail "adminsnap39/start: ZooKeeper 3.9.5 did not start (log: $d/zk/server.log)"; return; }
    zk_pid=$LAST_PID
    srv_wait_ruok "$IMP_PORT" "$zkr_pid" 30 || { fail "adminsnap39/serve: zkr did not start (log: $d/zkr.log)"; return; }
    adminsnap39_workload "127.0.0.1:$IMP_PORT" "$d/zkr" "$d/zkr/data/snap" zkr_wl
    adminsnap39_workload "127.0.0.1:$ZK_PORT" "$d/zk" "$d/zk/data/version-2" zk_wl
    adminsnap39_wait_ready "$d/zkr" "$zkr_wl"
    adminsnap39_wait_ready "$d/zk" "$zk_wl"

    # both streams (the holder sessions stay open: their ephemerals are in both)
    adminsnap39_stream "$v/stream-zkr" "$zkr_admin" "$d/zkr.snapshot" && zkr_zxid=$SNAP_ZXID
    adminsnap39_stream "$v/stream-zookeeper" "$zk_admin" "$d/zk.snapshot" && zk_zxid=$SNAP_ZXID

    # 1. a second ZooKeeper 3.9.5 on zkr's stream (it starts while zkr restores)
    if [ -n "${zkr_zxid:-}" ]; then
        cp "$d/zkr.snapshot" "$d/zk-on-zkr/data/version-2/snapshot.${zkr_zxid#0x}"
        write_cfg "$d/zk-on-zkr.cfg" "$zk2_port" "$d/zk-on-zkr/data"
        launch_zk39 "$d/zk-on-zkr.cfg" "$d/zk-on-zkr/server.log"
        zk2_pid=$LAST_PID
    fi

    # 2. zkr restores ZooKeeper's stream
    if [ -n "${zk_zxid:-}" ]; then
        adminsnap39_restore "$zkr_admin" "$d/zk.snapshot" "$d/restore.json"
        if [ "$RESTORE_CODE" = 200 ]; then
            pass "$v/restore: zkr took ZooKeeper 3.9.5's snapshot (last_zxid $zk_zxid): HTTP 200 $RESTORE_BODY"
            if dump_to "$IMP_PORT" "$d/zkr-restored.json"; then
                compare "$v-restored" "$d/zk/prestop.json" "$d/zkr-restored.json" zookeeper-3.9.5 zkr-after-restore
            else
                fail "$v-restored/walk: walking zkr after the restore failed (log: $d/zkr-restored.json.log)"
            fi
        else
            fail "$v/restore: zkr refused ZooKeeper 3.9.5's snapshot: HTTP $RESTORE_CODE $RESTORE_BODY"
        fi

        # 3. truncated bodies: refused whole by zkr; ZooKeeper's answer beside it
        local size cut zkr_ans zkr_code zk_ans
        size=$(stat -c %s "$d/zk.snapshot")
        for cut in half last-byte; do
            case "$cut" in
                half) head -c $((size / 2)) "$d/zk.snapshot" >"$d/cut-$cut.snapshot" ;;
                last-byte) head -c $((size - 1)) "$d/zk.snapshot" >"$d/cut-$cut.snapshot" ;;
            esac
            adminsnap39_restore "$zkr_admin" "$d/cut-$cut.snapshot" "$d/restore-cut-$cut-zkr.json"
            zkr_ans="HTTP $RESTORE_CODE $RESTORE_BODY"
            zkr_code=$RESTORE_CODE
            adminsnap39_restore "$zk_admin" "$d/cut-$cut.snapshot" "$d/restore-cut-$cut-zk.json"
            zk_ans="HTTP $RESTORE_CODE $RESTORE_BODY"
            echo "    truncated ($cut, $(stat -c %s "$d/cut-$cut.snapshot") of $size bytes): zkr: $zkr_ans"
            echo "    truncated ($cut): ZooKeeper 3.9.5: $zk_ans"
            if [ "$zkr_code" != 200 ]; then
                pass "$v/truncated-$cut-zkr: refused with HTTP $zkr_code"
            else
                fail "$v/truncated-$cut-zkr: zkr took a truncated snapshot: $zkr_ans"
            fi
            if [ "$RESTORE_CODE" != 200 ]; then
                pass "$v/truncated-$cut-zookeeper: ZooKeeper 3.9.5 refused it with HTTP $RESTORE_CODE"
            else
                fail "$v/truncated-$cut-zookeeper: ZooKeeper 3.9.5 took a truncated snapshot: $zk_ans"
            fi
        done
        # nothing changed on either side
        if dump_to "$IMP_PORT" "$d/zkr-after-cut.json"; then
            compare "$v-zkr-unchanged" "$d/zk/prestop.json" "$d/zkr-after-cut.json" zookeeper-3.9.5 zkr-after-truncated
        else
            fail "$v-zkr-unchanged/walk: walking zkr after the truncated restores failed"
        fi
        if dump_to "$ZK_PORT" "$d/zk-after-cut.json"; then
            compare "$v-zookeeper-unchanged" "$d/zk/prestop.json" "$d/zk-after-cut.json" zookeeper-3.9.5 zookeeper-after-truncated
        else
            fail "$v-zookeeper-unchanged/walk: walking ZooKeeper after the truncated restores failed"
        fi
    fi

    # 1, continued: the tree ZooKeeper 3.9.5 serves from zkr's stream
    if [ -n "${zkr_zxid:-}" ]; then
        if srv_wait_ruok "$zk2_port" "$zk2_pid" 90; then
            pass "$v/start: ZooKeeper 3.9.5 started on zkr's streamed snapshot.${zkr_zxid#0x}"
            if dump_to "$zk2_port" "$d/zk-on-zkr.json"; then
                compare "$v-zk-on-zkr" "$d/zkr/prestop.json" "$d/zk-on-zkr.json" zkr zookeeper-3.9.5-on-zkr-stream
            else
                fail "$v-zk-on-zkr/walk: walking ZooKeeper 3.9.5 failed (log: $d/zk-on-zkr.json.log)"
            fi
        else
            fail "$v/start: ZooKeeper 3.9.5 did not start on zkr's streamed snapshot (log: $d/zk-on-zkr/server.log)"
        fi
    fi
    [ -n "$zk2_pid" ] && stop_pid "$zk2_pid" TERM
    stop_pid "$zk_pid" TERM
    stop_pid "$zkr_pid" TERM
    stop_pid "$zkr_wl" KILL
    stop_pid "$zk_wl" KILL
    say "adminsnap39: done in $(( $(date +%s) - t0 ))s"
}
