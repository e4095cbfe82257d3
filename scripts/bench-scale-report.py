#!/usr/bin/env python3
"""Table of a scripts/bench-scale.sh raw file: ZooKeeper and zkr side by side, zkr's ratio to
ZooKeeper and issue 25's goal for it.  Usage: bench-scale-report.py RAW.txt"""
import sys

rows = {}
for line in open(sys.argv[1]):
    if not line.startswith("srv="):
        continue
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    rows[kv["srv"]] = kv


def num(srv, key):
    try:
        return float(rows.get(srv, {})[key])
    except (KeyError, ValueError):
        return None


def member_sum(srv, what):
    vals = [num(srv, f"m{i}_{what}") for i in range(3)]
    vals = [v for v in vals if v is not None]
    return sum(vals) / len(vals) if vals else None


# (label, value getter, unit divisor, goal as max ratio zkr/zk or None)
METRICS = [
    ("connect all sessions and watches, s", lambda s: num(s, "connect_all_secs"), 1, 0.5),
    ("  providers registered, s", lambda s: num(s, "providers_secs"), 1, None),
    ("  consumers connected, s", lambda s: num(s, "consumers_secs"), 1, None),
    ("  watches set, s", lambda s: num(s, "watches_secs"), 1, None),
    ("steady CPU, all members, % of a core", lambda s: num(s, "steady_cpu_pct"), 1, 0.2),
    ("steady RSS per member (mean), MiB", lambda s: member_sum(s, "steady_rss_kb"), 1024, None),
    ("RSS per consumer session, bytes", lambda s: num(s, "rss_bytes_per_session"), 1, 1 / 3),
    ("RSS per watch, bytes", lambda s: num(s, "rss_bytes_per_watch"), 1, 1 / 3),
    ("RSS per provider (session + 10 nodes), bytes", lambda s: num(s, "rss_bytes_per_provider"), 1, None),
    ("steady ping p99, ms", lambda s: num(s, "steady_ping_p99_us"), 1000, None),
    ("rolling release: change to last re-list p50, ms", lambda s: num(s, "release_p50_us"), 1000, None),
    ("rolling release: change to last re-list p99, ms", lambda s: num(s, "release_p99_us"), 1000, 1 / 3),
    ("rolling release: changes timed / unseen", None, 1, None),
    ("rolling release CPU, all members, % of a core", lambda s: num(s, "release_cpu_pct"), 1, None),
    ("rolling release CPU, the loader, % of a core", lambda s: num(s, "release_loader_cpu_pct"), 1, None),
    ("storm: sessions moved", lambda s: num(s, "storm_sessions"), 1, None),
    ("storm: every session back, s", lambda s: num(s, "storm_secs"), 1, 0.5),
    ("storm: re-attach p99, ms", lambda s: num(s, "storm_reconnect_p99_us"), 1000, None),
    ("storm: its handshake alone p99, ms", lambda s: num(s, "storm_handshake_p99_us"), 1000, None),
    ("storm: survivors' ping p99, ms", lambda s: num(s, "storm_ping_p99_us"), 1000, None),
    ("storm: survivors' CPU, % of a core", lambda s: num(s, "storm_cpu_pct"), 1, None),
    ("restarted member serving after, s", lambda s: num(s, "restart_secs"), 1, None),
    ("sessions expired (zkr: must be 0)", lambda s: num(s, "expired"), 1, None),
    ("errors", lambda s: num(s, "errors"), 1, None),
]


def fmt(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


sessions = rows.get("zkr", rows.get("zk", {})).get("sessions", "?")
print(f"registry scale, {sessions} sessions, 3 members each (ratio = zkr / ZooKeeper)")
print(f"{'':52} {'ZooKeeper':>12} {'zkr':>12} {'ratio':>8}  goal")
missed = []
for label, get, div, goal in METRICS:
    if get is None:
        cells = [f"{rows.get(s, {}).get('changes', '-')} / {rows.get(s, {}).get('changes_unseen', '-')}" for s in ("zk", "zkr")]
        print(f"{label:52} {cells[0]:>12} {cells[1]:>12}")
        continue
    zk, zkr = get("zk"), get("zkr")
    zk, zkr = (None if v is None else v / div for v in (zk, zkr))
    ratio = zkr / zk if zk and zkr is not None else None
    g = ""
    if goal is not None:
        g = f"<= {goal:.2f}"
        if ratio is not None:
            ok = ratio <= goal
            g += " met" if ok else " MISSED"
            if not ok:
                missed.append(label.strip())
    print(f"{label:52} {fmt(zk):>12} {fmt(zkr):>12} {fmt(ratio) if ratio is not None else '-':>8}  {g}")
exp = num("zkr", "expired")
if exp is not None and exp > 0:
    missed.append("zkr expired sessions")
print("goals missed: " + (", ".join(missed) if missed else "none"))
