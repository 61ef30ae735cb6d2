package org.deferd;

/**
 * What a {@link Worker} runs for each job: return to ack it, throw to nack it (after the
 * queue's backoff, or after the delay of a {@link RetryException}).
 *
 * <pre>{@code
 * public final class SendEmail implements Handler {
 *     public void handle(Job job) throws Exception {
 *         mailer.send(new String(job.payload(), StandardCharsets.UTF_8));
 *     }
 * }
 * }</pre>
 *
 * <p>Thread-safety: one instance serves every job of a worker, from up to
 * {@code --concurrency} threads at once: it must be thread-safe. The worker answers the job,
 * unless the handler acked it itself with follow-ups ({@link Job#ackThen}, or
 * {@link Job#ackJoin} for a crawler that grows its flow): then the worker leaves it at that.
 * The handler must not otherwise ack or nack it. A long handler may check
 * {@link Job#isLost()} and stop early: the job was taken back and comes again.
 */
@FunctionalInterface
public interface Handler {
    /**
     * Runs one job.
     *
     * @param job the delivery (its lease is renewed while this runs)
     * @throws Exception any failure: the job is nacked and comes again
     */
    void handle(Job job) throws Exception;
}
