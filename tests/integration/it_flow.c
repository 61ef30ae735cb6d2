/* Flow control: round robin among consumers with free credit, and credit respected and
 * changeable. */
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];

/* 1000 jobs due together (put while their queue is paused, however long that takes), 4
 * consumers with room for all: each gets a quarter (+-10%). */
static void round_robin(void)
{
    enum { N = 1000, C = 4 };
    deferd_client *prod = client(&d), *cons[C];
    for (int k = 0; k < C; k++) {
        cons[k] = client(&d);
        CHECK(deferd_subscribe(cons[k], "emails", N) == DEFERD_OK);
    }
    char id[DEFERD_ID_SIZE], out[512];
    CHECK(run_deferctl(&d, "pause emails", out, sizeof out) == 0);
    CHECK(wait_stats(&d, "paused.emails=1", 1));
    for (int i = 0; i < N; i++)
        CHECK(put_job(prod, "emails", "rr", 0, -1, -1, id) == 0);
    deferd_job early;
    CHECK(deferd_next_job(cons[0], &early, 200) == DEFERD_ETIMEDOUT); /* paused: none yet */
    CHECK(run_deferctl(&d, "resume emails", out, sizeof out) == 0);
    int got[C] = {0}, total = 0;
    int64_t deadline = now_ms() + 30000;
    while (total < N && now_ms() < deadline) {
        for (int k = 0; k < C; k++) {
            deferd_job job;
            while (deferd_next_job(cons[k], &job, 5) == DEFERD_OK) {
                got[k]++;
                total++;
                deferd_job_clear(&job); /* acked below, after the count */
            }
        }
    }
    printf("round robin over %d jobs:", N);
    for (int k = 0; k < C; k++) {
        printf(" %d", got[k]);
        CHECK(got[k] >= N / C * 9 / 10 && got[k] <= N / C * 11 / 10);
    }
    printf("\n");
    CHECK(total == N);
    for (int k = 0; k < C; k++)
        deferd_close(cons[k]); /* releases every held job: delivered again below */
    deferd_client *drain = client(&d);
    CHECK(deferd_subscribe(drain, "emails", 100) == DEFERD_OK);
    for (int i = 0; i < N; i++) {
        deferd_job job;
        if (deferd_next_job(drain, &job, 10000) != DEFERD_OK) {
            CHECK(!"drain timed out");
            break;
        }
        if (job.attempt != 2) /* said, so that a failure shows which job and how */
            fprintf(stderr, "it_flow: job %s came back as attempt %u\n", job.id, job.attempt);
        CHECK(job.attempt == 2);
        CHECK(deferd_ack(drain, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    deferd_close(drain);
    deferd_close(prod);
}

/* A consumer never holds more than its credit; more credit (a new SUB) means more jobs. */
static void credit(void)
{
    deferd_client *prod = client(&d), *c = client(&d);
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < 10; i++)
        CHECK(put_job(prod, "b", "credit", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(c, "b", 3) == DEFERD_OK);
    deferd_job held[10];
    int n = 0;
    while (n < 10 && deferd_next_job(c, &held[n], 700) == DEFERD_OK)
        n++;
    CHECK(n == 3);
    CHECK(deferd_ack(c, held[0].id) == DEFERD_OK);
    CHECK(deferd_next_job(c, &held[n], 5000) == DEFERD_OK);
    n++;
    CHECK(deferd_next_job(c, &held[n], 700) == DEFERD_ETIMEDOUT); /* 3 held again */
    CHECK(deferd_subscribe(c, "b", 5) == DEFERD_OK);
    while (n < 10 && deferd_next_job(c, &held[n], 700) == DEFERD_OK)
        n++;
    CHECK(n == 6); /* 4 received before, 2 more for the raised credit */
    for (int i = 1; i < n; i++)
        CHECK(deferd_ack(c, held[i].id) == DEFERD_OK);
    for (int i = 0; i < n; i++)
        deferd_job_clear(&held[i]);
    while (deferd_next_job(c, &held[0], 3000) == DEFERD_OK) { /* the last 4 */
        CHECK(deferd_ack(c, held[0].id) == DEFERD_OK);
        deferd_job_clear(&held[0]);
        n++;
    }
    CHECK(n == 10);
    deferd_close(c);
    deferd_close(prod);
}

/* Waits until the daemon has read its queue's pending count (STATS shows it). */
static void wait_count(deferd_client *c, const char *want)
{
    char stats[512] = "";
    int64_t deadline = now_ms() + 10000;
    while (now_ms() < deadline && deferd_stats(c, stats, sizeof stats) == DEFERD_OK &&
           !strstr(stats, want))
        usleep(50000);
    CHECK_CONTAINS(stats, want);
}

/* max_pending = 5: the sixth put is refused with QUEUE_FULL, on this daemon at once and on
 * another daemon once it has read the counters; an ack makes room again. */
static void queue_full(void)
{
    struct daemon_proc d2;
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE], first[DEFERD_ID_SIZE];
    wait_count(c, "pending.limited=0");
    for (int i = 0; i < 5; i++)
        CHECK(put_job(c, "limited", "x", i == 0 ? 0 : 60000, -1, -1, i ? id : first) == 0);
    CHECK(deferd_put(c, "limited", "x", 1, NULL, id, sizeof id) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(c), "QUEUE_FULL");
    CHECK(daemon_start(&d2, root, "w2", NULL) == 0);
    deferd_client *c2 = client(&d2);
    wait_count(c2, "pending.limited=5");
    CHECK(deferd_put(c2, "limited", "x", 1, NULL, id, sizeof id) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(c2), "QUEUE_FULL");
    CHECK(deferd_subscribe(c, "limited", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, first);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(put_job(c, "limited", "y", 0, -1, -1, id) == 0); /* room for one again */
    wait_count(c2, "pending.limited=5");
    /* max_attempts = 1: a nack buries it (one less pending); kicking it back counts it again */
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(deferd_nack(c, job.id, -1) == DEFERD_OK);
    deferd_job_clear(&job);
    wait_count(c2, "pending.limited=4");
    char cmd[700], dead[DEFERD_ID_SIZE] = "";
    snprintf(cmd, sizeof cmd, "%s -c %s/deferd.ini dead kick %s-a1", getenv("DEFERCTL_BIN"),
             d.dir, id);
    FILE *p = popen(cmd, "r");
    CHECK(p && fscanf(p, "%255s", dead) == 1);
    if (p)
        pclose(p);
    wait_count(c2, "pending.limited=5");
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, dead);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    wait_count(c2, "pending.limited=4");
    deferd_close(c2);
    daemon_kill(&d2, SIGTERM);
    deferd_close(c);
}

int main(void)
{
    harness_init("flow", root, sizeof root);
    if (daemon_start(&d, root, "w1", NULL) != 0)
        return 1;
    round_robin();
    credit();
    queue_full();
    daemon_kill(&d, SIGTERM);
    return check_report("it_flow");
}
