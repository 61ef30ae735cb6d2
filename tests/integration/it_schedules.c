/* A recurring schedule shared by three daemons (issue 21): the same [schedule tick]
 * (every = 1s) on each, one killed with -9 and started again in the middle. Every
 * occurrence is put exactly once (counted by key: each instant's job comes once, as
 * attempt 1), none is missing, and each is delivered not before its instant; the daemons'
 * put counters add up to the occurrences put (each counted by the one whose write won). */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "harness_sched.h"
#include "httpget.h"
#include "layout.h"
#include "schedule.h"

#define RUN_MS 30000

static const char *const ov[] = {"schedule.tick.queue=a", "schedule.tick.every=1s",
                                 "schedule.tick.payload=tick", "metrics.listen=127.0.0.1:0",
                                 NULL};
#define PUT_SERIES "deferd_schedule_occurrences_put_total{schedule=\"tick\"}"

/* D's put counter of schedule tick: 0 while it has put nothing (the series appears with
 * its first count), -1 when its metrics do not answer. */
static double puts_of(const struct daemon_proc *d)
{
    double v = metric_in_log(d->log, PUT_SERIES);
    if (v >= 0)
        return v;
    return metric_in_log(d->log, "deferd_draining") >= 0 ? 0 : -1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Each instant of [FIRST, LAST] once, none before its instant; lateness p50/p99. */
static void check_exactly_once(const struct occs *got, int64_t first, int64_t last)
{
    int64_t late[OCC_MAX];
    size_t n = 0;
    for (int64_t t = first; t <= last; t += 1000) {
        size_t k = occ_count(got, "tick", t, t, 0);
        if (k != 1)
            fprintf(stderr, "occurrence tick:%lld delivered %zu times\n", (long long)t, k);
        CHECK(k == 1);
    }
    for (size_t i = 0; i < got->n; i++) {
        const struct occ *o = &got->v[i];
        CHECK(o->instant % 1000 == 0 && o->attempt == 1 && o->due == o->instant);
        CHECK(o->recv >= o->instant);
        if (o->instant >= first && o->instant <= last)
            late[n++] = o->recv - o->instant;
    }
    qsort(late, n, sizeof *late, cmp_i64);
    if (n)
        printf("%zu occurrences, lateness p50 %lld ms, p99 %lld ms (as the test saw them)\n", n,
               (long long)late[n / 2], (long long)late[(n * 99) / 100]);
}

/* The occurrences [FIRST, the state node's latest] against the sum of the daemons' put
 * counters, read between two equal reads of the state node (no pass landed meanwhile). */
static void check_put_counters(zhandle_t *zh, const char *path, int64_t first,
                               double put_before_kill, struct daemon_proc *d)
{
    struct schedule_state before = {0}, after;
    char data[200];
    double sum = 0;
    for (int tries = 0; tries < 5; tries++) {
        int len = zk_get(zh, path, data, sizeof data);
        if (len <= 0 || schedule_state_parse(data, (size_t)len, &before) != 0)
            break;
        sum = put_before_kill;
        for (int i = 0; i < 3; i++) {
            double v = puts_of(&d[i]);
            CHECK(v >= 0);
            sum += v;
        }
        len = zk_get(zh, path, data, sizeof data);
        if (len > 0 && schedule_state_parse(data, (size_t)len, &after) == 0 &&
            after.last_ms == before.last_ms)
            break;
    }
    double put = (double)((before.last_ms - first) / 1000 + 1);
    printf("occurrences put %g, the daemons' put counters add up to %g\n", put, sum);
    /* d[1] may have put once more between its scrape and its death */
    CHECK(sum <= put && sum >= put - 1);
}

int main(void)
{
    char root[128];
    struct daemon_proc d[3];
    struct occs *got = calloc(1, sizeof *got);
    harness_init("schedules", root, sizeof root);
    CHECK(daemons_start(d, 3, root, ov) == 0);
    deferd_client *c = client(&d[0]);
    CHECK(deferd_subscribe(c, "a", 16) == DEFERD_OK);
    int64_t start = now_ms();
    occ_collect(c, got, start + 10000, 0, NULL);
    /* what d[1] put before it dies: its counter dies with it (at most one more pass between) */
    double put_before_kill = puts_of(&d[1]);
    CHECK(put_before_kill >= 0);
    daemon_kill(&d[1], SIGKILL);
    occ_collect(c, got, start + 15000, 0, NULL);
    CHECK(daemon_restart(&d[1], ov) == 0 && daemon_wait_connected(&d[1], 15000) == 0);
    occ_collect(c, got, start + RUN_MS, 0, NULL);
    int64_t first = INT64_MAX, last = start + RUN_MS - 2000;
    for (size_t i = 0; i < got->n; i++)
        if (got->v[i].instant < first)
            first = got->v[i].instant;
    CHECK(first <= start + 2000); /* the schedule ran from the start */
    occ_collect(c, got, now_ms() + 1500, 0, NULL); /* the last ones still on their way */
    check_exactly_once(got, first, last);

    /* The state node: every daemon computed the same fingerprint and none yielded. */
    zhandle_t *zh = zk_connect();
    char path[300], data[200];
    CHECK(layout_root_path(path, sizeof path, root, LAYOUT_SCHEDULES, "tick") == 0);
    struct schedule_state st;
    int len = zk_get(zh, path, data, sizeof data);
    CHECK(len > 0 && schedule_state_parse(data, (size_t)len, &st) == 0);
    CHECK(st.last_ms >= last);
    for (int i = 0; i < 3; i++)
        CHECK(log_count(&d[i], 0, "another daemon loaded a different") == 0);
    check_put_counters(zh, path, first, put_before_kill, d);
    zookeeper_close(zh);
    deferd_close(c);
    for (int i = 0; i < 3; i++)
        daemon_kill(&d[i], SIGTERM);
    free(got);
    return check_report("it_schedules");
}
