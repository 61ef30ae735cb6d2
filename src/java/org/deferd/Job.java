package org.deferd;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A job delivered to a connection (a {@code JOB} push), to be answered once with an ack or a
 * nack. Acks, nacks and touches are sent pipelined: they return at once with a {@link Reply}
 * and the next request may follow before the daemon answered (docs/protocol.md, Framing).
 *
 * <p>The {@link #id()} is the handle of this delivery (it changes when the job is nacked with
 * a delay or rescheduled); the {@link #uid()} names the job across its life: log it, and key
 * "already done" tables on (queue, uid).
 *
 * <p>Thread-safety: thread-safe. Its fields are immutable; {@link #isLost()} and the settle
 * state change on the client's reader thread; a job may be acked from another thread than the
 * one that took it (the worker's handler threads do), but only once.
 */
public final class Job {
    private final Client client;
    private final Wire.JobHeader header;
    private final byte[] payload;
    private final AtomicBoolean settled = new AtomicBoolean();
    private volatile String lostReason;
    private volatile long deadlineMsLeft = -1;

    Job(Client client, Wire.JobHeader header, byte[] payload) {
        this.client = client;
        this.header = header;
        this.payload = payload;
    }

    /** @return the id of this delivery: the handle for ack, nack, touch, cancel, reschedule */
    public String id() {
        return header.id();
    }

    /** @return the stable uid across deliveries, or null for a Curator format queue's item */
    public String uid() {
        return header.uid();
    }

    /** @return the queue it came from */
    public String queue() {
        return header.queue();
    }

    /** @return the group it was put with ({@link Put#group}), "" for none */
    public String group() {
        return Wire.jobGroup(header.id());
    }

    /**
     * @return how the children of this flow's parent ended ({@code on = "complete"}), null
     *     for any other job
     */
    public FlowResults flowResults() {
        return Wire.jobFlowResults(header.id());
    }

    /** @return 1 on the first delivery; above 1, an earlier run may have done part of it */
    public int attempt() {
        return header.attempt();
    }

    /** @return the due time in ms since the epoch */
    public long dueMs() {
        return header.dueMs();
    }

    /** @return the due time */
    public Instant due() {
        return Instant.ofEpochMilli(header.dueMs());
    }

    /** @return the priority: lower is more urgent */
    public long priority() {
        return header.priority();
    }

    /** @return this delivery's lease */
    public Duration ttr() {
        return Duration.ofMillis(header.ttrMs());
    }

    /** @return a copy of the job's bytes */
    public byte[] payload() {
        return payload.clone();
    }

    /** @return the job's bytes, not copied: do not change them */
    byte[] payloadBytes() {
        return payload;
    }

    /**
     * @return true once the daemon took the job back ({@code EXPIRED}, {@code CANCELLED}) or
     *     the connection broke: it comes again and this run's result will not count; answer
     *     it anyway to free its inflight place
     */
    public boolean isLost() {
        return lostReason != null;
    }

    /** @return {@code "expired"}, {@code "cancelled"}, {@code "disconnected"}, or null */
    public String lostReason() {
        return lostReason;
    }

    /** @return the last {@code DEADLINE} push's ms left, or -1 before one came */
    public long deadlineMsLeft() {
        return deadlineMsLeft;
    }

    /** @return true once an ack or nack was sent for it (and did not fail leaving it held) */
    public boolean isSettled() {
        return settled.get();
    }

    /**
     * Acknowledges the job: it is deleted. Pipelined: a failure is reported by the client
     * (see {@link Reply}) unless you wait for it with {@link Reply#get()}.
     *
     * @return the future reply
     */
    public Reply<Void> ack() {
        return client.settle(this, "ACK " + id() + "\n", null, Wire::empty);
    }

    /**
     * Acknowledges the job and creates follow-up jobs in the same ZooKeeper transaction (all
     * or none, with the ack). Waits for the reply.
     *
     * @param followUps 1 .. 1000 jobs
     * @return their ids
     */
    public BatchResult ackThen(List<Put> followUps) {
        String line = "ACK " + id() + " then=" + followUps.size() + "\n";
        return client.settle(this, line, followUps, Wire::batchReply).get();
    }

    /**
     * Acknowledges a flow's child and creates follow-up jobs that join its flow
     * ({@code ACK <id> then=<n> join=1}, docs/flows.md), in the same ZooKeeper transaction:
     * the flow's parent waits for them too (a crawler's page adding the links it found).
     * Waits for the reply, as {@link #ackThen}.
     *
     * <p>Thread-safety: as {@link #ack()}; once per job, from any thread.
     *
     * @param followUps 1 .. 1000 jobs, without a key
     * @return their ids
     * @throws IllegalArgumentException no follow-up, or one with a key (nothing sent, the job
     *     stays held)
     * @throws BadRequestException the job is no flow's child (nothing changed, still held)
     * @throws NotFoundException its flow is gone (released or cancelled): nothing changed,
     *     the job is still held and may be acked or nacked (if the job itself was gone, that
     *     answer fails in turn)
     */
    public BatchResult ackJoin(List<Put> followUps) {
        String line = Wire.ackJoinLine(id(), followUps);
        return client.settle(this, line, followUps, Wire::batchReply, true).get();
    }

    /**
     * Gives the job back; the queue's backoff decides when it is due again. Pipelined.
     *
     * @return the future reply: the job's new id, or null when it kept its id or was
     *     dead-lettered
     */
    public Reply<String> nack() {
        return client.settle(this, "NACK " + id() + "\n", null, Wire::nackReply);
    }

    /**
     * Gives the job back, due again {@code delay} from now. Pipelined.
     *
     * @param delay when it is due again
     * @return the future reply: the job's new id, or null
     */
    public Reply<String> nack(Duration delay) {
        return client.settle(this, "NACK " + id() + " delay=" + delay.toMillis() + "\n", null,
                Wire::nackReply);
    }

    /**
     * Gives back a job never started ({@code NACK unrun=1}): this delivery is not counted as
     * an attempt. Pipelined.
     *
     * @return the future reply: the job's id from now on, or null when it kept its id
     */
    public Reply<String> nackUnrun() {
        return client.settle(this, "NACK " + id() + " unrun=1\n", null, Wire::nackReply);
    }

    /**
     * Gives the job back and creates follow-up jobs in the same transaction. Waits.
     *
     * @param delay when it is due again, or null for the queue's backoff
     * @param followUps 1 .. 1000 jobs
     * @return their ids, and {@link BatchResult#movedId()} the job's new id
     */
    public BatchResult nackThen(Duration delay, List<Put> followUps) {
        String line = "NACK " + id() + (delay != null ? " delay=" + delay.toMillis() : "")
                + " then=" + followUps.size() + "\n";
        return client.settle(this, line, followUps, Wire::batchReply).get();
    }

    /**
     * Renews the lease: another full ttr from now. Pipelined; {@link Reply#get()} raises
     * {@link LeaseLostException} if it had already run out.
     *
     * @return the future reply
     */
    public Reply<Void> touch() {
        return client.touch(this);
    }

    boolean startSettle() {
        if (!settled.compareAndSet(false, true)) {
            throw new IllegalStateException("job " + id() + " was already acked or nacked");
        }
        return true;
    }

    void settleFailedStillHeld() {
        settled.set(false);
    }

    void markLost(String reason) {
        lostReason = reason;
    }

    void markDeadline(long msLeft) {
        deadlineMsLeft = msLeft;
    }

    @Override
    public String toString() {
        return "Job(id=" + id() + ", uid=" + uid() + ", queue=" + queue() + ", attempt="
                + attempt() + ", " + payload.length + " bytes)";
    }
}
