/* The cluster clock (docs/guarantees.md, "Clocks"): deferd judges due times by ZooKeeper's
 * transaction clock, not by its host's. Two daemons share a queue, one on a host whose
 * clock runs 5 s ahead and one 5 s behind (Debian's libfaketime, preloaded into each
 * deferd alone); jobs put through either with delay= or at= (by this test's clock, the
 * reference: ZooKeeper runs on it) are delivered by either, never before their due time by
 * the reference, and each daemon reports its skew within its stated error. A daemon with
 * clock = local on the fast host delivers at= jobs 5 s early: the detector works. A host
 * clock stepped by 30 s in the middle of a run moves nothing (deferd counts on the monotonic
 * clock), but it is reported, and past clock_limit no job is pushed until it is back. */
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
#define NJOBS 60

static char root[128];

/* The next deferd started runs on a host clock SPEC ("+5s") ahead, or as FILE says. */
static void fake_clock(const char *spec, const char *file)
{
    setenv("LD_PRELOAD", FAKETIME_LIB, 1);
    if (spec)
        setenv("FAKETIME", spec, 1);
    if (file) {
        setenv("FAKETIME_TIMESTAMP_FILE", file, 1);
        setenv("FAKETIME_CACHE_DURATION", "1", 1);
    }
    /* A host's clock steps; its monotonic clock does not (as with NTP or a hand-set date). */
    setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    setenv("DONT_FAKE_MONOTONIC", "1", 1);
    /* ASan wants to be the first library; libfaketime only wraps time calls. */
    const char *asan = getenv("ASAN_OPTIONS");
    char buf[512];
    snprintf(buf, sizeof buf, "%s%sverify_asan_link_order=0", asan ? asan : "", asan ? ":" : "");
    setenv("ASAN_OPTIONS", buf, 1);
}

static void real_clock(void)
{
    unsetenv("LD_PRELOAD");
    unsetenv("FAKETIME");
    unsetenv("FAKETIME_TIMESTAMP_FILE");
}

static double stat_num(const struct daemon_proc *d, const char *field)
{
    char buf[4096] = "", key[64];
    deferd_client *c = client(d);
    int ok = c && deferd_stats(c, buf, sizeof buf) == DEFERD_OK;
    deferd_close(c);
    snprintf(key, sizeof key, " %s=", field);
    const char *p = ok ? strstr(buf, key) : NULL;
    return p ? atof(p + strlen(key)) : NAN;
}

static int wait_stats_long(const struct daemon_proc *d, const char *text, int ms)
{
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        if (stats_has(d, text))
            return 1;
        usleep(50000);
    }
    return 0;
}

static int start_on(struct daemon_proc *d, const char *r, const char *tag, const char *spec,
                    const char *file, const char *const *overrides)
{
    fake_clock(spec, file);
    int rc = daemon_start(d, r, tag, overrides);
    real_clock();
    if (rc != 0 || daemon_wait_connected(d, 10000) != 0 ||
        !wait_stats_long(d, "clock_state=", 10000))
        return -1;
    return 0;
}

/* This host's wall clock minus its monotonic clock, in ms: it changes only when the host's
 * clock is stepped (by its time service: the test does not fake its own clock). */
static double host_step_ms(void)
{
    struct timespec w, m;
    clock_gettime(CLOCK_REALTIME, &w);
    clock_gettime(CLOCK_MONOTONIC, &m);
    return (double)(w.tv_sec - m.tv_sec) * 1e3 + (double)(w.tv_nsec - m.tv_nsec) / 1e6;
}

static double host_base_ms; /* host_step_ms() at the start */

/* ZooKeeper runs on this host's clock: when that is stepped (a time service on a shared
 * machine), a daemon's estimate is out by the step until its next sample, which the
 * daemon says it takes every 10 s (clock_sync.c). Then the truth is only checked once the
 * daemon has sampled again. */
static void await_sample_after_step(const struct daemon_proc *d)
{
    double step = host_step_ms() - host_base_ms;
    if (fabs(step) < 0.5)
        return;
    printf("this host's clock was stepped by %+.1f ms during the test: waiting for %s to "
           "sample ZooKeeper's clock again\n", step, d->dir);
    double first = stat_num(d, "clock_samples");
    int64_t deadline = now_ms() + 12000;
    while (now_ms() < deadline && !(stat_num(d, "clock_samples") > first))
        usleep(50000);
    CHECK(stat_num(d, "clock_samples") > first);
}

/* The skew a daemon reports is within its stated error of the truth. */
static void check_skew(const struct daemon_proc *d, double truth_ms)
{
    await_sample_after_step(d);
    double skew = stat_num(d, "clock_skew_ms"), err = stat_num(d, "clock_error_ms");
    printf("%s: skew %.1f ms, error +-%.1f ms (truth %.0f)\n", d->dir, skew, err, truth_ms);
    CHECK(!isnan(skew) && fabs(skew - truth_ms) <= err + 0.1); /* printed to 0.1 ms */
    CHECK(err > 0 && err < 50);
}

struct ledger {
    int n;
    int64_t due[NJOBS], put_from[NJOBS], put_to[NJOBS], delay[NJOBS];
    char id[NJOBS][DEFERD_ID_SIZE];
    int64_t got[NJOBS];
};

static int find(const struct ledger *l, const char *id)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->id[i], id) == 0)
            return i;
    return -1;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Receives from both consumers until every job came; acks each. Waits in poll() on both,
 * so that a job's arrival time is when it came, not when its consumer's turn was. */
static int collect(struct ledger *l, deferd_client *const *cs, int ncs, int ms)
{
    int left = l->n;
    int64_t deadline = now_ms() + ms;
    while (left > 0 && now_ms() < deadline) {
        struct pollfd pf[2];
        for (int k = 0; k < ncs; k++)
            pf[k] = (struct pollfd){.fd = deferd_fd(cs[k]), .events = POLLIN};
        poll(pf, (nfds_t)ncs, 100);
        for (int k = 0; k < ncs; k++) {
            deferd_job job;
            memset(&job, 0, sizeof job);
            if (deferd_next_job(cs[k], &job, 0) != DEFERD_OK)
                continue;
            int64_t at = now_ms();
            int i = find(l, job.id);
            CHECK(i >= 0);
            if (i >= 0 && l->got[i] == 0) {
                l->got[i] = at;
                CHECK(job.due_ms == l->due[i] || l->due[i] == 0);
                l->due[i] = job.due_ms;
                left--;
            }
            CHECK(deferd_ack(cs[k], job.id) == DEFERD_OK);
            deferd_job_clear(&job);
        }
    }
    return left;
}

/* Early deliveries (by this process's clock) and the lateness percentiles. */
static int judge(const struct ledger *l, const char *what)
{
    int64_t late[NJOBS];
    int early = 0;
    for (int i = 0; i < l->n; i++) {
        late[i] = l->got[i] - l->due[i];
        if (late[i] > 30)
            printf("%s: job %s (%s) %lld ms late\n", what, l->id[i],
                   l->delay[i] < 0 ? "at=" : "delay=", (long long)late[i]);
        if (late[i] < 0) {
            early++;
            fprintf(stderr, "%s: job %s delivered %lld ms early\n", what, l->id[i],
                    (long long)-late[i]);
        }
    }
    qsort(late, (size_t)l->n, sizeof late[0], cmp64);
    printf("%s: %d jobs, %d early; lateness p50 %lld ms, p99 %lld ms, max %lld ms\n", what,
           l->n, early, (long long)late[l->n / 2], (long long)late[l->n * 99 / 100],
           (long long)late[l->n - 1]);
    return early;
}

static deferd_client *subscriber(const struct daemon_proc *d, const char *queue)
{
    deferd_client *c = client(d);
    CHECK(c && deferd_subscribe(c, queue, 100) == DEFERD_OK);
    return c;
}

/* Jobs put through FAST and SLOW in turn, half with delay=, half with at= by our clock. */
static void put_through(struct ledger *l, const struct daemon_proc *fast,
                        const struct daemon_proc *slow, const char *queue)
{
    deferd_client *p[2] = {client(fast), client(slow)};
    srand(23);
    for (int i = 0; i < NJOBS; i++) {
        int64_t delay = 300 + rand() % 1500, at = i % 2 ? now_ms() + delay : -1;
        l->put_from[i] = now_ms();
        CHECK(put_job(p[i % 4 < 2], queue, "tick", at < 0 ? delay : -1, at, -1, l->id[i]) == 0);
        l->put_to[i] = now_ms();
        l->delay[i] = at < 0 ? delay : -1;
        l->due[i] = at < 0 ? 0 : at;
        l->n++;
    }
    deferd_close(p[0]);
    deferd_close(p[1]);
}

/* A delay counts from the put by ZooKeeper's clock, not by the daemon host's. */
static void check_delays(const struct ledger *l)
{
    for (int i = 0; i < l->n; i++) {
        if (l->delay[i] < 0)
            continue;
        CHECK(l->due[i] >= l->put_from[i] + l->delay[i]);
        CHECK(l->due[i] <= l->put_to[i] + l->delay[i] + 50);
    }
}

static void skewed_hosts(void)
{
    struct daemon_proc fast, slow;
    const char *fs = getenv("IT_FAST") ? getenv("IT_FAST") : "+5s";
    const char *ss = getenv("IT_SLOW") ? getenv("IT_SLOW") : "-5s";
    CHECK(start_on(&fast, root, "fast", fs, NULL, NULL) == 0);
    CHECK(start_on(&slow, root, "slow", ss, NULL, NULL) == 0);
    CHECK(wait_stats_long(&fast, "clock_state=synced", 5000));
    CHECK(wait_stats_long(&slow, "clock_state=synced", 5000));
    check_skew(&fast, 5000);
    check_skew(&slow, -5000);
    deferd_client *cs[2] = {subscriber(&fast, "a"), subscriber(&slow, "a")};
    struct ledger *l = calloc(1, sizeof *l);
    put_through(l, &fast, &slow, "a");
    CHECK(collect(l, cs, 2, 20000) == 0);
    CHECK(judge(l, "skewed hosts (+5 s, -5 s)") == 0);
    check_delays(l);
    check_skew(&fast, 5000); /* still, after a dozen samples more */
    check_skew(&slow, -5000);
    CHECK(log_count(&fast, 0, "more than [daemon] clock_warn") == 1);
    deferd_close(cs[0]);
    deferd_close(cs[1]);
    free(l);
    daemon_kill(&fast, SIGTERM);
    daemon_kill(&slow, SIGTERM);
}

/* clock = local on the fast host: at= jobs by our clock go out 5 s early. This is what
 * the test above would see without the cluster clock. */
static void local_clock_is_early(void)
{
    struct daemon_proc fast;
    char r[160];
    snprintf(r, sizeof r, "%s-local", root);
    const char *const o[] = {"daemon.clock=local", NULL};
    CHECK(start_on(&fast, r, "local", "+5s", NULL, o) == 0);
    CHECK(stats_has(&fast, "clock_state=local"));
    deferd_client *c = subscriber(&fast, "a");
    char id[DEFERD_ID_SIZE];
    int64_t due = now_ms() + 3000;
    CHECK(put_job(c, "a", "early", -1, due, -1, id) == 0);
    deferd_job job;
    memset(&job, 0, sizeof job);
    CHECK(next_job_push(c, &job, 5000) == 0);
    int64_t early = due - now_ms();
    printf("clock = local, host 5 s fast: delivered %lld ms early\n", (long long)early);
    CHECK(early > 1500);
    deferd_job_clear(&job);
    deferd_close(c);
    daemon_kill(&fast, SIGTERM);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Pushes to C within MS: each known id's arrival time (by our clock) in AT; 1 if any came. */
static int drain_pushes(deferd_client *c, int ms, char ids[][DEFERD_ID_SIZE], int64_t *at, int n)
{
    int any = 0;
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        deferd_job job;
        memset(&job, 0, sizeof job);
        if (next_job_push(c, &job, (int)(deadline - now_ms())) != 0)
            break;
        any = 1;
        for (int i = 0; i < n; i++)
            if (strcmp(ids[i], job.id) == 0 && at[i] == 0)
                at[i] = now_ms();
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    return any;
}

/* The host's clock steps 30 s ahead: a job due before and one due after stay due by
 * ZooKeeper's clock; past clock_limit (20 s) nothing is pushed, until the clock is back. */
static void clock_step(void)
{
    struct daemon_proc d;
    char r[160], file[400], ids[2][DEFERD_ID_SIZE];
    int64_t due[2], at[2] = {0, 0};
    snprintf(r, sizeof r, "%s-step", root);
    const char *const o[] = {"daemon.clock_limit=20s", NULL};
    CHECK(daemon_prepare(&d, r, "step") == 0); /* only for its folder */
    snprintf(file, sizeof file, "%s/faketime.rc", d.dir);
    write_file(file, "+0\n");
    CHECK(start_on(&d, r, "step", NULL, file, o) == 0);
    CHECK(wait_stats_long(&d, "clock_state=synced", 5000));
    check_skew(&d, 0);
    deferd_client *c = subscriber(&d, "a");
    due[0] = now_ms() + 3000;
    CHECK(put_job(c, "a", "across the step", -1, due[0], -1, ids[0]) == 0);
    long mark = log_mark(&d);
    write_file(file, "+30s\n");
    /* The next sample (within 10 s) sees the step. Meanwhile the first job may be pushed:
     * by ZooKeeper's clock, never 30 s early. */
    int64_t until = now_ms() + 15000;
    while (now_ms() < until && !stats_has(&d, "clock_state=over_limit"))
        drain_pushes(c, 50, ids, at, 1);
    CHECK(stats_has(&d, "clock_state=over_limit"));
    CHECK(log_wait(&d, mark, "beyond [daemon] clock_limit", 1000));
    check_skew(&d, 30000);
    due[1] = now_ms() + 500;
    CHECK(put_job(c, "a", "held past the limit", -1, due[1], -1, ids[1]) == 0);
    drain_pushes(c, 2000, ids, at, 2);
    CHECK(at[1] == 0); /* due, but not pushed */
    write_file(file, "+0\n");
    CHECK(wait_stats_long(&d, "clock_state=synced", 15000));
    drain_pushes(c, 3000, ids, at, 2);
    for (int i = 0; i < 2; i++) {
        printf("step: job %d due %lld, came %lld ms after\n", i, (long long)due[i],
               (long long)(at[i] - due[i]));
        CHECK(at[i] >= due[i]);
    }
    CHECK(log_count(&d, mark, "within clock_limit again") == 1);
    deferd_close(c);
    daemon_kill(&d, SIGTERM);
}

int main(void)
{
    if (access(FAKETIME_LIB, R_OK) != 0) {
        fprintf(stderr, "it_clock: %s missing (Debian package libfaketime; packaging/deps "
                "--test installs it)\n", FAKETIME_LIB);
        return 1;
    }
    harness_init("clock", root, sizeof root);
    host_base_ms = host_step_ms();
    skewed_hosts();
    local_clock_is_early();
    clock_step();
    return check_report("it_clock");
}
