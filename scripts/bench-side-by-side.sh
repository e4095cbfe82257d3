#!/usr/bin/env bash
# zkr vs Debian's ZooKeeper 3.8, same machine, same run, same loader (`zkr bench`, which speaks
# the wire protocol itself), fsync on for both (ZooKeeper's forceSync=yes default, zkr's default).
# Every workload runs against a fresh server with an empty data directory; which server goes
# first alternates from one workload to the next. Prints every figure for both and their ratio,
# with the targets of issue #6, and keeps the raw summary lines.
#
#   scripts/bench-side-by-side.sh            full run (10-20 min on 2 cores; 1,000,000-node fill)
#   scripts/bench-side-by-side.sh --quick    small sizes (~3 min), to check the script itself
#
# Environment: BENCH_PORT_BASE (default 21100; uses base+1 for ZooKeeper, base+2 for zkr),
# BENCH_OUT (raw results file, default target/bench/side-by-side-<UTC time>.txt), KEEP=1 keeps
# the scratch directory, BENCH_ONLY="read churn" runs a subset of
# read write mixed read_half churn sessions fill (fill includes memory and restart;
# read_half needs read).
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1
if [ $QUICK = 1 ]; then
  SECS=3; WARM=1; FILL=20000; SESSIONS=1000; SESS_SECS=5; PING_MS=2000; SETTLE=3
  CHURN="--providers 5 --interfaces 4 --consumers 20 --rounds 5 --expiries 1"
else
  SECS=15; WARM=2; FILL=1000000; SESSIONS=10000; SESS_SECS=30; PING_MS=10000; SETTLE=15
  CHURN="--providers 20 --interfaces 10 --consumers 100 --rounds 20 --expiries 3"
fi
BASE=${BENCH_PORT_BASE:-21100}
ZPORT=$((BASE + 1)); RPORT=$((BASE + 2))
ZKR=${ZKR_BIN:-target/release/zkr}
[ -n "${ZKR_BIN:-}" ] || cargo build --release --locked 2>&1 | tail -n 1
# shellcheck source=lib/zookeeper.sh
source scripts/lib/zookeeper.sh
zk_require
command -v jcmd >/dev/null || { echo "jcmd (the JDK) is missing" >&2; exit 1; }

# 10,000 sessions need 10,000 descriptors in the loader and in each server.
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -gt $((SESSIONS + 1000)) ] || { echo "ulimit -n $(ulimit -n) is too low for $SESSIONS sessions" >&2; exit 1; }

mkdir -p target/bench
OUT=${BENCH_OUT:-target/bench/side-by-side-$(date -u +%Y%m%dT%H%M%SZ).txt}
W=$(mktemp -d /tmp/zkr-side-by-side.XXXXXX)
PID=""
cleanup() {
  [ -z "$PID" ] || kill -9 "$PID" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
port_of() { if [ "$1" = zk ]; then echo $ZPORT; else echo $RPORT; fi; }

# start SERVER: a fresh data directory; sets PID.
start() {
  local s=$1 port; port=$(port_of "$1")
  rm -rf "$W/$s"; mkdir -p "$W/$s"
  launch "$s"
  local tries=0
  until [ "$(echo srvr | timeout 3 nc -q1 127.0.0.1 "$port" 2>/dev/null | grep -c "^Zxid")" = 1 ]; do
    tries=$((tries + 1)); [ $tries -lt 600 ] || { log "$s did not start"; tail -20 "$W/$s.out" >&2; exit 1; }
    kill -0 "$PID" 2>/dev/null || { log "$s exited"; tail -20 "$W/$s.out" >&2; exit 1; }
    sleep 0.1
  done
}
# launch SERVER over its existing data directory; sets PID.
launch() {
  local s=$1
  if [ "$s" = zk ]; then
    zk_standalone_cfg "$W" "$ZPORT"
    zk_start "$W"
  else
    "$ZKR" serve --bind 127.0.0.1 --port "$RPORT" --data-dir "$W/zkr" --max-client-cnxns 0 >"$W/zkr.out" 2>&1 &
  fi
  PID=$!
}
stop() {
  [ -n "$PID" ] || return 0
  kill "$PID" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  PID=""
}
# record SERVER LINE: one raw result.
record() { echo "srv=$1 $2" | tee -a "$OUT" >&2; }
# bench SERVER WORKLOAD ARGS...: runs the loader against SERVER (already started).
bench() {
  local s=$1 w=$2; shift 2
  local line
  line=$(timeout 1200 "$ZKR" bench "$w" --server "127.0.0.1:$(port_of "$s")" --server-pid "$PID" "$@" | grep '^bench=')
  record "$s" "$line"
}
order() { if [ $(($1 % 2)) = 0 ]; then echo "zk zkr"; else echo "zkr zk"; fi; }
field() { sed -n "s/.*srv=$1 bench=$2 .*\\b$3=\\([^ ]*\\).*/\\1/p" "$OUT" | tail -1; }

{
  echo "# zkr side-by-side $(date -u +%Y-%m-%dT%H:%M:%SZ) quick=$QUICK"
  echo "# zkr $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || echo '?'), $(java -version 2>&1 | head -1)"
  echo "# machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr)"
  echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT"
cat "$OUT" >&2

RW="--secs $SECS --warmup-secs $WARM"
ONLY=" ${BENCH_ONLY:-read write mixed read_half churn sessions fill} "
wanted() { [[ "$ONLY" == *" $1 "* ]]; }
k=0
for w in read write mixed; do
  wanted "$w" || continue
  for s in $(order $k); do
    log "$w on $s"; start "$s"; bench "$s" "$w" $RW; stop
  done
  k=$((k + 1))
done

# Latency at half of zkr's maximum read throughput, the same rate for both.
RATE=$(awk -v r="$(field zkr read ops_per_s)" 'BEGIN{printf "%d", r/2}')
for s in $(order $k); do
  wanted read_half && wanted read || break
  log "read at $RATE/s on $s"; start "$s"
  line=$(timeout 1200 "$ZKR" bench read --server "127.0.0.1:$(port_of "$s")" --server-pid "$PID" $RW --rate "$RATE" | grep '^bench=')
  record "$s" "${line/bench=read/bench=read_half}"
  stop
done
k=$((k + 1))

for s in $(order $k); do
  wanted churn || break
  log "churn on $s"; start "$s"; bench "$s" churn $CHURN; stop
done
k=$((k + 1))

for s in $(order $k); do
  wanted sessions || break
  log "$SESSIONS sessions on $s"; start "$s"
  bench "$s" sessions --count "$SESSIONS" --secs "$SESS_SECS" --ping-ms "$PING_MS"
  stop
done
k=$((k + 1))

# Fill, memory, then restart after SIGKILL (both must recover from snapshot + log).
LAST=$("$ZKR" bench fill --path-of $((FILL - 1)))
readable() { # port: polls until getData of $LAST succeeds
  python3 - "$1" "$LAST" <<'PY'
import sys, time, socket, struct
port, path = int(sys.argv[1]), sys.argv[2]
def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise OSError("closed")
        b += c
    return b
deadline = time.time() + 600
while time.time() < deadline:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        req = struct.pack(">iqiq", 0, 0, 30000, 0) + struct.pack(">i", 16) + b"\0" * 16 + b"\0"
        s.sendall(struct.pack(">i", len(req)) + req)
        recvn(s, struct.unpack(">i", recvn(s, 4))[0])
        p = path.encode()
        body = struct.pack(">ii", 1, 4) + struct.pack(">i", len(p)) + p + b"\0"
        s.sendall(struct.pack(">i", len(body)) + body)
        data = recvn(s, struct.unpack(">i", recvn(s, 4))[0])
        if struct.unpack(">iqi", data[:16])[2] == 0:
            sys.exit(0)
    except (OSError, struct.error):
        pass
    time.sleep(0.02)
sys.exit(1)
PY
}
heap_kb() { # ZooKeeper's live heap after a full GC, kB
  jcmd "$PID" GC.run >/dev/null 2>&1; sleep 1
  jcmd "$PID" GC.heap_info 2>/dev/null | sed -n 's/.*total [0-9]*K, used \([0-9]*\)K.*/\1/p' | head -1
}
ms() { date +%s%3N; }
for s in $(order $k); do
  wanted fill || break
  log "fill $FILL on $s"; start "$s"
  [ "$s" = zk ] && hb=$(heap_kb)
  rss0=$(awk '/VmRSS/{print $2}' "/proc/$PID/status")
  bench "$s" fill --count "$FILL"
  rss=$(awk '/VmRSS/{print $2}' "/proc/$PID/status")
  # The fill's last create is a multiple of snapCount, so the end-of-fill figure catches both
  # servers mid-snapshot. Settled: the same server $SETTLE s later, idle, as ZooKeeper's live
  # heap after a full GC is a settled figure too.
  sleep "$SETTLE"
  rss_s=$(awk '/VmRSS/{print $2}' "/proc/$PID/status")
  settled="rss_settled_kb=$rss_s settled_bytes_per_znode=$(( (rss_s - rss0) * 1024 / FILL ))"
  if [ "$s" = zk ]; then
    ha=$(heap_kb)
    rss_gc=$(awk '/VmRSS/{print $2}' "/proc/$PID/status")
    record zk "bench=memory rss_kb=$rss $settled heap_before_kb=$hb heap_after_gc_kb=$ha rss_after_gc_kb=$rss_gc heap_bytes_per_znode=$(( (ha - hb) * 1024 / FILL ))"
  else
    record zkr "bench=memory rss_kb=$rss $settled"
  fi
  log "SIGKILL and restart $s"
  kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  disk=$(du -s --block-size=1 "$W/$s" | cut -f1)
  t0=$(ms); launch "$s"; readable "$(port_of "$s")"; t=$(( $(ms) - t0 ))
  # RSS once recovered: the same tree without what the fill left behind (freed snapshot copies,
  # fragmentation, a JVM heap not yet collected).
  sleep 2; rss_r=$(awk '/VmRSS/{print $2}' "/proc/$PID/status")
  record "$s" "bench=restart count=$FILL ms=$t disk_bytes=$disk rss_after_restart_kb=$rss_r"
  stop
done

echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT" >&2
python3 scripts/bench-report.py "$OUT"
echo "raw results: $OUT"
