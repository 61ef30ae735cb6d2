package org.deferd;

/**
 * {@code UNKNOWN_QUEUE}: the queue is not configured on this daemon.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class UnknownQueueException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public UnknownQueueException(String text) {
        super("UNKNOWN_QUEUE", text);
    }

    /** @return false: sending it again will not help */
    @Override
    public boolean isRetryable() {
        return false;
    }
}
