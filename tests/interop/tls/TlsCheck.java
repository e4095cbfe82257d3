// TLS (secureClientPort, x509 scheme) and SASL DIGEST-MD5 checks with the official ZooKeeper Java
// client. Prints one line per observation; run.sh runs it against Debian's ZooKeeper and against
// zkr and compares the transcripts. Usage: TlsCheck <plainPort> <securePort> <certDir> [tls]
// ("tls": the TLS part only, for the key store variants, which differ only in the server's stores)
import java.io.FileInputStream;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.*;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;

public class TlsCheck {
    static String dir;
    static int plain, secure;

    static void out(String s) { System.out.println(s); System.out.flush(); }

    /// A client config: TLS with an optional key store, or plaintext; SASL login section or none.
    static ZKClientConfig config(boolean tls, String keyStore, String saslSection) throws Exception {
        ZKClientConfig c = new ZKClientConfig();
        if (tls) {
            c.setProperty(ZKClientConfig.SECURE_CLIENT, "true");
            c.setProperty(ZKClientConfig.ZOOKEEPER_CLIENT_CNXN_SOCKET, "org.apache.zookeeper.ClientCnxnSocketNetty");
            c.setProperty("zookeeper.ssl.trustStore.location", dir + "/truststore.p12");
            c.setProperty("zookeeper.ssl.trustStore.password", "changeit");
            c.setProperty("zookeeper.ssl.trustStore.type", "PKCS12");
            if (keyStore != null) {
                c.setProperty("zookeeper.ssl.keyStore.location", dir + "/" + keyStore);
                c.setProperty("zookeeper.ssl.keyStore.password", "changeit");
                c.setProperty("zookeeper.ssl.keyStore.type", "PKCS12");
            }
        }
        if (saslSection == null) {
            c.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false");
        } else {
            c.setProperty(ZKClientConfig.LOGIN_CONTEXT_NAME_KEY, saslSection);
        }
        return c;
    }

    /// Connects and waits for SyncConnected (and SaslAuthenticated or AuthFailed if SASL is on).
    /// Returns null and prints what happened if the connection does not come up.
    static ZooKeeper connect(String label, boolean tls, String keyStore, String sasl) throws Exception {
        return connectTo(label, tls ? secure : plain, tls, keyStore, sasl, 20);
    }

    /// A connection expected to be refused: a shorter wait (an accepted one comes up at once).
    static ZooKeeper refused(String label, int port, boolean tls, String keyStore) throws Exception {
        return connectTo(label, port, tls, keyStore, null, 4);
    }

    static ZooKeeper connectTo(String label, int port, boolean tls, String keyStore, String sasl, int waitSecs) throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        CountDownLatch authDone = new CountDownLatch(1);
        String[] state = {"none"};
        Watcher w = e -> {
            if (e.getType() != Watcher.Event.EventType.None) return;
            switch (e.getState()) {
                case SyncConnected: up.countDown(); break;
                case SaslAuthenticated: state[0] = "SaslAuthenticated"; authDone.countDown(); break;
                case AuthFailed: state[0] = "AuthFailed"; authDone.countDown(); up.countDown(); break;
                default: break;
            }
        };
        ZooKeeper zk = new ZooKeeper("127.0.0.1:" + port, 15000, w, config(tls, keyStore, sasl));
        if (!up.await(waitSecs, TimeUnit.SECONDS)) {
            out(label + ": not connected (" + zk.getState() + ")");
            zk.close();
            return null;
        }
        if (sasl != null) {
            authDone.await(10, TimeUnit.SECONDS);
            out(label + ": connected, sasl " + state[0]);
            if (state[0].equals("AuthFailed")) {
                try { zk.exists("/", false); out(label + ": request after AuthFailed succeeded"); }
                catch (KeeperException e) { out(label + ": request after AuthFailed -> " + e.code()); }
                zk.close();
                return null;
            }
        } else {
            out(label + ": connected");
        }
        return zk;
    }

    static void get(String label, ZooKeeper zk, String path) throws Exception {
        try { out(label + ": get " + path + " -> " + new String(zk.getData(path, false, null))); }
        catch (KeeperException e) { out(label + ": get " + path + " -> " + e.code()); }
    }

    static void set(String label, ZooKeeper zk, String path, String data) throws Exception {
        try { zk.setData(path, data.getBytes(), -1); out(label + ": set " + path + " -> ok"); }
        catch (KeeperException e) { out(label + ": set " + path + " -> " + e.code()); }
    }

    static void acl(String label, ZooKeeper zk, String path) throws Exception {
        for (ACL a : zk.getACL(path, null)) out(label + ": acl " + path + " " + a.getId().getScheme() + ":" + a.getId().getId() + " perms=" + a.getPerms());
    }

    static void delete(ZooKeeper zk, String path) {
        try { zk.delete(path, -1); } catch (Exception e) { /* fresh server or already gone */ }
    }

    /// The subject Java itself gives the client certificate of a key store.
    static String subjectOf(String keyStore) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (FileInputStream in = new FileInputStream(dir + "/" + keyStore)) { ks.load(in, "changeit".toCharArray()); }
        String alias = ks.aliases().nextElement();
        return ((X509Certificate) ks.getCertificate(alias)).getSubjectX500Principal().getName();
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            out("FAILED: " + t);
            t.printStackTrace();
            System.exit(1);
        }
    }

    static void run(String[] args) throws Exception {
        plain = Integer.parseInt(args[0]);
        secure = Integer.parseInt(args[1]);
        dir = args[2];
        Thread watchdog = new Thread(() -> {
            try { Thread.sleep(120_000); } catch (InterruptedException e) { return; }
            out("WATCHDOG: gave up after 120 s"); System.exit(3);
        });
        watchdog.setDaemon(true);
        watchdog.start();

        // ---- TLS: both ports at once, x509 identity, x509 ACLs
        String alice = subjectOf("alice.p12");
        ZooKeeper a = connect("tls alice", true, "alice.p12", null);
        ZooKeeper p = connect("plain", false, null, null);
        delete(a, "/tls-creator");
        delete(a, "/tls-explicit");
        a.create("/tls-creator", "secret".getBytes(), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
        acl("tls alice", a, "/tls-creator");
        List<ACL> acls = a.getACL("/tls-creator", null);
        out("tls alice: creator acl id equals Java's X500Principal.getName(): " + acls.get(0).getId().getId().equals(alice));
        get("tls alice", a, "/tls-creator");
        get("plain", p, "/tls-creator");
        set("plain", p, "/tls-creator", "x");
        // An explicit x509 ACL written with the subject string: read for alice only.
        a.create("/tls-explicit", "e".getBytes(), java.util.Arrays.asList(new ACL(ZooDefs.Perms.READ, new Id("x509", alice)),
            new ACL(ZooDefs.Perms.ADMIN, new Id("world", "anyone"))), CreateMode.PERSISTENT);
        get("tls alice", a, "/tls-explicit");
        set("tls alice", a, "/tls-explicit", "y");
        ZooKeeper b = connect("tls bob", true, "bob.p12", null);
        if (b != null) {
            get("tls bob", b, "/tls-creator");
            get("tls bob", b, "/tls-explicit");
            b.close();
        }
        // Client certificates are required (ssl.clientAuth=need): none, or one from another CA, is refused.
        ZooKeeper none = refused("tls no-cert", secure, true, null);
        if (none != null) none.close();
        ZooKeeper rogue = refused("tls rogue-cert", secure, true, "rogue.p12");
        if (rogue != null) rogue.close();
        // TLS client on the plaintext port and plaintext client on the TLS port: no session.
        ZooKeeper mixed = refused("plain client to tls port", secure, false, null);
        if (mixed != null) mixed.close();
        mixed = refused("tls client to plain port", plain, true, "alice.p12");
        if (mixed != null) mixed.close();

        if (args.length > 3 && args[3].equals("tls")) {
            p.close();
            a.close();
            out("done");
            System.exit(0);
        }

        // ---- SASL DIGEST-MD5 on the plaintext port
        ZooKeeper s = connect("sasl bob", false, null, "Client");
        if (s != null) {
            delete(s, "/sasl-creator");
            delete(s, "/sasl-explicit");
            s.create("/sasl-creator", "s".getBytes(), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            acl("sasl bob", s, "/sasl-creator");
            s.create("/sasl-explicit", "t".getBytes(), java.util.Arrays.asList(new ACL(ZooDefs.Perms.ALL, new Id("sasl", "bob"))), CreateMode.PERSISTENT);
            get("sasl bob", s, "/sasl-creator");
            get("sasl bob", s, "/sasl-explicit");
        }
        get("plain", p, "/sasl-creator");
        get("plain", p, "/sasl-explicit");
        ZooKeeper c = connect("sasl carol", false, null, "ClientCarol");
        if (c != null) {
            get("sasl carol", c, "/sasl-explicit");
            c.close();
        }
        connect("sasl bob wrong password", false, null, "ClientBadPassword");
        connect("sasl unknown user", false, null, "ClientUnknown");
        // SASL over TLS: both identities on one session.
        ZooKeeper st = connect("tls+sasl alice/bob", true, "alice.p12", "Client");
        if (st != null) {
            get("tls+sasl alice/bob", st, "/tls-explicit");
            get("tls+sasl alice/bob", st, "/sasl-explicit");
            st.close();
        }
        if (s != null) s.close();
        p.close();
        a.close();
        out("done");
        System.exit(0);
    }
}
