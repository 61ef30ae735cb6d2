package org.deferd;

/**
 * {@code NOT_FOUND}: no such job, or this connection does not hold it.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class NotFoundException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public NotFoundException(String text) {
        super("NOT_FOUND", text);
    }

    /** @return false: sending it again will not help */
    @Override
    public boolean isRetryable() {
        return false;
    }
}
