/* Leases (src/daemon/engine/lease.c) on the test clock: the DEADLINE notice at
 * ttr - min(ttr/5, 1 s), expiry (EXPIRED, release, delivered again with attempt + 1),
 * TOUCH, leases standing still while SUSPENDED, a lock found gone after a reconnection,
 * a late ACK after the expiry, and a settle answered after the lease ran out. */
#include "check.h"
#include "engine_harness.h"

#define QUEUES "[queue a]\nttr = 10s\n[queue b]\nttr = 3s\n"

/* The notice comes when a fifth of the lease is left, at most 1 s. */
static void test_deadline_notice(void)
{
    harness_start(QUEUES);
    struct conn *ca = harness_consumer("a", 1), *cb = harness_consumer("b", 1);
    const char *a = harness_delivered("a"), *b = harness_delivered("b");
    harness_advance(2399);
    CHECK(cb->ndeadlines == 0);
    harness_advance(1); /* 3 s - 600 ms */
    CHECK(cb->ndeadlines == 1);
    CHECK_STR(cb->deadline, b);
    CHECK(cb->deadline_left == 600);
    harness_advance(8999 - 2400);
    CHECK(ca->ndeadlines == 0);
    harness_advance(1); /* 10 s - 1 s */
    CHECK(ca->ndeadlines == 1);
    CHECK_STR(ca->deadline, a);
    CHECK(ca->deadline_left == 1000);
    CHECK(harness_state(a) == JS_INFLIGHT);
    harness_stop();
}

/* At the lease's end: EXPIRED, the lock released, and the job goes to another consumer
 * (the first keeps its slot until it answers) as attempt 2. */
static void test_expiry(void)
{
    harness_start(QUEUES);
    struct conn *c1 = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct conn *c2 = harness_consumer("a", 1);
    harness_advance(9999);
    CHECK(c1->nexpired == 0 && harness_multis() == 0);
    harness_advance(1);
    CHECK(c1->nexpired == 1);
    CHECK_STR(c1->expired, id);
    CHECK(harness_state(id) == JS_SETTLING);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock");
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner");
    harness_multi_ok(0, 2);
    CHECK(harness_state(id) == JS_INFLIGHT);
    CHECK(c1->njobs == 1 && c2->njobs == 1);
    CHECK(c2->jobs[0].attempt == 2);
    CHECK(c1->c->revoked == 1); /* its slot, until it answers */
    struct harness_reply *r = harness_ack(c1, id);
    CHECK(r->done == 1);
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK_CONTAINS(r->line, "lease expired");
    CHECK(c1->c->revoked == 0 && harness_multis() == 0);
    harness_stop();
}

/* TOUCH: a new lease from now, and a new notice before its end. */
static void test_touch(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_advance(9500); /* past the notice */
    CHECK(c->ndeadlines == 1);
    struct harness_reply *r = harness_touch(c, id);
    CHECK(r->done == 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == JS_INFLIGHT && harness_multis() == 0);
    harness_advance(8999);
    CHECK(c->ndeadlines == 1 && c->nexpired == 0);
    harness_advance(1);
    CHECK(c->ndeadlines == 2 && c->deadline_left == 1000);
    harness_advance(999);
    CHECK(c->nexpired == 0);
    harness_advance(1);
    CHECK(c->nexpired == 1);
    harness_stop();
}

/* SUSPENDED: the lease stands still; the same session back, it ends as late as the time
 * away, and our lock is checked (it is there). */
static void test_suspended(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_advance(5000);
    harness_suspended();
    harness_advance(20000);
    CHECK(c->ndeadlines == 0 && c->nexpired == 0);
    CHECK(harness_state(id) == JS_INFLIGHT);
    harness_reconnected();
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "exists owner");
    harness_exists_ok(0, harness_session());
    CHECK(harness_state(id) == JS_INFLIGHT);
    harness_advance(3999);
    CHECK(c->ndeadlines == 0);
    harness_advance(1);
    CHECK(c->ndeadlines == 1);
    harness_advance(1000);
    CHECK(c->nexpired == 1);
    harness_stop();
}

/* Our owner node vanished while we were away (deleted by hand): the holder is told, and
 * the job is offered again at once. */
static void test_lock_gone_on_reconnect(void)
{
    harness_start(QUEUES);
    struct conn *c1 = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct conn *c2 = harness_consumer("a", 1);
    harness_suspended();
    harness_reconnected();
    harness_call_rc(0, ZNONODE);
    CHECK(c1->nexpired == 1);
    CHECK(harness_state(id) == JS_LOCKING);
    harness_multi_ok(0, 2);
    CHECK(c2->njobs == 1 && c2->jobs[0].attempt == 2);
    struct harness_reply *r = harness_touch(c1, id);
    CHECK_CONTAINS(r->line, "its lock vanished");
    harness_stop();
}

/* An ACK whose answer comes after the lease's end, and fails: the lease is not renewed by
 * it, the job expires at once. */
static void test_settle_answered_late(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_advance(9500);
    struct harness_reply *r = harness_ack(c, id);
    CHECK(harness_state(id) == JS_SETTLING);
    harness_advance(2000); /* past the lease: a settle in flight does not expire */
    CHECK(c->nexpired == 0 && harness_multis() == 1);
    harness_multi_fails(0, 0, ZINVALIDACL); /* refused: known not applied */
    CHECK(r->done == 1);
    CHECK_CONTAINS(r->line, "UNAVAILABLE");
    harness_advance(0);
    CHECK(c->nexpired == 1);
    CHECK(harness_state(id) == JS_SETTLING);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock");
    harness_stop();
}

int main(void)
{
    test_deadline_notice();
    test_expiry();
    test_touch();
    test_suspended();
    test_lock_gone_on_reconnect();
    test_settle_answered_late();
    return check_report("unit.engine_lease");
}
