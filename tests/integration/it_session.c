/* ZooKeeper outages: a short one (SUSPENDED, RECONNECTED, the held ack applied after it)
 * and a long one (LOST: holders told, a new session built, every job delivered again and
 * acked). Runs its own ZooKeeper so that it can stop and restart it. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128], zkdir[256];

/* Waits for the next STATE push, collecting jobs and EXPIRED pushes that come first. */
static int wait_state(deferd_client *c, const char *want, int ms, int *expired)
{
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        deferd_event ev;
        memset(&ev, 0, sizeof ev);
        if (deferd_next_event(c, &ev, (int)(deadline - now_ms())) != DEFERD_OK)
            break;
        if (ev.kind == DEFERD_EV_EXPIRED && expired)
            (*expired)++;
        deferd_job_clear(&ev.job);
        if (ev.kind == DEFERD_EV_STATE) {
            printf("state %s at +%lld ms\n", ev.state, (long long)(now_ms() % 100000));
            if (strcmp(ev.state, want) == 0)
                return 0;
        }
    }
    fprintf(stderr, "no STATE %s within %d ms\n", want, ms);
    return -1;
}

/* Restarts ZooKeeper from a child after OUTAGE_MS: the outage length is the scenario. */
static pid_t restart_later(int outage_ms)
{
    pid_t pid = fork();
    if (pid == 0) {
        usleep((useconds_t)outage_ms * 1000);
        _exit(zk_private("restart", zkdir) == 0 ? 0 : 1);
    }
    return pid;
}

static int reaped_ok(pid_t pid)
{
    int status;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void short_outage(void)
{
    deferd_client *c = client(&d);
    char j1[DEFERD_ID_SIZE], path[512];
    CHECK(put_job(c, "a", "held over", 0, -1, -1, j1) == 0);
    CHECK(deferd_subscribe(c, "a", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, j1);
    deferd_job_clear(&job);
    CHECK(zk_private("stop", zkdir) == 0);
    CHECK(wait_state(c, "SUSPENDED", 15000, NULL) == 0);
    pid_t r = restart_later(1000);
    CHECK(deferd_ack(c, j1) == DEFERD_OK); /* held by deferd, applied after reconnecting */
    CHECK(reaped_ok(r));
    CHECK(wait_state(c, "RECONNECTED", 15000, NULL) == 0);
    zhandle_t *zh = zk_connect();
    CHECK(job_path(root, j1, path, sizeof path) == 0 && !zk_exists(zh, path));
    CHECK(deferd_next_job(c, &job, 1000) == DEFERD_ETIMEDOUT); /* not delivered twice */
    char stats[512];
    CHECK(deferd_stats(c, stats, sizeof stats) == DEFERD_OK);
    CHECK_CONTAINS(stats, "zk_state=CONNECTED");
    CHECK_CONTAINS(stats, "zk_suspended=1 zk_reconnected=1 zk_lost=0");
    zookeeper_close(zh);
    deferd_close(c);
}

static void long_outage(void)
{
    deferd_client *c = client(&d);
    char j[DEFERD_ID_SIZE], later[DEFERD_ID_SIZE], path[512];
    CHECK(put_job(c, "b", "survives", 0, -1, -1, j) == 0);
    CHECK(put_job(c, "b", "due later", 8000, -1, -1, later) == 0);
    CHECK(deferd_subscribe(c, "b", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, j);
    deferd_job_clear(&job);
    CHECK(zk_private("stop", zkdir) == 0);
    int expired = 0;
    CHECK(wait_state(c, "SUSPENDED", 15000, &expired) == 0);
    CHECK(wait_state(c, "LOST", 15000, &expired) == 0); /* the 4 s session timeout */
    deferd_event ev; /* then the holder is told its lease is gone */
    CHECK(deferd_next_event(c, &ev, 5000) == DEFERD_OK && ev.kind == DEFERD_EV_EXPIRED);
    CHECK_STR(ev.job.id, j);
    deferd_job_clear(&ev.job);
    CHECK(expired == 0);
    CHECK(deferd_ack(c, j) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(c), "LEASE_LOST");
    CHECK(zk_private("restart", zkdir) == 0);
    CHECK(wait_state(c, "CONNECTED", 30000, NULL) == 0);
    int seen_j = 0, seen_later = 0;
    for (int n = 0; n < 2; n++) {
        if (deferd_next_job(c, &job, 20000) != DEFERD_OK) {
            CHECK(!"job not delivered after the new session");
            break;
        }
        seen_j += strcmp(job.id, j) == 0 && job.attempt == 2;
        seen_later += strcmp(job.id, later) == 0 && job.attempt == 1;
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    CHECK(seen_j == 1 && seen_later == 1);
    zhandle_t *zh = zk_connect();
    CHECK(job_path(root, j, path, sizeof path) == 0 && !zk_exists(zh, path));
    CHECK(zk_count_jobs(zh, root, "a") + zk_count_jobs(zh, root, "b") == 0);
    zookeeper_close(zh);
    char stats[512];
    CHECK(deferd_stats(c, stats, sizeof stats) == DEFERD_OK);
    CHECK_CONTAINS(stats, "zk_lost=1");
    printf("stats: %s\n", stats);
    deferd_close(c);
}

int main(void)
{
    harness_init("session", root, sizeof root);
    snprintf(zkdir, sizeof zkdir, "/tmp/deferd-it-%d-zk", (int)getpid());
    if (zk_private_start(zkdir) != 0)
        return 1;
    static const char *const slow[] = {"zookeeper.session_timeout=10s", NULL};
    if (daemon_start(&d, root, "s1", slow) != 0)
        return 1;
    short_outage();
    daemon_kill(&d, SIGTERM);
    static const char *const fast[] = {"zookeeper.session_timeout=4s", NULL};
    if (daemon_start(&d, root, "s2", fast) != 0)
        return 1;
    long_outage();
    daemon_kill(&d, SIGTERM);
    zk_private("stop", zkdir);
    return check_report("it_session");
}
