package org.deferd;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** The client against a real deferd (ctest java.client, run by run_java_test.py). */
public final class ClientTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    private static Job take(Client c) {
        Job job = c.nextJob(WAIT);
        Check.isTrue(job != null, "a job within " + WAIT);
        return job;
    }

    public void testEveryByteRoundTrip() throws Exception {
        byte[] all = Check.allBytes();
        try (Client c = Daemon.client()) {
            PutResult put = c.put(Put.to("q1", all).priority(3).ttr(Duration.ofSeconds(5)));
            Check.isTrue(!put.duplicate(), "not a duplicate");
            c.subscribe(List.of("q1"), 4);
            Job job = take(c);
            Check.equal(put.id(), job.id(), "id");
            Check.equal(all, job.payload(), "payload of every byte value");
            Check.equal(1, job.attempt(), "attempt");
            Check.equal(3L, job.priority(), "priority");
            Check.equal(Duration.ofSeconds(5), job.ttr(), "ttr");
            Check.isTrue(job.uid() != null && put.id().contains(job.uid()), "uid in the id");
            Check.equal(List.of(job), c.held(), "held until acked");
            job.ack().get();
            Check.equal(List.of(), c.held(), "not held after the ack");
            Check.raises(IllegalStateException.class, job::ack);
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q1"), "acked: gone from ZooKeeper");
    }

    public void testDelayAtKeyAndGroup() throws Exception {
        try (Client c = Daemon.client()) {
            long before = System.currentTimeMillis();
            PutResult delayed = c.put(Put.to("q2", "d").delay(Duration.ofMillis(400)));
            PutResult at = c.put(Put.to("q2", "a").at(Instant.ofEpochMilli(before + 200)));
            PutResult keyed = c.put(Put.to("q2", "k").key("welcome-1").group("acme"));
            PutResult again = c.put(Put.to("q2", "other").key("welcome-1"));
            Check.isTrue(again.duplicate() && again.id().equals(keyed.id()), "the key's duplicate");
            c.subscribe(List.of("q2"), 8);
            Map<String, Job> got = new ConcurrentHashMap<>();
            for (int i = 0; i < 3; i++) {
                Job j = take(c);
                got.put(new String(j.payload()), j);
                j.ack();
            }
            c.flush();
            Check.isTrue(got.get("d").dueMs() >= before + 400, "delay sets the due time");
            Check.equal(before + 200, got.get("a").dueMs(), "at is the due time");
            Check.equal("acme", got.get("k").group(), "group");
            Check.equal("", got.get("d").group(), "no group");
            Check.isTrue(System.currentTimeMillis() >= before + 400, "not before it was due");
        }
    }

    public void testBatchCancelRescheduleStatsPing() throws Exception {
        try (Client c = Daemon.client()) {
            BatchResult b = c.putBatch(List.of(Put.to("q3", "1").delay(Duration.ofHours(1)),
                    Put.to("q3", "2").delay(Duration.ofHours(1)).key("k2"),
                    Put.to("q3", "3").delay(Duration.ofHours(1))));
            Check.equal(3, b.ids().size(), "batch ids");
            Check.equal(b.ids().get(0), c.cancel(b.ids().get(0)), "cancel by id");
            Check.equal(b.ids().get(1), c.cancelKey("q3", "k2", false), "cancel by key");
            NotFoundException nf = Check.raises(NotFoundException.class, () -> c.cancel(b.ids().get(0)));
            Check.isTrue(!nf.isRetryable(), "NOT_FOUND is not retryable");
            String moved = c.reschedule(b.ids().get(2), Duration.ZERO);
            Check.isTrue(!moved.equals(b.ids().get(2)), "a new id");
            Check.equal(Wire.jobUid(b.ids().get(2)), Wire.jobUid(moved), "the same uid");
            c.subscribe(List.of("q3"), 1);
            Job job = take(c);
            Check.equal(moved, job.id(), "the rescheduled job comes");
            job.ack().get();
            c.ping();
            Check.equal("CONNECTED", c.stats().get("zk_state"), "STATS");
            Check.equal("3", c.stats("q3").get("put"), "STATS q3");
            UnknownQueueException u = Check.raises(UnknownQueueException.class,
                    () -> c.put(Put.to("nope", "x")));
            Check.isTrue(!u.isRetryable() && u.code().equals("UNKNOWN_QUEUE"), "unknown queue");
            BadRequestException br = Check.raises(BadRequestException.class,
                    () -> c.putBatch(List.of(Put.to("q3", "x").ttr(Duration.ofMillis(5)))));
            Check.isTrue(!br.isRetryable(), "BAD_REQUEST is not retryable");
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q3"), "nothing left");
    }

    public void testNackDelayUnrunAndBackoff() throws Exception {
        try (Client c = Daemon.client()) {
            c.put(Put.to("r1", "n"));
            c.subscribe(List.of("r1"), 1);
            Job first = take(c);
            String moved = first.nack(Duration.ofMillis(200)).get();
            Check.isTrue(moved != null && !moved.equals(first.id()), "nack with a delay moves it");
            Job second = take(c);
            Check.equal(moved, second.id(), "delivered under its new id");
            Check.equal(2, second.attempt(), "attempt 2");
            Check.equal(first.uid(), second.uid(), "same uid");
            second.nackUnrun().get();
            Job third = take(c);
            Check.equal(2, third.attempt(), "unrun: the attempt is not spent");
            third.nack().get(); // the queue's backoff: 100-200 ms
            Job fourth = take(c);
            Check.equal(3, fourth.attempt(), "attempt 3 after the backoff");
            fourth.ack().get();
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("r1"), "acked");
    }

    public void testAckWithFollowUps() throws Exception {
        try (Client c = Daemon.client()) {
            c.put(Put.to("q4", "parent"));
            c.subscribe(List.of("q4"), 1);
            Job parent = take(c);
            BatchResult r = parent.ackThen(List.of(Put.to("q5", "child1"), Put.to("q5", "child2").key("c2")));
            Check.equal(2, r.ids().size(), "two follow-ups");
            Check.equal(List.of(), Daemon.jobsInZooKeeper("q4"), "parent acked");
            Check.equal(new HashSet<>(r.ids()), new HashSet<>(Daemon.jobsInZooKeeper("q5")),
                    "children stored");
            c.subscribe(List.of("q5"), 2);
            Set<String> got = new HashSet<>();
            for (int i = 0; i < 2; i++) {
                Job j = take(c);
                got.add(new String(j.payload()));
                j.ack();
            }
            c.flush();
            Check.equal(Set.of("child1", "child2"), got, "children delivered");
        }
    }

    /** A flow of a parent and 2 children: the parent comes once both are acked, not before. */
    public void testFlowParentAfterItsChildren() throws Exception {
        try (Client c = Daemon.client(); Client parents = Daemon.client()) {
            BatchResult r = c.putFlow(Put.to("q8", "report").priority(2),
                    List.of(Put.to("q9", "c1"), Put.to("q9", "c2")));
            Check.equal(3, r.ids().size(), "the parent's id, then the children's");
            String parentUid = Wire.jobUid(r.ids().get(0));
            Check.isTrue(r.ids().get(0).startsWith("q8/") && parentUid != null, "the parent's id: " + r.ids());
            for (String child : r.ids().subList(1, 3)) {
                Check.isTrue(child.startsWith("q9/") && child.endsWith("-f" + parentUid), "a child names its flow: " + child);
            }
            Check.equal(List.of(), Daemon.jobsInZooKeeper("q8"), "the parent waits, not a job yet");
            parents.subscribe(List.of("q8"), 1);
            c.subscribe(List.of("q9"), 2);
            Set<String> got = new HashSet<>();
            Job first = take(c);
            got.add(new String(first.payload()));
            first.ack().get();
            Check.equal(null, parents.nextJob(Duration.ofMillis(500)), "not after one child of two");
            Job second = take(c);
            got.add(new String(second.payload()));
            Check.equal(null, parents.nextJob(Duration.ofMillis(200)), "not while the last child is held");
            second.ack().get();
            Check.equal(Set.of("c1", "c2"), got, "both children delivered");
            Job parent = take(parents);
            Check.equal(r.ids().get(0), parent.id(), "the parent under the id the put gave");
            Check.equal("report", new String(parent.payload()), "the parent's payload");
            Check.equal(2L, parent.priority(), "its own priority");
            Check.equal(1, parent.attempt(), "a first delivery");
            parent.ack().get();
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q8"), "parent acked");
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q9"), "children acked");
    }

    /**
     * A child acked with ackJoin adds children the parent waits for; ackJoin of a job in no
     * flow is refused, and once the flow is gone too (NOT_FOUND): both leave the job held.
     */
    public void testAckJoinGrowsTheFlow() throws Exception {
        try (Client c = Daemon.client(); Client parents = Daemon.client()) {
            BatchResult r = c.putFlow(Put.to("q10", "crawl report"), List.of(Put.to("q11", "seed")), "complete");
            String parentUid = Wire.jobUid(r.ids().get(0));
            parents.subscribe(List.of("q10"), 1);
            c.subscribe(List.of("q11"), 1);
            Job seed = take(c);
            Check.equal(r.ids().get(1), seed.id(), "the seed");
            Check.raises(IllegalArgumentException.class, () -> seed.ackJoin(List.of(Put.to("q11", "k").key("k"))));
            BatchResult links = seed.ackJoin(List.of(Put.to("q11", "a"), Put.to("q11", "b")));
            Check.equal(2, links.ids().size(), "two links");
            for (String id : links.ids()) {
                Check.isTrue(id.endsWith("-f" + parentUid), "a link joined the flow: " + id);
            }
            Check.equal(null, parents.nextJob(Duration.ofMillis(500)), "the seed acked, its links pending");
            Job a = take(c); // either link first: same due time and priority
            a.ack().get();
            Check.equal(null, parents.nextJob(Duration.ofMillis(300)), "one link still pending");
            Job b = take(c);
            Check.equal(Set.of("a", "b"), Set.of(new String(a.payload()), new String(b.payload())),
                    "the links delivered");
            Check.equal(new HashSet<>(links.ids()), Set.of(a.id(), b.id()), "under their ids");
            b.ack().get();
            Job parent = take(parents);
            Check.equal(r.ids().get(0) + "-r3.0", parent.id(), "the parent after the joined children");
            Check.equal(new FlowResults(3, 0), parent.flowResults(), "on complete: how they ended");
            Check.equal("crawl report", new String(parent.payload()), "its payload");
            parent.ack().get();

            c.put(Put.to("q11", "plain"));
            Job plain = take(c);
            Check.raises(BadRequestException.class, () -> plain.ackJoin(List.of(Put.to("q11", "x"))));
            Check.isTrue(!plain.isSettled() && c.held().contains(plain), "no flow: still held");
            plain.ack().get();

            BatchResult gone = c.putFlow(Put.to("q12", "cancelled"), List.of(Put.to("q11", "orphan")));
            Job orphan = take(c);
            Check.equal(gone.ids().get(1), orphan.id(), "the child of the flow to cancel");
            Check.equal(gone.ids().get(0), c.cancel(gone.ids().get(0)), "the flow cancelled");
            Check.raises(NotFoundException.class, () -> orphan.ackJoin(List.of(Put.to("q11", "y"))));
            Check.isTrue(!orphan.isSettled() && c.held().contains(orphan), "its flow gone: still held");
            orphan.ack().get();
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q11"), "every child acked, nothing joined a gone flow");
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q12"), "the cancelled parent never came");
    }

    public void testDeadlineTouchExpired() throws Exception {
        try (Client c = Daemon.client()) {
            c.put(Put.to("s1", "lease"));
            c.subscribe(List.of("s1"), 1);
            Job job = take(c);
            Event.Deadline d = (Event.Deadline) Check.waitFor(() -> c.nextEvent(Duration.ofMillis(100)),
                    "a DEADLINE", WAIT);
            Check.isTrue(d.job() == job && d.msLeft() <= 1000, "DEADLINE names the job: " + d);
            job.touch().get();
            Event e = Check.waitFor(() -> c.nextEvent(Duration.ofMillis(100)) instanceof Event.Expired x
                    ? x : null, "EXPIRED", WAIT);
            Check.isTrue(((Event.Expired) e).job() == job && job.isLost(), "EXPIRED marks the job lost");
            Check.equal("expired", job.lostReason(), "why");
            LeaseLostException ll = Check.raises(LeaseLostException.class, () -> job.ack().get());
            Check.isTrue(!ll.isRetryable() && ll.job() == job, "LEASE_LOST names the job");
            Job again = take(c);
            Check.equal(2, again.attempt(), "delivered again");
            again.ack().get();
        }
    }

    public void testCancelledWhileHeld() throws Exception {
        try (Client c = Daemon.client(); Client other = Daemon.client()) {
            c.put(Put.to("s2", "x"));
            c.subscribe(List.of("s2"), 1);
            Job job = take(c);
            Check.raises(InFlightException.class, () -> other.cancel(job.id()));
            Check.equal(job.id(), other.cancel(job.id(), true), "forced");
            Check.waitFor(() -> c.nextEvent(Duration.ofMillis(100)) instanceof Event.Cancelled x
                    && x.job() == job ? x : null, "CANCELLED", WAIT);
            Check.raises(LeaseLostException.class, () -> job.ack().get());
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("s2"), "cancelled");
    }

    public void testGiveBack() throws Exception {
        try (Client c = Daemon.client()) {
            for (int i = 0; i < 4; i++) {
                c.put(Put.to("q6", "g" + i));
            }
            c.subscribe(List.of("q6"), 4);
            Check.waitFor(() -> c.held().size() == 4, "4 jobs pushed", WAIT);
            Job running = take(c);
            Check.equal(3, c.giveBack(), "three given back");
            running.ack().get();
        }
        try (Client c = Daemon.client()) {
            c.subscribe(List.of("q6"), 4);
            for (int i = 0; i < 3; i++) {
                Job j = take(c);
                Check.equal(1, j.attempt(), "given back unrun: still attempt 1");
                j.ack();
            }
            c.flush();
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q6"), "all done");
    }

    /** One client shared by 8 producer threads, then 4 consumer threads. */
    public void testOneClientManyThreads() throws Exception {
        int threads = 8;
        int each = 50;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (Client c = Daemon.client()) {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int tt = t;
                fs.add(pool.submit(() -> {
                    for (int i = 0; i < each; i++) {
                        c.put(Put.to("q7", tt + "-" + i));
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get(60, TimeUnit.SECONDS);
            }
            c.subscribe(List.of("q7"), 32);
            Set<String> seen = ConcurrentHashMap.newKeySet();
            fs.clear();
            for (int t = 0; t < 4; t++) {
                fs.add(pool.submit(() -> {
                    for (Job j; (j = c.nextJob(Duration.ofSeconds(2))) != null; ) {
                        Check.isTrue(seen.add(new String(j.payload())), "each job once");
                        j.ack();
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get(60, TimeUnit.SECONDS);
            }
            c.flush();
            Check.equal(threads * each, seen.size(), "every job consumed");
        } finally {
            pool.shutdownNow();
        }
        Check.equal(List.of(), Daemon.jobsInZooKeeper("q7"), "every ack applied");
    }
}
