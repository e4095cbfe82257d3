#!/usr/bin/env bash
# The Docker image and docker-compose.yml, on a machine without a Docker engine:
#   - docker-compose.yml validates (`docker-compose config`) and is the official image's 3-member
#     example with zkr in it; the Dockerfile has the official image's ports, volumes, defaults,
#     entrypoint and command, and its build stage builds from exactly what it copies;
#   - docker/docker-entrypoint.sh writes the zoo.cfg and myid the official image writes for the
#     same environment, leaves an existing zoo.cfg alone, appends ZOO_CFG_EXTRA, refuses a wrong
#     environment with a clear message;
#   - the compose layout run as three processes (the entrypoint + zkServer.sh start-foreground,
#     each member with its own ZOO_CONF_DIR/ZOO_DATA_DIR/ZOO_DATA_LOG_DIR and 127.0.0.1 ports):
#     one leader and two followers, writes seen by every member, /zookeeper/config, a member
#     started as root dropping to another user, the leader killed and a new one taking over, the
#     old leader restarted with its files and catching up.
# Needs ZKR_BIN (default target/release/zkr), nc, curl, python3; installs Debian's docker-compose
# if missing. KEEP_WORK=1 keeps the members' files and logs. Prints PASS/FAIL lines and "N passed, M failed"; exit 1 on failure.
set -uo pipefail
STARTED=$SECONDS
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
DOCKER_DIR="$ROOT/docker"
ENTRYPOINT="$DOCKER_DIR/docker-entrypoint.sh"
# shellcheck source=../lib/servers.sh
source "$HERE/../lib/servers.sh"
ZKR_BIN=${ZKR_BIN:-$ROOT/target/release/zkr}
[ -x "$ZKR_BIN" ] || { echo "no zkr binary at $ZKR_BIN (cargo build --release, or set ZKR_BIN)"; exit 2; }
ZKR_BIN="$(cd "$(dirname "$ZKR_BIN")" && pwd)/$(basename "$ZKR_BIN")"

WORK=$(mktemp -d /tmp/zkr-docker.XXXXXX)
chmod 755 "$WORK" # a member run as another user reads its files here
# That member also runs the entrypoint and zkr, and the checkout may sit in a directory only
# its owner can enter (a clone under mktemp -d is 0700): it gets readable copies.
mkdir -p "$WORK/image/bin"
cp -r "$DOCKER_DIR" "$WORK/image/docker"
cp "$ZKR_BIN" "$WORK/image/bin/zkr"
chmod -R a+rX "$WORK/image"
DOCKER_DIR="$WORK/image/docker"
ENTRYPOINT="$DOCKER_DIR/docker-entrypoint.sh"
ZKR_BIN="$WORK/image/bin/zkr"
declare -A PID=()  # member id -> pid of its zkr
cleanup() {
    local id
    for id in "${!PID[@]}"; do
        kill -9 "${PID[$id]}" 2>/dev/null
        wait "${PID[$id]}" 2>/dev/null
    done
    if [ "${KEEP_WORK:-}" = 1 ]; then echo "kept $WORK (KEEP_WORK=1)"; else rm -rf "$WORK"; fi
    echo "docker suite took $((SECONDS - STARTED))s"
}
trap cleanup EXIT

passed=0
failed=0
pass() { echo "PASS docker/$1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL docker/$1: $2"
    failed=$((failed + 1))
}
# check NAME WHY COMMAND...: PASS if COMMAND succeeds, else FAIL with WHY.
check() {
    local name=$1 why=$2
    shift 2
    if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}
# same_text NAME EXPECTED ACTUAL_FILE: the file holds exactly EXPECTED (a diff when not).
same_text() {
    local name=$1 expected=$2 file=$3
    if [ -f "$file" ] && diff <(printf '%s\n' "$expected") "$file" >"$WORK/diff" 2>&1; then
        pass "$name"
    else
        fail "$name" "$file differs from what the official image writes: $(sed 's/^/    /' "$WORK/diff" | tr '\n' '|')"
    fi
}

# ---------------------------------------------------------------------------------------------
# 1. docker-compose.yml and the Dockerfile, statically.
if ! command -v docker-compose >/dev/null; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    # Without recommends: Docker's engine is not wanted, only the compose file checker.
    install() { DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends docker-compose >/dev/null; }
    install || { $SUDO apt-get update -qq && install; }
fi
if (cd "$ROOT" && docker-compose -f docker-compose.yml config >"$WORK/compose.out" 2>&1); then
    pass "compose-config-valid"
else
    fail "compose-config-valid" "docker-compose config: $(tr '\n' ' ' <"$WORK/compose.out")"
fi
# What the validated file says: three members like the official example, each built from the
# top-level Dockerfile, client ports 2181-2183 on the host, ZOO_SERVERS the same everywhere.
if python3 - "$ROOT/docker-compose.yml" >"$WORK/compose.why" 2>&1 <<'PY'; then
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
svc = doc["services"]
want_servers = "server.1=zoo1:2888:3888;2181 server.2=zoo2:2888:3888;2181 server.3=zoo3:2888:3888;2181"
assert sorted(svc) == ["zoo1", "zoo2", "zoo3"], f"services {sorted(svc)}"
for i, name in enumerate(["zoo1", "zoo2", "zoo3"], start=1):
    s = svc[name]
    assert s.get("build") in (".", {"context": "."}), f"{name}: build {s.get('build')!r}"
    assert s.get("image"), f"{name}: no image name"
    assert s.get("hostname") == name, f"{name}: hostname {s.get('hostname')!r}"
    assert [str(p) for p in s.get("ports", [])] == [f"{2180 + i}:2181"], f"{name}: ports {s.get('ports')}"
    env = s["environment"]
    assert str(env["ZOO_MY_ID"]) == str(i), f"{name}: ZOO_MY_ID {env['ZOO_MY_ID']!r}"
    assert env["ZOO_SERVERS"] == want_servers, f"{name}: ZOO_SERVERS {env['ZOO_SERVERS']!r}"
PY
    pass "compose-three-members"
else
    fail "compose-three-members" "$(tr '\n' ' ' <"$WORK/compose.why")"
fi

# The Dockerfile: the official image's runtime contract (ports, volumes, entrypoint, command,
# defaults, non-root user), from a multi-stage build.
dockerfile_checks() {
    local f="$ROOT/Dockerfile" why=""
    grep -qE '^FROM rust:[^ ]+ AS build$' "$f" || why+="no rust build stage; "
    grep -qE '^FROM debian:bookworm-slim$' "$f" || why+="runtime is not debian:bookworm-slim; "
    grep -qE '^EXPOSE 2181 2888 3888 8080$' "$f" || why+="EXPOSE is not 2181 2888 3888 8080; "
    grep -qF 'VOLUME ["/data", "/datalog", "/logs"]' "$f" || why+="VOLUME is not /data /datalog /logs; "
    grep -qF 'ENTRYPOINT ["/docker-entrypoint.sh"]' "$f" || why+="ENTRYPOINT; "
    grep -qF 'CMD ["zkServer.sh", "start-foreground"]' "$f" || why+="CMD; "
    grep -qE 'useradd -r -g zookeeper --uid=1000 zookeeper' "$f" || why+="no zookeeper user (uid 1000); "
    # shellcheck disable=SC2016 # the Dockerfile's own $ZOO_CONF_DIR, literally
    grep -qE '^ENV ZOOCFGDIR=\$ZOO_CONF_DIR$' "$f" || why+="ZOOCFGDIR; "
    local kv
    for kv in ZOO_CONF_DIR=/conf ZOO_DATA_DIR=/data ZOO_DATA_LOG_DIR=/datalog ZOO_LOG_DIR=/logs \
        ZOO_TICK_TIME=2000 ZOO_INIT_LIMIT=5 ZOO_SYNC_LIMIT=2 ZOO_AUTOPURGE_PURGEINTERVAL=0 \
        ZOO_AUTOPURGE_SNAPRETAINCOUNT=3 ZOO_MAX_CLIENT_CNXNS=60 ZOO_STANDALONE_ENABLED=true \
        ZOO_ADMINSERVER_ENABLED=true; do
        grep -qE "^(ENV )?[[:space:]]*${kv}( \\\\)?$" "$f" || why+="ENV $kv missing; "
        grep -qF "\"\${${kv%%=*}:=${kv#*=}}\"" "$ENTRYPOINT" || why+="entrypoint default $kv missing; "
    done
    [ -z "$why" ] || { echo "$why"; return 1; }
}
if why=$(dockerfile_checks); then pass "dockerfile-official-contract"; else fail "dockerfile-official-contract" "$why"; fi

# The build stage has everything the binary is built from: every source file in cargo's dep-info
# for zkr (target/release/zkr.d) lies under a path the Dockerfile COPYs and .dockerignore keeps,
# and those paths alone, in a fresh directory, are a package cargo accepts with the lock file as
# it is (cargo metadata --locked: manifest, targets, Cargo.lock).
build_context_checks() {
    local ctx="$WORK/context" dep_info src f why="" copied=() deps=()
    mkdir -p "$ctx"
    while read -r src; do
        src=${src%/}
        [ -e "$ROOT/$src" ] || why+="COPY $src: not in the repository; "
        if grep -qxE "/?${src%%/*}/?" "$ROOT/.dockerignore"; then why+="COPY $src: excluded by .dockerignore; "; fi
        copied+=("$src")
        mkdir -p "$ctx/$(dirname "$src")"
        cp -r "$ROOT/$src" "$ctx/$src"
    done < <(sed -n 's/^COPY \([^-][^[]*\) [^ ]*$/\1/p' "$ROOT/Dockerfile" | tr ' ' '\n' | grep -v '^$')
    dep_info="$(dirname "$ZKR_BIN")/zkr.d"
    [ -f "$dep_info" ] || dep_info="$ROOT/target/release/zkr.d"
    if [ -f "$dep_info" ]; then
        read -r -a deps < <(head -n 1 "$dep_info" | cut -d: -f2-)
        for f in "${deps[@]}"; do
            f=${f#"$ROOT/"}
            [[ "$f" == /* ]] && continue # the toolchain's own files
            local inside=0 c
            for c in "${copied[@]}"; do [[ "$f" == "$c" || "$f" == "$c"/* ]] && inside=1; done
            [ "$inside" = 1 ] || why+="$f is compiled into zkr but not copied into the build stage; "
        done
    else
        why+="no dep-info file (target/release/zkr.d) to check the copied sources against; "
    fi
    # --offline needs every platform's crates in the local registry; a build fetches only this
    # platform's (android_system_properties was missing on a fresh machine), so fetch them all.
    (cd "$ROOT" && cargo fetch --locked >/dev/null 2>"$WORK/fetch.err") ||
        why+="cargo fetch: $(tail -3 "$WORK/fetch.err" | tr '\n' ' '); "
    (cd "$ctx" && cargo metadata --locked --offline --format-version 1 >/dev/null 2>"$WORK/context.err") ||
        why+="cargo metadata in the copied context: $(tail -3 "$WORK/context.err" | tr '\n' ' '); "
    [ -z "$why" ] || { echo "$why"; return 1; }
}
if why=$(build_context_checks); then pass "dockerfile-build-context"; else fail "dockerfile-build-context" "$why"; fi
rm -rf "$WORK/context"

# ---------------------------------------------------------------------------------------------
# 2. The entrypoint's files, with a command that does nothing (`true`), as a container whose
#    command was overridden would.
# entry DIR [VAR=VALUE...] -- COMMAND...: the entrypoint with only these variables (and PATH).
entry() {
    local dir=$1
    shift
    local vars=()
    while [ "$1" != -- ]; do
        vars+=("$1")
        shift
    done
    shift
    timeout 30 env -i PATH="$DOCKER_DIR:$PATH" ZKR_BIN="$ZKR_BIN" ZOO_CONF_DIR="$dir/conf" ZOO_DATA_DIR="$dir/data" \
        ZOO_DATA_LOG_DIR="$dir/datalog" ZOO_LOG_DIR="$dir/logs" "${vars[@]}" "$ENTRYPOINT" "$@"
}

D="$WORK/defaults"
entry "$D" -- true
same_text "defaults-zoo.cfg" "dataDir=$D/data
dataLogDir=$D/datalog
tickTime=2000
initLimit=5
syncLimit=2
autopurge.snapRetainCount=3
autopurge.purgeInterval=0
maxClientCnxns=60
standaloneEnabled=true
admin.enableServer=true
server.1=localhost:2888:3888;2181" "$D/conf/zoo.cfg"
same_text "defaults-myid" "1" "$D/data/myid"

D="$WORK/every-variable"
entry "$D" ZOO_MY_ID=2 ZOO_TICK_TIME=500 ZOO_INIT_LIMIT=7 ZOO_SYNC_LIMIT=3 ZOO_AUTOPURGE_PURGEINTERVAL=24 \
    ZOO_AUTOPURGE_SNAPRETAINCOUNT=5 ZOO_MAX_CLIENT_CNXNS=0 ZOO_STANDALONE_ENABLED=false \
    ZOO_ADMINSERVER_ENABLED=false ZOO_4LW_COMMANDS_WHITELIST='srvr, ruok, mntr' \
    "ZOO_SERVERS=server.1=zoo1:2888:3888;2181  server.2=zoo2:2888:3888;2181
server.3=zoo3:2888:3888:observer;2181" \
    'ZOO_CFG_EXTRA=metricsProvider.httpPort=7000 quorumListenOnAllIPs=true extra.star=*' -- true
same_text "every-variable-zoo.cfg" "dataDir=$D/data
dataLogDir=$D/datalog
tickTime=500
initLimit=7
syncLimit=3
autopurge.snapRetainCount=5
autopurge.purgeInterval=24
maxClientCnxns=0
standaloneEnabled=false
admin.enableServer=false
server.1=zoo1:2888:3888;2181
server.2=zoo2:2888:3888;2181
server.3=zoo3:2888:3888:observer;2181
4lw.commands.whitelist=srvr, ruok, mntr
metricsProvider.httpPort=7000
quorumListenOnAllIPs=true
extra.star=*" "$D/conf/zoo.cfg"
same_text "every-variable-myid" "2" "$D/data/myid"

# An existing zoo.cfg and myid (a mounted /conf/zoo.cfg, a data volume from an earlier run) are
# left exactly as they are, whatever the environment says.
D="$WORK/existing"
mkdir -p "$D/conf" "$D/data"
printf '# mine\ntickTime=1234\nclientPort=2999\n' >"$D/conf/zoo.cfg"
echo 7 >"$D/data/myid"
touch -d '2020-01-01 00:00' "$D/conf/zoo.cfg" "$D/data/myid"
before=$(stat -c '%Y %s' "$D/conf/zoo.cfg" "$D/data/myid" | tr '\n' ' ')
entry "$D" ZOO_MY_ID=3 ZOO_TICK_TIME=9 'ZOO_SERVERS=server.3=a:1:2;3' ZOO_CFG_EXTRA=x=y -- true
after=$(stat -c '%Y %s' "$D/conf/zoo.cfg" "$D/data/myid" | tr '\n' ' ')
same_text "existing-zoo.cfg-untouched" "# mine
tickTime=1234
clientPort=2999" "$D/conf/zoo.cfg"
check "existing-myid-untouched" "myid is now $(cat "$D/data/myid"), files changed: $before -> $after" \
    test "$(cat "$D/data/myid")" = 7 -a "$before" = "$after"

# A wrong environment stops the container before anything is written, saying what is wrong.
# wrong NAME EXPECTED_MESSAGE VAR=VALUE...
wrong() {
    local name=$1 want=$2 d="$WORK/wrong-$1"
    shift 2
    if entry "$d" "$@" -- true >"$d.out" 2>&1; then
        fail "wrong-env-$name" "the entrypoint accepted $*"
    elif ! grep -qF "$want" "$d.out"; then
        fail "wrong-env-$name" "expected \"$want\", got: $(tr '\n' ' ' <"$d.out")"
    elif [ -e "$d/conf/zoo.cfg" ] || [ -e "$d/data/myid" ]; then
        fail "wrong-env-$name" "it failed but left a zoo.cfg or myid behind"
    else
        pass "wrong-env-$name"
    fi
}
THREE='ZOO_SERVERS=server.1=zoo1:2888:3888;2181 server.2=zoo2:2888:3888;2181 server.3=zoo3:2888:3888;2181'
wrong "my-id-not-listed" "ZOO_MY_ID=4 is not one of the servers in ZOO_SERVERS (server.1, server.2, server.3)" \
    ZOO_MY_ID=4 "$THREE"
wrong "my-id-not-a-number" "ZOO_MY_ID must be a number from 1 to 255" ZOO_MY_ID=zoo1 "$THREE"
wrong "servers-not-server-lines" "ZOO_SERVERS: expected words like server.1=zoo1:2888:3888;2181" \
    ZOO_MY_ID=1 "ZOO_SERVERS=zoo1:2888:3888 zoo2:2888:3888"
wrong "servers-twice" "ZOO_SERVERS lists server.2 twice" ZOO_MY_ID=1 \
    "ZOO_SERVERS=server.1=a:1:2;3 server.2=b:1:2;3 server.2=c:1:2;3"
# With a user's zoo.cfg the environment is not consulted: zkr itself refuses a myid that is
# not one of the servers, with the file's name in its message.
D="$WORK/wrong-own-cfg"
mkdir -p "$D/conf" "$D/data"
printf 'dataDir=%s\nserver.1=127.0.0.1:1:2;3\nserver.2=127.0.0.1:4:5;6\n' "$D/data" >"$D/conf/zoo.cfg"
echo 9 >"$D/data/myid"
if entry "$D" ZKR_USER= -- zkServer.sh start-foreground >"$D.out" 2>&1; then
    fail "wrong-env-zkr-refuses-myid" "zkr started with myid 9 and servers 1, 2"
elif grep -qF "this server's id is 9 but the ensemble lists only 1, 2" "$D.out"; then
    pass "wrong-env-zkr-refuses-myid"
else
    fail "wrong-env-zkr-refuses-myid" "unexpected output: $(tail -5 "$D.out" | tr '\n' ' ')"
fi

# ---------------------------------------------------------------------------------------------
# 3. docker-compose.yml's three members as processes on 127.0.0.1.
# Ports: 27000-27899 (see lib/servers.sh). Member i: client B+i-1, peer B+2+i, election B+5+i,
# AdminServer B+8+i; B+12 is the standalone server's client port.
if ! B=$(srv_pick_base 27000 900 13); then
    fail "ensemble-ports" "no 13 free ports in 27000-27899"
    echo "$passed passed, $failed failed"
    exit 1
fi
client() { echo $((B + $1 - 1)); }
peer() { echo $((B + 2 + $1)); }
election() { echo $((B + 5 + $1)); }
admin() { echo $((B + 8 + $1)); }
SERVERS=""
for i in 1 2 3; do SERVERS+="server.$i=127.0.0.1:$(peer $i):$(election $i);$(client $i) "; done
SERVERS=${SERVERS% }
RUN_AS=""
if [ "$(id -u)" = 0 ] && id -u nobody >/dev/null 2>&1; then RUN_AS=nobody; fi

# start_member I: the entrypoint with the image's default command, in the background, as the
# container would run it. Member 3 is started as root and drops to `nobody` (the image drops to
# `zookeeper`) when this test runs as root; the others stay the user running the test.
start_member() {
    local i=$1 d="$WORK/m$1" user=""
    mkdir -p "$d/conf"
    if [ "$i" = 3 ] && [ -n "$RUN_AS" ]; then
        user=$RUN_AS
        chown "$user" "$d/conf" # the image's /conf belongs to its user
    fi
    env -i PATH="$DOCKER_DIR:$PATH" ZKR_BIN="$ZKR_BIN" ZKR_USER="$user" RUST_LOG=info \
        ZOO_CONF_DIR="$d/conf" ZOO_DATA_DIR="$d/data" ZOO_DATA_LOG_DIR="$d/datalog" ZOO_LOG_DIR="$d/logs" \
        ZOO_MY_ID="$i" ZOO_SERVERS="$SERVERS" ZOO_4LW_COMMANDS_WHITELIST='*' \
        ZOO_CFG_EXTRA="admin.serverAddress=127.0.0.1 admin.serverPort=$(admin "$i")" \
        "$ENTRYPOINT" zkServer.sh start-foreground >>"$d.log" 2>&1 &
    PID[$i]=$!
}
srvr_mode() { echo srvr | timeout 5 nc -q1 127.0.0.1 "$(client "$1")" 2>/dev/null | sed -n 's/^Mode: //p'; }
# modes IDS...: "id=mode ..." of those members.
modes() {
    local i out=""
    for i in "$@"; do out+="$i=$(srvr_mode "$i") "; done
    echo "${out% }"
}
# wait_one_leader SECONDS IDS...: true once exactly one of IDS says leader and the rest follower.
wait_one_leader() {
    local secs=$1 deadline m
    shift
    deadline=$((SECONDS + secs))
    while [ $SECONDS -lt $deadline ]; do
        m=$(modes "$@")
        if [ "$(grep -o '=leader' <<<"$m" | wc -l)" = 1 ] &&
            [ "$(grep -o '=follower' <<<"$m" | wc -l)" = $(($# - 1)) ]; then
            return 0
        fi
        sleep 0.3
    done
    return 1
}
leader_of() { modes "$@" | tr ' ' '\n' | sed -n 's/=leader$//p'; }
# cli I ARGS...: zkr cli against member I.
cli() {
    local i=$1
    shift
    timeout 30 "$ZKR_BIN" cli -server "127.0.0.1:$(client "$i")" "$@" 2>&1
}
# read_back I PATH WANT: member I returns WANT for PATH after a sync (retried for a few seconds).
read_back() {
    local i=$1 path=$2 want=$3 got=""
    for _ in $(seq 20); do
        got=$(printf 'sync %s\nget %s\n' "$path" "$path" | cli "$i" | tail -n 1)
        [ "$got" = "$want" ] && return 0
        sleep 0.3
    done
    echo "member $i: get $path gave '$got'"
    return 1
}

# The official image's standalone form (`docker run zookeeper` with one server line): the server
# line's client port is the one served, as ZooKeeper does when myid names that line.
D="$WORK/standalone"
S=$((B + 12))
mkdir -p "$D"
env -i PATH="$DOCKER_DIR:$PATH" ZKR_BIN="$ZKR_BIN" ZKR_USER= ZOO_CONF_DIR="$D/conf" ZOO_DATA_DIR="$D/data" \
    ZOO_DATA_LOG_DIR="$D/datalog" ZOO_LOG_DIR="$D/logs" ZOO_ADMINSERVER_ENABLED=false \
    ZOO_SERVERS="server.1=127.0.0.1:$(peer 1):$(election 1);$S" ZOO_4LW_COMMANDS_WHITELIST=srvr,ruok \
    "$ENTRYPOINT" zkServer.sh start-foreground >"$D.log" 2>&1 &
PID[0]=$!
if srv_wait_ruok "$S" "${PID[0]}" 20; then
    mode=$(echo srvr | timeout 5 nc -q1 127.0.0.1 "$S" 2>/dev/null | sed -n 's/^Mode: //p')
    check "standalone-server-line-client-port" "srvr on $S says Mode: $mode" test "$mode" = standalone
else
    fail "standalone-server-line-client-port" "nothing answers on the server line's client port $S: $(grep -o 'accepting client connections.*' "$D.log" | head -1)"
fi
kill "${PID[0]}" 2>/dev/null
wait "${PID[0]}" 2>/dev/null
unset "PID[0]"

for i in 1 2 3; do start_member "$i"; done
up=1
for i in 1 2 3; do
    if ! srv_wait_ruok "$(client "$i")" "${PID[$i]}" 60; then
        srv_diagnose "member $i" "$(client "$i")" "${PID[$i]}" "$WORK/m$i.log"
        up=0
    fi
done
check "ensemble-members-start" "a member did not answer ruok" test "$up" = 1

# The files each member's entrypoint wrote: the official image's, for this environment.
for i in 1 2 3; do
    d="$WORK/m$i"
    same_text "member$i-zoo.cfg" "dataDir=$d/data
dataLogDir=$d/datalog
tickTime=2000
initLimit=5
syncLimit=2
autopurge.snapRetainCount=3
autopurge.purgeInterval=0
maxClientCnxns=60
standaloneEnabled=true
admin.enableServer=true
$(tr ' ' '\n' <<<"$SERVERS")
4lw.commands.whitelist=*
admin.serverAddress=127.0.0.1
admin.serverPort=$(admin "$i")" "$d/conf/zoo.cfg"
    same_text "member$i-myid" "$i" "$d/data/myid"
done

if wait_one_leader 30 1 2 3; then
    pass "one-leader-two-followers ($(modes 1 2 3))"
else
    fail "one-leader-two-followers" "modes after 30s: $(modes 1 2 3)"
fi

# zkServer.sh status (docker exec zoo1 zkServer.sh status) agrees with srvr.
status_ok=1
for i in 1 2 3; do
    st=$(env ZOOCFGDIR="$WORK/m$i/conf" "$DOCKER_DIR/zkServer.sh" status 2>/dev/null)
    [ "$st" = "Mode: $(srvr_mode "$i")" ] || { status_ok=0; echo "member $i: zkServer.sh status said '$st'"; }
done
check "zkServer.sh-status" "zkServer.sh status disagrees with srvr" test "$status_ok" = 1

# ZOO_CFG_EXTRA took effect: each AdminServer is on the port given there.
admin_ok=1
for i in 1 2 3; do
    curl -sf "http://127.0.0.1:$(admin "$i")/commands/ruok" >/dev/null || { admin_ok=0; echo "member $i: no AdminServer on $(admin "$i")"; }
done
check "cfg-extra-admin-port" "an AdminServer is not on its ZOO_CFG_EXTRA port" test "$admin_ok" = 1

# Member 3 runs as the user it dropped to, and owns its data.
if [ -n "$RUN_AS" ]; then
    owner=$(stat -c %U "$WORK/m3/data/myid" 2>/dev/null)
    proc_user=$(stat -c %U "/proc/${PID[3]}" 2>/dev/null)
    check "root-drops-to-user" "zkr runs as '$proc_user', myid belongs to '$owner' (want $RUN_AS)" \
        test "$proc_user" = "$RUN_AS" -a "$owner" = "$RUN_AS"
else
    echo "SKIP docker/root-drops-to-user (not root)"
fi

# A write through a follower, read back through every member.
follower=""
for i in 1 2 3; do [ "$(srvr_mode "$i")" = follower ] && { follower=$i; break; }; done
follower=${follower:-2}
out=$(cli "$follower" create /docker-compose "hello-from-$follower")
check "write-through-follower" "create via member $follower: $out" grep -q "Created /docker-compose" <<<"$out"
for i in 1 2 3; do
    if why=$(read_back "$i" /docker-compose "hello-from-$follower"); then pass "read-back-member$i"; else fail "read-back-member$i" "$why"; fi
done

# /zookeeper/config lists the three servers (as ZooKeeper shows them) on every member.
for i in 1 2 3; do
    cfg=$(cli "$i" get /zookeeper/config)
    want_ok=1
    for j in 1 2 3; do
        grep -qxF "server.$j=127.0.0.1:$(peer $j):$(election $j):participant;0.0.0.0:$(client $j)" <<<"$cfg" || want_ok=0
    done
    check "zookeeper-config-member$i" "get /zookeeper/config: $(tr '\n' '|' <<<"$cfg")" \
        test "$want_ok" = 1 -a "$(grep -c '^server\.' <<<"$cfg")" = 3
done

# Kill the leader (SIGKILL, as a crashed container): the other two elect a new one, and the data
# is still there and writable.
old=$(leader_of 1 2 3)
if [ -z "$old" ]; then
    fail "leader-killed-new-leader" "no leader to kill ($(modes 1 2 3))"
else
    kill -9 "${PID[$old]}"
    wait "${PID[$old]}" 2>/dev/null
    unset "PID[$old]"
    killed_at=$SECONDS
    rest=()
    for i in 1 2 3; do [ "$i" != "$old" ] && rest+=("$i"); done
    if wait_one_leader 30 "${rest[@]}"; then
        pass "leader-killed-new-leader (killed $old; $(modes "${rest[@]}") within $((SECONDS - killed_at))s)"
    else
        fail "leader-killed-new-leader" "killed $old; after 30s: $(modes "${rest[@]}")"
    fi
    for i in "${rest[@]}"; do
        if why=$(read_back "$i" /docker-compose "hello-from-$follower"); then
            pass "after-failover-read-member$i"
        else
            fail "after-failover-read-member$i" "$why"
        fi
    done
    out=$(cli "${rest[0]}" create /after-failover still-writable)
    check "after-failover-write" "create via member ${rest[0]}: $out" grep -q "Created /after-failover" <<<"$out"

    # The killed member comes back as `restart: always` brings back a container: the same
    # entrypoint over its own files, which stay as they were; it follows and catches up.
    cfg_sum=$(md5sum <"$WORK/m$old/conf/zoo.cfg")
    start_member "$old"
    if srv_wait_ruok "$(client "$old")" "${PID[$old]}" 60; then
        check "restarted-member-keeps-zoo.cfg" "zoo.cfg changed on restart" \
            test "$(md5sum <"$WORK/m$old/conf/zoo.cfg")" = "$cfg_sum"
        if wait_one_leader 30 1 2 3; then
            pass "restarted-member-rejoins ($(modes 1 2 3))"
        else
            fail "restarted-member-rejoins" "after 30s: $(modes 1 2 3)"
        fi
        if why=$(read_back "$old" /after-failover still-writable); then
            pass "restarted-member-catches-up"
        else
            fail "restarted-member-catches-up" "$why"
        fi
    else
        srv_diagnose "member $old" "$(client "$old")" "${PID[$old]}" "$WORK/m$old.log"
        fail "restarted-member-rejoins" "member $old did not come back"
    fi
fi

if [ "$failed" -gt 0 ]; then
    for i in 1 2 3; do
        echo "--- last lines of member $i's log"
        tail -n 15 "$WORK/m$i.log" 2>/dev/null
    done
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
