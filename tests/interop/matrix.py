#!/usr/bin/python3
"""The client compatibility matrix: rows written by the interop suites, turned into docs/compatibility.md.

    matrix.py add-row TSV CLIENT SCENARIO FEATURE REF_RC ZKR_RC CMP_RC [DIFF_FILE]
        appends the row of one differential scenario to TSV (and, when the scenario passed, one row
        per documented 3.8-vs-3.9 difference of that scenario from known-differences.json)
    matrix.py generate [--out docs/compatibility.md] [--matrix-dir tests/interop/.work/matrix]
        reads every <suite>.tsv and writes the Markdown matrix; exits 1 if a row differs without a
        documented reason (an entry in known-differences.json whose "matrix" names the row)

Row format (tab-separated, one per line):  client  feature  zookeeper_result  zkr_result  note
A row "matches" when zookeeper_result == zkr_result.
"""

import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KNOWN = os.path.join(HERE, "known-differences.json")


# how the scenario prefixes of tests/interop/run.sh are shown in the matrix
LABELS = {
    "kazoo": "kazoo (python3-kazoo 2.8)",
    "java": "Java client (Debian zookeeper.jar 3.8)",
    "zkcli": "zkCli.sh",
    "zkrcli": "zkr cli (vs-zkcli/*: zkCli.sh and zkr cli, both on ZooKeeper)",
    "curator": "Curator 5 recipes (Debian libcurator-java)",
}


def load_known():
    with open(KNOWN, encoding="utf-8") as f:
        return json.load(f)


def clean(s):
    return " ".join(str(s).replace("\t", " ").split())


def add_row(argv):
    tsv, client, scenario, feature, ref_rc, zkr_rc, cmp_rc = argv[:7]
    diff = argv[7] if len(argv) > 7 else ""
    ref_rc, zkr_rc, cmp_rc = int(ref_rc), int(zkr_rc), int(cmp_rc)
    client = LABELS.get(client, client)
    rows = []
    if ref_rc != 0:
        rows.append((client, feature, "error (exit %d)" % ref_rc, "not compared", "scenario broke on ZooKeeper"))
    elif zkr_rc != 0:
        rows.append((client, feature, "ok", "error (exit %d)" % zkr_rc, "client failed against zkr"))
    elif cmp_rc != 0:
        first = ""
        if diff and os.path.exists(diff):
            with open(diff, encoding="utf-8", errors="replace") as f:
                changed = [x for x in f.read().splitlines() if x[:1] in "+-" and x[:3] not in ("---", "+++")]
            first = changed[0][:200] if changed else ""
        rows.append((client, feature, "ok", "differs", first))
    else:
        rows.append((client, feature, "ok", "ok", ""))
        for k in load_known():
            if k.get("scenario") == scenario and "step" in k:
                m = k.get("matrix") or {}
                zkr = k.get("zkr", {})
                zkr_res = zkr.get("err") if isinstance(zkr, dict) and "err" in zkr else json.dumps(zkr, sort_keys=True)
                rows.append((m.get("client", client), m.get("feature", "%s: %s" % (feature, k["step"])),
                             k.get("zookeeper_key", "?"), zkr_res, "ZooKeeper 3.8 vs 3.9 (checked on both sides)"))
    os.makedirs(os.path.dirname(os.path.abspath(tsv)), exist_ok=True)
    with open(tsv, "a", encoding="utf-8") as f:
        for r in rows:
            f.write("\t".join(clean(x) for x in r) + "\n")
    return 0


# The Dubbo suite's verdicts are zkr's; Debian's ZooKeeper runs beside it as the reference and
# its own failures are reported, not fatal (tests/interop/dubbo/run.sh).
REFERENCE_FAILED = (
    "Debian's ZooKeeper, the reference, failed this check in this run while zkr passed it. Restarted "
    "on a loaded machine, ZooKeeper 3.8 sometimes loses Dubbo's sessions, so their nodes go only at "
    "session expiry (docs/dubbo-interop.md). zkr's result decides the check."
)


REFERENCE_FAILED_ENSEMBLE = (
    "Debian's ZooKeeper ensemble, the reference, failed this check in this run while zkr passed it "
    "(tests/interop/dubbo/ensemble.py prints what each server did). zkr's result decides the check."
)


def reason_for(known, client, feature):
    for k in known:
        m = k.get("matrix")
        if m and m.get("client") == client and m.get("feature") == feature:
            return k.get("why")
        if not m and "step" in k:
            name = k["scenario"].split("/", 1)
            if len(name) == 2 and LABELS.get(name[0], name[0]) == client and feature == "%s: %s" % (name[1], k["step"]):
                return k.get("why")
    return None


def generate(argv):
    out = os.path.join(REPO, "docs", "compatibility.md")
    mdir = os.path.join(HERE, ".work", "matrix")
    i = 0
    while i < len(argv):
        if argv[i] == "--out":
            out = argv[i + 1]
            i += 2
        elif argv[i] == "--matrix-dir":
            mdir = argv[i + 1]
            i += 2
        else:
            sys.stderr.write(__doc__)
            return 2
    known = load_known()
    files = sorted(glob.glob(os.path.join(mdir, "*.tsv")))
    if not files:
        sys.stderr.write("matrix.py: no *.tsv in %s (run the interop suites first)\n" % mdir)
        return 1
    by_client = {}
    bad = []
    n = 0
    for path in files:
        suite = os.path.basename(path)[:-4]
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line.strip():
                    continue
                parts = line.split("\t")
                if len(parts) < 4:
                    bad.append("%s:%d: malformed row %r" % (path, lineno, line))
                    continue
                client, feature, zk, zkr = parts[:4]
                note = parts[4] if len(parts) > 4 else ""
                same = zk == zkr
                why = None if same else reason_for(known, client, feature)
                if not same and not why and suite.startswith("dubbo") and (zk, zkr) == ("fail", "pass"):
                    why = REFERENCE_FAILED_ENSEMBLE if suite.startswith("dubbo-ensemble") else REFERENCE_FAILED
                if not same and not why:
                    bad.append("%s | %s: ZooKeeper %r, zkr %r, no documented reason (%s)" % (client, feature, zk, zkr, note))
                by_client.setdefault(client, []).append((feature, zk, zkr, same, why, note, suite))
                n += 1
    diffs = [(c, r) for c, rows in by_client.items() for r in rows if not r[3]]
    lines = [
        "# Client compatibility matrix",
        "",
        "Generated by `tests/interop/matrix.py` from the rows the interop suites wrote in this run",
        "(`tests/interop/.work/matrix/*.tsv`: %s). Do not edit by hand; see README \"Client compatibility\"." %
        ", ".join("`%s`" % os.path.basename(p) for p in files),
        "",
        "Every row ran the same client code against Debian's Apache ZooKeeper 3.8 (the zab suite's rows: through ZooKeeper's own observer of a 3.8 or 3.9.5 ensemble) and against zkr.",
        "`ok` means the scenario ran and (on the zkr side) its normalised transcript equals ZooKeeper's;",
        "kazoo's own test suite rows give pass counts per test module. %d rows, %d clients, %d differences,"
        % (n, len(by_client), len(diffs)),
        "every one of them documented below (the generator fails otherwise).",
        "",
        "**Reply order.** ZooKeeper answers each session's requests in the order they were sent, whatever",
        "their kind, and delivers a watch event before the reply to any later request; clients depend on it",
        "(kazoo drops the connection on \"xids do not match\", the Java client on \"Xid out of order\").",
        "The rows above do not show it (most clients wait for each reply), so it is checked apart:",
        "`tests/pipelined.rs` pipelines seeded random mixes of every request kind (create, delete, setData,",
        "getData/exists/getChildren with and without watches, multi, multiRead, sync, check, setWatches,",
        "addWatch, removeWatches, auth) with values up to jute.maxbuffer from one and several raw sessions,",
        "on a standalone server, a leader, a follower and an observer, and checks every reply's xid, error",
        "code and the exact watch events before it against a model; the same test runs against ZooKeeper",
        "3.9.5 (Maven Central) to keep the model honest. A sync waits for every earlier request of its",
        "session on every member kind. In the fault suite (`tests/faults`), the `reply-order` workload",
        "pipelines bursts from raw sessions while leaders are killed, paused and partitioned away, and",
        "counts a reply out of order, or a connection lost while no fault was in force, as a violation.",
        "",
    ]
    for client in sorted(by_client):
        rows = by_client[client]
        # the zab suite's clients name the ZooKeeper they ran against; every other row is 3.8's
        reference = "ZooKeeper 3.9.5" if "ZooKeeper 3.9.5" in client else "ZooKeeper 3.8"
        lines += ["## %s" % client, "", "| feature | %s | zkr | |" % reference, "|---|---|---|---|"]
        for feature, zk, zkr, same, why, note, suite in rows:
            mark = "same" if same else "**differs** (see below)"
            lines.append("| %s | %s | %s | %s |" % (md(feature), md(zk), md(zkr), mark))
        lines.append("")
    lines += ["## Differences and why they stay", ""]
    if not diffs:
        lines.append("None.")
    for client, (feature, zk, zkr, same, why, note, suite) in diffs:
        lines.append("- **%s / %s** — ZooKeeper: `%s`, zkr: `%s`. %s" % (client, md(feature), zk, zkr, why or "UNDOCUMENTED"))
    lines.append("")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("matrix: %d rows from %d files -> %s" % (n, len(files), out))
    if bad:
        for b in bad:
            print("UNDOCUMENTED DIFFERENCE: " + b)
        print("%d passed, %d failed" % (n - len(bad), len(bad)))
        return 1
    return 0


def md(s):
    return str(s).replace("|", "\\|")


def main(argv):
    if argv[:1] == ["add-row"] and len(argv) >= 8:
        return add_row(argv[1:])
    if argv[:1] == ["generate"]:
        return generate(argv[1:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
