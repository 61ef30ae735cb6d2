/* deferctl's operator commands against real daemons and ZooKeeper:
 *  - list pages through a queue in due order (then priority, then uid) across buckets, far
 *    future and overdue jobs, with --from/--until, --after and --json;
 *  - show, cancel and reschedule by id: a held job is neither cancelled nor moved (its
 *    consumer wins), a rescheduled job is delivered at its new time only;
 *  - pause/resume is cluster-wide and durable: two daemons stop delivering a paused
 *    queue (puts still work) while another queue keeps flowing;
 *  - SIGTERM drains: no new puts or deliveries, held jobs can still be acked within
 *    drain_grace, the rest is released (EXPIRED) and delivered again by another daemon. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d1, d2;
static char root[128];
static zhandle_t *zh;

#define NJOBS 24

struct put_id {
    char id[DEFERD_ID_SIZE];
    unsigned long long due;
    unsigned prio;
    char uid[40];
};

static int by_order(const void *x, const void *y)
{
    const struct put_id *a = x, *b = y;
    if (a->due != b->due)
        return a->due < b->due ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    return strcmp(a->uid, b->uid);
}

static void parse_id(struct put_id *p)
{
    const char *name = strrchr(p->id, '/') + 1;
    CHECK(sscanf(name, "%llu-%u-%39[0-9a-z]", &p->due, &p->prio, p->uid) == 3);
}

/* Jobs over ten seconds of 100 ms buckets, five sharing one due time with different
 * priorities, one overdue, and far ones (a month, two years): what list must order. */
static void put_spread(deferd_client *c, struct put_id *ids, int64_t base)
{
    for (int i = 0; i < NJOBS; i++) {
        int64_t at = base + (i % 12) * 997;
        int prio = 5;
        if (i >= 12 && i < 17)
            at = base + 5000, prio = 20 - i;
        else if (i == 17)
            at = base - 3600 * 1000;
        else if (i == 18)
            at = base + 30LL * 86400 * 1000;
        else if (i == 19)
            at = base + 730LL * 86400 * 1000;
        CHECK(put_job(c, "emails", "x", -1, at, prio, ids[i].id) == 0);
        parse_id(&ids[i]);
    }
    qsort(ids, NJOBS, sizeof *ids, by_order);
}

/* Pages of 7 through --json with --after: every job once, in order. */
static void list_pages(const struct put_id *ids)
{
    char args[DEFERD_ID_SIZE + 64], out[65536], after[DEFERD_ID_SIZE] = "";
    int seen = 0, pages = 0;
    do {
        snprintf(args, sizeof args, "list emails --json --limit 7%s%s", after[0] ? " --after " : "",
                 after);
        CHECK(run_deferctl(&d1, args, out, sizeof out) == 0);
        pages++;
        for (char *p = strstr(out, "\"id\":\""); p; p = strstr(p + 1, "\"id\":\"")) {
            char id[DEFERD_ID_SIZE];
            CHECK(sscanf(p + 6, "%255[^\"]", id) == 1);
            CHECK(seen < NJOBS);
            if (seen < NJOBS)
                CHECK_STR(id, ids[seen].id);
            seen++;
        }
        char *next = strstr(out, "\"next_after\":\"");
        after[0] = '\0';
        if (next)
            sscanf(next + 14, "%255[^\"]", after);
    } while (after[0] && pages < 10);
    CHECK(seen == NJOBS);
    CHECK(pages == (NJOBS + 6) / 7);
    CHECK_CONTAINS(out, "\"next_after\":null");
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; (s = strchr(s, '\n')); s++)
        n++;
    return n;
}

/* --from/--until by time, human table: exactly the jobs in the window. */
static void list_window(const struct put_id *ids, int64_t base)
{
    char args[256], out[65536];
    snprintf(args, sizeof args, "list emails --from %lld --until %lld", (long long)base + 2000,
             (long long)base + 5000);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 0);
    int want = 0;
    for (int i = 0; i < NJOBS; i++) {
        int in = ids[i].due >= (unsigned long long)base + 2000 &&
                 ids[i].due <= (unsigned long long)base + 5000;
        want += in;
        CHECK(!in || strstr(out, ids[i].id));
    }
    CHECK(want == 8); /* 3 of the spread (2991, 3988, 4985) and the 5 at base + 5000 */
    CHECK(count_lines(out) == want + 1);
    CHECK(run_deferctl(&d1, "list emails --from now+29d --until now+31d", out, sizeof out) == 0);
    CHECK(count_lines(out) == 2 && strstr(out, ids[NJOBS - 2].id));
    CHECK(run_deferctl(&d1, "list emails --from soon", out, sizeof out) == 2);
    CHECK(run_deferctl(&d1, "list nosuchqueue", out, sizeof out) == 1);
}

/* show and cancel of pending jobs; then the whole queue is cancelled away. */
static void show_and_cancel(const struct put_id *ids)
{
    char args[DEFERD_ID_SIZE + 64], out[8192], path[512];
    snprintf(args, sizeof args, "show %s", ids[0].id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "state:    due"); /* the overdue one */
    CHECK_CONTAINS(out, "attempts: 0");
    CHECK_CONTAINS(out, "\n\nx");
    snprintf(args, sizeof args, "show --json %s", ids[1].id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "\"payload_base64\":\"eA==\"");
    for (int i = 0; i < NJOBS; i++) {
        snprintf(args, sizeof args, "cancel %s%.255s", i == 0 ? "--json " : "", ids[i].id);
        CHECK(run_deferctl(&d1, args, out, sizeof out) == 0);
        if (i == 0)
            CHECK(strstr(out, "\"result\":\"cancelled\"") && strstr(out, ids[0].id));
        CHECK(job_path(root, ids[i].id, path, sizeof path) == 0 && !zk_exists(zh, path));
    }
    snprintf(args, sizeof args, "cancel %s", ids[0].id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 3);
    snprintf(args, sizeof args, "show %s", ids[0].id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 3);
    CHECK(run_deferctl(&d1, "list emails", out, sizeof out) == 0 && count_lines(out) == 1);
    CHECK(zk_count_jobs(zh, root, "emails") == 0);
}

static int next_job(deferd_client *c, deferd_job *job, int ms)
{
    memset(job, 0, sizeof *job);
    return deferd_next_job(c, job, ms);
}

/* A held job: cancel and reschedule refused (exit 4), the consumer's ack still works. */
static void held_job_wins(deferd_client *prod, deferd_client *cons)
{
    char id[DEFERD_ID_SIZE], args[DEFERD_ID_SIZE + 64], out[4096], path[512];
    deferd_job job;
    CHECK(put_job(prod, "a", "held", 0, -1, 0, id) == 0);
    CHECK(next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    deferd_job_clear(&job);
    snprintf(args, sizeof args, "cancel %s", id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 4);
    snprintf(args, sizeof args, "reschedule %s --delay 1h", id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 4);
    snprintf(args, sizeof args, "show %s", id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "state:    in-flight");
    CHECK_CONTAINS(out, "held by:  deferd at ");
    CHECK_CONTAINS(out, "attempts: 1");
    CHECK(deferd_ack(cons, id) == DEFERD_OK);
    CHECK(job_path(root, id, path, sizeof path) == 0 && !zk_exists(zh, path));
}

/* Later: the old id never comes, the new one not before its time. Earlier: a job an hour
 * out comes at once. */
static void reschedule(deferd_client *prod, deferd_client *cons)
{
    char id[DEFERD_ID_SIZE], moved[DEFERD_ID_SIZE], args[DEFERD_ID_SIZE + 64], out[4096];
    deferd_job job;
    CHECK(put_job(prod, "a", "later", 1500, -1, 0, id) == 0);
    snprintf(args, sizeof args, "reschedule %s --delay 3s --json", id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 0);
    char *nid = strstr(out, "\"new_id\":\"");
    CHECK(nid && sscanf(nid + 10, "%255[^\"]", moved) == 1 && strcmp(moved, id) != 0);
    CHECK(next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, moved);
    CHECK(now_ms() >= (int64_t)job.due_ms && job.len == 5);
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(put_job(prod, "a", "sooner", 3600 * 1000, -1, 0, id) == 0);
    int64_t t0 = now_ms();
    snprintf(args, sizeof args, "reschedule %s --at now", id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 0);
    CHECK(sscanf(out, "%255s", moved) == 1);
    CHECK(next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, moved);
    printf("rescheduled from an hour out: delivered %lld ms later\n", (long long)(now_ms() - t0));
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    snprintf(args, sizeof args, "reschedule %s --at now", id);
    CHECK(run_deferctl(&d1, args, out, sizeof out) == 3); /* the old id is gone */
}

/* Both daemons stop delivering b while a keeps flowing; puts to b still work; resume
 * hands b's job out. */
static void pause_resume(deferd_client *prod)
{
    char id[DEFERD_ID_SIZE], sentinel[DEFERD_ID_SIZE], out[4096];
    deferd_client *c1 = client(&d1), *c2 = client(&d2);
    deferd_job job;
    CHECK(deferd_subscribe(c1, "b", 4) == DEFERD_OK && deferd_subscribe(c2, "b", 4) == DEFERD_OK);
    CHECK(deferd_subscribe(c1, "a", 4) == DEFERD_OK);
    CHECK(run_deferctl(&d1, "pause b --reason 'it_admin'", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "queue b paused");
    CHECK(wait_stats(&d1, "paused.b=1", 1) && wait_stats(&d2, "paused.b=1", 1));
    char qs[2048];
    CHECK(deferd_stats_queue(prod, "b", qs, sizeof qs) == DEFERD_OK && strstr(qs, " paused=1"));
    CHECK(run_deferctl(&d1, "pause b", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "already paused");
    CHECK(put_job(prod, "b", "waits", 0, -1, 0, id) == 0);
    /* a job of another queue, due later than b's, is delivered: b's would have been too */
    CHECK(put_job(prod, "a", "flows", 300, -1, 0, sentinel) == 0);
    CHECK(next_job(c1, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, sentinel);
    CHECK(deferd_ack(c1, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(next_job(c1, &job, 200) == DEFERD_ETIMEDOUT && next_job(c2, &job, 200) == DEFERD_ETIMEDOUT);
    CHECK(run_deferctl(&d2, "list b", out, sizeof out) == 0 && strstr(out, id));
    CHECK(run_deferctl(&d1, "resume b", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "queue b resumed");
    deferd_client *got = NULL;
    int64_t deadline = now_ms() + 10000;
    while (!got && now_ms() < deadline) {
        if (next_job(c1, &job, 50) == DEFERD_OK)
            got = c1;
        else if (next_job(c2, &job, 50) == DEFERD_OK)
            got = c2;
    }
    CHECK(got != NULL);
    if (got) {
        CHECK_STR(job.id, id);
        CHECK(deferd_ack(got, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    CHECK(wait_stats(&d1, "paused.b=1", 0) && wait_stats(&d2, "paused.b=1", 0));
    CHECK(run_deferctl(&d1, "resume b", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "already running");
    CHECK(run_deferctl(&d1, "pause b --json", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "{\"queue\":\"b\",\"paused\":true,\"changed\":true}");
    CHECK(run_deferctl(&d1, "resume b --json", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "\"paused\":false,\"changed\":true");
    deferd_close(c1);
    deferd_close(c2);
}

/* d2 holds a job for a consumer that acks after the SIGTERM: settled, exit 0. */
static void drain_settles(void)
{
    deferd_client *prod = client(&d2), *cons = client(&d2);
    char id[DEFERD_ID_SIZE], other[DEFERD_ID_SIZE], path[512];
    deferd_event ev;
    CHECK(deferd_subscribe(cons, "emails", 1) == DEFERD_OK);
    CHECK(put_job(prod, "emails", "drain", 0, -1, 0, id) == 0);
    CHECK(next_event(cons, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    deferd_job_clear(&ev.job);
    kill(d2.pid, SIGTERM);
    CHECK(next_event(cons, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_STATE);
    CHECK_STR(ev.state, "DRAINING");
    deferd_put_opts none = {0};
    CHECK(deferd_put(prod, "emails", "late", 4, &none, other, sizeof other) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(prod), "UNAVAILABLE");
    CHECK(deferd_ack(cons, id) == DEFERD_OK);
    CHECK(daemon_wait_exit(&d2, 5000) == 0);
    CHECK(job_path(root, id, path, sizeof path) == 0 && !zk_exists(zh, path));
    deferd_close(prod);
    deferd_close(cons);
}

/* A consumer that does not finish within drain_grace (3 s in the harness): EXPIRED, the
 * lock is given back at once and d1's consumer gets the job as attempt 2. */
static void drain_releases(void)
{
    CHECK(daemon_restart(&d2, NULL) == 0);
    /* connected before SUB: else STATE CONNECTED may come before the job */
    CHECK(daemon_wait_connected(&d2, 15000) == 0);
    deferd_client *prod = client(&d2), *slow = client(&d2), *other = client(&d1);
    char id[DEFERD_ID_SIZE];
    deferd_event ev;
    CHECK(deferd_subscribe(slow, "emails", 1) == DEFERD_OK);
    CHECK(put_job(prod, "emails", "slow", 0, -1, 0, id) == 0);
    CHECK(next_event(slow, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    deferd_job_clear(&ev.job);
    int64_t t0 = now_ms();
    kill(d2.pid, SIGTERM);
    CHECK(next_event(slow, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_STATE);
    CHECK(next_event(slow, &ev, 8000) == DEFERD_OK && ev.kind == DEFERD_EV_EXPIRED);
    CHECK_STR(ev.job.id, id);
    int64_t held = now_ms() - t0;
    printf("drain: job released %lld ms after SIGTERM (grace 3000 ms)\n", (long long)held);
    CHECK(held >= 2900);
    CHECK(daemon_wait_exit(&d2, 10000) == 0);
    CHECK(deferd_subscribe(other, "emails", 1) == DEFERD_OK);
    CHECK(next_event(other, &ev, 10000) == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    CHECK_STR(ev.job.id, id);
    CHECK(ev.job.attempt == 2);
    CHECK(deferd_ack(other, id) == DEFERD_OK);
    deferd_job_clear(&ev.job);
    deferd_close(prod);
    deferd_close(slow);
    deferd_close(other);
}

int main(void)
{
    harness_init("admin", root, sizeof root);
    if (daemon_start(&d1, root, "a1", NULL) != 0 || daemon_start(&d2, root, "a2", NULL) != 0)
        return 1;
    zh = zk_connect();
    deferd_client *prod = client(&d1), *cons = client(&d1);
    struct put_id ids[NJOBS];
    int64_t base = now_ms() + 60000;
    put_spread(prod, ids, base);
    list_pages(ids);
    list_window(ids, base);
    show_and_cancel(ids);
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK);
    held_job_wins(prod, cons);
    reschedule(prod, cons);
    deferd_close(cons);
    pause_resume(prod);
    deferd_close(prod);
    drain_settles();
    drain_releases();
    daemon_kill(&d1, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_admin");
}
