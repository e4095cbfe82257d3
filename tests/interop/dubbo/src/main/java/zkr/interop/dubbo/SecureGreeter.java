package zkr.interop.dubbo;

/**
 * The service of the digest-auth Dubbo instances. A separate interface (and application names) keeps every znode path
 * that the auth instances watch apart from the plain ones: Dubbo's ZooKeeper client keeps its NodeCaches in a static
 * map keyed by path, so two instances in one JVM must never watch the same path.
 */
public interface SecureGreeter {
    String hello(String who);
}
