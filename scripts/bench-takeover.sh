#!/usr/bin/env bash
# The write pause of `zkr takeover` (issue 24, item 2): from the last ZooKeeper participant
# stopped to the first write the new zkr ensemble acknowledges. Runs tests/zab_takeover.rs (three
# Debian ZooKeeper 3.8 participants and three zkr observers at tickTime 2000; every participant
# killed, `zkr takeover` run at once, a client re-attaching its session to the zkr members and
# writing until acknowledged) RUNS times and prints each pause and their min/median/max.
#
#   scripts/bench-takeover.sh [RUNS]      default 5 runs, about 10 s each after the build
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
cargo test --release --test integration --no-run >/dev/null 2>&1
pauses=()
for i in $(seq "$RUNS"); do
    out=$(cargo test --release --test integration \
        zab_takeover::zkr_takeover_turns_the_observers_of_a_stopped_zookeeper_38 -- --nocapture 2>&1) || {
        echo "$out" | tail -n 40
        echo "run $i failed"
        exit 1
    }
    ms=$(echo "$out" | sed -n 's/^write pause: \([0-9]*\) ms.*/\1/p')
    echo "run $i: write pause $ms ms"
    pauses+=("$ms")
done
printf '%s\n' "${pauses[@]}" | sort -n | awk '{a[NR]=$1} END {printf "runs %d: min %d ms, median %d ms, max %d ms\n", NR, a[1], a[int((NR+1)/2)], a[NR]}'
