// Drives the official ZooKeeper Java client (3.8, Debian libzookeeper-java)
// through tools/record-proxy/record_proxy.py so that every scenario ends up
// as one (or, for reconnects, several) fixture files in protocol-fixtures/.
//
// Usage: java -cp <zookeeper jars>:<classes> Scenarios PROXY_PORT DIRECT_PORT CONTROL_PORT NAME
//        java ... Scenarios --list            (prints the scenario names)
//
// PROXY_PORT   recording proxy (what the client under test talks to)
// DIRECT_PORT  the ZooKeeper server itself; used only by unrecorded helper
//              sessions (e.g. to change data while the recorded client is
//              disconnected)
// CONTROL_PORT proxy control port (label / hold / release / drop / wait)
//
// Every scenario runs against a freshly started, empty server (record.sh
// restarts ZooKeeper between scenarios), so each fixture starts from the same
// state: only /zookeeper exists.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.EventType;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooDefs.Ids;
import org.apache.zookeeper.ZooDefs.Perms;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.admin.ZooKeeperAdmin;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

public class Scenarios {
    static int proxyPort, directPort, controlPort;

    interface Body { void run() throws Exception; }

    static final class Scenario {
        final String description;
        final Body body;
        Scenario(String d, Body b) { description = d; body = b; }
    }

    static final Map<String, Scenario> ALL = new LinkedHashMap<>();

    static void def(String name, String description, Body body) {
        ALL.put(name, new Scenario(description, body));
    }

    // ------------------------------------------------------------ helpers

    /** Watcher that queues every event so scenarios can wait for them. */
    static final class Events implements Watcher {
        final LinkedBlockingQueue<WatchedEvent> q = new LinkedBlockingQueue<>();
        public void process(WatchedEvent e) {
            log("event " + e);
            q.add(e);
        }
        WatchedEvent await(EventType type, String path) throws InterruptedException {
            long deadline = System.currentTimeMillis() + 15000;
            while (true) {
                long left = deadline - System.currentTimeMillis();
                WatchedEvent e = q.poll(Math.max(left, 1), TimeUnit.MILLISECONDS);
                if (e == null) throw new IllegalStateException("timed out waiting for " + type + " " + path);
                if (e.getType() == type && (path == null || path.equals(e.getPath()))) return e;
            }
        }
        void awaitState(KeeperState state) throws InterruptedException {
            long deadline = System.currentTimeMillis() + 15000;
            while (true) {
                long left = deadline - System.currentTimeMillis();
                WatchedEvent e = q.poll(Math.max(left, 1), TimeUnit.MILLISECONDS);
                if (e == null) throw new IllegalStateException("timed out waiting for state " + state);
                if (e.getType() == EventType.None && e.getState() == state) return;
            }
        }
    }

    static void log(String s) { System.err.println("[scenarios] " + s); }

    static String ctl(String cmd) throws IOException {
        try (Socket s = new Socket("127.0.0.1", controlPort)) {
            PrintWriter w = new PrintWriter(new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8), true);
            BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            w.println(cmd);
            String reply = r.readLine();
            if (reply == null || !reply.startsWith("ok")) throw new IOException("proxy said " + reply + " to " + cmd);
            return reply;
        }
    }

    static String proxy() { return "127.0.0.1:" + proxyPort; }

    static Events events;

    /** Connects through the recording proxy and waits for SyncConnected. */
    static ZooKeeper connect() throws Exception { return connect(30000); }

    static ZooKeeper connect(int timeout) throws Exception {
        events = new Events();
        ZooKeeper zk = new ZooKeeper(proxy(), timeout, events);
        events.awaitState(KeeperState.SyncConnected);
        return zk;
    }

    /** Unrecorded helper session that talks to the server directly. */
    static ZooKeeper direct() throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper("127.0.0.1:" + directPort, 30000, e -> {
            if (e.getState() == KeeperState.SyncConnected) up.countDown();
        });
        if (!up.await(15, TimeUnit.SECONDS)) throw new IllegalStateException("direct connect failed");
        return zk;
    }

    static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    static final List<ACL> OPEN = Ids.OPEN_ACL_UNSAFE;

    /** Runs an operation that must fail with the given code. */
    static void expect(KeeperException.Code code, Body op) throws Exception {
        try {
            op.run();
        } catch (KeeperException e) {
            if (e.code() != code) throw e;
            log("got expected " + code + (e.getResults() != null ? " results=" + describe(e.getResults()) : ""));
            return;
        }
        throw new IllegalStateException("expected " + code);
    }

    static String describe(List<OpResult> results) {
        List<String> out = new ArrayList<>();
        for (OpResult r : results) {
            if (r instanceof OpResult.ErrorResult) out.add("err" + ((OpResult.ErrorResult) r).getErr());
            else out.add(r.getClass().getSimpleName());
        }
        return out.toString();
    }

    // ---------------------------------------------------------- scenarios

    static {
        def("handshake-close",
            "ConnectRequest/ConnectResponse of a new session, then closeSession (op -11) and its reply;"
            + " the server closes the socket after the reply.",
            () -> {
                ZooKeeper zk = connect();
                zk.close();
            });

        def("create-persistent",
            "create (op 1) of a PERSISTENT node /p with data 'hello' and world:anyone ALL.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/p", b("hello"), OPEN, CreateMode.PERSISTENT);
                zk.close();
            });

        def("create-ephemeral",
            "create (op 1) of an EPHEMERAL node /e (flags=1).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/e", b("eph"), OPEN, CreateMode.EPHEMERAL);
                zk.close();
            });

        def("create-sequential",
            "create (op 1): PERSISTENT_SEQUENTIAL /seq- twice (flags=2; names /seq-0000000000, /seq-0000000001),"
            + " then EPHEMERAL_SEQUENTIAL /eseq- (flags=3; counter continues under /, -> /eseq-0000000002).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/seq-", b("a"), OPEN, CreateMode.PERSISTENT_SEQUENTIAL);
                zk.create("/seq-", b("b"), OPEN, CreateMode.PERSISTENT_SEQUENTIAL);
                zk.create("/eseq-", b("c"), OPEN, CreateMode.EPHEMERAL_SEQUENTIAL);
                zk.close();
            });

        def("create2",
            "create2 (op 15): reply carries the created path and its Stat. PERSISTENT /c2 then EPHEMERAL /c2e"
            + " (ephemeralOwner = session id in the Stat).",
            () -> {
                ZooKeeper zk = connect();
                Stat st = new Stat();
                zk.create("/c2", b("data2"), OPEN, CreateMode.PERSISTENT, st);
                zk.create("/c2e", b(""), OPEN, CreateMode.EPHEMERAL, st);
                zk.close();
            });

        def("create-container",
            "createContainer (op 19, flags=4): /box via create() without Stat, then a child /box/item (op 1),"
            + " then /box2 via create() with Stat (also op 19). The server answers op 19 with path+Stat.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/box", b("c"), OPEN, CreateMode.CONTAINER);
                zk.create("/box/item", b("i"), OPEN, CreateMode.PERSISTENT);
                zk.create("/box2", b(""), OPEN, CreateMode.CONTAINER, new Stat());
                zk.close();
            });

        def("create-ttl",
            "createTTL (op 21; server has extendedTypesEnabled=true): PERSISTENT_WITH_TTL /ttl (flags=5,"
            + " ttl=60000) and PERSISTENT_SEQUENTIAL_WITH_TTL /ttlseq- (flags=6, ttl=120000). Note the"
            + " ephemeralOwner field of the returned Stat encodes the TTL (0xff << 56 | ttl).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/ttl", b("t"), OPEN, CreateMode.PERSISTENT_WITH_TTL, new Stat(), 60000);
                zk.create("/ttlseq-", b("t"), OPEN, CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, new Stat(), 120000);
                zk.close();
            });

        def("create-nodeexists",
            "create (op 1) /x ok, then create /x again -> NodeExists (-110).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/x", b("1"), OPEN, CreateMode.PERSISTENT);
                expect(KeeperException.Code.NODEEXISTS, () -> zk.create("/x", b("2"), OPEN, CreateMode.PERSISTENT));
                zk.close();
            });

        def("create-noparent",
            "create (op 1) /a/b while /a does not exist -> NoNode (-101).",
            () -> {
                ZooKeeper zk = connect();
                expect(KeeperException.Code.NONODE, () -> zk.create("/a/b", b(""), OPEN, CreateMode.PERSISTENT));
                zk.close();
            });

        def("create-nochildrenforephemerals",
            "create (op 1) EPHEMERAL /eph, then create /eph/child -> NoChildrenForEphemerals (-108).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/eph", b(""), OPEN, CreateMode.EPHEMERAL);
                expect(KeeperException.Code.NOCHILDRENFOREPHEMERALS,
                       () -> zk.create("/eph/child", b(""), OPEN, CreateMode.PERSISTENT));
                zk.close();
            });

        def("create-invalidacl",
            "create (op 1) /secure with ACL auth:(empty id) ALL (Ids.CREATOR_ALL_ACL) on a session that has"
            + " no authenticated identity -> InvalidACL (-114).",
            () -> {
                ZooKeeper zk = connect();
                expect(KeeperException.Code.INVALIDACL,
                       () -> zk.create("/secure", b(""), Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT));
                zk.close();
            });

        def("delete-ok",
            "create /d (op 1), delete /d version -1 (op 2) -> ok, then delete /d2 with its exact version 0 -> ok.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/d", b(""), OPEN, CreateMode.PERSISTENT);
                zk.delete("/d", -1);
                zk.create("/d2", b(""), OPEN, CreateMode.PERSISTENT);
                zk.delete("/d2", 0);
                zk.close();
            });

        def("delete-badversion",
            "create /d, delete /d with version 5 (op 2) -> BadVersion (-103).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/d", b(""), OPEN, CreateMode.PERSISTENT);
                expect(KeeperException.Code.BADVERSION, () -> zk.delete("/d", 5));
                zk.close();
            });

        def("delete-notempty",
            "create /d and /d/c, delete /d (op 2) -> NotEmpty (-111).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/d", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/d/c", b(""), OPEN, CreateMode.PERSISTENT);
                expect(KeeperException.Code.NOTEMPTY, () -> zk.delete("/d", -1));
                zk.close();
            });

        def("delete-nonode",
            "delete /missing (op 2) -> NoNode (-101).",
            () -> {
                ZooKeeper zk = connect();
                expect(KeeperException.Code.NONODE, () -> zk.delete("/missing", -1));
                zk.close();
            });

        def("exists",
            "exists (op 3): /here present (watch=1, reply has Stat), /missing absent with watch=1 -> NoNode (-101)"
            + " reply; then create /missing fires a NodeCreated (type 1) notification (xid -1) that arrives"
            + " before the create reply.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/here", b("x"), OPEN, CreateMode.PERSISTENT);
                zk.exists("/here", true);
                zk.exists("/missing", true);
                zk.create("/missing", b(""), OPEN, CreateMode.PERSISTENT);
                events.await(EventType.NodeCreated, "/missing");
                zk.close();
            });

        def("getdata",
            "getData (op 4): /g with data 'payload' (watch=0) -> data+Stat; getData /nope -> NoNode (-101).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/g", b("payload"), OPEN, CreateMode.PERSISTENT);
                zk.getData("/g", false, new Stat());
                expect(KeeperException.Code.NONODE, () -> zk.getData("/nope", false, null));
                zk.close();
            });

        def("notification",
            "data watch firing: getData /w watch=1, setData /w (op 5) -> notification xid -1 NodeDataChanged"
            + " (type 3, state 3 SyncConnected) before the setData reply; getData /w watch=1 again, delete /w ->"
            + " NodeDeleted (type 2) notification.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/w", b("v1"), OPEN, CreateMode.PERSISTENT);
                zk.getData("/w", true, null);
                zk.setData("/w", b("v2"), -1);
                events.await(EventType.NodeDataChanged, "/w");
                zk.getData("/w", true, null);
                zk.delete("/w", -1);
                events.await(EventType.NodeDeleted, "/w");
                zk.close();
            });

        def("setdata",
            "setData (op 5): /s 'a' -> 'b' with version -1, then -> 'c' with exact version 1; reply is the new Stat.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/s", b("a"), OPEN, CreateMode.PERSISTENT);
                zk.setData("/s", b("b"), -1);
                zk.setData("/s", b("c"), 1);
                zk.close();
            });

        def("setdata-badversion",
            "setData (op 5) /s with version 7 while the node has version 0 -> BadVersion (-103); setData /nope ->"
            + " NoNode (-101).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/s", b("a"), OPEN, CreateMode.PERSISTENT);
                expect(KeeperException.Code.BADVERSION, () -> zk.setData("/s", b("x"), 7));
                expect(KeeperException.Code.NONODE, () -> zk.setData("/nope", b("x"), -1));
                zk.close();
            });

        def("getacl",
            "getACL (op 6) of /acl (created with world:anyone ALL) and of /zookeeper -> ACL list + Stat.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/acl", b(""), OPEN, CreateMode.PERSISTENT);
                zk.getACL("/acl", new Stat());
                zk.getACL("/zookeeper", new Stat());
                zk.close();
            });

        def("setacl",
            "setACL (op 7) /acl with version 5 -> BadVersion (-103); setACL /acl to world:anyone READ with"
            + " version -1 -> Stat (aversion 1); getACL (op 6) shows it; setACL again -> NoAuth (-102) since"
            + " the node no longer grants ADMIN.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/acl", b(""), OPEN, CreateMode.PERSISTENT);
                expect(KeeperException.Code.BADVERSION, () -> zk.setACL("/acl", OPEN, 5));
                zk.setACL("/acl", Ids.READ_ACL_UNSAFE, -1);
                zk.getACL("/acl", new Stat());
                expect(KeeperException.Code.NOAUTH, () -> zk.setACL("/acl", OPEN, -1));
                zk.close();
            });

        def("noauth",
            "NoAuth (-102): create /ro with world:anyone READ only, then setData /ro (op 5), create /ro/c (op 1)"
            + " and getData /ro (op 4, allowed -> ok).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/ro", b("r"), Ids.READ_ACL_UNSAFE, CreateMode.PERSISTENT);
                expect(KeeperException.Code.NOAUTH, () -> zk.setData("/ro", b("w"), -1));
                expect(KeeperException.Code.NOAUTH, () -> zk.create("/ro/c", b(""), OPEN, CreateMode.PERSISTENT));
                zk.getData("/ro", false, null);
                zk.close();
            });

        def("getchildren",
            "getChildren (op 8) /parent with watch=1 -> [a, b]; create /parent/c fires NodeChildrenChanged"
            + " (type 4) notification; getChildren /nope -> NoNode (-101).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/parent", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/parent/a", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/parent/b", b(""), OPEN, CreateMode.PERSISTENT);
                zk.getChildren("/parent", true);
                zk.create("/parent/c", b(""), OPEN, CreateMode.PERSISTENT);
                events.await(EventType.NodeChildrenChanged, "/parent");
                expect(KeeperException.Code.NONODE, () -> zk.getChildren("/nope", false));
                zk.close();
            });

        def("getchildren2",
            "getChildren2 (op 12) /parent (watch=0) -> children list + Stat of the parent; also of / (root).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/parent", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/parent/a", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/parent/b", b(""), OPEN, CreateMode.PERSISTENT);
                zk.getChildren("/parent", false, new Stat());
                zk.getChildren("/", false, new Stat());
                zk.close();
            });

        def("sync",
            "sync (op 9) of /s -> reply carries the path.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/s", b(""), OPEN, CreateMode.PERSISTENT);
                CountDownLatch done = new CountDownLatch(1);
                zk.sync("/s", (rc, path, ctx) -> { log("sync rc=" + rc + " path=" + path); done.countDown(); }, null);
                done.await(10, TimeUnit.SECONDS);
                zk.close();
            });

        def("ping",
            "ping (op 11, xid -2): session timeout 4000 ms (the minimum, 2*tickTime) and ~3.5 s idle, so the"
            + " client pings about once a second; the number of pings is timing dependent.",
            () -> {
                ZooKeeper zk = connect(4000);
                Thread.sleep(3500);
                zk.close();
            });

        def("multi",
            "multi (op 14) that succeeds: create /m, create /m/a, setData /m, check /m version 1 (op 13 inside"
            + " multi), delete /m/a -> per-op results (create path, create path, Stat, check, delete).",
            () -> {
                ZooKeeper zk = connect();
                List<OpResult> r = zk.multi(Arrays.asList(
                    Op.create("/m", b("m"), OPEN, CreateMode.PERSISTENT),
                    Op.create("/m/a", b("a"), OPEN, CreateMode.PERSISTENT),
                    Op.setData("/m", b("m2"), 0),
                    Op.check("/m", 1),
                    Op.delete("/m/a", -1)));
                log("multi results " + describe(r));
                zk.close();
            });

        def("multi-fail",
            "multi (op 14) that fails and is rolled back: after create /x, multi [create /new, setData /x,"
            + " check /x version 9 (BadVersion), delete /x] -> reply header err 0, but every op gets an error"
            + " result (type -1): ops before the failing one 0, the failing one -103, the ones after -2"
            + " (RuntimeInconsistency). The failed multi still uses up a zxid. Then exists /new -> NoNode"
            + " shows the rollback.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/x", b("x"), OPEN, CreateMode.PERSISTENT);
                expect(KeeperException.Code.BADVERSION, () -> zk.multi(Arrays.asList(
                    Op.create("/new", b(""), OPEN, CreateMode.PERSISTENT),
                    Op.setData("/x", b("y"), -1),
                    Op.check("/x", 9),
                    Op.delete("/x", -1))));
                zk.exists("/new", false);
                zk.close();
            });

        def("multi-fail-nonode",
            "multi (op 14) failing on its first op: [delete /missing, create /y] -> reply header err 0,"
            + " error results [-101 NoNode, -2 RuntimeInconsistency].",
            () -> {
                ZooKeeper zk = connect();
                expect(KeeperException.Code.NONODE, () -> zk.multi(Arrays.asList(
                    Op.delete("/missing", -1),
                    Op.create("/y", b(""), OPEN, CreateMode.PERSISTENT))));
                zk.close();
            });

        def("multiread",
            "multiRead (op 22): ZooKeeper.multi with only Op.getChildren / Op.getData ops: getChildren /mr,"
            + " getData /mr/a, getData /missing -> per-op results, the last one an error result -101.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/mr", b("root"), OPEN, CreateMode.PERSISTENT);
                zk.create("/mr/a", b("A"), OPEN, CreateMode.PERSISTENT);
                zk.create("/mr/b", b("B"), OPEN, CreateMode.PERSISTENT);
                try {
                    List<OpResult> r = zk.multi(Arrays.asList(
                        Op.getChildren("/mr"), Op.getData("/mr/a"), Op.getData("/missing")));
                    log("multiRead results " + describe(r));
                } catch (KeeperException e) {
                    log("multiRead threw " + e.code() + " " + describe(e.getResults()));
                }
                zk.close();
            });

        def("checkwatches",
            "checkWatches (op 17): getData /cw with a watcher object, then removeWatches(path, thatWatcher, Data)"
            + " -> the Java client sends checkWatches with type 2 (Data) -> ok; the server removes the watch.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/cw", b(""), OPEN, CreateMode.PERSISTENT);
                Watcher w = e -> log("private watcher " + e);
                zk.getData("/cw", w, null);
                zk.removeWatches("/cw", w, Watcher.WatcherType.Data, false);
                zk.close();
            });

        def("removewatches",
            "removeWatches (op 18): exists /rw watch=1 and getChildren /rw watch=1, then removeAllWatches(/rw,"
            + " Any) -> removeWatches type 3 (Any) -> ok. The server does not send DataWatchRemoved events;"
            + " the client generates them locally.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/rw", b(""), OPEN, CreateMode.PERSISTENT);
                zk.exists("/rw", true);
                zk.getChildren("/rw", true);
                zk.removeAllWatches("/rw", Watcher.WatcherType.Any, false);
                zk.close();
            });

        def("removewatches-nowatcher",
            "removeWatches (op 18) for /nw that has no watch -> NoWatcher (-121); then checkWatches (op 17)"
            + " on /nw with type Children -> NoWatcher (-121).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/nw", b(""), OPEN, CreateMode.PERSISTENT);
                expect(KeeperException.Code.NOWATCHER,
                       () -> zk.removeAllWatches("/nw", Watcher.WatcherType.Data, false));
                Watcher w = e -> { };
                expect(KeeperException.Code.NOWATCHER,
                       () -> zk.removeWatches("/nw", w, Watcher.WatcherType.Children, false));
                zk.close();
            });

        def("auth-digest",
            "auth (op 100, xid -4) scheme digest 'user:secret' -> ok; create /sec with Ids.CREATOR_ALL_ACL"
            + " (becomes digest:user:<hash> ALL); getACL (op 6) /sec shows the digest id.",
            () -> {
                ZooKeeper zk = connect();
                zk.addAuthInfo("digest", b("user:secret"));
                zk.create("/sec", b("s"), Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
                zk.getACL("/sec", new Stat());
                zk.close();
            });

        def("auth-failed",
            "auth (op 100, xid -4) with unknown scheme 'nosuchscheme' -> reply err AuthFailed (-115);"
            + " the server then closes the connection (the Java client reports AuthFailed and does not"
            + " send closeSession).",
            () -> {
                ZooKeeper zk = connect();
                zk.addAuthInfo("nosuchscheme", b("whatever"));
                events.awaitState(KeeperState.AuthFailed);
                zk.close();
            });

        def("whoami",
            "whoAmI (op 107): before auth -> [ip 127.0.0.1]; after auth digest 'user:secret' -> ip + digest user.",
            () -> {
                ZooKeeper zk = connect();
                log("whoAmI " + zk.whoAmI());
                zk.addAuthInfo("digest", b("user:secret"));
                log("whoAmI " + zk.whoAmI());
                zk.close();
            });

        def("getephemerals",
            "getEphemerals (op 103): ephemerals /e1, /app/e2, /app/e3 of this session; getEphemerals('/')"
            + " -> all three, getEphemerals('/app') -> two, getEphemerals('/zzz') -> empty list.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/e1", b(""), OPEN, CreateMode.EPHEMERAL);
                zk.create("/app", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/app/e2", b(""), OPEN, CreateMode.EPHEMERAL);
                zk.create("/app/e3", b(""), OPEN, CreateMode.EPHEMERAL);
                log("all " + zk.getEphemerals());
                log("app " + zk.getEphemerals("/app"));
                log("zzz " + zk.getEphemerals("/zzz"));
                zk.close();
            });

        def("getallchildrennumber",
            "getAllChildrenNumber (op 104): /n with /n/a, /n/a/b, /n/c -> 3; of /n/c -> 0; of /nope -> NoNode (-101).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/n", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/n/a", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/n/a/b", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/n/c", b(""), OPEN, CreateMode.PERSISTENT);
                log("count " + zk.getAllChildrenNumber("/n"));
                log("count " + zk.getAllChildrenNumber("/n/c"));
                expect(KeeperException.Code.NONODE, () -> zk.getAllChildrenNumber("/nope"));
                zk.close();
            });

        def("addwatch-persistent",
            "addWatch (op 106) mode 0 PERSISTENT on /aw: setData /aw twice -> two NodeDataChanged notifications"
            + " (the watch is not consumed), create /aw/c -> NodeChildrenChanged, delete /aw/c ->"
            + " NodeChildrenChanged; notifications (xid -1) precede the replies of the ops that cause them.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/aw", b("0"), OPEN, CreateMode.PERSISTENT);
                zk.addWatch("/aw", AddWatchMode.PERSISTENT);
                zk.setData("/aw", b("1"), -1);
                zk.setData("/aw", b("2"), -1);
                zk.create("/aw/c", b(""), OPEN, CreateMode.PERSISTENT);
                zk.delete("/aw/c", -1);
                zk.close();
            });

        def("addwatch-recursive",
            "addWatch (op 106) mode 1 PERSISTENT_RECURSIVE on /ar: create /ar/x -> NodeCreated /ar/x,"
            + " setData /ar/x -> NodeDataChanged /ar/x, create /ar/x/y -> NodeCreated /ar/x/y,"
            + " delete /ar/x/y -> NodeDeleted /ar/x/y (no NodeChildrenChanged for recursive watches).",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/ar", b(""), OPEN, CreateMode.PERSISTENT);
                zk.addWatch("/ar", AddWatchMode.PERSISTENT_RECURSIVE);
                zk.create("/ar/x", b(""), OPEN, CreateMode.PERSISTENT);
                zk.setData("/ar/x", b("1"), -1);
                zk.create("/ar/x/y", b(""), OPEN, CreateMode.PERSISTENT);
                zk.delete("/ar/x/y", -1);
                zk.close();
            });

        def("setwatches",
            "setWatches (op 101) after a reconnect (3.8 sends it with the next ordinary xid, not a special one). Connection 1: getData /sw watch=1, exists /swx"
            + " (missing) watch=1, getChildren /swc watch=1; the proxy then drops the connection. While the"
            + " client is disconnected an UNRECORDED helper session sets /sw, creates /swx and /swc/new."
            + " Connection 2: the client re-attaches (ConnectRequest with the session id, password and"
            + " lastZxidSeen) and sends setWatches(relativeZxid, data=[/sw], exist=[/swx], child=[/swc]); the server"
            + " immediately fires NodeDataChanged /sw, NodeCreated /swx, NodeChildrenChanged /swc.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/sw", b("1"), OPEN, CreateMode.PERSISTENT);
                zk.create("/swc", b(""), OPEN, CreateMode.PERSISTENT);
                zk.getData("/sw", true, null);
                zk.exists("/swx", true);
                zk.getChildren("/swc", true);
                reconnectWhile(() -> {
                    ZooKeeper h = direct();
                    h.setData("/sw", b("2"), -1);
                    h.create("/swx", b(""), OPEN, CreateMode.PERSISTENT);
                    h.create("/swc/new", b(""), OPEN, CreateMode.PERSISTENT);
                    h.close();
                });
                events.await(EventType.NodeDataChanged, "/sw");
                zk.close();
            });

        def("setwatches2",
            "setWatches2 (op 105) after a reconnect. Connection 1: addWatch /pw PERSISTENT, addWatch"
            + " /pr PERSISTENT_RECURSIVE, getData /d watch=1; the proxy drops the connection; an UNRECORDED"
            + " helper session sets /pw, creates /pr/k and sets /d. Connection 2: re-attach, then"
            + " setWatches2(relativeZxid, data=[/d], exist=[], child=[], persistent=[/pw],"
            + " persistentRecursive=[/pr]). Only the one-shot data watch on /d gets a catch-up"
            + " NodeDataChanged; the persistent watches are re-registered WITHOUT catch-up events for the"
            + " missed changes. setData /pw and create /pr/after afterwards show they are active again.",
            () -> {
                ZooKeeper zk = connect();
                zk.create("/pw", b("1"), OPEN, CreateMode.PERSISTENT);
                zk.create("/pr", b(""), OPEN, CreateMode.PERSISTENT);
                zk.create("/d", b(""), OPEN, CreateMode.PERSISTENT);
                zk.addWatch("/pw", AddWatchMode.PERSISTENT);
                zk.addWatch("/pr", AddWatchMode.PERSISTENT_RECURSIVE);
                zk.getData("/d", true, null);
                reconnectWhile(() -> {
                    ZooKeeper h = direct();
                    h.setData("/pw", b("2"), -1);
                    h.create("/pr/k", b(""), OPEN, CreateMode.PERSISTENT);
                    h.setData("/d", b("x"), -1);
                    h.close();
                });
                events.await(EventType.NodeDataChanged, "/d");
                zk.setData("/pw", b("3"), -1);  // persistent watch active again after re-registration
                events.await(EventType.NodeDataChanged, "/pw");
                zk.create("/pr/after", b(""), OPEN, CreateMode.PERSISTENT);
                events.await(EventType.NodeCreated, "/pr/after");
                zk.close();
            });

        def("reattach",
            "re-attach to an existing session. Connection 1 (a separate client JVM): new session, create"
            + " EPHEMERAL /mine, then the JVM halts without closeSession (socket just closes)."
            + " Connection 2: ConnectRequest with that session id and password -> ConnectResponse with the"
            + " same session id; getEphemerals (op 103) still lists /mine; closeSession.",
            () -> {
                String[] idpw = runReattachFirst();
                long sid = Long.parseUnsignedLong(idpw[0], 16);
                byte[] pw = HexFormat.of().parseHex(idpw[1]);
                ctl("wait 10");
                events = new Events();
                ZooKeeper zk = new ZooKeeper(proxy(), 30000, events, sid, pw);
                events.awaitState(KeeperState.SyncConnected);
                log("ephemerals " + zk.getEphemerals());
                zk.close();
            });

        def("reconfig",
            "reconfig (op 16) via ZooKeeperAdmin against a standalone server (reconfigEnabled=false) ->"
            + " ReconfigDisabled (-123).",
            () -> {
                events = new Events();
                ZooKeeperAdmin admin = new ZooKeeperAdmin(proxy(), 30000, events);
                events.awaitState(KeeperState.SyncConnected);
                expect(KeeperException.Code.RECONFIGDISABLED,
                       () -> admin.reconfigure("server.2=127.0.0.1:23888:23889;23890", null, null, -1, new Stat()));
                admin.close();
            });
    }

    /** Forces a reconnect: hold new connections, drop the live one, run body, release. */
    static void reconnectWhile(Body whileDisconnected) throws Exception {
        ctl("hold");
        ctl("drop");
        events.awaitState(KeeperState.Disconnected);
        whileDisconnected.run();
        ctl("release");
        events.awaitState(KeeperState.SyncConnected);
    }

    /** Runs the first half of "reattach" in a separate JVM that halts without closing. */
    static String[] runReattachFirst() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(
            System.getProperty("java.home") + "/bin/java", "-cp", System.getProperty("java.class.path"),
            "Scenarios", String.valueOf(proxyPort), String.valueOf(directPort), String.valueOf(controlPort),
            "--reattach-first");
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process p = pb.start();
        String line = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
        if (p.waitFor() != 0 || line == null) throw new IllegalStateException("reattach-first failed");
        return line.trim().split(" ");
    }

    static void reattachFirst() throws Exception {
        ZooKeeper zk = connect();
        zk.create("/mine", b("m"), OPEN, CreateMode.EPHEMERAL);
        System.out.println(Long.toHexString(zk.getSessionId()) + " " + HexFormat.of().formatHex(zk.getSessionPasswd()));
        System.out.flush();
        Runtime.getRuntime().halt(0);  // no closeSession: the OS just closes the socket
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--list")) {
            ALL.forEach((k, v) -> System.out.println(k));
            return;
        }
        if (args.length != 4) {
            System.err.println("usage: Scenarios PROXY_PORT DIRECT_PORT CONTROL_PORT NAME | --list");
            System.exit(2);
        }
        proxyPort = Integer.parseInt(args[0]);
        directPort = Integer.parseInt(args[1]);
        controlPort = Integer.parseInt(args[2]);
        if (args[3].equals("--reattach-first")) {
            reattachFirst();
            return;
        }
        Scenario sc = ALL.get(args[3]);
        if (sc == null) {
            System.err.println("unknown scenario " + args[3]);
            System.exit(2);
        }
        ctl("label " + args[3] + " " + sc.description + "\\nrecorded with the Java client (Scenarios.java)");
        sc.body.run();
        String r = ctl("wait 15");
        ctl("label unnamed");
        log(args[3] + " done (" + r + ")");
        System.exit(0);
    }
}
