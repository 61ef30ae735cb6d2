package org.deferd;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * One connection to a deferd daemon over its Unix socket (docs/protocol.md), with nothing
 * beyond the JDK.
 *
 * <p>Producing: {@link #put(Put)}, {@link #putBatch}, {@link #putFlow}, {@link #cancel}, {@link #reschedule},
 * {@link #stats()}, {@link #ping()}. Consuming: {@link #subscribe}, then {@link #nextJob};
 * answer each {@link Job} with {@link Job#ack()} or a nack; read pushes with
 * {@link #nextEvent} (or a listener); leave with {@link #giveBack()}.
 *
 * <p>Replies are matched to requests in the order they were sent; a reader thread of the
 * client's own reads the socket all the time, so that pipelined requests (acks sent without
 * waiting) never stall the daemon, and queues jobs and events as they come.
 *
 * <p>Thread-safety: thread-safe. Any number of threads may put, ack, nack, touch and take jobs
 * on one client at once: each request is written whole, under a lock, and its reply goes to
 * its caller; each job goes to one {@link #nextJob} caller. Listeners given to the
 * {@link Builder} run on the reader thread: they must return quickly and must not wait for a
 * reply of this client (that thread delivers the replies).
 */
public final class Client implements AutoCloseable {
    /** The socket used when neither the builder nor {@code $DEFERD_SOCKET} names one. */
    public static final String DEFAULT_SOCKET = "/run/deferd/deferd.sock";

    /** Taken by {@link #nextJob} when the connection ended; put back for the next taker. */
    private static final Object CLOSED = new Object();
    /** Wakes {@link #nextJob} when a pipelined request failed, to raise it. */
    private static final Object FAILED = new Object();

    private final String socketPath;
    private final Duration timeout;
    private final Duration putRetry;
    private final Consumer<Event> onEvent;
    private final Consumer<DeferdException> onAckError;
    private final SocketChannel channel;
    private final MessageReader reader = new MessageReader();
    private final Object writeLock = new Object();
    private final ConcurrentLinkedQueue<Pending> pending = new ConcurrentLinkedQueue<>();
    private final BlockingQueue<Object> jobs = new LinkedBlockingQueue<>();
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final Map<String, Job> held = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Reply<?>> failed = new ConcurrentLinkedQueue<>();
    private final Thread readerThread;
    private volatile Reply<?> lastSent;
    private volatile DisconnectedException closedError;
    private volatile boolean noTokens;

    /** A request sent and not answered yet: its reply and how to read it. */
    private record Pending(Reply<Object> reply, Function<String, ?> parse, boolean background) {
    }

    /**
     * How to connect: the socket, timeouts and listeners.
     *
     * <p>Thread-safety: not thread-safe; use it in one thread.
     */
    public static final class Builder {
        private String socketPath;
        private Duration timeout = Duration.ofSeconds(30);
        private Duration putRetry = Duration.ofSeconds(10);
        private Consumer<Event> onEvent;
        private Consumer<DeferdException> onAckError;

        private Builder() {
        }

        /**
         * @param path the daemon's socket; default {@code $DEFERD_SOCKET}, else
         *     {@link #DEFAULT_SOCKET}
         * @return this builder
         */
        public Builder socket(String path) {
            this.socketPath = path;
            return this;
        }

        /**
         * @param timeout how long a blocking call waits for its reply (default 30 s)
         * @return this builder
         */
        public Builder timeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        /**
         * @param budget how long {@link Client#put(Put)} sends a put again after an
         *     {@code UNAVAILABLE} that {@link PutRetry#safe} allows (default 10 s); zero: never,
         *     and no put tokens either
         * @return this builder
         */
        public Builder putRetry(Duration budget) {
            this.putRetry = budget;
            return this;
        }

        /**
         * @param listener called with each {@link Event} (on the reader thread) instead of
         *     queueing it for {@link Client#nextEvent}
         * @return this builder
         */
        public Builder onEvent(Consumer<Event> listener) {
            this.onEvent = listener;
            return this;
        }

        /**
         * @param listener called with each failed pipelined ack, nack or touch nobody waited
         *     for (its {@link DeferdException#job()} set; on the reader thread) instead of
         *     raising it from the next {@link Client#nextJob} or {@link Client#flush}
         * @return this builder
         */
        public Builder onAckError(Consumer<DeferdException> listener) {
            this.onAckError = listener;
            return this;
        }

        /**
         * Connects.
         *
         * @return the client
         * @throws ConnectFailedException when no connection could be made
         */
        public Client connect() {
            return new Client(this);
        }
    }

    /** @return a builder, to set options before connecting */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Connects to {@code $DEFERD_SOCKET}, else {@link #DEFAULT_SOCKET}, with default options.
     *
     * @return the client
     */
    public static Client connect() {
        return builder().connect();
    }

    /**
     * Connects to {@code socketPath} with default options.
     *
     * @param socketPath the daemon's socket
     * @return the client
     */
    public static Client connect(String socketPath) {
        return builder().socket(socketPath).connect();
    }

    private Client(Builder b) {
        String env = System.getenv("DEFERD_SOCKET");
        this.socketPath = b.socketPath != null ? b.socketPath
                : env != null && !env.isEmpty() ? env : DEFAULT_SOCKET;
        this.timeout = b.timeout;
        this.putRetry = b.putRetry;
        this.onEvent = b.onEvent;
        this.onAckError = b.onAckError;
        SocketChannel ch = null;
        try {
            ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            ch.connect(UnixDomainSocketAddress.of(socketPath));
        } catch (IOException e) {
            closeQuietly(ch);
            throw new ConnectFailedException(socketPath, e);
        }
        this.channel = ch;
        this.readerThread = new Thread(this::readLoop, "deferd-reader");
        readerThread.setDaemon(true);
        readerThread.start();
    }

    // -- producing ----------------------------------------------------------------------

    /**
     * Schedules a job and returns its id once ZooKeeper stored it. Without a key the put
     * carries a put token of its own ({@code idem=}), so that sending it again cannot make a
     * second job; an {@code UNAVAILABLE} answer is sent again for up to the put-retry budget
     * when {@link PutRetry#safe} says so. The exception raised says {@code stored} and
     * {@code reason}.
     *
     * @param put the job
     * @return its id, and whether its key was taken
     * @throws DeferdException the daemon's refusal
     */
    public PutResult put(Put put) {
        String token = put.key() == null && put.idem() == null && !putRetry.isZero()
                && !noTokens ? PutRetry.newToken() : null;
        PutRetry tries = new PutRetry(putRetry);
        while (true) {
            try {
                return send(put.encode(token), Wire::putReply, null, false).get();
            } catch (DeferdException e) {
                if (token != null && PutRetry.idemRefused(e)) {
                    noTokens = true; // a daemon older than put tokens
                    token = null;
                    continue;
                }
                boolean tokened = token != null || put.idem() != null;
                long pause = putRetry.isZero() || !PutRetry.safe(e, put.key() != null, tokened)
                        ? -1 : tries.nextPauseMs();
                if (pause < 0) {
                    throw e;
                }
                sleep(pause);
            }
        }
    }

    /**
     * Schedules a job due now with default options.
     *
     * @param queue the queue
     * @param payload the job's bytes
     * @return its id
     */
    public PutResult put(String queue, byte[] payload) {
        return put(Put.to(queue, payload));
    }

    /**
     * Stores several jobs, all or none ({@code BATCH}), for any queues of the daemon.
     *
     * @param puts 1 .. 1000 jobs
     * @return their ids in order
     * @throws DeferdException the error of the first invalid item (nothing stored), or
     *     {@link PartialException} for a batch split into parts whose later part failed
     */
    public BatchResult putBatch(List<Put> puts) {
        return send(Wire.batch(puts), Wire::batchReply, null, false).get();
    }

    /**
     * Stores a flow, all or none ({@code FLOW}, docs/flows.md): {@code parent} waits, stored
     * but not due, until every child is acked, then becomes a job under the id this returns
     * for it (a dead-lettered child sends the parent to its queue's dead letters instead).
     * The same as {@link #putFlow(Put, List, String)} with {@code on} {@code "success"}.
     *
     * <p>Thread-safety: as the client's; may be called from any thread.
     *
     * @param parent the job that runs once the children are done
     * @param children 1 .. 999 jobs, in any queues
     * @return the ids, the parent's first, then the children's in order
     * @throws IllegalArgumentException no child, or a job with a key or a put token
     * @throws DeferdException the daemon's refusal (nothing stored)
     */
    public BatchResult putFlow(Put parent, List<Put> children) {
        return putFlow(parent, children, "success");
    }

    /**
     * Stores a flow, all or none ({@code FLOW <n> on=<on>}, docs/flows.md): {@code parent}
     * waits, stored but not due, until its children are settled, then becomes a job, exactly
     * once, under the id this returns for it, due at its own due time.
     *
     * <p>A flow's jobs take no key and no put token, so a flow is never sent again on its
     * own: after an {@link UnavailableException} with {@code stored()} {@code "maybe"} the
     * flow may have been stored; look for its parent before putting it again (its children
     * are in their queues, their ids ending in {@code -f<parent uid>}; {@code deferctl show}
     * of one names its parent). Nesting ({@code parent=<item>}) is
     * not offered, as in the Python client: every child belongs to {@code parent}.
     *
     * <p>Thread-safety: as the client's; may be called from any thread.
     *
     * @param parent the job that runs once the children are done
     * @param children 1 .. 999 jobs, in any queues
     * @param on {@code "success"}: every child acked (a dead-lettered child sends the parent
     *     to the dead letters); {@code "complete"}: every child acked or dead-lettered
     * @return the ids, the parent's first, then the children's in order
     * @throws IllegalArgumentException no child, {@code on} neither {@code "success"} nor
     *     {@code "complete"}, or a job with a key or a put token
     * @throws DeferdException the daemon's refusal (nothing stored), e.g.
     *     {@link TooLargeException} beyond one ZooKeeper transaction
     */
    public BatchResult putFlow(Put parent, List<Put> children, String on) {
        return send(Wire.flow(parent, children, on), Wire::batchReply, null, false).get();
    }

    /**
     * Removes a pending job.
     *
     * @param jobId its id
     * @param force also when a consumer holds it (that consumer gets {@code CANCELLED})
     * @return its id
     */
    public String cancel(String jobId, boolean force) {
        return change("CANCEL " + Wire.word("job id", jobId) + (force ? " force=1" : ""));
    }

    /**
     * Removes a pending job, not one a consumer holds ({@link InFlightException}).
     *
     * @param jobId its id
     * @return its id
     */
    public String cancel(String jobId) {
        return cancel(jobId, false);
    }

    /**
     * Removes the job that holds {@code key} in {@code queue}.
     *
     * @param queue the queue
     * @param key the key
     * @param force also when a consumer holds it
     * @return its id
     */
    public String cancelKey(String queue, String key, boolean force) {
        return change("CANCEL " + Wire.word("queue", queue) + " key=" + Wire.word("key", key)
                + (force ? " force=1" : ""));
    }

    /**
     * Moves a pending job to be due {@code delay} from now.
     *
     * @param jobId its id
     * @param delay the new delay
     * @return its new id
     */
    public String reschedule(String jobId, Duration delay) {
        return change("RESCHEDULE " + Wire.word("job id", jobId) + " delay=" + delay.toMillis());
    }

    /**
     * Moves a pending job to be due at {@code at}.
     *
     * @param jobId its id
     * @param at the new due time
     * @return its new id
     */
    public String reschedule(String jobId, Instant at) {
        return change("RESCHEDULE " + Wire.word("job id", jobId) + " at=" + at.toEpochMilli());
    }

    /**
     * Moves the job that holds {@code key} in {@code queue} to be due {@code delay} from now.
     *
     * @param queue the queue
     * @param key the key
     * @param delay the new delay
     * @return its new id
     */
    public String rescheduleKey(String queue, String key, Duration delay) {
        return change("RESCHEDULE " + Wire.word("queue", queue) + " key=" + Wire.word("key", key)
                + " delay=" + delay.toMillis());
    }

    private String change(String line) {
        return send(Wire.utf8(line + "\n"), Wire::optionalId, null, false).get();
    }

    /**
     * The daemon's counters ({@code STATS}), by name, in the daemon's order.
     *
     * @return field name to value (decimal, {@code items/multis}, hex, words or {@code -})
     */
    public Map<String, String> stats() {
        return send(Wire.utf8("STATS\n"), Wire::okFields, null, false).get();
    }

    /**
     * One queue's counters on this daemon ({@code STATS <queue>}).
     *
     * @param queue the queue
     * @return field name to value
     */
    public Map<String, String> stats(String queue) {
        return send(Wire.utf8("STATS " + Wire.word("queue", queue) + "\n"), Wire::okFields,
                null, false).get();
    }

    /** A round trip to the daemon ({@code PING}, answered {@code OK PONG}). */
    public void ping() {
        send(Wire.utf8("PING\n"), Wire::pong, null, false).get();
    }

    // -- consuming ----------------------------------------------------------------------

    /**
     * Becomes a consumer of {@code queues}: the daemon pushes up to {@code inflight} jobs not
     * yet acked or nacked. Waits for the reply.
     *
     * @param queues queue names
     * @param inflight 1 .. 10000
     */
    public void subscribe(List<String> queues, int inflight) {
        String names = Wire.word("queues", String.join(",", queues));
        send(Wire.utf8("SUB " + names + " inflight=" + inflight + "\n"), Wire::empty, null,
                false).get();
    }

    /**
     * Takes no more jobs of {@code queues} (of every queue when none is named); held jobs stay
     * held. Waits: after it returns no more {@code JOB} of those queues comes (some may be
     * queued here already).
     *
     * @param queues queue names, or none for all
     */
    public void unsubscribe(String... queues) {
        String line = queues.length == 0 ? "UNSUB\n"
                : "UNSUB " + Wire.word("queues", String.join(",", queues)) + "\n";
        send(Wire.utf8(line), Wire::empty, null, false).get();
    }

    /**
     * The next job pushed to this connection.
     *
     * @param wait how long to wait, or null for ever
     * @return the job, or null when none came in time
     * @throws DeferdException a failed pipelined ack or nack nobody waited for (when no
     *     ack-error listener was given), or {@link DisconnectedException}
     */
    public Job nextJob(Duration wait) {
        raiseFailed();
        long until = wait == null ? 0 : System.nanoTime() + wait.toNanos();
        while (true) {
            Object taken;
            try {
                taken = wait == null ? jobs.take()
                        : jobs.poll(until - System.nanoTime(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
            if (taken == CLOSED) {
                jobs.offer(CLOSED);
                throw closedError;
            }
            raiseFailed();
            if (taken != FAILED) { // FAILED: the failure was taken meanwhile; wait on
                return (Job) taken;
            }
        }
    }

    /**
     * The next push other than {@code JOB} ({@link Event.Deadline}, {@link Event.Expired},
     * {@link Event.Cancelled}, {@link Event.State}, {@link Event.Unknown}).
     *
     * @param wait how long to wait; zero for only what has arrived
     * @return the event, or null
     */
    public Event nextEvent(Duration wait) {
        try {
            return events.poll(wait.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /**
     * Waits for the replies to every request sent so far (pipelined acks included), then
     * raises the first failure not yet reported ({@link #failedAcks()} has the rest).
     */
    public void flush() {
        Reply<?> last = lastSent;
        if (last != null) {
            try {
                last.future().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                // its failure is reported below, with the others
            } catch (java.util.concurrent.TimeoutException e) {
                throw new ReplyTimeoutException("replies still missing after " + timeout);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        raiseFailed();
    }

    /**
     * Takes the failures of pipelined acks, nacks and touches not reported yet.
     *
     * @return the failures, oldest first
     */
    public List<DeferdException> failedAcks() {
        List<DeferdException> out = new ArrayList<>();
        for (Reply<?> r; (r = failed.poll()) != null; ) {
            out.add(errorOf(r));
        }
        return out;
    }

    /**
     * Leaves cleanly: unsubscribes from every queue, then gives back each job received but not
     * taken by {@link #nextJob} with {@code NACK unrun=1} (its attempt is not spent), and
     * waits for the replies. Jobs taken and still running are not touched.
     *
     * @return how many jobs were given back
     */
    public int giveBack() {
        unsubscribe();
        return giveBackReceived();
    }

    /**
     * The second half of {@link #giveBack()}, for a program that unsubscribed itself and gave
     * back jobs of its own first: gives back each job received but not taken by
     * {@link #nextJob} ({@code NACK unrun=1}) and waits for the replies. Unsubscribe first,
     * or the places these free are filled again at once.
     *
     * @return how many jobs were given back
     */
    public int giveBackReceived() {
        List<Reply<?>> replies = new ArrayList<>();
        int given = 0;
        for (Object o; (o = jobs.poll()) != null; ) {
            if (o == CLOSED) {
                jobs.offer(CLOSED);
                break;
            }
            if (o == FAILED) {
                continue;
            }
            Job job = (Job) o;
            job.startSettle();
            if (job.isLost()) { // taken back already: answered only to free its place
                replies.add(send(Wire.utf8("ACK " + job.id() + "\n"), Wire::empty, job, false,
                        true));
            } else {
                replies.add(send(Wire.utf8("NACK " + job.id() + " unrun=1\n"), Wire::nackReply,
                        job, false, true));
                given++;
            }
        }
        for (Reply<?> r : replies) {
            try {
                r.get();
            } catch (LeaseLostException | NotFoundException e) {
                // taken from us meanwhile: it comes again anyway
            }
        }
        return given;
    }

    /** @return jobs pushed to this connection and not yet acked or nacked */
    public List<Job> held() {
        return new ArrayList<>(held.values());
    }

    /** @return requests sent whose reply has not arrived yet */
    public int unanswered() {
        return pending.size();
    }

    /** @return the socket this client is connected to */
    public String socketPath() {
        return socketPath;
    }

    /** @return how long blocking calls wait for their reply */
    public Duration timeout() {
        return timeout;
    }

    /**
     * Closes the connection. Jobs still held are released by the daemon (they come again
     * with a higher attempt); see {@link #giveBack()} for a clean leave.
     */
    @Override
    public void close() {
        disconnect("client closed");
    }

    // -- plumbing -----------------------------------------------------------------------

    <T> Reply<T> settle(Job job, String line, List<Put> followUps, Function<String, T> parse) {
        return settle(job, line, followUps, parse, false);
    }

    /** {@code joins}: an {@code ACK ... join=1}, whose NOT_FOUND (its flow gone) leaves the job held. */
    <T> Reply<T> settle(Job job, String line, List<Put> followUps, Function<String, T> parse,
                        boolean joins) {
        job.startSettle();
        byte[] data = followUps == null ? Wire.utf8(line) : Wire.withPuts(line, followUps);
        try {
            return send(data, parse, job, followUps == null, true, joins);
        } catch (DeferdException e) {
            job.settleFailedStillHeld();
            throw e;
        }
    }

    Reply<Void> touch(Job job) {
        return send(Wire.utf8("TOUCH " + job.id() + "\n"), Wire::empty, job, true, false);
    }

    private <T> Reply<T> send(byte[] data, Function<String, T> parse, Job job, boolean background) {
        return send(data, parse, job, background, false);
    }

    private <T> Reply<T> send(byte[] data, Function<String, T> parse, Job job, boolean background,
                              boolean settles) {
        return send(data, parse, job, background, settles, false);
    }

    @SuppressWarnings("unchecked")
    private <T> Reply<T> send(byte[] data, Function<String, T> parse, Job job, boolean background,
                              boolean settles, boolean joins) {
        Reply<T> reply = new Reply<>(this, job, settles, joins);
        synchronized (writeLock) {
            if (closedError != null) {
                throw closedError;
            }
            pending.add(new Pending((Reply<Object>) reply, parse, background));
            lastSent = reply;
            try {
                ByteBuffer buf = ByteBuffer.wrap(data);
                while (buf.hasRemaining()) {
                    channel.write(buf);
                }
            } catch (IOException e) {
                disconnect("send failed: " + e);
                throw closedError;
            }
        }
        return reply;
    }

    private void readLoop() {
        try {
            while (true) {
                if (reader.readFrom(channel) < 0) {
                    disconnect("the daemon closed the connection");
                    return;
                }
                for (MessageReader.Message m; (m = reader.next()) != null; ) {
                    dispatch(m);
                }
            }
        } catch (IOException e) {
            disconnect("receive failed: " + e.getMessage());
        } catch (ProtocolException e) {
            disconnect("cannot parse what deferd sent: " + e.text());
        }
    }

    private void dispatch(MessageReader.Message m) {
        if (m.header() != null) {
            Job job = new Job(this, m.header(), m.payload());
            held.put(job.id(), job);
            jobs.offer(job);
            return;
        }
        String line = m.line();
        if (line.equals("OK") || line.startsWith("OK ") || line.startsWith("ERR ")) {
            resolve(line);
            return;
        }
        Event event = event(line);
        if (onEvent != null) {
            onEvent.accept(event);
        } else {
            events.offer(event);
        }
    }

    private void resolve(String line) {
        Pending p = pending.poll();
        if (p == null) {
            throw new ProtocolException("reply to no request: " + line);
        }
        Object value = null;
        DeferdException error = null;
        if (line.startsWith("OK")) {
            try {
                value = p.parse().apply(line.length() > 3 ? line.substring(3) : "");
            } catch (RuntimeException e) {
                error = new ProtocolException("cannot parse reply " + line + ": " + e.getMessage());
            }
        } else {
            error = DeferdException.fromReply(line);
        }
        Reply<Object> reply = p.reply();
        Job job = reply.job();
        if (job != null && reply.settles()) {
            if (error == null || error instanceof LeaseLostException
                    || (error instanceof NotFoundException && !reply.joins())) {
                held.remove(job.id());
            } else { // nothing changed (UNAVAILABLE, a bad follow-up): still held
                job.settleFailedStillHeld();
            }
        }
        if (error == null) {
            reply.complete(value);
            return;
        }
        reply.fail(error);
        if (p.background() && !reply.observed()) {
            report(reply);
        }
    }

    /** The event of a one-line push; marks the held job it names. */
    private Event event(String line) {
        Event event = Wire.event(line, held::get);
        if (event instanceof Event.Deadline d && d.job() != null) {
            d.job().markDeadline(d.msLeft());
        } else if (event instanceof Event.Expired e && e.job() != null) {
            e.job().markLost("expired");
        } else if (event instanceof Event.Cancelled c && c.job() != null) {
            c.job().markLost("cancelled");
        }
        return event;
    }

    private void report(Reply<?> reply) {
        if (onAckError != null) {
            onAckError.accept(errorOf(reply));
        } else {
            failed.add(reply);
            jobs.offer(FAILED);
        }
    }

    void forgetFailure(Reply<?> reply) {
        failed.remove(reply);
    }

    private void raiseFailed() {
        Reply<?> r = failed.poll();
        if (r != null) {
            throw errorOf(r);
        }
    }

    private static DeferdException errorOf(Reply<?> reply) {
        try {
            reply.future().join();
            throw new IllegalStateException("not a failed reply");
        } catch (java.util.concurrent.CompletionException e) {
            return (DeferdException) e.getCause();
        }
    }

    private void disconnect(String why) {
        synchronized (this) {
            if (closedError != null) {
                return;
            }
            closedError = new DisconnectedException(why);
        }
        closeQuietly(channel); // a writer blocked in write() fails at once and lets go
        synchronized (writeLock) {
            for (Pending p; (p = pending.poll()) != null; ) {
                p.reply().fail(new DisconnectedException(why));
            }
        }
        for (Iterator<Job> it = held.values().iterator(); it.hasNext(); ) {
            Job job = it.next();
            if (!job.isSettled()) {
                job.markLost("disconnected");
            }
        }
        jobs.offer(CLOSED);
    }

    private static void closeQuietly(SocketChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException e) {
                // closing a broken socket: nothing more to do
            }
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
