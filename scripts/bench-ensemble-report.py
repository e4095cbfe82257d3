#!/usr/bin/env python3
"""Prints the ensemble side-by-side table (ZooKeeper, zkr, ratio, issue #12 target) from the raw
lines written by scripts/bench-ensemble.sh:  srv=<zk|zkr> bench=<workload> key=value ..."""
import sys

res = {}
kills = {"zk": [], "zkr": []}
pauses = {"zk": [], "zkr": []}
summary = {}
lost_lines = []
header = []
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("#"):
        header.append(line)
        continue
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    srv, bench = kv.get("srv"), kv.get("bench")
    if bench == "pause":
        pauses[srv].append(kv)
        continue
    if bench == "failover":
        if "kill" in kv:
            kills[srv].append(kv)
        elif " summary " in f" {line} ":
            summary[srv] = kv
        elif "LOST" in line:
            lost_lines.append(line)
        continue
    res.setdefault(bench, {})[srv] = kv


def get(bench, srv, key):
    try:
        return float(res[bench][srv][key])
    except (KeyError, ValueError):
        return None


def cpu_us_per_op(bench, srv):
    direct = get(bench, srv, "server_cpu_us_per_op")
    if direct is not None:
        return direct
    cpu, ops = get(bench, srv, "server_cpu_pct"), get(bench, srv, "ops_per_s")
    if cpu is None or not ops:
        return None
    return cpu / 100 * 1e6 / ops


def pct(values, p):
    """Nearest-rank percentile; None if empty or any value is missing (-1)."""
    if not values or any(v < 0 for v in values):
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p / 100 * len(v) + 0.5)) - 1))]


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "ms_from_us":
        return f"{v / 1000:,.2f} ms"
    if unit == "ms":
        return f"{v:,.0f} ms"
    if unit == "us":
        return f"{v:,.1f} µs"
    return f"{v:,.0f}" + (f" {unit}" if unit else "")


rows = []  # (label, zk, zkr, unit, target)
for label, bench, key, unit, target in [
    ("write throughput (ops/s)", "write", "ops_per_s", "", ("ratio>=", 2)),
    ("write p99 latency, closed loop", "write", "lat_p99_us", "ms_from_us", None),
    ("read throughput over 3 members (ops/s)", "read", "ops_per_s", "", ("ratio>=", 3)),
    ("read p99 latency, closed loop", "read", "lat_p99_us", "ms_from_us", None),
    ("churn: provider leaves, all re-listed p99", "churn", "leave_p99_us", "ms_from_us", None),
    ("churn: provider joins, all re-listed p99", "churn", "join_p99_us", "ms_from_us", None),
]:
    rows.append((label, get(bench, "zk", key), get(bench, "zkr", key), unit, target))
for bench in ("write", "read", "churn"):
    rows.append((f"{bench}: members' CPU per op", cpu_us_per_op(bench, "zk"), cpu_us_per_op(bench, "zkr"), "us", None))
for key, label in (("writes_back_ms", "writes succeed again"), ("sessions_back_ms", "every session connected again")):
    for p in (50, 99):
        vals = {s: [float(k[key]) for k in kills[s]] for s in kills}
        target = ("ratio<=", 0.5) if p == 50 else None
        rows.append((f"failover: {label}, p{p} of {len(vals['zkr'])} kills", pct(vals["zk"], p), pct(vals["zkr"], p),
                     "ms", target))
if pauses["zk"] or pauses["zkr"]:
    def resumed(s):
        v = [float(k["resumed_ms"]) if k.get("resumed_ms", "none") != "none" else -1 for k in pauses[s]]
        return pct(v, 50)
    n = max(len(pauses["zk"]), len(pauses["zkr"]))
    rows.append((f"leader SIGSTOP 20 s: follower's writes acknowledged again, p50 of {n}", resumed("zk"),
                 resumed("zkr"), "ms", ("ratio<=", 0.5)))
    exp = {s: (sum(int(k.get("expired", "0") == "1") for k in pauses[s]) if pauses[s] else None) for s in pauses}
    rows.append(("leader SIGSTOP 20 s: sessions expired", exp["zk"], exp["zkr"], "", ("zkr==", 0)))
for key, label in (("expired", "failover: sessions expired"), ("lost", "failover: acknowledged writes lost")):
    z = summary.get("zk", {}).get(key)
    r = summary.get("zkr", {}).get(key)
    rows.append((label, float(z) if z is not None else None, float(r) if r is not None else None, "", ("zkr==", 0)))

print("\n".join(header))
print()
print("| figure | ZooKeeper 3.8 ensemble | zkr ensemble | zkr / ZooKeeper | target | met |")
print("|---|---|---|---|---|---|")
for label, zk, zkr, unit, target in rows:
    ratio = zkr / zk if zk and zkr is not None else None
    met = ""
    if target:
        kind, bound = target
        if kind == "ratio>=" and ratio is not None:
            met = "yes" if ratio >= bound else "no"
        elif kind == "ratio<=" and ratio is not None:
            met = "yes" if ratio <= bound else "no"
        elif kind == "zkr==" and zkr is not None:
            met = "yes" if zkr == bound else "no"
    tgt = "" if not target else {"ratio>=": "≥ {}×", "ratio<=": "≤ {}×", "zkr==": "zkr = {}"}[target[0]].format(
        round(target[1], 2))
    print(f"| {label} | {fmt(zk, unit)} | {fmt(zkr, unit)} | {'-' if ratio is None else f'{ratio:.2f}×'} | {tgt} | {met} |")
for s in ("zk", "zkr"):
    if kills[s]:
        print(f"\n{s} kills: " + "; ".join(
            f"writes {k['writes_back_ms']} ms, sessions {k['sessions_back_ms']} ms ({k['disconnected']} disconnected)"
            for k in kills[s]))
for line in lost_lines:
    print("LOST: " + line)
