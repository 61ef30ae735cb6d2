/* Queue depth read from ZooKeeper (docs/metrics.md, "Queue depth") against a known backlog:
 * queue a holds 3 overdue jobs, 2100 due at one instant within the minute (a bucket a
 * writer shards: its first 2048 jobs in the bucket, the rest in a shard of its own), 7
 * within the hour and 4 later; queue b 2 dead letters. After a refresh that began once
 * every put was answered, GET /metrics, STATS QUEUE and deferctl stats --json say exactly
 * that, with the oldest overdue job's age; a second daemon held to depth_max_reads = 3
 * says its figures are truncated; the process_* families are there. The census counts
 * every job: the 4 due in two hours (day), 2 in three days (week), 1 in thirty (later), and,
 * once the root is upgraded to packs, 5 jobs put into a pack 5 hours ahead. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "harness_pack.h"
#include "httpget.h"

#define SHARDED 2100

static struct daemon_proc d, small;
static char root[128];

static const char *const ov[] = {"metrics.listen=127.0.0.1:0", "metrics.depth_interval=1s",
                                 "queue b.max_attempts=1", "queue a.pack_after=1h", NULL};
static const char *const small_ov[] = {"metrics.listen=127.0.0.1:0",
                                       "metrics.depth_interval=1s",
                                       "metrics.depth_max_reads=3", NULL};

static double metric(const struct daemon_proc *p, const char *name, const char *labels)
{
    char series[200];
    snprintf(series, sizeof series, "%s{%s}", name, labels);
    return metric_in_log(p->log, series);
}

/* Waits up to 20 s for a refresh of QUEUE that began at AFTER_MS or later (each queue is
 * refreshed on its own schedule). */
static int wait_refresh_of(const struct daemon_proc *p, const char *queue, int64_t after_ms)
{
    char labels[64];
    snprintf(labels, sizeof labels, "queue=\"%s\"", queue);
    int64_t deadline = now_ms() + 20000;
    while (now_ms() < deadline) {
        double t = metric(p, "deferd_queue_depth_refreshed_timestamp_seconds", labels);
        if (t * 1000 >= (double)after_ms)
            return 0;
        usleep(100000);
    }
    return -1;
}

static int wait_refresh(const struct daemon_proc *p, int64_t after_ms)
{
    return wait_refresh_of(p, "a", after_ms);
}

static void put_n(deferd_client *c, const char *queue, int n, int64_t at_ms)
{
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < n; i++)
        CHECK(put_job(c, queue, "depth", -1, at_ms, -1, id) == 0);
}

/* The 2100 jobs' bucket has a shard: else this test would not test counting one. */
static void check_sharded(int64_t at_ms)
{
    zhandle_t *zh = zk_connect();
    char path[512];
    struct String_vector kids = {0};
    int shards = 0;
    snprintf(path, sizeof path, "%s/queues/a/jobs/%lld/%lld/%lld", root,
             (long long)(at_ms / 10000000), (long long)(at_ms / 100000), (long long)(at_ms / 100));
    CHECK(zoo_get_children(zh, path, 0, &kids) == ZOK);
    for (int i = 0; i < kids.count; i++)
        shards += kids.data[i][0] == 's';
    printf("the bucket of the %d jobs: %d names, %d of them shards\n", SHARDED, kids.count,
           shards);
    CHECK(shards >= 1);
    deallocate_String_vector(&kids);
    zookeeper_close(zh);
}

static void check_metrics(int64_t oldest_ms, int64_t refreshed_by)
{
    CHECK(metric(&d, "deferd_queue_jobs", "queue=\"a\",window=\"overdue\"") == 3);
    CHECK(metric(&d, "deferd_queue_jobs", "queue=\"a\",window=\"minute\"") == SHARDED);
    CHECK(metric(&d, "deferd_queue_jobs", "queue=\"a\",window=\"hour\"") == 7);
    CHECK(metric(&d, "deferd_queue_dead_jobs", "queue=\"a\"") == 0);
    CHECK(metric(&d, "deferd_queue_dead_jobs", "queue=\"b\"") == 2);
    CHECK(metric(&d, "deferd_queue_jobs", "queue=\"b\",window=\"overdue\"") == 0);
    CHECK(metric(&d, "deferd_queue_depth_truncated", "queue=\"a\"") == 0);
    double age = metric(&d, "deferd_queue_oldest_overdue_seconds", "queue=\"a\"");
    printf("oldest overdue: %.3f s (due %lld ms before the test looked)\n", age,
           (long long)(refreshed_by - oldest_ms));
    CHECK(age * 1000 >= 180000 && age * 1000 <= (double)(refreshed_by - oldest_ms) + 1);
    CHECK(metric_in_log(d.log, "deferd_queue_depth_reads_total") > 0);
}

/* Waits up to 20 s for a census pass of queue a that began at AFTER_MS or later. */
static int wait_census(int64_t after_ms)
{
    int64_t deadline = now_ms() + 20000;
    while (now_ms() < deadline) {
        double t = metric(&d, "deferd_queue_census_timestamp_seconds", "queue=\"a\"");
        if (t * 1000 >= (double)after_ms)
            return 0;
        usleep(100000);
    }
    return -1;
}

static void check_census(double total, double day, double week, double later)
{
    double t = metric(&d, "deferd_queue_census_jobs", "queue=\"a\"");
    double dy = metric(&d, "deferd_queue_jobs", "queue=\"a\",window=\"day\"");
    double wk = metric(&d, "deferd_queue_jobs", "queue=\"a\",window=\"week\"");
    double lt = metric(&d, "deferd_queue_jobs", "queue=\"a\",window=\"later\"");
    printf("census: %g jobs, %g within a day, %g within a week, %g later\n", t, dy, wk, lt);
    CHECK(t == total && dy == day && wk == week && lt == later);
    CHECK(metric_in_log(d.log, "deferd_queue_census_reads_total") > 0);
}

/* The census of queue a: the unpacked jobs, then 5 more in a pack. */
static void census(int64_t put_done)
{
    char out[4096];
    CHECK(wait_census(put_done) == 0);
    check_census(3 + SHARDED + 7 + 4 + 2 + 1, 4, 2, 1);
    deferd_client *c = client(&d);
    CHECK(queue_stat(c, "a", "census_total") == 3 + SHARDED + 7 + 4 + 2 + 1);
    CHECK(queue_stat(c, "a", "depth_week") == 2);
    long mark = log_mark(&d);
    CHECK(run_deferctl(&d, "layout --upgrade --yes", out, sizeof out) == 0);
    CHECK(log_wait(&d, mark, "layout version 2", 15000));
    put_n(c, "a", 5, now_ms() + 5 * 3600000);
    CHECK(stats_has(&d, "packed_puts=5"));
    deferd_close(c);
    CHECK(wait_census(now_ms()) == 0);
    check_census(3 + SHARDED + 7 + 4 + 2 + 1 + 5, 4 + 5, 2, 1);
}

static void check_stats(void)
{
    deferd_client *c = client(&d);
    CHECK(queue_stat(c, "a", "depth_overdue") == 3);
    CHECK(queue_stat(c, "a", "depth_minute") == SHARDED);
    CHECK(queue_stat(c, "a", "depth_hour") == 7);
    CHECK(queue_stat(c, "b", "depth_dead") == 2);
    CHECK(queue_stat(c, "a", "depth_truncated") == 0);
    deferd_close(c);
    char out[8192];
    CHECK(run_deferctl(&d, "stats a --json", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "\"depth_overdue\":3,");
    CHECK_CONTAINS(out, "\"depth_minute\":2100,");
    CHECK_CONTAINS(out, "\"depth_hour\":7,");
}

static void check_process(void)
{
    double start = metric_in_log(d.log, "process_start_time_seconds");
    CHECK(start > 0 && start <= (double)now_ms() / 1e3 + 1 && start > (double)now_ms() / 1e3 - 600);
    CHECK(metric_in_log(d.log, "process_open_fds") >= 3);
    CHECK(metric_in_log(d.log, "process_max_fds") >= metric_in_log(d.log, "process_open_fds"));
    CHECK(metric_in_log(d.log, "process_resident_memory_bytes") > 1e6);
    CHECK(metric_in_log(d.log, "process_virtual_memory_bytes") >=
          metric_in_log(d.log, "process_resident_memory_bytes"));
    CHECK(metric_in_log(d.log, "process_cpu_seconds_total") >= 0);
}

int main(void)
{
    harness_init("depth", root, sizeof root);
    zhandle_t *zh = zk_connect(); /* a root deferd 0.2 filled: far jobs are job znodes */
    CHECK(pack_root_of_old(zh, root) == ZOK);
    zookeeper_close(zh);
    CHECK(daemon_start(&d, root, "d", ov) == 0 && daemon_wait_connected(&d, 15000) == 0);
    deferd_client *prod = client(&d);
    int64_t t0 = now_ms(), oldest = t0 - 180000, soon = t0 + 45000;
    put_n(prod, "a", 1, oldest);
    put_n(prod, "a", 2, t0 - 120000);
    put_n(prod, "a", SHARDED, soon);
    put_n(prod, "a", 7, t0 + 30 * 60000);
    put_n(prod, "a", 4, t0 + 2 * 3600000);
    put_n(prod, "a", 2, t0 + 3 * 86400000LL);
    put_n(prod, "a", 1, t0 + 30 * 86400000LL);
    CHECK(make_dead_letters(&d, "b", 2) == 0); /* max_attempts 1: two dead letters */
    deferd_close(prod);
    int64_t put_done = now_ms();
    printf("backlog put in %lld ms\n", (long long)(put_done - t0));
    CHECK(put_done < soon - 5000); /* the minute's jobs are still ahead when counted */
    check_sharded(soon);
    CHECK(wait_refresh(&d, put_done) == 0);
    CHECK(wait_refresh_of(&d, "b", put_done) == 0); /* the dead letters' queue */
    check_metrics(oldest, now_ms());
    check_stats();
    check_process();

    census(put_done);

    CHECK(daemon_start(&small, root, "small", small_ov) == 0 &&
          daemon_wait_connected(&small, 15000) == 0);
    CHECK(wait_refresh(&small, put_done) == 0);
    CHECK(metric(&small, "deferd_queue_depth_truncated", "queue=\"a\"") == 1);
    double seen = 0;
    for (int w = 0; w < 3; w++) {
        static const char *const win[] = {"overdue", "minute", "hour"};
        char labels[64];
        snprintf(labels, sizeof labels, "queue=\"a\",window=\"%s\"", win[w]);
        seen += metric(&small, "deferd_queue_jobs", labels);
    }
    printf("held to 3 reads: %g of the %d jobs within the hour counted\n", seen, 3 + SHARDED + 7);
    CHECK(seen >= 0 && seen < 3 + SHARDED + 7);
    daemon_kill(&small, SIGTERM);
    daemon_kill(&d, SIGTERM);
    return check_report("it_depth");
}
