package org.deferd;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The codec and the client against a scripted daemon: no ZooKeeper (ctest java.wire). */
public final class WireTest {
    private static String text(byte[] b) {
        return new String(b, StandardCharsets.ISO_8859_1);
    }

    public void testPutEncodesEveryOption() {
        Put p = Put.to("emails", "hi").delay(Duration.ofMillis(1500)).priority(7)
                .ttr(Duration.ofSeconds(2)).key("k-1").group("acme");
        Check.equal("PUT emails 2 delay=1500 prio=7 ttr=2000 key=k-1 idem=1-abcdefgh group=acme\nhi\n",
                text(p.encode("1-abcdefgh")), "put with options");
        Check.equal("PUT q 0 at=1000\n\n", text(Put.to("q", new byte[0]).at(Instant.ofEpochMilli(1000))
                .encode(null)), "empty payload, at");
        Check.raises(IllegalArgumentException.class, () -> Put.to("bad queue", "x"));
        Check.raises(IllegalArgumentException.class, () -> Put.to("q", "x").priority(-1));
        byte[] all = Check.allBytes();
        byte[] enc = Put.to("q", all).encode(null);
        Check.equal(all.length + "\n".length() + "PUT q 512\n".length(), enc.length, "binary put length");
        Check.equal(batchText(), text(Wire.batch(List.of(Put.to("a", "1"), Put.to("b", "22").key("x")))),
                "batch");
    }

    private static String batchText() {
        return "BATCH 2\nPUT a 1\n1\nPUT b 2 key=x\n22\n";
    }

    public void testRefusalFieldsAndTheirText() {
        DeferdException e = DeferdException.fromReply(
                "ERR UNAVAILABLE stored=maybe reason=connection_lost the job may have been stored: x=y");
        Check.isTrue(e instanceof UnavailableException, "UNAVAILABLE's class");
        Check.equal(Map.of("stored", "maybe", "reason", "connection_lost"), e.fields(), "fields");
        Check.equal("maybe", e.stored(), "stored");
        Check.equal("connection_lost", e.reason(), "reason");
        Check.isTrue(e.isRetryable(), "UNAVAILABLE is retryable");
        Check.equal(Map.of(), DeferdException.fromReply("ERR NOT_FOUND no job a/b").fields(),
                "no fields");
        String[][] codes = {{"BAD_REQUEST", "BadRequestException", "false"},
            {"UNKNOWN_QUEUE", "UnknownQueueException", "false"}, {"TOO_LARGE", "TooLargeException", "false"},
            {"NOT_FOUND", "NotFoundException", "false"}, {"QUEUE_FULL", "QueueFullException", "true"},
            {"LEASE_LOST", "LeaseLostException", "false"}, {"IN_FLIGHT", "InFlightException", "true"},
            {"PERMISSION_DENIED", "PermissionDeniedException", "false"},
            {"INTERNAL", "InternalException", "true"}, {"NEW_CODE", "DeferdException", "false"}};
        for (String[] c : codes) {
            DeferdException x = DeferdException.fromReply("ERR " + c[0] + " words");
            Check.equal(c[1], x.getClass().getSimpleName(), c[0] + "'s class");
            Check.equal(c[0], x.code(), "code");
            Check.equal(Boolean.parseBoolean(c[2]), x.isRetryable(), c[0] + " retryable");
        }
        PartialException p = (PartialException) DeferdException.fromReply(
                "ERR PARTIAL stored=2 ids=q/1-1-a,q/2-1-b dup=2; the rest was not stored: boom");
        Check.equal(List.of("q/1-1-a", "q/2-1-b"), p.storedIds(), "partial ids");
        Check.equal(List.of(1), p.duplicates(), "partial dups");
        Check.equal("2", p.stored(), "partial stored");
    }

    /** The retry rule, case by case as libdeferd's and the Python client's. */
    public void testPutRetryRule() {
        Object[][] cases = {
            {"ERR UNAVAILABLE stored=no reason=not_connected not stored", false, false, true},
            {"ERR UNAVAILABLE stored=maybe reason=connection_lost may", false, false, false},
            {"ERR UNAVAILABLE stored=maybe reason=connection_lost may", false, true, true},
            {"ERR UNAVAILABLE stored=maybe reason=connection_lost may", true, false, true},
            {"ERR UNAVAILABLE stored=maybe tokens=no reason=connection_lost x", false, true, false},
            {"ERR UNAVAILABLE stored=no reason=draining not stored", false, true, false},
            {"ERR UNAVAILABLE stored=no reason=max_connections not stored", false, true, false},
            {"ERR UNAVAILABLE stored=no reason=permission not stored", true, true, false},
            {"ERR UNAVAILABLE stored=no reason=some_new_reason words", false, false, true},
            {"ERR UNAVAILABLE stored=yes reason=x words", true, true, false},
            // no fields: an older daemon, its words decide
            {"ERR UNAVAILABLE not stored: not connected to ZooKeeper", false, false, true},
            {"ERR UNAVAILABLE the job may have been stored: ...", false, true, true},
            {"ERR UNAVAILABLE the job may have been stored; keeps no put tokens", false, true, false},
            {"ERR UNAVAILABLE not stored: deferd is stopping", false, false, false},
            // the words of a reply with fields are not read
            {"ERR UNAVAILABLE stored=maybe reason=x not stored", false, false, false},
            {"ERR QUEUE_FULL stored=no queue is full", false, true, false},
        };
        for (Object[] c : cases) {
            DeferdException e = DeferdException.fromReply((String) c[0]);
            Check.equal(c[3], PutRetry.safe(e, (Boolean) c[1], (Boolean) c[2]),
                    c[0] + " keyed=" + c[1] + " tokened=" + c[2]);
        }
        Check.isTrue(PutRetry.idemRefused(DeferdException.fromReply(
                "ERR BAD_REQUEST option=idem unknown option 'idem'")), "idem refused, field");
        Check.isTrue(PutRetry.idemRefused(DeferdException.fromReply(
                "ERR BAD_REQUEST unknown option 'idem'")), "idem refused, text");
        Check.isTrue(!PutRetry.idemRefused(DeferdException.fromReply(
                "ERR BAD_REQUEST option=prio bad")), "another option");
        Check.isTrue(PutRetry.newToken().matches("[0-9]{1,15}-[0-9a-f]{16}"), "token format");
    }

    public void testJobHeaderUidAndGroup() {
        Wire.JobHeader h = Wire.jobHeader("JOB q/1763769605123-10-5f1e0c2a9b3d4e01-gacme~x-kkey-1 q 2 "
                + "1763769605123 10 60000 5 uid=zz future=1");
        Check.equal("zz", h.uid(), "uid= wins");
        Check.equal(2, h.attempt(), "attempt");
        Check.equal(5, h.length(), "length");
        Check.equal("acme-x", Wire.jobGroup(h.id()), "group");
        Check.equal("5f1e0c2a9b3d4e01", Wire.jobUid("q/17-1-5f1e0c2a9b3d4e01-kkey"), "uid in id");
        Check.equal("5f1e", Wire.jobUid("q/shard/17-1-5f1e"), "uid in a sharded id");
        Check.equal(null, Wire.jobUid("reminders/queue-|1A2016B292A|0000001999#2"), "curator item");
        Check.equal(null, Wire.jobUid("q/17-1-ABC"), "upper case is no uid");
        Check.equal(null, Wire.jobUid("q/17-1-" + "a".repeat(33)), "33 characters are no uid");
        Check.equal("a".repeat(32), Wire.jobUid("q/17-1-" + "a".repeat(32)), "32 are");
        Check.equal(null, Wire.jobUid("q/17-x-abc"), "the priority is digits");
        Check.equal(null, Wire.jobUid("q/17-1-"), "an empty uid");
        Wire.JobHeader v1 = Wire.jobHeader("JOB q/17-1-ab q 1 17 1 1000 0");
        Check.equal("ab", v1.uid(), "no uid= word: from the id");
        Check.equal(0, v1.length(), "eight words");
        Check.equal("", Wire.jobGroup("q/17-1-abc-kg-1"), "a key starting with g is no group");
        Check.equal(new FlowResults(998, 2), Wire.jobFlowResults("q/17-1-abc-gx-fp0-r998.2"), "results");
        Check.equal(new FlowResults(0, 4294967295L), Wire.jobFlowResults("q/s/17-1-abc-a1-r0.4294967295"),
                "results after a move, in a shard");
        for (String none : new String[] {"q/17-1-abc", "q/17-1-abc-kr1.2", "q/17-1-abc-r1", "q/17-1-abc-r01.1",
                "q/17-1-abc-r1.4294967296"}) {
            Check.equal(null, Wire.jobFlowResults(none), none);
        }
        Check.raises(ProtocolException.class, () -> Wire.jobHeader("JOB q/1 q x 1 1 1 1"));
        Check.raises(ProtocolException.class, () -> Wire.jobHeader("JOB q/1 q 1 1 1 1 1 junk"));
    }

    public void testPushesAsEvents() {
        Check.equal(new Event.Deadline("q/1", 250, null), Wire.event("DEADLINE q/1 250", id -> null), "deadline");
        Check.equal(new Event.Cancelled("q/1", null), Wire.event("CANCELLED q/1", id -> null), "cancelled");
        Check.equal(new Event.State("NEWSTATE"), Wire.event("STATE NEWSTATE", id -> null), "a state word not known");
        for (String odd : new String[] {"DEADLINE q/1", "DEADLINE q/1 x", "EXPIRED", "STATE A B", "HELLO there"}) {
            Check.equal(new Event.Unknown(odd), Wire.event(odd, id -> null), "unknown: " + odd);
        }
    }

    public void testBatchAndNackReplies() {
        BatchResult b = Wire.batchReply(" n=3 parts=2 ids=a/1,a/2,a/3 dup=2");
        Check.equal(List.of("a/1", "a/2", "a/3"), b.ids(), "ids");
        Check.equal(List.of(false, true, false), b.results().stream().map(PutResult::duplicate).toList(), "dups");
        Check.equal(2, b.parts(), "parts");
        Check.equal("q/new", Wire.batchReply(" q/new n=1 ids=b/1 dup=-").movedId(), "moved id");
        Check.raises(ProtocolException.class, () -> Wire.batchReply(" n=2 ids=a/1 dup=-"));
        Check.equal(null, Wire.nackReply(" dead=q/x"), "dead-lettered");
        Check.equal("q/2", Wire.nackReply(" q/2"), "moved");
        Check.equal(null, Wire.nackReply(""), "kept its id");
        Check.equal(new PutResult("q/1", true), Wire.putReply(" q/1 duplicate"), "duplicate");
    }

    /** Messages cut anywhere, payloads with every byte and newlines, one over the buffer. */
    public void testMessageReaderCutsAnywhere() throws Exception {
        byte[] big = new byte[200_000];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) (i * 7);
        }
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        byte[][] payloads = {Check.allBytes(), new byte[0], "\n\n".getBytes(), big};
        for (byte[] p : payloads) {
            all.write(("JOB q/1-1-a q 1 1 1 1000 " + p.length + "\r\n").getBytes());
            all.write(p);
            all.write('\n');
            all.write("DEADLINE q/1-1-a 5\nOK\n".getBytes());
        }
        byte[] stream = all.toByteArray();
        for (int chunk : new int[] {1, 7, 4096, stream.length}) {
            MessageReader r = new MessageReader();
            ReadableByteChannel ch = chunks(stream, chunk);
            List<MessageReader.Message> got = new ArrayList<>();
            while (r.readFrom(ch) >= 0) {
                for (MessageReader.Message m; (m = r.next()) != null; ) {
                    got.add(m);
                }
            }
            Check.equal(payloads.length * 3, got.size(), "messages, chunks of " + chunk);
            for (int i = 0; i < payloads.length; i++) {
                Check.equal(payloads[i], got.get(3 * i).payload(), "payload " + i + ", chunks of " + chunk);
                Check.equal("DEADLINE q/1-1-a 5", got.get(3 * i + 1).line(), "push after it");
            }
        }
    }

    private static ReadableByteChannel chunks(byte[] data, int size) {
        return new ReadableByteChannel() {
            private int at;

            public int read(ByteBuffer dst) {
                if (at == data.length) {
                    return -1;
                }
                int n = Math.min(Math.min(size, dst.remaining()), data.length - at);
                dst.put(data, at, n);
                at += n;
                return n;
            }

            public boolean isOpen() {
                return true;
            }

            public void close() {
            }
        };
    }

    /** stored=maybe with a token: sent again with the same token, answered with the job. */
    public void testPutRetriedWithTheSameToken() throws Exception {
        int[] n = {0};
        try (FakeDaemon d = new FakeDaemon(line -> n[0]++ == 0
                ? "ERR UNAVAILABLE stored=maybe reason=connection_lost the job may have been stored\n"
                : "OK q/1-1-abc\n");
             Client c = Client.connect(d.socket())) {
            Check.equal(new PutResult("q/1-1-abc", false), c.put(Put.to("q", "x")), "result");
            Check.equal(2, d.requests.size(), "tries");
            String tok = d.requests.get(0).replaceAll(".* idem=(\\S+).*", "$1");
            Check.isTrue(tok.matches("[0-9]+-[0-9a-f]{16}"), "first try has a token: " + d.requests);
            Check.equal(d.requests.get(0), d.requests.get(1), "the second try is the same request");
        }
    }

    /** reason=draining: not sent again, and the exception says why. */
    public void testPutNotRetriedWhileDraining() throws Exception {
        try (FakeDaemon d = new FakeDaemon(line -> "ERR UNAVAILABLE stored=no reason=draining not stored\n");
             Client c = Client.connect(d.socket())) {
            UnavailableException e = Check.raises(UnavailableException.class, () -> c.put(Put.to("q", "x")));
            Check.equal("no", e.stored(), "stored");
            Check.equal("draining", e.reason(), "reason");
            Check.equal(1, d.requests.size(), "one try");
        }
        try (FakeDaemon d = new FakeDaemon(line -> "ERR UNAVAILABLE stored=maybe reason=connection_lost x\n");
             Client c = Client.builder().socket(d.socket()).putRetry(Duration.ZERO).connect()) {
            Check.raises(UnavailableException.class, () -> c.put(Put.to("q", "x")));
            Check.equal(List.of("PUT q 1"), d.requests, "no retry and no token with putRetry 0");
        }
    }

    /** A daemon older than put tokens: the put goes again without one, and later puts too. */
    public void testOlderDaemonWithoutTokens() throws Exception {
        try (FakeDaemon d = new FakeDaemon(line -> line.contains("idem=")
                ? "ERR BAD_REQUEST option=idem unknown option 'idem'\n" : "OK q/1-1-a\n");
             Client c = Client.connect(d.socket())) {
            c.put(Put.to("q", "x"));
            c.put(Put.to("q", "y"));
            Check.equal(3, d.requests.size(), "tries: " + d.requests);
            Check.equal("PUT q 1", d.requests.get(2), "no token any more");
        }
    }

    /** A pipelined ack's failure is raised by the next nextJob, with its job. */
    public void testPipelinedFailureAndEvents() throws Exception {
        try (FakeDaemon d = new FakeDaemon(line -> line.startsWith("SUB")
                ? "OK\nJOB q/1-1-aa q 1 1 1 1000 2\nhi\nSTATE SUSPENDED\nEXPIRED q/1-1-aa\nWHAT now\n"
                : line.startsWith("ACK") ? "ERR LEASE_LOST job q/1-1-aa: expired\n" : "OK\n");
             Client c = Client.connect(d.socket())) {
            c.subscribe(List.of("q"), 4);
            Job job = c.nextJob(Duration.ofSeconds(5));
            Check.equal("aa", job.uid(), "uid from the id");
            Check.equal(new Event.State("SUSPENDED"), c.nextEvent(Duration.ofSeconds(5)), "state");
            Event ex = c.nextEvent(Duration.ofSeconds(5));
            Check.isTrue(ex instanceof Event.Expired e && e.job() == job, "expired names the job");
            Check.isTrue(job.isLost(), "lost");
            Check.equal(new Event.Unknown("WHAT now"), c.nextEvent(Duration.ofSeconds(5)), "unknown");
            job.ack();
            LeaseLostException e = Check.raises(LeaseLostException.class, () -> c.nextJob(Duration.ofSeconds(5)));
            Check.isTrue(e.job() == job, "the failure names its job");
            Check.equal(0, c.held().size(), "no longer held");
            c.flush();
        }
    }

    /** FLOW: the parent's PUT, then the children's; the refusals, before anything is sent. */
    public void testFlowEncodingAndRefusals() throws Exception {
        Check.equal("FLOW 3 on=success\nPUT reports 6 delay=5000\nreport\nPUT pages 2 prio=3\np1\n"
                + "PUT pages 2 group=g\np2\n",
                text(Wire.flow(Put.to("reports", "report").delay(Duration.ofSeconds(5)),
                        List.of(Put.to("pages", "p1").priority(3), Put.to("pages", "p2").group("g")),
                        "success")), "flow");
        Check.equal("FLOW 2 on=complete\nPUT a 1\n1\nPUT b 0\n\n",
                text(Wire.flow(Put.to("a", "1"), List.of(Put.to("b", "")), "complete")), "on=complete");
        Put parent = Put.to("a", "p");
        List<Put> one = List.of(Put.to("b", "c"));
        Check.raises(IllegalArgumentException.class, () -> Wire.flow(parent, List.of(), "success"));
        Check.raises(IllegalArgumentException.class, () -> Wire.flow(parent, one, "done"));
        Check.raises(IllegalArgumentException.class, () -> Wire.flow(parent, one, null));
        Check.raises(IllegalArgumentException.class, () -> Wire.flow(Put.to("a", "p").key("k"), one, "success"));
        Check.raises(IllegalArgumentException.class, () -> Wire.flow(parent, List.of(Put.to("b", "c").key("k")),
                "success"));
        Check.raises(IllegalArgumentException.class, () -> Wire.flow(Put.to("a", "p").idem("1-ab"), one,
                "success"));
        Check.raises(IllegalArgumentException.class, () -> Wire.flow(parent,
                List.of(Put.to("b", "c"), Put.to("b", "d").idem("1-ab")), "success"));
        int[] puts = {0};
        try (FakeDaemon d = new FakeDaemon(line -> !line.startsWith("PUT") ? ""
                : ++puts[0] == 3 ? "OK n=3 ids=a/1-1-p,b/1-1-c-fp,b/1-1-d-fp dup=-\n"
                : puts[0] == 5 ? "ERR UNAVAILABLE stored=maybe reason=connection_lost may\n" : "");
             Client c = Client.connect(d.socket())) {
            Check.raises(IllegalArgumentException.class, () -> c.putFlow(parent, List.of()));
            Check.raises(IllegalArgumentException.class, () -> c.putFlow(parent, one, "sometimes"));
            Check.raises(IllegalArgumentException.class, () -> c.putFlow(parent, List.of(Put.to("b", "c").key("k"))));
            Check.equal(List.of(), d.requests, "refused before anything was sent");
            BatchResult r = c.putFlow(parent, List.of(Put.to("b", "c"), Put.to("b", "d")));
            Check.equal(List.of("a/1-1-p", "b/1-1-c-fp", "b/1-1-d-fp"), r.ids(), "the parent's id first");
            Check.equal(List.of("FLOW 3 on=success", "PUT a 1", "PUT b 1", "PUT b 1"), d.requests,
                    "success by default, no put tokens");
            UnavailableException e = Check.raises(UnavailableException.class,
                    () -> c.putFlow(parent, one, "complete"));
            Check.equal("maybe", e.stored(), "stored=maybe");
            Check.equal(7, d.requests.size(), "a flow is never sent again: " + d.requests);
            Check.equal("FLOW 2 on=complete", d.requests.get(4), "on=complete");
        }
    }

    /** ACK join=1: the follow-ups join the job's flow; a key is refused, the job still held. */
    public void testAckJoin() throws Exception {
        Check.equal("ACK q/1-1-aa then=2 join=1\n", Wire.ackJoinLine("q/1-1-aa",
                List.of(Put.to("q", "x"), Put.to("q", "y"))), "ACK join=1 line");
        Check.raises(IllegalArgumentException.class, () -> Wire.ackJoinLine("q/1", List.of()));
        Check.raises(IllegalArgumentException.class, () -> Wire.ackJoinLine("q/1",
                List.of(Put.to("q", "x"), Put.to("q", "y").key("k"))));
        int[] puts = {0};
        try (FakeDaemon d = new FakeDaemon(line -> line.startsWith("SUB")
                ? "OK\nJOB q/1-1-aa-fpp q 1 1 1 60000 2\nhi\nJOB q/2-1-bb q 1 1 1 60000 2\nho\n"
                : !line.startsWith("PUT") ? (line.contains(" then=") ? "" : "OK\n")
                : ++puts[0] == 2 ? "OK n=2 ids=q/3-1-cc-fpp,q/3-1-dd-fpp dup=-\n"
                : puts[0] == 3 ? "ERR BAD_REQUEST job q/2-1-bb is not a flow's child\n"
                : puts[0] == 4 ? "ERR NOT_FOUND job q/2-1-bb: its flow is gone\n" : "");
             Client c = Client.connect(d.socket())) {
            c.subscribe(List.of("q"), 2);
            Job job = c.nextJob(Duration.ofSeconds(5));
            Job plain = c.nextJob(Duration.ofSeconds(5));
            Check.raises(IllegalArgumentException.class, () -> job.ackJoin(List.of(Put.to("q", "k").key("k"))));
            Check.raises(IllegalArgumentException.class, () -> job.ackJoin(List.of()));
            Check.isTrue(!job.isSettled(), "refused client-side: still held, unanswered");
            Check.equal(List.of("SUB q inflight=2"), d.requests, "nothing sent");
            BatchResult r = job.ackJoin(List.of(Put.to("q", "x"), Put.to("q", "y").delay(Duration.ofMillis(5))));
            Check.equal(List.of("q/3-1-cc-fpp", "q/3-1-dd-fpp"), r.ids(), "the follow-ups' ids");
            Check.equal(List.of("SUB q inflight=2", "ACK q/1-1-aa-fpp then=2 join=1", "PUT q 1",
                    "PUT q 1 delay=5"), d.requests, "ACK then= join=1 and the PUTs");
            Check.isTrue(job.isSettled() && !c.held().contains(job), "acked");
            Check.raises(BadRequestException.class, () -> plain.ackJoin(List.of(Put.to("q", "z"))));
            Check.isTrue(!plain.isSettled() && c.held().contains(plain), "refused by the daemon: still held");
            Check.raises(NotFoundException.class, () -> plain.ackJoin(List.of(Put.to("q", "z"))));
            Check.isTrue(!plain.isSettled() && c.held().contains(plain), "its flow gone: still held");
            plain.ack().get();
            Check.equal(List.of(), c.held(), "a plain ack after it");
        }
    }

    /** The daemon goes away: waiting calls fail with Disconnected, and so do later ones. */
    public void testDisconnect() throws Exception {
        try (FakeDaemon d = new FakeDaemon(line -> line.startsWith("PING") ? null : "OK\n");
             Client c = Client.connect(d.socket())) {
            c.subscribe(List.of("q"), 1);
            Check.raises(DisconnectedException.class, c::ping);
            Check.raises(DisconnectedException.class, () -> c.nextJob(Duration.ofSeconds(5)));
            Check.raises(DisconnectedException.class, c::ping);
        }
        ConnectFailedException e = Check.raises(ConnectFailedException.class,
                () -> Client.connect("/nonexistent/deferd.sock"));
        Check.isTrue(e.getMessage().contains("/nonexistent/deferd.sock"), e.getMessage());
    }

    /**
     * The worker on DRAINING gives back what it has not started, lets the running job finish
     * and acks it, and when deferd then closes the connection, connects again and goes on. A job
     * taken from the client but not yet queued when DRAINING comes goes back too (a2 here).
     */
    public void testWorkerDrainingAndReconnect() throws Exception {
        java.util.concurrent.atomic.AtomicInteger subs = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch running = new java.util.concurrent.CountDownLatch(1);
        try (FakeDaemon d = new FakeDaemon(line -> {
            if (line.startsWith("SUB")) {
                return subs.incrementAndGet() == 1
                        ? "OK\nJOB q/1-1-a1 q 1 1 1 60000 2\nj1\nJOB q/2-1-a2 q 1 1 1 60000 2\nj2\n"
                            + "JOB q/3-1-a3 q 1 1 1 60000 2\nj3\n"
                        : "OK\nJOB q/4-1-a4 q 1 1 1 60000 2\nj4\n";
            }
            return line.equals("ACK q/1-1-a1") ? "OK\n" + FakeDaemon.CLOSE : "OK\n";
        })) {
            Worker w = new Worker(job -> {
                if (job.uid().equals("a1")) {
                    running.countDown();
                    release.await();
                }
            }, new WorkerOptions(List.of("q"), 1, 3, d.socket(), 0, Duration.ofSeconds(5),
                    Duration.ofSeconds(10), false, null));
            w.taken = job -> { // a2 is between the client and the worker's queue when DRAINING comes
                if (job.uid().equals("a2")) {
                    Check.waitFor(() -> d.requests.contains("NACK q/3-1-a3 unrun=1"),
                            "a3 given back from the client first", Duration.ofSeconds(10));
                }
            };
            java.util.concurrent.CompletableFuture<Integer> exit =
                    java.util.concurrent.CompletableFuture.supplyAsync(w::run);
            Check.isTrue(running.await(10, java.util.concurrent.TimeUnit.SECONDS), "a1 runs");
            d.push("STATE DRAINING\n"); // a2 and a3 wait for the one thread, here or in the client
            Check.waitFor(() -> d.requests.containsAll(List.of("UNSUB", "NACK q/2-1-a2 unrun=1",
                    "NACK q/3-1-a3 unrun=1")), "a2 and a3 given back: " + d.requests, Duration.ofSeconds(10));
            Check.isTrue(d.requests.indexOf("UNSUB") < d.requests.indexOf("NACK q/2-1-a2 unrun=1"),
                    "UNSUB before the jobs go back, so that their places are not filled again: "
                    + d.requests);
            Check.isTrue(!d.requests.contains("ACK q/1-1-a1"), "a1 still runs");
            release.countDown();
            Check.waitFor(() -> d.requests.contains("ACK q/4-1-a4"), "connected again and ran a4: "
                    + d.requests, Duration.ofSeconds(10));
            Check.equal(2, subs.get(), "subscribed twice");
            Check.isTrue(d.requests.indexOf("ACK q/1-1-a1") < d.requests.lastIndexOf("SUB q inflight=3"),
                    "a1 acked before the connection ended: " + d.requests);
            w.stop("test");
            Check.equal(Worker.EXIT_OK, exit.get(10, java.util.concurrent.TimeUnit.SECONDS), "exit status");
        }
    }
}
