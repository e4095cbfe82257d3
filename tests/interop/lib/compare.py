#!/usr/bin/python3
"""Normalise interop transcripts and compare them.

    compare.py --format json|zkcli REFERENCE CANDIDATE   # exit 0 same, 1 differ
    compare.py --format json|zkcli --show FILE            # print normalised form

json  : one JSON value per line (kazoo and Java scenarios).
zkcli : raw zkCli.sh output (stdout+stderr).

What is normalised (everything else must match byte for byte):
  * zxids (keys czxid/mzxid/pzxid/zxid, zkCli cZxid/mZxid/pZxid lines) are
    replaced by their rank among the distinct zxids of the transcript
    (z1 < z2 < ...), so equality and ordering between them is still
    checked, but not absolute values or gaps.
  * session ids (keys ephemeralOwner/session_id, zkCli ephemeralOwner) are
    replaced by s1, s2, ... in order of first appearance; 0 stays 0.
  * ctime/mtime are dropped; a stat that carries both gets "mtime>=ctime".
  * lists under a "children" key are sorted (ZooKeeper returns children in
    hash-set order); so are lists under "events_unordered" (the scenario
    says the order is not defined).
  * zkCli: log noise, prompts, blank lines and "WATCHER::" lines are
    dropped; "[a, b]" lists and runs of "/path" lines (ls -R) are sorted;
    "WatchedEvent ..." lines are taken out of the command output (they are
    printed by another thread, interleaving is arbitrary) and appended in
    their own order at the end; the "state:Closed" event printed while the
    JVM exits after "quit" is dropped; whoami's "scheme: id" lines are
    sorted (ZooKeeper keeps auth ids in a hash set).
"""

import difflib
import json
import re
import sys

ZXID_KEYS = {"czxid", "mzxid", "pzxid", "zxid", "last_zxid"}
SESSION_KEYS = {"ephemeralOwner", "session_id", "sessionId"}
SORTED_LIST_KEYS = {"children", "events_unordered", "ephemerals"}


class Mapper:
    def __init__(self):
        self.zxids = set()
        self.sessions = []

    def see_zxid(self, v):
        if isinstance(v, int) and v > 0:
            self.zxids.add(v)

    def see_session(self, v):
        if isinstance(v, int) and v != 0 and v not in self.sessions:
            self.sessions.append(v)

    def freeze(self):
        self.zrank = {z: i + 1 for i, z in enumerate(sorted(self.zxids))}

    def zxid(self, v):
        if isinstance(v, int):
            if v == 0:
                return "z0"
            if v in self.zrank:
                return "z%d" % self.zrank[v]
        return v

    def session(self, v):
        if isinstance(v, int) and v != 0 and v in self.sessions:
            return "s%d" % (self.sessions.index(v) + 1)
        return v


# ------------------------------------------------------------------ json

def _scan(v, m):
    if isinstance(v, dict):
        for k, x in v.items():
            if k in ZXID_KEYS:
                m.see_zxid(x)
            elif k in SESSION_KEYS:
                m.see_session(x)
            else:
                _scan(x, m)
    elif isinstance(v, list):
        for x in v:
            _scan(x, m)


def _sort_key(x):
    return json.dumps(x, sort_keys=True)


def _rewrite(v, m):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k in ZXID_KEYS:
                out[k] = m.zxid(x)
            elif k in SESSION_KEYS:
                out[k] = m.session(x)
            elif k in ("ctime", "mtime"):
                continue
            else:
                out[k] = _rewrite(x, m)
        if isinstance(v.get("ctime"), int) and isinstance(v.get("mtime"), int):
            out["mtime>=ctime"] = v["mtime"] >= v["ctime"]
        for k in SORTED_LIST_KEYS:
            if isinstance(out.get(k), list):
                out[k] = sorted(out[k], key=_sort_key)
        return out
    if isinstance(v, list):
        return [_rewrite(x, m) for x in v]
    return v


def normalise_json(text):
    values = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except ValueError:
            values.append({"unparsed_line": line})
    m = Mapper()
    for v in values:
        _scan(v, m)
    m.freeze()
    return [json.dumps(_rewrite(v, m), sort_keys=True, ensure_ascii=False) for v in values]


# ------------------------------------------------------------------ zkcli

NOISE = re.compile(r"SLF4J|log4j|\bINFO\b|\bWARN\b|\bDEBUG\b|\bTRACE\b|^Connecting to |"
                   r"^Welcome to ZooKeeper|^JLine support|^WATCHER::$|^Picked up JAVA_TOOL_OPTIONS|"
                   # printed (or not) while the JVM exits after "quit"
                   r"^WatchedEvent state:Closed type:None path:null$")
PROMPT = re.compile(r"^\[zk: [^\]]*\] ?")
ZXID_LINE = re.compile(r"^(cZxid|mZxid|pZxid) = (0x[0-9a-fA-F]+)$")
TIME_LINE = re.compile(r"^(ctime|mtime) = ")
OWNER_LINE = re.compile(r"^ephemeralOwner = (0x[0-9a-fA-F]+)$")
EVENT_LINE = re.compile(r"^WatchedEvent ")
PATH_LINE = re.compile(r"^/\S*$")
LIST_LINE = re.compile(r"^\[(.*)\]$")
WHOAMI_HEADER = "Auth scheme: User"
WHOAMI_LINE = re.compile(r"^[\w.-]+: \S")


def normalise_zkcli(text):
    lines, events = [], []
    for raw in text.splitlines():
        line = PROMPT.sub("", raw).rstrip()
        if not line or NOISE.search(line):
            continue
        if EVENT_LINE.match(line):
            events.append(line)
            continue
        lines.append(line)
    m = Mapper()
    for line in lines:
        z = ZXID_LINE.match(line)
        if z:
            m.see_zxid(int(z.group(2), 16))
        o = OWNER_LINE.match(line)
        if o:
            m.see_session(int(o.group(1), 16))
    m.freeze()
    out = []
    run = []
    whoami = False

    def flush():
        out.extend(sorted(run))
        run.clear()

    for line in lines:
        # ls -R paths, and whoami's "scheme: id" lines (ZooKeeper keeps a
        # connection's auth ids in a hash set), come in arbitrary order
        if PATH_LINE.match(line) or (whoami and WHOAMI_LINE.match(line)):
            run.append(line)
            continue
        flush()
        whoami = line == WHOAMI_HEADER
        if TIME_LINE.match(line):
            continue
        z = ZXID_LINE.match(line)
        if z:
            out.append("%s = %s" % (z.group(1), m.zxid(int(z.group(2), 16))))
            continue
        o = OWNER_LINE.match(line)
        if o:
            out.append("ephemeralOwner = %s" % m.session(int(o.group(1), 16)))
            continue
        lm = LIST_LINE.match(line)
        if lm:
            items = [x for x in lm.group(1).split(", ") if x != ""]
            out.append("[" + ", ".join(sorted(items)) + "]")
            continue
        out.append(line)
    flush()
    out.append("--- watch events, in order:")
    out.extend(events)
    return out


def normalise(fmt, text):
    return normalise_json(text) if fmt == "json" else normalise_zkcli(text)


def apply_known_differences(scenario, lines, path):
    """Where ZooKeeper 3.8 and 3.9 (zkr's target) differ on purpose, replace the reference
    line with the line zkr must print. The reference must still look as documented, and zkr
    must match the documented line exactly, so both sides stay checked."""
    if not scenario or not path:
        return lines
    with open(path, encoding="utf-8") as f:
        known = [k for k in json.load(f) if k["scenario"] == scenario]
    out = []
    for line in lines:
        try:
            v = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        for k in known:
            if isinstance(v, dict) and v.get("step") == k["step"] and k["zookeeper_key"] in v:
                line = json.dumps(k["zkr"], sort_keys=True)
        out.append(line)
    return out


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def main(argv):
    fmt = "json"
    scenario = None
    known = None
    show = False
    context = 2
    max_lines = 40
    args = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--format":
            fmt = argv[i + 1]
            i += 2
            continue
        if a == "--scenario":
            scenario = argv[i + 1]
            i += 2
            continue
        if a == "--known":
            known = argv[i + 1]
            i += 2
            continue
        if a == "--show":
            show = True
        elif a.startswith("--max-lines="):
            max_lines = int(a.split("=", 1)[1])
        else:
            args.append(a)
        i += 1
    if show:
        for line in normalise(fmt, read(args[0])):
            print(line)
        return 0
    ref, cand = args
    a = normalise(fmt, read(ref))
    if fmt == "json":
        a = apply_known_differences(scenario, a, known)
    b = normalise(fmt, read(cand))
    if a == b:
        return 0
    diff = list(difflib.unified_diff(a, b, "zookeeper", "zkr", n=context, lineterm=""))
    for line in diff[:max_lines]:
        print(line[:400])
    if len(diff) > max_lines:
        print("... (%d more diff lines)" % (len(diff) - max_lines))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
