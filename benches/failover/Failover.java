// Failover driver for scripts/bench-ensemble.sh: sessions of the official Java client (the one
// Dubbo and Curator use) on a multi-host connect string, each writing its own node at a steady
// pace, while the script SIGKILLs the ensemble's leader. The script writes "kill <epoch ms>"
// on stdin right after each kill and "done" at the end; for each kill this prints the time
// until writes succeed again and until every session that lost its connection has one again,
// then the sessions that expired and the acknowledged writes that are missing.
//
//   java -cp <zookeeper jars>:classes Failover HOSTS SESSIONS WRITES_PER_SEC_PER_SESSION TIMEOUT_MS
//
// Output lines (key=value, for the script): "ready", "kill=<n> writes_back_ms=… sessions_back_ms=…
// disconnected=<sessions>", and "summary sessions=… expired=… acked=… lost=… attempted=…".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class Failover {
    static final String ROOT = "/failover";
    static final AtomicBoolean running = new AtomicBoolean(true);
    static final AtomicInteger expired = new AtomicInteger();

    /** One session: its node, its writes, its connection changes. */
    static final class Session implements Watcher {
        final int id;
        final String path;
        volatile ZooKeeper zk;
        long acked = 0;     // last counter value acknowledged
        long attempted = 0; // last counter value sent
        // successful writes: start and end times (epoch ms)
        final List<long[]> writes = new ArrayList<>();
        // connection changes: time and connected (1) or not (0)
        final List<long[]> changes = new ArrayList<>();
        final CountDownLatch connected = new CountDownLatch(1);

        Session(int id) {
            this.id = id;
            this.path = ROOT + "/s" + id;
        }

        @Override
        public void process(WatchedEvent e) {
            long now = System.currentTimeMillis();
            synchronized (this) {
                switch (e.getState()) {
                    case SyncConnected: changes.add(new long[] {now, 1}); connected.countDown(); break;
                    case Disconnected: changes.add(new long[] {now, 0}); break;
                    case Expired: changes.add(new long[] {now, 0}); expired.incrementAndGet(); break;
                    default: break;
                }
            }
        }
    }

    public static void main(String[] a) throws Exception {
        String hosts = a[0];
        int n = Integer.parseInt(a[1]);
        double rate = Double.parseDouble(a[2]);
        int timeout = Integer.parseInt(a[3]);
        long pause = Math.max(1, (long) (1000.0 / rate));
        Session[] ss = new Session[n];
        for (int i = 0; i < n; i++) {
            ss[i] = new Session(i);
            ss[i].zk = new ZooKeeper(hosts, timeout, ss[i]);
        }
        for (Session s : ss) {
            s.connected.await();
        }
        try {
            ss[0].zk.create(ROOT, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException e) {
            // an earlier run's
        }
        for (Session s : ss) {
            try {
                s.zk.create(s.path, "0".getBytes(StandardCharsets.UTF_8), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            } catch (KeeperException.NodeExistsException e) {
                s.zk.setData(s.path, "0".getBytes(StandardCharsets.UTF_8), -1);
            }
        }
        List<Thread> threads = new ArrayList<>();
        for (Session s : ss) {
            Thread t = new Thread(() -> writeLoop(s, pause));
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        System.out.println("ready");
        System.out.flush();
        List<Long> kills = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.startsWith("kill ")) {
                kills.add(Long.parseLong(line.substring(5).trim()));
            } else if (line.equals("done")) {
                break;
            }
        }
        running.set(false);
        for (Thread t : threads) {
            t.join(10_000);
        }
        for (int k = 0; k < kills.size(); k++) {
            long t0 = kills.get(k);
            long bound = k + 1 < kills.size() ? kills.get(k + 1) : Long.MAX_VALUE;
            long writesBack = -1;
            long sessionsBack = 0;
            int disconnected = 0;
            for (Session s : ss) {
                synchronized (s) {
                    for (long[] w : s.writes) {
                        if (w[0] >= t0 && w[1] < bound && (writesBack < 0 || w[1] - t0 < writesBack)) {
                            writesBack = w[1] - t0;
                        }
                    }
                    long lost = -1;
                    for (long[] c : s.changes) {
                        if (c[0] < t0 || c[0] >= bound) continue;
                        if (c[1] == 0 && lost < 0) lost = c[0];
                        if (c[1] == 1 && lost >= 0) {
                            sessionsBack = Math.max(sessionsBack, c[0] - t0);
                            disconnected++;
                            lost = -2; // counted
                            break;
                        }
                    }
                    if (lost >= 0) {
                        sessionsBack = Long.MAX_VALUE; // lost and never back
                        disconnected++;
                    }
                }
            }
            System.out.println("kill=" + (k + 1) + " writes_back_ms=" + writesBack + " sessions_back_ms="
                + (sessionsBack == Long.MAX_VALUE ? -1 : sessionsBack) + " disconnected=" + disconnected);
        }
        // every acknowledged write must be there: the node holds the last acknowledged value or a
        // later attempted one (sent, its reply lost in the failover)
        long lost = 0, acked = 0, attempted = 0;
        ZooKeeper check = new ZooKeeper(hosts, timeout, e -> { });
        for (Session s : ss) {
            acked += s.acked;
            attempted += s.attempted;
            for (int tries = 0; ; tries++) {
                try {
                    check.sync(s.path, (rc, p, ctx) -> { }, null);
                    long v = Long.parseLong(new String(check.getData(s.path, false, null), StandardCharsets.UTF_8));
                    if (v < s.acked || v > s.attempted) {
                        lost++;
                        System.out.println("LOST session=" + s.id + " node=" + v + " acked=" + s.acked + " attempted=" + s.attempted);
                    }
                    break;
                } catch (KeeperException.ConnectionLossException e) {
                    if (tries > 50) throw e;
                    Thread.sleep(200);
                }
            }
        }
        System.out.println("summary sessions=" + n + " expired=" + expired.get() + " acked=" + acked
            + " lost=" + lost + " attempted=" + attempted);
        System.out.flush();
        check.close();
        for (Session s : ss) {
            s.zk.close();
        }
    }

    static void writeLoop(Session s, long pause) {
        long next = System.currentTimeMillis();
        while (running.get()) {
            long now = System.currentTimeMillis();
            if (now < next) {
                try { Thread.sleep(next - now); } catch (InterruptedException e) { return; }
            }
            next += pause;
            long v = s.attempted + 1;
            s.attempted = v;
            long start = System.currentTimeMillis();
            try {
                s.zk.setData(s.path, Long.toString(v).getBytes(StandardCharsets.UTF_8), -1);
                long end = System.currentTimeMillis();
                synchronized (s) {
                    s.acked = v;
                    s.writes.add(new long[] {start, end});
                }
            } catch (KeeperException.SessionExpiredException e) {
                return;
            } catch (KeeperException e) {
                // ConnectionLoss and the like: the outcome is unknown; go on at the next slot
                next = Math.max(next, System.currentTimeMillis() + 20);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
