/* Delivery on time, in due order, by priority; ack removes job and lock in ZooKeeper; jobs
 * locked ahead of a consumer that leaves come again as attempt 1. */
#include <stdlib.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* 1000 jobs due at random times over 3 s arrive in due order, none early. */
static void due_order(void)
{
    enum { N = 1000 };
    deferd_client *prod = client(&d), *cons = client(&d);
    char id[DEFERD_ID_SIZE];
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK);
    srand(5);
    int64_t t0 = now_ms(), base = t0 + 5000;
    for (int i = 0; i < N; i++) {
        char payload[32];
        snprintf(payload, sizeof payload, "job-%d", i);
        CHECK(put_job(prod, "a", payload, -1, base + rand() % 3000, -1, id) == 0);
    }
    int64_t putdone = now_ms();
    CHECK(putdone < base); /* otherwise the order check below would mean nothing */
    printf("put %d jobs in %lld ms\n", N, (long long)(putdone - t0));
    static int64_t late[N];
    int64_t last_due = 0;
    int early = 0, disorder = 0;
    for (int i = 0; i < N; i++) {
        deferd_job job;
        int rc = deferd_next_job(cons, &job, 20000);
        CHECK(rc == DEFERD_OK);
        if (rc != DEFERD_OK)
            break;
        int64_t at = now_ms();
        early += at < job.due_ms;
        disorder += job.due_ms < last_due;
        last_due = job.due_ms;
        late[i] = at - job.due_ms;
        CHECK(job.attempt == 1);
        CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    CHECK(early == 0);
    CHECK(disorder == 0);
    qsort(late, N, sizeof late[0], cmp_i64);
    printf("lateness ms: p50 %lld p99 %lld max %lld (early %d, out of order %d)\n",
           (long long)late[N / 2], (long long)late[N * 99 / 100], (long long)late[N - 1], early,
           disorder);
    deferd_close(prod);
    deferd_close(cons);
}

/* Jobs due at the same moment leave in priority order (lower number first). */
static void priority_order(void)
{
    static const int prios[] = {50, 10, 30, 0, 20, 2000000000};
    static const int want[] = {0, 10, 20, 30, 50, 2000000000};
    deferd_client *prod = client(&d), *cons = client(&d);
    char id[DEFERD_ID_SIZE];
    CHECK(deferd_subscribe(cons, "b", 1) == DEFERD_OK);
    int64_t at = now_ms() + 1500;
    for (int i = 0; i < 6; i++)
        CHECK(put_job(prod, "b", "p", -1, at, prios[i], id) == 0);
    CHECK(now_ms() < at);
    for (int i = 0; i < 6; i++) {
        deferd_job job;
        CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
        CHECK(job.priority == (uint32_t)want[i]);
        CHECK(job.due_ms == at);
        CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    deferd_close(prod);
    deferd_close(cons);
}

/* While held, the job has an ephemeral lock; ack deletes both, seen by another client. */
static void ack_removes(zhandle_t *zh)
{
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE], path[512], lock[600];
    CHECK(put_job(c, "emails", "hello", 0, -1, -1, id) == 0);
    CHECK(job_path(root, id, path, sizeof path) == 0);
    snprintf(lock, sizeof lock, "%s/lock", path);
    CHECK(zk_exists(zh, path));
    CHECK(deferd_subscribe(c, "emails", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(job.len == 5 && memcmp(job.payload, "hello", 5) == 0);
    struct Stat st;
    CHECK(zoo_exists(zh, lock, 0, &st) == ZOK && st.ephemeralOwner != 0);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    CHECK(!zk_exists(zh, lock));
    CHECK(!zk_exists(zh, path));
    CHECK(deferd_ack(c, job.id) == DEFERD_ESERVER); /* a second ack finds nothing */
    CHECK_STR(deferd_last_error_code(c), "NOT_FOUND");
    deferd_job_clear(&job);
    deferd_close(c);
    CHECK(zk_count_jobs(zh, root, "emails") == 0);
    CHECK(zk_count_jobs(zh, root, "a") == 0);
}

/* A consumer of two queues, full with a job of one, gets the other queue's due job as
 * soon as it acks: a freed slot serves every queue it follows. */
static void two_queues_one_slot(void)
{
    deferd_client *prod = client(&d), *cons = client(&d);
    char ida[DEFERD_ID_SIZE], idb[DEFERD_ID_SIZE];
    CHECK(deferd_subscribe(cons, "a,b", 1) == DEFERD_OK);
    CHECK(put_job(prod, "a", "first", 0, -1, -1, ida) == 0);
    deferd_job job;
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, ida);
    CHECK(put_job(prod, "b", "second", 0, -1, -1, idb) == 0);
    deferd_job none;
    CHECK(deferd_next_job(cons, &none, 500) == DEFERD_ETIMEDOUT); /* full: nothing yet */
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(deferd_next_job(cons, &job, 5000) == DEFERD_OK);
    CHECK_STR(job.id, idb);
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(prod);
    deferd_close(cons);
}

/* A number of the daemon's STATS line, or -1. */
static long stats_number(deferd_client *c, const char *field)
{
    char buf[4096];
    return deferd_stats(c, buf, sizeof buf) == DEFERD_OK ? stats_field(buf, field) : -1;
}

/* Issue 43: while a consumer is full and answering, due jobs are locked ahead of its next
 * free slot (STATS locked_ahead); when it leaves they go back unrun: delivered to the next
 * consumer as the same attempt, under the same id. Only the job it held comes as one
 * attempt more. With CRASHED_FIRST every job was delivered once already (its holder
 * crashed), so the give-back makes that delivery again in the job's new znode to keep
 * its id (the crawler's jobs changed ids here once). */
static void ahead_given_back_unrun(int crashed_first)
{
    enum { N = 40, ACKED = 5 };
    deferd_client *prod = client(&d), *c1 = client(&d), *c2 = client(&d);
    char ids[N][DEFERD_ID_SIZE], held[DEFERD_ID_SIZE] = "";
    unsigned first = crashed_first ? 2 : 1;
    deferd_job job;
    for (int i = 0; i < N; i++)
        CHECK(put_job(prod, "emails", "x", 0, -1, -1, ids[i]) == 0);
    if (crashed_first) {
        deferd_client *c0 = client(&d);
        int taken = 0;
        CHECK(deferd_subscribe(c0, "emails", N) == DEFERD_OK);
        while (taken < N && deferd_next_job(c0, &job, 10000) == DEFERD_OK) {
            taken += job.attempt == 1;
            deferd_job_clear(&job);
        }
        CHECK(taken == N);
        deferd_close(c0); /* a crash: each job's first delivery counts */
    }
    CHECK(deferd_subscribe(c1, "emails", 1) == DEFERD_OK);
    for (int i = 0; i <= ACKED; i++) { /* answers: the window opens */
        CHECK(deferd_next_job(c1, &job, 10000) == DEFERD_OK);
        CHECK(job.attempt == first);
        if (i < ACKED)
            CHECK(deferd_ack(c1, job.id) == DEFERD_OK);
        else
            snprintf(held, sizeof held, "%s", job.id);
        deferd_job_clear(&job);
    }
    int64_t deadline = now_ms() + 10000;
    long ahead;
    while ((ahead = stats_number(prod, "locked_ahead")) < 1 && now_ms() < deadline)
        usleep(10000);
    printf("ahead: %ld locked ahead of a full consumer\n", ahead);
    CHECK(ahead >= 1);
    deferd_close(c1); /* its held job released, those locked ahead given back unrun */
    CHECK(deferd_subscribe(c2, "emails", 8) == DEFERD_OK);
    int got = 0, again = 0, held_again = 0, unknown = 0;
    while (got < N - ACKED && deferd_next_job(c2, &job, 10000) == DEFERD_OK) {
        got++;
        again += job.attempt != first;
        held_again += strcmp(job.id, held) == 0 && job.attempt == first + 1;
        int known = 0;
        for (int i = 0; i < N; i++)
            known |= strcmp(job.id, ids[i]) == 0;
        unknown += !known;
        CHECK(deferd_ack(c2, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    printf("ahead: %d delivered again, %d not as attempt %u, %d under another id\n", got,
           again, first, unknown);
    CHECK(got == N - ACKED && again == 1 && held_again == 1 && unknown == 0);
    CHECK(stats_number(prod, "locked_ahead") == 0);
    deferd_close(prod);
    deferd_close(c2);
}

int main(void)
{
    harness_init("delivery", root, sizeof root);
    harness_root_layout(root, 2); /* it checks the lock a delivery holds (claims take none) */
    if (daemon_start(&d, root, "d1", NULL) != 0)
        return 1;
    zhandle_t *zh = zk_connect();
    ack_removes(zh);
    two_queues_one_slot();
    priority_order();
    due_order();
    ahead_given_back_unrun(0);
    ahead_given_back_unrun(1);
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    CHECK(zk_count_jobs(zh, root, "emails") == 0);
    daemon_kill(&d, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_delivery");
}
