#!/usr/bin/env bash
# TLS (secureClientPort, client certificates, x509 ACLs) and SASL DIGEST-MD5 with real clients:
# the official Java client (Netty socket, PKCS12 trust/key stores, JAAS login) and kazoo (ssl +
# pure-sasl). Certificates are made here with openssl and keytool. The same zoo.cfg (PEM key and
# trust stores, ssl.clientAuth=need) and JAAS file run Debian's ZooKeeper and zkr, both ports at
# once; the client transcripts must be identical, and each transcript is also checked against the
# expected outcome so that a shared bug cannot pass. Then the server's stores as JKS and as
# keytool's PKCS12 (Java client, and Python ssl handshakes for protocols and cipher suites), a
# key store replaced while the server runs, kazoo's own TestSSLClient with kazoo's launcher (its
# JKS stores) on both servers, and zkr-only checks of bad TLS/JAAS settings.
# Writes matrix rows to tests/interop/.work/matrix/tls.tsv.
#
#   ZKR_BIN=target/release/zkr bash tests/interop/tls/run.sh
# Ports: free pairs picked in TLS_PORT_BASE .. +899 (default 22000). Prints "N passed, M failed";
# exit 1 on failure.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
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
need_pkgs="zookeeper zookeeper-bin libzookeeper-java libnetty-java python3-kazoo python3-pure-sasl openssl netcat-openbsd python3-venv python3-dev"
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
                "rogue:rogue-ca:/CN=alice" \
                "server2:ca:/O=second/CN=localhost"; do
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
    # The server's stores as ZooKeeper users make them: JKS (Sun key protection) and keytool's
    # PKCS12 (PBES2, AES-256), a JKS trust store, and a password file (ssl.*.passwordPath).
    for fmt in JKS:jks PKCS12:p12; do
        for name in server server2; do
            keytool -importkeystore -noprompt -srckeystore $name.p12 -srcstoretype PKCS12 -srcstorepass changeit \
                -destkeystore $name-kt.${fmt#*:} -deststoretype ${fmt%:*} -deststorepass changeit >/dev/null 2>&1
        done
    done
    keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.jks -storetype JKS \
        -storepass changeit >/dev/null 2>&1
    echo changeit >store.pw
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
[ -f "$C/truststore.p12" ] && [ -f "$C/rogue.p12" ] && [ -f "$C/server2-kt.jks" ] && [ -f "$C/truststore.jks" ] \
    || { say "certificate generation failed"; exit 2; }

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
${STORE_LINES:-ssl.keyStore.location=$C/server-keystore.pem
ssl.keyStore.type=PEM
ssl.trustStore.location=$C/ca.pem
ssl.trustStore.type=PEM
ssl.clientAuth=need}
${EXTRA_LINES:-}
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
# Runs in $WORK/$RUN_NAME (default: $WORK/zk or $WORK/zkr).
start_server() {
    local kind=$1; shift
    local dir="$WORK/${RUN_NAME:-$kind}"
    for _ in 1 2 3; do
        read -r PLAIN SECURE < <(free_pair)
        mkdir -p "$dir/data"
        write_cfg "$dir" "$PLAIN" "$SECURE"
        if [ "$kind" = zk ]; then
            # Started directly: zkServer.sh's classpath lacks the Netty jars (codec, resolver) that
            # the Netty server factory needs, and ZooKeeper's TLS port only exists with that factory.
            java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.security.auth.login.config="$C/jaas-server.conf" \
                -Dorg.slf4j.simpleLogger.defaultLogLevel=info -cp "${CP//slf4j-nop/slf4j-simple}" \
                org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >>"$dir/log" 2>&1 &
        else
            "$ZKR_BIN" serve --config "$dir/zoo.cfg" "$@" >>"$dir/log" 2>&1 &
        fi
        SERVER_PID=$!
        PIDS+=($SERVER_PID)
        wait_ruok "$PLAIN" "$SERVER_PID" && return 0
        kill -9 "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
    done
    say "$kind did not start"; tail -n 20 "$dir/log" >&2
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

# ---------------------------------------------------------------- whoAmI over TLS, x509 super user
# Both servers on the data above, restarted with bob's subject as the x509 super user (zoo.cfg's
# X509AuthenticationProvider.superUser, which ZooKeeper turns into its system property). whoAmI
# lists the identities in the order of ZooKeeper's auth set (a ConcurrentHashMap), unsorted.
for kind in zk zkr; do
    if EXTRA_LINES="X509AuthenticationProvider.superUser=CN=bob,O=zkr" start_server $kind --jaas-config "$C/jaas-server.conf"; then
        for who in alice bob; do
            timeout 30 /usr/bin/python3 "$HERE/whoami_tls.py" "$SECURE" "$C" "$who" /tls-creator 2>&1
        done >"$WORK/whoami-$kind.txt"
    fi
    stop_server
done
cp "$WORK/whoami-zkr.txt" "$WORK/whoami-zkr-need.txt" 2>/dev/null
# zkr only: ssl.clientAuth=want (the flag overrides zoo.cfg): no certificate connects without x509, a
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

# ---------------------------------------------------------------- key store variants, both servers
# The TLS part of TlsCheck and Python ssl handshakes with the server's stores as JKS (types from
# the file names and inline passwords, as kazoo's harness writes them) and as keytool's PKCS12
# (type keys in any case, passwords from passwordPath, TLSv1.3+1.2 and a cipher suite list). In
# the JKS run the key store file is then replaced by one with another certificate (written
# beside it and renamed over it, as a deploy does) and a new connection is made.
variant_lines() { # jks|p12 dir
    case $1 in
        jks) printf '%s\n' "ssl.keyStore.location=$2/keystore.jks" "ssl.keyStore.password=changeit" \
                 "ssl.trustStore.location=$C/truststore.jks" "ssl.trustStore.password=changeit" ;;
        p12) printf '%s\n' "ssl.keyStore.location=$2/keystore.p12" "ssl.keyStore.type=PKCS12" \
                 "ssl.keyStore.passwordPath=$C/store.pw" "ssl.trustStore.location=$C/truststore.p12" \
                 "ssl.trustStore.type=pkcs12" "ssl.trustStore.passwordPath=$C/store.pw" "ssl.clientAuth=need" \
                 "ssl.enabledProtocols=TLSv1.3,TLSv1.2" \
                 "ssl.ciphersuites=TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" ;;
    esac
}
for v in jks p12; do
    for kind in zk zkr; do
        RUN_NAME="$v-$kind"
        d="$WORK/$RUN_NAME"
        mkdir -p "$d"
        cp "$C/server-kt.$v" "$d/keystore.$v"
        STORE_LINES=$(variant_lines "$v" "$d")
        if start_server "$kind"; then
            timeout 150 java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$WORK:$CP" TlsCheck "$PLAIN" "$SECURE" "$C" tls \
                >"$WORK/java-$v-$kind.txt" 2>"$WORK/java-$v-$kind.err"
            timeout 60 /usr/bin/python3 "$HERE/tls_probe.py" "$SECURE" "$C" "$v" >"$WORK/probe-$v-$kind.txt" 2>&1
            if [ "$v" = jks ]; then
                cp "$C/server2-kt.jks" "$d/keystore.new" && mv "$d/keystore.new" "$d/keystore.jks"
                sleep 3
                timeout 30 /usr/bin/python3 "$HERE/tls_probe.py" "$SECURE" "$C" "after replacing keystore.jks:" default \
                    >"$WORK/reload-$kind.txt" 2>&1
            fi
        fi
        stop_server
    done
done
unset RUN_NAME STORE_LINES

# ---------------------------------------------------------------- kazoo's own TestSSLClient
# kazoo 2.11's test harness (kazoo.testing.common.ZookeeperCluster, one server) makes the
# certificates (version 1 ones), writes a JKS key store and trust store with pyjks and a zoo.cfg
# naming them without a type, and starts the server: java QuorumPeerMain for ZooKeeper, `zkr
# serve --config` on that same zoo.cfg for zkr (the clients suite's shim, ZKR_KAZOO_LAUNCH).
KAZOO_VERSION=2.11.0
KWORK="$INTEROP/.work/tls"
KVENV="$KWORK/kazoo-venv"
KSRC="$KWORK/kazoo-$KAZOO_VERSION"
kazoo_deps() {
    mkdir -p "$KWORK"
    if [ ! -x "$KVENV/bin/pytest" ] || ! "$KVENV/bin/python" -c 'import jks, OpenSSL' 2>/dev/null; then
        rm -rf "$KVENV"
        /usr/bin/python3 -m venv "$KVENV" && (cd "$HERE" && "$KVENV/bin/pip" install -q -r kazoo-requirements.txt) || return 1
    fi
    [ -d "$KSRC/kazoo/tests" ] && return 0
    rm -rf "$KWORK/sdist" && mkdir -p "$KWORK/sdist" &&
        "$KVENV/bin/pip" download -q --no-deps --no-binary :all: -d "$KWORK/sdist" "kazoo==$KAZOO_VERSION" &&
        tar -xzf "$KWORK/sdist/kazoo-$KAZOO_VERSION.tar.gz" -C "$KWORK"
}
free_block() { # five consecutive free ports (kazoo: client, election, leader, admin, secure)
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
starts = list(range(base, base + 890, 10))
random.shuffle(starts)
print(next((p for p in starts if all(free(p + i) for i in range(5))), 0))
PY
}
if kazoo_deps >"$WORK/kazoo-deps.log" 2>&1; then
    for side in zookeeper zkr; do
        (cd "$KSRC" && ZKR_BIN="$ZKR_BIN" ZKR_KAZOO_LAUNCH=$side ZKR_KAZOO_LAUNCH_LOG="$WORK/kazoo-launch-$side.log" \
            ZOOKEEPER_CLASSPATH="$CP" ZOOKEEPER_VERSION=3.8.0 ZOOKEEPER_CLUSTER_SIZE=1 ZOOKEEPER_PORT_OFFSET="$(free_block)" \
            PYTHONPATH="$INTEROP/clients/kazoo-suite:$KSRC" timeout 300 "$KVENV/bin/python" -m pytest -p zkr_kazoo_shim \
            -p no:cacheprovider -q -o addopts= -o log_cli=false --timeout 120 \
            kazoo/tests/test_client.py::TestSSLClient >"$WORK/kazoo-suite-$side.log" 2>&1)
        echo $? >"$WORK/kazoo-suite-$side.rc"
    done
else
    tail -n 20 "$WORK/kazoo-deps.log"
fi

# ---------------------------------------------------------------- comparisons
MATRIX_TSV="$INTEROP/.work/matrix/tls.tsv"
mkdir -p "$(dirname "$MATRIX_TSV")"
: >"$MATRIX_TSV"
row() { # client feature zookeeper zkr
    printf '%s\t%s\t%s\t%s\t\n' "$1" "$2" "$3" "$4" >>"$MATRIX_TSV"
}
JAVA_ROW="Java client over TLS (Debian zookeeper.jar 3.8, Netty)"
PY_ROW="Python ssl (OpenSSL 3) handshakes on the TLS port"
for client in java kazoo wire; do
    case $client in
        java) label=$JAVA_ROW feature="PEM stores: x509 ACLs, refused certificates, SASL, TLS+SASL (TlsCheck)" ;;
        kazoo) label="kazoo (python3-kazoo 2.8)" feature="TLS client certificate, x509 ACLs, SASL (kazoo_tls.py)" ;;
        wire) label="raw socket" feature="SASL DIGEST-MD5 exchange (sasl_wire.py)" ;;
    esac
    if [ -s "$WORK/$client-zk.txt" ] && diff -u "$WORK/$client-zk.txt" "$WORK/$client-zkr.txt" >"$WORK/$client.diff"; then
        pass "$client: zkr transcript = ZooKeeper transcript ($(wc -l <"$WORK/$client-zkr.txt") lines)"
        row "$label" "$feature" ok ok
    else
        row "$label" "$feature" ok differs
        fail "$client: transcripts differ (ZooKeeper vs zkr)"; cat "$WORK/$client.diff"
        tail -n 5 "$WORK/$client-zkr.err" "$WORK/$client-zk.err"
    fi
done
if [ -s "$WORK/whoami-zk.txt" ] && diff -u "$WORK/whoami-zk.txt" "$WORK/whoami-zkr-need.txt" >"$WORK/whoami.diff"; then
    pass "whoami: zkr = ZooKeeper, identities in ZooKeeper's order ($(wc -l <"$WORK/whoami-zk.txt") lines)"
    row "raw socket over TLS" "whoAmI with x509 and x509 super user: identities in ZooKeeper's order (whoami_tls.py)" ok ok
else
    fail "whoami: transcripts differ (ZooKeeper vs zkr)"; cat "$WORK/whoami.diff"
    row "raw socket over TLS" "whoAmI with x509 and x509 super user: identities in ZooKeeper's order (whoami_tls.py)" ok differs
fi
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

# key store variants: same transcript on both servers, and the expected one
for v in jks p12; do
    case $v in
        jks) what="JKS key and trust stores (types from the file names)" ;;
        p12) what="keytool PKCS12 stores, passwordPath, ssl.enabledProtocols, ssl.ciphersuites" ;;
    esac
    for t in java probe; do
        got="$WORK/$t-$v-zkr.txt" ref="$WORK/$t-$v-zk.txt"
        want="$EXPECT/$t-tls.txt"
        [ "$t" = probe ] && want="$EXPECT/probe-$v.txt"
        label=$JAVA_ROW feature="$what (TlsCheck, TLS part)"
        [ "$t" = probe ] && label=$PY_ROW feature="$what: protocol and cipher suite agreed"
        if [ -s "$ref" ] && diff -u "$ref" "$got" >"$WORK/$t-$v.diff"; then
            pass "$t $v: zkr transcript = ZooKeeper transcript ($(wc -l <"$got") lines)"
            row "$label" "$feature" ok ok
        else
            fail "$t $v: transcripts differ (ZooKeeper vs zkr)"; cat "$WORK/$t-$v.diff"; tail -n 5 "${got%.txt}.err" 2>/dev/null
            row "$label" "$feature" ok differs
        fi
        if [ -s "$got" ] && [ "$(sed "s|$C|CERTS|g" "$got")" = "$(cat "$want")" ]; then
            pass "$t $v: zkr transcript = $want"
        else
            fail "$t $v: zkr transcript differs from $want"; diff -u "$want" <(sed "s|$C|CERTS|g" "$got" 2>/dev/null)
        fi
    done
done
# the key store replaced while running: zkr serves the new certificate to a new connection;
# ZooKeeper 3.8 keeps the one it started with (it reloads only quorum certificates)
for kind in zk zkr; do
    if [ -s "$WORK/reload-$kind.txt" ] && [ "$(cat "$WORK/reload-$kind.txt")" = "$(cat "$EXPECT/reload-$kind.txt")" ]; then
        pass "reload $kind: $(cat "$WORK/reload-$kind.txt")"
    else
        fail "reload $kind: wanted $(cat "$EXPECT/reload-$kind.txt")"; cat "$WORK/reload-$kind.txt" 2>/dev/null
    fi
done
cert_of() { grep -q 'O=second\|organizationName=second' "$1" 2>/dev/null && echo "new certificate" || echo "certificate it started with"; }
row "$PY_ROW" "key store file replaced while running: certificate of a new connection" \
    "$(cert_of "$WORK/reload-zk.txt")" "$(cert_of "$WORK/reload-zkr.txt")"
# kazoo's TestSSLClient
kres() { [ "$(cat "$WORK/kazoo-suite-$1.rc" 2>/dev/null)" = 0 ] && grep -q '1 passed' "$WORK/kazoo-suite-$1.log" && echo "1/1 passed" || echo "0/1 passed"; }
row "kazoo 2.11 test suite" "test_client TestSSLClient (kazoo's launcher: pyjks JKS stores, v1 certificates)" "$(kres zookeeper)" "$(kres zkr)"
if [ "$(kres zookeeper)" = "1/1 passed" ] && [ "$(kres zkr)" = "1/1 passed" ] \
    && grep -q "serve --config" "$WORK/kazoo-launch-zkr.log" && grep -q "ssl.keyStore.location=.*keystore.jks" "$WORK/kazoo-launch-zkr.log"; then
    pass "kazoo TestSSLClient: passes on ZooKeeper and on zkr started on kazoo's zoo.cfg (JKS key store)"
else
    fail "kazoo TestSSLClient: ZooKeeper $(kres zookeeper), zkr $(kres zkr)"
    tail -n 25 "$WORK/kazoo-suite-zkr.log" "$WORK/kazoo-launch-zkr.log" 2>/dev/null
fi

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
refuses "missing key store names file:line" "bad-jks.cfg:2: ssl.keyStore.location=/x/keystore.jks: cannot read it" --config "$WORK/bad-jks.cfg"
bad_store() { # name cfg-lines... : a zoo.cfg with a secure port and these lines
    local f="$WORK/$1.cfg"; shift
    printf 'secureClientPort=0\n' >"$f"; printf '%s\n' "$@" >>"$f"
}
bad_store bad-pw "ssl.keyStore.location=$C/server-kt.jks" "ssl.keyStore.password=wrong"
refuses "wrong JKS password" "bad-pw.cfg:2: ssl.keyStore.location=$C/server-kt.jks: wrong password" --config "$WORK/bad-pw.cfg"
bad_store bad-p12pw "ssl.keyStore.location=$C/server-kt.p12" "ssl.keyStore.passwordPath=$WORK/bad-jks.cfg"
refuses "wrong PKCS12 password (passwordPath)" "bad-p12pw.cfg:2: ssl.keyStore.location=$C/server-kt.p12: wrong password" --config "$WORK/bad-p12pw.cfg"
bad_store bad-type "ssl.keyStore.location=$C/server-keystore.pem" "ssl.keyStore.type=PKCS12"
refuses "wrong key store type" "a PEM file, but its type is PKCS12" --config "$WORK/bad-type.cfg"
bad_store bad-nokey "ssl.keyStore.location=$C/truststore.jks" "ssl.keyStore.password=changeit"
refuses "key store without a private key" "bad-nokey.cfg:2: ssl.keyStore.location=$C/truststore.jks: no private key entry" --config "$WORK/bad-nokey.cfg"
bad_store bad-ext "ssl.keyStore.location=$C/store.pw"
refuses "key store type not in the name" "bad-ext.cfg:2: cannot tell the key store type" --config "$WORK/bad-ext.cfg"
bad_store bad-suite "ssl.keyStore.location=$C/server-kt.jks" "ssl.keyStore.password=changeit" "ssl.ciphersuites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA265"
refuses "unknown cipher suite names file:line" "bad-suite.cfg:4: unknown cipher suite" --config "$WORK/bad-suite.cfg"
refuses "missing certificate file" "--tls-cert $WORK/nope.pem: cannot read it" --secure-port 0 --tls-cert "$WORK/nope.pem"
refuses "certificate file without a key" "no PRIVATE KEY block" --secure-port 0 --tls-cert "$C/ca.pem"
refuses "want without a CA" "need CA certificates" --secure-port 0 --tls-cert "$C/server-keystore.pem" --tls-client-auth want
printf 'Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_bob="x"\n};\n' >"$WORK/bad-jaas.conf"
refuses "JAAS syntax error names file:line" "bad-jaas.conf:4:" --jaas-config "$WORK/bad-jaas.conf"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
