/* Time-to-run leases: a DEADLINE notice before expiry, EXPIRED and redelivery after it
 * (to another consumer first; the expired one keeps its slot until it answers), a job
 * cancelled while held (CANCELLED), TOUCH keeping a lease alive, a late ack fenced off
 * with LEASE_LOST, backoff and dead letters (the log names the dead letter's id). */
#include <sys/wait.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];

/* A job taken from a consumer keeps that consumer's slot until it answers, or for one ttr
 * at least (docs/protocol.md, SUB; the daemon's once-a-second sweep frees it later still).
 * For a job put at PUT_AT (now_ms() just before the put) with a lease of TTR_MS, that is
 * the earliest the slot may come back: the lease starts after the put and ends one ttr
 * later at the soonest, and the slot is kept one ttr past that. 20 ms for the ms clocks. */
static int64_t slot_kept_until(int64_t put_at, int64_t ttr_ms)
{
    return put_at + 2 * ttr_ms - 20;
}

/* Nothing pushed to C for MS: 1 if so. The window is cut short at KEPT_UNTIL, from when
 * the daemon may rightly push to C again, so a push it sees is always a wrong one. */
static int quiet(deferd_client *c, int ms, int64_t kept_until)
{
    deferd_event ev;
    int64_t left = kept_until - now_ms();
    if (left < ms) {
        printf("quiet window cut from %d to %lld ms: the slot may come back then\n", ms,
               (long long)(left > 0 ? left : 0));
        if (left < 0)
            return 1; /* nothing left to check */
        ms = (int)left;
    }
    int rc = next_event(c, &ev, ms);
    if (rc == DEFERD_ETIMEDOUT)
        return 1;
    if (rc == DEFERD_OK) {
        printf("unexpected push of kind %d (job %s) in a quiet window\n", (int)ev.kind,
               ev.job.id[0] ? ev.job.id : "-");
        deferd_job_clear(&ev.job);
    }
    return 0;
}

/* A held job's lease runs out: notice first, then EXPIRED. The consumer may still be
 * running it, so its slot stays taken (no other job pushed to it) until it answers; its
 * late ack is refused with LEASE_LOST, changes nothing and frees the slot, which takes the
 * next ready job; another consumer gets the expired job with attempt 2. The ttr is long
 * enough for both quiet windows to fit in the ttr the slot is kept unanswered. */
static void expiry_and_fenced_ack(void)
{
    enum { TTR = 3000 };
    deferd_client *prod = client(&d), *a = client(&d), *b;
    char j[DEFERD_ID_SIZE], k[DEFERD_ID_SIZE];
    deferd_put_opts o = {.has_ttr = 1, .ttr_ms = TTR};
    CHECK(deferd_subscribe(a, "a", 1) == DEFERD_OK);
    int64_t put_at = now_ms();
    CHECK(deferd_put(prod, "a", "short", 5, &o, j, sizeof j) == DEFERD_OK);
    deferd_event ev;
    CHECK(next_event(a, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    CHECK_STR(ev.job.id, j);
    CHECK(ev.job.ttr_ms == TTR && ev.job.attempt == 1);
    int64_t got = now_ms();
    deferd_job_clear(&ev.job);
    CHECK(put_job(prod, "a", "next", 0, -1, 0, k) == 0); /* waits: a is full */
    CHECK(next_event(a, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_DEADLINE);
    CHECK_STR(ev.job.id, j);
    CHECK(ev.ms_left > 0 && ev.ms_left <= TTR / 5); /* a fifth of the ttr before */
    CHECK(next_event(a, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_EXPIRED);
    CHECK_STR(ev.job.id, j);
    int64_t held = now_ms() - got;
    printf("lease of %d ms expired after %lld ms\n", TTR, (long long)held);
    CHECK(held >= TTR - 10); /* ms clocks on both sides: allow their rounding */
    /* Both j (released) and k are ready; a still runs j as far as deferd knows. Until a
     * answers, or one ttr has passed since the expiry, nothing may be pushed to it. */
    int64_t kept = slot_kept_until(put_at, TTR);
    CHECK(quiet(a, 1000, kept));
    CHECK(deferd_touch(a, j) == DEFERD_ESERVER); /* a touch is no answer: still no room */
    CHECK_STR(deferd_last_error_code(a), "LEASE_LOST");
    CHECK_CONTAINS(deferd_last_error(a), "lease expired");
    CHECK(quiet(a, 500, kept));
    CHECK(deferd_ack(a, j) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(a), "LEASE_LOST");
    CHECK(next_event(a, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    CHECK_STR(ev.job.id, k); /* the answered slot took the next job (prio 0 before j) */
    deferd_job_clear(&ev.job);
    b = client(&d);
    CHECK(deferd_subscribe(b, "a", 1) == DEFERD_OK);
    CHECK(next_event(b, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    CHECK_STR(ev.job.id, j);
    CHECK(ev.job.attempt == 2);
    deferd_job_clear(&ev.job);
    CHECK(deferd_ack(a, j) == DEFERD_ESERVER); /* told again, still nothing changed */
    CHECK_STR(deferd_last_error_code(a), "LEASE_LOST");
    CHECK(deferd_ack(b, j) == DEFERD_OK); /* the current holder is unaffected */
    CHECK(deferd_ack(a, k) == DEFERD_OK);
    deferd_close(prod);
    deferd_close(a);
    deferd_close(b);
}

/* A, with inflight 2, subscribes to b and gets a job of ttr 1 s put there (J: its id). */
static void hold_short_job(deferd_client *prod, deferd_client *a, const char *payload, char *j)
{
    deferd_put_opts o = {.has_ttr = 1, .ttr_ms = 1000};
    deferd_event ev;
    CHECK(deferd_subscribe(a, "b", 2) == DEFERD_OK);
    CHECK(deferd_put(prod, "b", payload, strlen(payload), &o, j, DEFERD_ID_SIZE) == DEFERD_OK);
    CHECK(next_event(a, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    CHECK_STR(ev.job.id, j);
    deferd_job_clear(&ev.job);
}

/* An expired job goes to another consumer with room before the one it expired at, even
 * when that one has room too (inflight 2) and is first in the round. */
static void expired_goes_elsewhere(void)
{
    deferd_client *prod = client(&d), *a = client(&d), *b = client(&d);
    char j[DEFERD_ID_SIZE];
    deferd_event ev;
    hold_short_job(prod, a, "slow", j);
    CHECK(deferd_subscribe(b, "b", 1) == DEFERD_OK); /* after a in the round */
    int expired = 0;
    while (!expired && next_event(a, &ev, 5000) == DEFERD_OK) {
        expired = ev.kind == DEFERD_EV_EXPIRED && strcmp(ev.job.id, j) == 0;
        CHECK(ev.kind != DEFERD_EV_JOB);
        deferd_job_clear(&ev.job);
    }
    CHECK(expired);
    CHECK(next_event(b, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    CHECK_STR(ev.job.id, j);
    CHECK(ev.job.attempt == 2);
    deferd_job_clear(&ev.job);
    CHECK(next_event(a, &ev, 300) == DEFERD_ETIMEDOUT); /* a got nothing meanwhile */
    CHECK(deferd_ack(b, j) == DEFERD_OK);
    deferd_close(prod);
    deferd_close(a);
    deferd_close(b);
}

/* The only consumer, inflight 2: the job that expired at it does not come back to it
 * while it has not answered it (its answer would settle the new delivery); once answered,
 * it does, as attempt 2. */
static void not_back_before_answer(void)
{
    deferd_client *prod = client(&d), *a = client(&d);
    char j[DEFERD_ID_SIZE];
    deferd_event ev;
    int64_t put_at = now_ms();
    hold_short_job(prod, a, "again", j);
    int expired = 0;
    while (!expired && next_event(a, &ev, 5000) == DEFERD_OK) {
        expired = ev.kind == DEFERD_EV_EXPIRED;
        deferd_job_clear(&ev.job);
    }
    CHECK(expired);
    /* room, but not for that job (until the unanswered loss is one ttr old) */
    CHECK(quiet(a, 700, slot_kept_until(put_at, 1000)));
    CHECK(deferd_ack(a, j) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(a), "LEASE_LOST");
    CHECK(next_event(a, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    CHECK_STR(ev.job.id, j);
    CHECK(ev.job.attempt == 2);
    deferd_job_clear(&ev.job);
    CHECK(deferd_ack(a, j) == DEFERD_OK);
    deferd_close(prod);
    deferd_close(a);
}

/* A consumer that never answers a job taken from it gets the slot back one ttr later
 * (slowed, not starved), and the daemon says so. */
static void unanswered_slot_freed(void)
{
    deferd_client *prod = client(&d), *a = client(&d);
    char j[DEFERD_ID_SIZE], k[DEFERD_ID_SIZE];
    deferd_put_opts o = {.has_ttr = 1, .ttr_ms = 1000};
    deferd_event ev;
    long mark = log_mark(&d);
    CHECK(deferd_subscribe(a, "emails", 1) == DEFERD_OK);
    /* The lease starts after the put was sent and the slot is kept one ttr after it ends:
     * the slot cannot come back before put_at + 2 ttr, however late the pushes arrive. */
    int64_t put_at = now_ms();
    CHECK(deferd_put(prod, "emails", "ignored", 7, &o, j, sizeof j) == DEFERD_OK);
    CHECK(next_event(a, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    deferd_job_clear(&ev.job);
    CHECK(next_event(a, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_DEADLINE);
    CHECK(next_event(a, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_EXPIRED);
    int64_t expired_at = now_ms();
    CHECK(put_job(prod, "emails", "next", 0, -1, 0, k) == 0);
    CHECK(next_event(a, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    int64_t back_at = now_ms();
    printf("unanswered: the slot came back %lld ms after EXPIRED, %lld ms after the put "
           "(ttr 1000)\n", (long long)(back_at - expired_at), (long long)(back_at - put_at));
    CHECK(back_at - put_at >= 2 * 1000 - 20); /* the lease, then one ttr kept (rounding) */
    CHECK(log_wait(&d, mark, "not answered within their ttr", 2000));
    CHECK_STR(ev.job.id, k); /* prio 0 before j, which is ready again too */
    CHECK(deferd_ack(a, k) == DEFERD_OK);
    deferd_job_clear(&ev.job);
    char got[DEFERD_ID_SIZE];
    CHECK(deferd_cancel(prod, j, NULL, NULL, 1, got, sizeof got) == DEFERD_OK);
    deferd_close(prod);
    deferd_close(a);
}

/* CANCEL force=1 of a held job: its holder gets CANCELLED (not EXPIRED) at once, its late
 * ack is told the job was cancelled and gone, and the job is never delivered again. */
static void cancelled_while_held(zhandle_t *zh)
{
    deferd_client *prod = client(&d), *a = client(&d);
    char j[DEFERD_ID_SIZE], got[DEFERD_ID_SIZE];
    deferd_event ev;
    CHECK(deferd_subscribe(a, "emails", 1) == DEFERD_OK);
    CHECK(put_job(prod, "emails", "doomed", 0, -1, -1, j) == 0);
    CHECK(next_event(a, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    CHECK_STR(ev.job.id, j);
    deferd_job_clear(&ev.job);
    CHECK(deferd_cancel(prod, j, NULL, NULL, 1, got, sizeof got) == DEFERD_OK);
    CHECK(next_event(a, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_CANCELLED);
    CHECK_STR(ev.job.id, j);
    CHECK(deferd_ack(a, j) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(a), "LEASE_LOST");
    CHECK_CONTAINS(deferd_last_error(a), "cancelled");
    CHECK_CONTAINS(deferd_last_error(a), "will not be delivered again");
    CHECK(!zk_job_exists(zh, root, j));
    CHECK(next_event(a, &ev, 1000) == DEFERD_ETIMEDOUT); /* not delivered again */
    deferd_close(prod);
    deferd_close(a);
}

/* TOUCH renews the lease: held three times its ttr, never expired, acked as attempt 1. */
static void touch_keeps_it(zhandle_t *zh)
{
    deferd_client *c = client(&d);
    char j[DEFERD_ID_SIZE], path[512];
    deferd_put_opts o = {.has_ttr = 1, .ttr_ms = 1000};
    CHECK(deferd_put(c, "b", "long job", 8, &o, j, sizeof j) == DEFERD_OK);
    CHECK(deferd_subscribe(c, "b", 1) == DEFERD_OK);
    deferd_event ev;
    CHECK(next_event(c, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    CHECK(ev.job.attempt == 1 && ev.job.ttr_ms == 1000);
    deferd_job_clear(&ev.job);
    int64_t until = now_ms() + 3000;
    int touches = 0, expired = 0;
    while (now_ms() < until) {
        int rc = next_event(c, &ev, 100);
        if (rc == DEFERD_OK) {
            expired += ev.kind == DEFERD_EV_EXPIRED;
            if (ev.kind == DEFERD_EV_JOB)
                deferd_job_clear(&ev.job);
        }
        if (touches * 400 < 3000 - (until - now_ms())) { /* every 400 ms */
            CHECK(deferd_touch(c, j) == DEFERD_OK);
            touches++;
        }
    }
    CHECK(expired == 0);
    CHECK(deferd_ack(c, j) == DEFERD_OK);
    CHECK(job_path(root, j, path, sizeof path) == 0 && !zk_exists(zh, path));
    deferd_close(c);
}

/* nack without a delay follows the queue's backoff: 200, 400, 800, 800 ms (no jitter);
 * nack with a delay uses it; the attempt count survives every move. */
static void nack_backoff(void)
{
    static const int64_t want[] = {200, 400, 800, 800};
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE];
    CHECK(put_job(c, "retry", "flaky", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(c, "retry", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    for (int i = 0; i < 5; i++) {
        CHECK(job.attempt == (uint32_t)i + 1);
        int64_t at = now_ms();
        int64_t delay = i < 4 ? -1 : 300;
        CHECK(deferd_nack(c, job.id, delay) == DEFERD_OK);
        deferd_job_clear(&job);
        if (i == 4)
            break; /* attempt 5 was the last allowed: next comes the dead-letter test */
        CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
        int64_t got = job.due_ms - at, expect = i < 4 ? want[i] : 300;
        CHECK(got >= expect && got <= expect + 100);
        CHECK(now_ms() >= job.due_ms);
        printf("nack %d: redelivery due %lld ms later (policy %lld)\n", i + 1, (long long)got,
               (long long)expect);
    }
    deferd_close(c);
}

static int deferctl(const char *args, char *out, size_t len)
{
    return run_deferctl(&d, args, out, len);
}

/* The fifth failure of a queue with max_attempts = 5 moves the job to the dead letters in
 * one transaction; deferctl lists, shows, kicks (back with attempt 1) and deletes them. */
static void dead_letters(zhandle_t *zh, long mark)
{
    deferd_client *c = client(&d);
    char out[4096], args[512], id[DEFERD_ID_SIZE];
    CHECK(deferctl("dead list retry", out, sizeof out) == 0);
    CHECK(strstr(out, "flaky") == NULL);
    int lines = 0;
    for (char *p = out; (p = strchr(p, '\n')); p++)
        lines++;
    CHECK(lines == 2); /* header + the job nack_backoff() failed five times */
    CHECK_CONTAINS(out, "retry/");
    char dead[DEFERD_ID_SIZE] = "";
    sscanf(strchr(out, '\n') + 1, "%255s", dead);
    CHECK(strstr(dead, "-a5") != NULL);
    char named[2 * DEFERD_ID_SIZE + 64];
    snprintf(named, sizeof named, "as %s (deferctl dead show %s)", dead, dead);
    CHECK(log_count(&d, mark, named) == 1); /* the log names the id dead show takes */
    CHECK(zk_count_jobs(zh, root, "retry") == 0);
    snprintf(args, sizeof args, "dead show %s", dead);
    CHECK(deferctl(args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "attempts: 5");
    CHECK_CONTAINS(out, "\n\nflaky");
    snprintf(args, sizeof args, "dead kick %s", dead);
    CHECK(deferctl(args, out, sizeof out) == 0);
    sscanf(out, "%255s", id);
    CHECK(deferd_subscribe(c, "retry", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(job.attempt == 1 && job.len == 5 && memcmp(job.payload, "flaky", 5) == 0);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(deferctl(args, out, sizeof out) == 3); /* already kicked: no such dead job */
    CHECK(deferctl("dead list retry", out, sizeof out) == 0);
    CHECK(strstr(out, "retry/") == NULL);
    CHECK(deferctl("dead show retry/nonsense", out, sizeof out) == 2); /* not a job id */
    CHECK(deferctl("dead frobnicate x", out, sizeof out) == 2);
    deferd_close(c);
}

int main(void)
{
    harness_init("lease", root, sizeof root);
    if (daemon_start(&d, root, "l1", NULL) != 0)
        return 1;
    CHECK(daemon_wait_connected(&d, 15000) == 0); /* puts before it are refused */
    zhandle_t *zh = zk_connect();
    expiry_and_fenced_ack();
    expired_goes_elsewhere();
    not_back_before_answer();
    unanswered_slot_freed();
    cancelled_while_held(zh);
    touch_keeps_it(zh);
    long mark = log_mark(&d);
    nack_backoff();
    dead_letters(zh, mark);
    daemon_kill(&d, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_lease");
}
