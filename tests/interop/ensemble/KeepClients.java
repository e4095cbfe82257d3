// The official Java client on a follower when the leader is killed, for zkr's
// zkr.keepClientsOnLeaderLoss option (run.sh runs it on a zkr ensemble with the option and on one
// without).
//
//   java -cp <classpath> KeepClients HOST:PORT,HOST:PORT,HOST:PORT keep|drop
//
// A session is made on a follower (the 3-host connect string first; if that lands on the leader,
// the session is closed and a new one made on another member). It creates an ephemeral node, the
// harness kills the leader, and once a new leader is elected the session writes and reads.
// keep: the session never sees Disconnected (its follower kept the connection through the
// election); drop (ZooKeeper's behaviour, zkr's default): it sees Disconnected then SyncConnected.
// Either way the session id stays, the ephemeral stays and the write succeeds.
// Prints a JSON-lines transcript (see Ens.java for the harness requests); exit 1 on an exception.

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class KeepClients extends Ens {
    static final String R = "/j_keep_clients";

    /** Every connection state in order. */
    static class States implements Watcher {
        final List<String> all = new ArrayList<>();
        final CountDownLatch connected = new CountDownLatch(1);

        public synchronized void process(WatchedEvent e) {
            if (e.getType() == Event.EventType.None) {
                all.add(e.getState().name());
                if (e.getState() == Event.KeeperState.SyncConnected) connected.countDown();
            }
        }

        synchronized List<String> since(int mark) {
            return new ArrayList<>(all.subList(mark, all.size()));
        }

        synchronized int mark() {
            return all.size();
        }
    }

    static ZooKeeper open(String connect, States st) throws Exception {
        ZooKeeper zk = new ZooKeeper(connect, 15000, st);
        if (!st.connected.await(30, TimeUnit.SECONDS)) throw new RuntimeException("no session within 30 s");
        return zk;
    }

    public static void main(String[] args) throws Exception {
        watchdog(150);
        String connect = args[0];
        boolean keep = args[1].equals("keep");
        States st = new States();
        ZooKeeper zk = open(connect, st);
        String where = ask("WHERE " + hex(zk.getSessionId()));
        if (where.endsWith("mode=leader")) {
            String other = ask("OTHER " + hex(zk.getSessionId()));
            zk.close();
            st = new States();
            zk = open(other, st);
            where = ask("WHERE " + hex(zk.getSessionId()));
        }
        check("session on a follower", where.endsWith("mode=follower"), where);
        long sid = zk.getSessionId();
        if (zk.exists(R, false) == null) zk.create(R, b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        zk.create(R + "/e", b("e"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        int mark = st.mark();
        String killed = ask("KILL_LEADER");
        check("leader killed", killed.startsWith("killed="), killed);
        // The survivors elect in about a tenth of a second; the write goes to the new leader.
        Thread.sleep(1500);
        zk.create(R + "/after", b("a"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        check("write after the election succeeds", zk.exists(R + "/after", false) != null, null);
        check("ephemeral stays", zk.exists(R + "/e", false) != null, null);
        check("same session", zk.getSessionId() == sid, hex(zk.getSessionId()));
        Thread.sleep(500);
        List<String> seen = collapse(st.since(mark));
        if (keep) {
            check("keep: no connection change on the follower", seen.isEmpty(), seen);
        } else {
            check("drop: Disconnected then SyncConnected, as with ZooKeeper",
                    seen.equals(List.of("Disconnected", "SyncConnected")), seen);
        }
        emit("states", "seen", seen);
        zk.delete(R + "/after", -1);
        zk.close();
        emit("end", "failures", failures);
        System.exit(failures == 0 ? 0 : 1);
    }
}
