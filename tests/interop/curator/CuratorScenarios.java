// Interop scenarios driven through Apache Curator 5 recipes (Debian's
// libcurator-*-java 5.4), on top of the official ZooKeeper 3.8 Java client.
//
//   java -cp <classpath> CuratorScenarios --list
//   java -cp <classpath> CuratorScenarios SCENARIO HOST:PORT
//
// Prints a JSON-lines transcript (one object per step, keys sorted) of what the
// recipes observed.  run.sh runs it against ZooKeeper and against zkr and
// compares the normalised transcripts (lib/compare.py).  Expected ZooKeeper
// errors are part of the transcript; anything else (client-side exceptions,
// timeouts while connecting) makes the program exit non-zero.
//
// Server restart: the "restart" scenario prints the line RESTART on stdout and
// waits for one line on stdin.  run.sh takes that line out of the transcript,
// restarts the server the scenario talks to (same data directory), and answers
// RESTARTED (or RESTART_FAILED).  By hand: restart the server yourself, then
// type RESTARTED.
//
// Every recipe runs in its own root /j_cur_<name> (removed by
// "kazoo/scenarios.py --cleanup", which removes /j_*).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.NodeCache;
import org.apache.curator.framework.recipes.cache.PathChildrenCache;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.quorum.flexible.QuorumVerifier;

@SuppressWarnings("deprecation") // NodeCache, PathChildrenCache and TreeCache are deprecated in Curator 5
public class CuratorScenarios {
    static final List<String> NAMES = Arrays.asList(
        "node_cache", "path_children_cache", "tree_cache", "curator_cache", "service_discovery",
        "leader_latch", "mutex", "atomic_long", "queue", "ensemble_tracker", "restart");

    static String ADDR;
    static final List<AutoCloseable> CLOSE = new ArrayList<>();

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
        } else if (o instanceof ChildData) {
            writeJson(sb, childData((ChildData) o));
        } else if (o instanceof ACL) {
            ACL a = (ACL) o;
            writeJson(sb, map("perms", a.getPerms(), "scheme", a.getId().getScheme(), "id", a.getId().getId()));
        } else if (o instanceof Map) {
            TreeMap<String, Object> m = new TreeMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) m.put(String.valueOf(e.getKey()), e.getValue());
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
            return hex(b);
        }
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder("hex:");
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
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

    static Map<String, Object> childData(ChildData d) {
        if (d == null) return null;
        return map("path", d.getPath(), "data", d.getData(), "stat", d.getStat());
    }

    static List<String> sorted(Collection<String> l) {
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

    /** Runs one call and records its result or its ZooKeeper error. */
    static Object op(String step, Call c) throws Exception {
        try {
            Object r = c.run();
            emit(step, "ok", r);
            return r;
        } catch (KeeperException e) {
            emit(step, "err", e.code().name());
            return e;
        }
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // ------------------------------------------------------------------ events

    /** Events recorded by recipe listeners (on Curator's threads). */
    static class Rec {
        final List<Object> items = new ArrayList<>();

        synchronized void add(Object o) {
            items.add(o);
            notifyAll();
        }

        synchronized void waitFor(int n, long timeoutMs) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (items.size() < n) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) break;
                wait(left);
            }
        }

        synchronized List<Object> take() {
            List<Object> r = new ArrayList<>(items);
            items.clear();
            return r;
        }

        /** Waits for n events, then a little longer to catch unexpected extra ones. */
        List<Object> expect(String step, int n) throws InterruptedException {
            waitFor(n, 10000);
            Thread.sleep(300);
            List<Object> evs = take();
            emit(step, "events", evs);
            return evs;
        }

        /** Like expect, for events whose relative order is not defined (sorted by compare.py). */
        List<Object> expectUnordered(String step, int n) throws InterruptedException {
            waitFor(n, 10000);
            Thread.sleep(300);
            List<Object> evs = take();
            emit(step, "events_unordered", evs);
            return evs;
        }
    }

    // ------------------------------------------------------------------ helpers

    static CuratorFramework client(boolean ensembleTracker) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
            .connectString(ADDR)
            .sessionTimeoutMs(15000)
            .connectionTimeoutMs(5000)
            .retryPolicy(new ExponentialBackoffRetry(100, 10, 1000))
            .ensembleTracker(ensembleTracker)
            .build();
        c.start();
        synchronized (CLOSE) {
            CLOSE.add(c);
        }
        if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) throw new RuntimeException("could not connect to " + ADDR);
        return c;
    }

    static CuratorFramework client() throws Exception {
        return client(true);
    }

    static <T extends AutoCloseable> T closeLater(T c) {
        synchronized (CLOSE) {
            CLOSE.add(c);
        }
        return c;
    }

    static void closeAll() {
        List<AutoCloseable> l;
        synchronized (CLOSE) {
            l = new ArrayList<>(CLOSE);
            CLOSE.clear();
        }
        Collections.reverse(l);
        for (AutoCloseable c : l) {
            try {
                c.close();
            } catch (Exception e) {
                // already closed
            }
        }
    }

    static long sessionId(CuratorFramework c) throws Exception {
        return c.getZookeeperClient().getZooKeeper().getSessionId();
    }

    static void fresh(CuratorFramework c, String root) throws Exception {
        if (c.checkExists().forPath(root) != null) c.delete().deletingChildrenIfNeeded().forPath(root);
    }

    static List<String> children(CuratorFramework c, String path) throws Exception {
        return sorted(c.getChildren().forPath(path));
    }

    static void waitChildren(CuratorFramework c, String path, int n) throws Exception {
        long deadline = System.currentTimeMillis() + 10000;
        while (c.getChildren().forPath(path).size() != n) {
            if (System.currentTimeMillis() > deadline) {
                throw new RuntimeException("timed out waiting for " + n + " children of " + path + ", have "
                    + c.getChildren().forPath(path));
            }
            Thread.sleep(20);
        }
    }

    /** "_c_<uuid>-lock-0000000003" -> "lock-0000000003" (the protection prefix is random). */
    static List<String> seqNames(List<String> names, String marker) {
        List<String> r = new ArrayList<>();
        for (String n : names) {
            int i = n.lastIndexOf(marker);
            r.add((n.startsWith("_c_") ? "_c_*-" : "?") + (i < 0 ? n : n.substring(i)));
        }
        Collections.sort(r);
        return r;
    }

    static Map<String, Object> atomic(AtomicValue<Long> v) {
        return map("succeeded", v.succeeded(), "preValue", v.preValue(), "postValue", v.postValue());
    }

    static Map<String, Object> instance(ServiceInstance<String> i) {
        if (i == null) return null;
        return map("name", i.getName(), "id", i.getId(), "address", i.getAddress(), "port", i.getPort(),
            "sslPort", i.getSslPort(), "payload", i.getPayload(), "serviceType", i.getServiceType(),
            "enabled", i.isEnabled());
    }

    static List<Map<String, Object>> instances(Collection<ServiceInstance<String>> l) {
        List<Map<String, Object>> r = new ArrayList<>();
        for (ServiceInstance<String> i : l) r.add(instance(i));
        r.sort((x, y) -> String.valueOf(x.get("id")).compareTo(String.valueOf(y.get("id"))));
        return r;
    }

    // ------------------------------------------------------------------ scenarios

    /** NodeCache on one node: create, updates, delete, re-create; one listener call per change. */
    static void nodeCache() throws Exception {
        final String R = "/j_cur_nodecache";
        final String N = R + "/n";
        final CuratorFramework c = client();
        fresh(c, R);
        op("create_root", () -> c.create().forPath(R, b("root")));
        final NodeCache nc = closeLater(new NodeCache(c, N));
        final Rec rec = new Rec();
        nc.getListenable().addListener(() -> {
            ChildData d = nc.getCurrentData();
            rec.add(d == null ? map("node", "absent") : childData(d));
        });
        nc.start(true);
        emit("initial", "current", childData(nc.getCurrentData()));
        rec.expect("initial_events", 0);
        op("create", () -> c.create().forPath(N, b("v1")));
        rec.expect("after_create", 1);
        op("set_v2", () -> c.setData().forPath(N, b("v2")));
        rec.expect("after_set_v2", 1);
        op("set_v3", () -> c.setData().forPath(N, b("v3")));
        rec.expect("after_set_v3", 1);
        op("set_same_data", () -> c.setData().forPath(N, b("v3")));
        rec.expect("after_set_same_data", 1);
        op("delete", () -> {
            c.delete().forPath(N);
            return "deleted";
        });
        rec.expect("after_delete", 1);
        emit("current_after_delete", "current", childData(nc.getCurrentData()));
        op("recreate_ephemeral", () -> c.create().withMode(CreateMode.EPHEMERAL).forPath(N, b("v4")));
        rec.expect("after_recreate", 1);
        op("delete_versioned_wrong", () -> {
            c.delete().withVersion(5).forPath(N);
            return "deleted";
        });
        op("delete_versioned", () -> {
            c.delete().withVersion(0).forPath(N);
            return "deleted";
        });
        rec.expect("after_delete_versioned", 1);
        nc.close();
    }

    /** PathChildrenCache: initial children, then added / updated / removed with data. */
    static void pathChildrenCache() throws Exception {
        final String R = "/j_cur_pcc";
        final CuratorFramework c = client();
        fresh(c, R);
        emit("session", "session_id", sessionId(c));
        op("create_root", () -> c.create().forPath(R, b("root")));
        op("create_a", () -> c.create().forPath(R + "/a", b("A1")));
        op("create_b", () -> c.create().forPath(R + "/b", b("B1")));
        final PathChildrenCache pcc = closeLater(new PathChildrenCache(c, R, true));
        final Rec rec = new Rec();
        pcc.getListenable().addListener((cl, ev) ->
            rec.add(map("type", ev.getType().name(), "data", childData(ev.getData()))));
        pcc.start(PathChildrenCache.StartMode.POST_INITIALIZED_EVENT);
        // the initial CHILD_ADDED events follow getChildren order (hash-set order on ZooKeeper)
        rec.waitFor(3, 10000);
        Thread.sleep(300);
        List<Object> evs = rec.take();
        Object last = evs.isEmpty() ? null : evs.remove(evs.size() - 1);
        emit("initial", "events_unordered", evs, "then", last);
        op("create_c", () -> c.create().forPath(R + "/c", b("C1")));
        rec.expect("after_create_c", 1);
        op("set_a", () -> c.setData().forPath(R + "/a", b("A2")));
        rec.expect("after_set_a", 1);
        op("delete_b", () -> {
            c.delete().forPath(R + "/b");
            return "deleted";
        });
        rec.expect("after_delete_b", 1);
        op("create_ephemeral_e", () -> c.create().withMode(CreateMode.EPHEMERAL).forPath(R + "/e", b("E1")));
        rec.expect("after_create_e", 1);
        op("create_seq", () -> c.create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(R + "/s-", b("S")));
        rec.expect("after_create_seq", 1);
        op("create_grandchild", () -> c.create().forPath(R + "/c/x", b("X")));
        rec.expect("after_create_grandchild_ignored", 0);
        op("set_root", () -> c.setData().forPath(R, b("root2")));
        rec.expect("after_set_root_ignored", 0);
        List<Object> cur = new ArrayList<>();
        for (ChildData d : pcc.getCurrentData()) cur.add(childData(d));
        emit("current_data", "current", cur);
        pcc.close();
    }

    /** TreeCache over a small subtree. */
    static void treeCache() throws Exception {
        final String R = "/j_cur_tree";
        final CuratorFramework c = client();
        fresh(c, R);
        op("create_root", () -> c.create().forPath(R, b("root")));
        op("create_a", () -> c.create().forPath(R + "/a", b("a")));
        op("create_a_x", () -> c.create().forPath(R + "/a/x", b("ax")));
        final TreeCache tc = closeLater(TreeCache.newBuilder(c, R).setCacheData(true).build());
        final Rec rec = new Rec();
        tc.getListenable().addListener((cl, ev) ->
            rec.add(map("type", ev.getType().name(), "data", childData(ev.getData()))));
        tc.start();
        rec.expect("initial", 4);
        op("create_b", () -> c.create().forPath(R + "/b", b("b")));
        rec.expect("after_create_b", 1);
        op("create_a_y", () -> c.create().forPath(R + "/a/y", b("ay")));
        rec.expect("after_create_a_y", 1);
        op("set_a_x", () -> c.setData().forPath(R + "/a/x", b("ax2")));
        rec.expect("after_set_a_x", 1);
        op("set_root", () -> c.setData().forPath(R, b("root2")));
        rec.expect("after_set_root", 1);
        // one node per step: the cache's getData must not race with the next create
        op("create_b_c", () -> c.create().creatingParentsIfNeeded().forPath(R + "/b/c", b("bc")));
        rec.expect("after_create_b_c", 1);
        op("create_b_c_d", () -> c.create().forPath(R + "/b/c/d", b("bcd")));
        rec.expect("after_create_b_c_d", 1);
        op("delete_a_y", () -> {
            c.delete().forPath(R + "/a/y");
            return "deleted";
        });
        rec.expect("after_delete_a_y", 1);
        op("delete_a_x", () -> {
            c.delete().forPath(R + "/a/x");
            return "deleted";
        });
        rec.expect("after_delete_a_x", 1);
        op("delete_a", () -> {
            c.delete().forPath(R + "/a");
            return "deleted";
        });
        rec.expect("after_delete_a", 1);
        Map<String, ChildData> ch = tc.getCurrentChildren(R);
        emit("current_children_root", "children", ch == null ? null : sorted(ch.keySet()));
        emit("current_data_b_c_d", "current", childData(tc.getCurrentData(R + "/b/c/d")));
        emit("current_data_a", "current", childData(tc.getCurrentData(R + "/a")));
        tc.close();
    }

    /** CuratorCache (persistent recursive watch, addWatch opcode 106). */
    static void curatorCache() throws Exception {
        final String R = "/j_cur_cc";
        final CuratorFramework c = client();
        fresh(c, R);
        emit("session", "session_id", sessionId(c));
        op("create_root", () -> c.create().forPath(R, b("root")));
        op("create_a", () -> c.create().forPath(R + "/a", b("a")));
        final CuratorCache cc = closeLater(CuratorCache.build(c, R));
        final Rec rec = new Rec();
        cc.listenable().addListener(new CuratorCacheListener() {
            public void event(Type type, ChildData oldData, ChildData data) {
                rec.add(map("type", type.name(), "old", childData(oldData), "data", childData(data)));
            }

            public void initialized() {
                rec.add(map("type", "INITIALIZED"));
            }
        });
        cc.start();
        rec.waitFor(3, 10000);
        Thread.sleep(300);
        List<Object> evs = rec.take();
        Object last = evs.isEmpty() ? null : evs.remove(evs.size() - 1);
        emit("initial", "events_unordered", evs, "then", last);
        op("create_b", () -> c.create().forPath(R + "/b", b("b")));
        rec.expect("after_create_b", 1);
        op("create_b_c", () -> c.create().forPath(R + "/b/c", b("c")));
        rec.expect("after_create_b_c", 1);
        op("set_a", () -> c.setData().forPath(R + "/a", b("a2")));
        rec.expect("after_set_a", 1);
        op("delete_b_c", () -> {
            c.delete().forPath(R + "/b/c");
            return "deleted";
        });
        rec.expect("after_delete_b_c", 1);
        op("create_ephemeral_e", () -> c.create().withMode(CreateMode.EPHEMERAL).forPath(R + "/e", b("e")));
        rec.expect("after_create_e", 1);
        op("transaction", () -> {
            CuratorOp o1 = c.transactionOp().create().forPath(R + "/m1", b("m1"));
            CuratorOp o2 = c.transactionOp().create().forPath(R + "/m1/m2", b("m2"));
            CuratorOp o3 = c.transactionOp().setData().forPath(R + "/a", b("a3"));
            CuratorOp o4 = c.transactionOp().delete().forPath(R + "/e");
            List<Object> r = new ArrayList<>();
            for (org.apache.curator.framework.api.transaction.CuratorTransactionResult t
                    : c.transaction().forOperations(o1, o2, o3, o4)) {
                r.add(map("type", t.getType().name(), "path", t.getForPath(), "resultPath", t.getResultPath(),
                    "stat", t.getResultStat()));
            }
            return r;
        });
        rec.expect("after_transaction", 4);
        op("set_root", () -> c.setData().forPath(R, b("root2")));
        rec.expect("after_set_root", 1);
        op("delete_all_under_b", () -> {
            c.delete().deletingChildrenIfNeeded().forPath(R + "/m1");
            return "deleted";
        });
        rec.expect("after_delete_m1", 2);
        List<Object> all = new ArrayList<>();
        cc.stream().sorted((x, y) -> x.getPath().compareTo(y.getPath())).forEach(d -> all.add(childData(d)));
        emit("cache_contents", "size", cc.size(), "nodes", all);
        cc.close();
    }

    /** ServiceDiscovery + ServiceCache: 3 instances, unregister one, then register and update. */
    static void serviceDiscovery() throws Exception {
        final String R = "/j_cur_sd";
        final CuratorFramework c = client();
        final CuratorFramework c2 = client();
        fresh(c, R);
        emit("sessions", "session_id", sessionId(c), "other", map("session_id", sessionId(c2)));
        final ServiceDiscovery<String> sd = closeLater(
            ServiceDiscoveryBuilder.builder(String.class).client(c).basePath(R).build());
        sd.start();
        final List<ServiceInstance<String>> inst = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            final ServiceInstance<String> si = ServiceInstance.<String>builder()
                .name("svc").id("i" + i).address("10.0.0." + i).port(8000 + i).payload("p" + i).build();
            inst.add(si);
            op("register_i" + i, () -> {
                sd.registerService(si);
                return "registered";
            });
        }
        op("znodes", () -> {
            List<Object> r = new ArrayList<>();
            for (String n : children(c, R + "/svc")) {
                Stat st = c.checkExists().forPath(R + "/svc/" + n);
                r.add(map("name", n, "stat", st));
            }
            return map("base", children(c, R), "svc", r);
        });
        // the cache lives on another session, as it would in another process
        final ServiceDiscovery<String> sd2 = closeLater(
            ServiceDiscoveryBuilder.builder(String.class).client(c2).basePath(R).watchInstances(false).build());
        sd2.start();
        final ServiceCache<String> cache = closeLater(sd2.serviceCacheBuilder().name("svc").build());
        final Rec rec = new Rec();
        cache.addListener(new ServiceCacheListener() {
            public void cacheChanged() {
                rec.add("cacheChanged");
            }

            public void stateChanged(CuratorFramework client, ConnectionState newState) {
                rec.add("state " + newState);
            }
        });
        cache.start();
        emit("cache_after_start", "instances", instances(cache.getInstances()));
        rec.expect("listener_during_start", 0);
        op("query_names", () -> sorted(sd2.queryForNames()));
        op("query_instances", () -> instances(sd2.queryForInstances("svc")));
        op("query_instance_i2", () -> instance(sd2.queryForInstance("svc", "i2")));
        op("query_missing", () -> instance(sd2.queryForInstance("svc", "nope")));
        op("unregister_i2", () -> {
            sd.unregisterService(inst.get(1));
            return "unregistered";
        });
        rec.expect("after_unregister", 1);
        emit("cache_after_unregister", "instances", instances(cache.getInstances()));
        op("query_instances_after_unregister", () -> instances(sd2.queryForInstances("svc")));
        final ServiceInstance<String> i4 = ServiceInstance.<String>builder()
            .name("svc").id("i4").address("10.0.0.4").port(8004).payload("p4").build();
        op("register_i4", () -> {
            sd.registerService(i4);
            return "registered";
        });
        rec.expect("after_register_i4", 1);
        emit("cache_after_register", "instances", instances(cache.getInstances()));
        final ServiceInstance<String> i1b = ServiceInstance.<String>builder()
            .name("svc").id("i1").address("10.0.0.1").port(8001).payload("p1-updated").build();
        op("update_i1", () -> {
            sd.updateService(i1b);
            return "updated";
        });
        rec.expect("after_update_i1", 1);
        emit("cache_after_update", "instances", instances(cache.getInstances()));
        cache.close();
        sd2.close();
        op("close_registering_discovery", () -> {
            sd.close();
            return "closed";
        });
        op("children_after_close", () -> children(c, R + "/svc"));
    }

    /** LeaderLatch: three latches on three sessions, exactly one leader, hand-over on close. */
    static void leaderLatch() throws Exception {
        final String R = "/j_cur_latch";
        final String P = R + "/election";
        final CuratorFramework c0 = client();
        fresh(c0, R);
        op("create_root", () -> c0.create().forPath(R));
        final Rec rec = new Rec();
        final LeaderLatch[] latches = new LeaderLatch[3];
        for (int i = 0; i < 3; i++) {
            final String id = "l" + (i + 1);
            latches[i] = closeLater(new LeaderLatch(client(), P, id));
            latches[i].addListener(new LeaderLatchListener() {
                public void isLeader() {
                    rec.add(id + " isLeader");
                }

                public void notLeader() {
                    rec.add(id + " notLeader");
                }
            });
        }
        // started one after the other, so the sequence numbers (and the leader) are fixed
        latches[0].start();
        emit("l1_await", "ok", latches[0].await(10, TimeUnit.SECONDS));
        rec.expect("l1_started", 1);
        latches[1].start();
        waitChildren(c0, P, 2);
        latches[2].start();
        waitChildren(c0, P, 3);
        rec.expect("l2_l3_started", 0);
        leadership("leadership_3", latches);
        op("participants", () -> participants(latches[1]));
        op("leader_seen_by_l3", () -> latches[2].getLeader().getId());
        op("latch_nodes", () -> seqNames(children(c0, P), "latch-"));
        op("latch_node_data", () -> {
            List<String> r = new ArrayList<>();
            for (String n : c0.getChildren().forPath(P)) r.add(bytes(c0.getData().forPath(P + "/" + n)));
            Collections.sort(r);
            return r;
        });
        latches[0].close();
        emit("l2_await", "ok", latches[1].await(10, TimeUnit.SECONDS));
        rec.expect("after_close_l1", 1);
        leadership("leadership_after_close_l1", latches);
        op("participants_after_close_l1", () -> participants(latches[2]));
        latches[1].close(LeaderLatch.CloseMode.NOTIFY_LEADER);
        emit("l3_await", "ok", latches[2].await(10, TimeUnit.SECONDS));
        // l2's notLeader and l3's isLeader come from two sessions: order not defined
        rec.expectUnordered("after_close_l2_notify", 2);
        leadership("leadership_after_close_l2", latches);
        op("participants_after_close_l2", () -> participants(latches[2]));
        latches[2].close(LeaderLatch.CloseMode.NOTIFY_LEADER);
        rec.expect("after_close_l3_notify", 1);
        // the election path is a container (creatingParentContainersIfNeeded): removed once empty
        long deadline = System.currentTimeMillis() + 10000;
        while (c0.checkExists().forPath(P) != null && System.currentTimeMillis() < deadline) Thread.sleep(100);
        op("election_container_removed", () -> c0.checkExists().forPath(P) == null);
    }

    static void leadership(String step, LeaderLatch[] latches) {
        Map<String, Object> m = new TreeMap<>();
        int leaders = 0;
        for (LeaderLatch l : latches) {
            m.put(l.getId(), map("hasLeadership", l.hasLeadership(), "state", l.getState().name()));
            if (l.hasLeadership()) leaders++;
        }
        emit(step, "latches", m, "leaders", leaders);
    }

    static List<Object> participants(LeaderLatch l) throws Exception {
        List<Object> r = new ArrayList<>();
        for (Participant p : l.getParticipants()) r.add(map("id", p.getId(), "isLeader", p.isLeader()));
        return r;
    }

    /** InterProcessMutex: two sessions contend; acquisition order is forced and recorded. */
    static void mutex() throws Exception {
        final String R = "/j_cur_mutex";
        final String L = R + "/lock";
        final CuratorFramework cA = client();
        final CuratorFramework cB = client();
        fresh(cA, R);
        emit("sessions", "session_id", sessionId(cA), "other", map("session_id", sessionId(cB)));
        op("create_root", () -> cA.create().forPath(R));
        final InterProcessMutex mA = new InterProcessMutex(cA, L);
        final InterProcessMutex mB = new InterProcessMutex(cB, L);
        final List<String> order = Collections.synchronizedList(new ArrayList<>());
        op("a_acquire", () -> {
            boolean ok = mA.acquire(10, TimeUnit.SECONDS);
            if (ok) order.add("A acquired");
            return ok;
        });
        op("a_acquire_reentrant", () -> {
            boolean ok = mA.acquire(10, TimeUnit.SECONDS);
            if (ok) order.add("A acquired again");
            return ok;
        });
        op("a_participants", () -> mA.getParticipantNodes().size());
        op("lock_node_stat", () -> map("stat", cA.checkExists().forPath(L)));
        op("b_try_acquire_300ms", () -> {
            boolean ok = mB.acquire(300, TimeUnit.MILLISECONDS);
            order.add(ok ? "B acquired" : "B timed out");
            return ok;
        });
        op("nodes_after_b_timeout", () -> seqNames(children(cA, L), "lock-"));
        final CountDownLatch bAcquired = new CountDownLatch(1);
        final CountDownLatch bRelease = new CountDownLatch(1);
        final Exception[] bError = new Exception[1];
        Thread tb = new Thread(() -> {
            try {
                if (mB.acquire(30, TimeUnit.SECONDS)) {
                    order.add("B acquired");
                    bAcquired.countDown();
                    bRelease.await();
                    order.add("B released");
                    mB.release();
                } else {
                    order.add("B gave up");
                }
            } catch (Exception e) {
                bError[0] = e;
            }
        }, "mutex-b");
        tb.start();
        waitChildren(cA, L, 2);
        op("nodes_b_waiting", () -> seqNames(children(cA, L), "lock-"));
        op("lock_node_owners", () -> {
            // by sequence number; the names start with a random protection id
            Map<String, Object> r = new TreeMap<>();
            for (String n : children(cA, L)) {
                long owner = cA.checkExists().forPath(L + "/" + n).getEphemeralOwner();
                r.put(n.substring(n.lastIndexOf("lock-")), map("session_id", owner));
            }
            return r;
        });
        order.add("A releases once");
        mA.release();
        emit("b_after_first_release", "acquired", bAcquired.await(700, TimeUnit.MILLISECONDS));
        order.add("A releases");
        mA.release();
        emit("b_after_second_release", "acquired", bAcquired.await(10, TimeUnit.SECONDS));
        op("a_try_while_b_holds", () -> {
            boolean ok = mA.acquire(300, TimeUnit.MILLISECONDS);
            order.add(ok ? "A acquired" : "A timed out");
            if (ok) mA.release();
            return ok;
        });
        bRelease.countDown();
        tb.join(10000);
        if (bError[0] != null) throw bError[0];
        emit("order", "order", new ArrayList<>(order));

        // mutual exclusion under contention: 2 sessions x 2 threads x 5 rounds
        final AtomicInteger holders = new AtomicInteger();
        final AtomicInteger maxHolders = new AtomicInteger();
        final AtomicInteger rounds = new AtomicInteger();
        final List<Exception> errors = Collections.synchronizedList(new ArrayList<>());
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            final InterProcessMutex m = new InterProcessMutex(t % 2 == 0 ? cA : cB, L);
            Thread th = new Thread(() -> {
                try {
                    for (int i = 0; i < 5; i++) {
                        if (!m.acquire(20, TimeUnit.SECONDS)) throw new RuntimeException("acquire timed out");
                        int h = holders.incrementAndGet();
                        maxHolders.accumulateAndGet(h, Math::max);
                        Thread.sleep(5);
                        holders.decrementAndGet();
                        rounds.incrementAndGet();
                        m.release();
                    }
                } catch (Exception e) {
                    errors.add(e);
                }
            }, "mutex-worker-" + t);
            ts.add(th);
            th.start();
        }
        for (Thread th : ts) th.join(30000);
        if (!errors.isEmpty()) throw errors.get(0);
        emit("contention", "rounds", rounds.get(), "max_holders", maxHolders.get());
        op("nodes_at_end", () -> children(cA, L));
        // the lock's parent was made with creatingParentContainersIfNeeded: a container,
        // which the server removes once it is empty (check interval 1 s in run.sh)
        long deadline = System.currentTimeMillis() + 10000;
        while (cA.checkExists().forPath(L) != null && System.currentTimeMillis() < deadline) Thread.sleep(100);
        op("lock_container_removed", () -> cA.checkExists().forPath(L) == null);
    }

    /** DistributedAtomicLong: single-step semantics, then concurrent increments from two sessions. */
    static void atomicLong() throws Exception {
        final String R = "/j_cur_atomic";
        final String P = R + "/counter";
        final CuratorFramework cA = client();
        final CuratorFramework cB = client();
        fresh(cA, R);
        op("create_root", () -> cA.create().forPath(R));
        final DistributedAtomicLong a = new DistributedAtomicLong(cA, P, new RetryNTimes(200, 5));
        final DistributedAtomicLong bb = new DistributedAtomicLong(cB, P, new RetryNTimes(200, 5));
        op("get_missing", () -> atomic(a.get()));
        op("initialize_10", () -> a.initialize(10L));
        op("initialize_20", () -> a.initialize(20L));
        op("increment", () -> atomic(a.increment()));
        op("add_5", () -> atomic(a.add(5L)));
        op("subtract_3", () -> atomic(a.subtract(3L)));
        op("decrement", () -> atomic(a.decrement()));
        op("cas_wrong", () -> atomic(a.compareAndSet(100L, 1L)));
        op("cas_right", () -> atomic(a.compareAndSet(12L, 0L)));
        op("try_set_7", () -> atomic(a.trySet(7L)));
        op("b_get", () -> atomic(bb.get()));
        op("force_set_0", () -> {
            a.forceSet(0L);
            return "set";
        });
        op("node_after_force_set", () -> {
            Stat st = new Stat();
            byte[] d = cA.getData().storingStatIn(st).forPath(P);
            return map("data", hex(d), "stat", st);
        });
        final int per = 25;
        final AtomicInteger ok = new AtomicInteger();
        final List<Exception> errors = Collections.synchronizedList(new ArrayList<>());
        List<Thread> ts = new ArrayList<>();
        for (final DistributedAtomicLong d : Arrays.asList(a, bb)) {
            Thread t = new Thread(() -> {
                try {
                    for (int i = 0; i < per; i++) {
                        // optimistic: retried here until it succeeds, so the sum is exact
                        for (int tries = 0; ; tries++) {
                            AtomicValue<Long> v = d.increment();
                            if (v.succeeded()) {
                                if (v.postValue() != v.preValue() + 1) throw new RuntimeException("bad increment " + v.preValue() + " -> " + v.postValue());
                                ok.incrementAndGet();
                                break;
                            }
                            if (tries > 100) throw new RuntimeException("increment kept failing");
                        }
                    }
                } catch (Exception e) {
                    errors.add(e);
                }
            }, "atomic-inc");
            ts.add(t);
            t.start();
        }
        for (Thread t : ts) t.join(30000);
        if (!errors.isEmpty()) throw errors.get(0);
        emit("concurrent_increments", "succeeded", ok.get());
        op("final_a", () -> atomic(a.get()));
        op("final_b", () -> atomic(bb.get()));
        op("node_at_end", () -> {
            Stat st = new Stat();
            byte[] d = cA.getData().storingStatIn(st).forPath(P);
            // one successful setData per increment: version = 1 (forceSet) + 2 * 25 + earlier sets
            return map("data", hex(d), "version", st.getVersion());
        });
    }

    /** DistributedQueue: a producer session puts items, a consumer session gets them in order. */
    static void queue() throws Exception {
        final String R = "/j_cur_queue";
        final String Q = R + "/q";
        final CuratorFramework cP = client();
        final CuratorFramework cC = client();
        fresh(cP, R);
        // made by hand (persistent): Curator would make it a container, which the server
        // may remove whenever the queue is momentarily empty
        op("create_queue_path", () -> cP.create().creatingParentsIfNeeded().forPath(Q));
        final QueueSerializer<String> ser = new QueueSerializer<String>() {
            public byte[] serialize(String item) {
                return b(item);
            }

            public String deserialize(byte[] bytes) {
                return new String(bytes, StandardCharsets.UTF_8);
            }
        };
        final DistributedQueue<String> producer = closeLater(
            QueueBuilder.builder(cP, (QueueConsumer<String>) null, ser, Q).putInBackground(false).buildQueue());
        producer.start();
        for (int i = 0; i < 5; i++) {
            final String item = "item-" + i;
            op("put_" + i, () -> {
                producer.put(item);
                return "put";
            });
        }
        op("queue_nodes", () -> children(cP, Q));
        op("queue_item_data", () -> bytes(cP.getData().forPath(Q + "/queue-0000000003")));
        final Rec rec = new Rec();
        final DistributedQueue<String> consumer = closeLater(QueueBuilder.builder(cC, new QueueConsumer<String>() {
            public void consumeMessage(String message) {
                rec.add(message);
            }

            public void stateChanged(CuratorFramework client, ConnectionState newState) {
                rec.add("state " + newState);
            }
        }, ser, Q).buildQueue());
        consumer.start();
        rec.expect("consumed_first_5", 5);
        for (int i = 5; i < 10; i++) {
            final String item = "item-" + i;
            op("put_" + i, () -> {
                producer.put(item);
                return "put";
            });
        }
        rec.expect("consumed_next_5", 5);
        long deadline = System.currentTimeMillis() + 10000;
        while (!cP.getChildren().forPath(Q).isEmpty() && System.currentTimeMillis() < deadline) Thread.sleep(50);
        op("queue_nodes_at_end", () -> children(cP, Q));
        op("queue_path_stat", () -> map("stat", cP.checkExists().forPath(Q)));
        consumer.close();
        producer.close();
    }

    /** EnsembleTracker (on by default): reads /zookeeper/config; the connect string must stay usable. */
    static void ensembleTracker() throws Exception {
        final String R = "/j_cur_ensemble";
        final CuratorFramework c = client(true);
        // the tracker's getConfig runs in the background right after connecting
        Thread.sleep(1000);
        emit("connect_string", "value", c.getZookeeperClient().getCurrentConnectionString().replace(ADDR, "ADDR"));
        QuorumVerifier qv = c.getCurrentConfig();
        emit("tracker_config", "value", qv == null ? null
            : map("version", qv.getVersion(), "servers", sorted(qvServers(qv)), "string", qv.toString()));
        op("get_config", () -> {
            Stat st = new Stat();
            byte[] d = c.getConfig().storingStatIn(st).forEnsemble();
            return map("data", d, "stat", st);
        });
        op("get_config_node", () -> {
            Stat st = new Stat();
            byte[] d = c.getData().storingStatIn(st).forPath("/zookeeper/config");
            return map("data", d, "stat", st);
        });
        op("config_node_acl", () -> c.getACL().forPath("/zookeeper/config"));
        op("zookeeper_children", () -> children(c, "/zookeeper"));
        op("reconfig", () -> {
            byte[] d = c.reconfig().leaving("2").forEnsemble();
            return map("data", d);
        });
        fresh(c, R);
        op("create", () -> c.create().forPath(R, b("x")));
        op("get", () -> bytes(c.getData().forPath(R)));
        emit("connect_string_after_ops", "value",
            c.getZookeeperClient().getCurrentConnectionString().replace(ADDR, "ADDR"));
        emit("tracker_config_after_ops", "is_null", c.getCurrentConfig() == null);

        final CuratorFramework c2 = client(false);
        op("no_tracker_get", () -> bytes(c2.getData().forPath(R)));
        emit("no_tracker_connect_string", "value",
            c2.getZookeeperClient().getCurrentConnectionString().replace(ADDR, "ADDR"));
        op("delete", () -> {
            c2.delete().forPath(R);
            return "deleted";
        });
        // a new ZooKeeper handle on the tracked client (as after session expiry) must use
        // the connect string the tracker left behind
        final Rec rec = new Rec();
        c.getConnectionStateListenable().addListener((cl, st) -> rec.add(st.name()));
        c.getZookeeperClient().reset();
        if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) throw new RuntimeException("no reconnect after reset");
        rec.expect("states_after_reset", 2);
        op("get_after_reset", () -> c.checkExists().forPath("/zookeeper") != null);
        emit("connect_string_after_reset", "value",
            c.getZookeeperClient().getCurrentConnectionString().replace(ADDR, "ADDR"));
    }

    static List<String> qvServers(QuorumVerifier qv) {
        List<String> r = new ArrayList<>();
        for (Map.Entry<Long, org.apache.zookeeper.server.quorum.QuorumPeer.QuorumServer> e : qv.getAllMembers().entrySet()) {
            r.add(e.getKey() + "=" + String.valueOf(e.getValue().clientAddr).replace(ADDR, "ADDR"));
        }
        return r;
    }

    /** Connection states across a restart of the server: SUSPENDED -> RECONNECTED, same session. */
    static void restart() throws Exception {
        final String R = "/j_cur_restart";
        final Rec states = new Rec();
        final CuratorFramework c = CuratorFrameworkFactory.builder()
            .connectString(ADDR)
            .sessionTimeoutMs(15000)
            .connectionTimeoutMs(5000)
            .retryPolicy(new ExponentialBackoffRetry(100, 10, 1000))
            .build();
        c.getConnectionStateListenable().addListener((cl, st) -> states.add(st.name()));
        c.start();
        closeLater(c);
        if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) throw new RuntimeException("could not connect to " + ADDR);
        states.expect("states_at_start", 1);
        final long sid = sessionId(c);
        emit("session", "session_id", sid,
            "negotiated_timeout", c.getZookeeperClient().getLastNegotiatedSessionTimeoutMs());
        fresh(c, R);
        op("create_root", () -> c.create().forPath(R, b("root")));
        op("create_ephemeral", () -> c.create().withMode(CreateMode.EPHEMERAL).forPath(R + "/eph", b("e")));
        final CuratorCache cc = closeLater(CuratorCache.build(c, R));
        final Rec events = new Rec();
        cc.listenable().addListener(new CuratorCacheListener() {
            public void event(Type type, ChildData oldData, ChildData data) {
                events.add(map("type", type.name(), "path", (data != null ? data : oldData).getPath(),
                    "data", data == null ? null : data.getData()));
            }

            public void initialized() {
                events.add(map("type", "INITIALIZED"));
            }
        });
        cc.start();
        events.waitFor(3, 10000);
        Thread.sleep(300);
        List<Object> init = events.take();
        Object last = init.isEmpty() ? null : init.remove(init.size() - 1);
        emit("cache_initial", "events_unordered", init, "then", last);
        final NodeCache nc = closeLater(new NodeCache(c, R + "/watched"));
        final Rec ncEvents = new Rec();
        nc.getListenable().addListener(() -> {
            ChildData d = nc.getCurrentData();
            ncEvents.add(d == null ? "absent" : bytes(d.getData()));
        });
        nc.start(true);

        // ask the harness to restart the server; the RESTART line is not part of the transcript
        System.out.println("RESTART");
        System.out.flush();
        String reply = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        emit("restart", "harness", reply);
        if (!"RESTARTED".equals(reply)) throw new RuntimeException("the server was not restarted: " + reply);

        long deadline = System.currentTimeMillis() + 30000;
        while (System.currentTimeMillis() < deadline) {
            synchronized (states) {
                if (states.items.contains("RECONNECTED") || states.items.contains("LOST")) break;
            }
            Thread.sleep(50);
        }
        Thread.sleep(1000);
        emit("states_after_restart", "events", states.take());
        emit("session_after_restart", "session_id", sessionId(c));
        op("ephemeral_after_restart", () -> {
            Stat st = new Stat();
            byte[] d = c.getData().storingStatIn(st).forPath(R + "/eph");
            return map("data", d, "stat", st);
        });
        events.expect("cache_events_after_restart", 0);
        op("create_after_restart", () -> c.create().forPath(R + "/after", b("a")));
        events.expect("cache_after_create", 1);
        op("create_watched", () -> c.create().forPath(R + "/watched", b("w")));
        ncEvents.expect("node_cache_after_create", 1);
        events.expect("cache_after_create_watched", 1);
        op("delete_ephemeral", () -> {
            c.delete().forPath(R + "/eph");
            return "deleted";
        });
        events.expect("cache_after_delete", 1);
        Thread.sleep(1000);
        emit("states_at_end", "events", states.take());
    }

    // ------------------------------------------------------------------ main

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
            Runtime.getRuntime().halt(3);
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
            System.err.println("usage: CuratorScenarios --list | CuratorScenarios SCENARIO HOST:PORT");
            System.exit(2);
        }
        ADDR = args[1];
        startWatchdog(Thread.currentThread());
        int rc = 0;
        try {
            switch (args[0]) {
                case "node_cache": nodeCache(); break;
                case "path_children_cache": pathChildrenCache(); break;
                case "tree_cache": treeCache(); break;
                case "curator_cache": curatorCache(); break;
                case "service_discovery": serviceDiscovery(); break;
                case "leader_latch": leaderLatch(); break;
                case "mutex": mutex(); break;
                case "atomic_long": atomicLong(); break;
                case "queue": queue(); break;
                case "ensemble_tracker": ensembleTracker(); break;
                case "restart": restart(); break;
                default:
                    System.err.println("unknown scenario " + args[0]);
                    rc = 2;
            }
        } catch (Throwable t) {
            t.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        // closing recipes and sessions is part of the scenario, but must not hang the run
        Thread closer = new Thread(CuratorScenarios::closeAll, "close-all");
        closer.setDaemon(true);
        closer.start();
        closer.join(10000);
        System.out.flush();
        Runtime.getRuntime().halt(rc);
    }
}
