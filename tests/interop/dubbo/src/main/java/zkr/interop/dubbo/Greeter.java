package zkr.interop.dubbo;

/** The service of the plain (no auth) Dubbo instances: answers with the name of the provider that served the call. */
public interface Greeter {
    String hello(String who);
}
