#!/usr/bin/env bash
# Usage: run_zkcli.sh SCRIPT.zk HOST:PORT
# Pipes the script (minus '#' comment lines) into Debian's zkCli.sh and prints
# its raw output (stdout+stderr) followed by its exit code.  lib/compare.py
# --format zkcli filters and normalises it.
set -u
script=$1
server=$2
zkcli=${ZKCLI:-/usr/share/zookeeper/bin/zkCli.sh}
grep -v '^#' "$script" | timeout "${INTEROP_WATCHDOG_SECS:-75}" "$zkcli" -server "$server" 2>&1
rc=${PIPESTATUS[1]}
echo "--- exit $rc"
[ "$rc" -eq 124 ] && exit 1
exit 0
