# Sourced by the benchmark scripts that run 3-member ensembles of Debian's ZooKeeper 3.8 and of
# zkr side by side (bench-ensemble.sh, bench-catchup.sh): one zoo.cfg shape, one way to start,
# stop and find members. The sourcing script sets W (scratch directory), BASE (port base: clients
# base+1..3 ZooKeeper, +11..13 zkr; peers +101..; elections +201..), ZKR (the zkr binary),
# ZKSERVER (zkServer.sh), an associative array PIDS, a function log, and optionally
# ZKR_CFG_EXTRA (lines appended to each zkr member's zoo.cfg) and CFG_EXTRA (to both servers').
command -v nc >/dev/null || { echo "nc is missing (members are asked with srvr): apt-get install netcat-openbsd" >&2; exit 1; }
cport() { if [ "$1" = zk ]; then echo $((BASE + $2)); else echo $((BASE + 10 + $2)); fi; }
hosts() { echo "127.0.0.1:$(cport "$1" 1),127.0.0.1:$(cport "$1" 2),127.0.0.1:$(cport "$1" 3)"; }
pids() { echo "${PIDS[1]},${PIDS[2]},${PIDS[3]}"; }
mode() { echo srvr | timeout 3 nc -q1 127.0.0.1 "$(cport "$1" "$2")" 2>/dev/null | sed -n 's/^Mode: //p'; }
# config SERVER ID: member ID's zoo.cfg (the same shape for both servers)
config() {
  local s=$1 i=$2 j off=0
  [ "$s" = zkr ] && off=10
  cat <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$W/$s/m$i
clientPort=$(cport "$s" "$i")
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
CFG
  for j in 1 2 3; do
    echo "server.$j=127.0.0.1:$((BASE + 100 + off + j)):$((BASE + 200 + off + j));127.0.0.1:$(cport "$s" "$j")"
  done
  if [ "$s" = zkr ] && [ -n "${ZKR_CFG_EXTRA:-}" ]; then echo "$ZKR_CFG_EXTRA"; fi
  if [ -n "${CFG_EXTRA:-}" ]; then echo "$CFG_EXTRA"; fi
}
# launch SERVER ID: starts member ID on its existing data directory
launch() {
  local s=$1 i=$2 d="$W/$1/m$2"
  if [ "$s" = zk ]; then
    ZOOCFGDIR=$d ZOO_LOG_DIR=$d ZOOPIDFILE=$d/pid "$ZKSERVER" start-foreground "$d/zoo.cfg" >>"$d/out.log" 2>&1 &
  else
    "$ZKR" serve --config "$d/zoo.cfg" >>"$d/out.log" 2>&1 &
  fi
  PIDS[$i]=$!
}
# wait_serving SERVER ID...: until each member answers srvr as leader or follower
wait_serving() {
  local s=$1 i tries
  shift
  for i in "$@"; do
    tries=0
    until mode "$s" "$i" | grep -qE '^(leader|follower)$'; do
      tries=$((tries + 1)); [ $tries -lt 900 ] || { log "$s member $i is not serving"; tail -20 "$W/$s/m$i/out.log" >&2; exit 1; }
      sleep 0.1
    done
  done
}
# start SERVER: a fresh 3-member ensemble
start() {
  local s=$1 i
  rm -rf "${W:?}/$s"
  for i in 1 2 3; do
    mkdir -p "$W/$s/m$i"
    echo "$i" >"$W/$s/m$i/myid"
    config "$s" "$i" >"$W/$s/m$i/zoo.cfg"
  done
  for i in 1 2 3; do launch "$s" "$i"; done
  wait_serving "$s" 1 2 3
}
stop() {
  local i
  for i in "${!PIDS[@]}"; do kill -9 "${PIDS[$i]}" 2>/dev/null || true; wait "${PIDS[$i]}" 2>/dev/null || true; done
  PIDS=()
}
leader() {  # SERVER: the leader's member id
  local s=$1 i
  for _ in $(seq 300); do
    for i in 1 2 3; do [ "$(mode "$s" "$i")" = leader ] && { echo "$i"; return 0; }; done
    sleep 0.1
  done
  return 1
}
