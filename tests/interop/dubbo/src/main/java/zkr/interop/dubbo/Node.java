package zkr.interop.dubbo;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.dubbo.common.utils.NetUtils;
import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ProtocolConfig;
import org.apache.dubbo.config.ReferenceConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.ServiceConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;
import org.apache.dubbo.registry.client.migration.MigrationInvoker;
import org.apache.dubbo.rpc.Invoker;
import org.apache.dubbo.rpc.cluster.ClusterInvoker;
import org.apache.dubbo.rpc.model.FrameworkModel;

/**
 * One Dubbo process of the interop scenario (driven by driver.py over stdin/stdout).
 *
 * <pre>
 *   Node provider NAME [--wait] INSTANCE...    exports the service of each instance, prints "READY ALL";
 *                                     with --wait it prints "WAITING" once configured and starts on "go"
 *   Node consumer NAME INSTANCE...    refers to it, calls it in the background and reports what it sees
 *   INSTANCE = MODE|REGISTRY_URL|DUBBO_PORT      MODE = plain (Greeter) or auth (SecureGreeter)
 * </pre>
 *
 * Each instance is a separate Dubbo application in its own FrameworkModel (Dubbo's multi-instance API), so the plain
 * and the digest-auth registries get separate ZooKeeper clients. Everything else is Dubbo's default: interface- and
 * application-level registration, and the config centre and metadata report that Dubbo derives from the registry.
 *
 * <p>Output lines (epoch milliseconds, so the driver can put them on its own clock):
 * <pre>
 *   READY MODE T | READY ALL
 *   DIR MODE T iface=[addr,...] app=[addr,...] use=iface|app    the consumer's two directories, on every change
 *                                          (an address with an overridden weight shows as addr(w=N))
 *   TICK MODE T ok=N fail=N by=p1:N,p2:N err=...                 background calls of the last half second
 *   CALLS MODE ok=N fail=N by=... err=...                        answer to "call MODE N"
 * </pre>
 * stdin: "call MODE N", "stop" (graceful: Dubbo unregisters and closes its ZooKeeper sessions, then exit).
 */
public final class Node {
    private static final Object OUT = new Object();

    static void out(String line) {
        synchronized (OUT) {
            System.out.println(line);
            System.out.flush();
        }
    }

    record Instance(String mode, String registry, int port) {
        static Instance parse(String s) {
            String[] p = s.split("\\|");
            return new Instance(p[0], p[1], p.length > 2 ? Integer.parseInt(p[2]) : 0);
        }

        Class<?> iface() {
            return mode.equals("auth") ? SecureGreeter.class : Greeter.class;
        }

        String app(String role) {
            return "zkr-interop-" + role + (mode.equals("auth") ? "-auth" : "");
        }
    }

    public static void main(String[] args) throws Exception {
        // Dubbo registers the host's first non-loopback address; the driver passes
        // -Ddubbo.network.interface.ignored=.* so that it falls back to 127.0.0.1. Never talk to anything else.
        String host = NetUtils.getLocalHost();
        if (!host.equals("127.0.0.1")) {
            out("ERROR Dubbo would register " + host + ", not 127.0.0.1; refusing to start");
            System.exit(3);
        }
        String role = args[0];
        String name = args[1];
        boolean wait = args.length > 2 && args[2].equals("--wait");
        List<Instance> instances = new ArrayList<>();
        for (int i = wait ? 3 : 2; i < args.length; i++) {
            instances.add(Instance.parse(args[i]));
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<DubboBootstrap> boots = new ArrayList<>();
        Map<String, Caller> callers = new LinkedHashMap<>();
        List<Runnable> starts = new ArrayList<>();
        // plain first: on a shared server its parents (/dubbo, /services) must not get the auth instance's ACL
        for (Instance inst : instances) {
            DubboBootstrap boot = DubboBootstrap.newInstance(new FrameworkModel());
            ApplicationConfig app = new ApplicationConfig(inst.app(role));
            app.setQosEnable(false);
            boot.application(app);
            boot.registry(new RegistryConfig(inst.registry()));
            if (role.equals("provider")) {
                ProtocolConfig protocol = new ProtocolConfig("dubbo", inst.port());
                protocol.setHost("127.0.0.1");
                app.setMetadataServicePort(inst.port());
                boot.protocol(protocol);
                @SuppressWarnings({"rawtypes", "unchecked"})
                ServiceConfig svc = new ServiceConfig();
                svc.setInterface(inst.iface());
                svc.setRef(new GreeterImpl(name));
                boot.service(svc);
            } else {
                @SuppressWarnings({"rawtypes", "unchecked"})
                ReferenceConfig ref = new ReferenceConfig();
                ref.setInterface(inst.iface());
                ref.setCheck(false);
                ref.setTimeout(3000);
                boot.reference(ref);
                callers.put(inst.mode(), new Caller(inst.mode(), ref));
            }
            boots.add(boot);
            starts.add(() -> {
                boot.start();
                out("READY " + inst.mode() + " " + System.currentTimeMillis());
            });
        }
        if (wait) {
            // started early, while the driver waits for something else; registers only when told
            out("WAITING");
            String go;
            while ((go = in.readLine()) != null && !go.trim().equals("go")) {
                out("ERROR expected go, got: " + go);
            }
        }
        for (Runnable start : starts) {
            start.run();
        }
        for (Caller c : callers.values()) {
            c.startBackground();
        }
        out("READY ALL");
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if (w[0].equals("call") && w.length == 3 && callers.containsKey(w[1])) {
                Tally t = callers.get(w[1]).calls(Integer.parseInt(w[2]));
                out("CALLS " + w[1] + " " + t);
            } else if (w[0].equals("stop")) {
                break;
            } else if (!w[0].isEmpty()) {
                out("ERROR unknown command: " + line);
            }
        }
        for (Caller c : callers.values()) {
            c.running.set(false);
        }
        for (DubboBootstrap b : boots) {
            b.stop();
        }
        out("STOPPED " + System.currentTimeMillis());
        System.exit(0);
    }

    /** Call counts by answering provider, plus failures and the last error. */
    static final class Tally {
        int ok;
        int fail;
        final Map<String, Integer> by = new TreeMap<>();
        String err = "-";

        void add(String who, Throwable e) {
            if (e == null) {
                ok++;
                by.merge(who, 1, Integer::sum);
            } else {
                fail++;
                Throwable root = e;
                while (root.getCause() != null && root.getCause() != root) {
                    root = root.getCause();
                }
                err = root.getClass().getSimpleName();
            }
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder();
            by.forEach((k, v) -> b.append(b.length() == 0 ? "" : ",").append(k).append(':').append(v));
            return "ok=" + ok + " fail=" + fail + " by=" + (b.length() == 0 ? "-" : b) + " err=" + err;
        }
    }

    /** A consumer's reference: synchronous call batches, background traffic, and a watch on its directories. */
    static final class Caller {
        final String mode;
        @SuppressWarnings("rawtypes")
        final ReferenceConfig ref;
        final AtomicBoolean running = new AtomicBoolean(true);

        @SuppressWarnings("rawtypes")
        Caller(String mode, ReferenceConfig ref) {
            this.mode = mode;
            this.ref = ref;
        }

        String call() {
            Object proxy = ref.get();
            if (proxy instanceof SecureGreeter s) {
                return s.hello(mode);
            }
            return ((Greeter) proxy).hello(mode);
        }

        Tally calls(int n) {
            Tally t = new Tally();
            for (int i = 0; i < n; i++) {
                try {
                    t.add(call(), null);
                } catch (RuntimeException e) {
                    t.add(null, e);
                }
            }
            return t;
        }

        void startBackground() {
            Thread traffic = new Thread(() -> {
                while (running.get()) {
                    long end = System.currentTimeMillis() + 500;
                    Tally t = new Tally();
                    while (running.get() && System.currentTimeMillis() < end) {
                        try {
                            t.add(call(), null);
                        } catch (RuntimeException e) {
                            t.add(null, e);
                        }
                        sleep(50);
                    }
                    out("TICK " + mode + " " + System.currentTimeMillis() + " " + t);
                }
            }, "traffic-" + mode);
            traffic.setDaemon(true);
            traffic.start();
            Thread dirs = new Thread(() -> {
                String last = "";
                while (running.get()) {
                    String now = directories();
                    if (!now.equals(last)) {
                        out("DIR " + mode + " " + System.currentTimeMillis() + " " + now);
                        last = now;
                    }
                    sleep(50);
                }
            }, "dirs-" + mode);
            dirs.setDaemon(true);
            dirs.start();
        }

        /** The addresses in the interface-level and the application-level directory, and which one is in use. */
        String directories() {
            try {
                Invoker<?> inv = ref.getInvoker();
                if (inv instanceof MigrationInvoker<?> m) {
                    String use = m.getCurrentAvailableInvoker() == null
                            ? "none"
                            : m.getCurrentAvailableInvoker() == m.getServiceDiscoveryInvoker() ? "app" : "iface";
                    return "iface=" + addresses(m.getInvoker()) + " app=" + addresses(m.getServiceDiscoveryInvoker())
                            + " use=" + use;
                }
                if (inv instanceof ClusterInvoker<?> c) {
                    return "iface=" + addresses(c) + " app=? use=" + inv.getClass().getSimpleName();
                }
                return "iface=? app=? use=" + (inv == null ? "null" : inv.getClass().getSimpleName());
            } catch (RuntimeException e) {
                return "error=" + e.getClass().getSimpleName();
            }
        }

        static String addresses(ClusterInvoker<?> c) {
            if (c == null || c.getDirectory() == null) {
                return "-";
            }
            TreeSet<String> a = new TreeSet<>();
            for (Invoker<?> i : c.getDirectory().getAllInvokers()) {
                // a configurators rule shows as an overridden parameter of the provider's URL
                String w = i.getUrl().getParameter("weight");
                a.add(i.getUrl().getAddress() + (w == null ? "" : "(w=" + w + ")"));
            }
            return a.toString().replace(" ", "");
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
