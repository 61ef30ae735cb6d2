/* Session changes as session.c tells the engine: LOST takes every lock (holders told,
 * jobs forgotten, delivered again by the next session as attempt + 1), and what was in
 * flight is judged by its late answer; acks asked while SUSPENDED wait for the same session
 * or fail with a new one; an ack whose answer was lost as the session broke is looked up by
 * the next session; nothing is dispatched while SUSPENDED. */
#include "check.h"
#include "engine_harness.h"

#define QUEUES "[queue a]\nttr = 10s\n"

/* The new session's mirror lists job ID again: locked, its payload read (the new session
 * has none in memory), pushed to C as its second delivery. */
static void redelivered(struct conn *c, const char *id)
{
    harness_listed_again(id);
    CHECK(harness_state(id) == JS_LOCKING);
    harness_multi_ok(0, 2);
    CHECK_STR(harness_call_what(0), "get job");
    harness_get_ok(0);
    CHECK(c->njobs == 2 && c->jobs[1].attempt == 2);
}

/* LOST with a job held: EXPIRED now, the late ACK told why, and the new session's listing
 * delivers it again as attempt 2. */
static void test_lost_held(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_lost();
    CHECK(c->nexpired == 1);
    CHECK_STR(c->expired, id);
    CHECK(harness_state(id) == -1);
    struct harness_reply *r = harness_ack(c, id);
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK_CONTAINS(r->line, "session was lost");
    CHECK(harness_multis() == 0);
    harness_new_session();
    redelivered(c, id);
    harness_stop();
}

/* LOST with a lock in flight: its late answer (session expired) frees the job, no push. */
static void test_lost_locking(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    harness_lost();
    CHECK(harness_state(id) == JS_LOCKING); /* its call decides */
    CHECK(c->c->inflight == 0);
    harness_multi_lost(0, ZSESSIONEXPIRED);
    CHECK(harness_state(id) == -1 && c->njobs == 0);
    harness_stop();
}

/* LOST with an ACK in flight: answered LEASE_LOST by its late answer, the job freed. */
static void test_lost_settling(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct harness_reply *r = harness_ack(c, id);
    harness_lost();
    CHECK(harness_state(id) == JS_SETTLING && !r->done);
    harness_multi_lost(0, ZSESSIONEXPIRED);
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK(harness_state(id) == -1);
    CHECK(c->c->inflight == 0 && c->c->revoked == 0);
    harness_stop();
}

/* An ACK while SUSPENDED waits; the same session back, it is sent (keep, then settle). */
static void test_ack_held_resumed(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_suspended();
    struct harness_reply *r = harness_ack(c, id);
    CHECK(harness_state(id) == JS_SETTLING && !r->done && harness_multis() == 0);
    harness_reconnected();
    CHECK(harness_calls() == 0); /* no lock of a held job to check */
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job");
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == -1);
    harness_stop();
}

/* An ACK held while SUSPENDED, then LOST: LEASE_LOST, nothing sent. */
static void test_ack_held_lost(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_suspended();
    struct harness_reply *r = harness_ack(c, id);
    harness_lost();
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK(harness_state(id) == -1);
    harness_new_session();
    CHECK(harness_multis() == 0 && harness_calls() == 0);
    harness_stop();
}

/* The ACK's answer was lost as the connection broke, and the session with it: the next
 * session looks at the job. Gone: the ack was applied, OK. */
static void test_unknown_applied(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct harness_reply *r = harness_ack(c, id);
    harness_suspended();
    harness_multi_lost(0, ZCONNECTIONLOSS);
    CHECK(harness_state(id) == JS_SETTLING && harness_calls() == 0 && !r->done);
    harness_lost();
    CHECK(!r->done && harness_state(id) == JS_SETTLING);
    harness_new_session();
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZNONODE);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == -1);
    harness_stop();
}

/* The same, the job still there: not applied; LEASE_LOST, and it is delivered again. */
static void test_unknown_not_applied(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct harness_reply *r = harness_ack(c, id);
    harness_suspended();
    harness_multi_lost(0, ZCONNECTIONLOSS);
    harness_lost();
    harness_new_session();
    harness_call_rc(0, ZOK);
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK_CONTAINS(r->line, "changed nothing");
    CHECK(harness_state(id) == -1);
    redelivered(c, id);
    harness_stop();
}

/* SUSPENDED: due jobs wait READY; locked once the session is back. */
static void test_no_dispatch_suspended(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 1);
    harness_suspended();
    const char *id = harness_listed("a", 0, 0, 1);
    harness_advance(5000);
    CHECK(harness_state(id) == JS_READY && harness_multis() == 0);
    harness_reconnected();
    CHECK(harness_state(id) == JS_LOCKING && harness_multis() == 1);
    harness_stop();
}

int main(void)
{
    test_lost_held();
    test_lost_locking();
    test_lost_settling();
    test_ack_held_resumed();
    test_ack_held_lost();
    test_unknown_applied();
    test_unknown_not_applied();
    test_no_dispatch_suspended();
    return check_report("unit.engine_session");
}
