package org.deferd;

/**
 * {@code QUEUE_FULL}: the queue holds its {@code max_pending} jobs; nothing was stored.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class QueueFullException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public QueueFullException(String text) {
        super("QUEUE_FULL", text);
    }

    /** @return true: sending it again later may succeed */
    @Override
    public boolean isRetryable() {
        return true;
    }
}
