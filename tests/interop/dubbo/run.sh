#!/usr/bin/env bash
# Unmodified Apache Dubbo (from Maven Central) against Debian's ZooKeeper and against zkr, side by side.
# See docs/dubbo-interop.md. Installs what it needs (apt: zookeeper, kazoo, Maven, a JDK; Maven: Dubbo and its
# ZooKeeper client), resolves each Dubbo line's class path with Maven, compiles Node.java with javac, and runs
# driver.py once per Dubbo line. Prints the timelines, one PASS/FAIL line per check and "N passed, N failed";
# writes tests/interop/.work/matrix/dubbo-<version>.tsv. Then, per Dubbo line, ensemble.py runs the same Dubbo
# processes against a 3-member zkr ensemble and a 3-member ZooKeeper ensemble (leader SIGKILLed under load, a
# provider SIGKILLed, the old leader rejoining, a rolling restart) and writes dubbo-ensemble-<version>.tsv.
# For the first Dubbo line only, migrate.py moves the same Dubbo processes live from a 3-member ZooKeeper
# ensemble to zkr (zkr observers, ZooKeeper stopped, `zkr takeover`) and writes dubbo-migrate-<version>.tsv.
# Exit status: 0 all passed, 1 a check failed, 2 setup.
#
#   ZKR_BIN=target/release/zkr tests/interop/dubbo/run.sh
#   DUBBO_PROFILES="dubbo33" tests/interop/dubbo/run.sh      # one Dubbo line (profiles of pom.xml)
#   DUBBO_SCENARIOS="ensemble" tests/interop/dubbo/run.sh    # only the ensemble part ("standalone ensemble migrate")
#   DUBBO_PORT_BASE=28000                                     # ports used: base .. base+999
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
WORK="$(cd "$HERE/.." && pwd)/.work/dubbo"
MATRIX="$HERE/../.work/matrix"
PY=/usr/bin/python3
PROFILES=${DUBBO_PROFILES:-"dubbo33 dubbo32"}
SCENARIOS=${DUBBO_SCENARIOS:-"standalone ensemble migrate"}
PORT_BASE=${DUBBO_PORT_BASE:-28000}
STARTED=$SECONDS

say() { echo "[dubbo] $*" >&2; }
die() { say "ERROR: $*"; exit 2; }

# ---------------------------------------------------------------- dependencies (idempotent)
missing=""
for p in zookeeper zookeeper-bin python3-kazoo; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done
command -v mvn >/dev/null 2>&1 || missing="$missing maven"
command -v javac >/dev/null 2>&1 || missing="$missing default-jdk-headless"
if [ -n "$missing" ]; then
    say "installing:$missing"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    mkdir -p "$WORK"
    { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >"$WORK/apt.log" 2>&1 ||
        { tail -n 20 "$WORK/apt.log" >&2; die "apt-get install$missing failed"; }
fi
"$PY" -c 'import kazoo' 2>/dev/null || die "$PY cannot import kazoo"
[ -x /usr/share/zookeeper/bin/zkServer.sh ] || die "Debian's zkServer.sh is missing"

if [ -z "${ZKR_BIN:-}" ]; then
    for c in "$REPO/target/release/zkr" "$REPO/target/debug/zkr"; do [ -x "$c" ] && { ZKR_BIN="$c"; break; }; done
fi
[ -n "${ZKR_BIN:-}" ] && [ -x "$ZKR_BIN" ] || die "set ZKR_BIN to the zkr binary (cargo build --release)"

mkdir -p "$WORK" "$MATRIX"
# ensemble.py and migrate.py stop what they started and keep the pids of what runs in ensemble-*.pids and
# migrate-*.pids; whatever a driver that died left there is killed by pid here (only processes whose command
# line names this suite's work dir)
cleanup() {
    local f pid
    for f in "$WORK"/ensemble-*.pids "$WORK"/migrate-*.pids; do
        [ -f "$f" ] || continue
        while read -r pid; do
            if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$WORK/"; then
                say "killing pid $pid, left behind by $(basename "$f")"
                kill -9 "$pid" 2>/dev/null
            fi
        done <"$f"
        rm -f "$f"
    done
    say "took $((SECONDS - STARTED))s"
}
trap cleanup EXIT
SRC_HASH=$(cat "$HERE/pom.xml" "$HERE"/src/main/java/zkr/interop/dubbo/*.java | sha1sum | cut -c1-12)

jar_version() {  # class path, artifact -> version
    tr ':' '\n' <<<"$1" | sed -n "s,.*/$2-\([0-9][^/]*\)\.jar$,\1,p" | head -n 1
}

TOTAL_PASSED=0
TOTAL_FAILED=0
# count_checks LABEL LOG: adds the driver's "N passed, M failed" to the totals (a failure if it has none)
count_checks() {
    local counts
    counts=$(sed -n 's/^.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$2" | tail -n 1)
    if [ -z "$counts" ]; then
        say "FAIL $1: the driver did not finish (log: $2)"
        TOTAL_FAILED=$((TOTAL_FAILED + 1))
        return
    fi
    TOTAL_PASSED=$((TOTAL_PASSED + ${counts% *}))
    TOTAL_FAILED=$((TOTAL_FAILED + ${counts#* }))
}
i=0
for profile in $PROFILES; do
    base=$((PORT_BASE + i * 500))
    i=$((i + 1))
    cpfile="$WORK/cp-$profile-$SRC_HASH.txt"
    if [ ! -s "$cpfile" ]; then
        say "$profile: resolving Dubbo and its ZooKeeper client with Maven"
        if ! mvn -B -q -f "$HERE/pom.xml" -P"$profile" dependency:build-classpath \
                -Dmdep.outputFile="$cpfile.tmp" >"$WORK/mvn-$profile.log" 2>&1; then
            tail -n 30 "$WORK/mvn-$profile.log" >&2
            say "FAIL $profile: Maven could not resolve the dependencies"
            TOTAL_FAILED=$((TOTAL_FAILED + 1))
            continue
        fi
        mv "$cpfile.tmp" "$cpfile"
    fi
    deps=$(cat "$cpfile")
    classes="$WORK/classes-$profile-$SRC_HASH"
    if [ ! -f "$classes/zkr/interop/dubbo/Node.class" ]; then
        tmp=$(mktemp -d "$WORK/javac.XXXXXX")
        if ! javac -nowarn -encoding UTF-8 -d "$tmp" -cp "$deps" "$HERE"/src/main/java/zkr/interop/dubbo/*.java \
                >"$tmp.log" 2>&1; then
            cat "$tmp.log" >&2
            rm -rf "$tmp"
            say "FAIL $profile: javac failed"
            TOTAL_FAILED=$((TOTAL_FAILED + 1))
            continue
        fi
        rm -rf "$classes"
        mv -T "$tmp" "$classes"
    fi
    dubbo_v=$(jar_version "$deps" dubbo)
    curator_v=$(jar_version "$deps" curator-framework)
    zk_v=$(jar_version "$deps" zookeeper)
    label="Dubbo $dubbo_v (Curator $curator_v, ZooKeeper client $zk_v)"
    extra=()
    case "$curator_v" in
        # Dubbo 3.2's ZookeeperServiceDiscovery builds its Curator client without the registry's session
        # parameter: Curator's default 60 s, which the servers cap at their maxSessionTimeout (20 s)
        4.*) extra+=(--services-session-ms 20000) ;;
    esac
    if [[ " $SCENARIOS " == *" standalone "* ]]; then
        say "$label: ports $((base + 1))-$((base + 163))"
        rm -rf "$WORK/run-$profile"
        log="$WORK/run-$profile.log"
        t=$SECONDS
        "$PY" "$HERE/driver.py" --label "$label" --cp "$classes:$deps" --zkr-bin "$ZKR_BIN" --port-base "$base" \
            --work "$WORK/run-$profile" --tsv "$MATRIX/dubbo-$dubbo_v.tsv" "${extra[@]}" 2>&1 | tee "$log"
        count_checks "$label" "$log"
        say "$label: standalone servers took $((SECONDS - t))s"
    fi
    if [[ " $SCENARIOS " == *" ensemble "* ]]; then
        say "$label, 3-member ensembles: ports $((base + 201))-$((base + 283))"
        rm -rf "$WORK/ensemble-$profile"
        log="$WORK/ensemble-$profile.log"
        t=$SECONDS
        "$PY" "$HERE/ensemble.py" --label "$label" --cp "$classes:$deps" --zkr-bin "$ZKR_BIN" \
            --port-base $((base + 200)) --work "$WORK/ensemble-$profile" --pidfile "$WORK/ensemble-$profile.pids" \
            --tsv "$MATRIX/dubbo-ensemble-$dubbo_v.tsv" "${extra[@]}" 2>&1 | tee "$log"
        count_checks "$label, 3-member ensemble" "$log"
        say "$label: ensembles took $((SECONDS - t))s"
    fi
    # the live migration (ZooKeeper -> zkr) for the first Dubbo line only; its observers listen on
    # 127.0.0.9-11 (one AdminServer port for all three, as on separate hosts)
    if [[ " $SCENARIOS " == *" migrate "* ]] && [ "$i" -eq 1 ]; then
        say "$label, live migration ZooKeeper -> zkr: ports $((base + 301))-$((base + 374))"
        rm -rf "$WORK/migrate-$profile"
        log="$WORK/migrate-$profile.log"
        t=$SECONDS
        "$PY" "$HERE/migrate.py" --label "$label" --cp "$classes:$deps" --zkr-bin "$ZKR_BIN" \
            --port-base $((base + 300)) --work "$WORK/migrate-$profile" --pidfile "$WORK/migrate-$profile.pids" \
            --tsv "$MATRIX/dubbo-migrate-$dubbo_v.tsv" 2>&1 | tee "$log"
        count_checks "$label, live migration" "$log"
        say "$label: migration took $((SECONDS - t))s"
    fi
done
echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
[ "$TOTAL_FAILED" -eq 0 ]
