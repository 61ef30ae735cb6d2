/* Crashes: a consumer killed mid-job, deferd restarted or killed with jobs pending or held.
 * Nothing is lost; a job whose holder died comes back with a higher attempt number. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];

/* A child process takes one job, reports its id and hangs until killed. */
static pid_t hanging_consumer(const char *queue, int report_fd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    deferd_client *c = client(&d);
    deferd_job job;
    if (deferd_subscribe(c, queue, 1) != DEFERD_OK || deferd_next_job(c, &job, 20000) != DEFERD_OK)
        _exit(1);
    dprintf(report_fd, "%s %u\n", job.id, job.attempt);
    for (;;)
        pause();
}

static void consumer_killed(zhandle_t *zh)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE], got[DEFERD_ID_SIZE + 16] = "", path[512], lock[600];
    CHECK(put_job(c, "a", "work", 0, -1, -1, id) == 0);
    pid_t child = hanging_consumer("a", fds[1]);
    FILE *f = fdopen(fds[0], "r");
    CHECK(fgets(got, sizeof got, f) != NULL);
    char want[DEFERD_ID_SIZE + 16];
    snprintf(want, sizeof want, "%s 1\n", id);
    CHECK_STR(got, want);
    CHECK(job_path(root, id, path, sizeof path) == 0);
    snprintf(lock, sizeof lock, "%s/lock", path);
    CHECK(zk_exists(zh, lock));
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(deferd_subscribe(c, "a", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(job.attempt == 2);
    CHECK(job.len == 4 && memcmp(job.payload, "work", 4) == 0);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(c);
    fclose(f);
    close(fds[1]);
    CHECK(!zk_exists(zh, path));
}

/* Jobs put before a restart (clean or SIGKILL) are all delivered after it. */
static void restart_with_pending(int sig)
{
    enum { N = 30 };
    deferd_client *c = client(&d);
    char ids[N][DEFERD_ID_SIZE];
    for (int i = 0; i < N; i++)
        CHECK(put_job(c, "b", "pending", 300 + i * 50, -1, -1, ids[i]) == 0);
    deferd_close(c);
    daemon_kill(&d, sig);
    CHECK(daemon_restart(&d, NULL) == 0);
    c = client(&d);
    CHECK(deferd_subscribe(c, "b", 4) == DEFERD_OK);
    int seen[N] = {0};
    for (int n = 0; n < N; n++) {
        deferd_job job;
        int rc = deferd_next_job(c, &job, 15000);
        CHECK(rc == DEFERD_OK);
        if (rc != DEFERD_OK)
            break;
        for (int i = 0; i < N; i++)
            if (strcmp(ids[i], job.id) == 0)
                seen[i]++;
        CHECK(job.attempt == 1);
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    for (int i = 0; i < N; i++)
        CHECK(seen[i] == 1);
    deferd_close(c);
}

/* deferd SIGKILLed while a consumer holds a job: the lock lives until the old session
 * expires, then the restarted daemon delivers the job again with attempt 2. */
static void daemon_killed_holding(zhandle_t *zh)
{
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE], path[512];
    CHECK(put_job(c, "emails", "held", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(c, "emails", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    deferd_job_clear(&job);
    daemon_kill(&d, SIGKILL);
    deferd_close(c);
    CHECK(daemon_restart(&d, NULL) == 0);
    c = client(&d);
    CHECK(deferd_subscribe(c, "emails", 1) == DEFERD_OK);
    int64_t t = now_ms();
    CHECK(deferd_next_job(c, &job, 20000) == DEFERD_OK);
    printf("redelivered %lld ms after restart (session timeout 4 s)\n", (long long)(now_ms() - t));
    CHECK_STR(job.id, id);
    CHECK(job.attempt == 2);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(c);
    CHECK(job_path(root, id, path, sizeof path) == 0 && !zk_exists(zh, path));
}

int main(void)
{
    harness_init("recovery", root, sizeof root);
    harness_root_layout(root, 2); /* it checks the lock a held job has (claims take none) */
    if (daemon_start(&d, root, "r1", NULL) != 0)
        return 1;
    zhandle_t *zh = zk_connect();
    consumer_killed(zh);
    restart_with_pending(SIGTERM);
    restart_with_pending(SIGKILL);
    daemon_killed_holding(zh);
    CHECK(zk_count_jobs(zh, root, "a") + zk_count_jobs(zh, root, "b") +
          zk_count_jobs(zh, root, "emails") == 0);
    daemon_kill(&d, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_recovery");
}
