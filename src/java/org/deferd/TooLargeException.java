package org.deferd;

/**
 * {@code TOO_LARGE}: payload over {@code [daemon] max_payload}, or a transaction over one ZooKeeper packet.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class TooLargeException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public TooLargeException(String text) {
        super("TOO_LARGE", text);
    }

    /** @return false: sending it again will not help */
    @Override
    public boolean isRetryable() {
        return false;
    }
}
