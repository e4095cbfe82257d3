package zkr.interop.dubbo;

/** Both services: the reply names the provider process, so the consumer can count calls per provider. */
public final class GreeterImpl implements Greeter, SecureGreeter {
    private final String name;

    public GreeterImpl(String name) {
        this.name = name;
    }

    @Override
    public String hello(String who) {
        return name;
    }
}
