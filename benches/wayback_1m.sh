#!/usr/bin/env bash
# The way back and backups at 1,000,000 Dubbo-shaped znodes (issue 39): not run by CI.
#
#   bash benches/wayback_1m.sh [N]        # N znodes, default 1000000; zkr from $ZKR_BIN or target/release
#
# 1. zkr (standalone, AdminServer with snapshot and restore on) is filled with N persistent nodes of
#    400-byte provider names (`zkr bench fill`); `/commands/snapshot?streaming=true` is timed.
# 2. The way back under writes: benches/wayback_writer.py does setData in a loop; zkr gets SIGTERM,
#    `zkr export-zookeeper` (plain) runs, Debian's ZooKeeper 3.8 starts on the export on the same
#    port. Reported: the export, ZooKeeper's start-to-serving (a getData of the last filled node
#    answers), and the gap between the last write zkr acknowledged and the first ZooKeeper did.
# 3. `zkr export-zookeeper --compression snappy` of the same zkr directory (timed, sized).
# 4. zkr restarted on its own directory (start to serving, the same probe).
# 5. `zkr import-zookeeper` of ZooKeeper's dataDir (after ZooKeeper's SIGTERM).
# 6. `/commands/restore` of step 1's snapshot on an empty zkr and on an empty ZooKeeper 3.9.5 (Maven
#    Central, tests/interop/zab/zk39/pom.xml -Padmin), then each one's `/commands/snapshot`.
# Results: a table on stdout; everything else in $W (kept with KEEP=1).

set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
ZKR=${ZKR_BIN:-target/release/zkr}
[ -x "$ZKR" ] || { echo "build zkr first (cargo build --release) or set ZKR_BIN" >&2; exit 2; }
W=$(mktemp -d /tmp/wayback-1m.XXXXXX)
cp "$ZKR" "$W/zkr-bin" && ZKR="$W/zkr-bin"
PORT=27101 ZKR_ADMIN=27111 ZK_ADMIN=27112 PORT2=27102
PW="super:secret"
DIGEST="super:$(/usr/bin/python3 -c 'import base64,hashlib,sys; print(base64.b64encode(hashlib.sha1(sys.argv[1].encode()).digest()).decode())' "$PW")"
LAST=$("$ZKR" bench fill --path-of $((N - 1)))
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT

ms() { date +%s%3N; }
say() { echo "[$(date +%T)] $*" >&2; }

serving() {  # port: waits until getData of the last filled node answers (a raw client, 20 ms polls)
    /usr/bin/python3 - "$1" "$LAST" <<'PY'
import socket, struct, sys, time
port, path = int(sys.argv[1]), sys.argv[2].encode()
def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise OSError("closed")
        b += c
    return b
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=0.2)  # a SYN to a starting server can hang
        s.settimeout(5)
        req = struct.pack(">iqiq", 0, 0, 30000, 0) + struct.pack(">i", 16) + b"\0" * 16 + b"\0"
        s.sendall(struct.pack(">i", len(req)) + req)
        recvn(s, struct.unpack(">i", recvn(s, 4))[0])
        body = struct.pack(">ii", 1, 4) + struct.pack(">i", len(path)) + path + b"\0"
        s.sendall(struct.pack(">i", len(body)) + body)
        data = recvn(s, struct.unpack(">i", recvn(s, 4))[0])
        if struct.unpack(">iqi", data[:16])[2] == 0:
            sys.exit(0)
    except (OSError, struct.error):
        pass
    time.sleep(0.02)
PY
}

zkr_cfg() {  # file dataDir
    cat >"$1" <<CFG
tickTime=2000
clientPort=$PORT
clientPortAddress=127.0.0.1
dataDir=$2
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=$ZKR_ADMIN
admin.snapshot.enabled=true
admin.restore.enabled=true
admin.rateLimiterIntervalInMS=0
DigestAuthenticationProvider.superDigest=$DIGEST
CFG
}
start_zkr() {  # cfg log -> ZR
    "$ZKR" serve --config "$1" >"$2" 2>&1 </dev/null &
    ZR=$!
    PIDS+=("$ZR")
}
zk_cfg() {  # file dataDir port [extra lines]
    printf 'tickTime=2000\nclientPort=%s\nclientPortAddress=127.0.0.1\ndataDir=%s\nmaxClientCnxns=0\n4lw.commands.whitelist=*\nadmin.enableServer=false\n%s\n' \
        "$3" "$2" "${4:-}" >"$1"
}
start_zk38() {  # cfg log -> ZK (the JVM: start-foreground execs it)
    ZOOCFGDIR=$(dirname "$1") ZOO_LOG_DIR=$W ZOOPIDFILE=$W/zk.pid JMXDISABLE=true \
        /usr/share/zookeeper/bin/zkServer.sh start-foreground "$1" >"$2" 2>&1 </dev/null &
    ZK=$!
    PIDS+=("$ZK")
}
stop() {  # pid signal
    kill "-$2" "$1" 2>/dev/null || true
    while kill -0 "$1" 2>/dev/null; do sleep 0.05; done
}
admin() {  # out url [curl args]: prints "code seconds"
    curl -s -o "$1" -D "$1.h" -w '%{http_code} %{time_total}\n' -H "Authorization: digest $PW" "${@:3}" "$2"
}
size() { stat -c %s "$1"/version-2/snapshot.*; }  # the export's snapshot (its log is preallocated, sparse)

say "zkr ($ZKR), $N nodes, work dir $W"
mkdir -p "$W/zkr"
zkr_cfg "$W/zkr.cfg" "$W/zkr"
start_zkr "$W/zkr.cfg" "$W/zkr.log"
serving_t0=$(ms)
until [ "$(echo ruok | nc -q1 127.0.0.1 $PORT 2>/dev/null)" = imok ]; do sleep 0.1; done
fill=$("$ZKR" bench fill --server 127.0.0.1:$PORT --count "$N" --server-pid "$ZR")
say "$fill"
/usr/bin/python3 -c 'import sys; from kazoo.client import KazooClient as K; c=K(hosts=sys.argv[1]); c.start(15); c.create("/wayback", b""); c.stop()' "127.0.0.1:$PORT"

say "zkr: /commands/snapshot?streaming=true"
read -r code secs < <(admin "$W/zkr.snapshot" "http://127.0.0.1:$ZKR_ADMIN/commands/snapshot?streaming=true")
[ "$code" = 200 ] || { echo "zkr snapshot: HTTP $code" >&2; exit 1; }
zkr_snap_s=$secs zkr_snap_size=$(stat -c %s "$W/zkr.snapshot")
zkr_snap_zxid=$(awk -F': ' 'tolower($1) == "last_zxid" { gsub("\r", "", $2); print $2 }' "$W/zkr.snapshot.h")

say "the way back under writes"
/usr/bin/python3 benches/wayback_writer.py "$PORT" /wayback "$W/acks.txt" "$W/stop-writer" &
WR=$!
PIDS+=("$WR")
sleep 3
t_term=$(ms)
stop "$ZR" TERM
t_stopped=$(ms)
"$ZKR" export-zookeeper --data-dir "$W/zkr" --zk-data-dir "$W/zk" >"$W/export-plain.log" 2>&1
t_exported=$(ms)
zk_cfg "$W/zk.cfg" "$W/zk" "$PORT"
start_zk38 "$W/zk.cfg" "$W/zk.log"
t_zk=$(ms)
serving "$PORT"
t_zk_serving=$(ms)
sleep 3
touch "$W/stop-writer"
wait "$WR" || true
read -r last_zkr first_zk writes_zkr writes_zk < <(/usr/bin/python3 - "$W/acks.txt" "$t_stopped" <<'PY'
import sys
acks = [int(l.split()[0]) for l in open(sys.argv[1]) if l.strip()]
gone = int(sys.argv[2])  # zkr has exited: every later ack is ZooKeeper's
before = [t for t in acks if t <= gone]
after = [t for t in acks if t > gone]
print(before[-1] if before else 0, after[0] if after else 0, len(before), len(after))
PY
)
stop "$ZK" TERM

say "snappy export"
t0=$(ms)
"$ZKR" export-zookeeper --data-dir "$W/zkr" --zk-data-dir "$W/zk-snappy" --compression snappy >"$W/export-snappy.log" 2>&1
snappy_ms=$(( $(ms) - t0 ))
snappy_size=$(size "$W/zk-snappy")
t0=$(ms)
"$ZKR" export-zookeeper --data-dir "$W/zkr" --zk-data-dir "$W/zk-plain2" >"$W/export-plain2.log" 2>&1
plain2_ms=$(( $(ms) - t0 ))

say "zkr restarted on its own directory"
t0=$(ms)
start_zkr "$W/zkr.cfg" "$W/zkr-restart.log"
serving "$PORT"
zkr_restart_ms=$(( $(ms) - t0 ))
stop "$ZR" TERM

say "ZooKeeper 3.8 on the plain export again, without writes (start to serving)"
zk_cfg "$W/zk2.cfg" "$W/zk-plain2" "$PORT"
t0=$(ms)
start_zk38 "$W/zk2.cfg" "$W/zk2.log"
serving "$PORT"
zk_load_ms=$(( $(ms) - t0 ))
stop "$ZK" TERM

say "zkr import-zookeeper of ZooKeeper's dataDir (the way-back one, with its log)"
t0=$(ms)
"$ZKR" import-zookeeper --zk-data-dir "$W/zk" --data-dir "$W/imported" >"$W/import.log" 2>&1
import_ms=$(( $(ms) - t0 ))

say "zkr: /commands/restore of the ${zkr_snap_size}-byte snapshot on an empty zkr"
rm -rf "$W/zkr-r" && mkdir -p "$W/zkr-r"
zkr_cfg "$W/zkr-r.cfg" "$W/zkr-r"
start_zkr "$W/zkr-r.cfg" "$W/zkr-r.log"
until [ "$(echo ruok | nc -q1 127.0.0.1 $PORT 2>/dev/null)" = imok ]; do sleep 0.1; done
read -r code zkr_restore_s < <(admin "$W/zkr-restore.json" "http://127.0.0.1:$ZKR_ADMIN/commands/restore" \
    -H 'Content-Type: application/octet-stream' --data-binary "@$W/zkr.snapshot")
zkr_restore_code=$code
serving "$PORT"
read -r code zkr_snap2_s < <(admin "$W/zkr2.snapshot" "http://127.0.0.1:$ZKR_ADMIN/commands/snapshot?streaming=true")
zkr_rss=$(ps -o rss= -p "$ZR")
stop "$ZR" TERM

say "ZooKeeper 3.9.5: /commands/restore of the same snapshot"
mvn -B -q -f tests/interop/zab/zk39/pom.xml -Padmin dependency:build-classpath -Dzookeeper.version=3.9.5 \
    -Dmdep.outputFile="$W/zk39.classpath" >"$W/mvn.log" 2>&1
mkdir -p "$W/zk39"
zk_cfg "$W/zk39.cfg" "$W/zk39" "$PORT" "admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=$ZK_ADMIN
admin.snapshot.enabled=true
admin.restore.enabled=true
admin.rateLimiterIntervalInMS=0"
java -cp "$(cat "$W/zk39.classpath")" -Dzookeeper.log.dir="$W" -Dzookeeper.DigestAuthenticationProvider.superDigest="$DIGEST" \
    -Xmx8g org.apache.zookeeper.server.quorum.QuorumPeerMain "$W/zk39.cfg" >"$W/zk39.log" 2>&1 </dev/null &
Z39=$!
PIDS+=("$Z39")
until [ "$(echo ruok | nc -q1 127.0.0.1 $PORT 2>/dev/null)" = imok ]; do sleep 0.2; done
read -r code zk_restore_s < <(admin "$W/zk39-restore.json" "http://127.0.0.1:$ZK_ADMIN/commands/restore" \
    -H 'Content-Type: application/octet-stream' --data-binary "@$W/zkr.snapshot")
zk_restore_code=$code
zk_snap_s=- zk_snap_size=-
if [ "$code" = 200 ]; then
    serving "$PORT"
    sleep 1   # the snapshot command's rate limiter counts microseconds of admin.rateLimiterIntervalInMS
    read -r code zk_snap_s < <(admin "$W/zk39.snapshot" "http://127.0.0.1:$ZK_ADMIN/commands/snapshot?streaming=true")
    zk_snap_size=$(stat -c %s "$W/zk39.snapshot")
fi
zk_rss=$(ps -o rss= -p "$Z39")
stop "$Z39" TERM

cat <<EOF

N=$N, zkr $("$ZKR" --version 2>/dev/null || true), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)
$fill
| step | zkr | ZooKeeper |
|---|---:|---:|
| /commands/snapshot?streaming=true (first, after the fill) | ${zkr_snap_s} s, ${zkr_snap_size} B, last_zxid ${zkr_snap_zxid} | |
| export-zookeeper, plain (inside the way back) | $(( t_exported - t_stopped )) ms | |
| export-zookeeper, plain (again) | ${plain2_ms} ms, $(size "$W/zk-plain2") B | |
| export-zookeeper, snappy | ${snappy_ms} ms, ${snappy_size} B | |
| start to serving on the export / own directory | ${zkr_restart_ms} ms (zkr restart) | ${zk_load_ms} ms (3.8 on the plain export) |
| import-zookeeper of ZooKeeper 3.8's dataDir | ${import_ms} ms | |
| /commands/restore of zkr's snapshot on an empty server | HTTP ${zkr_restore_code}, ${zkr_restore_s} s | HTTP ${zk_restore_code}, ${zk_restore_s} s (3.9.5) |
| /commands/snapshot?streaming=true after the restore | ${zkr_snap2_s} s | ${zk_snap_s} s, ${zk_snap_size} B (3.9.5) |
| RSS after the restore and the snapshot | ${zkr_rss} kB | ${zk_rss} kB (3.9.5, -Xmx8g) |

The way back under writes: SIGTERM at +0; zkr gone at +$(( t_stopped - t_term )) ms; exported at +$(( t_exported - t_term )) ms;
ZooKeeper 3.8 started at +$(( t_zk - t_term )) ms, serving at +$(( t_zk_serving - t_term )) ms ($(( t_zk_serving - t_zk )) ms after its start).
Last write acknowledged by zkr at $(( last_zkr - t_term )) ms, first by ZooKeeper at +$(( first_zk - t_term )) ms:
write pause $(( first_zk - last_zkr )) ms ($writes_zkr writes acknowledged by zkr, $writes_zk by ZooKeeper).
zkr restore answer: $(tr -s ' \n' ' ' <"$W/zkr-restore.json")
ZooKeeper 3.9.5 restore answer: $(tr -s ' \n' ' ' <"$W/zk39-restore.json")
EOF
