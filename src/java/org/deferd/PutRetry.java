package org.deferd;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * When a put may be sent again without making a second job, and how long to wait before each
 * try: the same rule as libdeferd's {@code deferd_put} and the Python client's {@code put()}
 * (docs/protocol.md, Errors), decided from the refusal's fields only; a reply without fields
 * (a daemon older than them) falls back to the words of its text.
 *
 * <p>Thread-safety: the static methods are safe from any thread; an instance (the tries of one
 * put) belongs to the thread that puts.
 */
public final class PutRetry {
    /** Reasons after which sending a put again cannot help soon. */
    private static final Set<String> FUTILE_REASONS = Set.of("draining", "max_connections",
            "permission");

    private final long untilNanos;
    private long pauseMs = 100;

    PutRetry(Duration budget) {
        // counted from now, not from the first pause: the first try's own time counts
        this.untilNanos = System.nanoTime() + budget.toNanos();
    }

    /**
     * Whether a put answered {@code error} may be sent again without making a second job:
     * {@code UNAVAILABLE} with {@code stored=no}, or {@code stored=maybe} with a key or a put
     * token (not with {@code tokens=no}); never after {@code reason=draining},
     * {@code max_connections} or {@code permission}.
     *
     * @param error the refusal
     * @param keyed whether the put has a key
     * @param tokened whether the put has a put token
     * @return true when sending it again is safe
     */
    public static boolean safe(DeferdException error, boolean keyed, boolean tokened) {
        if (!error.code().equals("UNAVAILABLE")) {
            return false;
        }
        if (error.fields().isEmpty()) {
            return safeByText(error.text(), keyed, tokened);
        }
        if (error.reason() != null && FUTILE_REASONS.contains(error.reason())) {
            return false;
        }
        if ("maybe".equals(error.stored())) {
            return keyed || (tokened && !"no".equals(error.fields().get("tokens")));
        }
        return "no".equals(error.stored());
    }

    /** The fallback for daemons older than refusal fields: the words of the text. */
    private static boolean safeByText(String text, boolean keyed, boolean tokened) {
        if (text.contains("permission denied") || text.contains("stopping")) {
            return false;
        }
        if (text.contains("may have been stored")) {
            return keyed || (tokened && !text.contains("keeps no put tokens"));
        }
        return text.contains("not stored");
    }

    /**
     * Whether a daemon older than put tokens refused {@code idem=}: it names the option in
     * {@code option=}, or (older than fields too) only in its text.
     *
     * @param error the refusal
     * @return true when the put should go again without a token
     */
    public static boolean idemRefused(DeferdException error) {
        if (!error.code().equals("BAD_REQUEST")) {
            return false;
        }
        if (!error.fields().isEmpty()) {
            return "idem".equals(error.fields().get("option"));
        }
        return error.text().contains("option 'idem'");
    }

    /**
     * A new put token: this host's clock in ms and 64 random bits in hex. Tokens must be
     * unique, not secret, so a thread-local generator does.
     *
     * @return the token, e.g. {@code 1763769600123-5f1e0c2a9b3d4e01}
     */
    public static String newToken() {
        return System.currentTimeMillis() + "-"
                + String.format("%016x", ThreadLocalRandom.current().nextLong());
    }

    /**
     * The pause before the next try: 0.1 s, then twice as long each time, at most 2 s, while
     * the budget lasts.
     *
     * @return the pause in ms, or -1 when the budget is spent
     */
    long nextPauseMs() {
        long pause = pauseMs;
        if (System.nanoTime() + pause * 1_000_000L > untilNanos) {
            return -1;
        }
        pauseMs = Math.min(pauseMs * 2, 2000);
        return pause;
    }
}
