package org.deferd;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The worker runner, {@code org.deferd.Worker} as a process, against a real deferd (java.worker). */
public final class WorkerTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final Path dir;

    public WorkerTest() throws IOException {
        dir = Files.createTempDirectory("deferd-java-worker");
        Runtime.getRuntime().addShutdownHook(new Thread(this::removeDir));
    }

    private void removeDir() {
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temp dir left behind: nothing to fail for
        }
    }

    private Process start(String handler, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "org.deferd.Worker"));
        cmd.addAll(List.of(args));
        cmd.add("org.deferd.TestHandlers$" + handler);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(dir.resolve("worker.log").toFile());
        pb.environment().put("WORKER_DIR", dir.toString());
        pb.environment().put("WORKER_SLEEP_MS", "2500");
        return pb.start();
    }

    private int exitOf(Process p) throws Exception {
        Check.isTrue(p.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS), "the worker exits: " + log());
        return p.exitValue();
    }

    private String log() throws IOException {
        File f = dir.resolve("worker.log").toFile();
        return f.exists() ? Files.readString(f.toPath()) : "";
    }

    /** The handlers' lines: EVENT PAYLOAD ATTEMPT UID MS. */
    private List<String[]> notes() throws IOException {
        Path f = dir.resolve("log");
        List<String[]> out = new ArrayList<>();
        if (Files.exists(f)) {
            for (String line : Files.readAllLines(f)) {
                out.add(line.split(" "));
            }
        }
        return out;
    }

    private long count(String event) {
        try {
            return notes().stream().filter(n -> n[0].equals(event)).count();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void put(String queue, int n, String prefix) {
        try (Client c = Daemon.client()) {
            for (int i = 0; i < n; i++) {
                c.put(Put.to(queue, prefix + i));
            }
        }
    }

    public void testRunsAndAcksAndLogsUids() throws Exception {
        put("q8", 20, "job");
        Process w = start("Record", "--queue", "q8", "--concurrency", "4", "--max-jobs", "20");
        Check.equal(0, exitOf(w), "exit status after --max-jobs: " + log());
        Check.equal(20L, count("done"), "every job ran once");
        Map<String, String> uids = new HashMap<>();
        for (String[] n : notes()) {
            uids.put(n[3], n[1]);
        }
        Matcher m = Pattern.compile("event=job_done queue=q8 id=\\S+ uid=(\\w+) attempt=1").matcher(log());
        int logged = 0;
        while (m.find()) {
            Check.isTrue(uids.containsKey(m.group(1)), "a logged uid is a job's: " + m.group(1));
            logged++;
        }
        Check.equal(20, logged, "one job_done line with its uid per job");
        Check.isTrue(log().contains("event=stopped reason=max-jobs started=20 acked=20"), log());
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q8"), "every ack applied");
    }

    public void testExceptionNacksWithTheQueuesBackoff() throws Exception {
        put("r2", 3, "f");
        Process w = start("FailOnce", "--queue", "r2", "--concurrency", "2", "--max-jobs", "6");
        Check.equal(0, exitOf(w), "exit status: " + log());
        Check.equal(3L, count("fail"), "three failures");
        Check.equal(3L, count("done"), "each done on its second attempt");
        for (String[] n : notes()) {
            Check.equal(n[0].equals("fail") ? "1" : "2", n[2], "attempt of " + String.join(" ", n));
        }
        Check.equal(3, log().split("event=job_failed", -1).length - 1, "job_failed logged: " + log());
        Check.isTrue(log().contains("error_type=java.lang.IllegalStateException"), log());
        Check.equal(List.of(), Daemon.jobsInZooKeeper("r2"), "all acked");
    }

    public void testRetryExceptionSetsTheDelay() throws Exception {
        put("q9", 1, "r");
        Process w = start("RetryOnce", "--queue", "q9", "--max-jobs", "2");
        Check.equal(0, exitOf(w), "exit status: " + log());
        List<String[]> n = notes();
        Check.equal(List.of("retry", "done"), n.stream().map(x -> x[0]).toList(), "retried once");
        long waited = Long.parseLong(n.get(1)[4]) - Long.parseLong(n.get(0)[4]);
        Check.isTrue(waited >= 550, "due again after the exception's 600 ms, not the backoff: " + waited);
        Check.isTrue(log().contains("event=job_retry") && log().contains("delay_ms=600"), log());
    }

    /** A job running 2.5 s with a 1 s ttr: touched, never expired, acked on attempt 1. */
    public void testLongJobIsTouched() throws Exception {
        put("s3", 1, "slow");
        Process w = start("Slow", "--queue", "s3", "--max-jobs", "1", "--verbose");
        Check.equal(0, exitOf(w), "exit status: " + log());
        Check.equal(1L, count("done"), "done, not lost: " + notes().size());
        Check.isTrue(log().contains("event=touched"), "touched: " + log());
        Check.isTrue(!log().contains("lease_expired"), "no lease expired: " + log());
        Check.equal(List.of(), Daemon.jobsInZooKeeper("s3"), "acked");
    }

    /** SIGTERM: prefetched jobs go back unrun at once, running ones finish, exit 0. */
    public void testSigtermGivesBackAndWaitsForRunning() throws Exception {
        put("q10", 6, "b");
        Process w = start("Block", "--queue", "q10", "--concurrency", "2", "--inflight", "6");
        try (Client c = Daemon.client()) {
            Check.waitFor(() -> count("start") == 2 && "6".equals(c.stats("q10").get("inflight")),
                    "two running, six pushed", WAIT);
            w.destroy(); // SIGTERM
            Check.waitFor(() -> "2".equals(c.stats("q10").get("inflight")),
                    "the four not started given back while two still run", WAIT);
            Check.isTrue(w.isAlive(), "still waiting for the running ones");
            Files.createFile(dir.resolve("release"));
            Check.equal(0, exitOf(w), "exit status after SIGTERM: " + log());
            Check.equal(2L, count("done"), "the running ones finished");
            Check.isTrue(log().contains("given_back=4"), log());
            c.subscribe(List.of("q10"), 4);
            for (int i = 0; i < 4; i++) {
                Job j = c.nextJob(WAIT);
                Check.equal(1, j.attempt(), "given back unrun: attempt 1 again");
                j.ack();
            }
            c.flush();
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q10"), "all done");
    }

    /** A handler that never ends: leaving gives up after --drain-timeout, exit 1. */
    public void testDrainTimeoutBoundsTheWait() throws Exception {
        put("q11", 1, "stuck");
        Process w = start("Block", "--queue", "q11", "--drain-timeout", "1");
        Check.waitFor(() -> count("start") == 1, "running", WAIT);
        long t0 = System.nanoTime();
        w.destroy();
        Check.equal(1, exitOf(w), "exit status: " + log());
        Check.isTrue(System.nanoTime() - t0 < 10_000_000_000L, "within the bound");
        Check.isTrue(log().contains("event=abandoned"), log());
        try (Client c = Daemon.client()) {
            c.subscribe(List.of("q11"), 1);
            Job j = c.nextJob(WAIT);
            Check.equal(2, j.attempt(), "the abandoned job comes again");
            j.ack().get();
        }
    }

    /** A handler that grows its flow (ackJoin): the worker does not answer the job again. */
    public void testHandlerGrowsItsFlow() throws Exception {
        String parent;
        try (Client c = Daemon.client()) {
            parent = c.putFlow(Put.to("q7", "report"), List.of(Put.to("q6", "seed"))).ids().get(0);
        }
        Process w = start("Crawl", "--queue", "q6", "--concurrency", "2", "--max-jobs", "3");
        Check.equal(0, exitOf(w), "exit status: " + log());
        Check.equal(1L, count("seed"), "the seed ran once");
        Check.equal(2L, count("done"), "its two links ran");
        Check.isTrue(log().contains("answered=handler"), log());
        Check.isTrue(!log().contains("job_failed") && !log().contains("settle_failed"), log());
        Check.isTrue(log().contains("event=stopped reason=max-jobs started=3 acked=3"), log());
        try (Client c = Daemon.client()) {
            c.subscribe(List.of("q7"), 1);
            Job p = c.nextJob(WAIT);
            Check.isTrue(p != null, "the parent, once the seed and its links were acked");
            Check.equal(parent, p.id(), "the flow's parent");
            p.ack().get();
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q6"), "seed and links acked");
    }

    public void testUsageErrors() throws Exception {
        Check.equal(2, exitOf(start("NoSuchHandler", "--queue", "q12")), "unknown class: " + log());
        Check.isTrue(log().contains("cannot load handler class"), log());
        Process w = start("Record", "--queue", "nope");
        Check.equal(2, exitOf(w), "unknown queue");
        Check.isTrue(log().contains("event=subscribe_failed"), log());
        Check.equal(2, exitOf(start("Record", "--queue", "q12", "--concurrency", "0")), "bad N");
    }
}
