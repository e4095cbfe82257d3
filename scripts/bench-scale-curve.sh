#!/usr/bin/env bash
# Cost curves of a registry on 3-member ensembles, ZooKeeper and zkr side by side (issue 25,
# item 4): steady CPU and RSS against sessions (10 watches per consumer) and against watches
# (20,000 sessions, 1 to 40 watches per consumer). Each point is scripts/bench-scale.sh on fresh
# ensembles without the release and the storm; the points go to target/bench/scale-curve.txt, and
# scripts/bench-scale-plot.py writes docs/scale-curve.md and docs/scale-curve.png (matplotlib:
# pip install matplotlib).
#   scripts/bench-scale-curve.sh            sessions 10k 20k 50k (100k where the limits allow)
#   scripts/bench-scale-curve.sh --quick    sessions 5k 10k, watches 1 and 10 per consumer
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then
  SESSIONS="5000 10000"; WPC="1 10"; AT=10000; STEADY=10
else
  SESSIONS="10000 20000 50000 100000"; WPC="1 10 40"; AT=20000; STEADY=20
fi
ZKR=${ZKR_BIN:-target/release/zkr}
[ -n "${ZKR_BIN:-}" ] || cargo build --release --locked 2>&1 | tail -n 1
export ZKR_BIN=$ZKR
mkdir -p target/bench docs
OUT=${BENCH_OUT:-target/bench/scale-curve.txt}
P=$(mktemp /tmp/zkr-scale-point.XXXXXX)
trap 'rm -f "$P"' EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
echo "# registry cost curve $(date -u +%Y-%m-%dT%H:%M:%SZ) zkr $(git rev-parse --short HEAD) machine $(nproc) cores, open files $(ulimit -Hn)" >"$OUT"
# point AXIS VALUE SESSIONS WATCHES_PER_CONSUMER
point() {
  log "$1=$2: $3 sessions, $4 watches per consumer"
  BENCH_OUT=$P SCALE_EXTRA="--release-share 0 --watches-per-consumer $4" \
    bash scripts/bench-scale.sh --sessions "$3" --steady-secs "$STEADY" --no-storm >/dev/null 2>"$P.err" \
    || { log "point failed"; tail -5 "$P.err" >&2; }
  grep -q 'asked=' "$P" && grep '^# zkr registry' "$P" | sed -n 's/.* sessions=\([0-9]*\) asked=\([0-9]*\).*/# point sessions=\1 asked=\2/p' >>"$OUT"
  # A failed point leaves no row (and the curve goes on without it).
  { grep '^srv=' "$P" || true; } | sed "s/^/axis=$1 value=$2 /" | tee -a "$OUT" | cut -c1-160 >&2
  rm -f "$P.err"
}
for s in $SESSIONS; do point sessions "$s" "$s" 10; done
for w in $WPC; do
  [ "$w" = 10 ] && [[ " $SESSIONS " == *" $AT "* ]] && continue   # the sessions axis has it
  point watches "$w" "$AT" "$w"
done
python3 scripts/bench-scale-plot.py "$OUT" docs/scale-curve.md docs/scale-curve.png
