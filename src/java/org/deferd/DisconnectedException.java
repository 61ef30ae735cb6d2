package org.deferd;

/**
 * The connection to the daemon was closed or broke: requests in flight have no answer, and
 * the jobs it held are released by the daemon (they come again). Connect again to go on.
 *
 * <p>Thread-safety: immutable once thrown.
 */
public class DisconnectedException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param why what happened, for people
     */
    public DisconnectedException(String why) {
        super("DISCONNECTED", why);
    }

    DisconnectedException(String code, String why) {
        super(code, why);
    }

    /** @return true: a new connection may succeed */
    @Override
    public boolean isRetryable() {
        return true;
    }
}
