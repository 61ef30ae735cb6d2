package org.deferd;

/**
 * {@code UNAVAILABLE}: ZooKeeper not connected, the operation failed there, or the daemon drains. A put says {@code stored=no|maybe} and why in {@code reason=}: see {@link PutRetry#safe}.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class UnavailableException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public UnavailableException(String text) {
        super("UNAVAILABLE", text);
    }

    /** @return true: sending it again later may succeed */
    @Override
    public boolean isRetryable() {
        return true;
    }
}
