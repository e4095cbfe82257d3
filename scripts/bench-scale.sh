#!/usr/bin/env bash
# Registry scale, side by side (issue 25): a fresh 3-member ensemble of Debian's ZooKeeper 3.8
# and of zkr in turn, each loaded by `zkr bench scale` (one loader process, the same for both):
# S sessions spread over the members, 1,000 services with 10 providers each (one ephemeral,
# URL-encoded node of 300-1,500 bytes per provider and service; a provider application exports
# 10 services), every other session a consumer watching 10 services' providers directories
# (getChildren2 + watch, re-listed on every event), pings at a third of the 30 s timeout. Then:
# the steady window (pings only), a rolling release (10% of the providers leave and come back over
# 60 s), a follower SIGKILLed (reconnect storm to the survivors), and that member restarted.
#
#   scripts/bench-scale.sh            S = 100,000, or as many as the open-file limit lets a survivor hold
#   scripts/bench-scale.sh --quick    S = 20,000 (under 10 minutes)
#   scripts/bench-scale.sh --sessions N [--steady-secs X] [--no-storm]   any size; the cost curve
#                                     (scripts/bench-scale-curve.sh) uses it without the storm
#
# It raises the open-file limit and, as root, the kernel's accept backlogs for its run
# (restored on exit). Environment: BENCH_SCALE_PORT_BASE (default 22000: clients
# base+1..3 ZooKeeper, +11..13 zkr; peers +101..; elections +201..), BENCH_OUT (raw results,
# default target/bench/scale-<UTC time>.txt), BENCH_ONLY ("zk zkr", a subset), KEEP=1 keeps the
# scratch directory, ZKR_BIN, SCALE_EXTRA (more `zkr bench scale` flags).
set -euo pipefail
cd "$(dirname "$0")/.."

SESSIONS=100000; STEADY=30; QUICK=0; STORM=1
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1; SESSIONS=20000; STEADY=20 ;;
    --sessions) SESSIONS=$2; shift ;;
    --steady-secs) STEADY=$2; shift ;;
    --no-storm) STORM=0 ;;
    *) echo "usage: $0 [--quick] [--sessions N] [--steady-secs X] [--no-storm]" >&2; exit 2 ;;
  esac
  shift
done
BASE=${BENCH_SCALE_PORT_BASE:-22000}
ZKR=${ZKR_BIN:-target/release/zkr}
[ -n "${ZKR_BIN:-}" ] || cargo build --release --locked 2>&1 | tail -n 1
ZKSERVER=/usr/share/zookeeper/bin/zkServer.sh
[ -x "$ZKSERVER" ] || { echo "Debian's ZooKeeper is missing: apt-get install zookeeper zookeeper-bin" >&2; exit 1; }

# shellcheck source=lib/ensemble.sh
source scripts/lib/ensemble.sh

mkdir -p target/bench
OUT=${BENCH_OUT:-target/bench/scale-$(date -u +%Y%m%dT%H%M%SZ).txt}
W=$(mktemp -d /tmp/zkr-bench-scale.XXXXXX)
declare -A PIDS=()
declare -A SYSCTL_OLD=()
cleanup() {
  local p k
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  # The restarted member was started by the loader, not by this script.
  pkill -9 -f "$W/" 2>/dev/null || true
  for k in "${!SYSCTL_OLD[@]}"; do sysctl -q -w "$k=${SYSCTL_OLD[$k]}" >/dev/null 2>&1 || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# Limits: a file per session on the server and on the loader. The local port range is left
# alone: the kernel reuses an ephemeral port towards different server ports, so its 28,000 are per
# member, and a wider range would hand the members' own peer ports to the loader's sockets.
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ "$(id -u)" = 0 ]; then
  for kv in net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535; do
    k=${kv%%=*}
    SYSCTL_OLD[$k]=$(sysctl -n "$k" 2>/dev/null | tr '\t' ' ') || continue
    sysctl -q -w "$kv" >/dev/null 2>&1 || log "could not set $kv"
  done
fi

# A member is one process: it holds one file per connection, and after a member is killed each
# survivor holds half of all sessions. Where the hard limit cannot be raised (a container without
# CAP_SYS_RESOURCE), the size is cut to what the survivors can hold, and the output says so.
NOFILE=$(ulimit -n)
FIT=$(( (NOFILE - 1000) * 2 ))
# Without a member killed, the three members share the sessions.
[ $STORM = 1 ] || FIT=$(( (NOFILE - 1000) * 3 ))
ASKED=$SESSIONS
if [ "$SESSIONS" -gt "$FIT" ]; then
  SESSIONS=$FIT
  log "the open-file limit here is $NOFILE (hard limit $(ulimit -Hn)): after a member is killed each survivor holds half the sessions, so $ASKED sessions are cut to $SESSIONS"
fi

# restart_cmd SERVER ID: the command the loader runs to start member ID again (it execs the server)
restart_cmd() {
  local s=$1 i=$2 d="$W/$1/m$2"
  if [ "$s" = zk ]; then
    echo "cd $d && ZOOCFGDIR=$d ZOO_LOG_DIR=$d ZOOPIDFILE=$d/pid exec $ZKSERVER start-foreground $d/zoo.cfg >>$d/out.log 2>&1"
  else
    echo "exec $(realpath "$ZKR") serve --config $d/zoo.cfg >>$d/out.log 2>&1"
  fi
}

{
  echo "# zkr registry scale side-by-side $(date -u +%Y-%m-%dT%H:%M:%SZ) sessions=$SESSIONS asked=$ASKED quick=$QUICK"
  echo "# zkr $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || echo '?'), $(java -version 2>&1 | head -1)"
  echo "# machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); open files $(ulimit -n), ports $(sysctl -n net.ipv4.ip_local_port_range | tr '\t' ' ')"
  echo "# 3 members each, tickTime=2000, fsync on, JVM defaults (Debian's zkServer.sh sets no heap); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT"
cat "$OUT" >&2

ONLY=" ${BENCH_ONLY:-zk zkr} "
for s in zk zkr; do
  [[ "$ONLY" == *" $s "* ]] || continue
  log "scale on $s: $SESSIONS sessions"
  start "$s"
  l=$(leader "$s")
  f=1; [ "$l" = 1 ] && f=2
  kill_args=()
  [ $STORM = 0 ] || kill_args=(--kill-member $((f - 1)) --restart-cmd "$(restart_cmd "$s" "$f")")
  # shellcheck disable=SC2086
  line=$(timeout 5400 "$ZKR" bench scale --server "$(hosts "$s")" --server-pid "$(pids)" \
    --sessions "$SESSIONS" --steady-secs "$STEADY" "${kill_args[@]}" ${SCALE_EXTRA:-} | grep '^bench=') \
    || { log "the loader failed on $s"; line="bench=scale failed=1"; }
  echo "srv=$s leader=$l killed=$f $line" | tee -a "$OUT" >&2
  stop
  pkill -9 -f "$W/" 2>/dev/null || true
  sleep 2
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT" >&2
python3 scripts/bench-scale-report.py "$OUT"
echo "raw results: $OUT"
