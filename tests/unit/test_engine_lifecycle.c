/* The life cycle's table (docs/architecture.md, "The life cycle of a job"; lifecycle.c),
 * one test per row: each drives a job through the row's event from every listed state the
 * native engine reaches on demand, and checks that the event was taken from that state
 * (harness_saw), where the job went and what was sent to ZooKeeper. Not reached here: due
 * from CHECKING; check from ARMED, READY and HELD; park from INFLIGHT, READY, DELAYED and
 * LOCKING (Curator's paths, or the release of an uncertain lock outside a holder). */
#include "check.h"
#include "engine_harness.h"

#define QUEUES "[queue a]\nttr = 10s\nmax_attempts = 3\n"
#define LOCK_OPS "create lock, create-seq owner"
#define RELEASE_OPS "delete owner, delete lock"
/* a lock taken ahead given back unrun: the job created again, no attempt spent */
#define GIVE_BACK_OPS "delete owner, delete lock, delete job, create job"
#define ACK_OPS "delete owner, delete lock, delete job"

/* A job due in 30 ms with a consumer that has room: locked ahead, then ARMED. */
static const char *armed(void)
{
    const char *id = harness_listed("a", 30, 0, 1);
    harness_multi_ok(0, 1);
    return id;
}

/* A delivered job whose ack's answer was lost: its lock being looked at (SETTLING). */
static const char *ack_lost(struct conn *c)
{
    const char *id = harness_delivered("a");
    harness_ack(c, id);
    harness_multi_lost(0, ZCONNECTIONLOSS);
    return id;
}

/* wait: into the delay heap. */
static void test_row_wait(void)
{
    harness_start(QUEUES);
    const char *later = harness_listed("a", 60000, 0, 1); /* HELD: made, due later */
    CHECK(harness_saw(later, JS_HELD, JE_WAIT) == 1 && harness_state(later) == JS_DELAYED);
    harness_consumer("a", 1);
    const char *failed = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 0, ZINVALIDACL); /* LOCKING: the lock failed */
    CHECK(harness_saw(failed, JS_LOCKING, JE_WAIT) == 1);
    CHECK(harness_state(failed) == JS_DELAYED && harness_multis() == 0);
    harness_stop();

    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *unwatched = harness_listed("a", 0, 0, 1);
    fake_zk_refuse(harness_zs(), ZCONNECTIONLOSS);
    harness_multi_fails(0, 0, ZNODEEXISTS); /* CHECKING: its watch could not be sent */
    fake_zk_refuse(harness_zs(), ZOK);
    CHECK(harness_saw(unwatched, JS_CHECKING, JE_WAIT) == 1);
    CHECK(harness_state(unwatched) == JS_DELAYED);
    harness_stop();

    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *ahead = armed();
    harness_pause("a", 1);
    harness_multi_ok(0, 1); /* SETTLING: a lock taken ahead given back before its time */
    CHECK(harness_saw(ahead, JS_SETTLING, JE_WAIT) == 1 && harness_state(ahead) == JS_DELAYED);
    harness_stop();
}

/* due: into the ready heap. */
static void test_row_due(void)
{
    harness_start(QUEUES);
    const char *now = harness_listed("a", 0, 0, 1), *later = harness_listed("a", 5000, 0, 1);
    CHECK(harness_saw(now, JS_HELD, JE_DUE) == 1 && harness_state(now) == JS_READY);
    harness_advance(5000);
    CHECK(harness_saw(later, JS_DELAYED, JE_DUE) == 1 && harness_state(later) == JS_READY);
    CHECK(harness_multis() == 0); /* no consumer */
    harness_stop();

    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *ahead = armed();
    harness_advance(30);
    CHECK(harness_saw(ahead, JS_ARMED, JE_DUE) == 1 && harness_state(ahead) == JS_INFLIGHT);
    harness_consumer_gone(c);
    harness_multi_ok(0, 1); /* SETTLING: released, due */
    CHECK(harness_saw(ahead, JS_SETTLING, JE_DUE) == 1 && harness_state(ahead) == JS_READY);
    harness_stop();

    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *late = harness_listed("a", 30, 0, 1);
    harness_advance(40);
    harness_multi_ok(0, 1); /* LOCKING: locked ahead, answered after its due time */
    CHECK(harness_saw(late, JS_LOCKING, JE_DUE) == 1 && harness_state(late) == JS_INFLIGHT);
    harness_suspended();
    harness_reconnected();
    harness_call_rc(0, ZNONODE); /* INFLIGHT: its lock vanished while we were away */
    CHECK(harness_saw(late, JS_INFLIGHT, JE_DUE) == 1 && harness_state(late) == JS_READY);
    harness_stop();
}

/* lock: the lock transaction is sent, or a lock taken ahead gets its consumer. */
static void test_row_lock(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *ready = harness_listed("a", 0, 0, 1);
    CHECK(harness_saw(ready, JS_READY, JE_LOCK) == 1 && harness_state(ready) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), LOCK_OPS);
    harness_stop();

    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *soon = harness_listed("a", 30, 0, 1);
    CHECK(harness_saw(soon, JS_DELAYED, JE_LOCK) == 1 && harness_state(soon) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), LOCK_OPS);
    harness_multi_ok(0, 1);
    harness_advance(30); /* due: READY, then only the push */
    CHECK(harness_saw(soon, JS_READY, JE_LOCK) == 1 && harness_multis() == 0);
    harness_stop();
}

/* arm: locked ahead of its due time, nothing sent. */
static void test_row_arm(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *id = armed();
    CHECK(harness_saw(id, JS_LOCKING, JE_ARM) == 1 && harness_state(id) == JS_ARMED);
    CHECK(harness_multis() == 0 && harness_calls() == 0);
    harness_stop();
}

/* deliver: pushed, or its lease renewed, nothing sent. */
static void test_row_deliver(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    CHECK(harness_saw(id, JS_LOCKING, JE_DELIVER) == 1 && harness_state(id) == JS_INFLIGHT);
    CHECK(c->njobs == 1 && harness_multis() == 0);
    harness_touch(c, id);
    CHECK(harness_saw(id, JS_INFLIGHT, JE_DELIVER) == 1 && harness_multis() == 0);
    harness_stop();

    harness_start(QUEUES);
    c = harness_consumer("a", 1);
    id = ack_lost(c);
    harness_exists_ok(0, harness_session()); /* SETTLING: our lock, the ack not applied */
    CHECK(harness_saw(id, JS_SETTLING, JE_DELIVER) == 1 && harness_state(id) == JS_INFLIGHT);
    harness_stop();
}

/* settle: an ack, nack, release, dead-lettering or a read that verifies one. */
static void test_row_settle(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *held = harness_delivered("a");
    harness_ack(c, held);
    CHECK(harness_saw(held, JS_INFLIGHT, JE_SETTLE) == 1 && harness_state(held) == JS_SETTLING);
    CHECK_STR(harness_multi_ops(0), ACK_OPS);
    harness_multi_ok(0, 1);
    const char *buried = harness_listed("a", 0, 0, 1);
    harness_multi_ok(0, 4); /* LOCKING: past max_attempts */
    CHECK(harness_saw(buried, JS_LOCKING, JE_SETTLE) == 1);
    CHECK_STR(harness_multi_ops(0), ACK_OPS ", create dead");
    harness_multi_ok(0, 1);
    const char *lost = ack_lost(c); /* SETTLING: its lost answer looked up */
    CHECK(harness_saw(lost, JS_SETTLING, JE_SETTLE) == 1);
    CHECK_STR(harness_call_what(0), "exists lock");
    harness_stop();

    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *ahead = armed();
    const char *busy = harness_delivered("a");
    const char *ready = harness_listed("a", 40, 0, 1); /* no room: not locked ahead */
    harness_advance(40);
    CHECK(harness_state(ahead) == JS_READY && harness_state(ready) == JS_READY);
    harness_pause("a", 1);
    CHECK(harness_saw(ahead, JS_READY, JE_SETTLE) == 1); /* READY: locked ahead, given back */
    CHECK(harness_saw(ready, JS_READY, JE_SETTLE) == 0 && harness_state(busy) == JS_INFLIGHT);
    CHECK(harness_multis() == 1);
    CHECK_STR(harness_multi_ops(0), GIVE_BACK_OPS);
    harness_stop();

    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *armed_job = armed();
    harness_pause("a", 1);
    CHECK(harness_saw(armed_job, JS_ARMED, JE_SETTLE) == 1);
    CHECK_STR(harness_multi_ops(0), GIVE_BACK_OPS);
    harness_stop();

    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *ours = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 0, ZNODEEXISTS);
    harness_exists_ok(0, harness_session()); /* HELD: the lock is ours, from a lost answer */
    CHECK(harness_saw(ours, JS_HELD, JE_SETTLE) == 1 && harness_state(ours) == JS_SETTLING);
    CHECK_STR(harness_call_what(0), "children job");
    harness_stop();
}

/* keep: a settle held over a disconnection goes back to its holder, then is sent. */
static void test_row_keep(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_suspended();
    harness_ack(c, id);
    CHECK(harness_saw(id, JS_SETTLING, JE_KEEP) == 0 && harness_multis() == 0);
    harness_reconnected();
    CHECK(harness_saw(id, JS_SETTLING, JE_KEEP) == 1);
    CHECK(harness_saw(id, JS_INFLIGHT, JE_SETTLE) == 2 && harness_state(id) == JS_SETTLING);
    CHECK_STR(harness_multi_ops(0), ACK_OPS);
    harness_stop();
}

/* check: the lock may be another's: exists with a watch. */
static void test_row_check(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *other = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 0, ZNODEEXISTS); /* LOCKING: another daemon holds it */
    CHECK(harness_saw(other, JS_LOCKING, JE_CHECK) == 1 && harness_state(other) == JS_CHECKING);
    CHECK_STR(harness_call_what(0), "exists+watch lock");
    harness_stop();

    harness_start(QUEUES);
    c = harness_consumer("a", 1);
    const char *unsure = ack_lost(c);
    harness_call_rc(0, ZSYSTEMERROR); /* still unknown (not the connection): held, uncertain */
    CHECK(harness_state(unsure) == JS_INFLIGHT);
    harness_consumer_gone(c); /* INFLIGHT: its release looks at the lock first */
    CHECK(harness_saw(unsure, JS_INFLIGHT, JE_CHECK) == 1);
    CHECK(harness_state(unsure) == JS_CHECKING && harness_multis() == 0);
    CHECK_STR(harness_call_what(0), "exists+watch lock");
    harness_stop();
}

/* park: no heap, no call. */
static void test_row_park(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 0, ZNODEEXISTS);
    harness_exists_ok(0, harness_session() + 1); /* CHECKING: another's lock stands */
    CHECK(harness_saw(id, JS_CHECKING, JE_PARK) == 1 && harness_state(id) == JS_HELD);
    CHECK(harness_multis() == 0 && harness_calls() == 0);
    harness_stop();

    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    id = harness_delivered("a");
    harness_suspended();
    harness_ack(c, id);
    harness_lost(); /* SETTLING: the held ack fails with the session */
    CHECK(harness_saw(id, JS_SETTLING, JE_PARK) == 1 && harness_state(id) == -1);
    harness_stop();
}

int main(void)
{
    test_row_wait();
    test_row_due();
    test_row_lock();
    test_row_arm();
    test_row_deliver();
    test_row_settle();
    test_row_keep();
    test_row_check();
    test_row_park();
    return check_report("unit.engine_lifecycle");
}
