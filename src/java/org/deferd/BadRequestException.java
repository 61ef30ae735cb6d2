package org.deferd;

/**
 * {@code BAD_REQUEST}: malformed header, unknown command or key ({@code option=<key>}), bad number.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class BadRequestException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public BadRequestException(String text) {
        super("BAD_REQUEST", text);
    }

    /** @return false: sending it again will not help */
    @Override
    public boolean isRetryable() {
        return false;
    }
}
