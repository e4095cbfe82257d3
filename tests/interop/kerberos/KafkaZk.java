// The registry side of kafka.sh: what a Kafka 3.9 broker (ZooKeeper mode, zookeeper.set.acl=true,
// Kerberos to ZooKeeper) left in ZooKeeper, read with the official Java client (Debian
// zookeeper.jar 3.8) through KrbCheck's helpers (compiled next to it). Prints one line per
// observation.
//
//   KafkaZk <port> <workdir> [after]
//
// JAAS sections: Client = kafka/localhost@ZKR.TEST (the broker's own keytab), ClientBob = bob.
// 1. as kafka: whoAmI, children of /, /brokers/ids, /brokers/topics, the ACLs of Kafka's znodes
// 2. a plain client (no SASL): world read allowed, writes refused, the sensitive /config/users
// 3. bob (Kerberos, not the broker's principal): create under /config, setData, delete
// "after" (the broker stopped by SIGTERM): its ephemeral znodes are gone, the topic stays
import java.util.ArrayList;
import java.util.List;
import org.apache.zookeeper.*;
import org.apache.zookeeper.data.Stat;

public class KafkaZk {
    static void out(String s) { KrbCheck.out(s); }

    static void children(KrbCheck.Conn c, String path) {
        try {
            List<String> l = new ArrayList<>(c.zk.getChildren(path, false));
            java.util.Collections.sort(l);
            out(c.label + ": getChildren " + path + " -> " + l);
        } catch (Exception e) {
            out(c.label + ": getChildren " + path + " -> " + KrbCheck.code(e));
        }
    }

    static void setData(KrbCheck.Conn c, String path, String data) {
        try {
            c.zk.setData(path, data.getBytes(), -1);
            out(c.label + ": setData " + path + " -> ok");
        } catch (Exception e) {
            out(c.label + ": setData " + path + " -> " + KrbCheck.code(e));
        }
    }

    static void delete(KrbCheck.Conn c, String path) {
        try {
            c.zk.delete(path, -1);
            out(c.label + ": delete " + path + " -> ok");
        } catch (Exception e) {
            out(c.label + ": delete " + path + " -> " + KrbCheck.code(e));
        }
    }

    static void stat(KrbCheck.Conn c, String path) {
        try {
            Stat s = c.zk.exists(path, false);
            out(c.label + ": exists " + path + " -> " + (s == null ? "no" : (s.getEphemeralOwner() != 0 ? "ephemeral" : "persistent")));
        } catch (Exception e) {
            out(c.label + ": exists " + path + " -> " + KrbCheck.code(e));
        }
    }

    public static void main(String[] args) throws Exception {
        KrbCheck.port = Integer.parseInt(args[0]);
        KrbCheck.work = args[1];
        if (args.length > 2 && args[2].equals("after")) {
            KrbCheck.Conn a = KrbCheck.connect("kafka after broker stop", "Client", null);
            children(a, "/brokers/ids");
            stat(a, "/controller");
            children(a, "/brokers/topics");
            KrbCheck.close(a);
            out("done");
            System.exit(0);
        }

        KrbCheck.Conn k = KrbCheck.connect("kafka", "Client", null);
        KrbCheck.whoAmI(k);
        children(k, "/");
        children(k, "/brokers");
        children(k, "/brokers/ids");
        children(k, "/brokers/topics");
        children(k, "/config");
        children(k, "/config/topics");
        stat(k, "/brokers/ids/1");
        stat(k, "/controller");
        for (String p : new String[] {"/brokers", "/brokers/ids", "/brokers/ids/1", "/brokers/topics", "/brokers/topics/t1",
                "/brokers/topics/t1/partitions/0/state", "/config", "/config/topics", "/config/topics/t1", "/config/users",
                "/config/changes", "/controller", "/controller_epoch", "/admin", "/admin/delete_topics", "/cluster", "/cluster/id",
                "/feature", "/isr_change_notification", "/latest_producer_id_block", "/consumers", "/zookeeper"})
            KrbCheck.getAcl(k, p);

        KrbCheck.Conn plain = KrbCheck.connect("plain", null, null);
        KrbCheck.whoAmI(plain);
        KrbCheck.get(plain, "/brokers/topics/t1");
        KrbCheck.get(plain, "/config/topics/t1");
        children(plain, "/brokers/topics");
        children(plain, "/config/users");
        KrbCheck.getAcl(plain, "/config/users");
        setData(plain, "/brokers/topics/t1", "{}");
        delete(plain, "/config/topics/t1");
        KrbCheck.create(plain, "/config/topics/plain", "{}", ZooDefs.Ids.OPEN_ACL_UNSAFE);
        KrbCheck.close(plain);

        KrbCheck.Conn bob = KrbCheck.connect("bob", "ClientBob", null);
        KrbCheck.whoAmI(bob);
        KrbCheck.create(bob, "/config/bob", "{}", ZooDefs.Ids.OPEN_ACL_UNSAFE);
        KrbCheck.create(bob, "/config/topics/bob", "{}", ZooDefs.Ids.CREATOR_ALL_ACL);
        setData(bob, "/brokers/topics/t1", "{}");
        delete(bob, "/config/topics/t1");
        KrbCheck.get(bob, "/config/topics/t1");
        KrbCheck.close(bob);

        // the broker's principal from a second session may write what the broker wrote
        String cfg = "{}";
        try { cfg = new String(k.zk.getData("/config/topics/t1", false, null)); } catch (Exception e) { out("kafka: getData /config/topics/t1 -> " + KrbCheck.code(e)); }
        setData(k, "/config/topics/t1", cfg);
        stat(k, "/config/topics/t1");
        KrbCheck.close(k);
        out("done");
        System.exit(0);
    }
}
