/* A queue's concurrency limit (src/daemon/engine/limit.c) over the scripted store: the slot
 * node created in the lock's own multi and deleted in the ack's, a due job waiting while
 * every slot is taken, the slots directory listed with a watch (and listed again when it
 * fires) only while jobs wait, a slot another daemon took (NodeExists on the slot alone),
 * a missing directory, a release whose answer says the lock went, a lost session, and a
 * lock's answer after a pause given back unrun with its slot. */
#include <string.h>

#include "check.h"
#include "dispatcher.h"
#include "engine_harness.h"
#include "fake_zkstore.h"
#include "limit.h"
#include "zkstore.h"

#define QUEUES "[queue a]\nttr = 10s\nconcurrency = 2\n[queue free]\nttr = 10s\n" \
               "[queue g]\ngroup_concurrency = 1\n[queue both]\nconcurrency = 2\n"           \
               "group_concurrency = 1\n"
#define SLOTS_DIR "/t/queues/a/slots"

static struct limit_stats stats(void)
{
    struct limit_stats st;
    limit_get_stats(dispatcher_queue(harness_ds(), "a")->limit, &st);
    return st;
}

static void answer_children(int i, char **names, int n)
{
    fake_zk_answer(harness_zs(), i,
                   &(struct zk_result){.rc = ZOK, .children = names, .nchildren = n});
    harness_turn();
}

/* Two slots, three due jobs: two locks carry a slot each, the third waits; the ack's
 * multi deletes the slot, and the waiting job takes it. */
static void test_slots_taken_and_freed(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    const char *j2 = harness_listed("a", 0, 0, 1);
    const char *j3 = harness_listed("a", 0, 0, 1);
    CHECK(harness_multis() == 2);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot c-0");
    CHECK_STR(harness_multi_ops(1), "create lock, create-seq owner, create slot c-1");
    CHECK(harness_state(j3) == JS_READY);
    CHECK(harness_calls() == 1); /* every slot taken: the directory is listed, with a watch */
    CHECK_STR(harness_call_what(0), "children+watch slots");
    CHECK(stats().waiting == 1 && stats().ours == 2 && stats().waits == 1);
    harness_multi_ok(1, 1);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 2);
    answer_children(0, (char *[]){"c-0", "c-1"}, 2); /* our own two */
    CHECK(harness_state(j3) == JS_READY && harness_multis() == 0);
    harness_ack(c, j1);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, delete slot c-0");
    harness_multi_ok(0, 1);
    CHECK(harness_state(j3) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot c-0");
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 3 && stats().waiting == 0 && stats().ours == 2);
    CHECK(harness_state(j2) == JS_INFLIGHT && harness_state(j3) == JS_INFLIGHT);
    harness_stop();
}

/* A queue without the key: the lock multi is the usual three operations. */
static void test_no_limit(void)
{
    harness_start(QUEUES);
    harness_consumer("free", 5);
    harness_listed("free", 0, 0, 1);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner");
    CHECK(harness_calls() == 0);
    harness_stop();
}

/* Another daemon took the slot we guessed free: only that slot's create fails; the job is
 * offered again at once with the other slot; the taken one is not tried again. */
static void test_slot_conflict(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 2, ZNODEEXISTS);
    CHECK(harness_state(j1) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot c-1");
    CHECK(stats().conflicts == 1);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 1);
    const char *j2 = harness_listed("a", 0, 0, 1); /* c-0 is another's, c-1 ours */
    CHECK(harness_state(j2) == JS_READY && harness_multis() == 0);
    CHECK_STR(harness_call_what(0), "children+watch slots");
    harness_stop();
}

/* All slots held elsewhere: the job waits with no reads until the watch fires; the new
 * listing shows a free slot, and the job takes it. Once nothing waits, a watch that fires
 * costs nothing. */
static void test_watch_wakes(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 2, ZNODEEXISTS);
    harness_multi_fails(0, 2, ZNODEEXISTS);
    CHECK(harness_state(j1) == JS_READY && harness_multis() == 0);
    CHECK(harness_calls() == 1);
    answer_children(0, (char *[]){"c-0", "c-1", "unrelated"}, 3);
    CHECK(harness_calls() == 0 && harness_multis() == 0);
    CHECK(stats().taken == 2 && stats().waiting == 1);
    harness_advance(5000); /* time alone reads nothing */
    CHECK(harness_calls() == 0 && harness_multis() == 0);
    dispatcher_limit_watch(harness_ds(), SLOTS_DIR);
    harness_turn();
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "children+watch slots");
    answer_children(0, (char *[]){"c-0"}, 1);
    CHECK(harness_state(j1) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot c-1");
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 1 && stats().waiting == 0);
    dispatcher_limit_watch(harness_ds(), SLOTS_DIR);
    harness_turn();
    CHECK(harness_calls() == 0); /* nothing waits: no listing */
    harness_stop();
}

/* The directory does not exist yet: the slot's create fails with NoNode; it is made and
 * the job locked again. */
static void test_missing_dir(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 2, ZNONODE);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "create slots");
    harness_call_rc(0, ZOK);
    CHECK(harness_state(j1) == JS_LOCKING);
    CHECK_CONTAINS(harness_multi_ops(0), "create lock, create-seq owner, create slot c-");
    harness_stop();
}

/* A release (the consumer left) deletes the slot with the lock; when its multi fails
 * because the lock went (cancelled), the slot is deleted on its own, only after ZooKeeper
 * says it is still our session's. */
static void test_release_and_guarded_delete(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    harness_multi_ok(0, 1);
    harness_consumer_gone(c);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete slot c-0");
    harness_multi_fails(0, 1, ZNONODE);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "exists slot c-0");
    harness_exists_ok(0, harness_session());
    CHECK_STR(harness_call_what(0), "delete slot c-0");
    harness_call_rc(0, ZOK);
    CHECK(stats().ours == 0);
    /* The same again, but the node is another session's now: nothing is deleted. */
    c = harness_consumer("a", 5);
    CHECK(harness_state(j1) == JS_LOCKING);
    harness_multi_ok(0, 2);
    harness_consumer_gone(c);
    harness_multi_fails(0, 1, ZNONODE);
    CHECK_STR(harness_call_what(0), "exists slot c-1");
    harness_exists_ok(0, harness_session() + 99);
    CHECK(harness_calls() == 0 && stats().ours == 0);
    harness_stop();
}

/* The session ends: our slots went with it; the new session's locks start from slot 0. */
static void test_session_lost(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    harness_listed("a", 0, 0, 1);
    harness_listed("a", 0, 0, 1);
    harness_multi_ok(1, 1);
    harness_multi_ok(0, 1);
    CHECK(stats().ours == 2);
    harness_lost();
    CHECK(stats().ours == 0);
    harness_new_session();
    CHECK(c->nexpired == 2); /* told their locks are gone */
    const char *j3 = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(j3) == JS_LOCKING);
    CHECK_CONTAINS(harness_multi_ops(harness_multis() - 1), "create slot c-");
    harness_stop();
}

static struct limit_stats stats_of(const char *queue)
{
    struct limit_stats st;
    limit_get_stats(dispatcher_queue(harness_ds(), queue)->limit, &st);
    return st;
}

/* group_concurrency = 1: a group's second job waits while its first is held, and the turn
 * passes to another group, whose job goes at once; the ack frees the group's slot. */
static void test_group_slots(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("g", 5);
    const char *a1 = harness_listed_group("g", 0, 0, 1, "acme");
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot g-0-acme");
    harness_multi_ok(0, 1);
    const char *a2 = harness_listed_group("g", 0, 0, 1, "acme");
    const char *b1 = harness_listed_group("g", 0, 0, 1, "beta");
    CHECK(harness_state(a2) == JS_READY);
    CHECK(harness_state(b1) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot g-0-beta");
    harness_multi_ok(0, 1);
    const char *plain = harness_listed_group("g", 0, 0, 1, ""); /* no group: no group slot */
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner");
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 3 && harness_state(a2) == JS_READY);
    struct limit_stats st = stats_of("g");
    CHECK(st.group_max == 1 && st.groups == 2 && st.top[0].taken == 1);
    harness_ack(c, a1);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, delete slot g-0-acme");
    harness_multi_ok(0, 1);
    CHECK(harness_state(a2) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot g-0-acme");
    (void)plain;
    harness_stop();
}

/* Both limits: the queue's slot and the group's in one multi; another daemon holding the
 * group's slot fails the lock on the second slot operation only. */
static void test_both_limits(void)
{
    harness_start(QUEUES);
    harness_consumer("both", 5);
    const char *j = harness_listed_group("both", 0, 0, 1, "acme");
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot c-0, "
                                    "create slot g-0-acme");
    harness_multi_fails(0, 3, ZNODEEXISTS);
    CHECK(harness_state(j) == JS_READY && harness_multis() == 0); /* acme's only slot: taken */
    CHECK(stats_of("both").conflicts == 1);
    CHECK(harness_calls() == 1); /* no slot left for the waiting job: listed with a watch */
    CHECK_STR(harness_call_what(0), "children+watch slots");
    answer_children(0, (char *[]){"g-0-acme"}, 1);
    CHECK(harness_state(j) == JS_READY && harness_multis() == 0);
    dispatcher_limit_watch(harness_ds(), "/t/queues/both/slots");
    harness_turn();
    answer_children(0, NULL, 0);
    CHECK(harness_state(j) == JS_LOCKING);
    CHECK_CONTAINS(harness_multi_ops(0), "create slot g-0-acme");
    harness_stop();
}

/* A lock's answer that comes when ZooKeeper has not answered lately (dispatcher.c,
 * stale_lock_answer) in a queue with a limit: the job is not kept locked waiting for its
 * turn (a more urgent job needing a slot would wait behind it for good) but given back
 * unrun, its slot with it; once ZooKeeper answers again the more urgent job goes first. */
static void test_stale_answer_gives_back(void)
{
    harness_start("[queue one]\nttr = 10s\nconcurrency = 1\n");
    struct conn *c = harness_consumer("one", 5);
    const char *j1 = harness_listed("one", 0, 5, 1);
    fake_zk_set_heard_age(harness_zs(), 6000);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 0 && c->c->inflight == 0);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create job, "
                                    "delete slot c-0");
    const char *j2 = harness_listed("one", 0, 0, 1); /* more urgent; the slot is still taken */
    CHECK(harness_multis() == 1);
    fake_zk_set_heard_age(harness_zs(), 0);
    harness_multi_ok(0, 1); /* given back: the slot is free */
    harness_advance(100);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot c-0");
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 1 && strcmp(c->jobs[0].id, j2) == 0 && c->jobs[0].attempt == 1);
    (void)j1;
    harness_stop();
}

/* A lock multi the batch refuses (it closes, or memory runs out; here the failpoint
 * lock-batch-refuses, in a child) was never sent: its slot is free again. Two slots: the
 * refused job's retry and a second job both lock; had the refused slot stayed taken, the
 * second would wait. */
static void refused_multi(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(j1) != JS_LOCKING && harness_multis() == 0);
    CHECK(stats().ours == 0);
    harness_advance(ZK_RETRY_MS + 1);
    CHECK(harness_state(j1) == JS_LOCKING && harness_multis() == 1);
    const char *j2 = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(j2) == JS_LOCKING && harness_multis() == 2);
    harness_multi_ok(0, 1);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 2 && stats().ours == 2 && stats().waiting == 0);
    harness_stop();
}

static void test_refused_multi_frees_slot(void)
{
    CHECK(harness_in_child("lock-batch-refuses:1", refused_multi) == 0);
}

int main(void)
{
    test_refused_multi_frees_slot();
    test_group_slots();
    test_both_limits();
    test_slots_taken_and_freed();
    test_no_limit();
    test_slot_conflict();
    test_watch_wakes();
    test_missing_dir();
    test_release_and_guarded_delete();
    test_session_lost();
    test_stale_answer_gives_back();
    return check_report("unit.engine_limit");
}
