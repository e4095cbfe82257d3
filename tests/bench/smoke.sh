#!/usr/bin/env bash
# Smoke run of the load generator (`zkr bench`) against a zkr started here: every workload runs
# briefly and its one-line summary must parse, show work done and no errors. A check of the tool,
# not of speed (speed is measured by scripts/bench-side-by-side.sh).
#   ZKR_BIN=target/release/zkr BENCH_SMOKE_PORT=21050 bash tests/bench/smoke.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
ZKR=${ZKR_BIN:-target/release/zkr}
PORT=${BENCH_SMOKE_PORT:-21050}
[ -x "$ZKR" ] || { echo "no zkr binary at $ZKR"; exit 1; }
W=$(mktemp -d /tmp/zkr-bench-smoke.XXXXXX)
"$ZKR" serve --bind 127.0.0.1 --port "$PORT" --data-dir "$W/data" --max-client-cnxns 0 >"$W/zkr.log" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 100); do
  [ "$(echo srvr | timeout 3 nc -q1 127.0.0.1 "$PORT" 2>/dev/null | grep -c '^Zxid')" = 1 ] && break
  sleep 0.1
done

PASS=0; FAIL=0
# check NAME CONDITION... -- ARGS: runs `zkr bench ARGS`, then each CONDITION (key>value or
# key=value) against its summary line.
check() {
  local name=$1; shift
  local conds=()
  while [ "$1" != -- ]; do conds+=("$1"); shift; done
  shift
  local out line ok=1
  out=$(timeout 120 "$ZKR" bench "$@" --server "127.0.0.1:$PORT" --server-pid "$PID" 2>&1)
  line=$(grep "^bench=$name " <<<"$out" | tail -1)
  if [ -z "$line" ]; then
    ok=0
  else
    for c in "${conds[@]}"; do
      local key val got
      if [[ $c == *">"* ]]; then key=${c%%>*}; val=${c#*>}; else key=${c%%=*}; val=${c#*=}; fi
      got=$(grep -o " $key=[^ ]*" <<<"$line" | cut -d= -f2)
      if [ -z "$got" ]; then ok=0
      elif [[ $c == *">"* ]]; then awk -v g="$got" -v v="$val" 'BEGIN{exit !(g+0 > v+0)}' || ok=0
      else [ "$got" = "$val" ] || ok=0
      fi
    done
  fi
  if [ $ok = 1 ]; then
    PASS=$((PASS + 1)); echo "PASS $name: $line"
  else
    FAIL=$((FAIL + 1)); echo "FAIL $name (wanted ${conds[*]}):"; echo "$out" | tail -5
  fi
}

RW=(--secs 1 --warmup-secs 0.2 --connections 4 --window 8 --children 100)
check read ops_per_s\>0 reads\>0 errors=0 server_rss_kb\>0 -- read "${RW[@]}"
check write ops_per_s\>0 writes\>0 errors=0 -- write "${RW[@]}"
check mixed ops_per_s\>0 writes\>0 reads\>0 errors=0 -- mixed "${RW[@]}"
check read ops_per_s\>0 lat_p99_us\>0 errors=0 -- read "${RW[@]}" --rate 500
check churn changes=5 relists\>0 leave_p99_us\>0 join_p99_us\>0 expiry_p99_us\>0 errors=0 -- \
  churn --providers 3 --interfaces 2 --consumers 4 --rounds 2 --expiries 1 --name-bytes 200
# CPU is only required to be reported (>-1), not above 0: 400 pings can take less than one clock
# tick (CI read 0.0 once).
check sessions open=200 pings\>0 ping_p99_us\>0 errors=0 server_cpu_pct\>-1 server_rss_kb\>0 -- sessions --count 200 --secs 1 --ping-ms 500
# scale: a standalone server, so no member is killed; every change seen, nothing expired. Steady
# CPU is not checked: 300 sessions over 1 s can take less than one clock tick (it read 0.0 once).
check scale consumers=280 watches=1400 changes=16 changes_unseen=0 relists\>1400 steady_ping_p99_us\>0 expired=0 errors=0 connect_failed=0 -- \
  scale --sessions 300 --services 20 --providers-per-service 2 --services-per-provider 2 --watches-per-consumer 5 \
  --steady-secs 1 --release-secs 2 --release-share 0.2 --down-ms 200 --timeout-ms 6000
check fill count=2000 ops_per_s\>0 errors=0 -- fill --count 2000
# The restart measurements read the fill's last node back by the path `--path-of` prints.
last=$("$ZKR" bench fill --path-of 1999)
if "$ZKR" cli -server "127.0.0.1:$PORT" stat "$last" >"$W/stat.out" 2>&1 && grep -q '^cZxid = ' "$W/stat.out"; then
  PASS=$((PASS + 1)); echo "PASS fill --path-of: the last node filled is there"
else
  FAIL=$((FAIL + 1)); echo "FAIL fill --path-of: $last"; tail -3 "$W/stat.out"
fi

echo "bench smoke: $PASS passed, $FAIL failed"
[ $FAIL = 0 ]
