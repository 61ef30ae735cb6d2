/* A queue's cluster-wide concurrency (deferd.ini concurrency = N, engine/limit.h): two
 * daemons on one root, consumers with room for many more; judged from the consumers' side
 * (a job counts from its push until its ack is sent), never more than N of the queue's jobs
 * are held at once, and every job is done. STATS shows the limit full and the jobs that
 * wait. A daemon killed with SIGKILL while holding every slot: the other daemon's consumers
 * get jobs within the session timeout + 1 s, never more than N at once. A reload changes
 * the limit for the next locks. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "httpget.h"

#define LIMIT 3
#define SESSION_MS 4000 /* the harness's session_timeout */

static struct daemon_proc d[2];
static char root[128];
static const char *const overrides[] = {"queue.a.concurrency=3", "queue.b.group_concurrency=2",
                                        "web.dashboard=on", NULL};

enum { NCONS = 4, JOBS = 24, HOLD_MS = 80 };

struct held {
    char id[DEFERD_ID_SIZE];
    int64_t since;
};

/* Consumers (two per daemon, room for 4 each) take every job and ack it HOLD_MS after its
 * push; returns the largest number held at once, and counts the jobs done in *DONE. */
static int run_consumers(deferd_client **cs, int want, int *done, int64_t deadline)
{
    struct held held[NCONS][8];
    int nheld[NCONS] = {0}, most = 0;
    while (*done < want && now_ms() < deadline) {
        for (int k = 0; k < NCONS; k++) {
            deferd_job job;
            if (deferd_next_job(cs[k], &job, 5) == DEFERD_OK) {
                CHECK(nheld[k] < 8);
                if (nheld[k] < 8) {
                    snprintf(held[k][nheld[k]].id, DEFERD_ID_SIZE, "%s", job.id);
                    held[k][nheld[k]++].since = now_ms();
                }
                deferd_job_clear(&job);
            }
            int total = 0;
            for (int j = 0; j < NCONS; j++)
                total += nheld[j];
            most = total > most ? total : most;
            for (int i = 0; i < nheld[k]; i++) {
                if (now_ms() - held[k][i].since < HOLD_MS)
                    continue;
                CHECK(deferd_ack(cs[k], held[k][i].id) == DEFERD_OK);
                held[k][i--] = held[k][--nheld[k]];
                ++*done;
            }
        }
    }
    return most;
}

static void limit_holds(void)
{
    deferd_client *p = client(&d[0]), *cs[NCONS];
    for (int k = 0; k < NCONS; k++) {
        cs[k] = client(&d[k % 2]);
        CHECK(deferd_subscribe(cs[k], "a", 4) == DEFERD_OK);
    }
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < JOBS; i++)
        CHECK(put_job(p, "a", "limited", 300, -1, -1, id) == 0);
    int done = 0;
    int most = run_consumers(cs, JOBS, &done, now_ms() + 30000);
    printf("concurrency %d: %d jobs done, at most %d held at once (room for %d)\n", LIMIT,
           done, most, NCONS * 4);
    CHECK(done == JOBS);
    CHECK(most <= LIMIT);
    CHECK(most == LIMIT); /* the limit, not the consumers, was what held them back */
    deferd_client *s = client(&d[1]);
    CHECK(queue_stat(s, "a", "concurrency") == LIMIT);
    CHECK(queue_stat(s, "a", "limit_waits") >= 1);
    deferd_close(s);
    for (int k = 0; k < NCONS; k++)
        deferd_close(cs[k]);
    deferd_close(p);
}

/* The last N lines of the log at PATH that contain TEXT, on stdout (a failure's context). */
static void print_log_tail(const char *path, const char *text, int n)
{
    enum { KEEP = 64 };
    static char ring[KEEP][512];
    int count = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char buf[512];
    while (fgets(buf, sizeof buf, f))
        if (strstr(buf, text))
            snprintf(ring[count++ % KEEP], sizeof ring[0], "%s", buf);
    fclose(f);
    int first = count > n ? count - n : 0;
    if (n > KEEP && count > KEEP)
        first = count - KEEP;
    printf("%s, last lines with \"%s\":\n", path, text);
    for (int i = first; i < count; i++)
        fputs(ring[i % KEEP], stdout);
}

/* Daemon 0's consumer holds every slot; daemon 1's waits (STATS: limit_waiting). SIGKILL
 * of daemon 0: its session's slots go when ZooKeeper expires it, and daemon 1 delivers. */
static void killed_holder(void)
{
    deferd_client *p = client(&d[1]), *a = client(&d[0]), *b = client(&d[1]);
    CHECK(deferd_subscribe(a, "a", 8) == DEFERD_OK);
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < LIMIT + 2; i++)
        CHECK(put_job(p, "a", "held", 0, -1, -1, id) == 0);
    deferd_job job;
    for (int i = 0; i < LIMIT; i++) {
        CHECK(deferd_next_job(a, &job, 10000) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    CHECK(deferd_next_job(a, &job, 500) == DEFERD_ETIMEDOUT); /* no fourth slot */
    CHECK(deferd_subscribe(b, "a", 8) == DEFERD_OK);
    /* Settled: the two free jobs wait, every slot is known taken, and none of this daemon's
     * lock multis is in flight. Before that, its first tries pass through states where
     * they hold slots as TRYING and slots go back to FREE (a try on a job held elsewhere
     * fails on the lock, not the slot): the page and /metrics were once read there. */
    char line[2048] = "";
    int settled = 0;
    for (int64_t until = now_ms() + 10000; !settled && now_ms() < until; usleep(20000))
        settled = deferd_stats_queue(b, "a", line, sizeof line) == DEFERD_OK &&
                  stats_field(line, "limit_waiting") >= 2 &&
                  stats_field(line, "slots_taken") == LIMIT &&
                  stats_field(line, "slots_ours") == 0;
    CHECK(settled);
    if (!settled) { /* limit_waiting stayed 1 once in ~30 runs of three under ASan: say why */
        printf("queue a not settled; STATS a: %s\n", line);
        print_log_tail(d[1].log, "queue a", 60);
    }
    /* the same on the dashboard's queue page and in /metrics */
    char *body = NULL;
    CHECK(http_request(metrics_port_in_log(d[1].log), "GET", "/ui/queues/a", 10000, &body, NULL,
                       0) == 200);
    int page_ok = body && strstr(body, "data-concurrency=\"3\" data-slots-taken=\"3\"");
    CHECK(page_ok);
    if (!page_ok) { /* once read before settled (above): say what the page and STATS said */
        const char *limit = body ? strstr(body, "<p class=\"limit\"") : NULL;
        printf("queue page: %.400s\n", limit ? limit : body ? "(no limit paragraph)" : "(none)");
        if (deferd_stats_queue(b, "a", line, sizeof line) == DEFERD_OK)
            printf("STATS a after the page: %s\n", line);
        print_log_tail(d[1].log, "queue a", 60);
    }
    free(body);
    CHECK(metric_in_log(d[1].log, "deferd_limit{queue=\"a\",kind=\"concurrency\"}") == LIMIT);
    CHECK(metric_in_log(d[1].log, "deferd_limit_waiting_jobs{queue=\"a\",kind=\"concurrency\"}")
          >= 2);
    CHECK(deferd_next_job(b, &job, 500) == DEFERD_ETIMEDOUT);
    int64_t killed = now_ms();
    daemon_kill(&d[0], SIGKILL);
    int got = 0;
    while (got < LIMIT && deferd_next_job(b, &job, SESSION_MS + 3000) == DEFERD_OK) {
        if (!got)
            printf("killed holder: first delivery on the other daemon %lld ms after SIGKILL\n",
                   (long long)(now_ms() - killed));
        CHECK(now_ms() - killed <= SESSION_MS + 1000 + 500); /* + the test's own polling */
        got++;
        deferd_job_clear(&job);
    }
    CHECK(got == LIMIT);
    CHECK(deferd_next_job(b, &job, 700) == DEFERD_ETIMEDOUT); /* still at most LIMIT */
    deferd_close(a);
    deferd_close(b);
    deferd_close(p);
}

/* group_concurrency = 2 on queue b: consumers on both daemons with room for 16 hold 2 jobs
 * of each group, no more, until one is acked; then the group's next job comes. */
static void group_limit(void)
{
    deferd_client *p = client(&d[0]), *cs[2] = {client(&d[0]), client(&d[1])};
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < 6; i++) {
        deferd_put_opts o = {.group = i < 4 ? "x" : "y"};
        CHECK(deferd_put(p, "b", "g", 1, &o, id, sizeof id) == DEFERD_OK);
    }
    for (int k = 0; k < 2; k++)
        CHECK(deferd_subscribe(cs[k], "b", 8) == DEFERD_OK);
    char held[8][DEFERD_ID_SIZE];
    int by[8], n = 0, x = 0;
    deferd_job job;
    for (int64_t until = now_ms() + 10000; n < 4 && now_ms() < until;)
        for (int k = 0; k < 2 && n < 8; k++)
            if (deferd_next_job(cs[k], &job, 50) == DEFERD_OK) {
                snprintf(held[n], DEFERD_ID_SIZE, "%s", job.id);
                x += strstr(job.id, "-gx") != NULL;
                by[n++] = k;
                deferd_job_clear(&job);
            }
    CHECK(n == 4 && x == 2); /* two of each group */
    for (int k = 0; k < 2; k++) /* nothing more while they are held */
        CHECK(deferd_next_job(cs[k], &job, 700) == DEFERD_ETIMEDOUT);
    int acked = -1;
    for (int i = 0; i < n && acked < 0; i++)
        if (strstr(held[i], "-gx")) {
            CHECK(deferd_ack(cs[by[i]], held[i]) == DEFERD_OK);
            acked = i;
        }
    int got = 0;
    for (int64_t until = now_ms() + 10000; !got && now_ms() < until;)
        for (int k = 0; k < 2 && !got; k++)
            if (deferd_next_job(cs[k], &job, 50) == DEFERD_OK) {
                got = 1;
                CHECK(strstr(job.id, "-gx") != NULL); /* x's third, in the slot x freed */
                deferd_job_clear(&job);
            }
    CHECK(got);
    for (int k = 0; k < 2; k++)
        deferd_close(cs[k]); /* gives back what they hold */
    deferd_close(p);
}

/* The harness's file for D with queue a's concurrency set to N (0: none). */
static void write_config(const struct daemon_proc *dp, int n)
{
    char path[400];
    snprintf(path, sizeof path, "%s/deferd.ini", dp->dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "[daemon]\nsocket = %s\nlog_level = debug\nlookahead = 2s\n"
               "[zookeeper]\nhosts = %s\nroot = %s\nsession_timeout = 4s\n"
               "[queue a]\npack_after = 0\nconcurrency = %d\n", dp->sock, harness_zk_hosts,
            dp->root, n);
    fclose(f);
}

static void hup(const struct daemon_proc *dp, const char *until)
{
    long mark = log_mark(dp);
    CHECK(kill(dp->pid, SIGHUP) == 0);
    CHECK(log_wait(dp, mark, until, 15000));
}

/* SIGHUP applies a changed concurrency to the next locks: none -> 5 -> none. */
static void reloaded(void)
{
    struct daemon_proc r;
    if (daemon_start(&r, root, "r", NULL) != 0) {
        CHECK(0);
        return;
    }
    deferd_client *p = client(&r), *c = client(&r);
    write_config(&r, 5);
    hup(&r, "reload: queue a: concurrency 0 -> 5");
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < 3; i++)
        CHECK(put_job(p, "a", "more", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(c, "a", 16) == DEFERD_OK); /* 8 jobs in the queue now */
    deferd_job job;
    int got = 0;
    while (got < 6 && deferd_next_job(c, &job, got < 5 ? 10000 : 1000) == DEFERD_OK) {
        got++;
        deferd_job_clear(&job);
    }
    CHECK(got == 5);
    write_config(&r, 0);
    hup(&r, "reload: queue a: concurrency 5 -> 0");
    while (got < 9 && deferd_next_job(c, &job, got < 8 ? 10000 : 1000) == DEFERD_OK) {
        got++;
        deferd_job_clear(&job);
    }
    CHECK(got == 8);
    deferd_close(c);
    deferd_close(p);
    daemon_kill(&r, SIGTERM);
}

int main(void)
{
    harness_init("concurrency", root, sizeof root);
    if (daemons_start(d, 2, root, overrides) != 0)
        return 1;
    limit_holds();
    group_limit();
    killed_holder();
    daemon_kill(&d[1], SIGTERM); /* gives back what its consumer held */
    reloaded();
    return check_report("it_concurrency");
}
