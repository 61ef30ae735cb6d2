package org.deferd;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;

/**
 * One job to create: the argument of {@link Client#put(Put)}, an item of
 * {@link Client#putBatch}, a job of a flow ({@link Client#putFlow}: no key, no idem) or a
 * follow-up of {@link Job#ackThen}, {@link Job#ackJoin} (no key) and {@link Job#nackThen}.
 * Options left unset take the queue's defaults (docs/protocol.md, PUT).
 *
 * <pre>{@code
 * Put.to("emails", "hello".getBytes()).delay(Duration.ofSeconds(5)).priority(10).key("welcome-17")
 * }</pre>
 *
 * <p>Thread-safety: not thread-safe (its setters change it); build it in one thread, then it
 * may be put from any.
 */
public final class Put {
    private final String queue;
    private final byte[] payload;
    private Duration delay;
    private Instant at;
    private Long priority;
    private Duration ttr;
    private String key;
    private String idem;
    private String group;

    private Put(String queue, byte[] payload) {
        this.queue = Wire.word("queue", queue);
        this.payload = payload.clone();
    }

    /**
     * A job for {@code queue} with these bytes (any values), due now unless told otherwise.
     *
     * @param queue the queue's name
     * @param payload the job's bytes (copied)
     * @return the put, to set options on
     */
    public static Put to(String queue, byte[] payload) {
        return new Put(queue, payload);
    }

    /**
     * A job whose payload is {@code text} in UTF-8.
     *
     * @param queue the queue's name
     * @param text the payload
     * @return the put, to set options on
     */
    public static Put to(String queue, String text) {
        return new Put(queue, text.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Due {@code delay} from now (whole milliseconds on the wire); clears {@link #at}.
     *
     * @param delay not negative
     * @return this put
     */
    public Put delay(Duration delay) {
        if (delay.isNegative()) {
            throw new IllegalArgumentException("delay must not be negative: " + delay);
        }
        this.delay = delay;
        this.at = null;
        return this;
    }

    /**
     * Due at this instant (a past one: due at once); clears {@link #delay}.
     *
     * @param at the due time
     * @return this put
     */
    public Put at(Instant at) {
        this.at = at;
        this.delay = null;
        return this;
    }

    /**
     * The priority, 0 .. 4294967295: lower is more urgent.
     *
     * @param priority the priority
     * @return this put
     */
    public Put priority(long priority) {
        if (priority < 0 || priority > 0xFFFFFFFFL) {
            throw new IllegalArgumentException("priority must be 0 .. 4294967295: " + priority);
        }
        this.priority = priority;
        return this;
    }

    /**
     * Time to run: each delivery's lease, 1 s .. 7 days.
     *
     * @param ttr the lease length
     * @return this put
     */
    public Put ttr(Duration ttr) {
        this.ttr = ttr;
        return this;
    }

    /**
     * An idempotency key: while a job with it exists in the queue, a put with it creates
     * nothing and answers that job's id as a duplicate.
     *
     * @param key 1-64 of {@code [A-Za-z0-9_.:@-]}
     * @return this put
     */
    public Put key(String key) {
        this.key = Wire.word("key", key);
        return this;
    }

    /**
     * A put token of your own ({@code <ms>-<random>}); {@link Client#put(Put)} makes one for
     * every put without a key, so this is for batches and follow-ups.
     *
     * @param token the token
     * @return this put
     */
    public Put idem(String token) {
        this.idem = token == null ? null : Wire.word("idem", token);
        return this;
    }

    /**
     * The job's group (a tenant, a customer): a queue's groups take turns at delivery.
     *
     * @param group 1-32 of {@code [A-Za-z0-9_.:@-]}
     * @return this put
     */
    public Put group(String group) {
        this.group = Wire.word("group", group);
        return this;
    }

    /** @return the queue */
    public String queue() {
        return queue;
    }

    /** @return a copy of the payload */
    public byte[] payload() {
        return payload.clone();
    }

    /** @return the key, or null */
    public String key() {
        return key;
    }

    /** @return the put token set with {@link #idem(String)}, or null */
    public String idem() {
        return idem;
    }

    /**
     * The {@code PUT} request: header line, payload, newline.
     *
     * @param token the put token to send (overrides {@link #idem()}), or null for that one
     * @return the bytes to send
     */
    byte[] encode(String token) {
        StringBuilder h = new StringBuilder(96).append("PUT ").append(queue).append(' ')
                .append(payload.length);
        if (delay != null) {
            h.append(" delay=").append(delay.toMillis());
        }
        if (at != null) {
            h.append(" at=").append(Math.max(0, at.toEpochMilli()));
        }
        if (priority != null) {
            h.append(" prio=").append(priority);
        }
        if (ttr != null) {
            h.append(" ttr=").append(ttr.toMillis());
        }
        if (key != null) {
            h.append(" key=").append(key);
        }
        String tok = token != null ? token : idem;
        if (tok != null) {
            h.append(" idem=").append(tok);
        }
        if (group != null) {
            h.append(" group=").append(group);
        }
        byte[] head = h.append('\n').toString().getBytes(StandardCharsets.UTF_8);
        byte[] out = Arrays.copyOf(head, head.length + payload.length + 1);
        System.arraycopy(payload, 0, out, head.length, payload.length);
        out[out.length - 1] = '\n';
        return out;
    }
}
