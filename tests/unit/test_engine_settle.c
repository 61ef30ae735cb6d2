/* ACK and NACK (src/daemon/engine/settle.c) over the scripted store: each transaction's
 * operations, each failure of it (NoNode: cancelled or our lock gone; BadVersion; a lost
 * answer verified by reads, and by reads again when their own answers are lost), the nack's move, back-off and plain release, max_attempts
 * (dead letters at a nack and at delivery), NACK unrun=1, a consumer that leaves, and a
 * held job cancelled (gone from its listing and from ZooKeeper). */
#include "check.h"
#include "engine_harness.h"
#include "consumers.h"
#include "settle.h"

#define QUEUES "[queue a]\nttr = 10s\nmax_attempts = 3\nbackoff_min = 1s\nbackoff_max = 3s\n" \
               "backoff_jitter = 0\n[queue r]\nbackoff_min = 0\nbackoff_max = 0\n"

/* The due time of the job named by the first word after "OK " in LINE. */
static int64_t due_of_reply(const char *line)
{
    char id[LAYOUT_ID_MAX + 1], queue[QUEUE_NAME_MAX + 1];
    struct job_name jn;
    if (sscanf(line, "OK %200s", id) != 1 || layout_parse_id(id, queue, sizeof queue, &jn) != 0)
        return -1;
    return (int64_t)jn.due_ms;
}

static void test_ack(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct harness_reply *r = harness_ack(c, id);
    CHECK(harness_state(id) == JS_SETTLING && !r->done);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job");
    harness_multi_ok(0, 1);
    CHECK(r->done == 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == -1);
    CHECK(c->c->inflight == 0);
    r = harness_ack(c, id);
    CHECK_CONTAINS(r->line, "NOT_FOUND");
    harness_stop();
}

/* The consumer's answer frees its slot as it arrives (issue 43): with inflight=1 the next
 * job is locked while the ack is applied; an ack that fails with the job still held takes
 * its slot again, so the consumer is over its inflight until it answers. */
static void test_ack_frees_slot(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    const char *next = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(next) == JS_READY); /* no room: one held, inflight 1 */
    CHECK(harness_multis() == 0);
    struct harness_reply *r = harness_ack(c, id);
    harness_turn();
    CHECK(harness_state(id) == JS_SETTLING && !r->done && c->c->settling == 1);
    CHECK(harness_state(next) == JS_LOCKING && harness_multis() == 2);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job");
    harness_multi_fails(0, 0, ZMARSHALLINGERROR); /* not applied: still held */
    CHECK_CONTAINS(r->line, "UNAVAILABLE");
    CHECK(harness_state(id) == JS_INFLIGHT && c->c->settling == 0);
    CHECK(harness_multis() == 1);
    harness_multi_ok(0, 1); /* the next job's lock */
    CHECK(harness_state(next) == JS_INFLIGHT && c->c->inflight == 2);
    CHECK(!consumer_has_room(c->c));
    r = harness_ack(c, id); /* answered again: applied this time */
    harness_multi_ok(harness_multis() - 1, 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == -1 && c->c->inflight == 1 && c->c->settling == 0);
    CHECK(!consumer_has_room(c->c));
    harness_stop();
}

/* NoNode on our owner node, and the job gone too: cancelled while held (CANCEL force=1). */
static void test_ack_cancelled(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct harness_reply *r = harness_ack(c, id);
    harness_multi_fails(0, 0, ZNONODE);
    CHECK(harness_state(id) == JS_SETTLING && !r->done);
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZNONODE);
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK_CONTAINS(r->line, "cancelled");
    CHECK(harness_state(id) == -1 && c->c->inflight == 0);
    harness_stop();
}

/* NoNode on our owner node, the job still there: our lock went; delivered again. */
static void test_ack_lock_gone(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct harness_reply *r = harness_ack(c, id);
    harness_multi_fails(0, 0, ZNONODE);
    harness_call_rc(0, ZOK);
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK_CONTAINS(r->line, "lease lost");
    CHECK(harness_state(id) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner");
    harness_stop();
}

/* BadVersion (or NotEmpty: another holder's owner node): the lease is lost. */
static void test_ack_badversion(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct harness_reply *r = harness_ack(c, id);
    harness_multi_fails(0, 2, ZBADVERSION);
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK(harness_calls() == 0);
    CHECK(harness_state(id) == JS_LOCKING);
    harness_stop();
}

/* A started harness, a delivered job (*ID) acked by its consumer (*C), the ack's answer lost
 * with RC: the lock is being looked at, the consumer not answered yet. The ack's reply. */
static struct harness_reply *ack_answer_lost(int rc, struct conn **c, const char **id)
{
    harness_start(QUEUES);
    *c = harness_consumer("a", 1);
    *id = harness_delivered("a");
    struct harness_reply *r = harness_ack(*c, *id);
    harness_multi_lost(0, rc);
    CHECK(harness_state(*id) == JS_SETTLING && !r->done);
    CHECK_STR(harness_call_what(0), "exists lock");
    return r;
}

/* The answer was lost: the lock is looked at, then the job. Both gone: it was applied. */
static void test_ack_lost_applied(void)
{
    struct conn *c;
    const char *id;
    struct harness_reply *r = ack_answer_lost(ZCONNECTIONLOSS, &c, &id);
    harness_call_rc(0, ZNONODE);
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZNONODE);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == -1);
    harness_stop();
}

/* The answer was lost, and so was the look at the lock (the connection broke under both,
 * cluster.short once): the outcome is still unknown, so the consumer is not answered. The
 * lock is looked at again: at once while the loop still thinks it connected, else once the
 * connection is back. There the ack was applied: OK, the job gone. */
static void test_ack_lost_verify_lost(void)
{
    struct conn *c;
    const char *id;
    struct harness_reply *r = ack_answer_lost(ZCONNECTIONLOSS, &c, &id);
    harness_call_rc(0, ZCONNECTIONLOSS);
    CHECK(!r->done && harness_state(id) == JS_SETTLING);
    CHECK_STR(harness_call_what(0), "exists lock"); /* again: connected, as far as we know */
    harness_suspended();
    harness_call_rc(0, ZCONNECTIONLOSS);
    CHECK(!r->done && harness_state(id) == JS_SETTLING && harness_calls() == 0);
    harness_reconnected();
    CHECK_STR(harness_call_what(0), "exists lock");
    harness_call_rc(0, ZNONODE);
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZCONNECTIONLOSS); /* the look at the job too */
    CHECK(!r->done);
    CHECK_STR(harness_call_what(0), "exists lock");
    harness_call_rc(0, ZNONODE);
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZNONODE);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == -1);
    harness_stop();
}

/* The session is lost while the look at a lost answer is on its way, and that look loses
 * its answer too: the next session looks at the job (it was applied: OK). */
static void test_ack_lost_session_lost(void)
{
    struct conn *c;
    const char *id;
    struct harness_reply *r = ack_answer_lost(ZCONNECTIONLOSS, &c, &id);
    harness_lost();
    harness_call_rc(0, ZCONNECTIONLOSS);
    CHECK(!r->done && harness_calls() == 0);
    harness_new_session();
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZNONODE);
    CHECK_STR(r->line, "OK");
    harness_stop();
}

/* The answer was lost and our lock is still there: not applied; the job is still held
 * and the consumer may ack again. */
static void test_ack_lost_not_applied(void)
{
    struct conn *c;
    const char *id;
    struct harness_reply *r = ack_answer_lost(ZOPERATIONTIMEOUT, &c, &id);
    harness_exists_ok(0, harness_session());
    CHECK_CONTAINS(r->line, "UNAVAILABLE");
    CHECK_CONTAINS(r->line, "still held");
    CHECK(harness_state(id) == JS_INFLIGHT);
    r = harness_ack(c, id);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job");
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    harness_stop();
}

/* The answer was lost, the lock is another's now and the job is there: not ours, not
 * applied. */
static void test_ack_lost_other_holder(void)
{
    struct conn *c;
    const char *id;
    struct harness_reply *r = ack_answer_lost(ZCONNECTIONLOSS, &c, &id);
    harness_exists_ok(0, harness_session() + 7);
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZOK);
    CHECK_CONTAINS(r->line, "LEASE_LOST");
    CHECK(harness_state(id) == JS_LOCKING);
    harness_stop();
}

/* NACK with a delay: the job moves to a new name due then. */
static void test_nack_delay(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct harness_reply *r = harness_nack(c, id, 5000);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create job2");
    harness_multi_ok(0, 1);
    CHECK(due_of_reply(r->line) == harness_now() + 5000);
    CHECK(harness_state(id) == -1 && c->c->inflight == 0);
    harness_stop();
}

/* NACK without a delay: the queue's back-off, doubling from backoff_min to backoff_max. */
static void test_nack_backoff(void)
{
    harness_start(QUEUES);
    const struct queue_config *qc = dispatcher_queue(harness_ds(), "a")->cfg;
    CHECK(settle_backoff_ms(qc, 1) == 1000 && settle_backoff_ms(qc, 2) == 2000);
    CHECK(settle_backoff_ms(qc, 3) == 3000 && settle_backoff_ms(qc, 9) == 3000);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    harness_multi_ok(0, 2); /* its second delivery */
    struct harness_reply *r = harness_nack(c, id, -1);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create job2");
    harness_multi_ok(0, 1);
    CHECK(due_of_reply(r->line) == harness_now() + 2000);
    harness_stop();
}

/* No back-off: a plain release, and the job is delivered again (attempt 2). */
static void test_nack_release(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("r", 1);
    const char *id = harness_delivered("r");
    struct harness_reply *r = harness_nack(c, id, -1);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock");
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == JS_LOCKING);
    harness_multi_ok(0, 2);
    CHECK(c->njobs == 2 && c->jobs[1].attempt == 2);
    harness_stop();
}

/* The last allowed attempt nacked: the dead letters. */
static void test_nack_dead_letter(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    harness_multi_ok(0, 3);
    struct harness_reply *r = harness_nack(c, id, 5000);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create dead");
    harness_multi_ok(0, 1);
    CHECK_CONTAINS(r->line, "OK dead=a/");
    CHECK(harness_state(id) == -1);
    harness_stop();
}

/* Locked for an attempt past max_attempts (its holders kept crashing): buried, never
 * pushed, and the consumer's slot is free again. */
static void test_bury_at_delivery(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    harness_multi_ok(0, 4);
    CHECK(harness_state(id) == JS_SETTLING);
    CHECK(c->njobs == 0 && c->c->inflight == 0);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create dead");
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == -1);
    harness_stop();
}

/* NACK unrun=1: created again under its own name; its next delivery is attempt 1 again. */
static void test_nack_unrun(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    struct harness_reply *r = harness_nack_unrun(c, id);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create job");
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == JS_LOCKING);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 2 && c->jobs[1].attempt == 1);
    harness_stop();
}

/* NACK unrun=1 of a job's third delivery under its name: created again under the same
 * name (OK, no new id) with its first two deliveries made again in the new znode (a
 * created and deleted child twice each), so the next delivery is attempt 3 again. */
static void test_nack_unrun_replays(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner");
    harness_multi_ok(0, 3);
    CHECK(c->njobs == 1 && c->jobs[0].attempt == 3);
    struct harness_reply *r = harness_nack_unrun(c, id);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create job, "
                                    "create lock, delete lock, create lock, delete lock, "
                                    "create lock, delete lock, create lock, delete lock");
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == JS_LOCKING);
    harness_multi_ok(0, 3);
    CHECK(c->njobs == 2 && c->jobs[1].attempt == 3);
    CHECK_STR(c->jobs[1].id, id);
    harness_stop();
}

/* Operations in multi I (harness_multi_ops joins them with ", "). */
static int multi_nops(int i)
{
    int n = 1;
    for (const char *p = harness_multi_ops(i); (p = strstr(p, ", ")); p += 2)
        n++;
    return n;
}

/* Up to ATTEMPTS_REPLAY_MAX deliveries under its name (the 9th given back replays 8) the
 * job keeps its name; past them (the 10th) it takes them into a new name, a9, as its new
 * id. */
static void test_nack_unrun_past_replay(void)
{
    harness_start(QUEUES);
    struct conn *c8 = harness_consumer("r", 1);
    const char *id8 = harness_listed("r", 0, 0, 1);
    harness_multi_ok(0, 9);
    struct harness_reply *r8 = harness_nack_unrun(c8, id8);
    CHECK(multi_nops(0) == 4 + 4 * 8); /* delete owner, lock, job; create job; 8 replays */
    harness_multi_ok(0, 1);
    CHECK_STR(r8->line, "OK");
    harness_stop();
    harness_start(QUEUES);
    struct conn *c = harness_consumer("r", 1);
    const char *id = harness_listed("r", 0, 0, 1);
    harness_multi_ok(0, 10);
    CHECK(c->njobs == 1 && c->jobs[0].attempt == 10);
    struct harness_reply *r = harness_nack_unrun(c, id);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create job2");
    harness_multi_ok(0, 1);
    CHECK_CONTAINS(r->line, "-a9");
    CHECK(strncmp(r->line, "OK r/", 5) == 0);
    harness_stop();
}

/* The consumer's connection closed: what it held is released and offered again. */
static void test_consumer_gone(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_consumer_gone(c);
    CHECK(harness_state(id) == JS_SETTLING);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock");
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == JS_READY);
    harness_stop();
}

/* A held job missing from a listing is looked up; gone for real (CANCEL force=1), its
 * consumer is told CANCELLED at once and its ACK changes nothing. */
static void test_cancelled_while_held(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_unlisted(id);
    CHECK(harness_state(id) == JS_INFLIGHT && c->ncancelled == 0);
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZNONODE);
    CHECK(c->ncancelled == 1);
    CHECK_STR(c->cancelled, id);
    CHECK(harness_state(id) == -1);
    struct harness_reply *r = harness_ack(c, id);
    CHECK_CONTAINS(r->line, "cancelled");
    CHECK(harness_multis() == 0);
    harness_stop();
}

/* A held job missing from a listing that was older than the job: looked up, it is there,
 * so it is not taken for gone: given back unrun, it is kept and delivered again. */
static void test_missing_from_older_listing(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_delivered("a");
    harness_unlisted(id);
    CHECK_STR(harness_call_what(0), "exists job");
    harness_call_rc(0, ZOK);
    CHECK(harness_state(id) == JS_INFLIGHT && c->ncancelled == 0);
    struct harness_reply *r = harness_nack_unrun(c, id);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create job");
    harness_multi_ok(0, 1);
    CHECK_STR(r->line, "OK");
    CHECK(harness_state(id) == JS_LOCKING);
    harness_stop();
}

int main(void)
{
    test_ack();
    test_missing_from_older_listing();
    test_ack_frees_slot();
    test_ack_cancelled();
    test_ack_lock_gone();
    test_ack_badversion();
    test_ack_lost_applied();
    test_ack_lost_verify_lost();
    test_ack_lost_session_lost();
    test_ack_lost_not_applied();
    test_ack_lost_other_holder();
    test_nack_delay();
    test_nack_backoff();
    test_nack_release();
    test_nack_dead_letter();
    test_bury_at_delivery();
    test_nack_unrun();
    test_nack_unrun_replays();
    test_nack_unrun_past_replay();
    test_consumer_gone();
    test_cancelled_while_held();
    return check_report("unit.engine_settle");
}
