#!/usr/bin/env bash
# Write stall of a streamed AdminServer snapshot of a big tree (issue 39 item 4): not run by CI.
#
#   bash benches/admin_snapshot_stall.sh [N]     # N znodes, default 1000000; zkr from $ZKR_BIN or target/release
#
# Each server in $SERVERS (default "zkr zk39": zkr standalone, and ZooKeeper 3.9.5 from Maven Central
# via tests/interop/zab/zk39/pom.xml -Padmin) is filled with N persistent nodes of 400-byte Dubbo
# provider names (`zkr bench fill`), with snapCount far above the run's writes (no snapshots of its
# own). Then $PAIRS times, alternately, a run without and a run with a snapshot:
#   benches/admin_snapshot_writer.py: open-loop setData at $RATE/s for $SECS s over 4 sessions,
#   latency from each write's due time, every ack's time kept;
#   "with": at +$SNAP_AT s one `curl /commands/snapshot?streaming=true` (body to /dev/null) runs to
#   its end; its time, time to the first byte (the server's count of the snapshot's size for the
#   snapshot_size header, or ZooKeeper's snapshot to disk) and bytes are recorded. The "window" is the curl's span; for a run without,
#   the same span from +$SNAP_AT s as the snapshot run before it (7 s before the first).
# Printed per run: latency p50/p99/max over the whole run and over the writes due in the window,
# and the longest gap between consecutive acknowledged writes in the window.
# Everything else in $W (kept with KEEP=1).

set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
RATE=${RATE:-2000} SECS=${SECS:-20} PAIRS=${PAIRS:-2} SNAP_AT=${SNAP_AT:-5} SESSIONS=4
SERVERS=${SERVERS:-zkr zk39}
ZKR=${ZKR_BIN:-target/release/zkr}
[ -x "$ZKR" ] || { echo "build zkr first (cargo build --release) or set ZKR_BIN" >&2; exit 2; }
W=$(mktemp -d /tmp/admin-stall.XXXXXX)
cp "$ZKR" "$W/zkr-bin" && ZKR="$W/zkr-bin"
PORT=27201 ADMIN=27211
PW="super:secret"
DIGEST="super:$(/usr/bin/python3 -c 'import base64,hashlib,sys; print(base64.b64encode(hashlib.sha1(sys.argv[1].encode()).digest()).decode())' "$PW")"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
say() { echo "[$(date -u +%T)] $*" >&2; }
ns() { date +%s%N; }

common_cfg() {  # dataDir
    cat <<CFG
tickTime=2000
clientPort=$PORT
clientPortAddress=127.0.0.1
dataDir=$1
maxClientCnxns=0
snapCount=100000000
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=$ADMIN
admin.snapshot.enabled=true
admin.rateLimiterIntervalInMS=0
CFG
}
start() {  # server -> SRV (pid)
    local d="$W/$1"
    rm -rf "$d" && mkdir -p "$d"
    if [ "$1" = zkr ]; then
        { common_cfg "$d"; echo "DigestAuthenticationProvider.superDigest=$DIGEST"; } >"$W/zkr.cfg"
        "$ZKR" serve --config "$W/zkr.cfg" >"$W/zkr.log" 2>&1 </dev/null &
    else
        [ -s "$W/zk39.classpath" ] || mvn -B -q -o -f tests/interop/zab/zk39/pom.xml -Padmin dependency:build-classpath \
            -Dzookeeper.version=3.9.5 -Dmdep.outputFile="$W/zk39.classpath" >"$W/mvn.log" 2>&1
        common_cfg "$d" >"$W/zk39.cfg"
        java -cp "$(cat "$W/zk39.classpath")" -Dzookeeper.log.dir="$W" -Dzookeeper.DigestAuthenticationProvider.superDigest="$DIGEST" \
            -Xmx8g org.apache.zookeeper.server.quorum.QuorumPeerMain "$W/zk39.cfg" >"$W/zk39.log" 2>&1 </dev/null &
    fi
    SRV=$!
    PIDS+=("$SRV")
    until [ "$(echo ruok | nc -q1 127.0.0.1 $PORT 2>/dev/null)" = imok ]; do sleep 0.2; done
}
stop() {
    kill -TERM "$SRV" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SRV" 2>/dev/null || true
}

analyse() {  # acks window_start_ns window_end_ns (epoch) -> one line of key=value
    /usr/bin/python3 - "$@" <<'PY'
import sys
path, w0, w1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = []
with open(path) as f:
    off = int(f.readline().split()[2])
    for l in f:
        d, a, e = map(int, l.split())
        rows.append((d + off, a + off, e))
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else 0
def ms(x):
    return "%.2f" % (x / 1e6)
lat = [a - d for d, a, _ in rows]
win = [a - d for d, a, _ in rows if w0 <= d < w1]
acks = sorted(a for _, a, _ in rows)
gap = gap_all = 0
for x, y in zip(acks, acks[1:]):
    gap_all = max(gap_all, y - x)
    if y > w0 and x < w1:  # the gap overlaps the window
        gap = max(gap, y - x)
errs = sum(1 for *_, e in rows if e)
print("writes=%d errors=%d p50=%s p99=%s max=%s win_writes=%d win_p50=%s win_p99=%s win_max=%s win_gap=%s run_gap=%s"
      % (len(rows), errs, ms(pct(lat, .5)), ms(pct(lat, .99)), ms(max(lat)), len(win), ms(pct(win, .5)),
         ms(pct(win, .99)), ms(max(win) if win else 0), ms(gap), ms(gap_all)))
PY
}

RESULTS="$W/results.txt"
{
    echo "# $(date -u +%FT%TZ) N=$N rate=$RATE secs=$SECS pairs=$PAIRS snap_at=$SNAP_AT, zkr $(git rev-parse --short HEAD)"
    echo "# $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, load before $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$RESULTS" >&2
for srv in $SERVERS; do
    say "$srv: start, fill $N"
    start "$srv"
    fill=$("$ZKR" bench fill --server 127.0.0.1:$PORT --count "$N" --server-pid "$SRV" | grep '^bench=')
    say "$fill"
    /usr/bin/python3 -c 'import sys; from kazoo.client import KazooClient as K; c=K(hosts=sys.argv[1]); c.start(15)
c.ensure_path("/stall")
[c.create("/stall/s%d" % k, b"") for k in range(4)]
c.stop()' "127.0.0.1:$PORT"
    span=7000000000
    for pair in $(seq "$PAIRS"); do
        for mode in without with; do
            sync
            sleep 2
            run="$srv-$pair-$mode"
            t0=$(ns)
            /usr/bin/python3 benches/admin_snapshot_writer.py $PORT /stall/s "$RATE" "$SECS" $SESSIONS "$W/$run.acks" &
            wr=$!
            sleep "$SNAP_AT"
            cpu0=$(awk '{print $14 + $15}' "/proc/$SRV/stat")
            snap="-"
            if [ "$mode" = with ]; then
                w0=$(ns)
                read -r code bytes ttfb secs < <(curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_starttransfer} %{time_total}\n' \
                    -H "Authorization: digest $PW" "http://127.0.0.1:$ADMIN/commands/snapshot?streaming=true")
                w1=$(ns)
                span=$(( w1 - w0 ))
                snap="http=$code bytes=$bytes curl_ttfb_s=$ttfb curl_s=$secs"
            else
                w0=$(ns)
                w1=$(( w0 + span ))
            fi
            wait "$wr"
            cpu1=$(awk '{print $14 + $15}' "/proc/$SRV/stat")
            line="srv=$srv pair=$pair mode=$mode $(analyse "$W/$run.acks" "$w0" "$w1") window_s=$(awk "BEGIN{printf \"%.2f\", $span/1e9}") $snap"
            line="$line server_cpu_s_after_snap_at=$(awk "BEGIN{printf \"%.1f\", ($cpu1-$cpu0)/$(getconf CLK_TCK)}") load=$(cut -d' ' -f1 /proc/loadavg)"
            echo "$line" | tee -a "$RESULTS" >&2
        done
    done
    stop
done
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS" >&2
/usr/bin/python3 - "$RESULTS" <<'PY'
import sys
print("| server | pair | snapshot | whole run p50 / p99 / max (ms) | window p50 / p99 / max (ms) | longest ack gap in window (ms) | curl |")
print("|---|---|---|---|---|---|---|")
for l in open(sys.argv[1]):
    if l.startswith("#"):
        continue
    kv = dict(p.split("=", 1) for p in l.split() if "=" in p)
    curl = "%s s (first byte %s s), %s B, HTTP %s" % (kv["curl_s"], kv["curl_ttfb_s"], kv["bytes"], kv["http"]) if "curl_s" in kv else "(window %s s)" % kv["window_s"]
    print("| %s | %s | %s | %s / %s / %s | %s / %s / %s | %s | %s |" % (
        "zkr" if kv["srv"] == "zkr" else "ZooKeeper 3.9.5", kv["pair"], kv["mode"], kv["p50"], kv["p99"], kv["max"],
        kv["win_p50"], kv["win_p99"], kv["win_max"], kv["win_gap"], curl))
PY
echo "raw: $RESULTS" >&2
