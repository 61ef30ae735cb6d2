package org.deferd;

/**
 * {@code LEASE_LOST}: the job's lease expired or its lock was lost (or it was cancelled while held); it comes again.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class LeaseLostException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public LeaseLostException(String text) {
        super("LEASE_LOST", text);
    }

    /** @return false: sending it again will not help */
    @Override
    public boolean isRetryable() {
        return false;
    }
}
