package org.deferd;

/**
 * {@code INTERNAL}: anything else; the daemon logged it. Retrying may help.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class InternalException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public InternalException(String text) {
        super("INTERNAL", text);
    }

    /** @return true: sending it again later may succeed */
    @Override
    public boolean isRetryable() {
        return true;
    }
}
