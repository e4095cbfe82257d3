#!/usr/bin/env bash
# Restart time and disk use with N Dubbo-like znodes (~400-byte URL-encoded provider names):
# zkr vs Debian's ZooKeeper 3.8 on the same machine, same loader (`zkr bench fill`), fsync on
# for both. Each server is filled, killed with SIGKILL (a crash: both must replay their logs),
# and restarted; the time is from process start until a client reads the last node created.
#   scripts/bench-restart.sh [N]        (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
ZKR=target/release/zkr
[ -x "$ZKR" ] || cargo build --release
W=$(mktemp -d)
trap 'kill -9 $(jobs -p) ${ZR:-} $(zk_pid 2>/dev/null) 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
ZPORT=25991; RPORT=25992
LAST=$("$ZKR" bench fill --path-of $((N - 1)))

cat >"$W/zoo.cfg" <<CFG
tickTime=2000
dataDir=$W/zk
clientPort=$ZPORT
admin.enableServer=false
maxClientCnxns=0
4lw.commands.whitelist=*
CFG

ms() { date +%s%3N; }
wait_readable() { # port -> ms until getData of the last node works
  local t0=$1 port=$2
  until printf 'get %s\nquit\n' "$LAST" | timeout 20 /usr/share/zookeeper/bin/zkCli.sh -server 127.0.0.1:$port 2>/dev/null | grep -q '^$' ; do sleep 0.05; done
  echo $(( $(ms) - t0 ))
}
readable_raw() { # faster probe with zkr's own loader client is not available; use exists via python kazoo if present
  local port=$1
  /usr/bin/python3 - "$port" "$LAST" <<'PY'
import sys, time, socket, struct
port, path = int(sys.argv[1]), sys.argv[2]
def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise OSError("closed")
        b += c
    return b
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        req = struct.pack(">iqiq", 0, 0, 30000, 0) + struct.pack(">i", 16) + b"\0"*16 + b"\0"
        s.sendall(struct.pack(">i", len(req)) + req)
        recvn(s, struct.unpack(">i", recvn(s, 4))[0])
        p = path.encode()
        body = struct.pack(">ii", 1, 3) + struct.pack(">i", len(p)) + p + b"\0"
        s.sendall(struct.pack(">i", len(body)) + body)
        data = recvn(s, struct.unpack(">i", recvn(s, 4))[0])
        xid, zxid, err = struct.unpack(">iqi", data[:16])
        if err == 0:
            sys.exit(0)
    except (OSError, struct.error):
        pass
    time.sleep(0.05)
PY
}
start_zk() { ZOOCFGDIR=$W ZOO_LOG_DIR=$W ZOOPIDFILE=$W/zk.pid /usr/share/zookeeper/bin/zkServer.sh start-foreground "$W/zoo.cfg" >"$W/zk.out" 2>&1 & }
zk_pid() { ss -ltnpH "sport = :$ZPORT" | grep -o "pid=[0-9]*" | head -1 | cut -d= -f2; }
start_zkr() { "$ZKR" serve --admin-enable false --bind 127.0.0.1 --port $RPORT --data-dir "$W/zkr" >"$W/zkr.out" 2>&1 & ZR=$!; }

echo "== filling $N nodes"
start_zk; until [ "$(echo ruok | nc -q1 127.0.0.1 $ZPORT 2>/dev/null)" = imok ]; do sleep 0.2; done
start_zkr; sleep 0.5
zk_fill=$("$ZKR" bench fill --server 127.0.0.1:$ZPORT --count "$N")
zkr_fill=$("$ZKR" bench fill --server 127.0.0.1:$RPORT --count "$N")
zk_rss=$(ps -o rss= -p "$(zk_pid)"); zkr_rss=$(ps -o rss= -p "$ZR")
kill -9 "$ZR" "$(zk_pid)"; sleep 1
zk_disk=$(du -s --block-size=1 "$W/zk" | cut -f1); zkr_disk=$(du -s --block-size=1 "$W/zkr" | cut -f1)
zk_disk_apparent=$(du -sb --apparent-size "$W/zk" | cut -f1); zkr_disk_apparent=$(du -sb --apparent-size "$W/zkr" | cut -f1)

echo "== restarting after SIGKILL"
t0=$(ms); start_zk; readable_raw $ZPORT; zk_restart=$(( $(ms) - t0 )); kill -9 "$(zk_pid)"
t0=$(ms); start_zkr; readable_raw $RPORT; zkr_restart=$(( $(ms) - t0 ))
kill -9 "$ZR"

printf '\n%-28s %22s %22s %8s\n' "N=$N" "ZooKeeper 3.8" "zkr" "ratio"
printf '%-28s %22s %22s\n' "fill" "${zk_fill#fill: }" "${zkr_fill#fill: }"
printf '%-28s %19s kB %19s kB %8.2f\n' "RSS after fill" "$zk_rss" "$zkr_rss" "$(echo "$zkr_rss / $zk_rss" | bc -l)"
printf '%-28s %19s B  %19s B  %8.2f\n' "disk (allocated)" "$zk_disk" "$zkr_disk" "$(echo "$zkr_disk / $zk_disk" | bc -l)"
printf '%-28s %19s B  %19s B  %8.2f\n' "disk (apparent)" "$zk_disk_apparent" "$zkr_disk_apparent" "$(echo "$zkr_disk_apparent / $zk_disk_apparent" | bc -l)"
printf '%-28s %19s ms %19s ms %8.2f\n' "restart after SIGKILL" "$zk_restart" "$zkr_restart" "$(echo "$zkr_restart / $zk_restart" | bc -l)"
