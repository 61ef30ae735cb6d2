package org.deferd;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The future answer to one request sent pipelined (an ack, a nack, a touch, an unsubscribe).
 * {@link #get()} waits for it. A failure nobody waited for is reported by the client: to its
 * ack-error listener, or raised by the next {@link Client#nextJob} or {@link Client#flush}.
 *
 * <p>Thread-safety: thread-safe; any thread may wait for it.
 *
 * @param <T> the parsed value of the {@code OK} reply
 */
public final class Reply<T> {
    private final CompletableFuture<T> future = new CompletableFuture<>();
    private final Client client;
    private final Job job;
    private final boolean settles;
    private final boolean joins;
    private volatile boolean observed;

    Reply(Client client, Job job, boolean settles, boolean joins) {
        this.client = client;
        this.job = job;
        this.settles = settles;
        this.joins = joins;
    }

    /**
     * Waits for the reply (at most the client's timeout) and returns its value.
     *
     * @return the parsed value (null for a bare {@code OK})
     * @throws DeferdException the daemon's refusal, {@link DisconnectedException}, or
     *     {@link ReplyTimeoutException} (the reply is still matched when it comes)
     */
    public T get() {
        observed = true;
        try {
            T value = future.get(client.timeout().toMillis(), TimeUnit.MILLISECONDS);
            return value;
        } catch (ExecutionException e) {
            client.forgetFailure(this);
            throw (DeferdException) e.getCause();
        } catch (TimeoutException e) {
            throw new ReplyTimeoutException("no reply from deferd within " + client.timeout());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ReplyTimeoutException("interrupted while waiting for deferd's reply");
        }
    }

    /** @return true once the reply (or the connection's end) has come */
    public boolean isDone() {
        return future.isDone();
    }

    /**
     * @return the answer as a {@link CompletableFuture}, completed on the client's reader
     *     thread (exceptionally with the {@link DeferdException})
     */
    public CompletableFuture<T> future() {
        return future;
    }

    /** @return the job this answer is about, or null */
    Job job() {
        return job;
    }

    boolean settles() {
        return settles;
    }

    /** @return true for {@code ACK ... join=1}, whose NOT_FOUND (its flow gone) leaves the job held */
    boolean joins() {
        return joins;
    }

    boolean observed() {
        return observed;
    }

    void complete(T value) {
        future.complete(value);
    }

    void fail(DeferdException error) {
        if (job != null) {
            error.setJob(job);
        }
        future.completeExceptionally(error);
    }
}
