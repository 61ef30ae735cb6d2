package org.deferd;

/**
 * The daemon sent something this client cannot parse (a bug on one side).
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class ProtocolException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public ProtocolException(String text) {
        super("PROTOCOL", text);
    }

    /** @return false: sending it again will not help */
    @Override
    public boolean isRetryable() {
        return false;
    }
}
