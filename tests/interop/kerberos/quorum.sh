# Kerberos between ensemble members ("quorum SASL" with GSSAPI, issue 40 step 2). Sourced by run.sh
# after its client scenarios and comparisons, before kafka.sh: it uses run.sh's realm (ZKR.TEST, $K,
# $KRB5_CONFIG, the running krb5kdc) and helpers (pass, fail, say, $CP, $JAVA_OPTS, $WORK, $PIDS,
# $MATRIX_TSV, ...), so its PASS/FAIL lines count in run.sh's "N passed, M failed".
#
# One zoo.cfg shape for both servers (quorum.auth.enableSasl, learnerRequireSasl, serverRequireSasl,
# quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST, server.N lines with host localhost) and one
# JAAS file (QuorumServer and QuorumLearner: Krb5LoginModule, zkquorum/localhost@ZKR.TEST from
# quorum.keytab; Server: zookeeper/localhost for the clients):
#   1. Debian's ZooKeeper 3.8, three QuorumPeerMain processes: one leader, members log in to each
#      other ("Successfully authenticated learner"), kazoo (GSSAPI as bob) writes /q1 on member 1
#      and reads it on members 2 and 3.
#   2. zkr, three `zkr serve` processes: the same checks, and the members' logs show the logins
#      (RUST_LOG ...,zkr::raft::link=debug: "member logged in with quorum SASL"). Then a 4th zkr
#      process (server.4, not in the members' server.N) logging in as zkquorum/evil.example is
#      refused ("not authorized") while the ensemble keeps serving, and a member whose QuorumServer
#      keytab lacks zkquorum/localhost refuses to start with one line naming keytab and principal.
#   3. zkr observing the ZooKeeper ensemble of 1 (zkr.ensembleProtocol=zab, server.9 observer) with
#      the same QuorumLearner login: it syncs, a client reads /q1 through it and, after a write on a
#      ZooKeeper member, sync + read; an observer logging in as zkquorum/evil.example (server.10)
#      is refused by the voters ("is not authorized to connect") and its log says so.
# The ensembles of 1 and 2 run side by side to save time.

quorum_main() {
    local t0=$SECONDS
    QPIDS=()
    # -------------------------------------------- principals and keytabs, in run.sh's realm
    {
        kadmin.local -r ZKR.TEST -q "addprinc -randkey zkquorum/localhost@ZKR.TEST" &&
        kadmin.local -r ZKR.TEST -q "addprinc -randkey zkquorum/evil.example@ZKR.TEST" &&
        kadmin.local -r ZKR.TEST -q "ktadd -norandkey -k $K/quorum.keytab zkquorum/localhost@ZKR.TEST" &&
        kadmin.local -r ZKR.TEST -q "ktadd -norandkey -k $K/evil.keytab zkquorum/evil.example@ZKR.TEST"
    } >>"$K/kadmin.log" 2>&1
    if [ ! -s "$K/quorum.keytab" ] || [ ! -s "$K/evil.keytab" ]; then
        tail -n 10 "$K/kadmin.log" >&2
        fail "quorum: setup: kadmin.local could not make zkquorum/localhost, zkquorum/evil.example and their keytabs"
        quorum_matrix
        return
    fi
    q_jaas quorum.keytab zkquorum/localhost quorum.keytab zkquorum/localhost >"$K/jaas-quorum.conf"
    q_jaas quorum.keytab zkquorum/localhost evil.keytab zkquorum/evil.example >"$K/jaas-quorum-evil.conf"
    q_jaas bob.keytab zkquorum/localhost quorum.keytab zkquorum/localhost >"$K/jaas-quorum-badkeytab.conf"
    QCC="$K/quorum-bob.cc"
    kinit_bob "$QCC" || fail "quorum: setup: kinit bob for the clients"

    # -------------------------------------------- ports: zk 1-3, observers 9 and 10, zkr 1-4, the bad member
    local ports
    read -r -a ports <<<"$(q_free_ports 30)"
    if [ "${#ports[@]}" -lt 30 ]; then
        fail "quorum: setup: no 30 free ports"
        quorum_matrix
        return
    fi
    # client, quorum, election port of each member: "kind sid" -> "c q e"
    declare -gA QP=()
    local i n=0
    for i in "zk 1" "zk 2" "zk 3" "zk 9" "zk 10" "zkr 1" "zkr 2" "zkr 3" "zkr 4" "zkr 5"; do
        QP[$i]="${ports[n]} ${ports[n + 1]} ${ports[n + 2]}"
        n=$((n + 3))
    done

    # -------------------------------------------- 1 and 2: both ensembles start
    local t=$SECONDS
    for i in 1 2 3; do q_start zk "$i" "$K/jaas-quorum.conf" "zk"; done
    for i in 1 2 3; do q_start zkr "$i" "$K/jaas-quorum.conf" "zkr"; done
    local zk_ok=0 zkr_ok=0
    q_wait_formed zk 90 && zk_ok=1
    [ $zk_ok -eq 1 ] && say "quorum: ZooKeeper ensemble formed after $((SECONDS - t)) s"
    q_wait_formed zkr 30 && zkr_ok=1
    [ $zkr_ok -eq 1 ] && say "quorum: zkr ensemble formed after $((SECONDS - t)) s"
    for kind in zk zkr; do
        local name; name=$(q_name "$kind")
        local ok; ok=$([ "$kind" = zk ] && echo $zk_ok || echo $zkr_ok)
        if [ "$ok" = 1 ]; then
            pass "quorum $kind: $name ensemble with Kerberos quorum SASL formed: $(q_modes "$kind" | tr '\n' ' ')"
        else
            fail "quorum $kind: $name ensemble with Kerberos quorum SASL did not form (modes: $(q_modes "$kind" | tr '\n' ' '))"
            for i in 1 2 3; do echo "--- $kind member $i log (last lines)"; tail -n 8 "$WORK/quorum/$kind-$i/log" | cut -c1-300; done
        fi
        q_transcript "$kind" >"$(tx quorum-ensemble "$kind")"
        if grep -q '^modes: follower follower leader$' "$(tx quorum-ensemble "$kind")" &&
            ! grep -qvE '^(modes|member [123]): ' "$(tx quorum-ensemble "$kind")" &&
            [ "$(grep -c -- '-> q1-data$' "$(tx quorum-ensemble "$kind")")" = 2 ]; then
            pass "quorum $kind: kazoo (GSSAPI as bob) writes /q1 on member 1, reads it on members 2 and 3"
        else
            fail "quorum $kind: write on member 1 / read on members 2 and 3"; sed 's/^/  /' "$(tx quorum-ensemble "$kind")"
        fi
    done
    # the logins in the members' logs: every member took a Kerberos login from another
    local zk_in="" zkr_in=""
    for i in 1 2 3; do
        grep -qF "Successfully authenticated learner: authenticationID=zkquorum/localhost@ZKR.TEST;  authorizationID=zkquorum/localhost@ZKR.TEST." \
            "$WORK/quorum/zk-$i/log" && zk_in+="$i "
        grep -qE 'member logged in with quorum SASL.*user="?zkquorum/localhost@ZKR\.TEST' "$WORK/quorum/zkr-$i/log" && zkr_in+="$i "
    done
    if [ "$zk_in" = "1 2 3 " ]; then
        pass "quorum zk: every member logged a learner's Kerberos login: $(grep -h -m1 'Successfully authenticated learner' "$WORK/quorum/zk-1/log" | cut -c1-250)"
    else
        fail "quorum zk: not every member logged 'Successfully authenticated learner: authenticationID=zkquorum/localhost@ZKR.TEST; ...' (members: $zk_in)"
    fi
    if [ "$zkr_in" = "1 2 3 " ]; then
        pass "quorum zkr: every member logged a member's Kerberos login: $(grep -h -m1 'member logged in with quorum SASL' "$WORK/quorum/zkr-1/log" | cut -c1-250)"
    else
        fail "quorum zkr: not every member logged 'member logged in with quorum SASL ... user=zkquorum/localhost@ZKR.TEST' (members: $zkr_in)"
    fi

    # -------------------------------------------- 2a: a 4th zkr process logging in as zkquorum/evil.example
    # -------------------------------------------- 2b: a member whose QuorumServer keytab lacks the principal
    # -------------------------------------------- 3:  zkr observers of the ZooKeeper ensemble (good and evil)
    local offs=() 
    for i in 1 2 3; do offs+=("$(log_size "$WORK/quorum/zkr-$i/log")"); done
    local zoffs=()
    for i in 1 2 3; do zoffs+=("$(log_size "$WORK/quorum/zk-$i/log")"); done
    q_start zkr 4 "$K/jaas-quorum-evil.conf" zkr-evil
    q_start zkr 5 "$K/jaas-quorum-badkeytab.conf" zkr
    if [ $zk_ok -eq 1 ]; then
        q_start zkr 9 "$K/jaas-quorum.conf" zk-observer
        q_start zkr 10 "$K/jaas-quorum-evil.conf" zk-observer
    fi

    # 2b: the bad member exits
    local bad_pid=${QPID[zkr 5]} bad_rc="" bad_log="$WORK/quorum/zkr-5/log"
    for _ in $(seq 75); do kill -0 "$bad_pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$bad_pid" 2>/dev/null; then
        fail "quorum zkr: a member whose QuorumServer keytab (bob.keytab) lacks zkquorum/localhost still runs after 15 s"
    else
        wait "$bad_pid"; bad_rc=$?
        local line; line=$(grep -F "$K/bob.keytab" "$bad_log" | grep -F 'zkquorum/localhost@ZKR.TEST' | head -n 1)
        if [ "$bad_rc" -ne 0 ] && [ -n "$line" ]; then
            pass "quorum zkr: a member whose QuorumServer keytab lacks zkquorum/localhost refuses to start (exit status $bad_rc): $(cut -c1-300 <<<"$line")"
        else
            fail "quorum zkr: bad QuorumServer keytab: exit status $bad_rc, no log line naming $K/bob.keytab and zkquorum/localhost@ZKR.TEST"
            tail -n 5 "$bad_log" | cut -c1-300
        fi
    fi

    # 3: the good observer syncs; reads through it
    local obs_ok=0
    if [ $zk_ok -eq 1 ]; then
        q_wait_mode "$(q_port zk 9)" observer 45 && obs_ok=1
        if [ $obs_ok -eq 1 ]; then
            pass "quorum observer: zkr (zkr.ensembleProtocol=zab) logged in with Kerberos to the ZooKeeper ensemble and syncs: srvr Mode: observer"
        else
            fail "quorum observer: zkr did not become an observer of the Kerberized ZooKeeper ensemble (srvr Mode: $(q_mode "$(q_port zk 9)"))"
            tail -n 10 "$WORK/quorum/zkr-9/log" | cut -c1-300
        fi
        # the voters took its Kerberos login (election ports, and the leader's quorum port before
        # its OBSERVERINFO): the only learner logging in after the ensemble formed
        local ztext=""
        for i in 1 2 3; do ztext+="$(log_since "$WORK/quorum/zk-$i/log" "${zoffs[i - 1]}")"$'\n'; done
        if grep -qF 'Successfully authenticated learner: authenticationID=zkquorum/localhost@ZKR.TEST;  authorizationID=zkquorum/localhost@ZKR.TEST.' <<<"$ztext" &&
            grep -q 'LearnerHandler - Follower sid: 9 : info : localhost:.*:observer' <<<"$ztext"; then
            pass "quorum zk: the voters logged zkr's Kerberos login: 'Successfully authenticated learner: authenticationID=zkquorum/localhost@ZKR.TEST; ...', then 'Follower sid: 9 : info : ...:observer'"
        else
            fail "quorum zk: the voters' logs lack zkr observer's login ('Successfully authenticated learner' then 'Follower sid: 9')"
        fi
    else
        fail "quorum observer: no ZooKeeper ensemble to observe"
    fi
    # a write on a ZooKeeper member after zkr synced, then the same reads through zkr's observer
    # and through a ZooKeeper voter
    q_client "zk member 1" "$(q_port zk 1)" create:/q3:q3-data >"$WORK/quorum/q3-create.txt" 2>>"$WORK/quorum/observer-client.err"
    q_client reader "$(q_port zk 9)" whoami read:/q1 read:/q3 >"$(tx quorum-observer zkr)" 2>>"$WORK/quorum/observer-client.err"
    q_client reader "$(q_port zk 3)" whoami read:/q1 read:/q3 >"$(tx quorum-observer zk)" 2>>"$WORK/quorum/observer-client.err"
    if [ $obs_ok -eq 1 ] && diff -q "$(tx quorum-observer zk)" "$(tx quorum-observer zkr)" >/dev/null &&
        [ "$(grep -c -- '-> q[13]-data$' "$(tx quorum-observer zkr)")" = 2 ]; then
        pass "quorum observer: through zkr's observer: /q1 read, a write on a ZooKeeper member seen after sync (= through a ZooKeeper voter)"
    else
        fail "quorum observer: reads through zkr's observer differ from a ZooKeeper voter's"
        diff "$(tx quorum-observer zk)" "$(tx quorum-observer zkr)" | head -20
    fi

    # 2a: the evil 4th member was refused, the ensemble kept serving
    sleep 1
    local text=""
    for i in 1 2 3; do text+="$(log_since "$WORK/quorum/zkr-$i/log" "${offs[i - 1]}")"$'\n'; done
    q_log_check zkr "a 4th process logging in as zkquorum/evil.example (server.4, not in server.N) is refused by the members" "$text" \
        'zkquorum/evil\.example@ZKR\.TEST is not authorized to connect'
    if [ -n "${QPID[zkr 4]:-}" ] && kill -0 "${QPID[zkr 4]}" 2>/dev/null; then
        [ "$(q_mode "$(q_port zkr 4)")" = leader ] || [ "$(q_mode "$(q_port zkr 4)")" = follower ] &&
            fail "quorum zkr: the evil 4th process joined: $(q_mode "$(q_port zkr 4)")"
    fi
    grep -iE 'refused|not authorized|error' "$WORK/quorum/zkr-4/log" | head -n 1 | cut -c1-300 | sed 's/^/  evil 4th member log: /' >&2
    if [ $zkr_ok -eq 1 ] &&
        [ "$(q_client "member 2" "$(q_port zkr 2)" create:/q2:q2-data 2>/dev/null)" = "member 2: create /q2 q2-data -> ok" ] &&
        [ "$(q_client "member 3" "$(q_port zkr 3)" read:/q2 2>/dev/null)" = "member 3: sync, getData /q2 -> q2-data" ] &&
        [ "$(q_modes zkr | tr '\n' ' ')" = "follower follower leader " ]; then
        pass "quorum zkr: with the evil 4th process around, the ensemble keeps serving (write on 2, read on 3, one leader)"
    else
        fail "quorum zkr: the ensemble stopped serving with the evil 4th process around (modes: $(q_modes zkr | tr '\n' ' '))"
    fi

    # 3: the evil observer was refused by the voters
    if [ $zk_ok -eq 1 ]; then
        text=""
        for i in 1 2 3; do text+="$(log_since "$WORK/quorum/zk-$i/log" "${zoffs[i - 1]}")"$'\n'; done
        q_log_check zk "an observer logging in as zkquorum/evil.example is refused by the voters" "$text" \
            "SASL authorization completed, zkquorum/evil.example@ZKR.TEST is not authorized to connect"
        local m; m=$(q_mode "$(q_port zk 10)")
        if [ "$m" = observer ]; then
            fail "quorum observer: zkr logging in as zkquorum/evil.example became an observer"
        else
            pass "quorum observer: zkr logging in as zkquorum/evil.example stays out (srvr Mode: ${m:-none})"
        fi
        q_log_check zkr "the evil observer's log says its login was refused" "$(cat "$WORK/quorum/zkr-10/log")" \
            'refused the login of .?zkquorum/evil\.example@ZKR\.TEST'
    fi

    q_stop_all
    quorum_matrix
    say "quorum: $((SECONDS - t0)) s"
}

# q_jaas server-keytab server-principal learner-keytab learner-principal
q_jaas() {
    cat <<JAAS
Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="$K/server.keytab" storeKey=true useTicketCache=false principal="zookeeper/localhost@ZKR.TEST"; };
QuorumServer { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="$K/$1" storeKey=true useTicketCache=false principal="$2@ZKR.TEST"; };
QuorumLearner { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="$K/$3" storeKey=true useTicketCache=false principal="$4@ZKR.TEST"; };
JAAS
}

q_free_ports() { # N distinct ports free on 127.0.0.1
    $PY - "$BASE" "$1" <<'PY'
import random, socket, sys
base, n = int(sys.argv[1]), int(sys.argv[2])
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()
ports = list(range(base, base + 900))
random.shuffle(ports)
print(" ".join(str(p) for p in [p for p in ports if free(p)][:n]))
PY
}

q_port() { # kind sid -> client port
    local a; read -r -a a <<<"${QP[$1 $2]}"; echo "${a[0]}"
}
q_name() { [ "$1" = zk ] && echo "ZooKeeper 3.8" || echo zkr; }

# q_cfg kind sid role: the zoo.cfg of a member; role zk (voters 1-3, observers 9 and 10), zkr,
# zkr-evil (a 4th zkr process, server.4 in its own file only), zk-observer (zkr observing zk)
q_cfg() {
    local kind=$1 sid=$2 role=$3 d="$WORK/quorum/$1-$2" j a
    echo "tickTime=500"
    echo "initLimit=10"
    echo "syncLimit=5"
    echo "dataDir=$d/data"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=*"
    echo "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
    echo "quorum.auth.enableSasl=true"
    echo "quorum.auth.learnerRequireSasl=true"
    echo "quorum.auth.serverRequireSasl=true"
    echo "quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST"
    local servers="1 2 3" src=$kind
    case $role in
        zk) servers="1 2 3 9 10" ;;
        zkr-evil) servers="1 2 3 4" ;;
        zk-observer) servers="1 2 3 9 10" src=zk
            echo "peerType=observer"; echo "zkr.ensembleProtocol=zab" ;;
    esac
    [ "$role" = zk ] && [ "$sid" -ge 9 ] && echo "peerType=observer"
    for j in $servers; do
        if [ "$src" = zk ] && [ "$j" -ge 9 ] && [ "$role" = zk-observer ]; then
            read -r -a a <<<"${QP[zk $j]}"
        else
            read -r -a a <<<"${QP[$src $j]}"
        fi
        if [ "$j" -ge 9 ]; then
            echo "server.$j=localhost:${a[1]}:${a[2]}:observer;127.0.0.1:${a[0]}"
        else
            echo "server.$j=localhost:${a[1]}:${a[2]};127.0.0.1:${a[0]}"
        fi
    done
    # a member not in the server lines (the bad-keytab one) still needs a client port of its own
    case " $servers " in *" $sid "*) ;; *) read -r -a a <<<"${QP[$kind $sid]}"
        echo "server.$sid=localhost:${a[1]}:${a[2]};127.0.0.1:${a[0]}" ;; esac
}

declare -gA QPID=()
# q_start kind sid jaas role: zk runs QuorumPeerMain (java), zkr `zkr serve`; for role zk-observer
# the zkr process is server.9/10 of the ZooKeeper ensemble
q_start() {
    local kind=$1 sid=$2 jaas=$3 role=$4 d
    if [ "$role" = zk-observer ]; then d="$WORK/quorum/zkr-$sid"; else d="$WORK/quorum/$kind-$sid"; fi
    mkdir -p "$d/data"
    echo "$sid" >"$d/data/myid"
    if [ "$role" = zk-observer ]; then
        q_cfg zk "$sid" zk-observer >"$d/zoo.cfg"
        sed -i "s|^dataDir=.*|dataDir=$d/data|" "$d/zoo.cfg"
    else
        q_cfg "$kind" "$sid" "$role" >"$d/zoo.cfg"
    fi
    if [ "$kind" = zk ]; then
        java "${JAVA_OPTS[@]}" -Xmx192m -Djava.security.auth.login.config="$jaas" -Djava.security.krb5.conf="$KRB5_CONFIG" \
            -Dorg.slf4j.simpleLogger.defaultLogLevel=info -cp "${CP//slf4j-nop/slf4j-simple}" \
            org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >>"$d/log" 2>&1 &
    else
        env -u KRB5_CONFIG RUST_LOG="info,zkr::raft::link=debug" SERVER_JVMFLAGS="-Djava.security.krb5.conf=$KRB5_CONFIG" \
            "$ZKR_BIN" serve --config "$d/zoo.cfg" --jaas-config "$jaas" >>"$d/log" 2>&1 &
    fi
    QPID[$kind $sid]=$!
    QPIDS+=($!)
    PIDS+=($!)
}
q_stop_all() {
    local p
    for p in "${QPIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${QPIDS[@]}"; do
        for _ in $(seq 25); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    QPIDS=()
}

q_mode() { echo srvr | timeout 3 nc -q1 127.0.0.1 "$1" 2>/dev/null | sed -n 's/^Mode: //p'; }
q_modes() { local i; for i in 1 2 3; do q_mode "$(q_port "$1" $i)"; done | sort; }
q_wait_mode() { # port mode seconds
    local deadline=$((SECONDS + $3))
    while [ $SECONDS -lt $deadline ]; do
        [ "$(q_mode "$1")" = "$2" ] && return 0
        sleep 0.3
    done
    return 1
}
q_wait_formed() { # kind seconds: one leader, two followers
    local deadline=$((SECONDS + $2))
    while [ $SECONDS -lt $deadline ]; do
        [ "$(q_modes "$1" | tr '\n' ' ')" = "follower follower leader " ] && return 0
        sleep 0.3
    done
    return 1
}
q_client() { # label port steps...
    KRB5CCNAME="FILE:$QCC" timeout 40 $PY "$HERE/kazoo_quorum.py" "$@"
}
# the client-visible transcript of step 1/2: modes, write on member 1, read on 2 and 3
q_transcript() {
    local kind=$1
    echo "modes: $(q_modes "$kind" | tr '\n' ' ' | sed 's/ $//')"
    q_client "member 1" "$(q_port "$kind" 1)" whoami create:/q1:q1-data 2>>"$WORK/quorum/$kind-client.err"
    q_client "member 2" "$(q_port "$kind" 2)" read:/q1 2>>"$WORK/quorum/$kind-client.err"
    q_client "member 3" "$(q_port "$kind" 3)" whoami read:/q1 2>>"$WORK/quorum/$kind-client.err"
}
q_log_check() { # kind what text fixed-string (zk) | regex (zkr)
    local kind=$1 what=$2 text=$3
    if [ "$kind" = zk ]; then
        if grep -qF -- "$4" <<<"$text"; then pass "quorum zk: $what: log has '$4'"
        else fail "quorum zk: $what: no log line '$4'"; fi
    else
        if grep -qE -- "$4" <<<"$text"; then pass "quorum zkr: $what: $(grep -E -m1 -- "$4" <<<"$text" | cut -c1-250)"
        else fail "quorum zkr: $what: no log line matching /$4/"; fi
    fi
}

# the transcripts: ZooKeeper's must equal expected/<scenario>.txt, zkr's must equal ZooKeeper's
quorum_matrix() {
    local scen ref_rc zkr_rc cmp_rc zkf zkrf want client feature
    for scen in quorum-ensemble quorum-observer; do
        zkf=$(tx "$scen" zk) zkrf=$(tx "$scen" zkr) want="$EXPECT/$scen.txt"
        ref_rc=1 zkr_rc=1 cmp_rc=1
        if [ -s "$zkf" ] && [ "$(cat "$zkf")" = "$(cat "$want" 2>/dev/null)" ]; then
            ref_rc=0; pass "$scen: ZooKeeper transcript = expected/$scen.txt"
        else
            fail "$scen: ZooKeeper transcript differs from expected/$scen.txt"; diff -u "$want" "$zkf" 2>&1 | head -20
        fi
        [ -s "$zkrf" ] && zkr_rc=0
        diff -u "$zkf" "$zkrf" >"$WORK/$scen.diff" 2>&1 && [ -s "$zkrf" ] && cmp_rc=0
        if [ $cmp_rc -eq 0 ] && [ $ref_rc -eq 0 ]; then
            pass "$scen: zkr transcript = ZooKeeper transcript = expected/$scen.txt ($(wc -l <"$zkrf") lines)"
        else
            fail "$scen: zkr transcript differs (ZooKeeper vs zkr)"; head -20 "$WORK/$scen.diff"
        fi
        case $scen in
            quorum-ensemble)
                client="kazoo (python3-kazoo 2.8), GSSAPI via pure-sasl, on a 3-member ensemble"
                feature="ensemble whose members log in to each other with Kerberos (quorum SASL GSSAPI, zkquorum/_HOST): one leader, write on member 1 read on members 2 and 3 (ZooKeeper's ensemble vs zkr's)" ;;
            quorum-observer)
                client="kazoo (python3-kazoo 2.8), GSSAPI via pure-sasl, through an observer"
                feature="zkr observer (zkr.ensembleProtocol=zab) logged in with Kerberos to a ZooKeeper 3.8 ensemble: read, sync + read of a voter's write (through a ZooKeeper voter vs through zkr)" ;;
        esac
        $PY "$INTEROP/matrix.py" add-row "$MATRIX_TSV" "$client" "kerberos/$scen" "$feature" $ref_rc $zkr_rc $cmp_rc "$WORK/$scen.diff"
    done
}

mkdir -p "$WORK/quorum"
quorum_main
