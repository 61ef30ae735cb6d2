/* The lock (src/daemon/engine/lock.c) over the scripted store: its transaction, the payload
 * read after it, a job gone (NoNode), a lock another daemon holds (NodeExists: CHECKING
 * with a watch, then HELD until the watch fires), our own lock found by that check, a lost
 * answer, a lock's answer that comes after a pause (pushed only once ZooKeeper answers
 * again), and locks taken ahead of the due time (ARMED) given back by a pause. */
#include "check.h"
#include "engine_harness.h"
#include "fake_zkstore.h"
#include "lock.h"

#define QUEUES "[queue a]\nttr = 10s\n"
/* a lock taken ahead given back unrun: the job created again, no attempt spent */
#define GIVE_BACK_OPS "delete owner, delete lock, delete job, create job"

/* A due job and a consumer with room: one multi, then the push. */
static void test_lock_then_push(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(id) == JS_LOCKING);
    CHECK(harness_multis() == 1);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner");
    CHECK(c->njobs == 0);
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == JS_INFLIGHT);
    CHECK(c->njobs == 1);
    CHECK_STR(c->jobs[0].id, id);
    CHECK(c->jobs[0].attempt == 1 && c->jobs[0].ttr_ms == 10000);
    harness_stop();
}

/* The lock's answer comes when nothing sent lately was answered (the process was paused,
 * integration.freeze_late once): the session may have expired with the lock, so nothing is
 * pushed; the job keeps its lock until ZooKeeper answers again, then goes. Also through the
 * payload's read. And with the session lost meanwhile: never pushed, offered again. */
static void test_stale_lock_answer(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    fake_zk_set_heard_age(harness_zs(), 6000); /* over half the session timeout (10 s) */
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 0 && c->c->inflight == 0 && harness_state(id) == JS_READY);
    harness_advance(100);
    CHECK(c->njobs == 0 && harness_multis() == 0);
    fake_zk_set_heard_age(harness_zs(), 0);
    harness_advance(100);
    CHECK(c->njobs == 1 && harness_state(id) == JS_INFLIGHT && c->jobs[0].attempt == 1);
    CHECK(harness_multis() == 0); /* its lock was kept: not taken again */
    harness_stop();

    harness_start(QUEUES);
    c = harness_consumer("a", 1);
    id = harness_listed("a", 0, 0, 0);
    harness_multi_ok(0, 1);
    fake_zk_set_heard_age(harness_zs(), 6000);
    harness_get_ok(0);
    CHECK(c->njobs == 0 && harness_state(id) == JS_READY);
    harness_lost();
    CHECK(c->njobs == 0);
    harness_stop();
}

/* A job whose payload is not in memory is read after the lock, then pushed. */
static void test_payload_read(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 0);
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == JS_LOCKING);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get job");
    CHECK(c->njobs == 0);
    harness_get_ok(0);
    CHECK(harness_state(id) == JS_INFLIGHT);
    CHECK(c->njobs == 1);
    harness_stop();
}

/* NoNode: acked or cancelled elsewhere. The job is forgotten, the consumer's slot freed. */
static void test_lock_nonode(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 0, ZNONODE);
    CHECK(harness_state(id) == -1);
    CHECK(c->c->inflight == 0 && c->njobs == 0);
    const char *next = harness_listed("a", 0, 0, 1); /* the slot takes the next job */
    CHECK(harness_state(next) == JS_LOCKING);
    harness_stop();
}

/* NodeExists: another daemon holds it. CHECKING with a watch on its lock, HELD while that
 * lock stands, offered again when the watch fires. */
static void test_lock_nodeexists(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 0, ZNODEEXISTS);
    CHECK(harness_state(id) == JS_CHECKING);
    CHECK(c->c->inflight == 0);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "exists+watch lock");
    harness_exists_ok(0, harness_session() + 99);
    CHECK(harness_state(id) == JS_HELD);
    CHECK(harness_multis() == 0);
    char lock[LAYOUT_PATH_MAX + 8];
    lock_path(harness_job(id), lock, sizeof lock);
    lock_watch_fired(harness_ds(), lock);
    harness_turn();
    CHECK(harness_state(id) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner");
    harness_stop();
}

/* Listed again while its lock is on its way (an older walk of its bucket): still there,
 * so another daemon's lock (NodeExists) leaves it waiting for that lock, not forgotten. */
static void test_listed_again_while_locking(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(id) == JS_LOCKING);
    harness_listed_again(id);
    harness_multi_fails(0, 0, ZNODEEXISTS);
    CHECK(harness_state(id) == JS_CHECKING);
    harness_stop();
}

/* The other daemon's lock went before our check: offered again at once. */
static void test_lock_gone_before_check(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    harness_multi_fails(0, 0, ZNODEEXISTS);
    harness_call_rc(0, ZNONODE);
    CHECK(harness_state(id) == JS_LOCKING);
    CHECK(harness_multis() == 1);
    harness_stop();
}

/* The lock's answer was lost (the lock may have been taken): offered again ZK_RETRY_MS
 * later; that lock then finds our own lock of the lost answer, releases it (its owner node
 * found by listing the job's children) and takes it again. */
static void test_lock_answer_lost(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    harness_multi_lost(0, ZCONNECTIONLOSS);
    CHECK(harness_state(id) == JS_DELAYED);
    CHECK(c->c->inflight == 0);
    harness_advance(ZK_RETRY_MS - 51);
    CHECK(harness_state(id) == JS_DELAYED);
    harness_advance(1); /* within 50 ms of its retry: locked ahead */
    CHECK(harness_state(id) == JS_LOCKING);
    harness_multi_fails(0, 0, ZNODEEXISTS);
    harness_exists_ok(0, harness_session()); /* ours */
    CHECK(harness_state(id) == JS_SETTLING);
    CHECK_STR(harness_call_what(0), "children job");
    char owner[64];
    snprintf(owner, sizeof owner, "owner-%llx-0000000001", (unsigned long long)harness_session());
    char *names[] = {"lock", owner};
    fake_zk_answer(harness_zs(), 0, &(struct zk_result){.rc = ZOK, .children = names,
                                                         .nchildren = 2});
    harness_turn();
    CHECK(harness_state(id) == JS_SETTLING);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock");
    CHECK(strstr(fake_zk_multi(harness_zs(), 0)->paths[0], owner) != NULL);
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == JS_LOCKING); /* due: locked again for the consumer */
    harness_multi_ok(0, 2);
    CHECK(harness_state(id) == JS_INFLIGHT);
    CHECK(c->njobs == 1 && c->jobs[0].attempt == 2);
    harness_stop();
}

/* A job due within 50 ms is locked ahead while a consumer has room (lock from DELAYED),
 * waits ARMED, and at its due time is only pushed: no second multi. */
static void test_lock_ahead(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 30, 0, 1); /* the timer fires at once */
    CHECK(harness_state(id) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner");
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == JS_ARMED);
    CHECK(c->njobs == 0);
    harness_advance(29);
    CHECK(harness_state(id) == JS_ARMED);
    harness_advance(1);
    CHECK(harness_state(id) == JS_INFLIGHT);
    CHECK(c->njobs == 1 && harness_multis() == 0);
    harness_stop();
}

/* Paused: a lock taken ahead is given back, ARMED or READY (due, no consumer with room),
 * and the job waits for its due time again. */
static void test_pause_gives_back(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *armed = harness_listed("a", 30, 0, 1);
    harness_advance(0);
    harness_multi_ok(0, 1);
    const char *busy = harness_listed("a", 0, 0, 1); /* takes the consumer's one slot */
    harness_multi_ok(0, 1);
    const char *ahead = harness_listed("a", 40, 0, 1);
    CHECK(harness_state(armed) == JS_ARMED && harness_state(busy) == JS_INFLIGHT);
    harness_advance(30);
    CHECK(harness_state(armed) == JS_READY); /* due, the consumer is full */
    CHECK(harness_state(ahead) == JS_DELAYED && harness_multis() == 0); /* no room: not ahead */
    harness_pause("a", 1);
    CHECK(harness_state(armed) == JS_SETTLING);
    CHECK(harness_multis() == 1);
    CHECK_STR(harness_multi_ops(0), GIVE_BACK_OPS); /* unrun: no attempt spent */
    harness_multi_ok(0, 1);
    CHECK(harness_state(armed) == JS_READY); /* due: ready, and paused: not locked */
    CHECK(harness_multis() == 0);
    harness_stop();
}

/* An ARMED job given back before its due time waits DELAYED for it. */
static void test_pause_armed(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 1);
    const char *id = harness_listed("a", 40, 0, 1);
    harness_advance(0);
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == JS_ARMED);
    harness_pause("a", 1);
    CHECK(harness_state(id) == JS_SETTLING);
    CHECK_STR(harness_multi_ops(0), GIVE_BACK_OPS);
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == JS_DELAYED); /* given back before its due time: waits */
    harness_stop();
}

/* A due job waits while a lock taken ahead of an earlier due job is unanswered (it must not
 * overtake it). When that lock ends without a push (its payload read failed, or it is over
 * max_payload), the waiting job is dispatched at once, not at the next unrelated event. */
static void test_prelock_given_back_unblocks(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *ahead = harness_listed("a", 30, 0, 0); /* payload read after the lock */
    CHECK(harness_state(ahead) == JS_LOCKING && harness_multis() == 1);
    harness_advance(30);
    const char *next = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(next) == JS_READY); /* behind the unanswered lock taken ahead */
    harness_multi_ok(0, 1);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get job");
    harness_call_rc(0, ZCONNECTIONLOSS); /* released, offered again in ZK_RETRY_MS */
    CHECK(harness_state(ahead) == JS_SETTLING);
    CHECK(harness_state(next) == JS_LOCKING);
    CHECK(harness_multis() == 2);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock");
    CHECK_STR(harness_multi_ops(1), "create lock, create-seq owner");
    harness_multi_ok(1, 1);
    CHECK(harness_state(next) == JS_INFLIGHT);
    CHECK(c->njobs == 1);
    CHECK_STR(c->jobs[0].id, next);
    harness_stop();
}

#define LOCK_OPS "create lock, create-seq owner"

/* A consumer with inflight 1 holds FIRST and answers it: SECOND is locked for it and THIRD,
 * due too, is locked ahead (the window: one answer, a lock measured: one job). The multis:
 * first's settle, then second's and third's locks in one. */
static struct conn *one_ahead(const char **first, const char **second, const char **third)
{
    struct conn *c = harness_consumer("a", 1);
    *first = harness_delivered("a");
    *second = harness_listed("a", 0, 5, 1);
    *third = harness_listed("a", 0, 5, 1);
    CHECK(harness_multis() == 0); /* full, and it has not answered yet: nothing ahead */
    harness_ack(c, *first);
    CHECK(harness_multis() == 2);
    CHECK_STR(harness_multi_ops(1), LOCK_OPS ", " LOCK_OPS); /* one batch */
    CHECK(harness_job(*third)->prelocked && harness_job(*third)->owner == NULL);
    CHECK(harness_job(*second)->owner == c->c);
    return c;
}

/* Issue 43: a due job locked ahead of a full consumer is pushed with no multi when a slot
 * frees, so a slot costs the push, not a lock's round trip. */
static void test_due_locked_ahead(void)
{
    harness_start(QUEUES);
    const char *first, *second, *third;
    struct conn *c = one_ahead(&first, &second, &third);
    harness_multi_ok(0, 1); /* first's settle */
    harness_multi_ok(0, 1); /* second pushed; third waits, locked, for a slot */
    CHECK(harness_state(third) == JS_READY && c->njobs == 2);
    CHECK(harness_multis() == 0);
    harness_ack(c, second);
    harness_turn();
    CHECK(c->njobs == 3 && strcmp(c->jobs[2].id, third) == 0 && c->jobs[2].attempt == 1);
    CHECK(harness_state(third) == JS_INFLIGHT && !harness_job(third)->prelocked);
    CHECK(harness_multis() == 1); /* second's settle only: no lock for third */
    harness_stop();
}

/* After one_ahead: third pushed when second is answered (all settles applied), then FOURTH
 * (priority 5) listed and locked ahead of the full consumer, its answer not given. */
static const char *fourth_on_its_way(struct conn *c, const char *second)
{
    harness_multi_ok(0, 1);
    harness_multi_ok(0, 1);
    harness_ack(c, second);
    harness_multi_ok(0, 1);
    const char *fourth = harness_listed("a", 0, 5, 1);
    CHECK(harness_state(fourth) == JS_LOCKING && harness_job(fourth)->owner == NULL);
    CHECK(harness_multis() == 1);
    return fourth;
}

/* A due job that ranks after a lock taken ahead, still unanswered, waits for it though the
 * consumer has room: locking ahead never reorders pushes. */
static void test_ahead_keeps_order(void)
{
    harness_start(QUEUES);
    const char *first, *second, *third;
    struct conn *c = one_ahead(&first, &second, &third);
    const char *fourth = fourth_on_its_way(c, second);
    const char *later = harness_listed("a", 0, 9, 1); /* full, the window used: waits */
    harness_ack(c, third);
    harness_turn();
    CHECK(consumer_has_room(c->c));
    CHECK(harness_state(later) == JS_READY); /* room, but fourth ranks first */
    CHECK(harness_multis() == 2); /* fourth's lock, third's settle: none for later */
    harness_multi_ok(0, 1); /* fourth's lock: pushed at once */
    CHECK(c->njobs == 4 && strcmp(c->jobs[3].id, fourth) == 0);
    CHECK(harness_state(later) == JS_LOCKING && harness_job(later)->owner == NULL); /* ahead */
    harness_stop();
}

/* The consumer leaves: a due job locked ahead for it goes back unrun (no attempt spent),
 * READY at once, and one whose lock was on its way when it is answered. */
static void test_ahead_given_back(void)
{
    harness_start(QUEUES);
    const char *first, *second, *third;
    struct conn *c = one_ahead(&first, &second, &third);
    harness_multi_ok(0, 1);
    harness_multi_ok(0, 1); /* third READY, locked ahead */
    harness_consumer_gone(c);
    CHECK(harness_state(third) == JS_SETTLING && harness_multis() == 1);
    /* second (pushed) released, third given back: one settle batch */
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, " GIVE_BACK_OPS);
    harness_multi_ok(0, 1);
    CHECK(harness_state(third) == JS_READY && !harness_job(third)->prelocked);
    CHECK(harness_job(third)->jn.prior_attempts == 0 && harness_job(third)->given_back);
    harness_stop();

    harness_start(QUEUES);
    c = one_ahead(&first, &second, &third);
    const char *fourth = fourth_on_its_way(c, second);
    harness_consumer_gone(c); /* third released; fourth's lock unanswered */
    harness_multi_ok(0, 1);   /* fourth locked, nobody to take it: back unrun */
    CHECK(harness_state(fourth) == JS_SETTLING);
    CHECK_STR(harness_multi_ops(harness_multis() - 1), GIVE_BACK_OPS);
    harness_stop();
}

/* Every multi on the fake store answered ZOK, oldest first (each answer may send more). */
static void answer_all(void)
{
    while (harness_multis())
        harness_multi_ok(0, 1);
}

/* A job chosen ahead goes before one that arrives after the choice, whatever its priority
 * (guarantees.md, Order and timing): third, locked ahead of the full consumer and answered,
 * is pushed with no multi when a slot frees, before a more urgent job listed meanwhile. */
static void test_chosen_before_newcomer(void)
{
    harness_start(QUEUES);
    const char *first, *second, *third;
    struct conn *c = one_ahead(&first, &second, &third);
    harness_multi_ok(0, 1); /* first's settle */
    harness_multi_ok(0, 1); /* second pushed; third READY, locked ahead */
    const char *urgent = harness_listed("a", 0, 0, 1); /* priority 0 ranks before 5 */
    CHECK(harness_state(urgent) == JS_READY && harness_multis() == 0);
    harness_ack(c, second);
    harness_turn();
    CHECK(c->njobs == 3 && strcmp(c->jobs[2].id, third) == 0);
    CHECK(harness_state(urgent) != JS_INFLIGHT);
    harness_stop();
}

/* A job locked before its due time while the consumer had room, due while the consumer is
 * full, goes before a job stored late (due earlier): its lock is in hand, the other's
 * is not; ranking it by due time left locked jobs waiting behind a late backlog (S2 on a
 * slow log, docs/performance.md, session 33). */
static void test_prelocked_before_late(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 2);
    const char *early = harness_listed("a", 30, 5, 1); /* locked ahead of its due time */
    harness_multi_ok(0, 1);
    CHECK(harness_state(early) == JS_ARMED);
    const char *x = harness_listed("a", 0, 5, 1), *y = harness_listed("a", 0, 5, 1);
    answer_all();
    CHECK(c->njobs == 2 && !consumer_has_room(c->c)); /* x and y: full */
    harness_advance(30);
    CHECK(harness_state(early) == JS_READY && harness_job(early)->prelocked);
    const char *late = harness_listed("a", -1000, 5, 1); /* due a second ago */
    harness_ack(c, x);
    harness_turn();
    CHECK(c->njobs == 3 && strcmp(c->jobs[2].id, early) == 0);
    CHECK(harness_state(late) != JS_INFLIGHT); /* waiting, or locked ahead in its turn */
    harness_ack(c, y);
    harness_turn();
    answer_all();
    CHECK(c->njobs == 4 && strcmp(c->jobs[3].id, late) == 0);
    harness_stop();
}

/* Due order across the prelock and a full consumer: B1 and B2 fall due together just after
 * the consumer's one slot frees, C 1 ms later; each push is answered only after C is due.
 * C must not be chosen before B2 (with the prelock before the turn's dispatch and no check
 * of waiting due jobs, it was: integration.delivery's due order). */
static void test_no_prelock_past_due(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *a = harness_delivered("a");
    const char *b1 = harness_listed("a", 5, 5, 1), *b2 = harness_listed("a", 5, 5, 1);
    const char *cc = harness_listed("a", 6, 5, 1);
    CHECK(harness_multis() == 0); /* full: nothing locked ahead of its due time */
    harness_ack(c, a);
    harness_advance(5); /* b1 and b2 due; cc within 50 ms */
    const char *want[] = {b1, b2, cc};
    for (int i = 0; i < 3; i++) {
        answer_all();
        harness_advance(2);
        CHECK(c->njobs == 2 + i && strcmp(c->jobs[1 + i].id, want[i]) == 0);
        if (c->njobs == 2 + i)
            harness_ack(c, c->jobs[1 + i].id);
    }
    harness_stop();
}

/* No job is locked ahead of its due time while a due job waits unlocked, though a consumer
 * has room: that lock would be a choice made before the waiting job's, and go first. J waits
 * for P's lock (P locked ahead, due, unanswered); C falls due 10 ms later. */
static void test_no_prelock_while_due_waits(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 2);
    const char *p = harness_listed("a", 30, 5, 1);
    CHECK(harness_state(p) == JS_LOCKING && harness_multis() == 1);
    harness_advance(30); /* p due, its lock unanswered */
    const char *j = harness_listed("a", -5, 5, 1);
    const char *cc = harness_listed("a", 10, 5, 1);
    CHECK(harness_state(j) == JS_READY); /* behind p's lock; nothing answered: no window */
    CHECK(harness_state(cc) == JS_DELAYED && harness_multis() == 1);
    harness_multi_ok(0, 1); /* p pushed, then j locked for the consumer's second slot */
    CHECK(c->njobs == 1 && strcmp(c->jobs[0].id, p) == 0);
    CHECK(harness_state(j) == JS_LOCKING && harness_job(j)->owner == c->c);
    harness_advance(10);
    while (harness_multis())
        harness_multi_ok(harness_multis() - 1, 1); /* the newest first */
    CHECK(c->njobs == 2 && strcmp(c->jobs[1].id, j) == 0);
    CHECK(harness_state(cc) == JS_READY); /* the consumer is full */
    harness_ack(c, p);
    harness_turn();
    answer_all();
    CHECK(c->njobs == 3 && strcmp(c->jobs[2].id, cc) == 0);
    harness_stop();
}

/* Choices are pushed in their order: J, locked ahead while P's lock (taken before P's due
 * time) is on its way, waits for P though its own answer comes first. F's lock took 100 ms,
 * so one answer opens a window of a few jobs. */
static void test_choices_keep_order(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 2);
    const char *f = harness_listed("a", 0, 5, 1);
    harness_advance(100);
    harness_multi_ok(0, 1);
    harness_ack(c, f);
    harness_multi_ok(0, 1); /* f's settle */
    const char *p = harness_listed("a", 30, 5, 1);
    CHECK(harness_state(p) == JS_LOCKING && harness_multis() == 1);
    harness_advance(30);
    const char *j = harness_listed("a", -5, 5, 1);
    CHECK(harness_state(j) == JS_LOCKING && harness_job(j)->owner == NULL); /* ahead */
    CHECK(harness_multis() == 2);
    harness_multi_ok(1, 1); /* j's answer first */
    CHECK(c->njobs == 1 && harness_state(j) == JS_READY);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 3 && strcmp(c->jobs[1].id, p) == 0 && strcmp(c->jobs[2].id, j) == 0);
    harness_stop();
}

/* A slot that frees while a job is due within 50 ms locks it ahead at once: the timer was
 * armed for its due time while the consumer was full, and is armed sooner. */
static void test_prelock_when_slot_frees(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *a = harness_delivered("a");
    const char *b = harness_listed("a", 40, 5, 1);
    CHECK(harness_state(b) == JS_DELAYED); /* full: not locked ahead */
    CHECK(harness_ds()->armed_wall == harness_now() + 40); /* the timer: at b's due time */
    harness_ack(c, a);
    harness_turn(); /* no tick of the test clock: only the loop's own timer, due at once */
    CHECK(harness_state(b) == JS_LOCKING && harness_job(b)->prelocked);
    harness_stop();
}

int main(void)
{
    test_lock_then_push();
    test_payload_read();
    test_stale_lock_answer();
    test_lock_nonode();
    test_lock_nodeexists();
    test_listed_again_while_locking();
    test_lock_gone_before_check();
    test_lock_answer_lost();
    test_lock_ahead();
    test_pause_gives_back();
    test_pause_armed();
    test_prelock_given_back_unblocks();
    test_due_locked_ahead();
    test_ahead_keeps_order();
    test_chosen_before_newcomer();
    test_prelocked_before_late();
    test_no_prelock_past_due();
    test_no_prelock_while_due_waits();
    test_choices_keep_order();
    test_prelock_when_slot_frees();
    test_ahead_given_back();
    return check_report("unit.engine_lock");
}
