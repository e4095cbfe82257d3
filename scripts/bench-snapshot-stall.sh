#!/usr/bin/env bash
# Write latency while a snapshot of a big tree is written (issue #15, item 3), zkr and Debian's
# ZooKeeper 3.8 side by side, same loader, fsync on for both. Each server is filled with COUNT
# Dubbo-like provider nodes (`zkr bench fill`), restarted, then takes the same open-loop write
# load (`zkr bench write --rate RATE`, latency counted from each request's due time) twice:
#   - quiet:    snapCount far above the run's writes, so no snapshot happens;
#   - snapshot: snapCount small enough that snapshots of the whole tree happen during the run
#               (zkr at SNAP writes; ZooKeeper somewhere between SNAP/2 and SNAP, its own
#               randomisation), and the log lines say how long each took.
# Prints p50/p99/p99.9/max of both runs for both servers.
#
#   scripts/bench-snapshot-stall.sh            1,000,000 nodes (about 10 minutes on 2 cores)
#   scripts/bench-snapshot-stall.sh --quick    100,000 nodes
#
# Environment: BENCH_STALL_PORT (default 21950 for ZooKeeper, +1 for zkr), BENCH_OUT, ZKR_BIN,
# BENCH_SERVERS (default "zkr zk").
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=1000000; RATE=2000; SECS=20; SNAP=15000
[ "${1:-}" = "--quick" ] && { COUNT=100000; SECS=10; SNAP=8000; }
PORT=${BENCH_STALL_PORT:-21950}
ZPORT=$PORT; RPORT=$((PORT + 1))
ZKR=${ZKR_BIN:-target/release/zkr}
[ -n "${ZKR_BIN:-}" ] || cargo build --release --locked 2>&1 | tail -n 1
# shellcheck source=lib/zookeeper.sh
source scripts/lib/zookeeper.sh
zk_require
# shellcheck source=../tests/interop/lib/servers.sh
source tests/interop/lib/servers.sh   # ZK_LOGGING_FLAGS: ZooKeeper's log says when it snapshots
mkdir -p target/bench
OUT=${BENCH_OUT:-target/bench/snapshot-stall-$(date -u +%Y%m%dT%H%M%SZ).txt}
W=$(mktemp -d /tmp/zkr-stall.XXXXXX)
PID=""
cleanup() { [ -z "$PID" ] || kill -9 "$PID" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$W"; }
trap cleanup EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
port_of() { if [ "$1" = zk ]; then echo $ZPORT; else echo $RPORT; fi; }

# launch SERVER SNAPCOUNT: on its data directory (kept between launches)
launch() {
  local s=$1 snap=$2 port; port=$(port_of "$1")
  mkdir -p "$W/$s"
  if [ "$s" = zk ]; then
    zk_standalone_cfg "$W" "$ZPORT" "snapCount=$snap"
    SERVER_JVMFLAGS="$ZK_LOGGING_FLAGS" zk_start "$W"
  else
    "$ZKR" serve --bind 127.0.0.1 --port "$RPORT" --data-dir "$W/zkr" --max-client-cnxns 0 --snap-count "$snap" >>"$W/zkr.out" 2>&1 &
  fi
  PID=$!
  local tries=0
  until [ "$(echo srvr | timeout 3 nc -q1 127.0.0.1 "$port" 2>/dev/null | grep -c "^Zxid")" = 1 ]; do
    tries=$((tries + 1)); [ $tries -lt 1800 ] || { log "$s did not start"; tail -20 "$W/$s.out" >&2; exit 1; }
    kill -0 "$PID" 2>/dev/null || { log "$s exited"; tail -20 "$W/$s.out" >&2; exit 1; }
    sleep 0.1
  done
}
stop() {
  kill "$PID" 2>/dev/null || true
  for _ in $(seq 300); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  PID=""
}
record() { echo "srv=$1 $2" | tee -a "$OUT" >&2; }
snapshots() {  # SERVER: snapshot lines logged so far
  if [ "$1" = zk ]; then grep -c "Snapshotting: 0x" "$W/zk.out" || true; else grep -c "snapshot written" "$W/zkr.out" || true; fi
}

{
  echo "# zkr snapshot stall $(date -u +%Y-%m-%dT%H:%M:%SZ) count=$COUNT rate=$RATE secs=$SECS snapCount=$SNAP"
  echo "# zkr $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || echo '?')"
  echo "# machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT"
cat "$OUT" >&2

for s in ${BENCH_SERVERS:-zkr zk}; do
  rm -rf "${W:?}/$s"
  log "$s: fill $COUNT"; launch "$s" 100000000
  line=$("$ZKR" bench fill --server "127.0.0.1:$(port_of "$s")" --count "$COUNT" | grep '^bench=')
  record "$s" "$line"
  stop
  for run in quiet snapshot; do
    snap=100000000; [ "$run" = snapshot ] && snap=$SNAP
    launch "$s" "$snap"
    before=$(snapshots "$s")
    log "$s: $run run ($RATE writes/s for $SECS s, snapCount $snap)"
    line=$("$ZKR" bench write --server "127.0.0.1:$(port_of "$s")" --server-pid "$PID" --rate "$RATE" --secs "$SECS" --warmup-secs 2 | grep '^bench=')
    record "$s" "${line/bench=write/bench=write_$run} snapshots=$(( $(snapshots "$s") - before ))"
    stop
  done
done
[ -z "$(grep 'snapshot written' "$W/zkr.out" | tail -3)" ] || grep 'snapshot written' "$W/zkr.out" | sed 's/\x1b\[[0-9;]*m//g' | tail -3 | sed 's/^/# zkr: /' | tee -a "$OUT" >&2
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT" >&2
python3 - "$OUT" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    rows[(kv["srv"], kv["bench"])] = kv
print("| server | run | snapshots | p50 | p99 | p99.9 | max |")
print("|---|---|---|---|---|---|---|")
for srv, name in (("zk", "ZooKeeper 3.8"), ("zkr", "zkr")):
    for run in ("quiet", "snapshot"):
        r = rows.get((srv, "write_" + run))
        if not r:
            continue
        ms = lambda k: f"{int(r[k]) / 1000:,.2f} ms"
        print(f"| {name} | {run} | {r.get('snapshots', '?')} | {ms('lat_p50_us')} | {ms('lat_p99_us')} | {ms('lat_p999_us')} | {ms('lat_max_us')} |")
PY
echo "raw results: $OUT"
