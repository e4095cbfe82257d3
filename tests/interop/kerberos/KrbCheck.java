// SASL GSSAPI (Kerberos) checks with the official ZooKeeper Java client (Debian zookeeper.jar 3.8).
// Prints one line per observation; run.sh runs it against Debian's ZooKeeper and against zkr and
// compares the transcripts, and each transcript with tests/interop/kerberos/expected/.
//
//   KrbCheck <mode> <port> <workdir>
//   modes: main      bob and carol log in from keytabs (JAAS sections Client, ClientCarol):
//                    whoAmI, sasl ACLs with the id the server gives and with the short name,
//                    getACL, getData, NoAuth for carol and for a plain client, the super user
//          wrongsvc  bob asks for a ticket to zookeeper/otherhost (in the KDC, not in the
//                    server's keytab)
//          kdcdown   bob connects, then (run.sh stops the KDC between the two files
//                    kdcdown.ready and kdcdown.go) the open session, a new session with the
//                    same login section and one with a login section not used before
//          enforce   a plain client (no SASL) and bob under enforce.auth / sessionRequireClientSASLAuth
//          login     one SASL login of bob, the outcome only (server with a bad keytab)
// The client is pointed at "localhost:<port>", so its default server principal is
// zookeeper/localhost (the client's default service name, and the host it connects to).
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.*;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;

public class KrbCheck {
    static int port;
    static String work;

    static void out(String s) { System.out.println(s); System.out.flush(); }

    static final class Conn {
        ZooKeeper zk;
        String sasl = "none";
        String label;
    }

    /// Connects as the JAAS section `section` (null: SASL off) and waits for SyncConnected and, with
    /// SASL, for SaslAuthenticated or AuthFailed. Prints one line with the outcome.
    static Conn connect(String label, String section, String serverPrincipal) throws Exception {
        ZKClientConfig c = new ZKClientConfig();
        if (section == null) {
            c.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false");
        } else {
            c.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "true");
            c.setProperty(ZKClientConfig.LOGIN_CONTEXT_NAME_KEY, section);
            if (serverPrincipal != null) c.setProperty(ZKClientConfig.ZOOKEEPER_SERVER_PRINCIPAL, serverPrincipal);
        }
        CountDownLatch up = new CountDownLatch(1);
        CountDownLatch authDone = new CountDownLatch(1);
        Conn conn = new Conn();
        conn.label = label;
        List<String> states = new ArrayList<>();
        Watcher w = e -> {
            if (e.getType() != Watcher.Event.EventType.None) return;
            synchronized (states) { states.add(e.getState().toString()); }
            switch (e.getState()) {
                case SyncConnected: up.countDown(); break;
                case SaslAuthenticated: conn.sasl = "SaslAuthenticated"; authDone.countDown(); break;
                case AuthFailed: conn.sasl = "AuthFailed"; authDone.countDown(); up.countDown(); break;
                default: break;
            }
        };
        conn.zk = new ZooKeeper("localhost:" + port, 15000, w, c);
        if (!up.await(15, TimeUnit.SECONDS)) {
            out(label + ": not connected (" + conn.zk.getState() + ")");
            return conn;
        }
        if (section != null) authDone.await(10, TimeUnit.SECONDS);
        String seen;
        synchronized (states) {
            // A client whose own login fails (no ticket: the KDC is down) fires AuthFailed
            // before it connects, and a SyncConnected after it or not, by a race inside the
            // client: a SyncConnected after AuthFailed is left out of the transcript.
            List<String> shown = new ArrayList<>(states);
            int failed = shown.indexOf("AuthFailed");
            if (failed >= 0) shown.subList(failed + 1, shown.size()).remove("SyncConnected");
            seen = String.join(",", shown);
        }
        out(label + ": connected, sasl " + conn.sasl + " (events " + seen + ")");
        return conn;
    }

    static String code(Exception e) {
        if (e instanceof KeeperException) return ((KeeperException) e).code().toString();
        return e.getClass().getSimpleName();
    }

    static List<ClientInfo> whoAmI(Conn c) {
        try {
            List<ClientInfo> l = c.zk.whoAmI();
            List<String> s = new ArrayList<>();
            for (ClientInfo i : l) s.add(i.getAuthScheme() + ":" + i.getUser());
            out(c.label + ": whoAmI -> [" + String.join(", ", s) + "]");
            return l;
        } catch (Exception e) {
            out(c.label + ": whoAmI -> " + code(e));
            return new ArrayList<>();
        }
    }

    static String saslId(List<ClientInfo> l) {
        for (ClientInfo i : l) if (i.getAuthScheme().equals("sasl")) return i.getUser();
        return null;
    }

    static void create(Conn c, String path, String data, List<ACL> acl) {
        try {
            c.zk.create(path, data.getBytes(), acl, CreateMode.PERSISTENT);
            out(c.label + ": create " + path + " " + acls(acl) + " -> ok");
        } catch (Exception e) {
            out(c.label + ": create " + path + " " + acls(acl) + " -> " + code(e));
        }
    }

    static void get(Conn c, String path) {
        try {
            out(c.label + ": getData " + path + " -> " + new String(c.zk.getData(path, false, null)));
        } catch (Exception e) {
            out(c.label + ": getData " + path + " -> " + code(e));
        }
    }

    static void getAcl(Conn c, String path) {
        try {
            out(c.label + ": getACL " + path + " -> " + acls(c.zk.getACL(path, null)));
        } catch (Exception e) {
            out(c.label + ": getACL " + path + " -> " + code(e));
        }
    }

    static String acls(List<ACL> l) {
        List<String> s = new ArrayList<>();
        for (ACL a : l) s.add(a.getId().getScheme() + ":" + a.getId().getId() + ":" + a.getPerms());
        return "[" + String.join(", ", s) + "]";
    }

    static List<ACL> sasl(String id) {
        List<ACL> l = new ArrayList<>();
        l.add(new ACL(ZooDefs.Perms.ALL, new Id("sasl", id)));
        return l;
    }

    static void close(Conn c) throws InterruptedException { if (c != null && c.zk != null) c.zk.close(); }

    static void waitFile(String name, int secs) throws Exception {
        Path p = Path.of(work, name);
        for (int i = 0; i < secs * 10 && !Files.exists(p); i++) Thread.sleep(100);
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        port = Integer.parseInt(args[1]);
        work = args[2];
        switch (mode) {
            case "main": {
                Conn bob = connect("bob", "Client", null);
                String id = saslId(whoAmI(bob));
                out("bob: sasl id -> " + id);
                create(bob, "/k", "k-data", sasl(id == null ? "bob" : id));
                create(bob, "/kshort", "kshort-data", sasl("bob"));
                create(bob, "/kauth", "kauth-data", ZooDefs.Ids.CREATOR_ALL_ACL);
                getAcl(bob, "/k");
                getAcl(bob, "/kauth");
                get(bob, "/k");
                get(bob, "/kshort");
                get(bob, "/kauth");
                Conn carol = connect("carol", "ClientCarol", null);
                String cid = saslId(whoAmI(carol));
                out("carol: sasl id -> " + cid);
                get(carol, "/k");
                get(carol, "/kshort");
                get(carol, "/kauth");
                create(carol, "/c", "c-data", sasl(cid == null ? "carol" : cid));
                create(carol, "/c-auth", "c-auth-data", ZooDefs.Ids.CREATOR_ALL_ACL);
                getAcl(carol, "/c-auth");
                get(carol, "/c");
                // the super user (zookeeper.superUser) reads carol's nodes
                get(bob, "/c");
                get(bob, "/c-auth");
                Conn plain = connect("plain", null, null);
                List<ClientInfo> pw = whoAmI(plain);
                get(plain, "/k");
                create(plain, "/p", "p", ZooDefs.Ids.OPEN_ACL_UNSAFE);
                close(plain);
                close(carol);
                close(bob);
                break;
            }
            case "wrongsvc": {
                Conn c = connect("bob to zookeeper/otherhost", "Client", "zookeeper/otherhost@ZKR.TEST");
                if (c.zk.getState().isAlive()) {
                    try { c.zk.exists("/", false); out(c.label + ": exists / -> ok"); }
                    catch (Exception e) { out(c.label + ": exists / -> " + code(e)); }
                }
                out(c.label + ": state " + c.zk.getState());
                close(c);
                break;
            }
            case "kdcdown": {
                Conn a = connect("bob before KDC stop", "Client", null);
                create(a, "/kdc", "kdc-data", ZooDefs.Ids.CREATOR_ALL_ACL);
                Files.createFile(Path.of(work, "kdcdown.ready"));
                waitFile("kdcdown.go", 30);
                get(a, "/kdc");
                whoAmI(a);
                Conn b = connect("bob new session, same login section", "Client", null);
                whoAmI(b);
                get(b, "/kdc");
                Conn n = connect("bob new session, new login section", "ClientBob2", null);
                whoAmI(n);
                get(n, "/kdc");
                close(n);
                close(b);
                close(a);
                break;
            }
            case "enforce": {
                Conn plain = connect("plain", null, null);
                if (plain.zk.getState().isAlive()) {
                    // only the first request: the server closes the connection with its reply, and
                    // what a next request meets (the close, or a reconnect) is a race
                    create(plain, "/e-plain", "x", ZooDefs.Ids.OPEN_ACL_UNSAFE);
                }
                close(plain);
                Conn bob = connect("bob", "Client", null);
                whoAmI(bob);
                create(bob, "/e-bob", "x", ZooDefs.Ids.OPEN_ACL_UNSAFE);
                get(bob, "/e-bob");
                close(bob);
                break;
            }
            case "login": {
                Conn bob = connect("bob", "Client", null);
                if (bob.zk.getState().isAlive() && bob.sasl.equals("SaslAuthenticated")) whoAmI(bob);
                close(bob);
                break;
            }
            default:
                throw new IllegalArgumentException(mode);
        }
        out("done");
        System.exit(0);
    }
}
