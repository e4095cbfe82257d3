#!/usr/bin/env bash
# The fault suite (issue #13): zkr and Debian's ZooKeeper 3.8 ensembles under a Jepsen-style
# nemesis, each member in its own network namespace, with linearizability and other checkers.
#
#   bash tests/faults/run.sh --disk [--server zkr|zookeeper|both] [--cells substring]
#   bash tests/faults/run.sh [--short|--full] [--server zkr|zookeeper|both] [--seed N]
#                            [--nemesis a,b|all] [--workload x,y|all] [--members N]
#                            [--duration 30s] [--keep] [--op-log]
#
# --short (the default, run by scripts/test-all.sh): every nemesis once against a 3-member zkr
# ensemble, all workloads at once, 12 s of faults each. --full: every nemesis against zkr and
# ZooKeeper, 5 members, 60 s each; writes docs/faults.md. A failing run prints its seed and the
# command that replays it. See tests/faults/README.md.
#
# Needs root (network namespaces, veths, a bridge, iptables), Go, and zkr built (ZKR_BIN,
# default target/release/zkr; built with cargo if missing). Installs the Debian packages it
# needs (apt-get update first). Prints PASS/FAIL lines and "N passed, M failed"; exit 1 if any
# zkr cell is invalid, 2 on a setup problem (a missing dependency that cannot be installed is a
# failure, never a skip). Everything it creates (namespaces zkrf-*, links zkrf-*, the bridge,
# iptables rules, member processes) is removed on exit, also after a failure or an interrupt,
# and leftovers of an earlier crashed run are removed first.
set -uo pipefail
STARTED=$SECONDS
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"

if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "faults: needs root (network namespaces, iptables) and there is no sudo"; exit 2; }
    exec sudo -E env "PATH=$PATH" bash "$0" "$@"
fi

MODE=short
ARGS=()
while [ $# -gt 0 ]; do
    case $1 in
    --short) MODE=short ;;
    --full) MODE=full ;;
    --disk) MODE=disk ;;
    -h | --help)
        sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) ARGS+=("$1") ;;
    esac
    shift
done

# ---------------------------------------------------------------- dependencies
PKGS="iproute2 iptables zookeeper zookeeper-bin libzookeeper-java libslf4j-java"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=" $p"
done
command -v java >/dev/null || missing+=" default-jre-headless"
if [ -n "$missing" ]; then
    echo "== installing:$missing"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >/dev/null ||
        { echo "FAIL faults/setup: could not install:$missing"; exit 2; }
fi
for f in /usr/share/zookeeper/bin/zkServer.sh /usr/share/java/zookeeper.jar /usr/share/java/slf4j-simple.jar; do
    [ -e "$f" ] || { echo "FAIL faults/setup: $f not found"; exit 2; }
done
command -v iptables >/dev/null || { echo "FAIL faults/setup: no iptables"; exit 2; }
command -v go >/dev/null || { echo "FAIL faults/setup: Go is needed to build the harness (tests/faults is a Go module)"; exit 2; }

ZKR_BIN=${ZKR_BIN:-$ROOT/target/release/zkr}
if [ ! -x "$ZKR_BIN" ]; then
    echo "== no zkr at $ZKR_BIN: cargo build --release"
    cargo build --release --locked || { echo "FAIL faults/setup: cannot build zkr"; exit 2; }
    ZKR_BIN=$ROOT/target/release/zkr
fi

# ---------------------------------------------------------------- the harness
BIN=$(mktemp /tmp/zkrf-harness.XXXXXX)
cleanup() {
    # The harness cleans up itself; this catches a harness that crashed or was killed.
    [ -x "$BIN" ] && "$BIN" cleanup
    rm -f "$BIN"
    echo "faults suite took $((SECONDS - STARTED))s"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
(cd "$HERE" && go build -o "$BIN" .) || { echo "FAIL faults/setup: cannot build the harness (go build in tests/faults)"; exit 2; }
"$BIN" cleanup

# --disk: the disk-fault matrix (tests/faults/diskfaults.go), zkr and ZooKeeper side by side;
# the whole matrix writes docs/disk-faults.md.
if [ "$MODE" = disk ]; then
    DREPORT=()
    [ ${#ARGS[@]} -eq 0 ] && DREPORT=(--report "$ROOT/docs/disk-faults.md")
    "$BIN" diskfaults --zkr "$ZKR_BIN" --out "$HERE/.work/disk" "${DREPORT[@]}" "${ARGS[@]}"
    exit $?
fi

# Only a whole --full run is the report of record: a replay of one cell (--seed, --nemesis, ...)
# must not overwrite it with that cell alone.
REPORT=()
PARTIAL=""
for a in "${ARGS[@]}"; do
    case $a in --nemesis | --workload | --server | --seed | --members | --duration) PARTIAL=$a ;; esac
done
if [ "$MODE" = full ] && [ -z "$PARTIAL" ]; then
    REPORT=(--report "$ROOT/docs/faults.md")
elif [ "$MODE" = full ]; then
    echo "== $PARTIAL given: a partial run, docs/faults.md is left as it is"
fi
"$BIN" --mode "$MODE" --zkr "$ZKR_BIN" --out "$HERE/.work" "${REPORT[@]}" "${ARGS[@]}"
