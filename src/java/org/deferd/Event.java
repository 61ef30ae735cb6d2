package org.deferd;

/**
 * A push other than {@code JOB}, in the order it arrived (docs/protocol.md, Pushes): read them
 * with {@link Client#nextEvent}, or have them handed to a listener
 * ({@link Client.Builder#onEvent}).
 *
 * <p>Thread-safety: every event is immutable (the job it names is not: see {@link Job}).
 */
public sealed interface Event permits Event.Deadline, Event.Expired, Event.Cancelled,
        Event.State, Event.Unknown {

    /**
     * {@code DEADLINE}: the lease of {@code jobId} ends in {@code msLeft} ms; touch it to keep it.
     *
     * @param jobId the job's id
     * @param msLeft ms left (0: any moment)
     * @param job the held job it names, or null if this connection does not know it
     */
    record Deadline(String jobId, long msLeft, Job job) implements Event {
    }

    /**
     * {@code EXPIRED}: the lease of {@code jobId} ran out or its lock was lost; it will come
     * again. Answer the job anyway (ack or nack fail with {@link LeaseLostException}) to free
     * its inflight place.
     *
     * @param jobId the job's id
     * @param job the held job it names, or null
     */
    record Expired(String jobId, Job job) implements Event {
    }

    /**
     * {@code CANCELLED}: the held job {@code jobId} was cancelled (force) and is gone. Answer
     * it to free its inflight place.
     *
     * @param jobId the job's id
     * @param job the held job it names, or null
     */
    record Cancelled(String jobId, Job job) implements Event {
    }

    /**
     * {@code STATE}: the daemon's ZooKeeper session changed ({@code CONNECTED},
     * {@code SUSPENDED}, {@code RECONNECTED}, {@code LOST}) or it is {@code DRAINING} for
     * shutdown; later daemons may send other words.
     *
     * @param state the state word
     */
    record State(String state) implements Event {
    }

    /**
     * A one-line push this client does not know (later daemons may add some).
     *
     * @param line the whole line
     */
    record Unknown(String line) implements Event {
    }
}
