package org.deferd;

/**
 * No reply came within the client's timeout. The connection stays usable: a late reply is
 * still matched to its request. A put that timed out may have been stored; sending it again
 * is safe only with its key (the client's own put token is not reused across calls).
 *
 * <p>Thread-safety: immutable once thrown.
 */
public class ReplyTimeoutException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /**
     * @param what what was waited for
     */
    public ReplyTimeoutException(String what) {
        super("TIMEOUT", what);
    }
}
