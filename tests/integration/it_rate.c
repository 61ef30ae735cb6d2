/* A queue's cluster-wide start rate (deferd.ini rate = N/s, engine/rate.h): two daemons on
 * one root, consumers with room for 16 on each, rate = 4/s. Judged by ZooKeeper's own
 * stamps (each lock's ctime: the lock's multi is the one that started its rate slot): no
 * window of a second holds more than 4 starts; all 16 jobs come, at the pace the rate sets;
 * STATS and /metrics show it. */
#include <stdlib.h>

#include "harness.h"
#include "httpget.h"

#define RATE 4
#define JOBS 16

static struct daemon_proc d[2];
static char root[128];
static const char *const overrides[] = {"queue.a.rate=4/s", NULL};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    harness_init("rate", root, sizeof root);
    if (daemons_start(d, 2, root, overrides) != 0)
        return 1;
    deferd_client *p = client(&d[0]), *cs[2] = {client(&d[0]), client(&d[1])};
    for (int k = 0; k < 2; k++)
        CHECK(deferd_subscribe(cs[k], "a", 16) == DEFERD_OK);
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < JOBS; i++)
        CHECK(put_job(p, "a", "paced", 0, -1, -1, id) == 0);
    int64_t at[JOBS];
    int n = 0;
    deferd_job job;
    zhandle_t *zh = zk_connect();
    for (int64_t until = now_ms() + 20000; n < JOBS && now_ms() < until;)
        for (int k = 0; k < 2 && n < JOBS; k++)
            if (deferd_next_job(cs[k], &job, 5) == DEFERD_OK) {
                char path[600], lock[620];
                struct Stat st;
                CHECK(job_path(root, job.id, path, sizeof path) == 0);
                snprintf(lock, sizeof lock, "%s/lock", path);
                CHECK(zoo_exists(zh, lock, 0, &st) == ZOK); /* held: its lock is there */
                at[n++] = st.ctime;
                CHECK(deferd_ack(cs[k], job.id) == DEFERD_OK);
                deferd_job_clear(&job);
            }
    zookeeper_close(zh);
    CHECK(n == JOBS);
    qsort(at, (size_t)n, sizeof at[0], cmp_i64);
    int most = 0;
    for (int i = 0; i < n; i++) {
        int in = 0;
        for (int j = i; j < n && at[j] - at[i] < 1000; j++)
            in++;
        most = in > most ? in : most;
    }
    printf("rate %d/s: %d jobs over %lld ms, at most %d started in any second by ZooKeeper's "
           "clock\n", RATE, n, (long long)(n ? at[n - 1] - at[0] : 0), most);
    CHECK(most <= RATE);
    CHECK(n == JOBS && at[n - 1] - at[0] >= (JOBS / RATE - 1) * 1000);
    CHECK(queue_stat(cs[0], "a", "rate") == RATE);
    CHECK(queue_stat(cs[0], "a", "rate_window_ms") == 1000);
    CHECK(queue_stat(cs[0], "a", "rate_waits") + queue_stat(cs[1], "a", "rate_waits") >= 1);
    CHECK(metric_in_log(d[0].log, "deferd_limit{queue=\"a\",kind=\"rate\"}") == RATE);
    for (int k = 0; k < 2; k++)
        deferd_close(cs[k]);
    deferd_close(p);
    daemon_kill(&d[0], SIGTERM);
    daemon_kill(&d[1], SIGTERM);
    return check_report("it_rate");
}
