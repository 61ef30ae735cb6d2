package org.deferd;

/**
 * {@code PERMISSION_DENIED}: the queue's producers or consumers rule does not name this user.
 *
 * <p>Thread-safety: as {@link DeferdException}.
 */
public class PermissionDeniedException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param text the daemon's text after the code
     */
    public PermissionDeniedException(String text) {
        super("PERMISSION_DENIED", text);
    }

    /** @return false: sending it again will not help */
    @Override
    public boolean isRetryable() {
        return false;
    }
}
