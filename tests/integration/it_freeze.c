/* A daemon frozen (SIGSTOP: a GC pause, a VM migration) for three session timeouts while
 * its consumer holds a job and it has locked others ahead of their due time. Meanwhile
 * ZooKeeper expires its session and another daemon delivers those jobs again. Thawed, the
 * frozen daemon must push nothing from its stale state (its locks are gone), and its
 * consumer's ack of the held job fails with LEASE_LOST. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define SESSION_MS 4000 /* the harness's session_timeout */
#define AHEAD 5         /* jobs locked ahead when the daemon freezes */

static char root[128];

static int lock_exists(zhandle_t *zh, const char *id)
{
    char path[600];
    if (job_path(root, id, path, sizeof path) != 0)
        return 0;
    strcat(path, "/lock");
    return zk_exists(zh, path);
}

/* PID is stopped (state T in /proc/PID/stat): it sends nothing more. */
static int process_stopped(pid_t pid)
{
    char buf[256];
    const char *state = proc_stat_after_name(pid, buf, sizeof buf);
    return state && (*state == 'T' || *state == 't');
}

/* Pushes already on their way to C (sent before the freeze): read while the daemon is
 * stopped, so that none of them is taken for a push of the thawed daemon. */
static int drain_sent_before(deferd_client *c)
{
    int n = 0;
    deferd_event ev;
    for (;;) {
        memset(&ev, 0, sizeof ev);
        if (next_event(c, &ev, 200) != 0)
            return n;
        n += ev.kind == DEFERD_EV_JOB;
        deferd_job_clear(&ev.job);
    }
}

/* Freezes D as soon as ZooKeeper shows the locks of IDS (taken ahead of their due time,
 * up to 50 ms before). Returns the time of the freeze, and in *AHEAD_SEEN whether all
 * locks were seen before it. */
static int64_t freeze_when_locked(struct daemon_proc *d, zhandle_t *zh, char ids[][DEFERD_ID_SIZE],
                                  int n, int64_t due, int *ahead_seen)
{
    *ahead_seen = 0;
    /* IT_FREEZE_LATE_MS (integration.freeze_late): freeze that long after the due time, as
     * a loaded machine may, so that pushes sent just before the freeze happen on demand */
    const char *late = getenv("IT_FREEZE_LATE_MS");
    int64_t late_ms = late ? atoll(late) : -1;
    while (now_ms() < due + 1000) {
        int locked = 0;
        for (int i = 0; i < n; i++)
            locked += lock_exists(zh, ids[i]);
        if (locked == n) {
            *ahead_seen = 1;
            break;
        }
        usleep(1000);
    }
    while (late_ms >= 0 && now_ms() < due + late_ms)
        usleep(1000);
    kill(d->pid, SIGSTOP);
    int64_t at = now_ms();
    while (!process_stopped(d->pid) && now_ms() < at + 5000)
        usleep(1000);
    return at;
}

static int find(char ids[][DEFERD_ID_SIZE], int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0)
            return i;
    return -1;
}

int main(void)
{
    harness_init("freeze", root, sizeof root);
    harness_root_layout(root, 2); /* it watches the locks taken ahead (claims take none) */
    struct daemon_proc a, b;
    if (daemon_start(&a, root, "frozen", NULL) != 0 || daemon_wait_connected(&a, 10000) != 0 ||
        daemon_start(&b, root, "other", NULL) != 0 || daemon_wait_connected(&b, 10000) != 0)
        return 1;
    zhandle_t *zh = zk_connect();
    char ids[1 + AHEAD][DEFERD_ID_SIZE];
    int64_t got[1 + AHEAD] = {0};

    deferd_client *ca = client(&a);
    CHECK(deferd_subscribe(ca, "a", 20) == DEFERD_OK);
    CHECK(put_job(ca, "a", "held", 0, -1, -1, ids[0]) == 0);
    deferd_job job;
    memset(&job, 0, sizeof job);
    CHECK(next_job_push(ca, &job, 5000) == 0 && strcmp(job.id, ids[0]) == 0);
    deferd_job_clear(&job);
    int64_t due = now_ms() + 1500;
    for (int i = 1; i <= AHEAD; i++)
        CHECK(put_job(ca, "a", "ahead", -1, due, -1, ids[i]) == 0);

    int ahead_seen;
    int64_t frozen_at = freeze_when_locked(&a, zh, ids + 1, AHEAD, due, &ahead_seen);
    printf("frozen %lld ms before the jobs' due time; their locks %s taken ahead\n",
           (long long)(due - frozen_at), ahead_seen ? "were" : "were NOT");
    CHECK(ahead_seen); /* else this run did not test the stale locks */
    long frozen_mark = log_mark(&a); /* stopped: its log ends here until the thaw */
    /* On a loaded machine the freeze may come just after the due time: what was pushed
     * then is no stale push; it is read now, with the daemon stopped. */
    int before = drain_sent_before(ca);
    if (before)
        printf("%d job(s) pushed just before the freeze (read while it was stopped)\n", before);

    /* Another daemon's consumer gets every job once the old session is gone. */
    deferd_client *cb = client(&b);
    CHECK(deferd_subscribe(cb, "a", 20) == DEFERD_OK);
    int left = 1 + AHEAD;
    while (left > 0 && now_ms() < frozen_at + 3 * SESSION_MS) {
        memset(&job, 0, sizeof job);
        if (next_job_push(cb, &job, 100) != 0)
            continue;
        int i = find(ids, 1 + AHEAD, job.id);
        CHECK(i >= 0);
        if (i >= 0 && !got[i]) {
            got[i] = now_ms();
            left--;
        }
        CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    CHECK(left == 0);
    int64_t last = 0;
    for (int i = 0; i <= AHEAD; i++)
        last = got[i] > last ? got[i] : last;
    printf("delivered elsewhere %lld ms after the freeze (session timeout %d ms)\n",
           (long long)(last - frozen_at), SESSION_MS);
    /* The server expires a session up to a tick (2 s here) after its timeout. */
    CHECK(last - frozen_at <= SESSION_MS + 2000 + 1000);

    while (now_ms() < frozen_at + 3 * SESSION_MS)
        usleep(20000);
    long mark = log_mark(&a);
    kill(a.pid, SIGCONT);
    /* Thawed: not one job pushed from the stale state, the held one's ack refused. A push
     * decided before the freeze may still sit in the daemon's output buffer, written only
     * after the thaw: its "delivered" line is in the log from before the freeze. */
    int pushes = 0, buffered = 0;
    int64_t until = now_ms() + 3000;
    while (now_ms() < until) {
        deferd_event ev;
        memset(&ev, 0, sizeof ev);
        if (next_event(ca, &ev, 100) != 0)
            continue;
        if (ev.kind == DEFERD_EV_JOB) {
            char line[DEFERD_ID_SIZE + 64];
            snprintf(line, sizeof line, "job %s attempt %u delivered", ev.job.id, ev.job.attempt);
            int earlier = log_count(&a, 0, line) - log_count(&a, frozen_mark, line);
            buffered += earlier > 0;
            pushes += earlier == 0;
            fprintf(stderr, "thawed daemon pushed %s (attempt %u)%s\n", ev.job.id,
                    ev.job.attempt, earlier ? ": decided before the freeze" : "");
        }
        deferd_job_clear(&ev.job);
    }
    if (buffered)
        printf("%d push(es) decided before the freeze, written after the thaw\n", buffered);
    CHECK(pushes == 0);
    CHECK(deferd_ack(ca, ids[0]) == DEFERD_ESERVER &&
          strcmp(deferd_last_error_code(ca), "LEASE_LOST") == 0);
    CHECK(log_wait(&a, mark, "-> LOST", 5000));
    printf("thawed daemon: %d pushes; 'no answer' holds logged: %d\n", pushes,
           log_count(&a, mark, "pushing nothing until ZooKeeper answers"));
    CHECK(daemon_wait_connected(&a, 10000) == 0);
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    deferd_close(ca);
    deferd_close(cb);
    daemon_kill(&a, SIGTERM);
    daemon_kill(&b, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_freeze");
}
