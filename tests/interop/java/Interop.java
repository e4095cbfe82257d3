// Interop scenarios driven through the official ZooKeeper Java client.
//
//   java -cp <classpath> Interop --list
//   java -cp <classpath> Interop SCENARIO HOST:PORT [PROXY_PORT]
//
// Prints a JSON-lines transcript (one object per step, keys sorted) of what the
// client observed.  run.sh runs it against ZooKeeper and against zkr and
// compares the normalised transcripts (lib/compare.py).  Expected ZooKeeper
// errors are part of the transcript; anything else (client-side exceptions,
// timeouts while connecting) makes the program exit non-zero.

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.AsyncCallback;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.StatsTrack;
import org.apache.zookeeper.cli.DelQuotaCommand;
import org.apache.zookeeper.cli.ListQuotaCommand;
import org.apache.zookeeper.cli.SetQuotaCommand;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZKUtil;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

public class Interop {
    static String ADDR;
    static int PROXY_PORT;
    static final List<ACL> OPEN = ZooDefs.Ids.OPEN_ACL_UNSAFE;

    // ------------------------------------------------------------------ JSON

    static String json(Object o) {
        StringBuilder sb = new StringBuilder();
        writeJson(sb, o);
        return sb.toString();
    }

    @SuppressWarnings("unchecked")
    static void writeJson(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof String) {
            writeString(sb, (String) o);
        } else if (o instanceof Boolean || o instanceof Integer || o instanceof Long) {
            sb.append(o.toString());
        } else if (o instanceof byte[]) {
            writeString(sb, bytes((byte[]) o));
        } else if (o instanceof Stat) {
            writeJson(sb, stat((Stat) o));
        } else if (o instanceof ACL) {
            ACL a = (ACL) o;
            writeJson(sb, map("perms", a.getPerms(), "scheme", a.getId().getScheme(), "id", a.getId().getId()));
        } else if (o instanceof ClientInfo) {
            ClientInfo c = (ClientInfo) o;
            writeJson(sb, map("authScheme", c.getAuthScheme(), "user", c.getUser()));
        } else if (o instanceof OpResult) {
            writeJson(sb, opResult((OpResult) o));
        } else if (o instanceof Map) {
            TreeMap<String, Object> m = new TreeMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                m.put(String.valueOf(e.getKey()), e.getValue());
            }
            sb.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : m.entrySet()) {
                if (!first) sb.append(", ");
                first = false;
                writeString(sb, e.getKey());
                sb.append(": ");
                writeJson(sb, e.getValue());
            }
            sb.append('}');
        } else if (o instanceof Iterable) {
            sb.append('[');
            boolean first = true;
            for (Object x : (Iterable<Object>) o) {
                if (!first) sb.append(", ");
                first = false;
                writeJson(sb, x);
            }
            sb.append(']');
        } else if (o instanceof Object[]) {
            writeJson(sb, Arrays.asList((Object[]) o));
        } else {
            writeString(sb, o.toString());
        }
    }

    static void writeString(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20 || c > 0x7e) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
            }
        }
        sb.append('"');
    }

    static String bytes(byte[] b) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            StringBuilder sb = new StringBuilder("hex:");
            for (byte x : b) sb.append(String.format("%02x", x));
            return sb.toString();
        }
    }

    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    static Map<String, Object> stat(Stat s) {
        return map("czxid", s.getCzxid(), "mzxid", s.getMzxid(), "ctime", s.getCtime(), "mtime", s.getMtime(),
            "version", s.getVersion(), "cversion", s.getCversion(), "aversion", s.getAversion(),
            "ephemeralOwner", s.getEphemeralOwner(), "dataLength", s.getDataLength(),
            "numChildren", s.getNumChildren(), "pzxid", s.getPzxid());
    }

    static Map<String, Object> opResult(OpResult r) {
        if (r instanceof OpResult.CreateResult) {
            OpResult.CreateResult c = (OpResult.CreateResult) r;
            return map("op", "create", "path", c.getPath(), "stat", c.getStat());
        } else if (r instanceof OpResult.SetDataResult) {
            return map("op", "setData", "stat", ((OpResult.SetDataResult) r).getStat());
        } else if (r instanceof OpResult.DeleteResult) {
            return map("op", "delete");
        } else if (r instanceof OpResult.CheckResult) {
            return map("op", "check");
        } else if (r instanceof OpResult.GetDataResult) {
            OpResult.GetDataResult g = (OpResult.GetDataResult) r;
            return map("op", "getData", "data", g.getData(), "stat", g.getStat());
        } else if (r instanceof OpResult.GetChildrenResult) {
            return map("op", "getChildren", "children", sorted(((OpResult.GetChildrenResult) r).getChildren()));
        } else if (r instanceof OpResult.ErrorResult) {
            return map("op", "error", "err", code(((OpResult.ErrorResult) r).getErr()));
        }
        return map("op", r.getClass().getSimpleName(), "type", r.getType());
    }

    static String code(int rc) {
        KeeperException.Code c = KeeperException.Code.get(rc);
        return c == null ? "code" + rc : c.name();
    }

    static List<String> sorted(List<String> l) {
        if (l == null) return null;
        List<String> r = new ArrayList<>(l);
        Collections.sort(r);
        return r;
    }

    static synchronized void emit(String step, Object... kv) {
        Map<String, Object> m = map(kv);
        m.put("step", step);
        System.out.println(json(m));
        System.out.flush();
    }

    interface Call {
        Object run() throws Exception;
    }

    /** Runs one client call and records its result or its ZooKeeper error. */
    static Object op(String step, Call c) throws Exception {
        try {
            Object r = c.run();
            emit(step, "ok", r);
            return r;
        } catch (KeeperException e) {
            if (e.getResults() != null) {
                emit(step, "err", e.code().name(), "results", e.getResults());
            } else {
                emit(step, "err", e.code().name());
            }
            return e;
        }
    }

    // ------------------------------------------------------------------ events

    static class Events {
        final List<List<Object>> items = new ArrayList<>();

        Watcher w(final String label) {
            return new Watcher() {
                public void process(WatchedEvent e) {
                    // the Java client hands every connection-state change to every
                    // registered watcher (in hash-set order); session states are
                    // recorded by StateWatcher instead
                    if (e.getType() == Event.EventType.None) return;
                    synchronized (Events.this) {
                        items.add(Arrays.asList(label, e.getType().name(), e.getState().name(), e.getPath()));
                        Events.this.notifyAll();
                    }
                }
            };
        }

        synchronized void waitFor(int n, long timeoutMs) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (items.size() < n) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) break;
                wait(left);
            }
        }

        synchronized List<List<Object>> take() {
            List<List<Object>> r = new ArrayList<>(items);
            items.clear();
            return r;
        }

        /** Wait for n events, then a little longer to catch unexpected extra ones. */
        List<List<Object>> expect(String step, int n, long timeoutMs, long settleMs, boolean ordered)
                throws InterruptedException {
            waitFor(n, timeoutMs);
            Thread.sleep(settleMs);
            List<List<Object>> evs = take();
            if (ordered) {
                emit(step, "events", evs);
            } else {
                List<List<Object>> s = new ArrayList<>(evs);
                s.sort((a, b) -> a.toString().compareTo(b.toString()));
                emit(step, "events_unordered", s);
            }
            return evs;
        }

        List<List<Object>> expect(String step, int n) throws InterruptedException {
            return expect(step, n, 10000, 300, true);
        }
    }

    /** Default watcher: records session state changes, and node events if any. */
    static class StateWatcher implements Watcher {
        final List<String> states = new ArrayList<>();
        final Events nodeEvents;

        StateWatcher(Events nodeEvents) {
            this.nodeEvents = nodeEvents;
        }

        public void process(WatchedEvent e) {
            if (e.getType() == Event.EventType.None) {
                synchronized (this) {
                    states.add(e.getState().name());
                    notifyAll();
                }
            } else if (nodeEvents != null) {
                nodeEvents.w("default").process(e);
            }
        }

        synchronized void waitCount(String state, int count, long timeoutMs) throws Exception {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (Collections.frequency(states, state) < count) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) throw new RuntimeException("timed out waiting for " + state + " x" + count + ", have " + states);
                wait(left);
            }
        }

        synchronized List<String> get() {
            return new ArrayList<>(states);
        }
    }

    static ZooKeeper connect(String addr, int timeoutMs, StateWatcher sw) throws Exception {
        ZooKeeper zk = new ZooKeeper(addr, timeoutMs, sw);
        sw.waitCount("SyncConnected", 1, 20000);
        return zk;
    }

    static ZooKeeper connect(String addr) throws Exception {
        return connect(addr, 10000, new StateWatcher(null));
    }

    static void fresh(ZooKeeper zk, String root) throws Exception {
        if (zk.exists(root, false) != null) {
            ZKUtil.deleteRecursive(zk, root);
        }
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static Map<String, Object> children(ZooKeeper zk, String path, Watcher w) throws Exception {
        Stat st = new Stat();
        List<String> ch = w == null ? zk.getChildren(path, false, st) : zk.getChildren(path, w, st);
        return map("children", sorted(ch), "stat", st);
    }

    static List<String> sortedInfo(List<ClientInfo> l) {
        List<String> r = new ArrayList<>();
        for (ClientInfo c : l) r.add(c.getAuthScheme() + ":" + c.getUser());
        Collections.sort(r);
        return r;
    }

    static List<String> sortedAcl(List<ACL> l) {
        List<String> r = new ArrayList<>();
        for (ACL a : l) r.add(a.getPerms() + "," + a.getId().getScheme() + ":" + a.getId().getId());
        Collections.sort(r);
        return r;
    }

    static String sync(ZooKeeper zk, String path) throws Exception {
        final String[] out = new String[1];
        final CountDownLatch l = new CountDownLatch(1);
        zk.sync(path, new AsyncCallback.VoidCallback() {
            public void processResult(int rc, String p, Object ctx) {
                out[0] = code(rc) + " " + p;
                l.countDown();
            }
        }, null);
        if (!l.await(10, TimeUnit.SECONDS)) throw new RuntimeException("sync timed out");
        return out[0];
    }

    static void waitGone(ZooKeeper zk, String path, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (zk.exists(path, false) != null) {
            if (System.currentTimeMillis() > deadline) throw new RuntimeException("timed out waiting for removal of " + path);
            Thread.sleep(100);
        }
    }

    // ------------------------------------------------------------------ TCP forwarder

    /** Forwards 127.0.0.1:PROXY_PORT to the server; cut() drops every connection and
     *  makes new ones fail until restore(). */
    static class Proxy {
        final ServerSocket ss;
        final InetSocketAddress target;
        final Set<Socket> open = new HashSet<>();
        volatile boolean up = true;

        Proxy(int port, String host, int targetPort) throws IOException {
            target = new InetSocketAddress(host, targetPort);
            ss = new ServerSocket();
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
            Thread t = new Thread(this::acceptLoop, "proxy-accept");
            t.setDaemon(true);
            t.start();
        }

        String addr() {
            return "127.0.0.1:" + ss.getLocalPort();
        }

        void acceptLoop() {
            while (true) {
                Socket c;
                try {
                    c = ss.accept();
                } catch (IOException e) {
                    return;
                }
                if (!up) {
                    quietClose(c);
                    continue;
                }
                Socket s = new Socket();
                try {
                    s.connect(target, 5000);
                    c.setTcpNoDelay(true);
                    s.setTcpNoDelay(true);
                } catch (IOException e) {
                    quietClose(c);
                    quietClose(s);
                    continue;
                }
                synchronized (this) {
                    if (!up) {
                        quietClose(c);
                        quietClose(s);
                        continue;
                    }
                    open.add(c);
                    open.add(s);
                }
                pump(c, s);
                pump(s, c);
            }
        }

        void pump(final Socket from, final Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[65536];
                try {
                    InputStream in = from.getInputStream();
                    OutputStream out = to.getOutputStream();
                    int n;
                    while ((n = in.read(buf)) > 0) {
                        out.write(buf, 0, n);
                        out.flush();
                    }
                } catch (IOException e) {
                    // connection cut
                }
                quietClose(from);
                quietClose(to);
                synchronized (Proxy.this) {
                    open.remove(from);
                    open.remove(to);
                }
            }, "proxy-pump");
            t.setDaemon(true);
            t.start();
        }

        synchronized void cut() {
            up = false;
            for (Socket s : open) quietClose(s);
            open.clear();
        }

        synchronized void restore() {
            up = true;
        }

        void close() {
            cut();
            try {
                ss.close();
            } catch (IOException e) {
                // ignore
            }
        }

        static void quietClose(Socket s) {
            try {
                s.close();
            } catch (IOException e) {
                // ignore
            }
        }
    }

    // ------------------------------------------------------------------ scenarios

    static void crud() throws Exception {
        final String R = "/j_crud";
        final ZooKeeper zk = connect(ADDR);
        fresh(zk, R);
        emit("session", "session_id", zk.getSessionId(), "passwd_len", zk.getSessionPasswd().length);
        op("create_root", () -> zk.create(R, b("root"), OPEN, CreateMode.PERSISTENT));
        op("create2_persistent", () -> {
            Stat st = new Stat();
            String p = zk.create(R + "/a", b("alpha"), OPEN, CreateMode.PERSISTENT, st);
            return map("path", p, "stat", st);
        });
        op("create2_sequential", () -> {
            Stat st = new Stat();
            String p = zk.create(R + "/s-", b("seq"), OPEN, CreateMode.PERSISTENT_SEQUENTIAL, st);
            return map("path", p, "stat", st);
        });
        op("create2_ephemeral", () -> {
            Stat st = new Stat();
            String p = zk.create(R + "/e", b("eph"), OPEN, CreateMode.EPHEMERAL, st);
            return map("path", p, "stat", st);
        });
        op("create2_ephemeral_sequential", () -> {
            Stat st = new Stat();
            String p = zk.create(R + "/es-", b(""), OPEN, CreateMode.EPHEMERAL_SEQUENTIAL, st);
            return map("path", p, "stat", st);
        });
        op("create_dup", () -> zk.create(R + "/a", b("x"), OPEN, CreateMode.PERSISTENT));
        op("create2_dup", () -> zk.create(R + "/a", b("x"), OPEN, CreateMode.PERSISTENT, new Stat()));
        op("create_no_parent", () -> zk.create(R + "/nope/x", b(""), OPEN, CreateMode.PERSISTENT));
        op("create_under_ephemeral", () -> zk.create(R + "/e/x", b(""), OPEN, CreateMode.PERSISTENT));
        op("create_null_data", () -> zk.create(R + "/null", null, OPEN, CreateMode.PERSISTENT));
        op("get_null_data", () -> {
            Stat st = new Stat();
            byte[] d = zk.getData(R + "/null", false, st);
            return map("data", d, "stat", st);
        });
        op("get_data", () -> {
            Stat st = new Stat();
            byte[] d = zk.getData(R + "/a", false, st);
            return map("data", d, "stat", st);
        });
        op("get_data_missing", () -> zk.getData(R + "/missing", false, new Stat()));
        op("exists", () -> zk.exists(R + "/a", false));
        op("exists_missing", () -> zk.exists(R + "/missing", false));
        op("set_data_v0", () -> zk.setData(R + "/a", b("beta"), 0));
        op("set_data_bad_version", () -> zk.setData(R + "/a", b("gamma"), 0));
        op("set_data_any", () -> zk.setData(R + "/a", b("gamma"), -1));
        op("set_data_missing", () -> zk.setData(R + "/missing", b(""), -1));
        op("get_children2", () -> children(zk, R, null));
        op("get_children_missing", () -> children(zk, R + "/missing", null));
        op("get_children_plain", () -> sorted(zk.getChildren(R, false)));
        op("get_acl", () -> {
            Stat st = new Stat();
            List<ACL> acl = zk.getACL(R + "/a", st);
            return map("acl", acl, "stat", st);
        });
        op("get_acl_missing", () -> zk.getACL(R + "/missing", new Stat()));
        op("set_acl_v0", () -> zk.setACL(R + "/a", ZooDefs.Ids.READ_ACL_UNSAFE, 0));
        op("set_acl_bad_version", () -> zk.setACL(R + "/a", OPEN, 0));
        op("set_data_read_only", () -> zk.setData(R + "/a", b("x"), -1));
        op("set_acl_any_version_noauth", () -> zk.setACL(R + "/a", OPEN, -1));
        op("delete_bad_version", () -> {
            zk.delete(R + "/s-0000000001", 3);
            return "deleted";
        });
        op("delete_not_empty", () -> {
            zk.delete(R, -1);
            return "deleted";
        });
        op("delete_ok", () -> {
            zk.delete(R + "/s-0000000001", 0);
            return "deleted";
        });
        op("delete_missing", () -> {
            zk.delete(R + "/s-0000000001", -1);
            return "deleted";
        });
        op("delete_read_only_node", () -> {
            zk.delete(R + "/a", -1);
            return "deleted";
        });
        op("stat_root", () -> zk.exists(R, false));
        op("zookeeper_children", () -> sorted(zk.getChildren("/zookeeper", false)));
        op("sync", () -> sync(zk, R));
        zk.close();
    }

    static void watches() throws Exception {
        final String R = "/j_watch";
        final Events ev = new Events();
        final StateWatcher sw = new StateWatcher(ev);
        final ZooKeeper zk = connect(ADDR, 10000, sw);
        final ZooKeeper other = connect(ADDR);
        fresh(zk, R);
        op("create_root", () -> zk.create(R, b(""), OPEN, CreateMode.PERSISTENT));
        op("exists_watch_missing", () -> zk.exists(R + "/n", ev.w("exists_n")));
        op("other_create_n", () -> other.create(R + "/n", b("1"), OPEN, CreateMode.PERSISTENT));
        ev.expect("events_created", 1);
        op("get_data_watch", () -> zk.getData(R + "/n", ev.w("data_n"), null));
        op("other_set_n", () -> other.setData(R + "/n", b("2"), -1));
        ev.expect("events_data_changed", 1);
        op("other_set_n_unwatched", () -> other.setData(R + "/n", b("3"), -1));
        ev.expect("events_none_after_one_shot", 0, 500, 0, true);
        // the same watcher object registered twice on one path fires once
        final Watcher same = ev.w("same");
        op("get_data_same_watcher", () -> zk.getData(R + "/n", same, null));
        op("exists_same_watcher", () -> zk.exists(R + "/n", same));
        op("other_set_n_same", () -> other.setData(R + "/n", b("4"), -1));
        ev.expect("events_same_watcher_once", 1);
        // two different watchers on the same path both fire (client order is arbitrary)
        op("get_data_w1", () -> zk.getData(R + "/n", ev.w("w1"), null));
        op("exists_w2", () -> zk.exists(R + "/n", ev.w("w2")));
        op("get_children_w3", () -> zk.getChildren(R + "/n", ev.w("w3")));
        op("other_delete_n", () -> {
            other.delete(R + "/n", -1);
            return "deleted";
        });
        ev.expect("events_deleted_all_watchers", 3, 10000, 300, false);
        // child watches
        op("get_children_watch", () -> children(zk, R, ev.w("children_root")));
        op("other_create_c1", () -> other.create(R + "/c1", b(""), OPEN, CreateMode.PERSISTENT));
        op("other_create_c2", () -> other.create(R + "/c2", b(""), OPEN, CreateMode.PERSISTENT));
        ev.expect("events_children_changed_once", 1);
        op("get_children_watch_c1", () -> children(zk, R + "/c1", ev.w("children_c1")));
        op("other_set_c1_data", () -> other.setData(R + "/c1", b("x"), -1));
        ev.expect("events_child_watch_ignores_data", 0, 500, 0, true);
        op("other_delete_c1", () -> {
            other.delete(R + "/c1", -1);
            return "deleted";
        });
        ev.expect("events_child_watch_on_deleted_node", 1);
        // default watcher via boolean watch flag
        op("exists_default_watch", () -> zk.exists(R + "/d", true));
        op("get_children_default_watch", () -> sorted(zk.getChildren(R, true)));
        op("other_create_d", () -> other.create(R + "/d", b(""), OPEN, CreateMode.PERSISTENT));
        ev.expect("events_default_watcher", 2, 10000, 300, false);
        // own-session change triggers own watch
        op("get_data_watch_own", () -> zk.getData(R + "/d", ev.w("own_d"), null));
        op("own_set_d", () -> zk.setData(R + "/d", b("mine"), -1));
        ev.expect("events_own_change", 1);
        // ephemeral of another session
        op("other_create_ephemeral", () -> other.create(R + "/eph", b(""), OPEN, CreateMode.EPHEMERAL));
        op("exists_watch_eph", () -> zk.exists(R + "/eph", ev.w("exists_eph")));
        other.close();
        ev.expect("events_ephemeral_session_closed", 1);
        // data watch on a node that does not exist is an error and leaves no watch
        op("get_data_watch_missing", () -> zk.getData(R + "/ghost", ev.w("data_ghost"), null));
        op("own_create_ghost", () -> zk.create(R + "/ghost", b(""), OPEN, CreateMode.PERSISTENT));
        ev.expect("events_no_watch_from_failed_get", 0, 500, 0, true);
        emit("states", "states", sw.get());
        zk.close();
    }

    static void setWatches() throws Exception {
        final String R = "/j_setwatches";
        final ZooKeeper other = connect(ADDR);
        fresh(other, R);
        for (String p : new String[] {"", "/data", "/gone", "/kids", "/recreated", "/kids2", "/stay", "/tree"}) {
            other.create(R + p, b("v0"), OPEN, CreateMode.PERSISTENT);
        }
        String[] hp = ADDR.split(":");
        Proxy proxy = new Proxy(PROXY_PORT, hp[0], Integer.parseInt(hp[1]));
        final Events ev = new Events();
        final StateWatcher sw = new StateWatcher(ev);
        final ZooKeeper zk = connect(proxy.addr(), 10000, sw);
        final Events pev = new Events();
        final StateWatcher psw = new StateWatcher(pev);
        final ZooKeeper pz = connect(proxy.addr(), 10000, psw);
        op("get_data_watch_data", () -> zk.getData(R + "/data", ev.w("data_data"), null));
        op("get_data_watch_gone", () -> zk.getData(R + "/gone", ev.w("data_gone"), null));
        op("exists_watch_born", () -> zk.exists(R + "/born", ev.w("exists_born")));
        op("get_children_watch_kids", () -> sorted(zk.getChildren(R + "/kids", ev.w("children_kids"))));
        op("exists_watch_flash", () -> zk.exists(R + "/flash", ev.w("exists_flash")));
        op("get_data_watch_recreated", () -> zk.getData(R + "/recreated", ev.w("data_recreated"), null));
        op("get_children_watch_kids2", () -> sorted(zk.getChildren(R + "/kids2", ev.w("children_kids2"))));
        op("get_data_watch_stay", () -> zk.getData(R + "/stay", ev.w("data_stay"), null));
        op("exists_watch_stay", () -> zk.exists(R + "/stay", ev.w("exists_stay")));
        op("add_watch_recursive_tree", () -> {
            pz.addWatch(R + "/tree", pev.w("recursive_tree"), AddWatchMode.PERSISTENT_RECURSIVE);
            return "added";
        });
        op("add_watch_persistent_kids", () -> {
            pz.addWatch(R + "/kids", pev.w("persistent_kids"), AddWatchMode.PERSISTENT);
            return "added";
        });
        proxy.cut();
        sw.waitCount("Disconnected", 1, 20000);
        psw.waitCount("Disconnected", 1, 20000);
        // changes made while both clients are disconnected
        other.setData(R + "/data", b("v1"), -1);
        other.delete(R + "/gone", -1);
        other.create(R + "/born", b(""), OPEN, CreateMode.PERSISTENT);
        other.create(R + "/kids/c", b(""), OPEN, CreateMode.PERSISTENT);
        other.create(R + "/flash", b(""), OPEN, CreateMode.PERSISTENT);
        other.delete(R + "/flash", -1);
        other.delete(R + "/recreated", -1);
        other.create(R + "/recreated", b("again"), OPEN, CreateMode.PERSISTENT);
        other.create(R + "/kids2/tmp", b(""), OPEN, CreateMode.PERSISTENT);
        other.delete(R + "/kids2/tmp", -1);
        other.create(R + "/tree/missed", b(""), OPEN, CreateMode.PERSISTENT);
        proxy.restore();
        sw.waitCount("SyncConnected", 2, 20000);
        psw.waitCount("SyncConnected", 2, 20000);
        // catch-up events generated by SetWatches on reconnect
        ev.expect("catch_up_events", 6, 10000, 500, true);
        pev.expect("persistent_catch_up_events", 0, 500, 0, true);
        emit("states", "states", sw.get());
        emit("persistent_client_states", "states", psw.get());
        // re-registered watches still work
        op("other_set_stay", () -> other.setData(R + "/stay", b("v1"), -1));
        ev.expect("events_stay", 2, 10000, 300, false);
        op("other_create_flash", () -> other.create(R + "/flash", b(""), OPEN, CreateMode.PERSISTENT));
        ev.expect("events_flash", 1);
        op("other_create_tree_child", () -> other.create(R + "/tree/after", b(""), OPEN, CreateMode.PERSISTENT));
        op("other_create_kids_child", () -> other.create(R + "/kids/after", b(""), OPEN, CreateMode.PERSISTENT));
        pev.expect("persistent_events_after_reconnect", 2);
        zk.close();
        pz.close();
        other.close();
        proxy.close();
    }

    static void persistentWatches() throws Exception {
        final String R = "/j_persist";
        final String P = "/j_persist_plain";
        final ZooKeeper other = connect(ADDR);
        fresh(other, R);
        fresh(other, P);
        other.create(R, b(""), OPEN, CreateMode.PERSISTENT);
        final Events ev = new Events();
        final ZooKeeper zk = connect(ADDR, 10000, new StateWatcher(ev));
        final Events pev = new Events();
        final ZooKeeper pz = connect(ADDR, 10000, new StateWatcher(pev));
        final Watcher rec = ev.w("recursive");
        op("add_watch_recursive", () -> {
            zk.addWatch(R, rec, AddWatchMode.PERSISTENT_RECURSIVE);
            return "added";
        });
        op("create_a", () -> other.create(R + "/a", b(""), OPEN, CreateMode.PERSISTENT));
        op("create_a_b", () -> other.create(R + "/a/b", b(""), OPEN, CreateMode.PERSISTENT));
        op("set_a_b", () -> other.setData(R + "/a/b", b("x"), -1));
        op("set_a_b_again", () -> other.setData(R + "/a/b", b("y"), -1));
        op("create_a_b_c_ephemeral", () -> other.create(R + "/a/b/c", b(""), OPEN, CreateMode.EPHEMERAL));
        op("delete_a_b_c", () -> {
            other.delete(R + "/a/b/c", -1);
            return "deleted";
        });
        op("set_root", () -> other.setData(R, b("r"), -1));
        op("create_seq", () -> other.create(R + "/a/s-", b(""), OPEN, CreateMode.PERSISTENT_SEQUENTIAL));
        op("multi", () -> other.multi(Arrays.asList(
            Op.create(R + "/m", b(""), OPEN, CreateMode.PERSISTENT),
            Op.setData(R + "/m", b("m"), 0),
            Op.delete(R + "/m", 1))));
        ev.expect("recursive_events", 11, 10000, 500, true);
        // sibling path outside the watched subtree: nothing
        op("create_sibling", () -> other.create(R + "_sibling", b(""), OPEN, CreateMode.PERSISTENT));
        ev.expect("recursive_events_sibling", 0, 500, 0, true);
        other.delete(R + "_sibling", -1);
        // plain persistent watch: data + child events of the node itself, repeatedly
        op("add_watch_persistent_missing_node", () -> {
            pz.addWatch(P, pev.w("persistent"), AddWatchMode.PERSISTENT);
            return "added";
        });
        op("create_p", () -> other.create(P, b(""), OPEN, CreateMode.PERSISTENT));
        op("create_p_c", () -> other.create(P + "/c", b(""), OPEN, CreateMode.PERSISTENT));
        op("create_p_c_d", () -> other.create(P + "/c/d", b(""), OPEN, CreateMode.PERSISTENT));
        op("set_p_c", () -> other.setData(P + "/c", b("x"), -1));
        op("set_p", () -> other.setData(P, b("x"), -1));
        op("set_p_again", () -> other.setData(P, b("y"), -1));
        op("delete_p_c_d", () -> {
            other.delete(P + "/c/d", -1);
            return "deleted";
        });
        op("delete_p_c", () -> {
            other.delete(P + "/c", -1);
            return "deleted";
        });
        op("delete_p", () -> {
            other.delete(P, -1);
            return "deleted";
        });
        op("create_p_again", () -> other.create(P, b(""), OPEN, CreateMode.PERSISTENT));
        pev.expect("persistent_events", 7, 10000, 500, true);
        // removing a persistent watch
        op("remove_recursive", () -> {
            zk.removeWatches(R, rec, Watcher.WatcherType.Any, false);
            return "removed";
        });
        ev.expect("events_after_remove", 1);
        op("create_after_remove", () -> other.create(R + "/after", b(""), OPEN, CreateMode.PERSISTENT));
        ev.expect("events_none_after_remove", 0, 500, 0, true);
        op("remove_all_persistent", () -> {
            pz.removeAllWatches(P, Watcher.WatcherType.Any, false);
            return "removed";
        });
        pev.expect("persistent_events_after_remove_all", 1);
        op("set_p_after_remove", () -> other.setData(P, b("z"), -1));
        pev.expect("persistent_events_none", 0, 500, 0, true);
        // recursive watch with a standard watch on the same path (client dispatch order is arbitrary)
        op("add_watch_recursive_again", () -> {
            zk.addWatch(R, ev.w("recursive2"), AddWatchMode.PERSISTENT_RECURSIVE);
            return "added";
        });
        op("get_data_watch_a", () -> zk.getData(R + "/a", ev.w("data_a"), null));
        op("set_a", () -> other.setData(R + "/a", b("a"), -1));
        ev.expect("events_recursive_and_standard", 2, 10000, 300, false);
        zk.close();
        pz.close();
        other.close();
    }

    static void removeWatches() throws Exception {
        final String R = "/j_removewatches";
        final ZooKeeper other = connect(ADDR);
        fresh(other, R);
        other.create(R, b(""), OPEN, CreateMode.PERSISTENT);
        other.create(R + "/x", b(""), OPEN, CreateMode.PERSISTENT);
        final Events ev = new Events();
        final ZooKeeper zk = connect(ADDR, 10000, new StateWatcher(ev));
        final Watcher w1 = ev.w("w1");
        final Watcher w2 = ev.w("w2");
        final Watcher w3 = ev.w("w3");
        final Watcher w4 = ev.w("w4");
        op("get_data_w1", () -> zk.getData(R, w1, null));
        op("get_children_w2", () -> sorted(zk.getChildren(R, w2)));
        op("remove_data_w1", () -> {
            zk.removeWatches(R, w1, Watcher.WatcherType.Data, false);
            return "removed";
        });
        ev.expect("events_remove_data_w1", 1);
        op("remove_data_w1_again", () -> {
            zk.removeWatches(R, w1, Watcher.WatcherType.Data, false);
            return "removed";
        });
        op("remove_children_w1", () -> {
            zk.removeWatches(R, w1, Watcher.WatcherType.Children, false);
            return "removed";
        });
        op("remove_data_w2", () -> {
            zk.removeWatches(R, w2, Watcher.WatcherType.Data, false);
            return "removed";
        });
        op("remove_any_w2", () -> {
            zk.removeWatches(R, w2, Watcher.WatcherType.Any, false);
            return "removed";
        });
        ev.expect("events_remove_any_w2", 1);
        op("remove_all_none_left", () -> {
            zk.removeAllWatches(R, Watcher.WatcherType.Any, false);
            return "removed";
        });
        op("remove_watches_missing_path", () -> {
            zk.removeAllWatches(R + "/missing", Watcher.WatcherType.Any, false);
            return "removed";
        });
        op("set_after_removals", () -> other.setData(R, b("1"), -1));
        op("create_child_after_removals", () -> other.create(R + "/c", b(""), OPEN, CreateMode.PERSISTENT));
        ev.expect("events_none_after_removals", 0, 500, 0, true);
        // removeAllWatches by type
        op("get_data_w3", () -> zk.getData(R + "/x", w3, null));
        op("exists_w4", () -> zk.exists(R + "/x", w4));
        op("get_children_w3", () -> sorted(zk.getChildren(R + "/x", w3)));
        op("remove_all_children_x", () -> {
            zk.removeAllWatches(R + "/x", Watcher.WatcherType.Children, false);
            return "removed";
        });
        ev.expect("events_remove_all_children", 1);
        op("remove_all_data_x", () -> {
            zk.removeAllWatches(R + "/x", Watcher.WatcherType.Data, false);
            return "removed";
        });
        ev.expect("events_remove_all_data", 2, 10000, 300, false);
        op("set_x_after_removals", () -> other.setData(R + "/x", b("1"), -1));
        ev.expect("events_none_x", 0, 500, 0, true);
        // local removal: the server keeps its watch, the client ignores the event
        final Watcher w5 = ev.w("w5");
        op("get_data_w5", () -> zk.getData(R + "/x", w5, null));
        op("remove_local_w5", () -> {
            zk.removeWatches(R + "/x", w5, Watcher.WatcherType.Data, true);
            return "removed";
        });
        ev.expect("events_remove_local", 1);
        op("set_x_after_local_removal", () -> other.setData(R + "/x", b("2"), -1));
        ev.expect("events_after_local_removal", 0, 500, 0, true);
        zk.close();
        other.close();
    }

    static void multi() throws Exception {
        final String R = "/j_multi";
        final ZooKeeper zk = connect(ADDR);
        fresh(zk, R);
        op("create_root", () -> zk.create(R, b(""), OPEN, CreateMode.PERSISTENT));
        op("create_x", () -> zk.create(R + "/x", b("x0"), OPEN, CreateMode.PERSISTENT));
        op("multi_ok", () -> zk.multi(Arrays.asList(
            Op.create(R + "/a", b("a"), OPEN, CreateMode.PERSISTENT),
            Op.create(R + "/s-", b(""), OPEN, CreateMode.PERSISTENT_SEQUENTIAL),
            Op.create(R + "/e", b(""), OPEN, CreateMode.EPHEMERAL),
            Op.setData(R + "/x", b("x1"), 0),
            Op.check(R + "/x", 1),
            Op.delete(R + "/a", 0))));
        op("multi_container_ttl", () -> zk.multi(Arrays.asList(
            Op.create(R + "/cont", b(""), OPEN, CreateMode.CONTAINER),
            Op.create(R + "/ttl", b(""), OPEN, CreateMode.PERSISTENT_WITH_TTL, 60000),
            Op.create(R + "/cont/child", b(""), OPEN, CreateMode.PERSISTENT))));
        op("multi_fail_bad_version", () -> zk.multi(Arrays.asList(
            Op.create(R + "/b", b(""), OPEN, CreateMode.PERSISTENT),
            Op.setData(R + "/x", b("x2"), 1),
            Op.check(R + "/x", 5),
            Op.delete(R + "/x", -1))));
        op("multi_fail_no_node", () -> zk.multi(Arrays.asList(
            Op.check(R + "/missing", -1),
            Op.create(R + "/b", b(""), OPEN, CreateMode.PERSISTENT))));
        op("multi_fail_node_exists", () -> zk.multi(Arrays.asList(
            Op.create(R + "/b", b(""), OPEN, CreateMode.PERSISTENT),
            Op.create(R + "/b", b(""), OPEN, CreateMode.PERSISTENT))));
        op("multi_fail_not_empty", () -> zk.multi(Arrays.asList(
            Op.delete(R + "/cont", -1))));
        op("multi_fail_ephemeral_parent", () -> zk.multi(Arrays.asList(
            Op.create(R + "/e/child", b(""), OPEN, CreateMode.PERSISTENT))));
        op("multi_transaction_api", () -> zk.transaction()
            .create(R + "/t", b("t"), OPEN, CreateMode.PERSISTENT)
            .setData(R + "/t", b("t1"), 0)
            .check(R + "/t", 1)
            .commit());
        op("multi_read", () -> zk.multi(Arrays.asList(
            Op.getChildren(R),
            Op.getData(R + "/x"),
            Op.getData(R + "/missing"),
            Op.getChildren(R + "/missing"),
            Op.getData(R + "/t"))));
        op("multi_empty", () -> zk.multi(new ArrayList<Op>()));
        op("multi_async", () -> {
            final Object[] out = new Object[2];
            final CountDownLatch l = new CountDownLatch(1);
            zk.multi(Arrays.asList(
                Op.create(R + "/async", b(""), OPEN, CreateMode.PERSISTENT),
                Op.delete(R + "/missing", -1)), new AsyncCallback.MultiCallback() {
                    public void processResult(int rc, String path, Object ctx, List<OpResult> results) {
                        out[0] = code(rc);
                        out[1] = results;
                        l.countDown();
                    }
                }, null);
            if (!l.await(10, TimeUnit.SECONDS)) throw new RuntimeException("async multi timed out");
            return map("rc", out[0], "results", out[1]);
        });
        op("get_x", () -> {
            Stat st = new Stat();
            return map("data", zk.getData(R + "/x", false, st), "stat", st);
        });
        op("children", () -> children(zk, R, null));
        zk.close();
    }

    static void info() throws Exception {
        final String R = "/j_info";
        final ZooKeeper zk = connect(ADDR);
        final ZooKeeper other = connect(ADDR);
        fresh(zk, R);
        for (String p : new String[] {"", "/a", "/a/b", "/a/c", "/a/c/d", "/d"}) {
            zk.create(R + p, b(""), OPEN, CreateMode.PERSISTENT);
        }
        op("all_children_root", () -> zk.getAllChildrenNumber(R));
        op("all_children_a", () -> zk.getAllChildrenNumber(R + "/a"));
        op("all_children_leaf", () -> zk.getAllChildrenNumber(R + "/d"));
        op("all_children_missing", () -> zk.getAllChildrenNumber(R + "/missing"));
        op("ephemerals_none", () -> sorted(zk.getEphemerals()));
        op("create_e1", () -> zk.create(R + "/e1", b(""), OPEN, CreateMode.EPHEMERAL));
        op("create_a_e2", () -> zk.create(R + "/a/e2", b(""), OPEN, CreateMode.EPHEMERAL));
        op("create_eph_seq", () -> zk.create(R + "/eph-", b(""), OPEN, CreateMode.EPHEMERAL_SEQUENTIAL));
        op("other_create_oe", () -> other.create(R + "/oe", b(""), OPEN, CreateMode.EPHEMERAL));
        op("ephemerals_all", () -> sorted(zk.getEphemerals()));
        op("ephemerals_root_slash", () -> sorted(zk.getEphemerals("/")));
        op("ephemerals_prefix_a", () -> sorted(zk.getEphemerals(R + "/a")));
        op("ephemerals_prefix_partial_name", () -> sorted(zk.getEphemerals(R + "/e")));
        op("ephemerals_prefix_none", () -> sorted(zk.getEphemerals(R + "/zzz")));
        op("ephemerals_other", () -> sorted(other.getEphemerals()));
        op("all_children_root_with_ephemerals", () -> zk.getAllChildrenNumber(R));
        // ZooKeeper keeps a connection's auth ids in a hash set, so the order of
        // whoAmI results and of a CREATOR_ALL ACL expansion is arbitrary: sort them
        op("whoami", () -> sortedInfo(zk.whoAmI()));
        zk.addAuthInfo("digest", b("carol:pw"));
        op("whoami_after_digest", () -> sortedInfo(zk.whoAmI()));
        zk.addAuthInfo("digest", b("dave:pw2"));
        op("whoami_after_second_digest", () -> sortedInfo(zk.whoAmI()));
        op("create_with_auth_acl", () -> zk.create(R + "/auth", b(""), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT));
        op("get_acl_auth", () -> sortedAcl(zk.getACL(R + "/auth", new Stat())));
        op("sync", () -> sync(zk, R));
        op("sync_missing_path", () -> sync(zk, R + "/missing"));
        // an unknown auth scheme fails the session
        final StateWatcher bsw = new StateWatcher(null);
        final ZooKeeper bad = connect(ADDR, 10000, bsw);
        bad.addAuthInfo("nosuchscheme", b("x"));
        bsw.waitCount("AuthFailed", 1, 10000);
        Thread.sleep(300);
        emit("bad_auth_states", "states", bsw.get());
        op("bad_auth_exists", () -> bad.exists(R, false));
        bad.close();
        zk.close();
        op("other_ephemerals_after_close", () -> sorted(other.getEphemerals()));
        op("other_children_after_close", () -> children(other, R, null));
        other.close();
    }

    static void containersTtl() throws Exception {
        final String R = "/j_containers";
        final ZooKeeper zk = connect(ADDR);
        fresh(zk, R);
        final Events ev = new Events();
        op("create_root", () -> zk.create(R, b(""), OPEN, CreateMode.PERSISTENT));
        op("create_container", () -> {
            Stat st = new Stat();
            return map("path", zk.create(R + "/c", b("c"), OPEN, CreateMode.CONTAINER, st), "stat", st);
        });
        op("create_container_no_stat", () -> zk.create(R + "/c2", b(""), OPEN, CreateMode.CONTAINER));
        op("create_ttl", () -> {
            Stat st = new Stat();
            return map("path", zk.create(R + "/t", b("t"), OPEN, CreateMode.PERSISTENT_WITH_TTL, st, 1000), "stat", st);
        });
        op("create_ttl_sequential", () -> {
            Stat st = new Stat();
            return map("path", zk.create(R + "/ts-", b(""), OPEN, CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, st, 1000), "stat", st);
        });
        op("create_child", () -> zk.create(R + "/c/x", b(""), OPEN, CreateMode.PERSISTENT));
        op("create_ttl_in_container", () -> zk.create(R + "/c2/t", b(""), OPEN, CreateMode.PERSISTENT_WITH_TTL, null, 1000));
        op("exists_watch_c", () -> zk.exists(R + "/c", ev.w("exists_c")));
        op("exists_watch_t", () -> zk.exists(R + "/t", ev.w("exists_t")));
        op("exists_watch_c2", () -> zk.exists(R + "/c2", ev.w("exists_c2")));
        op("delete_child", () -> {
            zk.delete(R + "/c/x", -1);
            return "deleted";
        });
        // c: emptied container; t: TTL expiry; c2: its TTL child expires, then it is an emptied container
        ev.expect("events_removed", 3, 20000, 300, false);
        waitGone(zk, R + "/ts-0000000003", 20000);
        op("children_end", () -> children(zk, R, null));
        zk.close();
    }

    /** whoAmI and a CREATOR_ALL expansion in the server's own order, unsorted: ZooKeeper lists a
     *  connection's identities in the order of its ConcurrentHashMap-backed set. */
    static void authOrder() throws Exception {
        final String R = "/j_auth_order";
        final ZooKeeper zk = connect(ADDR);
        fresh(zk, R);
        zk.create(R, b(""), OPEN, CreateMode.PERSISTENT);
        op("whoami", () -> infos(zk.whoAmI()));
        String[] users = {"alice:pw", "bob:pw", "carol:pw", "dave:pw", "erin:pw"};
        for (String u : users) {
            zk.addAuthInfo("digest", b(u));
            final String name = u.substring(0, u.indexOf(':'));
            op("whoami_after_" + name, () -> infos(zk.whoAmI()));
        }
        zk.addAuthInfo("digest", b("alice:pw"));
        op("whoami_after_alice_again", () -> infos(zk.whoAmI()));
        op("create_creator_all", () -> zk.create(R + "/n", b(""), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT));
        op("get_acl_unsorted", () -> {
            List<String> r = new ArrayList<>();
            for (ACL a : zk.getACL(R + "/n", new Stat())) r.add(a.getPerms() + "," + a.getId().getScheme() + ":" + a.getId().getId());
            return r;
        });
        zk.delete(R + "/n", -1);
        zk.delete(R, -1);
        zk.close();
    }

    /** zkCli's setquota, through the code zkCli runs (SetQuotaCommand.createQuota). */
    static Object setQuota(ZooKeeper zk, String path, String opt, long v) throws Exception {
        StatsTrack q = new StatsTrack();
        q.setCount(-1);
        q.setBytes(-1L);
        q.setCountHardLimit(-1);
        q.setByteHardLimit(-1L);
        switch (opt) {
            case "n": q.setCount(v); break;
            case "b": q.setBytes(v); break;
            case "N": q.setCountHardLimit(v); break;
            default: q.setByteHardLimit(v); break;
        }
        try {
            return SetQuotaCommand.createQuota(zk, path, q);
        } catch (IllegalArgumentException e) {
            return "IllegalArgumentException: " + e.getMessage();
        }
    }

    /** zkCli's delquota [-n|-b|-N|-B] (DelQuotaCommand.delQuota); opt null deletes the quota. */
    static Object delQuota(ZooKeeper zk, String path, String opt) throws Exception {
        StatsTrack q = null;
        if (opt != null) {
            q = new StatsTrack();
            switch (opt) {
                case "n": q.setCount(1); break;
                case "b": q.setBytes(1); break;
                case "N": q.setCountHardLimit(1); break;
                default: q.setByteHardLimit(1); break;
            }
        }
        return DelQuotaCommand.delQuota(zk, path, q);
    }

    static Map<String, Object> data(ZooKeeper zk, String path) throws Exception {
        Stat st = new Stat();
        byte[] d = zk.getData(path, false, st);
        return map("data", d == null ? null : new String(d, StandardCharsets.UTF_8), "stat", st);
    }

    /** Quotas (3.7+): setquota/delquota as zkCli does them, the zookeeper_limits and
     *  zookeeper_stats nodes the server keeps, and QuotaExceeded with enforceQuota=true. */
    static void quota() throws Exception {
        final String R = "/j_quota";
        final String Q = "/zookeeper/quota" + R;
        final ZooKeeper zk = connect(ADDR);
        final ZooKeeper other = connect(ADDR);
        fresh(zk, R);
        fresh(zk, Q);
        zk.create(R, b(""), OPEN, CreateMode.PERSISTENT);
        zk.create(R + "/a", b("xx"), OPEN, CreateMode.PERSISTENT);
        op("setquota_N4", () -> setQuota(zk, R, "N", 4));
        op("quota_children", () -> sorted(zk.getChildren(Q, false)));
        op("limits", () -> data(zk, Q + "/zookeeper_limits"));
        op("stats", () -> data(zk, Q + "/zookeeper_stats"));
        op("create_b", () -> zk.create(R + "/b", b("123"), OPEN, CreateMode.PERSISTENT));
        op("create_c_null_data", () -> zk.create(R + "/c", null, OPEN, CreateMode.PERSISTENT));
        op("stats_after_creates", () -> data(zk, Q + "/zookeeper_stats"));
        op("create_d_over_count", () -> zk.create(R + "/d", b(""), OPEN, CreateMode.PERSISTENT));
        op("create_seq_over_count", () -> zk.create(R + "/s-", b(""), OPEN, CreateMode.PERSISTENT_SEQUENTIAL));
        op("stats_unchanged", () -> data(zk, Q + "/zookeeper_stats"));
        op("setquota_B10", () -> setQuota(zk, R, "B", 10));
        op("limits_after_B", () -> data(zk, Q + "/zookeeper_limits"));
        op("set_a_over_bytes", () -> zk.setData(R + "/a", b("12345678"), -1));
        op("set_a_over_bytes_bad_version", () -> zk.setData(R + "/a", b("123456789"), 99));
        op("set_a_to_limit", () -> zk.setData(R + "/a", b("1234567"), -1));
        op("stats_after_set", () -> data(zk, Q + "/zookeeper_stats"));
        op("multi_delete_then_create", () -> zk.multi(Arrays.asList(
            Op.delete(R + "/c", -1),
            Op.create(R + "/d", b(""), OPEN, CreateMode.PERSISTENT))));
        op("delete_c", () -> { zk.delete(R + "/c", -1); return null; });
        op("other_ephemeral", () -> other.create(R + "/e", b(""), OPEN, CreateMode.EPHEMERAL));
        op("stats_with_ephemeral", () -> data(zk, Q + "/zookeeper_stats"));
        other.close();
        op("stats_after_session_close", () -> data(zk, Q + "/zookeeper_stats"));
        op("delquota_N", () -> delQuota(zk, R, "N"));
        op("setquota_n3", () -> setQuota(zk, R, "n", 3));
        op("limits_soft", () -> data(zk, Q + "/zookeeper_limits"));
        op("create_f_past_soft_limit", () -> zk.create(R + "/f", b(""), OPEN, CreateMode.PERSISTENT));
        op("stats_soft", () -> data(zk, Q + "/zookeeper_stats"));
        op("setquota_on_child_refused", () -> setQuota(zk, R + "/a", "n", 1));
        op("listquota", () -> {
            List<String> r = new ArrayList<>();
            for (StatsTrack t : ListQuotaCommand.listQuota(zk, R)) r.add(t.toString());
            return r;
        });
        op("delquota_all", () -> delQuota(zk, R, null));
        op("quota_root_children", () -> sorted(zk.getChildren("/zookeeper/quota", false)));
        op("create_g_without_quota", () -> zk.create(R + "/g", b("0123456789abc"), OPEN, CreateMode.PERSISTENT));
        op("children_end", () -> children(zk, R, null));
        ZKUtil.deleteRecursive(zk, R);
        zk.close();
    }

    static List<String> infos(List<ClientInfo> l) {
        List<String> r = new ArrayList<>();
        for (ClientInfo c : l) r.add(c.getAuthScheme() + ":" + c.getUser());
        return r;
    }

    static final String[] NAMES = {"crud", "watches", "setwatches", "persistent_watches", "remove_watches",
        "multi", "info", "containers_ttl", "auth_order", "quota"};

    /** If a server stops answering, print where the scenario hangs and give up. */
    static void startWatchdog(final Thread main) {
        final long secs = Long.parseLong(System.getenv().getOrDefault("INTEROP_WATCHDOG_SECS", "75"));
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(secs * 1000);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("watchdog: scenario still running after " + secs + "s; main thread:");
            for (StackTraceElement el : main.getStackTrace()) System.err.println("    at " + el);
            System.out.flush();
            System.exit(3);
        }, "watchdog");
        t.setDaemon(true);
        t.start();
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("--list")) {
            for (String n : NAMES) System.out.println(n);
            System.exit(0);
        }
        if (args.length < 2) {
            System.err.println("usage: Interop --list | Interop SCENARIO HOST:PORT [PROXY_PORT]");
            System.exit(2);
        }
        ADDR = args[1];
        PROXY_PORT = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        startWatchdog(Thread.currentThread());
        int rc = 0;
        try {
            switch (args[0]) {
                case "crud": crud(); break;
                case "watches": watches(); break;
                case "setwatches": setWatches(); break;
                case "persistent_watches": persistentWatches(); break;
                case "remove_watches": removeWatches(); break;
                case "multi": multi(); break;
                case "info": info(); break;
                case "containers_ttl": containersTtl(); break;
                case "auth_order": authOrder(); break;
                case "quota": quota(); break;
                default:
                    System.err.println("unknown scenario " + args[0]);
                    rc = 2;
            }
        } catch (Throwable t) {
            t.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        System.exit(rc);
    }
}
