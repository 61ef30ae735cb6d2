package org.deferd;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * Handlers for WorkerTest, run by {@code org.deferd.Worker} in a child process. Each appends
 * one line per event to $WORKER_DIR/log: {@code EVENT PAYLOAD ATTEMPT UID MS}, MS the
 * wall clock.
 */
public final class TestHandlers {
    private TestHandlers() {
    }

    static synchronized void note(String event, Job job) throws IOException {
        String line = event + " " + new String(job.payload(), StandardCharsets.UTF_8) + " "
                + job.attempt() + " " + job.uid() + " " + System.currentTimeMillis() + "\n";
        Files.writeString(Path.of(System.getenv("WORKER_DIR"), "log"), line,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    /** Records the job. */
    public static final class Record implements Handler {
        @Override
        public void handle(Job job) throws Exception {
            note("done", job);
        }
    }

    /** Fails the first attempt (the queue's backoff), then records it. */
    public static final class FailOnce implements Handler {
        @Override
        public void handle(Job job) throws Exception {
            if (job.attempt() == 1) {
                note("fail", job);
                throw new IllegalStateException("boom " + new String(job.payload(), StandardCharsets.UTF_8));
            }
            note("done", job);
        }
    }

    /** Asks for a retry in 600 ms on the first attempt, then records it. */
    public static final class RetryOnce implements Handler {
        @Override
        public void handle(Job job) throws Exception {
            if (job.attempt() == 1) {
                note("retry", job);
                throw new RetryException(Duration.ofMillis(600), "not yet");
            }
            note("done", job);
        }
    }

    /** A crawler: a "seed" acks itself adding two links to its flow; a link is recorded. */
    public static final class Crawl implements Handler {
        @Override
        public void handle(Job job) throws Exception {
            if (new String(job.payload(), StandardCharsets.UTF_8).equals("seed")) {
                job.ackJoin(java.util.List.of(Put.to(job.queue(), "link0"), Put.to(job.queue(), "link1")));
                note("seed", job);
                return;
            }
            note("done", job);
        }
    }

    /** Runs for $WORKER_SLEEP_MS, longer than the job's ttr. */
    public static final class Slow implements Handler {
        @Override
        public void handle(Job job) throws Exception {
            note("start", job);
            Thread.sleep(Long.parseLong(System.getenv("WORKER_SLEEP_MS")));
            note(job.isLost() ? "lost" : "done", job);
        }
    }

    /** Records its start, then waits until the file $WORKER_DIR/release exists. */
    public static final class Block implements Handler {
        @Override
        public void handle(Job job) throws Exception {
            note("start", job);
            Path release = Path.of(System.getenv("WORKER_DIR"), "release");
            while (!Files.exists(release)) {
                Thread.sleep(20);
            }
            note("done", job);
        }
    }
}
