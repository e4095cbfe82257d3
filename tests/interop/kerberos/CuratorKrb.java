// Curator 5 (Debian libcurator-framework-java) logging in with SASL GSSAPI through the JAAS section
// "Client" (bob's keytab): one create with a sasl ACL and one read. Usage: CuratorKrb <port>
import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;

public class CuratorKrb {
    static void out(String s) { System.out.println(s); System.out.flush(); }

    public static void main(String[] args) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString("localhost:" + args[0])
            .sessionTimeoutMs(15000).connectionTimeoutMs(10000).retryPolicy(new RetryOneTime(500)).build();
        c.start();
        if (!c.blockUntilConnected(15, java.util.concurrent.TimeUnit.SECONDS)) {
            out("curator bob: not connected");
            System.exit(0);
        }
        out("curator bob: connected");
        String id = "bob";
        try {
            List<String> s = new ArrayList<>();
            for (ClientInfo i : c.getZookeeperClient().getZooKeeper().whoAmI()) {
                s.add(i.getAuthScheme() + ":" + i.getUser());
                if (i.getAuthScheme().equals("sasl")) id = i.getUser();
            }
            out("curator bob: whoAmI -> [" + String.join(", ", s) + "]");
        } catch (Exception e) {
            out("curator bob: whoAmI -> " + e.getClass().getSimpleName());
        }
        List<ACL> acl = new ArrayList<>();
        acl.add(new ACL(31, new Id("sasl", id)));
        try {
            c.create().withACL(acl).forPath("/cur", "cur-data".getBytes());
            out("curator bob: create /cur [sasl:" + id + ":31] -> ok");
            out("curator bob: getData /cur -> " + new String(c.getData().forPath("/cur")));
            List<String> s = new ArrayList<>();
            for (ACL a : c.getACL().forPath("/cur")) s.add(a.getId().getScheme() + ":" + a.getId().getId() + ":" + a.getPerms());
            out("curator bob: getACL /cur -> [" + String.join(", ", s) + "]");
        } catch (Exception e) {
            out("curator bob: /cur -> " + e.getClass().getSimpleName());
        }
        c.close();
        out("done");
        System.exit(0);
    }
}
