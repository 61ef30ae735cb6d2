package org.deferd;

import java.util.Collections;
import java.util.Map;

/**
 * An error answered by the daemon ({@code ERR <CODE> [<key>=<value> ...] <text>}) or met by
 * the client. Every code of the protocol (docs/protocol.md, Errors) has a subclass named after
 * it ({@code QUEUE_FULL}: {@link QueueFullException}); a code this client does not know comes
 * as a {@code DeferdException} with {@link #code()} set.
 *
 * <p>A program decides from {@link #code()}, {@link #isRetryable()} and the reply's fields
 * ({@link #fields()}, {@link #stored()}, {@link #reason()}), never from the words of
 * {@link #text()}, which is for people.
 *
 * <p>Thread-safety: immutable once thrown, except {@link #job()}, which the client sets before
 * handing the exception out.
 */
public class DeferdException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The protocol's error code. */
    private final String code;
    /** The text after the code. */
    private final String text;
    /** The fields at the front of the text. */
    private final Map<String, String> fields;
    private transient volatile Job job;

    /**
     * An error with a code and the daemon's text after it (fields included).
     *
     * @param code the protocol's error code, e.g. {@code "LEASE_LOST"}
     * @param text the text after the code
     */
    public DeferdException(String code, String text) {
        super((code + " " + text).strip());
        this.code = code;
        this.text = text;
        this.fields = Collections.unmodifiableMap(Wire.refusalFields(text));
    }

    /**
     * The exception for an {@code ERR <CODE> <text>} reply line (without its newline).
     *
     * @param line the reply line
     * @return the subclass named after the code, or a plain {@code DeferdException}
     */
    public static DeferdException fromReply(String line) {
        String[] parts = line.split(" ", 3);
        String code = parts.length > 1 ? parts[1] : "INTERNAL";
        String text = parts.length > 2 ? parts[2] : "";
        switch (code) {
            case "BAD_REQUEST": return new BadRequestException(text);
            case "UNKNOWN_QUEUE": return new UnknownQueueException(text);
            case "TOO_LARGE": return new TooLargeException(text);
            case "NOT_FOUND": return new NotFoundException(text);
            case "QUEUE_FULL": return new QueueFullException(text);
            case "LEASE_LOST": return new LeaseLostException(text);
            case "UNAVAILABLE": return new UnavailableException(text);
            case "IN_FLIGHT": return new InFlightException(text);
            case "PERMISSION_DENIED": return new PermissionDeniedException(text);
            case "PARTIAL": return new PartialException(text);
            case "INTERNAL": return new InternalException(text);
            default: return new DeferdException(code, text);
        }
    }

    /** @return the protocol's error code, e.g. {@code "UNAVAILABLE"} */
    public String code() {
        return code;
    }

    /** @return the daemon's text after the code, its fields included (for people) */
    public String text() {
        return text;
    }

    /**
     * @return the reply's {@code key=value} fields after the code, in order; empty from a
     *     daemon older than them or for an error that has none
     */
    public Map<String, String> fields() {
        return fields;
    }

    /**
     * @return the {@code stored} field: {@code "no"}, {@code "maybe"} (the answer was lost),
     *     {@code "yes"}, a number of jobs ({@code PARTIAL}), or null when not said
     */
    public String stored() {
        return fields.get("stored");
    }

    /** @return the {@code reason} field ({@code "draining"}, {@code "not_connected"}, ...) or null */
    public String reason() {
        return fields.get("reason");
    }

    /**
     * @return true when the same request may succeed if sent again later (the protocol's
     *     "retry?" column); for a put, {@link PutRetry#safe} says whether it is safe
     */
    public boolean isRetryable() {
        return false;
    }

    /** @return for an answer to ACK, NACK or TOUCH, the job it was about; else null */
    public Job job() {
        return job;
    }

    void setJob(Job job) {
        this.job = job;
    }
}
