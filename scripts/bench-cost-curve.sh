#!/usr/bin/env bash
# The cost curve of zkr: how throughput, memory and notification time grow with znodes
# (10^4..10^6), with watchers (10^2..10^5) and with sessions (10^2..10^4). Each point runs
# against a fresh zkr (fsync on); the results go to target/bench/cost-curve.txt, and
# scripts/bench-cost-plot.py turns them into docs/cost-curve.md (table) and docs/cost-curve.png.
#   scripts/bench-cost-curve.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1
if [ $QUICK = 1 ]; then
  ZNODES="10000 30000"; WATCHERS="100 1000"; SESSIONS="100 1000"; SECS=2
else
  ZNODES="10000 100000 1000000"; WATCHERS="100 1000 10000 100000"; SESSIONS="100 1000 10000"; SECS=10
fi
PORT=$(( ${BENCH_PORT_BASE:-21100} + 3 ))
ZKR=${ZKR_BIN:-target/release/zkr}
[ -n "${ZKR_BIN:-}" ] || cargo build --release --locked 2>&1 | tail -n 1
ulimit -n "$(ulimit -Hn)"
mkdir -p target/bench docs
OUT=${BENCH_OUT:-target/bench/cost-curve.txt}
W=$(mktemp -d /tmp/zkr-cost-curve.XXXXXX)
PID=""
trap '[ -z "$PID" ] || kill -9 "$PID" 2>/dev/null; rm -rf "$W"' EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
start() {
  rm -rf "$W/data"
  "$ZKR" serve --bind 127.0.0.1 --port "$PORT" --data-dir "$W/data" --max-client-cnxns 0 >"$W/zkr.out" 2>&1 &
  PID=$!
  until [ "$(echo srvr | timeout 3 nc -q1 127.0.0.1 "$PORT" 2>/dev/null | grep -c '^Zxid')" = 1 ]; do sleep 0.1; done
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""; }
bench() { # axis value workload args...
  local axis=$1 v=$2 w=$3; shift 3
  local line
  line=$(timeout 1200 "$ZKR" bench "$w" --server "127.0.0.1:$PORT" --server-pid "$PID" "$@" | grep '^bench=')
  echo "axis=$axis value=$v $line" | tee -a "$OUT" >&2
}
echo "# zkr cost curve $(date -u +%Y-%m-%dT%H:%M:%SZ) zkr $(git rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT"
# No expiries here: a long provider timeout, so that a loader busy with 10^5 re-lists cannot
# make the server expire a provider whose pings came late.
CHURN_SMALL="--providers 4 --interfaces 4 --consumers 20 --rounds 5 --expiries 0 --provider-timeout-ms 30000"
for n in $ZNODES; do
  log "znodes $n"; start
  bench znodes "$n" fill --count "$n"
  bench znodes "$n" read --keys "$n" --secs $SECS --warmup-secs 1
  bench znodes "$n" churn $CHURN_SMALL
  stop
done
for w in $WATCHERS; do
  if [ "$w" -ge 100000 ]; then i=100; else i=10; fi
  log "watchers $w"; start
  bench watchers "$w" churn --providers 4 --interfaces $i --consumers $((w / i)) --rounds 5 --expiries 0 \
    --provider-timeout-ms 30000
  stop
done
for s in $SESSIONS; do
  log "sessions $s"; start
  bench sessions "$s" sessions --count "$s" --secs $((SECS * 2)) --ping-ms 10000
  stop
done
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT"
python3 scripts/bench-cost-plot.py "$OUT" docs/cost-curve.md docs/cost-curve.png
