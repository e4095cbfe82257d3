#!/usr/bin/env bash
# SASL logins, zkr vs Debian's ZooKeeper 3.8 (issue 40): the cost of a login, since a reconnect
# storm is a login storm. One machine, loopback only. Makes a throwaway MIT realm ZKR.TEST as
# tests/interop/kerberos/run.sh does (its own krb5.conf, kdc.conf, database and krb5kdc on a free
# loopback port; nothing in /etc is used or changed), a DIGEST-MD5 JAAS file (DigestLoginModule,
# user_bob) and a Kerberos one (Krb5LoginModule, server.keytab), and for each mechanism and each
# server starts the server with the same zoo.cfg and JAAS file, warms it up (WARM s of logins, not
# counted), then runs login storms with benches/sasl_logins.py: C client processes (C in PROCS),
# each doing logins back to back for SECS s (TCP connect, ConnectRequest re-attaching its session,
# the whole SASL exchange, whoAmI, close). With the DIGEST-MD5 server it also runs the same storm
# without SASL ("none": connect, ConnectRequest, whoAmI), the floor under both mechanisms.
# GSSAPI clients get their TGT and service ticket once per process (MIT's acquisition from the
# client keytab into a MEMORY ccache on the first, untimed, login) and reuse the ticket: the storm
# measures the server's accept path, not the KDC. Servers alternate (zk, zkr, zk, zkr: ROUNDS
# rounds) so the machine's noise shows in each configuration. Prints the Markdown tables of
# sasl_logins.py and leaves the raw results in $OUT (default: $WORK/results.jsonl).
#
#   ZKR_BIN=target/release/zkr bash benches/sasl_logins.sh
#   knobs: SECS=8 WARM=4 ROUNDS=2 PROCS="1 8" MECHS="digest gssapi" NONE=1 KEEP=1 OUT=file
#          STRACE=1: after the storms, one more GSSAPI storm (C=8) against zkr under `strace -c -f`
# Ports: free ones in SASL_PORT_BASE .. +899 (default 24000). Takes about 5 minutes by default
# (STRACE=1: 40 s more).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ZKR_BIN=${ZKR_BIN:?set ZKR_BIN to the zkr binary}
case "$ZKR_BIN" in /*) ;; *) ZKR_BIN="$PWD/$ZKR_BIN" ;; esac
SECS=${SECS:-8}
WARM=${WARM:-4}
ROUNDS=${ROUNDS:-2}
PROCS=${PROCS:-"1 8"}
MECHS=${MECHS:-"digest gssapi"}
NONE=${NONE:-1}
BASE=${SASL_PORT_BASE:-24000}
PY=/usr/bin/python3
DRIVER="$HERE/sasl_logins.py"
WORK=$(mktemp -d)
K="$WORK/realm"
OUT=${OUT:-$WORK/results.jsonl}
PIDS=()
KDC_PID=""
SERVER_PID=""
say() { echo "[sasl-logins $(date -u +%H:%M:%S)] $*" >&2; }
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    [ -n "$KDC_PID" ] && kill -9 "$KDC_PID" 2>/dev/null
    wait 2>/dev/null
    if [ -n "${KEEP:-}" ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { say "$*"; exit 2; }

# ---------------------------------------------------------------- dependencies
missing=""
for p in krb5-kdc krb5-admin-server krb5-user zookeeper zookeeper-bin libzookeeper-java python3-gssapi netcat-openbsd; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    say "installing:$missing"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing; } >"$WORK/apt.log" 2>&1 \
        || { tail -20 "$WORK/apt.log"; die "apt-get install$missing failed"; }
fi
export PATH="$PATH:/usr/sbin:/sbin"
CP=$(printf '/usr/share/java/%s.jar:' zookeeper zookeeper-jute slf4j-api slf4j-simple commons-io)

free_port() { # a port free on 127.0.0.1 for TCP and UDP
    $PY - "$BASE" <<'PY'
import random, socket, sys
base = int(sys.argv[1])
def free(p):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_INET, kind)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            return False
        finally:
            s.close()
    return True
ports = list(range(base, base + 900))
random.shuffle(ports)
print(next((p for p in ports if free(p)), 0))
PY
}

# ---------------------------------------------------------------- the realm (as tests/interop/kerberos/run.sh)
KDC_PORT=$(free_port)
mkdir -p "$K"
export KRB5_CONFIG="$K/krb5.conf" KRB5_KDC_PROFILE="$K/kdc.conf"
unset KRB5CCNAME KRB5_CLIENT_KTNAME KRB5_KTNAME
cat >"$KRB5_CONFIG" <<CONF
[libdefaults]
    default_realm = ZKR.TEST
    dns_lookup_kdc = false
    dns_lookup_realm = false
    rdns = false
    dns_canonicalize_hostname = false
    udp_preference_limit = 1
    ticket_lifetime = 1h
    forwardable = false
    default_ccache_name = FILE:$K/default.cc
[realms]
    ZKR.TEST = {
        kdc = 127.0.0.1:$KDC_PORT
    }
[domain_realm]
    localhost = ZKR.TEST
CONF
cat >"$KRB5_KDC_PROFILE" <<CONF
[kdcdefaults]
    kdc_ports = $KDC_PORT
    kdc_tcp_ports = $KDC_PORT
    kdc_listen = 127.0.0.1:$KDC_PORT
    kdc_tcp_listen = 127.0.0.1:$KDC_PORT
[realms]
    ZKR.TEST = {
        database_name = $K/principal
        key_stash_file = $K/stash
        acl_file = $K/kadm5.acl
        admin_keytab = FILE:$K/kadm5.keytab
        kdc_listen = 127.0.0.1:$KDC_PORT
        kdc_tcp_listen = 127.0.0.1:$KDC_PORT
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }
[logging]
    kdc = FILE:$K/kdc.log
CONF
: >"$K/kadm5.acl"
{
    kdb5_util create -s -r ZKR.TEST -P "zkr-master-$RANDOM$RANDOM" &&
    kadmin.local -q "addprinc -randkey zookeeper/localhost@ZKR.TEST" &&
    kadmin.local -q "addprinc -randkey bob@ZKR.TEST" &&
    kadmin.local -q "ktadd -norandkey -k $K/server.keytab zookeeper/localhost@ZKR.TEST" &&
    kadmin.local -q "ktadd -norandkey -k $K/bob.keytab bob@ZKR.TEST"
} >"$K/setup.log" 2>&1
[ -s "$K/server.keytab" ] && [ -s "$K/bob.keytab" ] || { tail -20 "$K/setup.log"; die "kdb5_util/kadmin.local failed"; }
krb5kdc -n >>"$K/kdc.out" 2>&1 &
KDC_PID=$!
for _ in $(seq 50); do
    $PY -c "import socket; socket.create_connection(('127.0.0.1', $KDC_PORT), 1)" 2>/dev/null && break
    sleep 0.1
done
KRB5CCNAME="FILE:$K/probe.cc" kinit -kt "$K/bob.keytab" bob@ZKR.TEST >"$K/kinit.log" 2>&1 &&
    KRB5CCNAME="FILE:$K/probe.cc" kvno zookeeper/localhost@ZKR.TEST >>"$K/kinit.log" 2>&1 ||
    { cat "$K/kinit.log"; die "kinit/kvno against the test KDC failed"; }
export BENCH_CLIENT_KEYTAB="$K/bob.keytab"

cat >"$K/jaas-digest.conf" <<'JAAS'
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bob-secret";
};
JAAS
cat >"$K/jaas-gssapi.conf" <<JAAS
Server {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    keyTab="$K/server.keytab"
    storeKey=true
    useTicketCache=false
    principal="zookeeper/localhost@ZKR.TEST";
};
JAAS

# ---------------------------------------------------------------- servers
ruok() { [ "$(echo ruok | nc -q1 127.0.0.1 "$1" 2>/dev/null)" = imok ]; }
# start_server kind mech run: sets PORT and SERVER_PID, 0 when it answers ruok
start_server() {
    local kind=$1 mech=$2 dir="$WORK/$3-$2-$1" jaas="$K/jaas-$2.conf"
    mkdir -p "$dir/data"
    for _ in 1 2 3; do
        PORT=$(free_port)
        cat >"$dir/zoo.cfg" <<CFG
tickTime=2000
dataDir=$dir/data
clientPort=$PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxClientCnxns=0
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
CFG
        if [ "$kind" = zk ]; then
            # the JVM's defaults, as Debian's zkServer.sh (JAVA_OPTS=""); INFO logging to a file
            java -Djava.security.auth.login.config="$jaas" -Djava.security.krb5.conf="$KRB5_CONFIG" \
                -Dorg.slf4j.simpleLogger.defaultLogLevel=info -cp "$CP" \
                org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >>"$dir/log" 2>&1 &
        else
            env -u KRB5_CONFIG SERVER_JVMFLAGS="-Djava.security.krb5.conf=$KRB5_CONFIG" \
                "$ZKR_BIN" serve --config "$dir/zoo.cfg" --jaas-config "$jaas" >>"$dir/log" 2>&1 &
        fi
        SERVER_PID=$!
        PIDS+=("$SERVER_PID")
        for _ in $(seq 150); do
            ruok "$PORT" && return 0
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.2
        done
        kill -9 "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
    done
    tail -n 20 "$dir/log" >&2
    return 1
}
stop_server() { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""; }
storm() { # mech procs secs label -> appends a JSON line to $OUT (label "" = warm-up, not kept)
    local res
    res=$($PY "$DRIVER" storm "$PORT" "$1" "$2" "$3" "$SERVER_PID" "${4:-warm:0}") || { say "driver failed: $1 C=$2"; return 1; }
    [ -n "${4:-}" ] || return 0
    echo "$res" >>"$OUT"
    $PY -c 'import json,sys; r=json.loads(sys.argv[1]); print("  %(server)-3s %(mech)-6s C=%(procs)d: %(rate)7.0f/s p50 %(p50_ms).2f ms p99 %(p99_ms).2f ms, CPU %(cpu_per_1k).2f s/1k, RSS %(rss_mb).0f MB, errors %(errors)d %(first_error)s" % r)' "$res" >&2
}

{
    echo "# zkr $ZKR_BIN (built $(date -u -r "$ZKR_BIN" '+%Y-%m-%d %H:%M UTC'); tree $(cd "$HERE" && git rev-parse --short HEAD 2>/dev/null || echo '?')), ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || echo '?'), $(java -version 2>&1 | head -1), MIT krb5 $(dpkg-query -W -f='${Version}' libgssapi-krb5-2 2>/dev/null)"
    echo "# $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, $(uname -r); SECS=$SECS WARM=$WARM ROUNDS=$ROUNDS PROCS=\"$PROCS\" MECHS=\"$MECHS\" NONE=$NONE"
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$WORK/header" >&2
: >"$OUT"
for round in $(seq "$ROUNDS"); do
    for mech in $MECHS; do
        for kind in zk zkr; do
            say "round $round, $mech, $kind"
            start_server "$kind" "$mech" "$round" || die "$kind did not start ($mech)"
            storm "$mech" 2 "$WARM" ""
            for c in $PROCS; do
                [ "$mech" = digest ] && [ "$NONE" = 1 ] && storm none "$c" "$SECS" "$kind:$round"
                storm "$mech" "$c" "$SECS" "$kind:$round"
            done
            stop_server
        done
    done
done
if [ -n "${STRACE:-}" ]; then
    # where zkr's GSSAPI login goes: system calls (strace -c -f), the files each login touches,
    # and, when perf works here, a profile of the core thread
    say "strace -c -f of zkr during a GSSAPI storm (C=8, $SECS s)"
    start_server zkr gssapi strace || die "zkr did not start (strace)"
    storm gssapi 2 "$WARM" ""
    strace -c -f -p "$SERVER_PID" -o "$WORK/strace.txt" &
    ST=$!
    sleep 0.5
    storm gssapi 8 "$SECS" "zkr:99"
    kill -INT "$ST"; wait "$ST" 2>/dev/null
    echo "## strace -c -f -p zkr, GSSAPI storm C=8 (logins: $(tail -1 "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["logins"])'))"
    head -30 "$WORK/strace.txt"
    strace -f -p "$SERVER_PID" -e trace=openat,access,newfstatat,fdatasync,fsync -o "$WORK/strace-files.txt" &
    ST=$!
    sleep 0.5
    storm gssapi 1 2 "zkr:99"
    kill -INT "$ST"; wait "$ST" 2>/dev/null
    n=$(tail -1 "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["logins"])')
    echo "## files zkr's threads opened or looked at during $n GSSAPI logins (C=1, 2 s): calls, path"
    grep -o '"[^"]*"' "$WORK/strace-files.txt" | sort | uniq -c | sort -rn | head -12
    if command -v perf >/dev/null && perf record -o "$WORK/perf.probe" -- true >/dev/null 2>&1; then
        perf record -g -o "$WORK/perf.data" -p "$SERVER_PID" >/dev/null 2>&1 &
        PP=$!
        sleep 0.5
        storm gssapi 8 "$SECS" "zkr:99"
        kill -INT "$PP"; wait "$PP" 2>/dev/null
        echo "## perf: zkr-core thread, by shared object, GSSAPI storm C=8 ($(tail -1 "$OUT" | $PY -c 'import json,sys; r=json.load(sys.stdin); print(r["logins"], "logins, threads", r["threads"])'))"
        perf report -i "$WORK/perf.data" --comm zkr-core --sort dso --stdio --no-children --percentage relative -g none 2>/dev/null | grep -v '^#' | grep '%' | head -12
        echo "## perf: zkr-core thread, top symbols"
        perf report -i "$WORK/perf.data" --comm zkr-core --sort dso,sym --stdio --no-children --percentage relative -g none 2>/dev/null | grep -v '^#' | grep '%' | head -25
    fi
    stop_server
    grep -v '"round": 99' "$OUT" >"$OUT.tmp"; mv "$OUT.tmp" "$OUT"
fi
echo "# done $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$WORK/header"
cat "$WORK/header"
echo
$PY "$DRIVER" table "$OUT"
