#!/usr/bin/env python3
"""Turns target/bench/cost-curve.txt (from scripts/bench-cost-curve.sh) into a markdown table
and a PNG:  bench-cost-plot.py RESULTS TABLE.md PLOT.png  (needs matplotlib: pip install matplotlib)"""
import sys

src, table, png = sys.argv[1:4]
rows, header = [], []
for line in open(src):
    if line.startswith("#"):
        header.append(line.strip())
        continue
    rows.append(dict(p.split("=", 1) for p in line.split() if "=" in p))


def pick(axis, bench):
    return [(int(r["value"]), r) for r in rows if r["axis"] == axis and r["bench"] == bench]


def f(r, k, scale=1.0):
    try:
        return float(r[k]) / scale
    except (KeyError, ValueError):
        return float("nan")


out = ["# zkr cost curve", "", "Produced by `scripts/bench-cost-curve.sh`; plot: `cost-curve.png`.", ""]
out += [f"    {h}" for h in header] + [""]
out += ["## With znodes (400-byte Dubbo provider names, one directory)", "",
        "| znodes | fill creates/s | RSS after fill | RSS per znode | getData+exists ops/s (random keys) | read p99 | provider leave, all re-listed p99 |",
        "|---|---|---|---|---|---|---|"]
zn = {}
for v, r in pick("znodes", "fill"):
    zn.setdefault(v, {})["fill"] = r
for v, r in pick("znodes", "read"):
    zn.setdefault(v, {})["read"] = r
for v, r in pick("znodes", "churn"):
    zn.setdefault(v, {})["churn"] = r
for v in sorted(zn):
    d = zn[v]
    fl, rd, ch = d.get("fill", {}), d.get("read", {}), d.get("churn", {})
    out.append(f"| {v:,} | {f(fl, 'ops_per_s'):,.0f} | {f(fl, 'server_rss_kb', 1024):,.1f} MB | {f(fl, 'rss_bytes_per_znode'):,.0f} B "
               f"| {f(rd, 'ops_per_s'):,.0f} | {f(rd, 'lat_p99_us', 1000):,.2f} ms | {f(ch, 'leave_p99_us', 1000):,.2f} ms |")
out += ["", "## With watchers (child watches: consumers × providers directories; 4 providers per directory)", "",
        "| watches | consumers × dirs | changes seen | errors | provider leave, all re-listed p50 | p99 | provider join p99 |", "|---|---|---|---|---|---|---|"]
for v, r in sorted(pick("watchers", "churn"), key=lambda x: x[0]):
    out.append(f"| {v:,} | {r['consumers']} × {r['interfaces']} | {r['changes']} | {r['errors']} | {f(r, 'leave_p50_us', 1000):,.2f} ms | {f(r, 'leave_p99_us', 1000):,.2f} ms | {f(r, 'join_p99_us', 1000):,.2f} ms |")
out += ["", "## With sessions (each pinging every 10 s, as the Java client does with a 30 s timeout)", "",
        "| sessions | server CPU | server RSS | RSS per session | ping p99 |", "|---|---|---|---|---|"]
for v, r in sorted(pick("sessions", "sessions"), key=lambda x: x[0]):
    out.append(f"| {v:,} | {f(r, 'server_cpu_pct'):.1f} % of a core | {f(r, 'server_rss_kb', 1024):,.1f} MB | {f(r, 'rss_bytes_per_session'):,.0f} B | {f(r, 'ping_p99_us', 1000):,.2f} ms |")
open(table, "w").write("\n".join(out) + "\n")
print("\n".join(out))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(1, 3, figsize=(15, 4.5))
zs = sorted(zn)
a = ax[0]
a.plot(zs, [f(zn[v].get("read", {}), "ops_per_s") for v in zs], "o-", label="reads/s (getData+exists)")
a.plot(zs, [f(zn[v].get("fill", {}), "ops_per_s") for v in zs], "s-", label="creates/s (fill)")
a.set_xscale("log"); a.set_xlabel("znodes"); a.set_ylabel("ops/s"); a.set_title("throughput and memory vs znodes")
b = a.twinx()
b.plot(zs, [f(zn[v].get("fill", {}), "rss_bytes_per_znode") for v in zs], "^--", color="gray", label="RSS bytes per znode")
b.set_ylabel("RSS bytes per znode")
a.legend(loc="upper left", fontsize=8); b.legend(loc="lower right", fontsize=8)
ws = sorted(pick("watchers", "churn"), key=lambda x: x[0])
a = ax[1]
a.plot([v for v, _ in ws], [f(r, "leave_p50_us", 1000) for _, r in ws], "o-", label="p50")
a.plot([v for v, _ in ws], [f(r, "leave_p99_us", 1000) for _, r in ws], "s-", label="p99")
a.set_xscale("log"); a.set_yscale("log"); a.set_xlabel("child watches"); a.set_ylabel("ms")
a.set_title("provider leaves: until all consumers re-listed"); a.legend(fontsize=8)
ss = sorted(pick("sessions", "sessions"), key=lambda x: x[0])
a = ax[2]
a.plot([v for v, _ in ss], [f(r, "server_cpu_pct") for _, r in ss], "o-", label="server CPU % of a core")
a.set_xscale("log"); a.set_xlabel("sessions (pinging every 10 s)"); a.set_ylabel("CPU %"); a.set_title("sessions")
b = a.twinx()
b.plot([v for v, _ in ss], [f(r, "server_rss_kb", 1024) for _, r in ss], "^--", color="gray", label="RSS MB")
b.set_ylabel("RSS MB")
a.legend(loc="upper left", fontsize=8); b.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(png, dpi=100)
print(f"wrote {table} and {png}")
