#!/usr/bin/python3
"""Operations checks: zkr's four-letter words and AdminServer JSON against Debian's ZooKeeper
3.8 (same workload on both, answers normalised and compared: structure, keys and order must
match, values may differ), then zkr-only checks that values move: Prometheus /metrics read by
prometheus_client's parser, zktop's parser reading `stat`, counter resets.

Usage: check.py ZK_HOST:PORT ZK_ADMIN_PORT ZKR_HOST:PORT ZKR_ADMIN_PORT
Prints PASS/FAIL lines; exit status 1 if any failed.
"""
import json
import re
import socket
import sys
import time
import urllib.request

from kazoo.client import KazooClient

FAILED = []


def check(name, ok, detail=""):
    if ok:
        print(f"PASS {name}")
    else:
        print(f"FAIL {name}: {detail}")
        FAILED.append(name)


def flw(addr, word):
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(word.encode())
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    return out.decode()


def admin(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read().decode()


JAVA_DATE = re.compile(r"[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d [A-Z]+ \d{4}")


def norm(text):
    """Values out, structure in: versions, dates, addresses, hex and numbers become tokens."""
    text = re.sub(r"(Zookeeper version: |zk_version\t|zookeeper.version=)[^\n]*", r"\1V", text)
    text = JAVA_DATE.sub("DATE", text)
    text = re.sub(r"/127\.0\.0\.1:\d+", "/ADDR", text)
    text = re.sub(r"0x[0-9a-f]+", "0xH", text)
    text = re.sub(r"-?\d+(\.\d+)?", "N", text)
    return text


PER_NAMESPACE = re.compile(r"(?m)^zk_\w+_per_namespace\t.*\n")


def keys_of(text, sep):
    return [line.split(sep, 1)[0] for line in text.splitlines() if line.strip()]


def shape(v):
    """The JSON structure: key order, nesting and value kinds."""
    if isinstance(v, dict):
        # Maps keyed by session ids, times or paths: only the shape of an entry counts.
        if v and all(re.fullmatch(r"-?\d+|/.*", k) for k in v):
            # An emptied expiry bucket ([]) lingers until due in both servers, a timing detail.
            entries = [x for x in v.values() if x != []] or list(v.values())
            return {"<key>": shape(entries[0])}
        # ZooKeeper 3.8 adds *_per_namespace summaries for each top-level znode touched;
        # zkr does not keep them (a documented difference).
        return {k: shape(x) for k, x in v.items() if not k.endswith("_per_namespace")}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if v is None:
        return "null"
    return "string"


def workload(addr):
    """A session with an ephemeral and data/child/exists watches, kept open."""
    zk = KazooClient(hosts=addr, timeout=10)
    zk.start(timeout=20)
    zk.ensure_path("/ops")
    zk.create("/ops/e", b"y", ephemeral=True)
    zk.get("/ops", watch=lambda e: None)
    zk.get_children("/ops", watch=lambda e: None)
    zk.exists("/nope", watch=lambda e: None)
    return zk


def main():
    zk_addr, zk_admin, zkr_addr, zkr_admin = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    clients = [workload(zk_addr), workload(zkr_addr)]
    # -------------------------------------------------- four-letter words, side by side
    answers = {}
    for word in ["ruok", "isro", "srvr", "stat", "cons", "wchs", "wchc", "wchp", "dump", "conf", "dirs", "envi", "mntr"]:
        answers[word] = (flw(zk_addr, word), flw(zkr_addr, word))
    for word in ["ruok", "isro"]:
        zk, zkr = answers[word]
        check(f"4lw/{word} same answer", zk == zkr, f"zk={zk!r} zkr={zkr!r}")
    for word in ["srvr", "stat", "wchs", "dirs"]:
        zk, zkr = answers[word]
        check(f"4lw/{word} same structure", norm(zk) == norm(zkr), f"\n--- zk\n{zk}\n--- zkr\n{zkr}")
    # ZooKeeper lists connections in hash order (NIOServerCnxnFactory's key set): each line's
    # structure must match, the order of the lines need not.
    zk, zkr = answers["cons"]
    same = sorted(norm(zk).splitlines()) == sorted(norm(zkr).splitlines())
    check("4lw/cons same structure", same, f"\n--- zk\n{zk}\n--- zkr\n{zkr}")
    # ZooKeeper lists watches in hash order; compare the lines as multisets.
    for word in ["wchc", "wchp"]:
        zk, zkr = answers[word]
        check(f"4lw/{word} same lines", sorted(norm(zk).splitlines()) == sorted(norm(zkr).splitlines()),
              f"\n--- zk\n{zk}\n--- zkr\n{zkr}")
    zk, zkr = (PER_NAMESPACE.sub("", t) for t in answers["mntr"])
    check("4lw/mntr same keys in the same order", keys_of(zk, "\t") == keys_of(zkr, "\t"),
          set(keys_of(zk, "\t")) ^ set(keys_of(zkr, "\t")))
    check("4lw/mntr same value kinds", norm(zk) == norm(zkr), "")
    for word, sep in [("conf", "="), ("envi", "=")]:
        zk, zkr = answers[word]
        check(f"4lw/{word} same keys", keys_of(zk, sep) == keys_of(zkr, sep), f"zk={keys_of(zk, sep)} zkr={keys_of(zkr, sep)}")
    # dump: ZooKeeper keeps empty expiry buckets around for a while; compare without them.
    # (Before `norm`, which turns the 0 into N.)
    zk, zkr = (norm(re.sub(r"(?m)^0 expire at [^\n]*:\n", "", t)) for t in answers["dump"])
    zk, zkr = (re.sub(r"Sets \(N\)/\(N\)", "Sets", t) for t in (zk, zkr))
    # ZooKeeper's NIO connection buckets are its own clock; compare the ephemeral part exactly
    # and the rest line by line as shapes.
    check("4lw/dump sessions and ephemerals", zk.split("Connections dump:")[0] == zkr.split("Connections dump:")[0],
          f"\n--- zk\n{zk}\n--- zkr\n{zkr}")
    zk_lines = set(zk.split("Connections dump:")[1].splitlines())
    zkr_lines = set(zkr.split("Connections dump:")[1].splitlines())
    check("4lw/dump connection lines", zkr_lines <= zk_lines, f"zkr has {zkr_lines - zk_lines}")
    check("4lw/wchc lists the session's data watches",
          re.fullmatch(r"0x[0-9a-f]+\n\t/nope\n\t/ops\n\n", answers["wchc"][1]) is not None, repr(answers["wchc"][1]))

    # -------------------------------------------------- AdminServer JSON, side by side
    for cmd in ["ruok", "server_stats", "srvr", "stats", "monitor", "connections", "configuration", "environment",
                "dirs", "dump", "watch_summary", "watches", "watches_by_path", "is_read_only", "stat_reset",
                "connection_stat_reset", "nosuch"]:
        zs, _, zb = admin(zk_admin, f"/commands/{cmd}")
        rs, rtype, rb = admin(zkr_admin, f"/commands/{cmd}")
        zj, rj = json.loads(zb), json.loads(rb)
        check(f"admin/{cmd} status and type", zs == rs and rtype.startswith("application/json"), f"{zs} {rs} {rtype}")
        check(f"admin/{cmd} same JSON shape", shape(zj) == shape(rj), f"\n--- zk\n{zb}\n--- zkr\n{rb}")
    _, _, rb = admin(zkr_admin, "/commands/watches_by_path")
    paths = json.loads(rb)["path_to_session_ids"]
    check("admin/watches_by_path lists data watches", sorted(paths) == ["/nope", "/ops"], paths)
    _, _, rb = admin(zkr_admin, "/commands/dump")
    eph = json.loads(rb)["session_id_to_ephemeral_paths"]
    check("admin/dump lists the ephemeral", list(eph.values()) == [["/ops/e"]], eph)
    sid = clients[1].client_id[0]
    check("admin/dump keys the session id", list(eph.keys()) == [str(sid)], f"{eph} vs {sid}")
    _, _, zidx = admin(zk_admin, "/commands")
    _, _, ridx = admin(zkr_admin, "/commands")
    links = re.findall(r'<a href="/commands/(\w+)">\1</a>\n<br/>\n', ridx)
    # snapshot and restore are ZooKeeper 3.9's backup commands (issue 39): Debian's 3.8 lacks them.
    zk39 = {"snapshot", "restore"}
    check("admin/commands index lists zkr's commands as links",
          len(links) >= 15 and set(links) <= set(re.findall(r'/commands/(\w+)"', zidx)) | zk39, ridx)

    # -------------------------------------------------- zkr: values move and reset
    zkr = clients[1]
    before = dict(line.split("\t", 1) for line in flw(zkr_addr, "mntr").splitlines())
    metrics_before = metrics(zkr_admin)
    n = 20
    for i in range(n):
        zkr.create(f"/ops/c{i}", b"v")
    after = dict(line.split("\t", 1) for line in flw(zkr_addr, "mntr").splitlines())
    metrics_after = metrics(zkr_admin)
    check("mntr/znode count grows by N", int(after["zk_znode_count"]) == int(before["zk_znode_count"]) + n,
          f'{before["zk_znode_count"]} -> {after["zk_znode_count"]}')
    check("mntr/packets grow", int(after["zk_packets_received"]) >= int(before["zk_packets_received"]) + n
          and int(after["zk_packets_sent"]) >= int(before["zk_packets_sent"]) + n, "")
    check("mntr/update latency counts the creates",
          int(after["zk_cnt_updatelatency"]) >= int(before["zk_cnt_updatelatency"]) + n, "")
    check("mntr/fsync counted", int(after["zk_cnt_fsynctime"]) > int(before["zk_cnt_fsynctime"]), "")
    check("mntr/ephemerals and watches", after["zk_ephemerals_count"] == "1" and int(after["zk_watch_count"]) >= 1,
          f'{after["zk_ephemerals_count"]} {after["zk_watch_count"]}')
    creates = lambda m: sum(m.get(("zkr_request_latency_seconds_count", (("op", op),)), 0) for op in ("create", "create2"))
    check("metrics/create latency histogram count grows by N", creates(metrics_after) - creates(metrics_before) == n,
          f"{creates(metrics_before)} -> {creates(metrics_after)}")
    check("metrics/znode_count gauge grows by N",
          metrics_after[("znode_count", ())] - metrics_before[("znode_count", ())] == n, "")
    check("metrics/fsync histogram moves",
          metrics_after[("zkr_fsync_seconds_count", ())] > metrics_before[("zkr_fsync_seconds_count", ())], "")
    check("metrics/sessions gauge", metrics_after[("global_sessions", ())] >= 1, "")
    check("metrics/log size gauge", metrics_after[("zkr_log_dir_size_bytes", ())] > 0, "")
    inf = metrics_after.get(("zkr_request_latency_seconds_bucket", (("le", "+Inf"), ("op", "create")))) or \
        metrics_after.get(("zkr_request_latency_seconds_bucket", (("op", "create"), ("le", "+Inf"))))
    check("metrics/+Inf bucket equals count", inf == metrics_after.get(("zkr_request_latency_seconds_count", (("op", "create"),))),
          inf)

    srvr = flw(zkr_addr, "srvr")
    check("srst resets", flw(zkr_addr, "srst") == "Server stats reset.\n", "")
    srvr2 = flw(zkr_addr, "srvr")
    received = lambda t: int(re.search(r"Received: (\d+)", t).group(1))
    check("srst resets packet counts", received(srvr2) < received(srvr), f"{received(srvr)} -> {received(srvr2)}")
    cons = flw(zkr_addr, "cons")
    check("cons shows the last op and cxid", re.search(r",lop=CREA,est=\d+,to=\d+,lcxid=0x[0-9a-f]+,", cons) is not None, cons)
    check("crst resets", flw(zkr_addr, "crst") == "Connection stats reset.\n", "")
    cons = flw(zkr_addr, "cons")
    check("crst resets connection stats", ",lop=NA," in cons and "lcxid" not in cons
          and "lzxid=0xffffffffffffffff" in cons, cons)

    # -------------------------------------------------- zktop's parser reading `stat`
    import zktop
    import optparse
    zktop.options = optparse.Values({"timeout": 10, "fix_330": False})
    srv = zktop.ZKServer(zkr_addr, 0)
    check("zktop/reads stat", not srv.unavailable and srv.version == "3.9.0" and srv.mode == "standalone",
          vars(srv))
    check("zktop/parses sessions", len(srv.sessions) >= 2 and all(hasattr(s, "recved") for s in srv.sessions),
          [vars(s) for s in srv.sessions])
    check("zktop/node count", int(getattr(srv, "node_count", -1)) == int(after["zk_znode_count"]), vars(srv))
    for c in clients:
        c.stop()
    return 1 if FAILED else 0


def metrics(port):
    """Every sample of /metrics, parsed by the official Prometheus client's text parser."""
    from prometheus_client.parser import text_string_to_metric_families
    status, ctype, body = admin(port, "/metrics")
    out = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


if __name__ == "__main__":
    sys.exit(main())
