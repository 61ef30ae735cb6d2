/* deferctl work end to end, as a user runs it: leaving by --max-jobs or a signal takes no
 * new job and gives jobs pushed ahead back uncounted (their next delivery is attempt 1);
 * a job whose lease expires while its command runs is not pushed back to the busy worker
 * (the attempts its runs see have no gap); a job cancelled while it runs is reported as
 * cancelled, not as expired; -c CONFIG picks the daemon of that config. */
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];
static char dir[256];

/* Runs `deferctl -s SOCK work ARGS...` with stdout and stderr into LOG. */
static pid_t spawn_work(const char *log, const char *const *args)
{
    const char *argv[32] = {getenv("DEFERCTL_BIN"), "-s", d.sock, "work"};
    int n = 4;
    for (; *args && n < 31; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Its exit status once it exits within MS; -1 if it did not (then it is killed). */
static int wait_exit(pid_t pid, int ms)
{
    int status;
    for (int64_t until = now_ms() + ms; now_ms() < until; usleep(20000))
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Waits up to MS until PATH contains NEEDLE; 1 when it does. */
static int file_wait(const char *path, const char *needle, int ms)
{
    char buf[16384];
    for (int64_t until = now_ms() + ms; now_ms() < until; usleep(20000)) {
        slurp(path, buf, sizeof buf);
        if (strstr(buf, needle))
            return 1;
    }
    return 0;
}

/* Waits up to MS until PATH exists; 1 when it does. */
static int exists_wait(const char *path, int ms)
{
    for (int64_t until = now_ms() + ms; now_ms() < until; usleep(20000))
        if (access(path, F_OK) == 0)
            return 1;
    return 0;
}

/* A command that says it started (touches STARTED) and waits until GO exists. */
static void gated(const char *name, char *started, char *go, char *cmd, size_t len)
{
    snprintf(started, 300, "%s/%s.started", dir, name);
    snprintf(go, 300, "%s/%s.go", dir, name);
    snprintf(cmd, len, "touch %s; while [ ! -e %s ]; do sleep 0.02; done", started, go);
}

static void open_gate(const char *go)
{
    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
}

/* A consumer takes N jobs of QUEUE and acks them: each must be attempt 1. */
static void expect_fresh(const char *queue, int n)
{
    deferd_client *c = client(&d);
    CHECK(deferd_subscribe(c, queue, (unsigned)n) == DEFERD_OK);
    for (int i = 0; i < n; i++) {
        deferd_job job;
        CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
        if (job.attempt != 1)
            printf("%s came back as attempt %u\n", job.id, job.attempt);
        CHECK(job.attempt == 1);
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    deferd_close(c);
}

/* The case (inflight 1, --max-jobs 1, two jobs), then jobs taken ahead with
 * --inflight 3: what work did not run comes back as attempt 1. */
static void max_jobs_gives_back(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], out[16384];
    snprintf(log, sizeof log, "%s/max1.log", dir);
    for (int i = 0; i < 2; i++)
        CHECK(put_job(prod, "a", "one", 0, -1, -1, id) == 0);
    const char *one[] = {"--queue", "a", "--max-jobs", "1", "--", "true", NULL};
    CHECK(wait_exit(spawn_work(log, one), 20000) == 0);
    slurp(log, out, sizeof out);
    CHECK_CONTAINS(out, "attempt 1 -> ack");
    expect_fresh("a", 1);

    snprintf(log, sizeof log, "%s/max2.log", dir);
    for (int i = 0; i < 5; i++)
        CHECK(put_job(prod, "a", "five", 0, -1, -1, id) == 0);
    const char *ahead[] = {"--queue", "a", "--inflight", "3", "--max-jobs", "2", "--", "true",
                           NULL};
    CHECK(wait_exit(spawn_work(log, ahead), 20000) == 0);
    slurp(log, out, sizeof out);
    CHECK_CONTAINS(out, "gave back");
    expect_fresh("a", 3);
    deferd_close(prod);
}

/* SIGTERM while a command runs: it finishes and is acked, the rest goes back uncounted. */
static void signal_gives_back(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], started[300], go[300], cmd[700], out[16384];
    snprintf(log, sizeof log, "%s/sig.log", dir);
    gated("sig", started, go, cmd, sizeof cmd);
    for (int i = 0; i < 3; i++)
        CHECK(put_job(prod, "b", "three", 0, -1, -1, id) == 0);
    const char *args[] = {"--queue", "b", "--inflight", "3", "--", "sh", "-c", cmd, NULL};
    pid_t pid = spawn_work(log, args);
    CHECK(exists_wait(started, 10000));
    kill(pid, SIGTERM);
    open_gate(go);
    CHECK(wait_exit(pid, 20000) == 0);
    slurp(log, out, sizeof out);
    CHECK_CONTAINS(out, "attempt 1 -> ack");
    CHECK_CONTAINS(out, "gave back 2 jobs");
    expect_fresh("b", 2);
    deferd_close(prod);
}

/* ttr 1 s and a command of 1.6 s, one worker with inflight 1: every run sees the next
 * attempt. Before, the expired job went straight back to the busy worker, expired again in
 * its queue, and runs saw 1, 2, 4... */
static void expired_not_pushed_to_busy_worker(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], runs[300], cmd[700], out[16384], got[DEFERD_ID_SIZE];
    deferd_put_opts o = {.has_ttr = 1, .ttr_ms = 1000};
    snprintf(log, sizeof log, "%s/expire.log", dir);
    snprintf(runs, sizeof runs, "%s/expire.runs", dir);
    snprintf(cmd, sizeof cmd, "echo $DEFERD_ATTEMPT >> %s; sleep 1.6", runs);
    CHECK(deferd_put(prod, "emails", "slow", 4, &o, id, sizeof id) == DEFERD_OK);
    const char *args[] = {"--queue", "emails", "--", "sh", "-c", cmd, NULL};
    pid_t pid = spawn_work(log, args);
    CHECK(file_wait(runs, "3\n", 20000));
    kill(pid, SIGTERM);
    CHECK(wait_exit(pid, 10000) == 0);
    slurp(runs, out, sizeof out);
    printf("attempts seen by the runs: %s", out);
    CHECK(strncmp(out, "1\n2\n3\n", 6) == 0);
    slurp(log, out, sizeof out);
    CHECK_CONTAINS(out, "lease expired while its command runs");
    CHECK(deferd_cancel(prod, id, NULL, NULL, 1, got, sizeof got) == DEFERD_OK ||
          deferd_cancel(prod, id, NULL, NULL, 1, got, sizeof got) == DEFERD_OK);
    deferd_close(prod);
}

/* cancel --force while the command runs: work says cancelled, never "expired". */
static void cancelled_run_reported(zhandle_t *zh)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], started[300], go[300], cmd[700], out[16384];
    char args_c[400];
    snprintf(log, sizeof log, "%s/cancel.log", dir);
    gated("cancel", started, go, cmd, sizeof cmd);
    CHECK(put_job(prod, "b", "doomed", 0, -1, -1, id) == 0);
    const char *args[] = {"--queue", "b", "--max-jobs", "1", "--", "sh", "-c", cmd, NULL};
    pid_t pid = spawn_work(log, args);
    CHECK(exists_wait(started, 10000));
    snprintf(args_c, sizeof args_c, "cancel --force %s", id);
    CHECK(run_deferctl(&d, args_c, out, sizeof out) == 0);
    CHECK(file_wait(log, "cancelled while its command runs", 5000));
    open_gate(go);
    CHECK(wait_exit(pid, 20000) == 0);
    slurp(log, out, sizeof out);
    CHECK_CONTAINS(out, "attempt 1 -> cancelled");
    CHECK(strstr(out, "expired") == NULL);
    CHECK(!zk_job_exists(zh, root, id));
    deferd_close(prod);
}

/* -c CONFIG without -s: the socket commands use that config's [daemon] socket. */
static void socket_from_config(void)
{
    char cmd[1024], out[256] = "";
    snprintf(cmd, sizeof cmd, "env -u DEFERD_SOCKET -u DEFERD_CONFIG %s -c %s/deferd.ini ping",
             getenv("DEFERCTL_BIN"), d.dir);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && pclose(p) == 0);
    CHECK_STR(out, "PONG\n");
    snprintf(cmd, sizeof cmd, "env -u DEFERD_SOCKET DEFERD_CONFIG=%s/deferd.ini %s ping",
             d.dir, getenv("DEFERCTL_BIN"));
    p = popen(cmd, "r");
    n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && pclose(p) == 0);
    CHECK_STR(out, "PONG\n");
}

int main(void)
{
    harness_init("work", root, sizeof root);
    if (daemon_start(&d, root, "w1", NULL) != 0)
        return 1;
    CHECK(daemon_wait_connected(&d, 15000) == 0); /* puts before it are refused */
    snprintf(dir, sizeof dir, "%s", d.dir);
    zhandle_t *zh = zk_connect();
    socket_from_config();
    max_jobs_gives_back();
    signal_gives_back();
    expired_not_pushed_to_busy_worker();
    cancelled_run_reported(zh);
    daemon_kill(&d, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_work");
}
