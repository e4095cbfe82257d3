# Sourced by the interop suites: what every suite needs to run Debian's ZooKeeper beside zkr.
#
# Port ranges: every suite listens below 32768, because Linux hands out 32768-60999 as ephemeral
# source ports (/proc/sys/net/ipv4/ip_local_port_range) and a listener up there can find its port
# taken by some client's outgoing connection. The defaults:
#   interop 24000  ops 30100  dubboview 31000  dubbo 28000  clients 29000  tls 22000
#   hostile 23000  import 26000  docker 27000  bench smoke 21050  bench side-by-side 21100
#   bench-restart 25991  metrics 32000  config 32100  ensemble 20000-20899
#   kazoo-ensemble 25000 (..25899)  quorum-tls 30600-30899  zab 31400-31599

# Debian's zkEnv.sh puts no SLF4J binding on ZooKeeper's class path, so a reference server that
# fails to start says nothing. Given in SERVER_JVMFLAGS, which zkServer.sh places after its own
# -cp, this class path (the last -cp wins) adds slf4j-simple from libslf4j-java, a dependency of
# libzookeeper-java, and ZooKeeper logs to stderr at INFO.
ZK_LOGGING_FLAGS="-cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar -Dorg.slf4j.simpleLogger.showDateTime=true"

# srv_ports_free PORT... : true when each port can be bound on every address right now (servers
# listen on 0.0.0.0 or 127.0.0.1; a wildcard bind fails if either is taken).
srv_ports_free() {
    "${PY:-python3}" - "$@" <<'PY'
import socket, sys
for p in sys.argv[1:]:
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", int(p)))
    except OSError:
        sys.exit(1)
    finally:
        s.close()
PY
}

# srv_pick_base LOW SPAN COUNT : prints a port B in LOW..LOW+SPAN-COUNT with B..B+COUNT-1 all free.
srv_pick_base() {
    local low=$1 span=$2 count=$3 b i ports
    for _ in $(seq 1 60); do
        b=$((low + RANDOM % (span - count + 1)))
        ports=()
        for ((i = 0; i < count; i++)); do ports+=($((b + i))); done
        if srv_ports_free "${ports[@]}"; then
            echo "$b"
            return 0
        fi
    done
    return 1
}

# srv_wait_ruok PORT PID [SECONDS] : waits until 127.0.0.1:PORT answers ruok with imok; gives up
# early when the process PID has exited.
srv_wait_ruok() {
    local port=$1 pid=$2 secs=${3:-90} deadline
    deadline=$(($(date +%s) + secs))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        [ "$(echo ruok | timeout 5 nc -q1 127.0.0.1 "$port" 2>/dev/null)" = imok ] && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.3
    done
    return 1
}

# srv_diagnose NAME PORT PID LOG : why a server did not answer, for the suite's output.
srv_diagnose() {
    local name=$1 port=$2 pid=$3 log=$4
    if kill -0 "$pid" 2>/dev/null; then
        echo "[$name] pid $pid is running but 127.0.0.1:$port did not answer ruok" >&2
    else
        wait "$pid" 2>/dev/null
        echo "[$name] pid $pid exited (status $?) before answering on 127.0.0.1:$port" >&2
    fi
    echo "[$name] sockets on port $port:" >&2
    ss -tanpH "( sport = :$port or dport = :$port )" 2>/dev/null | head -n 10 >&2
    echo "[$name] last lines of $log:" >&2
    tail -n 40 "$log" >&2 2>/dev/null
}
