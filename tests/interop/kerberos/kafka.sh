# Kafka 3.9 in ZooKeeper mode with Kerberos to the registry and zookeeper.set.acl=true (issue 40
# item 3). Sourced by run.sh after its own scenarios, before its summary: it uses run.sh's realm
# (ZKR.TEST, $K, $KRB5_CONFIG, the running krb5kdc), its server start (start_server / stop_server
# with the JAAS Server section) and its helpers (pass, fail, tx, norm, free_port, $CP, $WORK, ...),
# so its PASS/FAIL lines count in run.sh's "N passed, M failed".
#
# For each server kind (Debian's ZooKeeper 3.8, then zkr): one Kafka broker (kafka_2.13 3.9.x from
# Maven Central, `java -cp <jars> kafka.Kafka server.properties`) logs in to the registry as
# kafka/localhost@ZKR.TEST (JAAS Client section, kafka.keytab) with zookeeper.set.acl=true;
# KafkaCheck.java (kafka-clients) creates topic t1, produces and consumes 100 records and lists the
# topics; KafkaZk.java (Debian zookeeper.jar) reads the registry as kafka, as a plain client and as
# bob. The transcript of zkr must equal ZooKeeper's and expected/kafka.txt.
#
# KRB_KAFKA_VERSIONS (default "3.9.1 3.9.0"): the Kafka releases tried, first resolvable wins.
# The resolved class path is cached in tests/interop/.work/kerberos-kafka/ (the jars in ~/.m2).

kafka_main() {
    local t0=$SECONDS kcache="$INTEROP/.work/kerberos-kafka" v cpfile kcp="" kver="" pomsum kind
    mkdir -p "$kcache"
    # -------------------------------------------- the broker's principal and keytab, in run.sh's realm
    {
        kadmin.local -r ZKR.TEST -q "addprinc -randkey kafka/localhost@ZKR.TEST" &&
        kadmin.local -r ZKR.TEST -q "ktadd -norandkey -k $K/kafka.keytab kafka/localhost@ZKR.TEST"
    } >>"$K/kadmin.log" 2>&1
    if [ ! -s "$K/kafka.keytab" ]; then
        fail "kafka: setup: kadmin.local could not make kafka/localhost@ZKR.TEST and kafka.keytab"
        kafka_compare 3.9
        return
    fi
    # -------------------------------------------- Kafka's jars (Maven Central, cached in ~/.m2)
    if ! command -v mvn >/dev/null 2>&1; then
        say "installing: maven"
        local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
        { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq maven; } >"$WORK/apt-maven.log" 2>&1 \
            || tail -20 "$WORK/apt-maven.log" >&2
    fi
    pomsum=$(sha256sum "$HERE/kafka/pom.xml" | cut -c1-12)
    for v in ${KRB_KAFKA_VERSIONS:-3.9.1 3.9.0}; do
        cpfile="$kcache/classpath-$v-$pomsum.txt"
        if [ -s "$cpfile" ] && ! tr ':' '\n' <"$cpfile" | while read -r j; do [ -f "$j" ] || exit 1; done; then
            rm -f "$cpfile" # a jar of the cached class path is gone from ~/.m2: resolve again
        fi
        if [ ! -s "$cpfile" ]; then
            say "kafka: resolving kafka_2.13 $v with Maven"
            if ! timeout 600 mvn -B -q -f "$HERE/kafka/pom.xml" dependency:build-classpath -Dkafka.version="$v" \
                    -Dmdep.outputFile="$cpfile.tmp" >"$WORK/mvn-kafka-$v.log" 2>&1; then
                tail -n 15 "$WORK/mvn-kafka-$v.log" >&2
                say "kafka: Maven could not resolve kafka_2.13 $v"
                rm -f "$cpfile.tmp"
                continue
            fi
            mv "$cpfile.tmp" "$cpfile"
        fi
        kcp=$(cat "$cpfile") kver=$v
        break
    done
    if [ -z "$kcp" ]; then
        fail "kafka: setup: Maven could not resolve kafka_2.13 ${KRB_KAFKA_VERSIONS:-3.9.1 3.9.0}"
        kafka_compare 3.9
        return
    fi
    mkdir -p "$WORK/kafka-classes"
    if ! javac -nowarn -d "$WORK/kafka-classes" -cp "$kcp" "$HERE/KafkaCheck.java" >"$WORK/javac-kafka.log" 2>&1 ||
        ! javac -nowarn -d "$WORK" -cp "$WORK:$CP" "$HERE/KafkaZk.java" >>"$WORK/javac-kafka.log" 2>&1; then
        cat "$WORK/javac-kafka.log" >&2
        fail "kafka: setup: javac KafkaCheck.java / KafkaZk.java"
        kafka_compare "$kver"
        return
    fi
    # -------------------------------------------- JAAS and logging
    cat >"$K/jaas-kafka-broker.conf" <<JAAS
Client {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    keyTab="$K/kafka.keytab"
    principal="kafka/localhost@ZKR.TEST"
    storeKey=true
    useTicketCache=false;
};
JAAS
    cat >"$K/jaas-kafka-zk.conf" <<JAAS
Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="$K/kafka.keytab" principal="kafka/localhost@ZKR.TEST" storeKey=true useTicketCache=false; };
ClientBob { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="$K/bob.keytab" principal="bob@ZKR.TEST" storeKey=true useTicketCache=false; };
JAAS
    cat >"$WORK/kafka-log4j.properties" <<'LOG'
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
LOG
    sed 's/=INFO,/=WARN,/' "$WORK/kafka-log4j.properties" >"$WORK/kafka-client-log4j.properties"

    for kind in zk zkr; do
        kafka_run "$kind" "$kcp"
    done
    kafka_compare "$kver"
    say "kafka: $((SECONDS - t0)) s (Kafka $kver)"
}

# kafka_run kind classpath: one registry server, one broker, the checks; writes $(tx kafka kind)
kafka_run() {
    local kind=$1 kcp=$2 f bd kport bpid reg=0 t
    f=$(tx kafka "$kind")
    JAAS="$K/jaas-server.conf" SRV_FLAGS="$BASE_FLAGS" EXTRA_LINES=""
    if ! start_server "$kind" kafka; then
        echo "server: did not start" >"$f"
        fail "kafka $kind: the registry server did not start"
        return
    fi
    bd="$WORK/kafka-broker-$kind"
    mkdir -p "$bd/logs"
    kport=$(free_port)
    cat >"$bd/server.properties" <<PROPS
broker.id=1
listeners=PLAINTEXT://127.0.0.1:$kport
advertised.listeners=PLAINTEXT://127.0.0.1:$kport
zookeeper.connect=localhost:$PORT
zookeeper.set.acl=true
zookeeper.connection.timeout.ms=30000
log.dirs=$bd/logs
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
PROPS
    t=$SECONDS
    java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx512m -Djava.awt.headless=true \
        -Djava.security.auth.login.config="$K/jaas-kafka-broker.conf" -Djava.security.krb5.conf="$KRB5_CONFIG" \
        -Dzookeeper.sasl.client=true -Dlog4j.configuration="file:$WORK/kafka-log4j.properties" \
        -cp "$kcp" kafka.Kafka "$bd/server.properties" >"$bd/broker.log" 2>&1 &
    bpid=$!
    PIDS+=("$bpid")
    for _ in $(seq 450); do # 90 s
        grep -q 'started (kafka.server.KafkaServer)' "$bd/broker.log" && { reg=1; break; }
        kill -0 "$bpid" 2>/dev/null || break
        sleep 0.2
    done
    if [ $reg -eq 1 ]; then
        say "kafka $kind: broker registered after $((SECONDS - t)) s"
        echo "broker: started and registered" >"$f"
        timeout 120 java "${JAVA_OPTS[@]}" -Dlog4j.configuration="file:$WORK/kafka-client-log4j.properties" \
            -cp "$WORK/kafka-classes:$kcp" KafkaCheck "127.0.0.1:$kport" >>"$f" 2>"$WORK/kafka-check-$kind.err"; client_rc >>"$f"
        timeout 60 java "${JAVA_OPTS[@]}" -Djava.security.auth.login.config="$K/jaas-kafka-zk.conf" \
            -Djava.security.krb5.conf="$KRB5_CONFIG" -cp "$WORK:$CP" KafkaZk "$PORT" "$WORK" >>"$f" 2>"$WORK/kafka-zk-$kind.err"; client_rc >>"$f"
        pass "kafka $kind: Kafka broker started and registered in the Kerberized registry"
    else
        echo "broker: did not register" >"$f"
        fail "kafka $kind: Kafka broker did not start/register within 90 s"
        tail -n 30 "$bd/broker.log" >&2
    fi
    # a clean stop (controlled shutdown, /brokers/ids/1 goes away); kill -9 after 30 s; then the
    # registry without the broker
    kill "$bpid" 2>/dev/null
    for _ in $(seq 150); do kill -0 "$bpid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$bpid" 2>/dev/null; then
        echo "broker: still running 30 s after SIGTERM" >>"$f"
        kill -9 "$bpid" 2>/dev/null
    elif [ $reg -eq 1 ]; then
        echo "broker: stopped on SIGTERM" >>"$f"
    fi
    wait "$bpid" 2>/dev/null
    if [ $reg -eq 1 ]; then
        timeout 60 java "${JAVA_OPTS[@]}" -Djava.security.auth.login.config="$K/jaas-kafka-zk.conf" \
            -Djava.security.krb5.conf="$KRB5_CONFIG" -cp "$WORK:$CP" KafkaZk "$PORT" "$WORK" after >>"$f" 2>"$WORK/kafka-zk-after-$kind.err"; client_rc >>"$f"
    fi
    stop_server
}

kafka_norm() { # only what differs run to run: the topic id Kafka draws
    norm "$1" | sed -E 's/"topic_id":"[A-Za-z0-9_-]{22}"/"topic_id":"<topic-id>"/g'
}

kafka_compare() { # kafka version
    local zkf zkrf want="$EXPECT/kafka.txt" ref_rc=1 zkr_rc=1 cmp_rc=1
    zkf=$(tx kafka zk) zkrf=$(tx kafka zkr)
    if [ -s "$zkf" ] && [ "$(kafka_norm "$zkf")" = "$(cat "$want" 2>/dev/null)" ]; then
        ref_rc=0; pass "kafka: ZooKeeper transcript = expected/kafka.txt"
    else
        fail "kafka: ZooKeeper transcript differs from expected/kafka.txt"; diff -u "$want" <(kafka_norm "$zkf") | head -40
    fi
    [ -s "$zkrf" ] && zkr_rc=0
    diff -u <(kafka_norm "$zkf") <(kafka_norm "$zkrf") >"$WORK/kafka.diff" && [ -s "$zkrf" ] && cmp_rc=0
    if [ $cmp_rc -eq 0 ] && [ "$(kafka_norm "$zkrf")" = "$(cat "$want" 2>/dev/null)" ]; then
        pass "kafka: zkr transcript = ZooKeeper transcript = expected/kafka.txt ($(wc -l <"$zkrf") lines)"
    else
        fail "kafka: zkr transcript differs (ZooKeeper vs zkr)"; head -60 "$WORK/kafka.diff"
    fi
    $PY "$INTEROP/matrix.py" add-row "$MATRIX_TSV" "Kafka $1 broker (ZooKeeper mode), Kerberos to ZooKeeper" "kerberos/kafka" \
        "Kafka broker with zookeeper.set.acl=true logged in as kafka/localhost: registration, topic create, produce/consume, the ACLs it sets, plain and other-principal access" \
        $ref_rc $zkr_rc $cmp_rc "$WORK/kafka.diff"
}

kafka_main
