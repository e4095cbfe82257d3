#!/usr/bin/env bash
# TLS (secureClientPort, client certificates, x509 ACLs) and SASL DIGEST-MD5 with real clients:
# the official Java client (Netty socket, PKCS12 trust/key stores, JAAS login) and kazoo (ssl +
# pure-sasl). Certificates are made here with openssl and keytool. The same zoo.cfg (PEM key and
# trust stores, ssl.clientAuth=need) and JAAS file run Debian's ZooKeeper and zkr, both ports at
# once; the client transcripts must be identical, and each transcript is also checked against the
# expected outcome so that a shared bug cannot pass. Then zkr-only checks of bad TLS/JAAS settings.
#
#   ZKR_BIN=target/release/zkr bash tests/interop/tls/run.sh
# Ports: free pairs picked in TLS_PORT_BASE .. +899 (default 22000). Prints "N passed, M failed";
# exit 1 on failure.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ZKR_BIN=${ZKR_BIN:?set ZKR_BIN to the zkr binary}
BASE=${TLS_PORT_BASE:-22000}
WORK=$(mktemp -d)
C="$WORK/certs"
PIDS=()
say() { echo "[tls] $*" >&2; }
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    if [ -n "${TLS_KEEP_WORK:-}" ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
passed=0; failed=0
pass() { echo "PASS tls/$1"; passed=$((passed+1)); }
fail() { echo "FAIL tls/$1"; failed=$((failed+1)); }

# ---------------------------------------------------------------- dependencies
need_pkgs="zookeeper zookeeper-bin libzookeeper-java libnetty-java python3-kazoo python3-pure-sasl openssl netcat-openbsd"
missing=""
for p in $need_pkgs; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done
command -v javac >/dev/null 2>&1 || missing="$missing default-jdk-headless"
if [ -n "$missing" ]; then
    say "installing:$missing"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing; } >"$WORK/apt.log" 2>&1 \
        || { tail -20 "$WORK/apt.log"; exit 2; }
fi
CP=$(printf '/usr/share/java/%s.jar:' zookeeper zookeeper-jute slf4j-api slf4j-nop commons-io)
# Debian's netty-all.jar is an empty shell: the Netty socket needs the real module jars.
for m in buffer codec common handler resolver transport transport-native-epoll transport-native-unix-common; do
    [ -f "/usr/share/java/netty-$m.jar" ] && CP="$CP/usr/share/java/netty-$m.jar:"
done
javac -d "$WORK" -cp "$CP" "$HERE/TlsCheck.java" || exit 2

# ---------------------------------------------------------------- certificates
mkdir -p "$C"
make_certs() {
    cd "$C" || exit 2
    local ext="basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
    printf '%s\n' "$ext" >leaf.ext
    for ca in ca rogue-ca; do
        openssl req -x509 -newkey rsa:2048 -nodes -keyout $ca.key -out $ca.pem -days 2 -subj "/CN=zkr test $ca" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    done
    # name:issuer:subject. alice's subject exercises Java's RFC 2253 escaping and the #hex form of
    # attributes without an RFC 2253 keyword (emailAddress).
    for spec in "server:ca:/CN=localhost" \
                "alice:ca:/C=US/ST=Some State/L= Spring field /O=Acme, Inc. #1/OU=Dev+UID=42/CN=alice \\+ \"A\" <x>;/emailAddress=alice@example.com" \
                "bob:ca:/O=zkr/CN=bob" \
                "rogue:rogue-ca:/CN=alice"; do
        IFS=: read -r name issuer subj <<<"$spec"
        openssl req -newkey rsa:2048 -nodes -keyout $name.key -out $name.csr -multivalue-rdn -subj "$subj" 2>/dev/null
        openssl x509 -req -in $name.csr -CA $issuer.pem -CAkey $issuer.key -CAcreateserial -days 2 \
            -extfile leaf.ext -out $name.pem 2>/dev/null
        openssl pkcs12 -export -in $name.pem -inkey $name.key -name $name -passout pass:changeit -out $name.p12
    done
    # ZooKeeper's PEM key store: the key and the certificate in one file.
    cat server.key server.pem >server-keystore.pem
    keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.p12 -storetype PKCS12 \
        -storepass changeit >/dev/null 2>&1
    cat >jaas-server.conf <<'JAAS'
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bob-secret"
    user_carol="carol-secret";
};
JAAS
    cat >jaas-client.conf <<'JAAS'
Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="bob-secret"; };
ClientCarol { org.apache.zookeeper.server.auth.DigestLoginModule required username="carol" password="carol-secret"; };
ClientBadPassword { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="wrong"; };
ClientUnknown { org.apache.zookeeper.server.auth.DigestLoginModule required username="dave" password="x"; };
JAAS
    cd - >/dev/null || exit 2
}
make_certs
[ -f "$C/truststore.p12" ] && [ -f "$C/rogue.p12" ] || { say "certificate generation failed"; exit 2; }

# One zoo.cfg for both servers (ZooKeeper's names; the Netty factory and the two auth providers
# are what ZooKeeper needs for TLS, x509 and sasl; zkr ignores those lines).
write_cfg() { # dir plain secure
    cat >"$1/zoo.cfg" <<CFG
tickTime=2000
dataDir=$1/data
clientPort=$2
clientPortAddress=127.0.0.1
secureClientPort=$3
admin.enableServer=false
4lw.commands.whitelist=*
maxClientCnxns=0
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider
authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
ssl.keyStore.location=$C/server-keystore.pem
ssl.keyStore.type=PEM
ssl.trustStore.location=$C/ca.pem
ssl.trustStore.type=PEM
ssl.clientAuth=need
CFG
}

wait_ruok() { # port pid
    for _ in $(seq 150); do
        [ "$(echo ruok | nc -q1 127.0.0.1 "$1" 2>/dev/null)" = imok ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# The port range lies inside Linux's ephemeral range, so other programs' outgoing connections can
# hold any port of it: pick two free ones right before each start, and retry a start that loses.
free_pair() {
    /usr/bin/python3 - "$BASE" <<'PY'
import random, socket, sys
base = int(sys.argv[1])
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()
ports = list(range(base, base + 898, 2))
random.shuffle(ports)
print(next((f"{p} {p + 1}" for p in ports if free(p) and free(p + 1)), "0 0"))
PY
}

# start_server zk|zkr extra-args...: sets PLAIN, SECURE, SERVER_PID; 0 when it answers ruok.
start_server() {
    local kind=$1; shift
    for _ in 1 2 3; do
        read -r PLAIN SECURE < <(free_pair)
        mkdir -p "$WORK/$kind/data"
        write_cfg "$WORK/$kind" "$PLAIN" "$SECURE"
        if [ "$kind" = zk ]; then
            # Started directly: zkServer.sh's classpath lacks the Netty jars (codec, resolver) that
            # the Netty server factory needs, and ZooKeeper's TLS port only exists with that factory.
            java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.security.auth.login.config="$C/jaas-server.conf" \
                -Dorg.slf4j.simpleLogger.defaultLogLevel=info -cp "${CP//slf4j-nop/slf4j-simple}" \
                org.apache.zookeeper.server.quorum.QuorumPeerMain "$WORK/zk/zoo.cfg" >>"$WORK/zk/log" 2>&1 &
        else
            "$ZKR_BIN" serve --config "$WORK/zkr/zoo.cfg" "$@" >>"$WORK/zkr/log" 2>&1 &
        fi
        SERVER_PID=$!
        PIDS+=($SERVER_PID)
        wait_ruok "$PLAIN" "$SERVER_PID" && return 0
        kill -9 "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
    done
    say "$kind did not start"; tail -n 20 "$WORK/$kind/log" >&2
    return 1
}
stop_server() { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; }

run_clients() { # name plain secure
    timeout 150 java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.security.auth.login.config="$C/jaas-client.conf" \
        -cp "$WORK:$CP" TlsCheck "$2" "$3" "$C" >"$WORK/java-$1.txt" 2>"$WORK/java-$1.err"
    timeout 90 /usr/bin/python3 "$HERE/kazoo_tls.py" "$2" "$3" "$C" >"$WORK/kazoo-$1.txt" 2>"$WORK/kazoo-$1.err"
    timeout 60 /usr/bin/python3 "$HERE/sasl_wire.py" "$2" >"$WORK/wire-$1.txt" 2>"$WORK/wire-$1.err"
}

# ---------------------------------------------------------------- Debian's ZooKeeper
start_server zk && run_clients zk "$PLAIN" "$SECURE"
stop_server

# ---------------------------------------------------------------- zkr
start_server zkr --jaas-config "$C/jaas-server.conf" && run_clients zkr "$PLAIN" "$SECURE"
stop_server

# ---------------------------------------------------------------- zkr only: whoAmI over TLS, x509 super user
# (ZooKeeper 3.8 has no whoAmI.) Same data, restarted with bob's subject as the x509 super user.
if start_server zkr --jaas-config "$C/jaas-server.conf" --x509-super-user "CN=bob,O=zkr"; then
    for who in alice bob; do
        timeout 30 /usr/bin/python3 "$HERE/whoami_tls.py" "$SECURE" "$C" "$who" /tls-creator 2>&1
    done >"$WORK/whoami-zkr.txt"
fi
stop_server
# ssl.clientAuth=want (the flag overrides zoo.cfg): no certificate connects without x509, a
# certificate still brings it.
if start_server zkr --tls-client-auth want; then
    for who in no-cert alice; do
        timeout 30 /usr/bin/python3 "$HERE/whoami_tls.py" "$SECURE" "$C" "$who" /tls-creator 2>&1 | sed 's/^/want /'
    done >>"$WORK/whoami-zkr.txt"
fi
stop_server

# ---------------------------------------------------------------- zkr only: plaintext garbage on the TLS port
# while a TLS client keeps working; afterwards open files, alive connections, threads and memory
# are back at their baseline (issue #5, garbage on the wire; TLS bytes to the plain port are in
# tests/hostile_garbage.rs).
if start_server zkr; then
    timeout 240 /usr/bin/python3 "$HERE/tls_garbage.py" "$PLAIN" "$SECURE" "$C" "$SERVER_PID" >"$WORK/garbage.txt" 2>&1
    rc=$?
    while read -r verdict what; do
        case "$verdict" in PASS) pass "$what" ;; FAIL) fail "$what" ;; esac
    done <"$WORK/garbage.txt"
    grep -q '^PASS' "$WORK/garbage.txt" && [ $rc -eq 0 ] || { fail "tls-garbage: run (exit $rc)"; tail -n 20 "$WORK/garbage.txt"; }
else
    fail "tls-garbage: zkr did not start"
fi
stop_server

# ---------------------------------------------------------------- comparisons
for client in java kazoo wire; do
    if [ -s "$WORK/$client-zk.txt" ] && diff -u "$WORK/$client-zk.txt" "$WORK/$client-zkr.txt" >"$WORK/$client.diff"; then
        pass "$client: zkr transcript = ZooKeeper transcript ($(wc -l <"$WORK/$client-zkr.txt") lines)"
    else
        fail "$client: transcripts differ (ZooKeeper vs zkr)"; cat "$WORK/$client.diff"
        tail -n 5 "$WORK/$client-zkr.err" "$WORK/$client-zk.err"
    fi
done
EXPECT="$HERE/expected"
for client in java kazoo wire whoami; do
    got=$(sed "s|$C|CERTS|g" "$WORK/$client-zkr.txt" 2>/dev/null)
    if [ -n "$got" ] && [ "$got" = "$(cat "$EXPECT/$client.txt")" ]; then
        pass "$client: zkr transcript = $EXPECT/$client.txt"
    else
        fail "$client: zkr transcript differs from expected/$client.txt"
        diff -u "$EXPECT/$client.txt" <(echo "$got")
    fi
done

# ---------------------------------------------------------------- zkr refuses bad settings at startup
refuses() { # name expected-text args...
    local name=$1 want=$2; shift 2
    local out
    out=$(timeout 20 "$ZKR_BIN" serve --data-dir "$WORK/bad" --port 0 "$@" 2>&1)
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$want" <<<"$out"; then
        pass "startup refused: $name"
    else
        fail "startup refused: $name (rc=$rc, wanted '$want')"; echo "$out" | tail -3
    fi
}
printf 'clientPort=0\nsecureClientPort=0\nssl.keyStore.location=%s\nssl.clientAuth=sometimes\n' \
    "$C/server-keystore.pem" >"$WORK/bad-auth.cfg"
refuses "ssl.clientAuth value names file:line" "bad-auth.cfg:4: ssl.clientAuth must be none, want or need" --config "$WORK/bad-auth.cfg"
printf 'secureClientPort=0\nssl.keyStore.location=/x/keystore.jks\n' >"$WORK/bad-jks.cfg"
refuses "JKS key store" "bad-jks.cfg:2:" --config "$WORK/bad-jks.cfg"
refuses "missing certificate file" "cannot read $WORK/nope.pem" --secure-port 0 --tls-cert "$WORK/nope.pem"
refuses "certificate file without a key" "no unencrypted PRIVATE KEY" --secure-port 0 --tls-cert "$C/ca.pem"
refuses "want without a CA" "need CA certificates" --secure-port 0 --tls-cert "$C/server-keystore.pem" --tls-client-auth want
printf 'Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_bob="x"\n};\n' >"$WORK/bad-jaas.conf"
refuses "JAAS syntax error names file:line" "bad-jaas.conf:4:" --jaas-config "$WORK/bad-jaas.conf"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
