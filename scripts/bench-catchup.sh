#!/usr/bin/env bash
# Catching up a big tree (issue 22, item 8), Debian's ZooKeeper 3.8 and zkr side by side: a
# 3-member ensemble is filled with COUNT Dubbo-shaped provider znodes (`zkr bench fill`, 400-byte
# URL-encoded names); a follower is killed -9 and its data directory wiped (myid kept: a replaced
# disk); a marker znode is written; then, under an open-loop write load on the leader
# (`zkr bench write --rate RATE`, latency counted from each request's due time), the follower is
# started again. Measured:
#   - serve_ms:     from its start until a client connected to it reads the marker;
#   - joiner_peak:  its peak RSS (VmHWM) once it serves;
#   - leader_peak:  the leader's highest RSS (sampled every 200 ms) from the follower's start
#                   until it serves, and the leader's RSS just before;
#   - write p99 and max over the write run (WSECS: 90 s, 40 s with --quick; it starts 5 s
#     before the follower does): a max over 1 s is a write stall.
#
#   scripts/bench-catchup.sh            1,000,000 znodes (about 15 minutes on 2 cores)
#   scripts/bench-catchup.sh --quick    200,000 znodes (about 4 minutes)
#
# Environment: BENCH_CATCHUP_PORT_BASE (default 21600: ports 21601-21813, as scripts/lib/ensemble.sh says),
# BENCH_OUT (raw results, default target/bench/catchup-<UTC time>.txt), KEEP=1 keeps the scratch
# directory, ZKR_BIN, BENCH_SERVERS (default "zkr zk").
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=1000000; RATE=500; WSECS=90
[ "${1:-}" = "--quick" ] && { COUNT=200000; WSECS=40; }
BASE=${BENCH_CATCHUP_PORT_BASE:-21600}
ZKR=${ZKR_BIN:-target/release/zkr}
[ -n "${ZKR_BIN:-}" ] || cargo build --release --locked 2>&1 | tail -n 1
ZKSERVER=/usr/share/zookeeper/bin/zkServer.sh
[ -x "$ZKSERVER" ] || { echo "Debian's ZooKeeper is missing: apt-get install zookeeper zookeeper-bin" >&2; exit 1; }
mkdir -p target/bench
OUT=${BENCH_OUT:-target/bench/catchup-$(date -u +%Y%m%dT%H%M%SZ).txt}
W=$(mktemp -d /tmp/zkr-bench-catchup.XXXXXX)
declare -A PIDS=()
BG=()
cleanup() {
  local p
  for p in "${PIDS[@]}" "${BG[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
ms() { date +%s%3N; }
# shellcheck source=lib/ensemble.sh
source scripts/lib/ensemble.sh
record() { echo "srv=$1 $2" | tee -a "$OUT" >&2; }
kb() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status" 2>/dev/null; }
reads_marker() {  # SERVER ID: a client on member ID reads the marker
  timeout 3 "$ZKR" cli -server "127.0.0.1:$(cport "$1" "$2")" -timeout 4000 get /bench/marker 2>/dev/null | grep -qx "$MARK"
}

{
  echo "# zkr catch-up side-by-side $(date -u +%Y-%m-%dT%H:%M:%SZ) count=$COUNT rate=$RATE"
  echo "# zkr $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || echo '?'), $(java -version 2>&1 | head -1)"
  echo "# machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# 3 members each, tickTime=2000 initLimit=10 syncLimit=5, fsync on, snapCount 100000 (both defaults)"
} >"$OUT"
cat "$OUT" >&2

for s in ${BENCH_SERVERS:-zkr zk}; do
  log "$s: a fresh ensemble, filled with $COUNT znodes"
  start "$s"
  l=$(leader "$s")
  line=$("$ZKR" bench fill --server "127.0.0.1:$(cport "$s" "$l")" --count "$COUNT" --connections 4 | grep '^bench=')
  record "$s" "$line"
  f=""
  for i in 1 2 3; do [ "$i" = "$l" ] || { f=$i; break; }; done
  log "$s: member $f killed -9 and wiped; leader is member $l"
  kill -9 "${PIDS[$f]}"; wait "${PIDS[$f]}" 2>/dev/null || true
  find "$W/$s/m$f" -mindepth 1 -maxdepth 1 ! -name myid ! -name zoo.cfg ! -name out.log -exec rm -rf {} +
  MARK="marker-$s-$(date +%s)"
  "$ZKR" cli -server "127.0.0.1:$(cport "$s" "$l")" create /bench/marker "$MARK" >/dev/null
  reads_marker "$s" "$l" || { log "$s: the marker does not read back on the leader"; exit 1; }
  # The write load on the leader, and the leader's RSS every 200 ms.
  "$ZKR" bench write --server "127.0.0.1:$(cport "$s" "$l")" --server-pid "${PIDS[$l]}" --rate "$RATE" \
    --secs "$WSECS" --warmup-secs 0 --connections 4 >"$W/$s.write" 2>&1 &
  wpid=$!; BG+=("$wpid")
  lrss_before=$(kb "${PIDS[$l]}" VmRSS)
  (while :; do kb "${PIDS[$l]}" VmRSS; sleep 0.2; done) >"$W/$s.leader-rss" &
  spid=$!; BG+=("$spid")
  sleep 5
  t0=$(ms)
  launch "$s" "$f"
  tries=0
  until reads_marker "$s" "$f"; do
    tries=$((tries + 1)); [ $tries -lt 1200 ] || { log "$s: member $f does not serve"; tail -20 "$W/$s/m$f/out.log" >&2; exit 1; }
    sleep 0.1
  done
  serve=$(($(ms) - t0))
  kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
  joiner_peak=$(kb "${PIDS[$f]}" VmHWM)
  joiner_rss=$(kb "${PIDS[$f]}" VmRSS)
  leader_peak=$(sort -n "$W/$s.leader-rss" | tail -1)
  log "$s: member $f serves after $serve ms"
  [ "$serve" -lt $(((WSECS - 5) * 1000)) ] || log "$s: caught up after the write run ended: the write figures cover part of it"
  wait "$wpid" 2>/dev/null || true
  wline=$(grep '^bench=' "$W/$s.write" || true)
  [ -n "$wline" ] || { log "$s: the write load reported nothing"; cat "$W/$s.write" >&2; exit 1; }
  record "$s" "bench=catchup serve_ms=$serve joiner_peak_kb=$joiner_peak joiner_rss_kb=$joiner_rss leader_rss_before_kb=$lrss_before leader_peak_kb=$leader_peak"
  record "$s" "${wline/bench=write/bench=write_catchup}"
  stop
done

echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT" >&2
python3 - "$OUT" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    rows[(kv["srv"], kv["bench"])] = kv
def val(srv, bench, key, scale=1.0):
    r = rows.get((srv, bench), {})
    return float(r[key]) * scale if key in r else None
measures = [
    ("time until the wiped member serves", "catchup", "serve_ms", 1.0, "ms", "≤ 0.5×"),
    ("joining member: peak RSS", "catchup", "joiner_peak_kb", 1 / 1024, "MB", "≤ 1×"),
    ("leader: RSS before", "catchup", "leader_rss_before_kb", 1 / 1024, "MB", ""),
    ("leader: peak RSS during catch-up", "catchup", "leader_peak_kb", 1 / 1024, "MB", ""),
    ("writes during catch-up: p99", "write_catchup", "lat_p99_us", 1 / 1000, "ms", ""),
    ("writes during catch-up: max", "write_catchup", "lat_max_us", 1 / 1000, "ms", "zkr < 1000 ms"),
    ("fill: creates/s", "fill", "ops_per_s", 1.0, "", ""),
]
print("| measure | ZooKeeper 3.8 | zkr | zkr / ZK | goal |")
print("|---|---|---|---|---|")
for name, bench, key, scale, unit, goal in measures:
    zk, zr = val("zk", bench, key, scale), val("zkr", bench, key, scale)
    f = lambda v: "–" if v is None else f"{v:,.1f} {unit}".strip()
    ratio = f"{zr / zk:.2f}" if zk and zr is not None else "–"
    print(f"| {name} | {f(zk)} | {f(zr)} | {ratio} | {goal} |")
PY
echo "raw results: $OUT"
