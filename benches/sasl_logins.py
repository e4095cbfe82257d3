"""A login storm on the client port, for benches/sasl_logins.sh: C client processes, each doing
logins back to back for a fixed time: TCP connect, ConnectRequest, the whole SASL exchange (opcode
102), one whoAmI (opcode 107) that must show the sasl id, close. Latency is from the connect to
the final SASL reply (for `none`, to the ConnectResponse).

Each process creates its session on its first login (not timed) and every timed login re-attaches
to it (ConnectRequest with the session's id and password), as a client does after a disconnect: a
reconnect storm. So no login writes a transaction (no createSession fsync): the storm measures the
connection and SASL accept path. For GSSAPI each process gets its TGT and the service ticket once,
on that first login (MIT's own acquisition from a client keytab, KRB5_CLIENT_KTNAME, into a
per-process MEMORY ccache) and reuses the ticket: every later login is a new AP-REQ (a new
authenticator, so MIT's and Java's replay caches accept it) and no KDC traffic, so the storm
measures the server's accept path, not the KDC. GSSAPI is run as the Java client runs it: no mutual
authentication, integrity, no security layer chosen.

The server's CPU (utime+stime of /proc/PID/stat, all threads) is read when every process is
ready and again when the last one has stopped; its RSS after. Per-thread CPU (by thread name) too.

  sasl_logins.py storm PORT MECH PROCS SECS SERVER_PID LABEL   -> one JSON line on stdout
      MECH: none | digest (bob / bob-secret) | gssapi (zookeeper@localhost, KRB5_CLIENT_KTNAME)
  sasl_logins.py table RESULTS.jsonl                            -> Markdown table
"""
import hashlib
import json
import multiprocessing as mp
import os
import re
import socket
import struct
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- the wire
def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the server")
        buf += chunk
    return buf


def recv_frame(s):
    (n,) = struct.unpack(">i", recv_exact(s, 4))
    return recv_exact(s, n)


def send(s, body):
    s.sendall(struct.pack(">i", len(body)) + body)


def connect(port, sid, passwd):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    send(s, struct.pack(">iqiq", 0, 0, 30000, sid) + struct.pack(">i", len(passwd)) + passwd + b"\0")
    r = recv_frame(s)
    _proto, _timeout, rsid = struct.unpack(">iiq", r[:16])
    if rsid == 0:
        raise ConnectionError("session expired")
    (plen,) = struct.unpack(">i", r[16:20])
    return s, rsid, r[20:20 + plen]


def request(s, xid, op, payload):
    send(s, struct.pack(">ii", xid, op) + payload)
    frame = recv_frame(s)
    rxid, _zxid, err = struct.unpack(">iqi", frame[:16])
    if rxid != xid:
        raise ConnectionError(f"reply xid {rxid} for {xid}")
    return err, frame[16:]


def sasl(s, xid, token):
    err, rest = request(s, xid, 102, struct.pack(">i", len(token)) + token)
    if err != 0:
        raise PermissionError(f"sasl err={err}")
    (n,) = struct.unpack(">i", rest[:4])
    return rest[4:4 + n] if n >= 0 else b""


def whoami(s, xid):
    err, rest = request(s, xid, 107, b"")
    if err != 0:
        raise ConnectionError(f"whoAmI err={err}")
    return rest


# ---------------------------------------------------------------- mechanisms
def md5(b):
    return hashlib.md5(b).digest()


def digest_login(s):
    ch = sasl(s, 1, b"").decode()
    nonce = re.search(r'nonce="([^"]*)"', ch).group(1)
    cnonce = os.urandom(12).hex()
    uri = "zookeeper/zk-sasl-md5"
    a1 = md5(b"bob:zk-sasl-md5:bob-secret") + f":{nonce}:{cnonce}".encode()
    ha2 = md5(f"AUTHENTICATE:{uri}".encode()).hex()
    resp = md5(f"{md5(a1).hex()}:{nonce}:00000001:{cnonce}:auth:{ha2}".encode()).hex()
    msg = (f'charset=utf-8,username="bob",realm="zk-sasl-md5",nonce="{nonce}",nc=00000001,'
           f'cnonce="{cnonce}",digest-uri="{uri}",maxbuf=65536,response={resp},qop=auth')
    final = sasl(s, 2, msg.encode())
    if not final.startswith(b"rspauth="):
        raise PermissionError("no rspauth")
    return 3


class Gss:
    def __init__(self):
        import gssapi  # after the environment is set: MIT reads it on the first call
        self.gssapi = gssapi
        self.name = gssapi.Name("zookeeper@localhost", gssapi.NameType.hostbased_service)
        self.creds = gssapi.Credentials(usage="initiate")

    def login(self, s):
        g = self.gssapi
        c = g.SecurityContext(name=self.name, creds=self.creds, usage="initiate",
                              flags=[g.RequirementFlag.integrity])
        tok = c.step()
        xid = 1
        reply = sasl(s, xid, tok)
        while not c.complete:
            tok = c.step(reply)
            xid += 1
            reply = sasl(s, xid, tok or b"")
        layer = c.unwrap(reply).message
        if layer[0] & 1 == 0:
            raise PermissionError("no 'no security layer' offered")
        xid += 1
        sasl(s, xid, c.wrap(bytes([1, 0, 0, 0]), False).message)
        return xid + 1


# ---------------------------------------------------------------- one client process
def client(idx, port, mech, keytab, ready, go, deadline, out):
    if mech == "gssapi":
        os.environ["KRB5CCNAME"] = f"MEMORY:bench{idx}"
        os.environ["KRB5_CLIENT_KTNAME"] = keytab
    gss = Gss() if mech == "gssapi" else None
    sid, passwd = 0, b"\0" * 16

    def login():
        nonlocal sid, passwd
        t0 = time.perf_counter()
        s, sid, passwd = connect(port, sid, passwd)
        try:
            if mech == "digest":
                xid = digest_login(s)
            elif mech == "gssapi":
                xid = gss.login(s)
            else:
                xid = 1
            t1 = time.perf_counter()
            ids = whoami(s, xid)
            if mech != "none" and b"sasl" not in ids:
                raise PermissionError(f"whoAmI without a sasl id: {ids!r}")
        finally:
            s.close()
        return t1 - t0

    errors, first_error, lat = 0, None, []
    try:
        login()  # creates the session; for GSSAPI gets the TGT and the service ticket
    except Exception as e:  # noqa: BLE001 - reported, not raised
        out.send({"errors": 1, "first_error": f"first login: {e!r}", "lat": []})
        ready.release()
        return
    ready.release()
    go.wait()
    end = deadline.value
    while time.time() < end:
        try:
            lat.append(login())
        except Exception as e:  # noqa: BLE001
            errors += 1
            first_error = first_error or repr(e)
            sid, passwd = 0, b"\0" * 16
            time.sleep(0.01)
    out.send({"errors": errors, "first_error": first_error, "lat": lat, "stop": time.time()})


# ---------------------------------------------------------------- the server's side
def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def thread_cpu(pid):
    """{thread name: CPU seconds} summed over threads of the same name."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                raw = f.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        name = re.sub(r"[-_ ]?\d+$", "", name) or name  # pool threads under one name
        fields = raw.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / TICK
    return out


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    return sorted_vals[min(len(sorted_vals) - 1, int(p / 100 * len(sorted_vals)))]


def storm(port, mech, procs, secs, pid, label):
    keytab = os.environ.get("BENCH_CLIENT_KEYTAB", "")
    ctx = mp.get_context("fork")
    ready, go = ctx.Semaphore(0), ctx.Event()
    deadline = ctx.Value("d", 0.0)
    pipes, children = [], []
    for i in range(procs):
        r, w = ctx.Pipe(duplex=False)
        p = ctx.Process(target=client, args=(i, port, mech, keytab, ready, go, deadline, w))
        p.start()
        pipes.append(r)
        children.append(p)
    for _ in range(procs):
        ready.acquire()
    load0 = open("/proc/loadavg").read().split()[0]
    th0, c0 = thread_cpu(pid), cpu_s(pid)
    t0 = time.time()
    deadline.value = t0 + secs
    go.set()
    results = [r.recv() for r in pipes]
    for p in children:
        p.join()
    c1, th1 = cpu_s(pid), thread_cpu(pid)
    t1 = max([r.get("stop", t0) for r in results] + [t0 + secs])
    lat = sorted(x for r in results for x in r["lat"])
    n = len(lat)
    cpu = c1 - c0
    threads = {k: round(v - th0.get(k, 0.0), 2) for k, v in th1.items() if v - th0.get(k, 0.0) >= 0.05}
    server, rnd = label.split(":")
    return {
        "server": server, "round": int(rnd), "mech": mech, "procs": procs, "secs": round(t1 - t0, 2), "logins": n,
        "errors": sum(r["errors"] for r in results),
        "first_error": next((r["first_error"] for r in results if r["first_error"]), None),
        "rate": n / (t1 - t0), "p50_ms": pct(lat, 50) * 1e3, "p99_ms": pct(lat, 99) * 1e3,
        "cpu_s": round(cpu, 2), "cpu_per_1k": cpu / n * 1000 if n else float("nan"),
        "rss_mb": round(rss_mb(pid), 1), "load": load0, "threads": threads,
    }


# ---------------------------------------------------------------- the table
MECH_NAMES = {"none": "none (reconnect, no SASL)", "digest": "DIGEST-MD5", "gssapi": "GSSAPI"}


def table(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("| mechanism | C | server | run | logins/s | p50 ms | p99 ms | server CPU s / 1,000 logins | server RSS after | errors | load |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    keys = []
    for r in rows:
        k = (r["mech"], r["procs"])
        if k not in keys:
            keys.append(k)
    for mech, procs in keys:
        for server in ("zk", "zkr"):
            sel = [r for r in rows if r["mech"] == mech and r["procs"] == procs and r["server"] == server]
            for r in sel:
                print(f"| {MECH_NAMES[mech]} | {procs} | {'ZooKeeper 3.8' if server == 'zk' else 'zkr'} | {r['round']} "
                      f"| {r['rate']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['cpu_per_1k']:.2f} "
                      f"| {r['rss_mb']:,.0f} MB | {r['errors']} | {r['load']} |")
    print()
    print("Medians over runs:")
    print()
    print("| mechanism | C | ZooKeeper logins/s | zkr logins/s | zkr / ZK | ZooKeeper p50 / p99 ms | zkr p50 / p99 ms | ZooKeeper CPU s / 1k | zkr CPU s / 1k |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

    for mech, procs in keys:
        m = {}
        for server in ("zk", "zkr"):
            sel = [r for r in rows if r["mech"] == mech and r["procs"] == procs and r["server"] == server]
            m[server] = {k: med([r[k] for r in sel]) for k in ("rate", "p50_ms", "p99_ms", "cpu_per_1k")} if sel else None
        if not (m["zk"] and m["zkr"]):
            continue
        z, r = m["zk"], m["zkr"]
        print(f"| {MECH_NAMES[mech]} | {procs} | {z['rate']:,.0f} | {r['rate']:,.0f} | {r['rate'] / z['rate']:.2f}× "
              f"| {z['p50_ms']:.2f} / {z['p99_ms']:.2f} | {r['p50_ms']:.2f} / {r['p99_ms']:.2f} "
              f"| {z['cpu_per_1k']:.2f} | {r['cpu_per_1k']:.2f} |")
    print()
    print("Server threads' CPU seconds in each storm (threads of one name summed; ≥ 0.05 s):")
    print()
    for r in rows:
        top = sorted(r["threads"].items(), key=lambda kv: -kv[1])[:6]
        print(f"- {r['server']} {r['mech']} C={r['procs']} run {r['round']}: "
              + ", ".join(f"{k} {v:.2f}" for k, v in top))


if __name__ == "__main__":
    if sys.argv[1] == "storm":
        port, mech, procs, secs, pid, label = sys.argv[2:8]
        res = storm(int(port), mech, int(procs), float(secs), int(pid), label)
        print(json.dumps(res), flush=True)
    elif sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
