/* Claims (layout version 3, issue 43) against a real ZooKeeper, two daemons on a root whose
 * marker says 3: every job delivered once across both and acked, no claim node left; a nack
 * moves its job; a third daemon whose queue has a limit locks jobs of the same queue the
 * version 2 way beside one that claims them: each delivered once; a daemon killed -9 while its consumer holds claimed jobs: the other daemon
 * recovers its claims once its session is gone, and delivers every job again under its id,
 * as attempt 2; while they are held, the queue's depth counts them overdue; CANCEL of a
 * claimed job, through either daemon; our own put's job claimed without a read. */
#include <zookeeper/zookeeper.h>

#include "harness.h"

#define N_SHARED 200
#define N_HELD 20

static struct daemon_proc d[2], locker;
static char root[128];

/* Claim nodes of QUEUE left (0 when it has none). */
static int claims_left(zhandle_t *zh, const char *queue)
{
    return zk_count_claims(zh, root, queue);
}

static int wait_claims_left(zhandle_t *zh, const char *queue, int want, int ms)
{
    int64_t deadline = now_ms() + ms;
    int n;
    while ((n = claims_left(zh, queue)) != want && now_ms() < deadline)
        usleep(20000);
    if (n != want)
        fprintf(stderr, "queue %s: %d claim nodes, waited %d ms for %d\n", queue, n, ms, want);
    return n == want;
}

static int id_index(char ids[][DEFERD_ID_SIZE], int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0)
            return i;
    return -1;
}

/* 200 jobs put through d0, consumed through both daemons: each delivered once, acked. */
static void delivered_once(zhandle_t *zh)
{
    static char ids[N_SHARED][DEFERD_ID_SIZE];
    int seen[N_SHARED] = {0}, total = 0, twice = 0, foreign = 0;
    deferd_client *prod = client(&d[0]), *c[2] = {client(&d[0]), client(&d[1])};
    CHECK(deferd_subscribe(c[0], "a", 16) == DEFERD_OK);
    CHECK(deferd_subscribe(c[1], "a", 16) == DEFERD_OK);
    for (int i = 0; i < N_SHARED; i++)
        CHECK(put_job(prod, "a", "shared", 0, -1, -1, ids[i]) == 0);
    int64_t deadline = now_ms() + 30000;
    while (total < N_SHARED && now_ms() < deadline) {
        for (int k = 0; k < 2; k++) {
            deferd_job job;
            if (next_job_push(c[k], &job, 50) != 0)
                continue;
            int at = id_index(ids, N_SHARED, job.id);
            foreign += at < 0;
            twice += at >= 0 && seen[at]++ > 0;
            total++;
            CHECK(job.attempt == 1 && job.len == 6 && memcmp(job.payload, "shared", 6) == 0);
            CHECK(deferd_ack(c[k], job.id) == DEFERD_OK);
            deferd_job_clear(&job);
        }
    }
    CHECK(total == N_SHARED && twice == 0 && foreign == 0);
    if (total != N_SHARED || twice || foreign)
        fprintf(stderr, "delivered %d of %d, %d twice, %d unknown\n", total, N_SHARED, twice,
                foreign);
    CHECK(stats_has(&d[0], " claims=0 ") == 0 || stats_has(&d[1], " claims=0 ") == 0);
    CHECK(wait_claims_left(zh, "a", 0, 5000));
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    deferd_close(prod);
    deferd_close(c[0]);
    deferd_close(c[1]);
}

/* CANCEL of a claimed job (gone from its bucket): without force=1, IN_FLIGHT naming the
 * holder's host:pid, through either daemon. With it, through the other daemon (its claim
 * written without the job, the holder's session node touched), through the holder, and
 * with deferctl cancel --force: each time the consumer gets CANCELLED, its late ack
 * LEASE_LOST, no claim is left and the job is not delivered again. */
static void cancel_claimed(zhandle_t *zh)
{
    char id[DEFERD_ID_SIZE], got[DEFERD_ID_SIZE], pid[32];
    deferd_client *other = client(&d[1]), *own = client(&d[0]), *c = client(&d[0]);
    deferd_client *via[2] = {other, own}; /* and deferctl, third */
    deferd_event ev;
    snprintf(pid, sizeof pid, ":%d", (int)d[0].pid);
    CHECK(deferd_subscribe(c, "a", 1) == DEFERD_OK);
    for (int k = 0; k < 3; k++) {
        CHECK(put_job(other, "a", "doomed", 0, -1, -1, id) == 0);
        CHECK(next_event(c, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
        CHECK_STR(ev.job.id, id);
        deferd_job_clear(&ev.job);
        CHECK(!zk_job_exists(zh, root, id) && claims_left(zh, "a") == 1);
        if (k == 2) { /* deferctl, straight to ZooKeeper */
            char args[400], out[1024];
            snprintf(args, sizeof args, "cancel %s 2>&1", id);
            CHECK(run_deferctl(&d[1], args, out, sizeof out) != 0);
            CHECK_CONTAINS(out, pid);
            snprintf(args, sizeof args, "cancel --force %s", id);
            CHECK(run_deferctl(&d[1], args, out, sizeof out) == 0);
        } else {
            CHECK(deferd_cancel(via[k], id, NULL, NULL, 0, got, sizeof got) == DEFERD_ESERVER);
            CHECK_STR(deferd_last_error_code(via[k]), "IN_FLIGHT");
            CHECK_CONTAINS(deferd_last_error(via[k]), pid);
            CHECK(deferd_cancel(via[k], id, NULL, NULL, 1, got, sizeof got) == DEFERD_OK);
        }
        CHECK(next_event(c, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_CANCELLED);
        CHECK_STR(ev.job.id, id);
        CHECK(deferd_ack(c, id) == DEFERD_ESERVER);
        CHECK_STR(deferd_last_error_code(c), "LEASE_LOST");
        CHECK(wait_claims_left(zh, "a", 0, 5000));
        CHECK(!zk_job_exists(zh, root, id));
        CHECK(next_event(c, &ev, 1000) == DEFERD_ETIMEDOUT); /* not delivered again */
    }
    deferd_close(other);
    deferd_close(own);
    deferd_close(c);
}

/* A nack with a delay moves the job out of its claim: delivered again, attempt 2, new id. */
static void nack_moves(zhandle_t *zh)
{
    deferd_client *c = client(&d[1]);
    char id[DEFERD_ID_SIZE];
    deferd_job job;
    CHECK(deferd_subscribe(c, "retry", 1) == DEFERD_OK);
    CHECK(put_job(c, "retry", "again", 0, -1, -1, id) == 0);
    CHECK(next_job_push(c, &job, 10000) == 0 && job.attempt == 1);
    CHECK_STR(job.id, id);
    CHECK(deferd_nack(c, job.id, 100) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(next_job_push(c, &job, 10000) == 0 && job.attempt == 2);
    CHECK(strcmp(job.id, id) != 0); /* moved: a new name */
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(wait_claims_left(zh, "retry", 0, 5000));
    deferd_close(c);
}

static long payload_reads(deferd_client *c)
{
    char buf[4096];
    return deferd_stats(c, buf, sizeof buf) == DEFERD_OK ? stats_field(buf, "payload_reads") : -1;
}

/* A job our put stores, due already, into a bucket the mirror follows, while a consumer has
 * room: the mirror enters it and it is claimed at once, with the payload, version and
 * deliveries the put made: no read of the job first (it was read, a round trip, when the
 * claim went out before the put's payload was handed to the job). */
static void own_put_not_read(void)
{
    deferd_client *c = client(&d[0]);
    char id[DEFERD_ID_SIZE];
    deferd_job job;
    int64_t at = now_ms() - 1000; /* a bucket in the past, kept while fresh (GC_FRESH_MS) */
    CHECK(deferd_subscribe(c, "a", 4) == DEFERD_OK);
    CHECK(put_job(c, "a", "first", -1, at, -1, id) == 0); /* its bucket new: listed */
    CHECK(next_job_push(c, &job, 10000) == 0 && deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    long before = payload_reads(c);
    CHECK(put_job(c, "a", "second", -1, at, -1, id) == 0); /* the same bucket, followed */
    CHECK(next_job_push(c, &job, 10000) == 0);
    CHECK_STR(job.id, id);
    CHECK(job.len == 6 && memcmp(job.payload, "second", 6) == 0);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(before >= 0 && payload_reads(c) == before);
    deferd_close(c);
}

/* One root, both ways at once: a daemon whose queue has a limit locks its jobs (version 2),
 * another claims them. The locker's consumer holds 16 before the claimer's comes; every job
 * is delivered once, and nothing is left. */
static void mixed_with_locks(zhandle_t *zh)
{
    static char ids[N_SHARED][DEFERD_ID_SIZE];
    int seen[N_SHARED] = {0}, got[2] = {0}, bad = 0;
    deferd_client *prod = client(&d[1]), *c[2] = {client(&locker), client(&d[1])};
    deferd_job job;
    for (int i = 0; i < N_SHARED; i++)
        CHECK(put_job(prod, "emails", "mixed", 0, -1, -1, ids[i]) == 0);
    CHECK(deferd_subscribe(c[0], "emails", 16) == DEFERD_OK);
    deferd_job held[16];
    for (int i = 0; i < 16; i++) { /* locked the version 2 way, held while the other claims */
        CHECK(next_job_push(c[0], &held[i], 10000) == 0);
        int at = id_index(ids, N_SHARED, held[i].id);
        bad += at < 0 || seen[at]++ > 0;
        got[0]++;
    }
    CHECK(deferd_subscribe(c[1], "emails", 16) == DEFERD_OK);
    int64_t deadline = now_ms() + 30000;
    while (got[1] < N_SHARED - 16 && now_ms() < deadline) {
        if (next_job_push(c[1], &job, 200) != 0)
            continue;
        int at = id_index(ids, N_SHARED, job.id);
        bad += at < 0 || seen[at]++ > 0 || job.attempt != 1;
        got[1]++;
        CHECK(deferd_ack(c[1], job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    for (int i = 0; i < 16; i++) {
        CHECK(deferd_ack(c[0], held[i].id) == DEFERD_OK);
        deferd_job_clear(&held[i]);
    }
    CHECK(got[0] == 16 && got[1] == N_SHARED - 16 && bad == 0);
    if (got[1] != N_SHARED - 16 || bad)
        fprintf(stderr, "mixed: locked %d, claimed %d of %d, %d wrong\n", got[0], got[1],
                N_SHARED - 16, bad);
    CHECK(next_job_push(c[0], &job, 300) != 0); /* nothing more, to either */
    CHECK(stats_has(&locker, " claims=0 ") == 1);
    CHECK(wait_claims_left(zh, "emails", 0, 5000));
    CHECK(zk_count_jobs(zh, root, "emails") == 0);
    deferd_close(prod);
    deferd_close(c[0]);
    deferd_close(c[1]);
}

/* d0's consumer holds 20 claimed jobs when d0 is killed -9: once its session is gone, d1
 * recovers the claims and delivers every job again, same id, attempt 2. */
static void killed_holder_recovered(zhandle_t *zh)
{
    static char ids[N_HELD][DEFERD_ID_SIZE];
    int seen[N_HELD] = {0}, got = 0, bad = 0;
    deferd_client *prod = client(&d[1]), *holder = client(&d[0]);
    deferd_job job;
    CHECK(deferd_subscribe(holder, "b", N_HELD) == DEFERD_OK);
    for (int i = 0; i < N_HELD; i++)
        CHECK(put_job(prod, "b", "held", 0, -1, -1, ids[i]) == 0);
    for (int i = 0; i < N_HELD; i++) {
        CHECK(next_job_push(holder, &job, 10000) == 0 && job.attempt == 1);
        deferd_job_clear(&job);
    }
    int in_buckets = 0;
    for (int i = 0; i < N_HELD; i++)
        in_buckets += zk_job_exists(zh, root, ids[i]);
    CHECK(claims_left(zh, "b") >= 1 && in_buckets == 0);
    CHECK(zk_count_jobs(zh, root, "b") == N_HELD); /* the claims' records count */
    /* the queue's depth counts them, overdue, though no bucket holds them */
    deferd_client *ctl = client(&d[1]);
    CHECK(wait_queue_stat(ctl, "b", "depth_overdue", N_HELD, 10000));
    deferd_close(ctl);
    /* out of its bucket, yet deferctl finds it in its claim, and will not cancel it */
    char args[512], out[4096], pid[32];
    snprintf(args, sizeof args, "show %s", ids[0]);
    snprintf(pid, sizeof pid, ":%d (", (int)d[0].pid);
    CHECK(run_deferctl(&d[1], args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "held by:  deferd at ");
    CHECK_CONTAINS(out, pid);
    CHECK_CONTAINS(out, "attempts: 1");
    snprintf(args, sizeof args, "cancel %s 2>&1", ids[0]);
    CHECK(run_deferctl(&d[1], args, out, sizeof out) != 0);
    CHECK_CONTAINS(out, "is in flight");
    /* and lists it among the queue's jobs, in flight: every held one, none twice */
    static char listed[65536];
    CHECK(run_deferctl(&d[1], "list b --limit 1000", listed, sizeof listed) == 0);
    int rows = 0;
    for (int i = 0; i < N_HELD; i++) {
        const char *at = strstr(listed, ids[i]);
        rows += at != NULL;
        CHECK(at && !strstr(at + 1, ids[i]));
        const char *eol = at ? strchr(at, '\n') : NULL;
        CHECK(eol && memmem(at, (size_t)(eol - at), "in-flight", 9) != NULL);
    }
    CHECK(rows == N_HELD);
    long mark = log_mark(&d[1]);
    daemon_kill(&d[0], SIGKILL);
    deferd_close(holder);
    deferd_client *c = client(&d[1]);
    CHECK(deferd_subscribe(c, "b", N_HELD) == DEFERD_OK);
    int64_t deadline = now_ms() + 30000;
    while (got < N_HELD && now_ms() < deadline) {
        if (next_job_push(c, &job, 200) != 0)
            continue;
        int at = id_index(ids, N_HELD, job.id);
        bad += at < 0 || seen[at]++ > 0 || job.attempt != 2;
        got++;
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    CHECK(got == N_HELD && bad == 0);
    if (got != N_HELD || bad)
        fprintf(stderr, "after the kill: %d of %d delivered again, %d wrong\n", got, N_HELD, bad);
    CHECK(log_count(&d[1], mark, "its session is gone: recovered") >= 1);
    CHECK(stats_has(&d[1], " claims_recovered=0 ") == 0);
    CHECK(wait_claims_left(zh, "b", 0, 5000));
    deferd_close(prod);
    deferd_close(c);
}

int main(void)
{
    harness_init("claims", root, sizeof root);
    zhandle_t *zh = zk_connect();
    char marker[160];
    snprintf(marker, sizeof marker, "%s/layout", root);
    CHECK(zoo_create(zh, root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
    CHECK(zoo_create(zh, marker, "3", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
    static const char *const often[] = {"metrics.depth_interval=1s", NULL};
    if (daemons_start(d, 2, root, often) != 0)
        return 1;
    CHECK(wait_stats(&d[0], " layout_version=3 ", 1) && wait_stats(&d[1], " layout_version=3 ", 1));
    static const char *const limited[] = {"queue.emails.concurrency=1000", NULL};
    CHECK(daemon_start(&locker, root, "locker", limited) == 0 &&
          daemon_wait_connected(&locker, 20000) == 0);
    delivered_once(zh);
    cancel_claimed(zh);
    nack_moves(zh);
    own_put_not_read();
    mixed_with_locks(zh);
    daemon_kill(&locker, SIGTERM);
    killed_holder_recovered(zh);
    daemon_kill(&d[1], SIGTERM);
    zookeeper_close(zh);
    return check_report("it_claims");
}
