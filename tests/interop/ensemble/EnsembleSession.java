// The official Java client's session across member loss in a 3-member ensemble.
//
//   java -cp <classpath> EnsembleSession HOST:PORT,HOST:PORT,HOST:PORT
//
// Session A (the 3-host connect string) creates a persistent and an ephemeral node and sets a
// data, a child and an exist watch. Then, twice (round 1: the member A is connected to is
// killed; round 2, after that member is back: the leader is killed):
//   - a write acknowledged just before the kill is read back from every member still running;
//   - A sees Disconnected then SyncConnected, keeps its session id, never sees Expired, and its
//     ephemeral stays;
//   - a change made by another session while A is disconnected fires A's watch once A is back
//     (setWatches catch-up), and a change made after that by a session on another member fires
//     the others (the watches moved with A to its new member);
//   - every running member holds the same tree.
// A stays disconnected while the change is made because its HostProvider, the client's own
// StaticHostProvider, holds the next connection attempt until the change is acknowledged (Gate):
// without it, the client is usually back before another session could write anything.
// Prints a JSON-lines transcript (see Ens.java for the harness requests); exit 1 on an exception.

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZKUtil;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ConnectStringParser;
import org.apache.zookeeper.client.HostProvider;
import org.apache.zookeeper.client.StaticHostProvider;
import org.apache.zookeeper.data.Stat;

public class EnsembleSession extends Ens {
    static final String R = "/j_ens_session";
    static final int SESSION_TIMEOUT = 15000;

    /** StaticHostProvider with a gate: while closed, the next connection attempt waits. */
    static class Gate implements HostProvider {
        final StaticHostProvider inner;
        boolean closed;

        Gate(String connect) {
            inner = new StaticHostProvider(new ConnectStringParser(connect).getServerAddresses());
        }

        synchronized void close() {
            closed = true;
        }

        synchronized void open() {
            closed = false;
            notifyAll();
        }

        public InetSocketAddress next(long spinDelay) {
            synchronized (this) {
                while (closed) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
            }
            return inner.next(spinDelay);
        }

        public int size() {
            return inner.size();
        }

        public void onConnected() {
            inner.onConnected();
        }

        public boolean updateServerList(Collection<InetSocketAddress> servers, InetSocketAddress current) {
            return inner.updateServerList(servers, current);
        }
    }

    /** The default watcher: every connection state in order. */
    static class States implements Watcher {
        final List<String> all = new ArrayList<>();

        public synchronized void process(WatchedEvent e) {
            if (e.getType() == Event.EventType.None) {
                all.add(e.getState().name());
                notifyAll();
            }
        }

        synchronized int mark() {
            return all.size();
        }

        synchronized List<String> since(int mark) {
            return new ArrayList<>(all.subList(mark, all.size()));
        }

        synchronized String last() {
            return all.isEmpty() ? null : all.get(all.size() - 1);
        }

        /** True once `state` was seen at or after index `mark`. */
        synchronized boolean await(String state, int mark, long timeoutMs) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (!all.subList(mark, all.size()).contains(state)) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) return false;
                wait(left);
            }
            return true;
        }
    }

    /** Node events of the watches set by session A, labelled by watch. */
    static class Events {
        final List<List<Object>> items = new ArrayList<>();

        Watcher w(final String label) {
            return e -> {
                // connection states reach every watcher; States records them once
                if (e.getType() == Watcher.Event.EventType.None) return;
                synchronized (Events.this) {
                    items.add(List.of(label, e.getType().name(), e.getState().name(), e.getPath()));
                    Events.this.notifyAll();
                }
            };
        }

        /** Waits for n events plus a settle period (which catches unexpected extra ones). */
        List<Object> expect(String step, int n) throws InterruptedException {
            long deadline = System.currentTimeMillis() + 15000;
            synchronized (this) {
                while (items.size() < n && System.currentTimeMillis() < deadline) {
                    wait(Math.max(1, deadline - System.currentTimeMillis()));
                }
            }
            Thread.sleep(300);
            List<Object> evs;
            synchronized (this) {
                evs = new ArrayList<>(items);
                items.clear();
            }
            // one change can fire two watches of A (exist and child): their order is the server's
            emit(step, "events_unordered", sortedByText(evs));
            return evs;
        }
    }

    interface Call {
        Object run() throws Exception;
    }

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

    /** A session of its own on `connect`, once it is connected and its member follows a leader
     *  (a sync went through). */
    static ZooKeeper session(String connect) throws Exception {
        long deadline = System.currentTimeMillis() + 40000;
        while (true) {
            CountDownLatch up = new CountDownLatch(1);
            ZooKeeper zk = new ZooKeeper(connect, SESSION_TIMEOUT, e -> {
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) up.countDown();
            });
            try {
                if (up.await(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS)) {
                    sync(zk, "/");
                    return zk;
                }
            } catch (KeeperException.ConnectionLossException e) {
                // its member lost the leader in between: start over
            }
            zk.close();
            if (System.currentTimeMillis() > deadline) throw new RuntimeException("no session on " + connect);
            Thread.sleep(200);
        }
    }

    static void sync(ZooKeeper zk, String path) throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        int[] rc = {0};
        zk.sync(path, (r, p, ctx) -> {
            rc[0] = r;
            done.countDown();
        }, null);
        if (!done.await(20, TimeUnit.SECONDS)) throw new RuntimeException("sync timed out");
        if (rc[0] != 0) throw KeeperException.create(KeeperException.Code.get(rc[0]), path);
    }

    /** The subtree under `path` as one member serves it after a sync: path -> data and stat. */
    static Map<String, Object> tree(ZooKeeper zk, String path) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        Stat st = new Stat();
        byte[] data = zk.getData(path, false, st);
        out.put(path, map("data", data, "stat", st));
        List<String> kids = new ArrayList<>(zk.getChildren(path, false));
        Collections.sort(kids);
        for (String k : kids) out.putAll(tree(zk, path + "/" + k));
        return out;
    }

    interface Change {
        Object apply(ZooKeeper zk) throws Exception;
    }

    /**
     * One loss of a member: `kill` is the harness request; `duringCut` is made by another
     * session while A is disconnected (firing `duringEvents` of A's watches on its return),
     * `afterwards` by a session on a member A is not connected to (firing `afterEvents`).
     */
    static void round(int n, String what, ZooKeeper a, States st, Gate gate, long sid, String kill,
            Change duringCut, int duringEvents, Change afterwards, int afterEvents) throws Exception {
        String p = "round" + n + "_";
        String acked = R + "/acked" + n;
        op(p + "acked_write", () -> a.create(acked, b("before-kill-" + n), ZooDefs.Ids.OPEN_ACL_UNSAFE,
            CreateMode.PERSISTENT));
        Events ev = new Events();
        op(p + "watch_data", () -> {
            Stat s = new Stat();
            return map("data", a.getData(R, ev.w("data"), s), "stat", s);
        });
        op(p + "watch_children", () -> {
            List<String> kids = new ArrayList<>(a.getChildren(R, ev.w("child")));
            Collections.sort(kids);
            return kids;
        });
        op(p + "watch_exists", () -> a.exists(R + "/c" + n, ev.w("exist")));

        int mark = st.mark();
        gate.close();
        System.err.println("round " + n + ": session " + hex(sid) + " is on " + ask("WHERE " + hex(sid)));
        String killed = ask(kill);
        System.err.println("round " + n + ": " + kill + " -> " + killed);
        boolean down = st.await("Disconnected", mark, 20000);
        check(p + "disconnected_after_" + what + "_killed", down, st.since(mark));

        // the change while A is away, through another member
        try (ZooKeeper other = session(ask("LIVE"))) {
            op(p + "change_while_disconnected", () -> duringCut.apply(other));
        }
        check(p + "change_made_while_disconnected", "Disconnected".equals(st.last()), st.since(mark));
        gate.open();
        boolean back = st.await("SyncConnected", mark, 40000);
        check(p + "syncconnected_again", back, st.since(mark));
        List<Object> caught = ev.expect(p + "events_caught_up", duringEvents);
        check(p + "setwatches_catch_up_fired", caught.size() == duringEvents, caught);
        List<String> states = collapse(st.since(mark));
        emit(p + "states", "states", states);
        check(p + "states_disconnected_then_syncconnected",
            states.equals(List.of("Disconnected", "SyncConnected")), st.since(mark));
        check(p + "same_session", a.getSessionId() == sid, hex(a.getSessionId()));
        check(p + "no_expired", !st.since(0).contains("Expired"), st.since(0));
        Object eph = op(p + "ephemeral_kept", () -> {
            Stat s = new Stat();
            return map("data", a.getData(R + "/eph", false, s), "stat", s);
        });
        check(p + "ephemeral_kept_by_session", eph instanceof Map
            && ((Stat) ((Map<?, ?>) eph).get("stat")).getEphemeralOwner() == sid, eph);

        // a change through a member A is not connected to: the re-armed watches fire
        String where = ask("WHERE " + hex(sid));
        System.err.println("round " + n + ": session " + hex(sid) + " came back on " + where);
        try (ZooKeeper other = session(ask("OTHER " + hex(sid)))) {
            op(p + "change_on_other_member", () -> afterwards.apply(other));
        }
        List<Object> fired = ev.expect(p + "events_after_reconnect", afterEvents);
        check(p + "rearmed_watches_fired", fired.size() == afterEvents, fired);

        // every running member: the acknowledged write, and the same tree
        List<String> live = list(ask("LIVE"));
        List<Object> reads = new ArrayList<>();
        List<String> trees = new ArrayList<>();
        Map<String, Object> first = null;
        for (String addr : live) {
            try (ZooKeeper m = session(addr)) {
                sync(m, R);
                reads.add(bytes(m.getData(acked, false, null)));
                Map<String, Object> t = tree(m, R);
                if (first == null) first = t;
                trees.add(json(t));
            }
        }
        emit(p + "acked_write_on_running_members", "members", live.size(), "reads", reads);
        check(p + "acked_write_readable_on_every_running_member",
            live.size() == 2 && reads.stream().allMatch(("before-kill-" + n)::equals), reads);
        emit(p + "tree", "nodes", first);
        check(p + "running_members_hold_the_same_tree", trees.stream().distinct().count() == 1, trees);
        ask("SETTLE " + p + what);
    }

    public static void main(String[] args) throws Exception {
        watchdog(170);
        int rc = 0;
        try {
            run(args[0]);
        } catch (Throwable t) {
            t.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        Runtime.getRuntime().halt(rc);
    }

    static void run(String connect) throws Exception {
        Gate gate = new Gate(connect);
        States st = new States();
        ZooKeeper a = new ZooKeeper(connect, SESSION_TIMEOUT, st, false, gate);
        if (!st.await("SyncConnected", 0, 30000)) throw new RuntimeException("no session on " + connect);
        final long sid = a.getSessionId();
        emit("session", "session_id", sid, "negotiated_timeout", a.getSessionTimeout());
        if (a.exists(R, false) != null) ZKUtil.deleteRecursive(a, R);
        op("create_persistent", () -> a.create(R, b("root"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT));
        op("create_ephemeral", () -> a.create(R + "/eph", b("eph"), ZooDefs.Ids.OPEN_ACL_UNSAFE,
            CreateMode.EPHEMERAL));

        // round 1: the member A is connected to dies; while A is away its data watch's node
        // changes; afterwards a child appears (exist and child watches)
        round(1, "connected_member", a, st, gate, sid, "KILL_CONNECTED " + hex(sid),
            zk -> zk.setData(R, b("changed-while-disconnected"), -1), 1,
            zk -> zk.create(R + "/c1", b("c1"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT), 2);

        // round 2: with that member back, the leader dies (it may be A's member again); while A
        // is away a child appears (child and exist watches catch up); afterwards the data changes
        emit("restart_killed_member", "harness", ask("RESTART").startsWith("restarted=") ? "restarted" : "failed");
        round(2, "leader", a, st, gate, sid, "KILL_LEADER",
            zk -> zk.create(R + "/c2", b("c2"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT), 2,
            zk -> zk.setData(R, b("changed-after-reconnect"), -1), 1);

        // closing the session removes its ephemeral on every member
        int beforeClose = st.mark();
        a.close();
        st.await("Closed", beforeClose, 5000); // delivered by the client's event thread
        emit("closed", "states", collapse(st.since(0)));
        for (String addr : list(ask("LIVE"))) {
            try (ZooKeeper m = session(addr)) {
                sync(m, R);
                check("ephemeral_gone_after_close_on_every_member", m.exists(R + "/eph", false) == null, addr);
            }
        }
        try (ZooKeeper m = session(ask("LIVE"))) {
            ZKUtil.deleteRecursive(m, R);
        }
        emit("end", "failed_checks", failures);
    }
}
