// Curator 5 against a 3-member ensemble, across kill -9 of its member and of the leader.
//
//   java -cp <classpath> EnsembleCurator HOST:PORT,HOST:PORT,HOST:PORT
//
// One CuratorFramework with the 3-host connect string and ensembleTracker(true):
//   - what EnsembleTracker makes of /zookeeper/config: its QuorumVerifier (members, addresses,
//     version), the connection string it computes from it, the connection string the client
//     then uses, and getConfig() itself;
//   - a PersistentNode (EPHEMERAL), a LeaderLatch and an InterProcessMutex held by that client;
//   - round 1: the member the client is connected to is killed; round 2, after that member is
//     back: the leader is killed. Each time Curator must report SUSPENDED then RECONNECTED
//     (never LOST), keep its session id, the PersistentNode's node is still the session's, the
//     latch leads again (with one participant: LeaderLatch gives up leadership on SUSPENDED and
//     resets on RECONNECTED), the lock is still held (another session on another member cannot
//     take it), and the tracker still computes the same connection string.
// Prints a JSON-lines transcript (harness requests: see Ens.java); exit 1 on an exception.

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.EnsembleTracker;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.quorum.QuorumPeer;
import org.apache.zookeeper.server.quorum.flexible.QuorumVerifier;

public class EnsembleCurator extends Ens {
    static final String R = "/j_ens_curator";

    /** Things a listener saw, in order. */
    static class Rec {
        final List<String> items = new ArrayList<>();

        synchronized void add(String s) {
            items.add(s);
            notifyAll();
        }

        synchronized int mark() {
            return items.size();
        }

        synchronized List<String> since(int mark) {
            return new ArrayList<>(items.subList(mark, items.size()));
        }

        /** True once one of `wanted` was seen at or after `mark`. */
        synchronized boolean await(int mark, long timeoutMs, String... wanted) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (true) {
                for (String w : wanted) if (items.subList(mark, items.size()).contains(w)) return true;
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) return false;
                wait(left);
            }
        }
    }

    static CuratorFramework client(String connect, boolean tracker) {
        CuratorFramework c = CuratorFrameworkFactory.builder()
            .connectString(connect)
            .sessionTimeoutMs(15000)
            .connectionTimeoutMs(5000)
            .retryPolicy(new ExponentialBackoffRetry(100, 10, 1000))
            .ensembleTracker(tracker)
            .build();
        return c;
    }

    static Map<String, Object> config(QuorumVerifier qv) {
        Map<String, Object> members = new TreeMap<>();
        for (Map.Entry<Long, QuorumPeer.QuorumServer> e : qv.getAllMembers().entrySet()) {
            QuorumPeer.QuorumServer s = e.getValue();
            members.put(String.valueOf(e.getKey()), map("addr", s.addr.getReachableOrOne().getHostString() + ":"
                + s.addr.getReachableOrOne().getPort(), "election", s.electionAddr.getReachableOrOne().getHostString() + ":"
                + s.electionAddr.getReachableOrOne().getPort(),
                "client", s.clientAddr == null ? null : s.clientAddr.getHostString() + ":" + s.clientAddr.getPort(),
                "type", s.type.name()));
        }
        return map("members", members, "version", Long.toHexString(qv.getVersion()));
    }

    /** The tracker's view: its config, the string it computes, the string the client uses. */
    static Map<String, Object> tracked(CuratorFramework c) throws Exception {
        QuorumVerifier qv = c.getCurrentConfig();
        return map("config", config(qv), "computed", EnsembleTracker.configToConnectionString(qv),
            "in_use", c.getZookeeperClient().getCurrentConnectionString());
    }

    static long sessionId(CuratorFramework c) throws Exception {
        return c.getZookeeperClient().getZooKeeper().getSessionId();
    }

    static Map<String, Object> node(CuratorFramework c, String path) throws Exception {
        Stat st = new Stat();
        byte[] d = c.getData().storingStatIn(st).forPath(path);
        return map("path", path, "data", d, "stat", st);
    }

    static List<String> kids(CuratorFramework c, String path) throws Exception {
        List<String> k = new ArrayList<>(c.getChildren().forPath(path));
        Collections.sort(k);
        return k;
    }

    /** Waits up to 15 s for `ok`, polling. */
    interface Cond {
        boolean ok() throws Exception;
    }

    static boolean within(long ms, Cond c) throws Exception {
        long deadline = System.currentTimeMillis() + ms;
        while (true) {
            try {
                if (c.ok()) return true;
            } catch (Exception e) {
                // not yet (connection loss while the ensemble settles)
            }
            if (System.currentTimeMillis() > deadline) return false;
            Thread.sleep(100);
        }
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
        final Rec states = new Rec();
        final CuratorFramework c = client(connect, true);
        c.getConnectionStateListenable().addListener((cl, st) -> states.add(st.name()));
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) throw new RuntimeException("no connection to " + connect);
        final long sid = sessionId(c);
        emit("session", "session_id", sid, "negotiated_timeout",
            c.getZookeeperClient().getLastNegotiatedSessionTimeoutMs());

        // EnsembleTracker reads /zookeeper/config in the background once connected
        boolean read = within(15000, () -> c.getCurrentConfig().getAllMembers().size() == 3);
        check("tracker_read_zookeeper_config", read, c.getCurrentConfig().toString());
        Map<String, Object> first = tracked(c);
        emit("tracker", "ok", first);
        String given = String.join(",", list(connect).stream().sorted().toArray(String[]::new));
        String computed = String.join(",", list((String) first.get("computed")).stream().sorted().toArray(String[]::new));
        check("tracker_computes_the_members_client_addresses", computed.equals(given), first);
        emit("get_config", "ok", bytes(c.getConfig().forEnsemble()).replaceAll("(?m)^version=.*$", "version=V"),
            "version_line", bytes(c.getConfig().forEnsemble()).replaceAll("(?s).*\\nversion=", "version="));

        if (c.checkExists().forPath(R) != null) c.delete().deletingChildrenIfNeeded().forPath(R);
        c.create().forPath(R, b("root"));
        PersistentNode pn = new PersistentNode(c, CreateMode.EPHEMERAL, false, R + "/pn", b("pn-data"));
        pn.start();
        check("persistent_node_created", pn.waitForInitialCreate(15, TimeUnit.SECONDS), null);
        emit("persistent_node", "ok", node(c, R + "/pn"));
        final Rec latchEvents = new Rec();
        LeaderLatch latch = new LeaderLatch(c, R + "/latch", "only");
        latch.addListener(new LeaderLatchListener() {
            public void isLeader() {
                latchEvents.add("isLeader");
            }

            public void notLeader() {
                latchEvents.add("notLeader");
            }
        });
        latch.start();
        check("latch_leads", latch.await(15, TimeUnit.SECONDS), latch.getState().name());
        InterProcessMutex mutex = new InterProcessMutex(c, R + "/lock");
        check("mutex_acquired", mutex.acquire(15, TimeUnit.SECONDS), null);
        emit("recipes", "latch_nodes", kids(c, R + "/latch").size(), "lock_nodes", kids(c, R + "/lock").size(),
            "latch_events", latchEvents.since(0));

        round(1, "connected_member", c, states, latchEvents, pn, latch, mutex, sid, first,
            "KILL_CONNECTED " + hex(sid));
        emit("restart_killed_member", "harness", ask("RESTART").startsWith("restarted=") ? "restarted" : "failed");
        round(2, "leader", c, states, latchEvents, pn, latch, mutex, sid, first, "KILL_LEADER");

        // the lock passes on once released; closing the recipes removes their nodes
        mutex.release();
        try (CuratorFramework other = client(ask("OTHER " + hex(sid)), false)) {
            other.start();
            other.blockUntilConnected(30, TimeUnit.SECONDS);
            InterProcessMutex theirs = new InterProcessMutex(other, R + "/lock");
            boolean got = theirs.acquire(15, TimeUnit.SECONDS);
            check("released_lock_taken_by_another_session", got, null);
            if (got) theirs.release();
        }
        latch.close();
        pn.close();
        emit("recipes_closed", "root_children", kids(c, R), "latch_nodes", kids(c, R + "/latch"),
            "lock_nodes", kids(c, R + "/lock"));
        c.delete().deletingChildrenIfNeeded().forPath(R);
        c.close();
        emit("end", "failed_checks", failures);
    }

    static void round(int n, String what, CuratorFramework c, Rec states, Rec latchEvents, PersistentNode pn,
            LeaderLatch latch, InterProcessMutex mutex, long sid, Map<String, Object> tracked, String kill)
            throws Exception {
        String p = "round" + n + "_";
        int mark = states.mark();
        int latchMark = latchEvents.mark();
        System.err.println("round " + n + ": session " + hex(sid) + " is on " + ask("WHERE " + hex(sid)));
        System.err.println("round " + n + ": " + kill + " -> " + ask(kill));
        boolean back = states.await(mark, 45000, "RECONNECTED", "LOST");
        Thread.sleep(1000); // anything after RECONNECTED would be a mistake: give it time to show
        List<String> seen = collapse(states.since(mark));
        emit(p + "states", "states", seen);
        check(p + "suspended_then_reconnected_after_" + what + "_killed",
            back && seen.equals(List.of("SUSPENDED", "RECONNECTED")), states.since(mark));
        check(p + "same_session", sessionId(c) == sid, hex(sessionId(c)));

        // the PersistentNode's ephemeral is still the session's (nothing had to be recreated)
        boolean pnOk = within(15000, () -> ((Stat) node(c, R + "/pn").get("stat")).getEphemeralOwner() == sid);
        emit(p + "persistent_node", "ok", node(c, R + "/pn"), "actual_path", pn.getActualPath());
        check(p + "persistent_node_kept_by_session", pnOk, node(c, R + "/pn"));

        // LeaderLatch: leadership given up on SUSPENDED, taken again after RECONNECTED
        boolean leads = within(15000, latch::hasLeadership);
        Thread.sleep(300);
        emit(p + "latch", "events", latchEvents.since(latchMark), "nodes", kids(c, R + "/latch").size(),
            "has_leadership", latch.hasLeadership());
        check(p + "latch_leads_again", leads && kids(c, R + "/latch").size() == 1, latchEvents.since(latchMark));

        // InterProcessMutex: still held; another session on another member cannot take it
        List<String> lockNodes = kids(c, R + "/lock");
        Map<String, Object> lockNode = lockNodes.size() == 1 ? node(c, R + "/lock/" + lockNodes.get(0)) : null;
        boolean mine = lockNode != null && ((Stat) lockNode.get("stat")).getEphemeralOwner() == sid;
        if (lockNode != null) { // the protected-mode prefix holds a random UUID
            lockNode.put("path", ((String) lockNode.get("path")).replaceAll("_c_[0-9a-f-]{36}-", "_c_UUID-"));
        }
        emit(p + "lock", "held", mutex.isAcquiredInThisProcess(), "lock_nodes", lockNodes.size(), "node", lockNode);
        boolean taken;
        try (CuratorFramework other = client(ask("OTHER " + hex(sid)), false)) {
            other.start();
            other.blockUntilConnected(30, TimeUnit.SECONDS);
            taken = new InterProcessMutex(other, R + "/lock").acquire(1, TimeUnit.SECONDS);
        }
        emit(p + "lock_from_another_member", "acquired", taken);
        check(p + "lock_still_held", mutex.isAcquiredInThisProcess() && mine && !taken, lockNode);

        // the tracker read the config again on RECONNECTED: the same members and connection string
        Map<String, Object> now = tracked(c);
        emit(p + "tracker", "ok", now);
        check(p + "tracker_unchanged", json(now).equals(json(tracked)), now);
        ask("SETTLE " + p + what);
    }
}
