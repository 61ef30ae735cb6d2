package org.deferd;

/**
 * {@code IN_FLIGHT}: cancel or reschedule of a job a consumer holds; nothing changed.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class InFlightException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public InFlightException(String text) {
        super("IN_FLIGHT", text);
    }

    /** @return true: sending it again later may succeed */
    @Override
    public boolean isRetryable() {
        return true;
    }
}
