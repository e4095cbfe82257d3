#!/usr/bin/env bash
# Entrypoint of the zkr image: takes the environment of the official `zookeeper` image
# (github.com/31z4/zookeeper-docker) so that `image: zookeeper` can be swapped for zkr in a
# compose file. What it does, in the official image's order:
#
#   1. started as root with the default command (`zkServer.sh …`): hands the data, data log and
#      log directories to the image's user and runs itself again as that user;
#   2. if $ZOO_CONF_DIR/zoo.cfg does not exist, writes it from ZOO_* (the same lines, in the same
#      order, as the official image); an existing zoo.cfg is never touched;
#   3. if $ZOO_DATA_DIR/myid does not exist, writes ZOO_MY_ID (default 1) into it;
#   4. runs the command (`zkServer.sh start-foreground` → `zkr serve --config …/zoo.cfg`).
#
# Where zkr differs, it is stricter: the environment it turns into files is checked first, and a
# ZOO_MY_ID that is not one of ZOO_SERVERS stops the container with a message saying so (the
# official image writes the files and leaves ZooKeeper to fail on them).
#
# Not in the official image, for running this script outside a container (tests, or a host
# without Docker): ZKR_BIN names the zkr binary (default: `zkr` on PATH), and ZKR_USER the user
# to drop to when started as root (default zookeeper; empty: stay root).
set -euo pipefail

# The official image's defaults (its Dockerfile sets them with ENV; this image's does too).
: "${ZOO_CONF_DIR:=/conf}" "${ZOO_DATA_DIR:=/data}" "${ZOO_DATA_LOG_DIR:=/datalog}" "${ZOO_LOG_DIR:=/logs}"
: "${ZOO_TICK_TIME:=2000}" "${ZOO_INIT_LIMIT:=5}" "${ZOO_SYNC_LIMIT:=2}"
: "${ZOO_AUTOPURGE_PURGEINTERVAL:=0}" "${ZOO_AUTOPURGE_SNAPRETAINCOUNT:=3}" "${ZOO_MAX_CLIENT_CNXNS:=60}"
: "${ZOO_STANDALONE_ENABLED:=true}" "${ZOO_ADMINSERVER_ENABLED:=true}"
export ZOO_CONF_DIR ZOO_DATA_DIR ZOO_DATA_LOG_DIR ZOO_LOG_DIR
ZKR_USER=${ZKR_USER-zookeeper}

die() {
    echo "docker-entrypoint.sh: $*" >&2
    exit 1
}

# 1. Root with the default command: own the writable directories, then drop to ZKR_USER.
#    (The official image uses gosu; setpriv is util-linux's, already in debian:bookworm-slim.)
if [[ "${1:-}" == zkServer.sh && "$(id -u)" == 0 && -n "$ZKR_USER" ]]; then
    id -u "$ZKR_USER" >/dev/null 2>&1 || die "ZKR_USER=$ZKR_USER: no such user"
    mkdir -p "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR" "$ZOO_LOG_DIR"
    chown -R "$ZKR_USER" "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR" "$ZOO_LOG_DIR"
    exec setpriv --reuid="$ZKR_USER" --regid="$(id -g "$ZKR_USER")" --init-groups "$0" "$@"
fi

# ZOO_SERVERS and ZOO_CFG_EXTRA are lists of words split on spaces, tabs and newlines (a YAML
# block scalar works), never glob-expanded: `4lw.commands.whitelist=*` stays a star.
read -r -d '' -a servers <<<"${ZOO_SERVERS:-}" || true
read -r -d '' -a extras <<<"${ZOO_CFG_EXTRA:-}" || true
my_id=${ZOO_MY_ID:-1}

# ZOO_MY_ID becomes the myid file: ZooKeeper (and zkr) read a number from 1 to 255.
check_my_id() {
    if ! [[ "$my_id" =~ ^[0-9]+$ ]] || ((10#$my_id < 1 || 10#$my_id > 255)); then
        die "ZOO_MY_ID must be a number from 1 to 255 (this server's N in server.N), found '$my_id'"
    fi
}

# 2. zoo.cfg, only when there is none.
config="$ZOO_CONF_DIR/zoo.cfg"
if [[ ! -f "$config" ]]; then
    # With no ZOO_SERVERS the official image lists this one server, so it runs standalone.
    ((${#servers[@]})) || servers=("server.1=localhost:2888:3888;2181")
    declare -A listed=()
    for s in "${servers[@]}"; do
        [[ "$s" =~ ^server\.([0-9]+)=[^=]+$ ]] ||
            die "ZOO_SERVERS: expected words like server.1=zoo1:2888:3888;2181 separated by spaces, found '$s'"
        n=$((10#${BASH_REMATCH[1]}))
        [[ -z "${listed[$n]:-}" ]] || die "ZOO_SERVERS lists server.$n twice"
        listed[$n]=1
    done
    for e in "${extras[@]}"; do
        [[ "$e" == *=* ]] || die "ZOO_CFG_EXTRA: expected key=value words separated by spaces, found '$e'"
    done
    # One server and standaloneEnabled=true is a standalone server, where myid is not read.
    if ((${#servers[@]} > 1)) || [[ "${ZOO_STANDALONE_ENABLED,,}" != true ]]; then
        check_my_id
        if [[ -z "${listed[$((10#$my_id))]:-}" ]]; then
            ids=$(printf '%s\n' "${!listed[@]}" | sort -n | sed 's/^/server./' | paste -sd, - | sed 's/,/, /g')
            die "ZOO_MY_ID=$my_id is not one of the servers in ZOO_SERVERS ($ids): give each member the N of its own server.N line"
        fi
    fi
    mkdir -p "$ZOO_CONF_DIR"
    tmp=$(mktemp "$config.XXXXXX")
    {
        echo "dataDir=$ZOO_DATA_DIR"
        echo "dataLogDir=$ZOO_DATA_LOG_DIR"
        echo "tickTime=$ZOO_TICK_TIME"
        echo "initLimit=$ZOO_INIT_LIMIT"
        echo "syncLimit=$ZOO_SYNC_LIMIT"
        echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
        echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
        echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
        echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
        echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
        printf '%s\n' "${servers[@]}"
        if [[ -n "${ZOO_4LW_COMMANDS_WHITELIST:-}" ]]; then
            echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
        fi
        ((${#extras[@]} == 0)) || printf '%s\n' "${extras[@]}"
    } >"$tmp"
    chmod 644 "$tmp"
    mv "$tmp" "$config"
fi

# 3. myid, only when there is none (a volume from an earlier run keeps its id).
if [[ ! -f "$ZOO_DATA_DIR/myid" ]]; then
    check_my_id
    mkdir -p "$ZOO_DATA_DIR"
    echo "$my_id" >"$ZOO_DATA_DIR/myid"
fi

# 4. The command: zkServer.sh start-foreground by default.
exec "$@"
