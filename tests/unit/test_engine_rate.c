/* A queue's start rate (src/daemon/engine/rate.c) over the scripted store: unknown slots
 * read first (exists), a slot never used started by its create, a used one by a set with
 * the version last seen, a due job waiting until the first slot is a window old (a timer,
 * no reads), a slot another daemon started first (BadVersion: read again, another tried),
 * and a missing slots directory. group_rate: a group's slots guessed never started (no
 * reads), a group at its rate passing its turn, both rates in one multi, a group's guess
 * corrected by NodeExists, a group out of its window forgotten (its nodes left; its waiting
 * jobs woken), the sweep
 * of idle group slots, a group slot known from long ago read before it starts again, a
 * group kept past its window by an answer not in (said once), and a timer that fires before
 * the cluster clock says the slot is free. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dispatcher.h"
#include "engine_harness.h"
#include "fake_zkstore.h"
#include "log.h"
#include "rate.h"
#include "zkstore.h"

#define QUEUES "[queue a]\nttr = 10s\nrate = 2/s\n"

static struct rate_stats stats(void)
{
    struct rate_stats st;
    rate_get_stats(dispatcher_queue(harness_ds(), "a")->rate, &st);
    return st;
}

static void answer_exists(int i, int rc, int version, int64_t mtime)
{
    struct zk_result res = {.rc = rc, .has_stat = rc == ZOK};
    res.stat.version = version;
    res.stat.mtime = mtime;
    fake_zk_answer(harness_zs(), i, &res);
    harness_turn();
}

/* Two slots: both read, both missing, two jobs start them by creating them; the third waits
 * a window, then starts the first again by a set. Time alone reads nothing. */
static void test_two_per_second(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(j1) == JS_READY && harness_multis() == 0);
    CHECK(harness_calls() == 2);
    CHECK_STR(harness_call_what(0), "exists slot r-0");
    CHECK_STR(harness_call_what(1), "exists slot r-1");
    answer_exists(0, ZNONODE, 0, 0);
    CHECK(harness_state(j1) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot r-0");
    const char *j2 = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(j2) == JS_READY); /* r-1 still being read */
    answer_exists(0, ZNONODE, 0, 0);
    CHECK(harness_state(j2) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(1), "create lock, create-seq owner, create slot r-1");
    harness_multi_ok(0, 1);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 2 && stats().started == 2);
    const char *j3 = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(j3) == JS_READY && harness_multis() == 0 && harness_calls() == 0);
    harness_advance(999);
    CHECK(harness_state(j3) == JS_READY && harness_calls() == 0);
    harness_advance(2); /* the timer the first slot set */
    CHECK(harness_state(j3) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, set slot r-0");
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 3);
    harness_stop();
}

/* libevent counts its timer from the loop's cached time, so it may fire before the cluster
 * clock says the first slot is out of its window (a loaded loop: integration.rate stalled
 * once). Made on demand: the test clock lags the real one when the timer fires. The job
 * still goes once the clock gets there, with nothing else to wake it: a timer again. */
static void test_timer_early(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    for (int k = 0; k < 2; k++) {
        harness_listed("a", 0, 0, 1);
        answer_exists(0, ZNONODE, 0, 0);
    }
    harness_multi_ok(0, 1);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 2);
    const char *j3 = harness_listed("a", 0, 0, 1); /* arms the timer: 1001 ms of real time */
    CHECK(harness_state(j3) == JS_READY);
    harness_clock(990);
    harness_run_real(1200); /* the timer fires 10 ms early by the test clock */
    CHECK(harness_state(j3) == JS_READY && harness_multis() == 0);
    harness_clock(20);
    harness_run_real(200);
    CHECK(harness_state(j3) == JS_LOCKING);
    harness_stop();
}

/* Another daemon started the slot we knew (BadVersion): only that operation failed, the
 * slot is read again; its new start is recent, so the job takes the other slot. */
static void test_conflict(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    int64_t old = harness_now() - 5000;
    answer_exists(0, ZOK, 7, old);
    answer_exists(0, ZOK, 3, old);
    CHECK(harness_state(j1) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, set slot r-0");
    harness_multi_fails(0, 2, ZBADVERSION);
    CHECK(stats().conflicts == 1);
    CHECK(harness_state(j1) == JS_LOCKING); /* offered again: r-1 is startable */
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, set slot r-1");
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 1);
    const char *j2 = harness_listed("a", 0, 0, 1); /* r-0 unknown again: read */
    CHECK(harness_state(j2) == JS_READY && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "exists slot r-0");
    answer_exists(0, ZOK, 8, harness_now() - 200); /* started 200 ms ago elsewhere */
    CHECK(harness_state(j2) == JS_READY);
    harness_advance(800);
    CHECK(harness_state(j2) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, set slot r-0");
    harness_stop();
}

/* The slots directory does not exist: the create fails with NoNode; it is made, then the job
 * starts the slot. */
static void test_missing_dir(void)
{
    harness_start(QUEUES);
    harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    answer_exists(0, ZNONODE, 0, 0);
    answer_exists(0, ZNONODE, 0, 0);
    harness_multi_fails(0, 2, ZNONODE);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "create slots");
    harness_call_rc(0, ZOK);
    CHECK(harness_state(j1) == JS_LOCKING);
    CHECK_CONTAINS(harness_multi_ops(0), "create slot r-");
    harness_stop();
}

/* Many slots at first use: the directory is listed once; the slots not in it are never
 * started ones, created at once without a read each. */
static void test_listed_first(void)
{
    harness_start("[queue a]\nttr = 10s\nrate = 100/s\n");
    harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "children slots");
    fake_zk_answer(harness_zs(), 0, &(struct zk_result){.rc = ZOK,
                   .children = (char *[]){"r-0", "c-0", "r-x"}, .nchildren = 3});
    harness_turn();
    CHECK(harness_state(j1) == JS_LOCKING && stats().reads == 1);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot r-1");
    harness_stop();
}

#define GROUPS "[queue g]\nttr = 10s\ngroup_rate = 1/s\n[queue both]\nttr = 10s\n" \
               "rate = 1/s\ngroup_rate = 1/s\n"

static struct rate_stats stats_of(const char *queue)
{
    struct rate_stats st;
    rate_get_stats(dispatcher_queue(harness_ds(), queue)->rate, &st);
    return st;
}

/* group_rate = 1/s: a group's first job starts its slot by a create without a read; its
 * second waits a window while another group's job goes at once; then a set starts it. */
static void test_group_rate(void)
{
    harness_start(GROUPS);
    struct conn *c = harness_consumer("g", 5);
    const char *a1 = harness_listed_group("g", 0, 0, 1, "acme");
    CHECK(harness_state(a1) == JS_LOCKING && harness_calls() == 0);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot gr-0-acme");
    harness_multi_ok(0, 1);
    const char *a2 = harness_listed_group("g", 0, 0, 1, "acme");
    const char *b1 = harness_listed_group("g", 0, 0, 1, "beta");
    CHECK(harness_state(a2) == JS_READY && harness_state(b1) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot gr-0-beta");
    harness_multi_ok(0, 1);
    const char *plain = harness_listed_group("g", 0, 0, 1, ""); /* no group: no rate */
    CHECK(harness_state(plain) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner");
    harness_multi_ok(0, 1);
    struct rate_stats st = stats_of("g");
    CHECK(st.group_n == 1 && st.group_window_ms == 1000 && st.groups == 2 && st.group_waits == 1);
    harness_advance(999);
    CHECK(harness_state(a2) == JS_READY && harness_multis() == 0 && harness_calls() == 0);
    harness_advance(2);
    CHECK(harness_state(a2) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, set slot gr-0-acme");
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 4);
    harness_stop();
}

/* rate and group_rate: both slots in one multi; the group's refused (NodeExists: another
 * daemon started it) fails the lock on that operation only: the queue's slot is as it was
 * (created again, not set), the group's is read, found in its window, and the job waits. */
static void test_both_rates(void)
{
    harness_start(GROUPS);
    harness_consumer("both", 5);
    const char *j = harness_listed_group("both", 0, 0, 1, "acme");
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "exists slot r-0");
    answer_exists(0, ZNONODE, 0, 0);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot r-0, "
                                    "create slot gr-0-acme");
    harness_multi_fails(0, 3, ZNODEEXISTS);
    CHECK(stats_of("both").group_conflicts == 1 && stats_of("both").conflicts == 0);
    CHECK(harness_state(j) == JS_READY && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "exists slot gr-0-acme");
    answer_exists(0, ZOK, 4, harness_now() - 300);
    CHECK(harness_state(j) == JS_READY && harness_multis() == 0);
    harness_advance(701);
    CHECK(harness_state(j) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot r-0, "
                                    "set slot gr-0-acme");
    harness_stop();
}

/* Answers the pending exists of slot NAME (the sweep reads in any order). */
static void answer_slot(const char *name, int version, int64_t mtime)
{
    char what[80];
    snprintf(what, sizeof what, "exists slot %s", name);
    for (int i = 0; i < harness_calls(); i++)
        if (!strcmp(harness_call_what(i), what)) {
            answer_exists(i, ZOK, version, mtime);
            return;
        }
    CHECK(!"no read of that slot");
}

/* A group whose start is a window old is forgotten at the next tidy pass, its node left
 * alone (another daemon may know it); a group still in its window is kept. The sweep
 * deletes the node, by the version it reads, only once it was idle its window and
 * RATE_IDLE_EXTRA_MS. */
static void test_group_forgotten(void)
{
    harness_start(GROUPS);
    harness_consumer("g", 5);
    harness_listed_group("g", 0, 0, 1, "acme");
    harness_multi_ok(0, 1);
    harness_advance(600);
    harness_listed_group("g", 0, 0, 1, "beta");
    harness_multi_ok(0, 1);
    struct rate *r = dispatcher_queue(harness_ds(), "g")->rate;
    rate_tidy(r); /* the first pass also sweeps: the listing */
    CHECK(stats_of("g").groups == 2 && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "children slots");
    harness_call_rc(0, ZNONODE);
    harness_advance(500); /* acme's start is a window old (and the clock's error), beta's not */
    rate_tidy(r);
    CHECK(stats_of("g").groups == 1 && harness_calls() == 0); /* forgotten, nothing deleted */
    harness_advance(600);
    rate_tidy(r);
    CHECK(stats_of("g").groups == 0 && harness_calls() == 0);
    harness_advance(RATE_SWEEP_MS); /* the next sweep: acme idle long enough, beta not */
    rate_tidy(r);
    CHECK_STR(harness_call_what(0), "children slots");
    fake_zk_answer(harness_zs(), 0, &(struct zk_result){.rc = ZOK,
                   .children = (char *[]){"gr-0-acme", "gr-0-beta"}, .nchildren = 2});
    harness_turn();
    CHECK(harness_calls() == 2);
    int64_t idle = 1000 + RATE_IDLE_EXTRA_MS;
    answer_slot("gr-0-acme", 0, harness_now() - idle);
    answer_slot("gr-0-beta", 3, harness_now() - idle + 1);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "delete slot gr-0-acme");
    CHECK(fake_zk_call(harness_zs(), 0)->version == 0);
    harness_call_rc(0, ZOK);
    CHECK(stats_of("g").swept == 1);
    harness_stop();
}

/* A group forgotten at the end of its window while a job of it waits for its slot: the
 * tidy pass frees the group's timer with it, so it wakes the queue itself (both come due at
 * once: integration.rate stalled when the tidy pass ran first). The job then starts the
 * slot as a group never started (a create: another daemon's start would refuse it). */
static void test_group_forgotten_waiting(void)
{
    harness_start(GROUPS);
    harness_consumer("g", 5);
    harness_listed_group("g", 0, 0, 1, "acme");
    harness_multi_ok(0, 1);
    const char *a2 = harness_listed_group("g", 0, 0, 1, "acme");
    CHECK(harness_state(a2) == JS_READY && harness_multis() == 0);
    struct rate *r = dispatcher_queue(harness_ds(), "g")->rate;
    rate_tidy(r); /* the first pass's sweep */
    harness_call_rc(0, ZNONODE);
    harness_clock(1001); /* the window is over; neither timer has run yet */
    rate_tidy(r);
    CHECK(stats_of("g").groups == 0);
    harness_turn();
    CHECK(harness_state(a2) == JS_LOCKING);
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, create slot gr-0-acme");
    harness_stop();
}

/* A group held out of its window by a lock multi whose answer is not in: kept (its slot's
 * start is unknown), and said once, 10 s on, with what holds it (stderr is the log). */
static void test_group_kept_said(void)
{
    harness_start(GROUPS);
    harness_consumer("g", 5);
    harness_listed_group("g", 0, 0, 1, "acme"); /* its lock multi stays unanswered */
    struct rate *r = dispatcher_queue(harness_ds(), "g")->rate;
    rate_tidy(r);
    harness_call_rc(0, ZNONODE); /* the first pass's sweep */
    FILE *log = tmpfile();
    int saved = dup(2);
    CHECK(log && saved >= 0 && dup2(fileno(log), 2) == 2);
    log_set_level(LOG_WARN);
    for (int s = 0; s < 14; s++) {
        harness_advance(1000);
        rate_tidy(r);
    }
    log_set_level(LOG_ERROR);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char text[4096] = "";
    rewind(log);
    size_t n = fread(text, 1, sizeof text - 1, log);
    text[n] = '\0';
    fclose(log);
    CHECK(stats_of("g").groups == 1);
    const char *said = strstr(text, "queue g: group acme kept ");
    CHECK(said && strstr(said, "1 of its slots in a lock multi, 0 read(s) in flight, no listing"));
    CHECK(said && !strstr(said + strlen("queue g: group acme kept "), "group acme kept"));
    harness_stop();
}

/* Answers the sweeps' listings that are pending: nothing to sweep. */
static void no_sweeps(void)
{
    for (int i = 0; i < harness_calls();)
        if (!strcmp(harness_call_what(i), "children slots"))
            harness_call_rc(i, ZNONODE);
        else
            i++;
}

/* A group made again after every group was forgotten (the tidy timer then waits for the
 * next sweep, a minute on), whose job another daemon takes: never started here, it is
 * still forgotten a window on (integration.rate once kept two such groups 30 s). The
 * tidy timer runs on real time here: 2.4 s of it. */
static void test_group_made_again_forgotten(void)
{
    harness_start(GROUPS);
    harness_consumer("g", 5);
    harness_listed_group("g", 0, 0, 1, "acme");
    harness_multi_ok(0, 1);
    struct rate *r = dispatcher_queue(harness_ds(), "g")->rate;
    rate_tidy(r);
    harness_call_rc(0, ZNONODE); /* the first pass's sweep */
    harness_clock(1100);
    harness_run_real(1200); /* acme's start is a window old: the tidy timer forgets it */
    CHECK(stats_of("g").groups == 0); /* and now waits for the next sweep */
    harness_listed_group("g", 0, 0, 1, "beta");
    CHECK(stats_of("g").groups == 1 && harness_multis() == 1);
    harness_multi_fails(0, 0, ZNODEEXISTS); /* its lock: another daemon holds the job */
    no_sweeps();
    harness_clock(1100);
    harness_run_real(1200);
    CHECK(stats_of("g").groups == 0);
    harness_stop();
}

/* A group slot known from long ago is read before it is started again: the node may have
 * been swept and made again by another daemon, at version 0 again, and a set with the
 * version we knew would start it a second time in its window. */
static void test_group_stale_slot(void)
{
    harness_start(GROUPS);
    struct conn *c = harness_consumer("g", 5);
    const char *a1 = harness_listed_group("g", 0, 0, 1, "acme");
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 1);
    harness_ack(c, a1);
    harness_multi_ok(0, 1);
    /* the group stays known (a job of it waits: due later) while its slot's start grows old */
    const char *a2 = harness_listed_group("g", RATE_IDLE_EXTRA_MS + 2000, 0, 1, "acme");
    for (int64_t t = 0; t < RATE_IDLE_EXTRA_MS + 2000; t += 1000) {
        harness_advance(1000);
        no_sweeps();
    }
    CHECK(harness_state(a2) == JS_READY && harness_multis() == 0);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "exists slot gr-0-acme");
    answer_exists(0, ZOK, 0, harness_now() - 50); /* made again 50 ms ago, version 0 */
    no_sweeps();
    CHECK(harness_state(a2) == JS_READY && harness_multis() == 0); /* in its window: waits */
    harness_advance(1000);
    no_sweeps();
    CHECK(harness_state(a2) == JS_LOCKING); /* read just now: trusted, started by a set */
    CHECK_STR(harness_multi_ops(0), "create lock, create-seq owner, set slot gr-0-acme");
    harness_stop();
}

/* The sweep: a group slot idle its window and RATE_IDLE_EXTRA_MS is deleted by its version;
 * one used more recently stays; one of a group this daemon keeps is not read. */
static void test_sweep(void)
{
    harness_start(GROUPS);
    harness_consumer("g", 5);
    harness_listed_group("g", 0, 0, 1, "acme");
    harness_multi_ok(0, 1);
    rate_tidy(dispatcher_queue(harness_ds(), "g")->rate);
    CHECK_STR(harness_call_what(0), "children slots");
    fake_zk_answer(harness_zs(), 0, &(struct zk_result){.rc = ZOK,
                   .children = (char *[]){"gr-0-old", "gr-0-new", "gr-0-acme", "r-0", "c-1"},
                   .nchildren = 5});
    harness_turn();
    CHECK(harness_calls() == 2); /* not acme's: this daemon keeps it */
    answer_slot("gr-0-old", 9, harness_now() - 1000 - RATE_IDLE_EXTRA_MS);
    answer_slot("gr-0-new", 2, harness_now() - 100);
    CHECK(harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "delete slot gr-0-old");
    CHECK(fake_zk_call(harness_zs(), 0)->version == 9);
    harness_stop();
}

/* A lock multi the batch refuses (it closes, or memory runs out; here the failpoint
 * lock-batch-refuses, in a child) was never sent: the rate slot it took is free again. Two
 * slots: the refused job's retry and a second job both start; had the refused slot stayed
 * busy, the second would wait. */
static void refused_multi(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 5);
    const char *j1 = harness_listed("a", 0, 0, 1);
    answer_exists(0, ZNONODE, 0, 0);    /* r-0 missing: taken for j1, whose multi fails */
    CHECK(harness_state(j1) != JS_LOCKING && harness_multis() == 0);
    answer_exists(0, ZNONODE, 0, 0);    /* r-1 missing too */
    harness_advance(ZK_RETRY_MS + 1);
    CHECK(harness_state(j1) == JS_LOCKING && harness_multis() == 1);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 1 && stats().started == 1);
    const char *j2 = harness_listed("a", 0, 0, 1); /* the other slot is free: it starts */
    CHECK(harness_state(j2) == JS_LOCKING && harness_multis() == 1);
    harness_multi_ok(0, 1);
    CHECK(c->njobs == 2 && stats().started == 2);
    harness_stop();
}

static void test_refused_multi_frees_slot(void)
{
    CHECK(harness_in_child("lock-batch-refuses:1", refused_multi) == 0);
}

int main(void)
{
    test_refused_multi_frees_slot();
    test_group_rate();
    test_both_rates();
    test_group_forgotten();
    test_group_forgotten_waiting();
    test_group_kept_said();
    test_group_made_again_forgotten();
    test_group_stale_slot();
    test_sweep();
    test_listed_first();
    test_two_per_second();
    test_timer_early();
    test_conflict();
    test_missing_dir();
    return check_report("unit.engine_rate");
}
