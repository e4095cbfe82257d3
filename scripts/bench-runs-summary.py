#!/usr/bin/env python3
"""Several runs of scripts/bench-side-by-side.sh side by side: for each headline row, ZooKeeper's
and zkr's figure and their ratio in every run, and the median ratio.
    python3 scripts/bench-runs-summary.py target/bench/side-by-side-A.txt B.txt C.txt"""
import statistics
import sys

ROWS = [
    ("read: server CPU per op (µs)", "read", "server_cpu_us_per_op"),
    ("write: server CPU per op (µs)", "write", "server_cpu_us_per_op"),
    ("mixed: server CPU per op (µs)", "mixed", "server_cpu_us_per_op"),
    ("churn: server CPU per re-list (µs)", "churn", "server_cpu_us_per_op"),
    ("read throughput (ops/s)", "read", "ops_per_s"),
    ("write throughput (ops/s)", "write", "ops_per_s"),
    ("mixed throughput (ops/s)", "mixed", "ops_per_s"),
    ("read at half zkr's max: p99 (µs)", "read_half", "lat_p99_us"),
    ("churn: leave, all re-listed p99 (µs)", "churn", "leave_p99_us"),
    ("churn: join, all re-listed p99 (µs)", "churn", "join_p99_us"),
    ("sessions: server CPU (%)", "sessions", "server_cpu_pct"),
    ("fill: RSS per znode (B)", "fill", "rss_bytes_per_znode"),
    ("restart after SIGKILL, 1M nodes (ms)", "restart", "ms"),
]


def load(path):
    res = {}
    for line in open(path):
        if line.startswith("#") or "srv=" not in line:
            continue
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        res.setdefault(kv["bench"], {})[kv["srv"]] = kv
    return res


runs = [load(p) for p in sys.argv[1:]]
print("| measure | " + " | ".join(f"run {i + 1}: ZK / zkr (ratio)" for i in range(len(runs))) + " | median ratio |")
print("|---|" + "---|" * (len(runs) + 1))
for label, bench, key in ROWS:
    cells, ratios = [], []
    for r in runs:
        try:
            zk, zkr = float(r[bench]["zk"][key]), float(r[bench]["zkr"][key])
        except (KeyError, ValueError):
            cells.append("-")
            continue
        ratio = zkr / zk if zk else float("nan")
        ratios.append(ratio)
        cells.append(f"{zk:,.1f} / {zkr:,.1f} ({ratio:.2f}×)")
    med = f"{statistics.median(ratios):.2f}×" if ratios else "-"
    print(f"| {label} | " + " | ".join(cells) + f" | {med} |")
