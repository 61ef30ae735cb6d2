/* Claims (layout version 3, src/daemon/engine/claim.c) over the scripted store: due jobs
 * claimed many to a multi (deleted, one claim node created), acks of one loop turn sharing
 * one versioned write of the claim, the last one deleting it; a job claimed elsewhere or
 * locked the version 2 way; a job read first (its payload, version and deliveries); a job
 * made again since it was read; a nack's move and a lease's expiry written with the claim;
 * a write whose answer was lost; a claim recovered elsewhere; a settle that waits for the
 * write on its way; a lost session; a reconnection with the same session. */
#include <string.h>

#include "check.h"
#include "engine_harness.h"
#include "consumers.h"
#include "fake_zkstore.h"

#define QUEUES "[queue a]\nttr = 10s\nmax_attempts = 5\nbackoff_min = 1s\nbackoff_max = 1s\n" \
               "backoff_jitter = 0\n"
#define TWO_QUEUES QUEUES "[queue b]\nttr = 10s\n"

static int version_of(int multi, int op)
{
    const struct fake_multi *m = fake_zk_multi(harness_zs(), multi);
    return m && op < m->nops ? m->versions[op] : -99;
}

/* The engine at layout 3 with N of our own puts due, claimed in one multi and pushed to one
 * consumer (inflight 4): their ids into IDS. */
static struct conn *claimed(int n, const char **ids)
{
    harness_start(QUEUES);
    harness_claims_on();
    for (int i = 0; i < n; i++)
        ids[i] = harness_listed("a", 0, 0, 1);
    struct conn *c = harness_consumer("a", 4);
    harness_multi_ok(0, 1);
    return c;
}

/* Three due jobs of our own puts: one multi claims them; the first ack's write (a set at
 * version 0) is on its way when two more come: they share the next write, which deletes
 * the claim at version 1. */
static void test_claim_and_acks(void)
{
    harness_start(QUEUES);
    harness_claims_on();
    const char *a = harness_listed("a", 0, 0, 1), *b = harness_listed("a", 0, 0, 1);
    const char *d = harness_listed("a", 0, 0, 1);
    struct conn *c = harness_consumer("a", 4); /* all three dispatched in one loop turn */
    CHECK(harness_multis() == 1);
    CHECK_STR(harness_multi_ops(0), "delete job, delete job, delete job, create claim");
    CHECK(version_of(0, 0) == 0 && version_of(0, 2) == 0);
    CHECK(harness_state(a) == JS_LOCKING);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 3 && c->jobs[0].attempt == 1 && c->jobs[2].attempt == 1);
    CHECK(harness_state(b) == JS_INFLIGHT);
    harness_unlisted(a); /* our claim deleted it: the mirror's word changes nothing */
    CHECK(harness_state(a) == JS_INFLIGHT);
    struct harness_reply *ra = harness_ack(c, a);
    CHECK_STR(harness_multi_ops(0), "set claim");
    CHECK(version_of(0, 0) == 0);
    struct harness_reply *rb = harness_ack(c, b), *rd = harness_ack(c, d);
    CHECK(harness_multis() == 1); /* they wait for the write on its way, then share one */
    harness_multi_ok(0, 1);
    CHECK_STR(ra->line, "OK");
    CHECK(harness_state(a) == -1 && !rb->done && !rd->done);
    CHECK(harness_multis() == 1);
    CHECK_STR(harness_multi_ops(0), "delete claim");
    CHECK(version_of(0, 0) == 1);
    harness_multi_ok(0, 1);
    CHECK_STR(rb->line, "OK");
    CHECK_STR(rd->line, "OK");
    CHECK(harness_state(b) == -1);
    CHECK(harness_state(d) == -1 && c->c->inflight == 0);
    harness_stop();
}

/* One job of the claim was taken elsewhere (NoNode): it alone is dropped, the others go in
 * a claim of their own; a job locked the version 2 way (NotEmpty) waits on its lock. */
static void test_claim_conflicts(void)
{
    harness_start(QUEUES);
    harness_claims_on();
    const char *a = harness_listed("a", 0, 0, 1), *b = harness_listed("a", 0, 0, 1);
    const char *d = harness_listed("a", 0, 0, 1);
    harness_consumer("a", 4);
    harness_multi_fails(0, 1, ZNONODE);
    CHECK(harness_state(b) == -1);
    CHECK(harness_multis() == 1);
    CHECK_STR(harness_multi_ops(0), "delete job, delete job, create claim");
    harness_multi_fails(0, 0, ZNOTEMPTY);
    CHECK(harness_state(a) == JS_CHECKING);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "exists+watch lock");
    CHECK_STR(harness_multi_ops(0), "delete job, create claim");
    harness_multi_ok(0, 1);
    CHECK(harness_state(d) == JS_INFLIGHT);
    harness_stop();
}

/* A job not put here is read first: its version goes into the delete, its child version
 * counts its deliveries (one before: cversion 4), and a job with children is locked the
 * version 2 way. */
static void test_read_first(void)
{
    harness_start(QUEUES);
    harness_claims_on();
    struct conn *c = harness_consumer("a", 4);
    const char *a = harness_listed("a", 0, 0, 0);
    CHECK(harness_multis() == 0 && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get job");
    harness_get_stat_ok(0, 3, 4, 0);
    CHECK_STR(harness_multi_ops(0), "delete job, create claim");
    CHECK(version_of(0, 0) == 3);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 1 && c->jobs[0].attempt == 2);
    CHECK(harness_state(a) == JS_INFLIGHT);
    const char *b = harness_listed("a", 0, 0, 0);
    harness_get_stat_ok(0, 0, 2, 2); /* lock and owner: a version 2 daemon holds it */
    CHECK(harness_multis() == 0);
    CHECK(harness_state(b) == JS_CHECKING);
    CHECK_STR(harness_call_what(0), "exists+watch lock");
    harness_stop();
}

/* Our put's job made again since (BadVersion): read, then claimed at the version read. */
static void test_made_again(void)
{
    harness_start(QUEUES);
    harness_claims_on();
    struct conn *c = harness_consumer("a", 4);
    harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 0, ZBADVERSION);
    CHECK(harness_multis() == 0 && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get job");
    harness_get_stat_ok(0, 1, 8, 0);
    CHECK(version_of(0, 0) == 1);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 1 && c->jobs[0].attempt == 3);
    harness_stop();
}

/* A nack moves the job in the claim's own write; a lease that runs out makes the job again
 * under its name, its delivery replayed, and it is claimed again at version 1. */
static void test_nack_and_expiry(void)
{
    const char *ids[2];
    struct conn *c = claimed(2, ids);
    const char *a = ids[0], *b = ids[1];
    struct harness_reply *r = harness_nack(c, a, 5000);
    CHECK_STR(harness_multi_ops(0), "set claim, create job2");
    harness_multi_ok(0, 1);
    CHECK_CONTAINS(r->line, "OK a/");
    CHECK(harness_state(a) == -1);
    harness_advance(10001);
    CHECK(c->nexpired == 1);
    CHECK_STR(harness_multi_ops(0), "delete claim, create job, set job, create lock, delete "
                                    "lock, create lock, delete lock");
    CHECK(version_of(0, 0) == 1 && version_of(0, 2) == 0);
    harness_multi_ok(0, 1);
    CHECK(harness_state(b) == JS_READY); /* kept (the same znode); its holder must answer */
    struct conn *c2 = harness_consumer("a", 4);
    CHECK(harness_state(b) == JS_LOCKING); /* claimed again, at version 1, no read */
    CHECK(harness_calls() == 0);
    CHECK_STR(harness_multi_ops(0), "delete job, create claim");
    CHECK(version_of(0, 0) == 1);
    harness_multi_ok(0, 1);
    CHECK(c2->njobs == 1 && c2->jobs[0].attempt == 2);
    harness_stop();
}

/* A nack without a delay in a queue with backoff_min = 0: the job keeps its id (the
 * protocol's promise, as a lock's release keeps it), made again under its name with this
 * delivery replayed, so that the next one is attempt 2. */
static void test_nack_no_backoff_keeps_id(void)
{
    harness_start("[queue a]\nttr = 10s\nmax_attempts = 5\nbackoff_min = 0\nbackoff_max = 0\n");
    harness_claims_on();
    const char *a = harness_listed("a", 0, 0, 1);
    struct conn *c = harness_consumer("a", 4);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 1);
    struct harness_reply *r = harness_nack(c, a, -1);
    CHECK_STR(harness_multi_ops(0), "delete claim, create job, set job, create lock, delete "
                                    "lock, create lock, delete lock"); /* one delivery: 4n */
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(a) == JS_LOCKING); /* the same job, claimed again at once */
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 2 && c->jobs[1].attempt == 2);
    CHECK_STR(c->jobs[1].id, a);
    harness_stop();
}

/* A consumer gone with three claimed jobs of one claim: each is made again under its name
 * with its one delivery replayed, and each comes back as attempt 2 (integration.flow once
 * saw one job of each claim come back as attempt 3). */
static void test_consumer_gone_gives_back(void)
{
    const char *ids[3];
    struct conn *c = claimed(3, ids);
    CHECK(c->njobs == 3);
    harness_consumer_gone(c);
    /* one write of the claim at a time: the first gives back one job, the next the rest */
    CHECK_STR(harness_multi_ops(0), "set claim, create job, set job, create lock, delete lock, "
                                    "create lock, delete lock");
    for (int n = 0; harness_multis() > 0 && n < 4; n++)
        harness_multi_ok(0, 1);
    CHECK(harness_multis() == 0);
    struct conn *c2 = harness_consumer("a", 4);
    CHECK_STR(harness_multi_ops(0), "delete job, delete job, delete job, create claim");
    harness_multi_ok(0, 1);
    CHECK(c2->njobs == 3);
    for (int i = 0; i < c2->njobs; i++)
        CHECK(c2->jobs[i].attempt == 2);
    harness_stop();
}

/* A consumer gone (PAUSE 0), or its queue paused (1), while the claim of its job is on its
 * way: the job was never pushed, so it is given back unrun (made again with only the
 * deliveries before this one) and its next delivery is attempt 1, not 2 (integration.flow:
 * a job given back, claimed again at once for a consumer that closed meanwhile, came back
 * as attempt 3). */
static void given_back_unrun(int pause)
{
    harness_start(QUEUES);
    harness_claims_on();
    const char *a = harness_listed("a", 0, 0, 1);
    struct conn *c = harness_consumer("a", 4);
    CHECK(harness_state(a) == JS_LOCKING);
    if (pause)
        harness_pause("a", 1);
    else
        harness_consumer_gone(c);
    harness_multi_ok(0, 1); /* the claim's answer: nobody to push it to */
    CHECK_STR(harness_multi_ops(0), "delete claim, create job, set job"); /* nothing replayed */
    harness_multi_ok(0, 1);
    if (pause)
        harness_pause("a", 0);
    else
        c = harness_consumer("a", 4);
    if (harness_multis() > 0)
        harness_multi_ok(0, 1);
    CHECK(c->njobs == 1 && c->jobs[0].attempt == 1);
    harness_stop();
}

/* CANCEL of a job this daemon claimed: its znode is gone from the bucket, so the change
 * finds it in the claim: IN_FLIGHT naming this daemon without force=1 (and for a
 * RESCHEDULE); with it, the consumer is told CANCELLED at once, the claim is written
 * without the job, and the job's late ack is told it was cancelled. */
static void test_cancel_claimed_here(void)
{
    const char *ids[2];
    struct conn *c = claimed(2, ids);
    const char *a = ids[0];
    struct harness_reply *r = harness_cancel(a, 0);
    CHECK_STR(harness_multi_ops(0), "delete job");
    while (harness_multis() > 0) /* tried again (a holder may have come and gone) */
        harness_multi_fails(0, 0, ZNONODE);
    CHECK(r->done && strstr(r->line, "IN_FLIGHT") && strstr(r->line, "being processed by"));
    CHECK(harness_multis() == 0 && harness_calls() == 0);
    r = harness_reschedule(a);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get job");
    harness_call_rc(0, ZNONODE);
    CHECK(r->done && strstr(r->line, "IN_FLIGHT"));
    r = harness_cancel(a, 1);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "children job");
    harness_call_rc(0, ZNONODE);
    CHECK(c->ncancelled == 1);
    CHECK_STR(c->cancelled, a);
    CHECK(!r->done);
    CHECK_STR(harness_multi_ops(0), "set claim");
    harness_multi_ok(0, 1);
    CHECK(r->done && strncmp(r->line, "OK", 2) == 0);
    CHECK(harness_state(a) == -1);
    struct harness_reply *ra = harness_ack(c, a);
    CHECK(strstr(ra->line, "LEASE_LOST") && strstr(ra->line, "cancelled"));
    CHECK(harness_state(ids[1]) == JS_INFLIGHT); /* the claim's other job stays held */
    harness_stop();
}

/* A forced cancel whose claim write finds the claim written by someone else: the claim is
 * read again; gone (the job cancelled elsewhere too), the cancel says what it knows. */
static void test_cancel_claimed_claim_changed(void)
{
    const char *ids[1];
    claimed(1, ids);
    struct harness_reply *r = harness_cancel(ids[0], 1);
    harness_call_rc(0, ZNONODE);
    CHECK_STR(harness_multi_ops(0), "delete claim");
    harness_multi_fails(0, 0, ZBADVERSION);
    CHECK(!r->done && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_call_rc(0, ZNONODE);
    CHECK(r->done && strstr(r->line, "UNAVAILABLE") && strstr(r->line, "cancelled"));
    CHECK(harness_state(ids[0]) == -1);
    harness_stop();
}

/* The answer of an ack's write was lost: the claim's version says it was applied. Then
 * a write fails on its version: someone else wrote the claim (a forced cancel through
 * another daemon), so it is read again: b is still in it, and its ack is written again at
 * the version read; later the claim is gone (its last job cancelled elsewhere): the ack of
 * that job is told LEASE_LOST, and the claim is known gone. */
static void test_write_lost_and_claim_changed(void)
{
    const char *ids[3];
    struct conn *c = claimed(3, ids);
    const char *a = ids[0], *b = ids[1];
    struct harness_reply *r = harness_ack(c, a);
    harness_multi_lost(0, ZCONNECTIONLOSS);
    CHECK(!r->done && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_get_written(0, 1);
    CHECK_STR(r->line, "OK");
    r = harness_ack(c, b);
    CHECK_STR(harness_multi_ops(0), "set claim");
    CHECK(version_of(0, 0) == 1);
    harness_multi_fails(0, 0, ZBADVERSION);
    CHECK(!r->done && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_get_claim(0, 2, (const char *const[]){b, ids[2]}, 2);
    CHECK_STR(harness_multi_ops(0), "set claim");
    CHECK(version_of(0, 0) == 2);
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    r = harness_ack(c, ids[2]);
    CHECK_STR(harness_multi_ops(0), "delete claim");
    CHECK(version_of(0, 0) == 3);
    harness_multi_fails(0, 0, ZNONODE);
    harness_call_rc(0, ZNONODE); /* read again: gone */
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK(harness_multis() == 0 && harness_state(ids[2]) == -1);
    harness_stop();
}

/* An ack's write whose answer was lost, and a forced cancel of another job of the claim
 * applied meanwhile: the claim is one version on, but not with our data, so the write was
 * not applied: the claim is read (its data: both acked job a and job b still in it, c
 * cancelled), c is taken out and a's ack is written again at the version read. (Judged by
 * the version alone, a's ack was answered OK though its record stayed.) */
static void test_write_lost_and_cancel_elsewhere(void)
{
    const char *ids[3];
    struct conn *c = claimed(3, ids);
    struct harness_reply *r = harness_ack(c, ids[0]);
    harness_multi_lost(0, ZCONNECTIONLOSS);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_get_claim(0, 1, (const char *const[]){ids[0], ids[1]}, 2);
    CHECK(!r->done);
    CHECK_STR(harness_call_what(0), "get claim"); /* read again, as someone else wrote it */
    harness_get_claim(0, 1, (const char *const[]){ids[0], ids[1]}, 2);
    CHECK(c->ncancelled == 1);
    CHECK_STR(c->cancelled, ids[2]);
    CHECK_STR(harness_multi_ops(0), "set claim");
    CHECK(version_of(0, 0) == 1);
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(ids[1]) == JS_INFLIGHT);
    harness_stop();
}

/* Touched while a write of the claim is on its way: read once that write has ended. */
static void test_poked_while_writing(void)
{
    const char *ids[3];
    struct conn *c = claimed(3, ids);
    struct harness_reply *r = harness_ack(c, ids[0]);
    CHECK_STR(harness_multi_ops(0), "set claim");
    harness_claims_poked();
    CHECK(harness_calls() == 0); /* not now: the write is on its way */
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_get_claim(0, 2, (const char *const[]){ids[2]}, 1);
    CHECK(c->ncancelled == 1);
    CHECK_STR(c->cancelled, ids[1]);
    harness_stop();
}

/* This session's node is touched (a forced cancel through another daemon wrote one of our
 * claims): the claim is read again; the job missing from it was cancelled: its consumer is
 * told CANCELLED, its late ack LEASE_LOST; the others stay held and are acked at the
 * version read. */
static void test_poked_claim_read_again(void)
{
    const char *ids[3];
    struct conn *c = claimed(3, ids);
    harness_claims_poked();
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_get_claim(0, 1, (const char *const[]){ids[0], ids[2]}, 2);
    CHECK(c->ncancelled == 1);
    CHECK_STR(c->cancelled, ids[1]);
    CHECK(harness_state(ids[1]) == -1);
    CHECK(harness_state(ids[0]) == JS_INFLIGHT && harness_state(ids[2]) == JS_INFLIGHT);
    struct harness_reply *r = harness_ack(c, ids[1]);
    CHECK(strstr(r->line, "LEASE_LOST") && strstr(r->line, "cancelled"));
    r = harness_ack(c, ids[0]);
    CHECK_STR(harness_multi_ops(0), "set claim");
    CHECK(version_of(0, 0) == 1);
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    harness_stop();
}

/* A nack's own transaction (the claim's write and the job's move) fails on the claim's
 * version: the claim is read again, and the nack goes again at the version read. */
static void test_settle_write_claim_changed(void)
{
    const char *ids[2];
    struct conn *c = claimed(2, ids);
    struct harness_reply *r = harness_nack(c, ids[0], 5000);
    CHECK_STR(harness_multi_ops(0), "set claim, create job2");
    harness_multi_fails(0, 0, ZBADVERSION);
    CHECK(!r->done && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_get_claim(0, 4, (const char *const[]){ids[0], ids[1]}, 2);
    CHECK_STR(harness_multi_ops(0), "set claim, create job2");
    CHECK(version_of(0, 0) == 4);
    harness_multi_ok(0, 1);
    CHECK_CONTAINS(r->line, "OK a/");
    harness_stop();
}

/* A forced cancel through another daemon took job a out of our claim while its ack (NACK:
 * its nack, whose write waits for the claim to be read again) was on its way: the write
 * fails on the version, the claim is read again without a. The consumer is told that a
 * was cancelled (not that its lock went), and a is not offered again; b stays held. */
static void settle_of_job_cancelled_elsewhere(int nack)
{
    const char *ids[2];
    struct conn *c = claimed(2, ids);
    struct harness_reply *r = nack ? harness_nack(c, ids[0], 5000) : harness_ack(c, ids[0]);
    CHECK_STR(harness_multi_ops(0), nack ? "set claim, create job2" : "set claim");
    harness_multi_fails(0, 0, ZBADVERSION);
    CHECK(!r->done && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_get_claim(0, 4, (const char *const[]){ids[1]}, 1);
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK_CONTAINS(r->line, "cancelled while held");
    CHECK(harness_state(ids[0]) == -1 && harness_multis() == 0);
    CHECK(harness_state(ids[1]) == JS_INFLIGHT);
    harness_stop();
}

/* A nack while an ack's write is on its way waits for it, then writes at the next version. */
static void test_settle_waits_for_write(void)
{
    const char *ids[3];
    struct conn *c = claimed(3, ids);
    const char *a = ids[0], *b = ids[1];
    struct harness_reply *ra = harness_ack(c, a), *rb = harness_nack(c, b, 5000);
    CHECK(harness_multis() == 1);
    CHECK_STR(harness_multi_ops(0), "set claim");
    harness_multi_ok(0, 1);
    CHECK_STR(ra->line, "OK");
    CHECK(harness_multis() == 1 && !rb->done);
    CHECK_STR(harness_multi_ops(0), "set claim, create job2");
    CHECK(version_of(0, 0) == 1);
    harness_multi_ok(0, 1);
    CHECK_CONTAINS(rb->line, "OK a/");
    harness_stop();
}

/* The session ends with jobs claimed: their holders are told, nothing is written, and the
 * acks that waited are answered LEASE_LOST. */
static void test_session_lost(void)
{
    const char *ids[2];
    struct conn *c = claimed(2, ids);
    const char *a = ids[0], *b = ids[1];
    struct harness_reply *r = harness_ack(c, a);
    harness_lost();
    CHECK(harness_state(b) == -1);
    harness_multi_fails(0, -1, ZSESSIONEXPIRED);
    CHECK(!r->done); /* the ack may have been applied: the next session looks */
    harness_new_session(); /* no claims until its node is made (claim_recovery.c) */
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_call_rc(0, ZNONODE); /* recovered, or deleted by the ack... */
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZOK); /* ...recovered: the job is back in its bucket */
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK(harness_state(a) == -1);
    const char *d = harness_listed("a", 0, 0, 1);
    CHECK_STR(harness_multi_ops(harness_multis() - 1), "create lock, create-seq owner");
    CHECK(harness_state(d) == JS_LOCKING);
    harness_stop();
}

/* An ack's write sent as the session ended, its answer lost with it: the next session
 * finds the job's record gone from the claim, the job in no bucket and in no claim: the
 * ack was applied, and is answered OK. */
static void test_session_lost_ack_applied(void)
{
    const char *ids[2];
    struct conn *c = claimed(2, ids);
    struct harness_reply *r = harness_ack(c, ids[0]);
    harness_lost();
    harness_multi_fails(0, -1, ZCONNECTIONLOSS);
    CHECK(!r->done);
    harness_new_session();
    CHECK_STR(harness_call_what(0), "get claim");
    harness_get_claim(0, 1, (const char *const[]){ids[1]}, 1); /* without ids[0] */
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZNONODE);
    CHECK_STR(harness_call_what(0), "children claims");
    harness_call_rc(0, ZNONODE); /* no claim holds it */
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(ids[0]) == -1);
    harness_stop();
}

/* The same for a job on its 9th delivery under its name: a recovery makes it again as
 * a<N> (claim_recovery.c), so the next session looks for it under that name, finds it in
 * its bucket: the ack changed nothing, LEASE_LOST (before: looked for under its old name,
 * judged applied and answered OK, then delivered again). */
static void test_session_lost_ack_renamed(void)
{
    harness_start(TWO_QUEUES); /* b: up to 10 attempts */
    harness_claims_on();
    const char *id = harness_listed("b", 0, 0, 1);
    harness_job(id)->under_name = 8;
    struct conn *c = harness_consumer("b", 4);
    harness_multi_ok(0, 9);
    struct harness_reply *r = harness_ack(c, id);
    harness_lost();
    harness_multi_fails(0, -1, ZCONNECTIONLOSS);
    harness_new_session();
    CHECK_STR(harness_call_what(0), "get claim");
    harness_call_rc(0, ZNONODE); /* recovered */
    CHECK(strncmp(harness_call_what(0), "exists", 6) == 0);
    const char *path = harness_call_path(0), *tail = path + strlen(path) - 3;
    CHECK(strlen(path) > 3 && strcmp(tail, "-a9") == 0);
    harness_call_rc(0, ZOK); /* made again under that name */
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    harness_stop();
}

/* SUSPENDED and back with the same session: a claimed job stays held (it has no owner node
 * to look for: looking would revoke it); an ack asked meanwhile goes once connected. */
static void test_reconnected(void)
{
    const char *ids[2];
    struct conn *c = claimed(2, ids);
    const char *a = ids[0], *b = ids[1];
    harness_suspended();
    struct harness_reply *r = harness_ack(c, a);
    CHECK(harness_multis() == 0 && !r->done);
    harness_reconnected();
    CHECK(harness_calls() == 0);
    CHECK(harness_state(b) == JS_INFLIGHT);
    CHECK(c->ncancelled == 0 && c->nexpired == 0);
    CHECK_STR(harness_multi_ops(0), "set claim");
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    harness_stop();
}

/* An ack's write and then its look-up both lose their answers: nothing is decided (no
 * LEASE_LOST, the claim still writing: the next ack waits); once connected the claim's
 * version says it was applied. The same for a claim multi: its jobs are pushed, not
 * claimed again. */
static void test_unknown_until_connected(void)
{
    const char *ids[3];
    struct conn *c = claimed(3, ids);
    struct harness_reply *r = harness_ack(c, ids[0]);
    harness_multi_lost(0, ZCONNECTIONLOSS);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_call_rc(0, ZCONNECTIONLOSS);
    CHECK(!r->done && harness_calls() == 0);
    struct harness_reply *r2 = harness_ack(c, ids[1]);
    CHECK(harness_multis() == 0 && !r2->done); /* behind the write of unknown outcome */
    harness_suspended();
    harness_reconnected();
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get claim");
    harness_get_written(0, 1);
    CHECK_STR(r->line, "OK");
    CHECK_STR(harness_multi_ops(0), "set claim");
    CHECK(version_of(0, 0) == 1);
    harness_multi_ok(0, 1);
    CHECK_STR(r2->line, "OK");
    harness_stop();

    harness_start(QUEUES);
    harness_claims_on();
    const char *a = harness_listed("a", 0, 0, 1);
    c = harness_consumer("a", 4);
    harness_multi_lost(0, ZCONNECTIONLOSS);
    harness_call_rc(0, ZCONNECTIONLOSS);
    CHECK(harness_state(a) == JS_LOCKING && harness_multis() == 0 && harness_calls() == 0);
    harness_suspended();
    harness_reconnected();
    harness_exists_version(0, 0); /* applied */
    CHECK(harness_state(a) == JS_INFLIGHT && c->njobs == 1 && harness_multis() == 0);
    harness_stop();
}

/* With every claim multi allowed on its way (16), jobs falling due wait and go together,
 * as one claim, at the next answer; one job at a time goes at once while there is room. */
static void test_takes_merge_while_full(void)
{
    harness_start(QUEUES);
    harness_claims_on();
    struct conn *c = harness_consumer("a", 40);
    for (int i = 0; i < 16; i++)
        harness_listed("a", 0, 0, 1); /* one claim multi each: nothing waits for a batch */
    CHECK(harness_multis() == 16);
    CHECK_STR(harness_multi_ops(15), "delete job, create claim");
    for (int i = 0; i < 3; i++)
        harness_listed("a", 0, 0, 1);
    CHECK(harness_multis() == 16); /* held: every multi allowed is out */
    harness_multi_ok(0, 1);
    CHECK(harness_multis() == 16);
    CHECK_STR(harness_multi_ops(15), "delete job, delete job, delete job, create claim");
    CHECK(c->njobs == 1);
    harness_stop();
}

/* Takes of two queues, interleaved in one loop turn (held while every multi is out): one
 * claim per queue, each with its own queue's jobs in the order they were taken. */
static void test_takes_grouped_by_queue(void)
{
    harness_start(TWO_QUEUES);
    harness_claims_on();
    harness_consumer("a", 40);
    harness_consumer("b", 40);
    for (int i = 0; i < 16; i++)
        harness_listed("a", 0, 0, 1);
    CHECK(harness_multis() == 16);
    const char *ids[4];
    for (int i = 0; i < 4; i++)
        ids[i] = harness_listed(i % 2 ? "b" : "a", 0, 0, 1);
    CHECK(harness_multis() == 16);
    harness_multi_ok(0, 1);
    CHECK(harness_multis() == 16);
    const struct fake_multi *m = fake_zk_multi(harness_zs(), 15);
    CHECK_STR(harness_multi_ops(15), "delete job, delete job, create claim, "
                                     "delete job, delete job, create claim");
    /* each claim: its jobs, then its node in the same queue's claims/ */
    const char *order[2][2] = {{ids[0], ids[2]}, {ids[1], ids[3]}};
    for (int c = 0; m && m->nops == 6 && c < 2; c++) {
        const char *q = c == 0 ? m->paths[0] : m->paths[3];
        int a_first = strstr(q, "/queues/a/") != NULL;
        for (int j = 0; j < 2; j++) {
            const char *id = order[a_first ? 0 : 1][j], *slash = strchr(id, '/');
            CHECK(strstr(m->paths[3 * c + j], slash) != NULL);
        }
        CHECK(strstr(m->paths[3 * c + 2], a_first ? "/queues/a/claims/" : "/queues/b/claims/"));
    }
    CHECK(m && m->nops == 6 &&
          !strstr(m->paths[0], "/queues/a/") != !strstr(m->paths[3], "/queues/a/"));
    harness_stop();
}

/* A queue's first claims find no claims/ directory: every claim multi on its way (16, one
 * job each, the jobs due together with priorities 1..16) fails its create with NoNode.
 * Each must make the directory (or wait for the one asked) and be taken again at once, so
 * that the consumer gets all 16 now, in priority order: none is put off for ZK_RETRY_MS
 * behind the jobs that fall due after it. */
static void test_claims_dir_missing_keeps_order(void)
{
    harness_start(QUEUES);
    harness_claims_on();
    struct conn *c = harness_consumer("a", 40);
    const char *ids[16];
    for (int i = 0; i < 16; i++)
        ids[i] = harness_listed("a", 0, (uint32_t)(i + 1), 1);
    CHECK(harness_multis() == 16);
    for (int i = 0; i < 16; i++)
        harness_multi_fails(0, 1, ZNONODE); /* the create of claims/<session>-<n> */
    int waiting = 0;
    for (int i = 0; i < 16; i++)
        waiting += harness_state(ids[i]) != JS_LOCKING;
    CHECK(waiting == 0); /* else: "claiming it failed: api error; retrying in 1000 ms" */
    while (harness_calls() > 0 && strncmp(harness_call_what(0), "parents", 7) == 0)
        harness_call_rc(0, ZOK);
    while (harness_multis() > 0)
        harness_multi_ok(0, 1);
    CHECK(c->njobs == 16);
    for (int i = 0; i < c->njobs && i < 16; i++)
        CHECK_STR(c->jobs[i].id, ids[i]); /* pushed in priority order */
    harness_stop();
}

int main(void)
{
    test_claims_dir_missing_keeps_order();
    test_nack_no_backoff_keeps_id();
    test_cancel_claimed_here();
    test_cancel_claimed_claim_changed();
    test_poked_claim_read_again();
    test_write_lost_and_cancel_elsewhere();
    test_poked_while_writing();
    test_settle_write_claim_changed();
    settle_of_job_cancelled_elsewhere(0);
    settle_of_job_cancelled_elsewhere(1);
    test_takes_grouped_by_queue();
    test_takes_merge_while_full();
    test_unknown_until_connected();
    test_reconnected();
    test_claim_and_acks();
    test_claim_conflicts();
    test_read_first();
    test_made_again();
    test_nack_and_expiry();
    test_write_lost_and_claim_changed();
    test_settle_waits_for_write();
    test_session_lost();
    test_session_lost_ack_applied();
    test_session_lost_ack_renamed();
    test_consumer_gone_gives_back();
    given_back_unrun(0);
    given_back_unrun(1);
    return check_report("engine_claim");
}
