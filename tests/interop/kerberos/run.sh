#!/usr/bin/env bash
# SASL GSSAPI (Kerberos) for clients (issue 40): a throwaway MIT realm ZKR.TEST (its own krb5.conf,
# kdc.conf, database and krb5kdc on a free loopback port; nothing in /etc is used or changed), one
# zoo.cfg and one JAAS Server section (Krb5LoginModule, server.keytab) for Debian's ZooKeeper 3.8 and
# for zkr, and the same scenarios against each: the Java client (JAAS Client sections, keytabs),
# Curator 5, kazoo (pure-sasl + python3-kerberos), a raw jute client with python3-gssapi, a capture
# of the Java client's exchange through a logging proxy, and the unhappy paths (wrong service
# ticket, garbage and truncated tokens, a keytab without the server's principal, the KDC stopped,
# enforce.auth and sessionRequireClientSASLAuth). Each scenario's transcript from zkr must equal
# ZooKeeper's and tests/interop/kerberos/expected/<scenario>.txt (ZooKeeper's, reviewed).
# Then quorum.sh (sourced): Kerberos between ensemble members (quorum SASL GSSAPI), a ZooKeeper 3.8
# ensemble, a zkr ensemble and zkr observing the ZooKeeper one. Last, kafka.sh (sourced): a Kafka 3.9
# broker in ZooKeeper mode, Kerberos to each server.
# Writes matrix rows to tests/interop/.work/matrix/kerberos.tsv.
#
#   ZKR_BIN=target/release/zkr bash tests/interop/kerberos/run.sh
# Ports: free ones picked in KRB_PORT_BASE .. +899 (default 23000). KRB_KEEP_WORK=1 keeps the temp
# dir. KRB_ONLY=quorum runs only the realm and quorum.sh. Prints "N passed, M failed"; exit 1 on a failed check, 2 when the setup failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP="$(cd "$HERE/.." && pwd)"
ZKR_BIN=${ZKR_BIN:?set ZKR_BIN to the zkr binary}
case "$ZKR_BIN" in /*) ;; *) ZKR_BIN="$PWD/$ZKR_BIN" ;; esac
BASE=${KRB_PORT_BASE:-23000}
T0=$SECONDS
WORK=$(mktemp -d)
K="$WORK/realm"
PIDS=()
KDC_PID=""
PY=/usr/bin/python3
JAVA_OPTS=(-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k)
say() { echo "[kerberos] $*" >&2; }
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    [ -n "$KDC_PID" ] && kill -9 "$KDC_PID" 2>/dev/null
    wait 2>/dev/null
    if [ -n "${KRB_KEEP_WORK:-}" ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
passed=0; failed=0
pass() { echo "PASS kerberos/$1"; passed=$((passed+1)); }
fail() { echo "FAIL kerberos/$1"; failed=$((failed+1)); }
setup_failed() { fail "setup: $1"; echo "$passed passed, $failed failed ($((SECONDS - T0)) s)"; exit 2; }

# ---------------------------------------------------------------- dependencies
need_pkgs="krb5-kdc krb5-admin-server krb5-user zookeeper zookeeper-bin libzookeeper-java libcurator-framework-java
python3-kazoo python3-pure-sasl python3-kerberos python3-gssapi netcat-openbsd"
missing=""
for p in $need_pkgs; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done
command -v javac >/dev/null 2>&1 || missing="$missing default-jdk-headless"
if [ -n "$missing" ]; then
    say "installing:$missing"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing; } >"$WORK/apt.log" 2>&1 \
        || { tail -20 "$WORK/apt.log"; setup_failed "apt-get install$missing"; }
fi
export PATH="$PATH:/usr/sbin:/sbin"
CP=$(printf '/usr/share/java/%s.jar:' zookeeper zookeeper-jute slf4j-api slf4j-nop commons-io)
CUR_CP="$CP$(printf '/usr/share/java/%s.jar:' curator-client curator-framework guava)"
javac -d "$WORK" -cp "$CUR_CP" "$HERE/KrbCheck.java" "$HERE/CuratorKrb.java" || setup_failed "javac"

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

# ---------------------------------------------------------------- the realm
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
    for p in zookeeper/localhost zookeeper/otherhost bob carol/client.example; do
        kadmin.local -q "addprinc -randkey $p@ZKR.TEST" || exit 1
    done &&
    kadmin.local -q "ktadd -norandkey -k $K/server.keytab zookeeper/localhost@ZKR.TEST" &&
    kadmin.local -q "ktadd -norandkey -k $K/bob.keytab bob@ZKR.TEST" &&
    kadmin.local -q "ktadd -norandkey -k $K/carol.keytab carol/client.example@ZKR.TEST" &&
    kadmin.local -q "ktadd -norandkey -k $K/wrong.keytab bob@ZKR.TEST"
} >"$K/setup.log" 2>&1
for f in server bob carol wrong; do
    [ -s "$K/$f.keytab" ] || { tail -20 "$K/setup.log"; setup_failed "kdb5_util/kadmin.local: no $f.keytab"; }
done
start_kdc() {
    krb5kdc -n >>"$K/kdc.out" 2>&1 &
    KDC_PID=$!
    for _ in $(seq 50); do
        $PY -c "import socket,sys; socket.create_connection(('127.0.0.1', $KDC_PORT), 1)" 2>/dev/null && return 0
        kill -0 "$KDC_PID" 2>/dev/null || break
        sleep 0.1
    done
    tail -5 "$K/kdc.out" "$K/kdc.log" >&2
    return 1
}
stop_kdc() { kill "$KDC_PID" 2>/dev/null; wait "$KDC_PID" 2>/dev/null; KDC_PID=""; }
start_kdc || setup_failed "krb5kdc did not start on 127.0.0.1:$KDC_PORT"
if KRB5CCNAME="FILE:$K/probe.cc" kinit -kt "$K/bob.keytab" bob@ZKR.TEST >"$K/kinit.log" 2>&1 &&
    KRB5CCNAME="FILE:$K/probe.cc" kvno zookeeper/localhost@ZKR.TEST >>"$K/kinit.log" 2>&1; then
    pass "realm: krb5kdc on 127.0.0.1:$KDC_PORT, kinit -kt bob.keytab, service ticket for zookeeper/localhost"
else
    cat "$K/kinit.log"; setup_failed "kinit/kvno against the test KDC"
fi

# JAAS: the server's section (one file for both servers) and the clients' sections
jaas_server() { # keytab -> file
    cat <<JAAS
Server {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    keyTab="$K/$1"
    storeKey=true
    useTicketCache=false
    principal="zookeeper/localhost@ZKR.TEST";
};
JAAS
}
jaas_server server.keytab >"$K/jaas-server.conf"
jaas_server wrong.keytab >"$K/jaas-server-wrong.conf"
cat >"$K/jaas-client.conf" <<JAAS
Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="$K/bob.keytab" principal="bob@ZKR.TEST" storeKey=true useTicketCache=false; };
ClientBob2 { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="$K/bob.keytab" principal="bob@ZKR.TEST" storeKey=true useTicketCache=false; };
ClientCarol { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="$K/carol.keytab" principal="carol/client.example@ZKR.TEST" storeKey=true useTicketCache=false; };
JAAS
JCLIENT=(java "${JAVA_OPTS[@]}" -Djava.security.auth.login.config="$K/jaas-client.conf" -Djava.security.krb5.conf="$KRB5_CONFIG")

# ---------------------------------------------------------------- servers
write_cfg() { # dir port
    cat >"$1/zoo.cfg" <<CFG
tickTime=2000
dataDir=$1/data
clientPort=$2
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
${EXTRA_LINES:-}
CFG
}
ruok() { [ "$(echo ruok | nc -q1 127.0.0.1 "$1" 2>/dev/null)" = imok ]; }
wait_ruok() { # port pid seconds
    for _ in $(seq $(($3 * 5))); do
        ruok "$1" && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}
# launch kind dir: starts the server on $PORT with $JAAS and $SRV_FLAGS (JVM system properties:
# java flags for ZooKeeper, SERVER_JVMFLAGS for zkr); sets SERVER_PID
launch() {
    local kind=$1 dir=$2
    mkdir -p "$dir/data"
    write_cfg "$dir" "$PORT"
    if [ "$kind" = zk ]; then
        # shellcheck disable=SC2086
        java "${JAVA_OPTS[@]}" -Djava.security.auth.login.config="$JAAS" $SRV_FLAGS \
            -Dorg.slf4j.simpleLogger.defaultLogLevel=info -cp "${CP//slf4j-nop/slf4j-simple}" \
            org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >>"$dir/log" 2>&1 &
    else
        # No KRB5_CONFIG: zkr finds the realm's krb5.conf in -Djava.security.krb5.conf, as
        # ZooKeeper is given it (the remove* transcripts need its default realm).
        env -u KRB5_CONFIG SERVER_JVMFLAGS="$SRV_FLAGS" \
            "$ZKR_BIN" serve --config "$dir/zoo.cfg" --jaas-config "$JAAS" >>"$dir/log" 2>&1 &
    fi
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
}
# start_server kind run: 0 when it answers ruok; the run's files are in $WORK/<run>-<kind>
start_server() {
    local kind=$1 dir="$WORK/$2-$1"
    for _ in 1 2 3; do
        PORT=$(free_port)
        launch "$kind" "$dir"
        wait_ruok "$PORT" "$SERVER_PID" 40 && return 0
        kill -9 "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
    done
    say "$kind did not start ($2)"; tail -n 20 "$dir/log" >&2
    return 1
}
stop_server() { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; }
BASE_FLAGS="-Djava.security.krb5.conf=$KRB5_CONFIG"
# log_since file offset: the server log lines written after byte offset
log_size() { stat -c %s "$1" 2>/dev/null || echo 0; }
log_since() { tail -c +"$(($2 + 1))" "$1" 2>/dev/null; }
tx() { echo "$WORK/tx/$1-$2.txt"; } # scenario kind
mkdir -p "$WORK/tx"
# a client's exit status is part of the transcript only when it is not 0
client_rc() { local rc=$?; [ $rc -eq 0 ] || echo "client exit status $rc"; }
kinit_bob() { # ccache
    KRB5CCNAME="FILE:$1" kinit -kt "$K/bob.keytab" bob@ZKR.TEST >>"$K/kinit.log" 2>&1
}
# scenario-specific server log checks: for ZooKeeper the exact line, for zkr a line of its own
# naming the failure (its wording is zkr's)
ZK_LOG_WANT=()
log_check() { # kind scenario log-text zk-fixed-string zkr-regex
    local kind=$1 scen=$2 text=$3
    if [ "$kind" = zk ]; then
        if grep -qF -- "$4" <<<"$text"; then pass "$scen zk: server log has '$4'"
        else fail "$scen zk: server log lacks '$4'"; fi
    else
        if grep -qiE -- "$5" <<<"$text"; then pass "$scen zkr: server log has a line matching /$5/: $(grep -iE -m1 -- "$5" <<<"$text" | cut -c1-200)"
        else fail "$scen zkr: no server log line matching /$5/"; fi
    fi
}

KINDS="zk zkr"
[ "${KRB_ONLY:-}" = quorum ] && KINDS=""
for kind in $KINDS; do
    # ------------------------------------------------ run "default": ids as ZooKeeper makes them by default
    JAAS="$K/jaas-server.conf"
    SRV_FLAGS="$BASE_FLAGS -Dzookeeper.superUser=carol/client.example@ZKR.TEST"
    EXTRA_LINES=""
    if start_server "$kind" default; then
        LOG="$WORK/default-$kind/log"
        timeout 60 "${JCLIENT[@]}" -cp "$WORK:$CP" KrbCheck main "$PORT" "$WORK" >"$(tx java-main "$kind")" 2>"$WORK/java-main-$kind.err"; client_rc >>"$(tx java-main "$kind")"
        timeout 60 "${JCLIENT[@]}" -cp "$WORK:$CUR_CP" CuratorKrb "$PORT" >"$(tx curator "$kind")" 2>"$WORK/curator-$kind.err"; client_rc >>"$(tx curator "$kind")"
        CC="$K/kazoo-$kind.cc"
        if kinit_bob "$CC"; then
            KRB5CCNAME="FILE:$CC" timeout 60 $PY "$HERE/kazoo_krb.py" "$PORT" full >"$(tx kazoo "$kind")" 2>"$WORK/kazoo-$kind.err"; client_rc >>"$(tx kazoo "$kind")"
            KRB5CCNAME="FILE:$CC" timeout 60 $PY "$HERE/krb_wire.py" "$PORT" exchange >"$(tx wire-exchange "$kind")" 2>"$WORK/wire-exchange-$kind.err"; client_rc >>"$(tx wire-exchange "$kind")"
            off=$(log_size "$LOG")
            KRB5CCNAME="FILE:$CC" timeout 60 $PY "$HERE/krb_wire.py" "$PORT" unhappy >"$(tx wire-unhappy "$kind")" 2>"$WORK/wire-unhappy-$kind.err"; client_rc >>"$(tx wire-unhappy "$kind")"
            sleep 0.5
            log_since "$LOG" "$off" >"$WORK/wire-unhappy-$kind.log"
        else
            echo "kinit failed" | tee "$(tx kazoo "$kind")" "$(tx wire-exchange "$kind")" >"$(tx wire-unhappy "$kind")"
        fi
        # the Java client's exchange through a logging proxy
        CAP_PORT=$(free_port)
        $PY "$HERE/sasl_capture.py" "$CAP_PORT" "$PORT" "$WORK/capture-detail-$kind.txt" "$(tx capture "$kind")" >"$WORK/capture-$kind.out" 2>&1 &
        CAP_PID=$!; PIDS+=("$CAP_PID")
        for _ in $(seq 30); do grep -q listening "$WORK/capture-$kind.out" && break; sleep 0.1; done
        timeout 60 "${JCLIENT[@]}" -cp "$WORK:$CP" KrbCheck login "$CAP_PORT" "$WORK" >"$WORK/capture-client-$kind.txt" 2>&1
        wait "$CAP_PID" 2>/dev/null
        cat "$WORK/capture-client-$kind.txt" >>"$(tx capture "$kind")"
        # a ticket for zookeeper/otherhost (in the KDC, not in server.keytab)
        off=$(log_size "$LOG")
        timeout 60 "${JCLIENT[@]}" -cp "$WORK:$CP" KrbCheck wrongsvc "$PORT" "$WORK" >"$(tx java-wrong-service "$kind")" 2>"$WORK/java-wrong-service-$kind.err"; client_rc >>"$(tx java-wrong-service "$kind")"
        sleep 0.5
        log_since "$LOG" "$off" >"$WORK/java-wrong-service-$kind.log"
        # the KDC stopped while the server runs: the Java client connects first, then the KDC goes
        # away; kazoo uses the service ticket already in its ccache
        rm -f "$WORK/kdcdown.ready" "$WORK/kdcdown.go"
        timeout 90 "${JCLIENT[@]}" -cp "$WORK:$CP" KrbCheck kdcdown "$PORT" "$WORK" >"$(tx kdc-down "$kind")" 2>"$WORK/kdc-down-$kind.err" &
        JPID=$!
        for _ in $(seq 300); do [ -f "$WORK/kdcdown.ready" ] && break; kill -0 "$JPID" 2>/dev/null || break; sleep 0.1; done
        stop_kdc
        KRB5CCNAME="FILE:$CC" timeout 60 $PY "$HERE/kazoo_krb.py" "$PORT" existing-ticket 2>"$WORK/kazoo-kdc-down-$kind.err" \
            | sed 's/^/KDC down, ticket in ccache: /' >"$WORK/kazoo-kdc-down-$kind.txt"
        touch "$WORK/kdcdown.go"
        wait "$JPID"; client_rc >>"$(tx kdc-down "$kind")"
        cat "$WORK/kazoo-kdc-down-$kind.txt" >>"$(tx kdc-down "$kind")"
        start_kdc || setup_failed "krb5kdc did not restart"
        # the server's key changed while it runs: a new key (kvno + 1) in a new keytab that
        # replaces the old file, as an operator rotates it; a fresh ticket is for the new key
        kadmin.local -r ZKR.TEST -q "ktadd -k $K/server.keytab.new zookeeper/localhost@ZKR.TEST" >>"$K/kadmin.log" 2>&1 \
            && mv "$K/server.keytab.new" "$K/server.keytab" || echo "keytab rotation failed" >"$(tx keytab-rotated "$kind")"
        CC="$K/rotated-$kind.cc"
        if kinit_bob "$CC"; then
            KRB5CCNAME="FILE:$CC" timeout 60 $PY "$HERE/krb_wire.py" "$PORT" exchange >>"$(tx keytab-rotated "$kind")" 2>"$WORK/keytab-rotated-$kind.err"; client_rc >>"$(tx keytab-rotated "$kind")"
        else
            echo "kinit failed" >>"$(tx keytab-rotated "$kind")"
        fi
    fi
    stop_server

    # ------------------------------------------------ run "remove-unprefixed": -Dkerberos.remove*FromPrincipal,
    # names ZooKeeper 3.8 does not read (its properties are zookeeper.kerberos.*): ids stay full
    SRV_FLAGS="$BASE_FLAGS -Dkerberos.removeHostFromPrincipal=true -Dkerberos.removeRealmFromPrincipal=true -Dzookeeper.superUser=bob"
    if start_server "$kind" remove-unprefixed; then
        timeout 60 "${JCLIENT[@]}" -cp "$WORK:$CP" KrbCheck main "$PORT" "$WORK" >"$(tx java-main-remove-unprefixed "$kind")" 2>"$WORK/java-main-remove-unprefixed-$kind.err"; client_rc >>"$(tx java-main-remove-unprefixed "$kind")"
    fi
    stop_server

    # ------------------------------------------------ run "remove": zookeeper.kerberos.removeHostFromPrincipal/RealmFromPrincipal
    SRV_FLAGS="$BASE_FLAGS -Dzookeeper.kerberos.removeHostFromPrincipal=true -Dzookeeper.kerberos.removeRealmFromPrincipal=true -Dzookeeper.superUser=bob"
    if start_server "$kind" remove; then
        timeout 60 "${JCLIENT[@]}" -cp "$WORK:$CP" KrbCheck main "$PORT" "$WORK" >"$(tx java-main-remove "$kind")" 2>"$WORK/java-main-remove-$kind.err"; client_rc >>"$(tx java-main-remove "$kind")"
        CC="$K/kazoo-remove-$kind.cc"
        kinit_bob "$CC"
        KRB5CCNAME="FILE:$CC" timeout 60 $PY "$HERE/kazoo_krb.py" "$PORT" full >"$(tx kazoo-remove "$kind")" 2>"$WORK/kazoo-remove-$kind.err"; client_rc >>"$(tx kazoo-remove "$kind")"
    fi
    stop_server

    # ------------------------------------------------ run "bad-keytab": the JAAS keyTab lacks the server's principal
    JAAS="$K/jaas-server-wrong.conf"
    SRV_FLAGS="$BASE_FLAGS"
    d="$WORK/bad-keytab-$kind"
    PORT=$(free_port)
    launch "$kind" "$d"
    f=$(tx bad-keytab "$kind")
    if wait_ruok "$PORT" "$SERVER_PID" 25; then
        echo "server: answers ruok" >"$f"
        timeout 60 "${JCLIENT[@]}" -cp "$WORK:$CP" KrbCheck login "$PORT" "$WORK" >>"$f" 2>"$WORK/bad-keytab-$kind.err"; client_rc >>"$f"
        stop_server
    elif kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "server: running but not answering ruok after 25 s" >"$f"
        stop_server
    else
        wait "$SERVER_PID"; rc=$?
        echo "server: exited before answering ruok, exit status $([ $rc -eq 0 ] && echo 0 || echo nonzero)" >"$f"
        echo "$rc" >"$d/exit-status"
    fi
    JAAS="$K/jaas-server.conf"

    # ------------------------------------------------ run "expired-ticket": both servers' krb5.conf allows
    # 2 s of clock skew (Java and MIT read [libdefaults] clockskew); bob's ticket lives 4 s
    [ -f "$K/krb5-skew.conf" ] || sed '/^\[libdefaults\]/a\ clockskew = 2' "$KRB5_CONFIG" >"$K/krb5-skew.conf"
    SRV_FLAGS="-Djava.security.krb5.conf=$K/krb5-skew.conf"
    if start_server "$kind" expired-ticket; then
        CC="$K/expired-$kind.cc"
        if KRB5CCNAME="FILE:$CC" kinit -l 4s -kt "$K/bob.keytab" bob@ZKR.TEST >>"$K/kinit.log" 2>&1; then
            KRB5CCNAME="FILE:$CC" timeout 60 $PY "$HERE/krb_wire.py" "$PORT" expired >"$(tx expired-ticket "$kind")" 2>"$WORK/expired-ticket-$kind.err"; client_rc >>"$(tx expired-ticket "$kind")"
        else
            echo "kinit -l 4s failed" >"$(tx expired-ticket "$kind")"
        fi
    fi
    stop_server

    # ------------------------------------------------ runs "enforce" and "require-sasl"
    for run in enforce require-sasl; do
        case $run in
            enforce) EXTRA_LINES="enforce.auth.enabled=true
enforce.auth.schemes=sasl" ;;
            require-sasl) EXTRA_LINES="sessionRequireClientSASLAuth=true" ;;
        esac
        SRV_FLAGS="$BASE_FLAGS -Dzookeeper.superUser=bob"
        if start_server "$kind" "$run"; then
            timeout 60 "${JCLIENT[@]}" -cp "$WORK:$CP" KrbCheck enforce "$PORT" "$WORK" >"$(tx "$run" "$kind")" 2>"$WORK/$run-$kind.err"; client_rc >>"$(tx "$run" "$kind")"
            timeout 30 $PY "$HERE/krb_wire.py" "$PORT" plain-create >>"$(tx "$run" "$kind")" 2>"$WORK/$run-wire-$kind.err"; client_rc >>"$(tx "$run" "$kind")"
        fi
        stop_server
    done
    EXTRA_LINES=""

    # ------------------------------------------------ run "kdc-down-at-start": the KDC is stopped before the
    # server starts; a client whose ccache already holds a service ticket then logs in
    CC="$K/kdcstart-$kind.cc"
    f="$WORK/kdc-down-at-start-$kind.txt"
    if kinit_bob "$CC" && KRB5CCNAME="FILE:$CC" kvno zookeeper/localhost@ZKR.TEST >>"$K/kinit.log" 2>&1; then
        stop_kdc
        SRV_FLAGS="$BASE_FLAGS"
        d="$WORK/kdc-down-at-start-$kind"
        PORT=$(free_port)
        launch "$kind" "$d"
        if wait_ruok "$PORT" "$SERVER_PID" 25; then
            echo "server: answers ruok" >"$f"
            KRB5CCNAME="FILE:$CC" timeout 60 $PY "$HERE/krb_wire.py" "$PORT" exchange 2>>"$f" | grep -E "whoAmI" >>"$f"
            stop_server
        else
            kill -0 "$SERVER_PID" 2>/dev/null && stop_server
            echo "server: does not answer ruok (exited or not listening)" >"$f"
        fi
        cp "$d/log" "$WORK/kdc-down-at-start-$kind.log" 2>/dev/null
        start_kdc || setup_failed "krb5kdc did not restart"
    else
        echo "kinit or kvno failed" >"$f"
    fi
done

# ---------------------------------------------------------------- server log lines of the unhappy paths
for kind in $KINDS; do
    log_check "$kind" wire-unhappy "$(cat "$WORK/wire-unhappy-$kind.log" 2>/dev/null)" \
        "Closing client connection due to SASL authentication failure." '(sasl|gss|kerberos).*(fail|error|invalid|defective)|(fail|error|invalid|defective).*(sasl|gss|kerberos)'
    log_check "$kind" java-wrong-service "$(cat "$WORK/java-wrong-service-$kind.log" 2>/dev/null)" \
        "GSS initiate failed [Caused by GSSException: Failure unspecified at GSS-API level (Mechanism level: Checksum failed)]" \
        '(sasl|gss|kerberos).*(fail|error|invalid)|(fail|error|invalid).*(sasl|gss|kerberos)'
    log_check "$kind" bad-keytab "$(cat "$WORK/bad-keytab-$kind/log" 2>/dev/null)" \
        "java.io.IOException: Could not configure server because SASL configuration did not allow the  ZooKeeper server to authenticate itself properly: javax.security.auth.login.LoginException: No password provided" \
        'keytab.*zookeeper/localhost|zookeeper/localhost.*keytab'
done

# ---------------------------------------------------------------- comparisons
MATRIX_TSV="$INTEROP/.work/matrix/kerberos.tsv"
mkdir -p "$(dirname "$MATRIX_TSV")"
: >"$MATRIX_TSV"
EXPECT="$HERE/expected"
norm() { sed -e "s|$WORK|WORK|g" "$1" 2>/dev/null; }
# kdc-down-at-start: ZooKeeper's server logs in to the KDC when it starts (Krb5LoginModule) and
# exits without one; zkr only accepts tickets, needs no KDC, starts, and takes the logins of
# clients that already hold a service ticket (a deliberate difference, README).
f="$WORK/kdc-down-at-start-zk.txt"
if grep -q "does not answer ruok" "$f" 2>/dev/null &&
    grep -qF "Could not configure server because SASL configuration did not allow the  ZooKeeper server to authenticate itself properly" "$WORK/kdc-down-at-start-zk.log" 2>/dev/null; then
    pass "kdc-down-at-start zk: ZooKeeper does not start without its KDC (LoginException at startup)"
else
    fail "kdc-down-at-start zk: expected ZooKeeper to refuse to start: $(cat "$f" 2>/dev/null)"
fi
f="$WORK/kdc-down-at-start-zkr.txt"
if grep -q "answers ruok" "$f" 2>/dev/null && [ "$(grep -c 'whoAmI -> \[sasl:bob@ZKR.TEST, ip:127.0.0.1\]' "$f")" -eq 2 ]; then
    pass "kdc-down-at-start zkr: zkr starts without the KDC and takes logins with cached tickets (with and without mutual auth)"
else
    fail "kdc-down-at-start zkr: $(cat "$f" 2>/dev/null)"
fi

SCENARIOS="java-main|Java client (Debian zookeeper.jar 3.8), Kerberos keytab login|Java client: bob and carol keytab logins, whoAmI, sasl ACLs, default ids, superUser with host and realm
java-main-remove|Java client (Debian zookeeper.jar 3.8), Kerberos keytab login|Java client: ids with zookeeper.kerberos.removeHostFromPrincipal and removeRealmFromPrincipal, superUser=bob
java-main-remove-unprefixed|Java client (Debian zookeeper.jar 3.8), Kerberos keytab login|Java client: -Dkerberos.remove*FromPrincipal (not read by ZooKeeper 3.8): ids unchanged, superUser=bob does not match
curator|Curator 5 (Debian libcurator-java), Kerberos keytab login|Curator 5: JAAS Client login (GSSAPI), create and read with a sasl ACL
kazoo|kazoo (python3-kazoo 2.8), GSSAPI via pure-sasl|kazoo GSSAPI (pure-sasl, kinit ccache): whoAmI, create and read with a sasl ACL
kazoo-remove|kazoo (python3-kazoo 2.8), GSSAPI via pure-sasl|kazoo GSSAPI with zookeeper.kerberos.remove*: whoAmI and sasl ACL
capture|Java client (Debian zookeeper.jar 3.8), Kerberos keytab login|Java client SASL GSSAPI exchange on the wire (frames through a logging proxy)
wire-exchange|raw socket + python3-gssapi (MIT)|GSSAPI exchange with and without mutual auth: replies, security-layer offer, whoAmI
wire-unhappy|raw socket + python3-gssapi (MIT)|garbage, truncated and wrong-service tokens, garbage final token: reply code and close
java-wrong-service|Java client (Debian zookeeper.jar 3.8), Kerberos keytab login|Java client with a ticket for zookeeper/otherhost (not in the server keytab)
kdc-down|Java client (Debian zookeeper.jar 3.8), Kerberos keytab login|KDC stopped while the server runs: open session, new session, new login; kazoo with a cached ticket
keytab-rotated|raw socket + python3-gssapi (MIT)|server keytab replaced by one with a new key while the server runs: a fresh ticket logs in without a restart
expired-ticket|raw socket + python3-gssapi (MIT)|a token of a 4 s ticket sent after the ticket expired (servers allow 2 s of clock skew): refused and closed; one sent at once logs in
bad-keytab|ZooKeeper / zkr server start|JAAS Server keyTab without the server principal: start refused or logins fail
enforce|Java client (Debian zookeeper.jar 3.8), Kerberos keytab login|enforce.auth.enabled=true, enforce.auth.schemes=sasl: plain client refused, SASL client allowed
require-sasl|Java client (Debian zookeeper.jar 3.8), Kerberos keytab login|sessionRequireClientSASLAuth=true: plain client refused, SASL client allowed"
while IFS='|' read -r scen client feature; do
    zkf=$(tx "$scen" zk) zkrf=$(tx "$scen" zkr) want="$EXPECT/$scen.txt"
    ref_rc=1 zkr_rc=1 cmp_rc=1
    if [ -s "$zkf" ] && [ "$(norm "$zkf")" = "$(cat "$want" 2>/dev/null)" ]; then
        ref_rc=0; pass "$scen: ZooKeeper transcript = expected/$scen.txt"
    else
        fail "$scen: ZooKeeper transcript differs from expected/$scen.txt"; diff -u "$want" <(norm "$zkf") | head -40
    fi
    [ -s "$zkrf" ] && zkr_rc=0
    diff -u <(norm "$zkf") <(norm "$zkrf") >"$WORK/$scen.diff" && [ -s "$zkrf" ] && cmp_rc=0
    if [ $cmp_rc -eq 0 ] && [ "$(norm "$zkrf")" = "$(cat "$want" 2>/dev/null)" ]; then
        pass "$scen: zkr transcript = ZooKeeper transcript = expected/$scen.txt ($(wc -l <"$zkrf") lines)"
    else
        fail "$scen: zkr transcript differs (ZooKeeper vs zkr)"; head -40 "$WORK/$scen.diff"
        [ -s "$zkrf" ] || echo "  (no zkr transcript: zkr did not start for this run; see below)"
    fi
    $PY "$INTEROP/matrix.py" add-row "$MATRIX_TSV" "$client" "kerberos/$scen" "$feature" $ref_rc $zkr_rc $cmp_rc "$WORK/$scen.diff"
done < <([ -n "$KINDS" ] && echo "$SCENARIOS")
if [ -n "${KRB_SHOW_LOGS:-}" ] || [ "$failed" -gt 0 ]; then
    say "zkr server log (default run), last lines:"; tail -n 8 "$WORK/default-zkr/log" 2>/dev/null | cut -c1-300 >&2
fi
[ -n "${KRB_CAPTURE_OUT:-}" ] && cp "$WORK/capture-detail-zk.txt" "$KRB_CAPTURE_OUT" 2>/dev/null

# ---------------------------------------------------------------- Kerberos between ensemble members
# shellcheck source=quorum.sh
. "$HERE/quorum.sh"

# ---------------------------------------------------------------- Kafka 3.9 (ZooKeeper mode) in this realm
# shellcheck source=kafka.sh
[ "${KRB_ONLY:-}" = quorum ] || . "$HERE/kafka.sh"

echo "$passed passed, $failed failed ($((SECONDS - T0)) s)"
[ "$failed" -eq 0 ]
