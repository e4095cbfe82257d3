#!/usr/bin/env bash
# Reads, issue #15 items 2 and 5: (1) the read mix with each server pinned to one core and the
# loader on the other, then both on both cores (`taskset`), for zkr and Debian's ZooKeeper 3.8;
# (2) zkr's server CPU per read against the loopback floor: `zkr bench floor-serve`, a server
# that only replays pre-encoded replies (fetched once from a zkr), on the same workload.
# Same loader and sizes as scripts/bench-side-by-side.sh (16 sessions x 32 in flight, 15 s).
#
#   scripts/bench-reads.sh           full run (~6 min on 2 cores)
#   scripts/bench-reads.sh --quick   3 s per run, to check the script itself
#
# Environment: ZKR_BIN (default: build target/release/zkr), BENCH_PORT_BASE (default 21300),
# BENCH_OUT (raw results, default target/bench/reads-<UTC time>.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=15; WARM=2; RUNS=3
[ "${1:-}" = "--quick" ] && { SECS=3; WARM=1; RUNS=1; }
BASE=${BENCH_PORT_BASE:-21300}
ZPORT=$((BASE + 1)); RPORT=$((BASE + 2)); FPORT=$((BASE + 3))
ZKR=${ZKR_BIN:-target/release/zkr}
[ -n "${ZKR_BIN:-}" ] || cargo build --release --locked 2>&1 | tail -n 1
# shellcheck source=lib/zookeeper.sh
source scripts/lib/zookeeper.sh
zk_require
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores" >&2; exit 1; }

mkdir -p target/bench
OUT=${BENCH_OUT:-target/bench/reads-$(date -u +%Y%m%dT%H%M%SZ).txt}
W=$(mktemp -d /tmp/zkr-reads.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# up PORT PID: waits until the server on PORT answers srvr (zkr, ZooKeeper) or a session (floor).
up() {
  for _ in $(seq 600); do
    kill -0 "$2" 2>/dev/null || { log "server on $1 exited"; cat "$W"/*.out >&2; exit 1; }
    echo srvr | timeout 2 nc -q1 127.0.0.1 "$1" 2>/dev/null | grep -q "^Zxid" && return 0
    sleep 0.1
  done
  log "server on $1 did not start"; exit 1
}
# start SERVER CPUS: a fresh server pinned to CPUS; sets PID.
start() {
  rm -rf "$W/$1"; mkdir -p "$W/$1"
  if [ "$1" = zk ]; then
    zk_standalone_cfg "$W" "$ZPORT"
    zk_start "$W" taskset -c "$2"
    PID=$!; PIDS+=("$PID"); up $ZPORT "$PID"
  else
    taskset -c "$2" "$ZKR" serve --bind 127.0.0.1 --port $RPORT --data-dir "$W/zkr" --max-client-cnxns 0 >"$W/zkr.out" 2>&1 &
    PID=$!; PIDS+=("$PID"); up $RPORT "$PID"
  fi
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
# read LABEL PORT PID LOADER_CPUS
read_mix() {
  local line
  line=$(taskset -c "$4" "$ZKR" bench read --server "127.0.0.1:$2" --server-pid "$3" --secs $SECS --warmup-secs $WARM | grep '^bench=')
  echo "$1 $line" | tee -a "$OUT" >&2
}

{
  echo "# zkr reads $(date -u +%Y-%m-%dT%H:%M:%SZ) secs=$SECS runs=$RUNS"
  echo "# zkr $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || echo '?')"
  echo "# machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT"

for run in $(seq $RUNS); do
  for s in zkr zk; do
    for cpus in 1 2; do
      if [ $cpus = 1 ]; then scpu=0; lcpu=1; else scpu=0,1; lcpu=0,1; fi
      log "run $run: $s on $cpus core(s)"
      start $s $scpu
      port=$ZPORT; [ $s = zkr ] && port=$RPORT
      read_mix "run=$run srv=$s cores=$cpus" $port "$PID" $lcpu
      stop "$PID"
    done
  done
  log "run $run: zkr and the floor (pre-encoded replies), both on 2 cores"
  start zkr 0,1
  zpid=$PID
  "$ZKR" bench floor-serve --port $FPORT --from 127.0.0.1:$RPORT >"$W/floor.out" 2>&1 &
  fpid=$!; PIDS+=("$fpid")
  sleep 0.5
  read_mix "run=$run srv=floor cores=2" $FPORT "$fpid" 0,1
  read_mix "run=$run srv=zkr_vs_floor cores=2" $RPORT "$zpid" 0,1
  stop "$fpid"; stop "$zpid"
done

python3 - "$OUT" <<'PY'
import re, sys, statistics
rows = {}
for line in open(sys.argv[1]):
    if line.startswith('#'):
        print(line.rstrip()); continue
    kv = dict(re.findall(r'(\w+)=([^ ]+)', line))
    key = (kv['srv'], kv['cores'])
    rows.setdefault(key, []).append((float(kv['ops_per_s']), float(kv['server_cpu_us_per_op']), float(kv['lat_p99_us'])))
def med(key, i):
    v = [r[i] for r in rows.get(key, [])]
    return statistics.median(v) if v else float('nan')
print("\n| read mix, median of runs | ZooKeeper | zkr | zkr/ZK |")
print("| --- | ---: | ---: | ---: |")
for cores in ('1', '2'):
    z, r = med(('zk', cores), 0), med(('zkr', cores), 0)
    print(f"| reads/s, server on {cores} core(s) | {z:,.0f} | {r:,.0f} | {r/z:.2f}x |")
    z, r = med(('zk', cores), 1), med(('zkr', cores), 1)
    print(f"| server CPU per read, {cores} core(s) | {z:.1f} us | {r:.1f} us | {r/z:.2f}x |")
for s in ('zk', 'zkr'):
    a, b = med((s, '1'), 0), med((s, '2'), 0)
    print(f"| {s}: reads/s on 2 cores / on 1 core | | | {b/a:.2f}x |" if s == 'zkr' else f"| {s}: reads/s on 2 cores / on 1 core | {b/a:.2f}x | | |")
f, r = med(('floor', '2'), 1), med(('zkr_vs_floor', '2'), 1)
print(f"\nloopback floor (pre-encoded replies): {f:.1f} us of server CPU per read; zkr {r:.1f} us = {r/f:.2f}x the floor")
PY
echo "raw results: $OUT" >&2
