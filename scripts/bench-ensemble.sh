#!/usr/bin/env bash
# 3-member ensembles side by side (issue #12, item 9): Debian's ZooKeeper 3.8 and zkr on the same
# machine, same loader (`zkr bench --server a,b,c`, which spreads its sessions over the members
# and sums the members' CPU and RSS from /proc), fsync on for both, tickTime=2000 for both.
# Every workload runs against a fresh ensemble; which server goes first alternates.
#   - write: create/setData, closed loop (forwarded to the leader on both);
#   - read:  getData/exists/getChildren2 spread over the three members;
#   - churn: Dubbo providers leaving and joining, consumers re-listing;
#   - failover: benches/failover/Failover.java (the official Java client, N sessions on the
#     3-host connect string, each writing its own node at a steady pace) while the leader is
#     SIGKILLed K times (restarted and caught up in between): time until writes succeed again
#     and until every session is connected again, sessions expired, acknowledged writes lost;
#   - pause: benches/pause/writer.py (kazoo, one session on a follower, 64 pipelined 32 KB
#     setData) while the leader is SIGSTOPped for 20 s, PAUSES times: time from the SIGSTOP until
#     the follower's writes are acknowledged again, and whether the session expired (issue 22,
#     item 3: a paused leader never stalls a follower);
#   - bigwrite (only when BENCH_ONLY names it): 1 KB, 100 KB and 1 MB values, pipelined, with the
#     followers' longest silence from their leader on zkr (issue 43).
#
#   scripts/bench-ensemble.sh            full run (10 kills per server; about 25 minutes)
#   scripts/bench-ensemble.sh --quick    small sizes, 3 kills (about 6 minutes)
#
# Environment: BENCH_ENS_PORT_BASE (default 21200: clients base+1..3 ZooKeeper, +11..13 zkr;
# peers +101..; elections +201..), BENCH_OUT (raw results, default
# target/bench/ensemble-<UTC time>.txt), KEEP=1 keeps the scratch directory, ZKR_BIN,
# BENCH_ONLY="write read churn failover pause bigwrite" (a subset, space separated; bigwrite only
# when named), ZKR_CFG_EXTRA (lines
# appended to each zkr member's zoo.cfg, e.g. ZKR_CFG_EXTRA=zkr.keepClientsOnLeaderLoss=true).
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1
if [ $QUICK = 1 ]; then
  SECS=3; WARM=1; KILLS=3; PAUSES=1; FO_SESSIONS=10; CHURN="--providers 5 --interfaces 4 --consumers 20 --rounds 5 --expiries 1"
else
  SECS=15; WARM=2; KILLS=10; PAUSES=3; FO_SESSIONS=30; CHURN="--providers 20 --interfaces 10 --consumers 100 --rounds 20 --expiries 3"
fi
FO_RATE=10          # writes per second per failover session
FO_TIMEOUT=30000    # the failover sessions' timeout, ms (Curator's default is 60 s, clamped to 40 s)
BASE=${BENCH_ENS_PORT_BASE:-21200}
ZKR=${ZKR_BIN:-target/release/zkr}
[ -n "${ZKR_BIN:-}" ] || cargo build --release --locked 2>&1 | tail -n 1
ZKSERVER=/usr/share/zookeeper/bin/zkServer.sh
[ -x "$ZKSERVER" ] || { echo "Debian's ZooKeeper is missing: apt-get install zookeeper zookeeper-bin" >&2; exit 1; }
command -v javac >/dev/null || { echo "javac (the JDK) is missing" >&2; exit 1; }

# shellcheck source=lib/ensemble.sh
source scripts/lib/ensemble.sh

mkdir -p target/bench
OUT=${BENCH_OUT:-target/bench/ensemble-$(date -u +%Y%m%dT%H%M%SZ).txt}
W=$(mktemp -d /tmp/zkr-bench-ensemble.XXXXXX)
declare -A PIDS=()   # member id -> pid
DRIVER=""
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -z "$DRIVER" ] || kill -9 "$DRIVER" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
ms() { date +%s%3N; }

# The Java driver, compiled once.
CP=$(printf '/usr/share/java/%s.jar:' zookeeper zookeeper-jute slf4j-api slf4j-nop netty-all commons-io)
for m in buffer codec common handler resolver transport transport-native-epoll transport-native-unix-common; do
  [ -f "/usr/share/java/netty-$m.jar" ] && CP="$CP/usr/share/java/netty-$m.jar:"
done
mkdir -p "$W/classes"
javac -nowarn -d "$W/classes" -cp "$CP" benches/failover/Failover.java

record() { echo "srv=$1 $2" | tee -a "$OUT" >&2; }
bench() {
  local s=$1 w=$2 line
  shift 2
  line=$(timeout 1200 "$ZKR" bench "$w" --server "$(hosts "$s")" --server-pid "$(pids)" "$@" | grep '^bench=')
  record "$s" "$line"
}
order() { if [ $(($1 % 2)) = 0 ]; then echo "zk zkr"; else echo "zkr zk"; fi; }

# failover SERVER: the Java driver on a fresh ensemble, the leader SIGKILLed KILLS times
failover() {
  local s=$1 k l t0 fifo="$W/driver.in" out="$W/$1.failover"
  rm -f "$fifo"; mkfifo "$fifo"
  java -cp "$CP$W/classes" Failover "$(hosts "$s")" "$FO_SESSIONS" "$FO_RATE" "$FO_TIMEOUT" <"$fifo" >"$out" 2>"$W/$s.driver.err" &
  DRIVER=$!
  exec 7>"$fifo"
  for _ in $(seq 600); do grep -q '^ready' "$out" && break; sleep 0.1; done
  grep -q '^ready' "$out" || { log "the failover driver did not start"; cat "$W/$s.driver.err" >&2; exit 1; }
  sleep 3
  for k in $(seq "$KILLS"); do
    l=$(leader "$s")
    t0=$(ms)
    kill -9 "${PIDS[$l]}"; wait "${PIDS[$l]}" 2>/dev/null || true
    echo "kill $t0" >&7
    log "$s: kill $k of $KILLS: SIGKILLed leader member $l"
    # a new leader among the other two, then the old one back and caught up
    local others=() i
    for i in 1 2 3; do [ "$i" = "$l" ] || others+=("$i"); done
    wait_serving "$s" "${others[@]}"
    sleep 5
    launch "$s" "$l"
    wait_serving "$s" 1 2 3
    sleep 5
  done
  echo done >&7
  exec 7>&-
  wait "$DRIVER" || true
  DRIVER=""
  grep -E '^(kill=|summary|LOST)' "$out" | sed "s/^/srv=$s bench=failover /" | tee -a "$OUT" >&2
}

# pause SERVER: a kazoo writer on a follower, the leader SIGSTOPped 20 s, PAUSES times
pause() {
  local s=$1 n l f i t0 acks="$W/$1.pause.acks" wlog="$W/$1.pause.out" wpid resumed expired
  for n in $(seq "$PAUSES"); do
    l=$(leader "$s")
    f=""
    for i in 1 2 3; do [ "$i" = "$l" ] || { f=$i; break; }; done
    rm -f "$acks"
    /usr/bin/python3 benches/pause/writer.py "127.0.0.1:$(cport "$s" "$f")" "$acks" 32 >"$wlog" 2>&1 &
    wpid=$!
    for _ in $(seq 300); do grep -q '^ready' "$wlog" && break; sleep 0.1; done
    sleep 5
    t0=$(ms)
    kill -STOP "${PIDS[$l]}"
    log "$s: pause $n of $PAUSES: SIGSTOPped leader member $l for 20 s, writes through member $f"
    sleep 20
    kill -CONT "${PIDS[$l]}"
    wait "$wpid" || true
    # Replies already on their way drain within a moment: the first ack 300 ms after the stop
    # was ordered by a new leader (or by the old one, woken up).
    resumed=$(awk -v t="$t0" '/^[0-9]+$/ && $1 >= t + 300 { print $1 - t; exit }' "$acks")
    expired=$(sed -n 's/^expired=//p' "$acks")
    record "$s" "bench=pause n=$n resumed_ms=${resumed:-none} expired=${expired:-?}"
    wait_serving "$s" 1 2 3
    sleep 3
  done
}

# bigwrite SERVER: closed-loop create/setData of 1 KB, 100 KB and 1 MB values, 4 sessions x 8 in
# flight spread over the members (issue 43: large znodes, as Solr configsets and Kafka state near
# jute.maxbuffer); on zkr also the longest silence each follower heard from its leader during each
# size (mntr zk_leader_gap_max_ms, reset by srst before it; ZooKeeper has no such figure).
bigwrite() {
  local s=$1 size i l line gaps
  for size in 1000 100000 1000000; do
    l=$(leader "$s")
    for i in 1 2 3; do echo srst | timeout 3 nc -q1 127.0.0.1 "$(cport "$s" "$i")" >/dev/null 2>&1 || true; done
    line=$(timeout 1200 "$ZKR" bench write --server "$(hosts "$s")" --server-pid "$(pids)" \
      --data-bytes "$size" --connections 4 --window 8 $RW | grep '^bench=')
    gaps=""
    for i in 1 2 3; do
      [ "$i" = "$l" ] && continue
      gaps+="$(echo mntr | timeout 3 nc -q1 127.0.0.1 "$(cport "$s" "$i")" 2>/dev/null | awk '$1=="zk_leader_gap_max_ms"{print $2}'),"
    done
    record "$s" "bigwrite data_bytes=$size follower_gap_max_ms=${gaps%,} $line"
  done
}

{
  echo "# zkr ensemble side-by-side $(date -u +%Y-%m-%dT%H:%M:%SZ) quick=$QUICK"
  echo "# zkr $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || echo '?'), $(java -version 2>&1 | head -1)"
  echo "# machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr)"
  echo "# 3 members each, tickTime=2000, fsync on; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  [ -z "${ZKR_CFG_EXTRA:-}" ] || echo "# zkr members' zoo.cfg also has: $ZKR_CFG_EXTRA"
} >"$OUT"
cat "$OUT" >&2

RW="--secs $SECS --warmup-secs $WARM"
ONLY=" ${BENCH_ONLY:-write read churn failover pause} "
wanted() { [[ "$ONLY" == *" $1 "* ]]; }
k=0
for w in write read; do
  wanted "$w" || continue
  for s in $(order $k); do
    log "$w on $s"; start "$s"; bench "$s" "$w" $RW; stop
  done
  k=$((k + 1))
done
for s in $(order $k); do
  wanted churn || break
  log "churn on $s"; start "$s"; bench "$s" churn $CHURN; stop
done
k=$((k + 1))
for s in $(order $k); do
  wanted failover || break
  log "failover on $s ($KILLS leader kills, $FO_SESSIONS Java-client sessions)"; start "$s"; failover "$s"; stop
done

for s in $(order $k); do
  wanted bigwrite || break
  log "bigwrite on $s (1 KB, 100 KB, 1 MB values)"; start "$s"; bigwrite "$s"; stop
done

for s in $(order $k); do
  wanted pause || break
  /usr/bin/python3 -c "import kazoo" 2>/dev/null || { log "pause needs kazoo: apt-get install python3-kazoo"; exit 1; }
  log "pause on $s ($PAUSES leader pauses of 20 s)"; start "$s"; pause "$s"; stop
done

echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT" >&2
python3 scripts/bench-ensemble-report.py "$OUT"
echo "raw results: $OUT"
