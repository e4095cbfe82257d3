# Sourced by the benchmark scripts that run Debian's ZooKeeper 3.8 standalone beside zkr
# (bench-side-by-side.sh, bench-reads.sh, bench-snapshot-stall.sh): one zoo.cfg shape and one
# way to start it, so that every script measures the same ZooKeeper.

ZKSERVER=/usr/share/zookeeper/bin/zkServer.sh

# zk_require: stops the script when Debian's ZooKeeper is not installed.
zk_require() {
  [ -x "$ZKSERVER" ] || { echo "Debian's ZooKeeper is missing: apt-get install zookeeper zookeeper-bin" >&2; exit 1; }
}

# zk_standalone_cfg DIR PORT [LINE...]: writes DIR/zoo.cfg for a standalone ZooKeeper on
# 127.0.0.1:PORT with its data in DIR/zk, fsync on (forceSync's default), no connection limit,
# no AdminServer, every four-letter word; each LINE is appended (e.g. snapCount=N).
zk_standalone_cfg() {
  local dir=$1 port=$2 line
  shift 2
  {
    cat <<CFG
tickTime=2000
dataDir=$dir/zk
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
CFG
    for line in "$@"; do echo "$line"; done
  } >"$dir/zoo.cfg"
}

# zk_start DIR [PREFIX...]: starts ZooKeeper in the background on DIR/zoo.cfg, its output appended
# to DIR/zk.out; PREFIX runs it (e.g. taskset -c 0). start-foreground execs the JVM, so $! is
# ZooKeeper itself. SERVER_JVMFLAGS, if set, reaches it.
zk_start() {
  local dir=$1
  shift
  ZOOCFGDIR=$dir ZOO_LOG_DIR=$dir ZOOPIDFILE=$dir/zk.pid "$@" "$ZKSERVER" start-foreground "$dir/zoo.cfg" >>"$dir/zk.out" 2>&1 &
}
