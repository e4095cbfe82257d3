// A session of the official Java client, with an ephemeral node, rides out a restart of the
// server: the harness restarts zkr when this prints READY and tells it RESTARTED when the
// server is back. Exits 0 only if the session id is unchanged, the ephemeral is still there and
// no Expired state was ever seen.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class RestartSurvivor {
    public static void main(String[] args) throws Exception {
        List<Watcher.Event.KeeperState> states = new CopyOnWriteArrayList<>();
        ZooKeeper zk = new ZooKeeper(args[0], 15000, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState());
            }
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (zk.getState() != ZooKeeper.States.CONNECTED && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        long session = zk.getSessionId();
        zk.create("/survivor", "alive".getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line = in.readLine();
        if (!"RESTARTED".equals(line)) {
            System.out.println("FAIL harness said " + line);
            System.exit(2);
        }
        // The client reconnects by itself; wait for it, then check what it sees.
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!states.contains(Watcher.Event.KeeperState.Disconnected) && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        byte[] data = null;
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try {
                data = zk.getData("/survivor", false, null);
                break;
            } catch (Exception e) {
                last = e;
                Thread.sleep(100);
            }
        }
        boolean expired = states.contains(Watcher.Event.KeeperState.Expired);
        boolean same = zk.getSessionId() == session;
        String result = String.format("session_same=%s expired_seen=%s ephemeral=%s states=%s",
            same, expired, data == null ? "missing(" + last + ")" : new String(data), states);
        zk.close();
        if (same && !expired && data != null && new String(data).equals("alive")) {
            System.out.println("OK " + result);
        } else {
            System.out.println("FAIL " + result);
            System.exit(1);
        }
    }
}
