package org.deferd;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The worker's lease renewal: each job it holds, waiting or running, is touched every half
 * ttr (not more often than every 200 ms), and at once when a {@code DEADLINE} push names it,
 * until it is settled or taken back.
 *
 * <p>Thread-safety: thread-safe; touches are sent from the timer's thread, never from the
 * client's reader thread (a write there could wait for the daemon while it waits for us).
 */
final class LeaseRenewer {
    private final ScheduledExecutorService timer;
    private final Consumer<Job> touched;
    private final Map<Job, ScheduledFuture<?>> renewals = new ConcurrentHashMap<>();

    /**
     * @param timer runs the touches
     * @param touched told of each touch sent (for a log line)
     */
    LeaseRenewer(ScheduledExecutorService timer, Consumer<Job> touched) {
        this.timer = timer;
        this.touched = touched;
    }

    /** Renews {@code job}'s lease from now on. */
    void start(Job job) {
        long ms = period(job.ttr()).toMillis();
        renewals.put(job, timer.scheduleAtFixedRate(() -> touch(job), ms, ms, TimeUnit.MILLISECONDS));
    }

    /** No more renewals of {@code job} (it is settled or given back). */
    void stop(Job job) {
        ScheduledFuture<?> f = renewals.remove(job);
        if (f != null) {
            f.cancel(false);
        }
    }

    /** A {@code DEADLINE} push: touches the job now if it is one of ours. */
    void deadline(Job job) {
        if (renewals.containsKey(job)) {
            timer.execute(() -> touch(job));
        }
    }

    /** @return the renewal period of a job with this ttr */
    static Duration period(Duration ttr) {
        return Duration.ofMillis(Math.max(200, ttr.toMillis() / 2));
    }

    private void touch(Job job) {
        if (job.isSettled() || job.isLost() || !renewals.containsKey(job)) {
            return;
        }
        try {
            job.touch();
            touched.accept(job);
        } catch (DisconnectedException e) {
            // the worker sees the connection's end too and deals with it
        }
    }
}
