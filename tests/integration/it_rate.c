/* A queue's cluster-wide start rate (deferd.ini rate = N/s, engine/rate.h): two daemons on
 * one root, consumers with room for 16 on each, rate = 4/s. Judged by ZooKeeper's own
 * stamps (each lock's ctime: the lock's multi is the one that started its rate slot): no
 * window of a second holds more than 4 starts; all 16 jobs come, at the pace the rate sets;
 * STATS and /metrics show it. Then group_rate = 2/s on queue b: each group's starts judged
 * the same way (never more than 2 in a second), two groups going side by side, and once
 * their windows are over the daemons forget them, leaving their slot nodes to the sweep
 * (deleted sooner, a node made again could be started twice in a window: engine/rate.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "httpget.h"

#define RATE 4
#define JOBS 16

static struct daemon_proc d[2];
static char root[128];
static const char *const overrides[] = {"queue.a.rate=4/s", "queue.b.group_rate=2/s",
                                        "web.dashboard=on", NULL};
#define GROUP_RATE 2
#define GROUP_JOBS 6

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The most starts of STAMPS (sorted) in any window of a second. */
static int most_in_a_second(const int64_t *at, int n)
{
    int most = 0;
    for (int i = 0; i < n; i++) {
        int in = 0;
        for (int j = i; j < n && at[j] - at[i] < 1000; j++)
            in++;
        most = in > most ? in : most;
    }
    return most;
}

/* The lock's ctime of the job held under ID, in AT[*N]. */
static void lock_stamp(zhandle_t *zh, const char *id, int64_t *at, int *n)
{
    char path[600], lock[620];
    struct Stat st;
    CHECK(job_path(root, id, path, sizeof path) == 0);
    snprintf(lock, sizeof lock, "%s/lock", path);
    CHECK(zoo_exists(zh, lock, 0, &st) == ZOK); /* held: its lock is there */
    at[(*n)++] = st.ctime;
}

/* Slot nodes of group rates (gr-) left in queue Q's slots directory; -1: unreadable. */
static int group_rate_nodes(zhandle_t *zh, const char *q)
{
    char dir[300];
    struct String_vector sv = {0};
    snprintf(dir, sizeof dir, "%s/queues/%s/slots", root, q);
    if (zoo_get_children(zh, dir, 0, &sv) != ZOK)
        return -1;
    int n = 0;
    for (int i = 0; i < sv.count; i++)
        n += strncmp(sv.data[i], "gr-", 3) == 0;
    deallocate_String_vector(&sv);
    return n;
}

static void group_rates(deferd_client *p, deferd_client **cs)
{
    static const char *const groups[2] = {"acme", "beta"};
    char id[DEFERD_ID_SIZE], group[DEFERD_GROUP_MAX + 1];
    for (int i = 0; i < GROUP_JOBS; i++)
        for (int g = 0; g < 2; g++) {
            deferd_put_opts o = {.group = groups[g]};
            CHECK(deferd_put(p, "b", "per group", 9, &o, id, sizeof id) == DEFERD_OK);
        }
    for (int k = 0; k < 2; k++)
        CHECK(deferd_subscribe(cs[k], "b", 16) == DEFERD_OK);
    int64_t at[2][GROUP_JOBS];
    int n[2] = {0, 0};
    deferd_job job;
    zhandle_t *zh = zk_connect();
    for (int64_t until = now_ms() + 20000; n[0] + n[1] < 2 * GROUP_JOBS && now_ms() < until;)
        for (int k = 0; k < 2; k++)
            if (deferd_next_job(cs[k], &job, 5) == DEFERD_OK) {
                CHECK(deferd_job_group(job.id, group, sizeof group) == DEFERD_OK);
                int g = strcmp(group, groups[1]) == 0;
                if (n[g] < GROUP_JOBS)
                    lock_stamp(zh, job.id, at[g], &n[g]);
                CHECK(deferd_ack(cs[k], job.id) == DEFERD_OK);
                deferd_job_clear(&job);
            }
    for (int g = 0; g < 2; g++) {
        CHECK(n[g] == GROUP_JOBS);
        qsort(at[g], (size_t)n[g], sizeof at[g][0], cmp_i64);
        int most = most_in_a_second(at[g], n[g]);
        printf("group_rate %d/s: group %s: %d jobs over %lld ms, at most %d in any second\n",
               GROUP_RATE, groups[g], n[g], (long long)(at[g][n[g] - 1] - at[g][0]), most);
        CHECK(most <= GROUP_RATE);
        CHECK(at[g][n[g] - 1] - at[g][0] >= (GROUP_JOBS / GROUP_RATE - 1) * 1000);
    }
    /* side by side: the second group did not wait for the first to finish */
    CHECK(at[1][0] < at[0][GROUP_JOBS - 1] && at[0][0] < at[1][GROUP_JOBS - 1]);
    CHECK(queue_stat(cs[0], "b", "group_rate") == GROUP_RATE);
    char *body = NULL;
    CHECK(http_request(metrics_port_in_log(d[0].log), "GET", "/ui/queues/b", 10000, &body, NULL,
                       0) == 200);
    CHECK(body && strstr(body, "data-group-rate=\"2\"") &&
          strstr(body, "At most 2 per second for each group"));
    free(body);
    CHECK(metric_in_log(d[0].log, "deferd_limit{queue=\"b\",kind=\"group_rate\"}") ==
          GROUP_RATE);
    /* each daemon forgets its groups at its own tidy pass (once a second) once their last
     * start is a window old by the cluster clock's upper bound: later on a loaded machine,
     * where that bound is wider (the full suite took more than 10 s once) */
    CHECK(wait_queue_stat(cs[0], "b", "rate_groups", 0, 30000) &&
          wait_queue_stat(cs[1], "b", "rate_groups", 0, 30000));
    int left = group_rate_nodes(zh, "b");
    printf("group_rate: %d group slot nodes left to the sweep once forgotten\n", left);
    CHECK(left > 0); /* none deleted while another daemon may know them */
    CHECK(queue_stat(cs[0], "b", "rate_slots_swept") +
          queue_stat(cs[1], "b", "rate_slots_swept") == 0);
    zookeeper_close(zh);
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
                lock_stamp(zh, job.id, at, &n);
                CHECK(deferd_ack(cs[k], job.id) == DEFERD_OK);
                deferd_job_clear(&job);
            }
    zookeeper_close(zh);
    CHECK(n == JOBS);
    qsort(at, (size_t)n, sizeof at[0], cmp_i64);
    int most = most_in_a_second(at, n);
    printf("rate %d/s: %d jobs over %lld ms, at most %d started in any second by ZooKeeper's "
           "clock\n", RATE, n, (long long)(n ? at[n - 1] - at[0] : 0), most);
    CHECK(most <= RATE);
    CHECK(n == JOBS && at[n - 1] - at[0] >= (JOBS / RATE - 1) * 1000);
    CHECK(queue_stat(cs[0], "a", "rate") == RATE);
    CHECK(queue_stat(cs[0], "a", "rate_window_ms") == 1000);
    CHECK(queue_stat(cs[0], "a", "rate_waits") + queue_stat(cs[1], "a", "rate_waits") >= 1);
    CHECK(metric_in_log(d[0].log, "deferd_limit{queue=\"a\",kind=\"rate\"}") == RATE);
    group_rates(p, cs);
    for (int k = 0; k < 2; k++)
        deferd_close(cs[k]);
    deferd_close(p);
    daemon_kill(&d[0], SIGTERM);
    daemon_kill(&d[1], SIGTERM);
    return check_report("it_rate");
}
