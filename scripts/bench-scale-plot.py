#!/usr/bin/env python3
"""Turns target/bench/scale-curve.txt (scripts/bench-scale-curve.sh) into docs/scale-curve.md and
a PNG: steady CPU and RSS of a 3-member ensemble against sessions and against watches, ZooKeeper
and zkr.  Usage: bench-scale-plot.py RAW TABLE.md PLOT.png  (the PNG needs matplotlib)"""
import sys

src, table, png = sys.argv[1:4]
header, rows = [], []
for line in open(src):
    if line.startswith("#"):
        header.append(line.strip())
        continue
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    if kv.get("bench") == "scale" and "steady_cpu_pct" in kv:
        rows.append(kv)


def f(r, k, scale=1.0):
    try:
        return float(r[k]) / scale
    except (KeyError, ValueError):
        return float("nan")


def rss_mb(r):
    return sum(f(r, f"m{i}_steady_rss_kb") for i in range(3)) / 1024


NAMES = {"zk": "ZooKeeper 3.8", "zkr": "zkr"}
out = ["# Registry cost curve: 3-member ensembles, ZooKeeper and zkr", "",
       "Produced by `scripts/bench-scale-curve.sh` (each point: `scripts/bench-scale.sh --no-storm` on",
       "fresh ensembles, no release); plot: `scale-curve.png`. CPU is the three members' sum over the",
       "steady window (pings only, every session at a third of its 30 s timeout); RSS is the three",
       "members' sum after it. Sessions spread evenly over the members; 1,000 services with 10",
       "providers each; the rest are consumers watching W services' providers directories.", ""]
# The run's own header, and each point the open-file limit cut (asked for more than it ran).
cut = [h for h in header if h.startswith("# point") and h.split("asked=")[-1] != h.split("sessions=")[1].split()[0]]
out += [f"    {h}" for h in header if not h.startswith("# point")] + [f"    {h} (cut by the open-file limit)" for h in cut] + [""]
out += ["| sessions | watches | server | connect all | steady CPU | RSS (3 members) | per session | per watch |",
        "|---|---|---|---|---|---|---|---|"]
seen = set()
for r in sorted(rows, key=lambda r: (int(r["sessions"]), int(r["watches"]), r["srv"])):
    key = (r["sessions"], r["watches"], r["srv"])
    if key in seen:
        continue
    seen.add(key)
    out.append(f"| {int(r['sessions']):,} | {int(r['watches']):,} | {NAMES.get(r['srv'], r['srv'])} | {f(r, 'connect_all_secs'):.1f} s "
               f"| {f(r, 'steady_cpu_pct'):.1f} % of a core | {rss_mb(r):,.0f} MB | {f(r, 'rss_bytes_per_session'):,.0f} B "
               f"| {f(r, 'rss_bytes_per_watch'):,.0f} B |")


def fit(points):
    """Least squares y = a + b*x; None with fewer than two distinct x."""
    if len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return my - b * mx, b


# For a reader sizing a deployment: per member, what a fixed part and each 10,000 sessions cost
# (a straight line through the sessions axis; each member holds a third of the sessions).
guide = []
for srv in ("zk", "zkr"):
    pts = [r for r in rows if r["srv"] == srv and r.get("axis") == "sessions"]
    per_member = [int(r["sessions"]) / 3 for r in pts]
    cpu = fit([(s, f(r, "steady_cpu_pct") / 3) for s, r in zip(per_member, pts)])
    rss = fit([(s, rss_mb(r) / 3) for s, r in zip(per_member, pts)])
    if cpu and rss:
        guide.append(f"| {NAMES[srv]} | {cpu[0]:.1f} % + {cpu[1] * 1e4:.2f} % of a core | {rss[0]:,.0f} MB + {rss[1] * 1e4:,.0f} MB |")
if guide:
    out += ["", "## Sizing a member", "",
            "A straight line through the sessions axis, per member (each holds a third of the sessions;",
            "10 watches per consumer, pings at a third of a 30 s timeout): a fixed part plus what each",
            "10,000 sessions connected to that member add.", "",
            "| server | steady CPU | RSS |", "|---|---|---|"] + guide
open(table, "w").write("\n".join(out) + "\n")

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is missing (pip install matplotlib): wrote the table only", file=sys.stderr)
    sys.exit(0)

fig, ax = plt.subplots(2, 2, figsize=(11, 8))
for srv, style in (("zk", "o--"), ("zkr", "s-")):
    by_s = sorted({int(r["sessions"]): r for r in rows if r["srv"] == srv and r.get("axis") == "sessions"}.items())
    # The watches axis: every point at the watches axis's session count, whichever axis ran it.
    at = {int(r["sessions"]) for r in rows if r.get("axis") == "watches"}
    by_w = sorted({int(r["watches"]): r for r in rows if r["srv"] == srv and int(r["sessions"]) in at}.items())
    if by_s:
        xs = [s for s, _ in by_s]
        ax[0][0].plot(xs, [f(r, "steady_cpu_pct") for _, r in by_s], style, label=NAMES[srv])
        ax[0][1].plot(xs, [rss_mb(r) for _, r in by_s], style, label=NAMES[srv])
    if by_w:
        xs = [w for w, _ in by_w]
        ax[1][0].plot(xs, [f(r, "steady_cpu_pct") for _, r in by_w], style, label=NAMES[srv])
        ax[1][1].plot(xs, [rss_mb(r) for _, r in by_w], style, label=NAMES[srv])
titles = [["steady CPU vs sessions", "RSS vs sessions"], ["steady CPU vs watches", "RSS vs watches"]]
ylabels = ["% of a core (3 members)", "MB (3 members)"]
for i in range(2):
    for j in range(2):
        a = ax[i][j]
        a.set_title(titles[i][j])
        a.set_xlabel("sessions" if i == 0 else "child watches")
        a.set_ylabel(ylabels[j])
        a.grid(True, alpha=0.3)
        a.legend()
fig.tight_layout()
fig.savefig(png, dpi=90)
