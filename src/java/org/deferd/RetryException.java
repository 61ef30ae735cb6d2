package org.deferd;

import java.time.Duration;

/**
 * Thrown by a {@link Handler} to nack the job with a delay of its choice instead of the
 * queue's backoff: it is due again {@code delay} from now. The attempt is spent as for any
 * failure.
 *
 * <p>Thread-safety: immutable.
 */
public class RetryException extends Exception {
    private static final long serialVersionUID = 1L;

    /** When the job is due again, from now. */
    private final Duration delay;

    /**
     * @param delay when the job is due again
     * @param message why, for the log
     */
    public RetryException(Duration delay, String message) {
        super(message);
        this.delay = delay;
    }

    /** @return when the job is due again, from now */
    public Duration delay() {
        return delay;
    }
}
