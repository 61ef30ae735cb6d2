package org.deferd;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A worker process: {@code java -cp deferd.jar:app.jar org.deferd.Worker --queue Q
 * --concurrency N com.example.Handler}. It runs the {@link Handler} on each job of the queues,
 * up to N at once in a thread pool. A return acks the job, an exception nacks it (after the
 * queue's backoff, or the delay of a {@link RetryException}); acks and nacks are pipelined.
 * Leases are renewed while a job waits or runs (every half ttr, and on {@code DEADLINE}).
 * SIGTERM or SIGINT (or {@code --max-jobs}) makes it leave cleanly: no new job starts, jobs
 * pushed ahead but not started are given back unrun (their attempt is not spent), running
 * ones finish and are settled, for at most {@code --drain-timeout}; then it exits 0. On
 * {@code STATE DRAINING} the jobs not started are given back too, and a connection that ends
 * is made again (for up to {@code --reconnect}). Each job
 * done or failed is logged with its uid. See docs/java.md, "Worker".
 *
 * <p>Thread-safety: {@link #run()} once, from one thread; {@link #stop(String)} from any
 * thread (or a signal).
 */
public final class Worker {
    /** Exit status after a clean leave. */
    public static final int EXIT_OK = 0;
    /** Exit status when the connection could not be made or kept, or running jobs were left. */
    public static final int EXIT_CONNECTION = 1;
    /** Exit status for a usage error: bad arguments, handler, queue or inflight. */
    public static final int EXIT_USAGE = 2;

    private static final Duration POLL = Duration.ofMillis(100);

    private final Handler handler;
    private final WorkerOptions options;
    private final WorkerLog log;
    private final ArrayDeque<Job> waiting = new ArrayDeque<>(); // held, not started: guarded by this
    private int freeThreads; // guarded by this
    private final Map<Job, Integer> settleTries = new ConcurrentHashMap<>();
    private final Map<Job, Boolean> quiet = new ConcurrentHashMap<>();
    private final Map<Throwable, Boolean> handled = new ConcurrentHashMap<>();
    private final AtomicInteger running = new AtomicInteger();
    private final AtomicInteger acked = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private final AtomicInteger retried = new AtomicInteger();
    private volatile String stopReason;
    private volatile boolean abort;
    private volatile boolean draining; // deferd said DRAINING: its closing the connection is expected
    private int started;
    private final AtomicInteger givenBack = new AtomicInteger();
    private volatile Client client;
    private Client drained; // the connection whose prefetched jobs went back on DRAINING: guarded by this
    Consumer<Job> taken = job -> { }; // tests: runs between a job's leaving the client and offer()
    private ExecutorService pool;
    private ScheduledExecutorService timer;
    private LeaseRenewer leases;

    /**
     * A worker that runs {@code handler} with these options; {@link #run()} starts it.
     *
     * @param handler called for each job, from up to {@code concurrency} threads at once
     * @param options queues, concurrency and the rest
     */
    public Worker(Handler handler, WorkerOptions options) {
        this.handler = handler;
        this.options = options;
        this.log = new WorkerLog(System.err);
        this.freeThreads = options.concurrency();
    }

    /**
     * The command line: parses {@code args}, loads the handler class and runs the worker with
     * SIGTERM and SIGINT hooked; exits with its status.
     *
     * @param args {@code --queue Q [--concurrency N] [--inflight M] [--socket PATH]
     *     [--max-jobs K] [--drain-timeout SECONDS] HANDLER_CLASS}
     */
    public static void main(String[] args) {
        System.exit(runMain(args));
    }

    static int runMain(String[] args) {
        WorkerOptions options;
        Handler handler;
        try {
            options = WorkerOptions.parse(args);
            handler = WorkerOptions.loadHandler(options.handlerClass());
        } catch (IllegalArgumentException e) {
            System.err.println("deferd worker: " + e.getMessage());
            System.err.println(WorkerOptions.USAGE);
            return EXIT_USAGE;
        }
        Worker worker = new Worker(handler, options);
        Signals.onTerminate(worker::onSignal);
        return worker.run();
    }

    private void onSignal() {
        if (stopReason != null) {
            abort = true; // a second signal: stop waiting for running handlers
        }
        stop("signal");
    }

    /**
     * Starts leaving: no new job starts, prefetched ones are given back, running ones finish.
     *
     * @param reason for the log
     */
    public void stop(String reason) {
        if (stopReason == null) {
            stopReason = reason;
        }
    }

    /**
     * Connects, subscribes and runs jobs until stopped.
     *
     * @return {@link #EXIT_OK} after a clean leave, {@link #EXIT_CONNECTION} when the
     *     connection could not be made or kept (or running jobs were abandoned),
     *     {@link #EXIT_USAGE} when the daemon refused the queues or the inflight
     */
    public int run() {
        String queues = String.join(",", options.queues());
        try {
            client = Client.builder().socket(options.socket()).onEvent(this::onEvent)
                    .onAckError(this::onAckError).connect();
            client.subscribe(options.queues(), options.inflight());
        } catch (UnknownQueueException | BadRequestException | PermissionDeniedException e) {
            log.log("error", "subscribe_failed", "queues", queues, "code", e.code(), "error", e.text());
            close();
            return EXIT_USAGE;
        } catch (DeferdException e) {
            log.log("error", "connect_failed", "code", e.code(), "error", e.getMessage());
            close();
            return EXIT_CONNECTION;
        }
        pool = Executors.newFixedThreadPool(options.concurrency(), named("deferd-worker", false));
        timer = Executors.newSingleThreadScheduledExecutor(named("deferd-renew", true));
        leases = new LeaseRenewer(timer, this::touched);
        log.log("info", "started", "queues", queues, "concurrency", options.concurrency(),
                "inflight", options.inflight(), "socket", client.socketPath(), "pid",
                ProcessHandle.current().pid());
        int exit = EXIT_OK;
        while (true) {
            try {
                dispatch();
                exit = leave();
                break;
            } catch (DisconnectedException e) {
                boolean expected = draining;
                log.log(expected ? "warning" : "error", "disconnected", "error", e.text(),
                        "running", running.get(), "note",
                        "held jobs are released by deferd and come again");
                if (stopReason != null || !reconnect()) {
                    stop("disconnected");
                    pool.shutdown();
                    exit = EXIT_CONNECTION;
                    break;
                }
            }
        }
        timer.shutdownNow();
        close();
        log.log(exit == EXIT_OK ? "info" : "error", "stopped", "reason", stopReason, "started",
                started, "acked", acked.get(), "failed", failed.get(), "retried", retried.get(),
                "given_back", givenBack.get(), "exit", exit);
        return exit;
    }

    /**
     * Connects and subscribes again, for up to {@code --reconnect}, pausing 0.1 s, then twice
     * as long each time (at most 2 s). Running handlers go on; their jobs were released with
     * the old connection, so their results are not reported (they come again).
     *
     * @return true once connected; false when the time ran out or the worker was stopped
     */
    private boolean reconnect() {
        draining = false;
        long until = System.nanoTime() + options.reconnect().toNanos();
        long pause = 100;
        while (stopReason == null && System.nanoTime() + pause * 1_000_000L <= until) {
            try {
                Thread.sleep(pause);
                Client fresh = Client.builder().socket(options.socket()).onEvent(this::onEvent)
                        .onAckError(this::onAckError).connect();
                try {
                    fresh.subscribe(options.queues(), options.inflight());
                } catch (DeferdException e) {
                    fresh.close();
                    throw e;
                }
                client.close();
                client = fresh;
                log.log("info", "reconnected", "socket", fresh.socketPath());
                return true;
            } catch (DeferdException e) {
                pause = Math.min(pause * 2, 2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        log.log("error", "connect_failed", "socket", client.socketPath(), "note",
                "gave up after --reconnect " + options.reconnect().toSeconds() + " s");
        return false;
    }

    /**
     * Takes jobs as they come: each starts at once on a free thread, or waits in
     * {@link #waiting} (its lease renewed) until a handler finishes; until told to stop.
     */
    private void dispatch() throws DisconnectedException {
        while (stopReason == null) {
            Client from = client;
            Job job = from.nextJob(POLL);
            if (job == null) {
                continue;
            }
            if (job.isLost()) {
                answerLost(job);
                continue;
            }
            taken.accept(job);
            leases.start(job);
            offer(job, from);
        }
    }

    /**
     * Starts {@code job} on a free thread, else keeps it waiting; gives it back once stopping,
     * or when its connection's prefetched jobs already went back (it was between the client
     * and {@link #waiting} then, so that give-back missed it).
     */
    private synchronized void offer(Job job, Client from) {
        if (stopReason != null || from == drained) {
            giveBack(job);
        } else if (freeThreads > 0) {
            freeThreads--;
            start(job);
            pool.execute(() -> runJobs(job));
        } else {
            waiting.add(job);
        }
    }

    /** A handler finished: the job it runs next, or null (its thread is free again). */
    private synchronized Job next() {
        Job job = stopReason == null ? waiting.poll() : null;
        if (job == null) {
            freeThreads++;
        } else {
            start(job);
        }
        return job;
    }

    private void start(Job job) {
        started++;
        running.incrementAndGet();
        if (options.maxJobs() > 0 && started >= options.maxJobs()) {
            stop("max-jobs");
        }
    }

    /** Gives back the jobs waiting for a thread (never started: their attempt is not spent). */
    private synchronized void giveBackWaiting() {
        for (Job job; (job = waiting.poll()) != null; ) {
            giveBack(job);
        }
    }

    private void runJobs(Job first) {
        for (Job job = first; job != null; job = next()) {
            runJob(job);
        }
    }

    private void runJob(Job job) {
        if (job.isLost()) { // taken back while it waited for a thread
            leases.stop(job);
            try {
                answerLost(job);
            } catch (DisconnectedException e) {
                // the job comes again anyway
            }
            running.decrementAndGet();
            return;
        }
        long t0 = System.nanoTime();
        Throwable error = null;
        try {
            handler.handle(job);
        } catch (Throwable t) { // any failure is the job's, not the worker's
            error = t;
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        leases.stop(job);
        try {
            settle(job, error, ms);
        } catch (DisconnectedException e) {
            log.log("warning", "unsettled", "queue", job.queue(), "id", job.id(), "uid", job.uid(),
                    "note", "the connection was lost while it ran; the job comes again");
        } finally {
            running.decrementAndGet();
        }
    }

    private void settle(Job job, Throwable error, long ms) {
        Object[] fields = {"queue", job.queue(), "id", job.id(), "uid", job.uid(), "attempt",
            job.attempt(), "ms", ms};
        if (job.isSettled()) { // the handler answered it (ackThen, ackJoin): not again
            answeredByHandler(job, error, fields);
        } else if (error == null) {
            send(job, job::ack);
            acked.incrementAndGet();
            log.log("info", "job_done", fields);
        } else if (error instanceof RetryException) {
            Duration delay = ((RetryException) error).delay();
            send(job, () -> job.nack(delay));
            retried.incrementAndGet();
            log.log("info", "job_retry", concat(fields, "delay_ms", delay.toMillis(), "error",
                    error.getMessage()));
        } else {
            send(job, job::nack);
            failed.incrementAndGet();
            log.log("error", "job_failed", concat(fields, "error_type", error.getClass().getName(),
                    "error", error.getMessage(), "at", where(error), "retry_in", "backoff"));
        }
    }

    /** The handler acked the job itself (follow-ups in the ack's transaction). */
    private void answeredByHandler(Job job, Throwable error, Object[] fields) {
        acked.incrementAndGet();
        if (error == null) {
            log.log("info", "job_done", concat(fields, "answered", "handler"));
        } else { // too late to nack: the ack was sent
            log.log("error", "job_failed", concat(fields, "answered", "handler", "error_type",
                    error.getClass().getName(), "error", error.getMessage(), "at", where(error),
                    "note", "thrown after the handler acked the job: not nacked"));
        }
    }

    /** Sends a settle pipelined; its failure comes back to {@link #settleFailed}. */
    private void send(Job job, Supplier<Reply<?>> action) {
        action.get().future().whenComplete((value, error) -> {
            if (error != null) {
                handled.put(error, Boolean.TRUE); // not again as a touch's failure
                settleFailed(job, action, (DeferdException) error);
            }
        });
    }

    /** Leaves: gives back what was pushed ahead, waits for running jobs (a bound). */
    private int leave() {
        log.log("info", "leaving", "reason", stopReason, "running", running.get());
        client.unsubscribe(); // first: else the places the jobs given back free are filled again
        giveBackWaiting();
        givenBack.addAndGet(client.giveBackReceived());
        pool.shutdown();
        long until = System.nanoTime() + options.drainTimeout().toNanos();
        try {
            while (!pool.awaitTermination(POLL.toMillis(), TimeUnit.MILLISECONDS)) {
                if (abort || System.nanoTime() > until) {
                    log.log("error", "abandoned", "running", running.get(), "note",
                            "running jobs are released by deferd when the connection closes and"
                            + " come again");
                    return EXIT_CONNECTION;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return EXIT_CONNECTION;
        }
        client.flush(); // every ack and nack answered; failures went to settleFailed
        return EXIT_OK;
    }

    /** deferd is draining: what waits here or in the client goes back, so that it can exit. */
    private void giveBackPrefetched(Client c) {
        int before = givenBack.get();
        try {
            c.unsubscribe();
            synchronized (this) { // with offer(): a job taken from c goes back here or there
                drained = c;
                giveBackWaiting();
            }
            givenBack.addAndGet(c.giveBackReceived());
        } catch (DeferdException e) {
            // the connection ends anyway; its jobs come again
        }
        log.log("info", "gave_back", "jobs", givenBack.get() - before, "note", "deferd is draining");
    }

    private void giveBack(Job job) {
        leases.stop(job);
        if (job.isLost()) {
            answerLost(job);
            return;
        }
        send(job, job::nackUnrun);
        givenBack.incrementAndGet();
    }

    /** A job taken back before it started: answered only to free its inflight place. */
    private void answerLost(Job job) {
        quiet.put(job, Boolean.TRUE);
        send(job, job::nackUnrun);
    }

    private void touched(Job job) {
        if (options.verbose()) {
            log.log("info", "touched", "queue", job.queue(), "id", job.id(), "uid", job.uid());
        }
    }

    // -- pushes and failed answers (on the client's reader thread: never write here) --------

    private void onEvent(Event event) {
        if (event instanceof Event.Deadline d && d.job() != null) {
            leases.deadline(d.job());
        } else if (event instanceof Event.Expired || event instanceof Event.Cancelled) {
            Job job = event instanceof Event.Expired e ? e.job() : ((Event.Cancelled) event).job();
            String id = event instanceof Event.Expired e ? e.jobId() : ((Event.Cancelled) event).jobId();
            log.log("warning", event instanceof Event.Expired ? "lease_expired" : "job_cancelled",
                    "id", id, "uid", job != null ? job.uid() : null, "note",
                    "its handler may run on; the result will not count");
        } else if (event instanceof Event.State s) {
            boolean bad = !s.state().equals("CONNECTED") && !s.state().equals("RECONNECTED");
            log.log(bad ? "warning" : "info", "state", "state", s.state());
            if (s.state().equals("DRAINING")) { // let deferd exit soon: the jobs not started go back
                draining = true;
                Client drainingClient = client;
                timer.execute(() -> giveBackPrefetched(drainingClient));
            }
        }
    }

    /** A failed settle (on the reader thread): sent again when nothing changed, else logged. */
    private void settleFailed(Job job, Supplier<Reply<?>> action, DeferdException e) {
        if (quiet.remove(job) != null) {
            return; // answered only to free its place: LEASE_LOST is expected
        }
        Object[] fields = {"queue", job.queue(), "id", job.id(), "uid", job.uid(), "code", e.code(),
            "error", e.text()};
        if (!job.isSettled() && e.isRetryable() && !(e instanceof DisconnectedException)) {
            int tries = settleTries.merge(job, 1, Integer::sum);
            if (tries <= 5) { // nothing changed and the job is still held: send it again
                log.log("warning", "settle_failed", concat(fields, "retry_in", "1s"));
                timer.schedule(() -> send(job, action), 1, TimeUnit.SECONDS);
                return;
            }
        }
        settleTries.remove(job);
        log.log("error", "settle_failed", concat(fields, "note", e instanceof LeaseLostException
                ? "the job comes again" : null));
    }

    /** Any other pipelined failure: a touch's (a touch that crossed its job's ack is no news). */
    private void onAckError(DeferdException e) {
        if (handled.remove(e) != null) {
            return;
        }
        Job job = e.job();
        if (e instanceof NotFoundException && job != null && job.isSettled()) {
            return;
        }
        log.log("warning", "touch_failed", "id", job != null ? job.id() : null, "uid",
                job != null ? job.uid() : null, "code", e.code(), "error", e.text());
    }

    // -- helpers ------------------------------------------------------------------------

    private void close() {
        if (client != null) {
            client.close();
        }
    }

    private static Object[] concat(Object[] a, Object... b) {
        List<Object> out = new ArrayList<>(List.of(a));
        out.addAll(java.util.Arrays.asList(b));
        return out.toArray();
    }

    private static String where(Throwable t) {
        StackTraceElement[] st = t.getStackTrace();
        return st.length > 0 ? st[0].getFileName() + ":" + st[0].getLineNumber() : null;
    }

    private static ThreadFactory named(String prefix, boolean daemon) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
            t.setDaemon(daemon);
            return t;
        };
    }
}
