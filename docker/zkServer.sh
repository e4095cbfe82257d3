#!/usr/bin/env bash
# zkServer.sh of the zkr image: the commands of ZooKeeper's script that make sense in a
# container, so the official image's CMD (`zkServer.sh start-foreground`) and `docker exec …
# zkServer.sh status` work unchanged.
#
#   zkServer.sh [--config DIR] start-foreground|print-cmd|status|version [ZOO.CFG]
#
# The config file is ZOO.CFG if given, else DIR/zoo.cfg, else $ZOOCFGDIR/zoo.cfg (the image sets
# ZOOCFGDIR=$ZOO_CONF_DIR), else /conf/zoo.cfg. ZKR_BIN names the binary (default `zkr`). zkr
# logs to standard error, so `docker logs` shows it; nothing is written to ZOO_LOG_DIR.
# start/stop/restart (ZooKeeper's background mode with a pid file) have no use under Docker,
# which runs the server in the foreground and stops it with SIGTERM.
set -euo pipefail
zkr=${ZKR_BIN:-zkr}
conf_dir=${ZOOCFGDIR:-${ZOO_CONF_DIR:-/conf}}
if [[ "${1:-}" == --config ]]; then
    conf_dir=${2:?--config needs a directory}
    shift 2
fi
cmd=${1:-}
config=${2:-$conf_dir/zoo.cfg}

usage() {
    echo "Usage: $0 [--config <conf-dir>] {start-foreground|print-cmd|status|version} [zoo.cfg]" >&2
    exit 1
}

# The client port status asks: clientPort, else the ";[addr:]port" of this server's server.N line,
# else 2181 (ZooKeeper's order: a 3.5+ server line's client port wins over clientPort).
client_port() {
    local port data_dir myid line
    port=$(sed -n 's/^[[:space:]]*clientPort[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' "$config" | tail -n 1)
    data_dir=$(sed -n 's/^[[:space:]]*dataDir[[:space:]]*=[[:space:]]*//p' "$config" | tail -n 1)
    if [[ -n "$data_dir" && -r "$data_dir/myid" ]]; then
        myid=$(tr -d '[:space:]' <"$data_dir/myid")
        line=$(grep -E "^[[:space:]]*server\.${myid}[[:space:]]*=.*;" "$config" | tail -n 1 | sed 's/[[:space:]]*$//' || true)
        [[ -z "$line" ]] || port=${line##*[;:]}
    fi
    echo "${port:-2181}"
}

case "$cmd" in
start-foreground)
    echo "Using config: $config" >&2
    exec "$zkr" serve --config "$config"
    ;;
print-cmd)
    echo "\"$zkr\" serve --config \"$config\""
    ;;
status)
    port=$(client_port)
    echo "Using config: $config" >&2
    echo "Client port found: $port. Client address: localhost. Client SSL: false." >&2
    mode=$( (echo srvr | nc -q 1 localhost "$port" 2>/dev/null || true) | sed -n 's/^Mode: //p')
    if [[ -z "$mode" ]]; then
        echo "Error contacting service. It is probably not running." >&2
        exit 1
    fi
    echo "Mode: $mode"
    ;;
version)
    "$zkr" --version
    ;;
*)
    usage
    ;;
esac
