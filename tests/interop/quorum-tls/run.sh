#!/usr/bin/env bash
# TLS between ensemble members (sslQuorum=true), zkr and Debian's ZooKeeper 3.8 side by side.
#
# Certificates as ZooKeeper's admin guide makes them for quorum TLS: keytool key pairs, one JKS
# key store per member (self-signed, CN=localhost, no subject alternative names, so host name
# checks go by the CN), every member's certificate imported into one JKS trust store. Each side
# is three processes on one machine started from the same zoo.cfg (server.N=localhost:peer:
# election;client, sslQuorum=true, ssl.quorum.* stores, host name verification on). On each side:
#   - the members elect a leader and a real client (zkCli.sh) writes on member 1 and reads
#     the value back on member 3;
#   - member 1's quorum port answers a TLS handshake with the member's certificate (openssl
#     s_client; zkr's peer port, ZooKeeper's election port);
#   - member 3 restarted with a key store the others do not trust never serves (the others
#     refuse its handshakes), and serves again, with the data, once its own store is back.
# Then, zkr only: the others' logs name the refused handshakes, and portUnification=true lets
# a member still in plaintext (sslQuorum=false) and two in TLS form one ensemble (ZooKeeper's
# step for turning quorum TLS on in a running ensemble).
#
# Needs ZKR_BIN; installs missing Debian packages. Ports: 9 in 30600-30899. KEEP_WORK=1 keeps
# the run directory. Prints PASS/FAIL lines and "N passed, M failed"; exit 1 if anything failed,
# 2 on a setup problem.
set -uo pipefail
STARTED=$SECONDS
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
# shellcheck source=../lib/servers.sh
source "$INTEROP/lib/servers.sh"
ZKR_BIN=${ZKR_BIN:?set ZKR_BIN to the zkr binary}

PKGS="zookeeper zookeeper-bin libzookeeper-java libnetty-java netcat-openbsd openssl"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=" $p"
done
command -v keytool >/dev/null || missing+=" default-jdk-headless"
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing; } >/dev/null ||
        { echo "could not install:$missing"; exit 2; }
fi

# ZooKeeper is started with java directly: its quorum TLS code needs the Netty module jars,
# which zkServer.sh's class path lacks (Debian's netty-all.jar is an empty shell).
ZKCP=""
for j in zookeeper zookeeper-jute slf4j-api slf4j-simple commons-io; do
    [ -f "/usr/share/java/$j.jar" ] || { echo "/usr/share/java/$j.jar not found"; exit 2; }
    ZKCP+="/usr/share/java/$j.jar:"
done
for m in buffer codec common handler resolver transport transport-native-epoll transport-native-unix-common; do
    [ -f "/usr/share/java/netty-$m.jar" ] && ZKCP+="/usr/share/java/netty-$m.jar:"
done

WORK=$(mktemp -d /tmp/zkr-quorum-tls.XXXXXX)
C="$WORK/certs"
mkdir -p "$C"
declare -A PID=()
cleanup() {
    local p
    for p in "${PID[@]}"; do kill -9 "$p" 2>/dev/null; done
    if [ -n "${KEEP_WORK:-}" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
passed=0
failed=0
pass() { echo "PASS quorum-tls/$1"; passed=$((passed + 1)); }
fail() { echo "FAIL quorum-tls/$1"; failed=$((failed + 1)); }
check() { # NAME COMMAND...: PASS if the command succeeds
    local name=$1
    shift
    if "$@"; then pass "$name"; else fail "$name"; fi
}

# ---------------------------------------------------------------- certificates
PW=password
for m in m1 m2 m3 rogue; do
    keytool -genkeypair -alias "$m" -keyalg RSA -keysize 2048 -dname "CN=localhost" -validity 3 \
        -keypass "$PW" -storepass "$PW" -storetype JKS -keystore "$C/$m.jks" -noprompt >/dev/null 2>&1 ||
        { echo "keytool -genkeypair failed"; exit 2; }
done
for m in m1 m2 m3; do
    keytool -exportcert -alias "$m" -keystore "$C/$m.jks" -storepass "$PW" -file "$C/$m.cer" >/dev/null 2>&1 &&
        keytool -importcert -alias "$m" -file "$C/$m.cer" -keystore "$C/trust.jks" -storetype JKS \
            -storepass "$PW" -noprompt >/dev/null 2>&1 || { echo "keytool trust store failed"; exit 2; }
done

BASE=$(srv_pick_base 30600 300 9) || { echo "no free ports in 30600-30899"; exit 2; }
client_port() { echo $((BASE + $1 - 1)); }
peer_port() { echo $((BASE + 2 + $1)); }
election_port() { echo $((BASE + 5 + $1)); }

# write_config SIDE ID KEYSTORE [EXTRA LINES]
write_config() {
    local side=$1 i=$2 ks=$3 extra=${4:-} d="$WORK/$1/m$2" j
    mkdir -p "$d/data"
    echo "$i" >"$d/data/myid"
    {
        echo "tickTime=2000"
        echo "initLimit=10"
        echo "syncLimit=5"
        echo "dataDir=$d/data"
        echo "4lw.commands.whitelist=*"
        echo "admin.enableServer=false"
        for j in 1 2 3; do
            echo "server.$j=localhost:$(peer_port "$j"):$(election_port "$j");$(client_port "$j")"
        done
        echo "ssl.quorum.keyStore.location=$C/$ks.jks"
        echo "ssl.quorum.keyStore.password=$PW"
        echo "ssl.quorum.trustStore.location=$C/trust.jks"
        echo "ssl.quorum.trustStore.password=$PW"
        echo "ssl.quorum.hostnameVerification=true"
        if [ -n "$extra" ]; then printf '%b\n' "$extra"; else echo "sslQuorum=true"; fi
    } >"$d/zoo.cfg"
}

start_member() {
    local side=$1 i=$2 d="$WORK/$1/m$2"
    if [ "$side" = zkr ]; then
        RUST_LOG=info "$ZKR_BIN" serve --config "$d/zoo.cfg" >>"$d.log" 2>&1 &
    else
        java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.showDateTime=true \
            -cp "$ZKCP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >>"$d.log" 2>&1 &
    fi
    PID["$side $i"]=$!
}

stop_member() {
    kill -9 "${PID[$1 $2]}" 2>/dev/null
    wait "${PID[$1 $2]}" 2>/dev/null
    unset "PID[$1 $2]"
}

mode() { echo srvr | timeout 5 nc -q1 127.0.0.1 "$(client_port "$1")" 2>/dev/null | sed -n 's/^Mode: //p'; }

# wait_modes SECONDS ID...: the listed members are one leader and followers.
wait_modes() {
    local deadline=$((SECONDS + $1)) i m leaders others
    shift
    while [ $SECONDS -lt "$deadline" ]; do
        leaders=0 others=0
        for i in "$@"; do
            m=$(mode "$i")
            case $m in leader) leaders=$((leaders + 1)) ;; follower) ;; *) others=$((others + 1)) ;; esac
        done
        [ "$leaders" = 1 ] && [ "$others" = 0 ] && return 0
        sleep 0.3
    done
    return 1
}

# never_serves SECONDS ID: the member does not serve during the whole time.
never_serves() {
    local deadline=$((SECONDS + $1)) m
    while [ $SECONDS -lt "$deadline" ]; do
        m=$(mode "$2")
        [ -z "$m" ] || { echo "member $2 serves as $m" >&2; return 1; }
        sleep 0.5
    done
}

zkcli() { # ID COMMAND...: zkCli.sh against member ID, its output
    local port
    port=$(client_port "$1")
    shift
    timeout 60 /usr/share/zookeeper/bin/zkCli.sh -server "127.0.0.1:$port" "$@" 2>/dev/null
}

# get_is ID PATH VALUE: zkCli's get on member ID prints VALUE (after a sync, as a client that
# moved would do for a read its write must see).
get_is() {
    local out
    out=$(zkcli "$1" sync "$2"; zkcli "$1" get "$2")
    grep -qx "$3" <<<"$out" || { echo "member $1: get $2 gave: $(tail -3 <<<"$out")" >&2; return 1; }
}

# peer_tls_cert SIDE: the subject of the certificate member 1 shows in a TLS handshake on its
# quorum port: zkr's peer port (zkr elects over it too); ZooKeeper's election port (its peer
# port is open on the leader only).
peer_tls_cert() {
    local port
    if [ "$1" = zkr ]; then port=$(peer_port 1); else port=$(election_port 1); fi
    timeout 10 openssl s_client -connect "127.0.0.1:$port" </dev/null 2>/dev/null |
        sed -n 's/^subject=//p' | head -1
}

side() {
    local s=$1 i
    echo "== $s: three members with sslQuorum=true"
    for i in 1 2 3; do write_config "$s" "$i" "m$i"; done
    for i in 1 2 3; do start_member "$s" "$i"; done
    check "$s/ensemble-forms-over-tls" wait_modes 90 1 2 3
    zkcli 1 create /qtls "v1" >/dev/null
    check "$s/write-on-1-read-on-3" get_is 3 /qtls v1
    local subject
    subject=$(peer_tls_cert "$s")
    check "$s/peer-port-speaks-tls" grep -q "CN *= *localhost" <<<"$subject"

    echo "== $s: member 3 with a certificate the others do not trust"
    stop_member "$s" 3
    write_config "$s" 3 rogue
    start_member "$s" 3
    check "$s/untrusted-member-never-serves" never_serves 12 3
    zkcli 1 set /qtls "v2" >/dev/null
    check "$s/others-keep-serving" get_is 2 /qtls v2
    stop_member "$s" 3
    write_config "$s" 3 m3
    start_member "$s" 3
    check "$s/member-rejoins-with-its-certificate" wait_modes 90 1 2 3
    check "$s/rejoined-member-has-the-data" get_is 3 /qtls v2
    for i in 1 2 3; do stop_member "$s" "$i"; done
}

side zk
side zkr
check "zkr/untrusted-handshake-logged" grep -q "closing peer connection: TLS handshake" "$WORK/zkr/m1.log" "$WORK/zkr/m2.log"

echo "== zkr: portUnification, member 3 still in plaintext"
rm -rf "$WORK/zkr"
for i in 1 2; do write_config zkr "$i" "m$i" 'sslQuorum=true\nportUnification=true'; done
write_config zkr 3 m3 'sslQuorum=false\nportUnification=true'
for i in 1 2 3; do start_member zkr "$i"; done
check "zkr/port-unification-mixed-ensemble-forms" wait_modes 60 1 2 3
zkcli 3 create /mixed "m" >/dev/null
check "zkr/port-unification-write-through-plaintext-member" get_is 1 /mixed m
for i in 1 2 3; do stop_member zkr "$i"; done

echo "quorum-tls: $passed passed, $failed failed ($((SECONDS - STARTED)) s)"
[ "$failed" = 0 ]
