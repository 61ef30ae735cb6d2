/* deferctl work end to end, as a user runs it: leaving by --max-jobs or a signal takes no
 * new job and gives jobs pushed ahead back uncounted (their next delivery is attempt 1);
 * a job whose lease expires while its command runs is not pushed back to the busy worker
 * (the attempts its runs see have no gap); a job cancelled while it runs is reported as
 * cancelled, not as expired; -c CONFIG picks the daemon of that config. With --concurrency:
 * N commands really run at once and never more, their acks reach ZooKeeper in shared
 * multis, --quiet drops only the ack lines, a failing command is nacked, leaving gives back
 * what was not started, --touch keeps several leases, and --kill-on-expiry stops a command
 * whose lease expired or whose daemon is gone. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
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

/* Entries in DIR but . and ..; -1 if it cannot be read. */
static int dir_count(const char *path)
{
    DIR *dp = opendir(path);
    if (dp == NULL)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(dp)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(dp);
    return n;
}

/* Waits up to MS until DIR holds at least N entries; 1 when it does. */
static int dir_wait(const char *path, int n, int ms)
{
    for (int64_t until = now_ms() + ms; now_ms() < until; usleep(20000))
        if (dir_count(path) >= n)
            return 1;
    return 0;
}

/* LOG: DIR/NAME.log for work's output; RUNS: DIR/NAME.runs, made empty, for its commands'
 * marks. Both 300 bytes. */
static void run_paths(const char *name, char *log, char *runs)
{
    snprintf(log, 300, "%s/%s.log", dir, name);
    snprintf(runs, 300, "%s/%s.runs", dir, name);
    CHECK(mkdir(runs, 0755) == 0);
}

/* The daemon's txn.settles=ITEMS/MULTIS (acks and nacks applied / ZooKeeper multis). */
static void settles(unsigned long long *items, unsigned long long *multis)
{
    deferd_client *c = client(&d);
    char text[4096];
    const char *at = NULL;
    *items = *multis = 0;
    if (deferd_stats(c, text, sizeof text) == DEFERD_OK && (at = strstr(text, "txn.settles=")))
        CHECK(sscanf(at, "txn.settles=%llu/%llu", items, multis) == 2);
    CHECK(at != NULL);
    deferd_close(c);
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* -c 8, 8 jobs whose commands each wait for a lock the test holds: all 8 start before any
 * ends (they could not, one at a time), then end together when it is released, and their 8
 * acks are applied, one settle each. Whether they share multis depends on how closely they
 * arrive, so it is printed, not checked: tests/bench/work-rate measures the batching
 * (docs/performance.md). --quiet: no per-job line. */
static void eight_at_once(zhandle_t *zh)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], runs[300], lock[300], cmd[700], out[16384];
    unsigned long long items0, multis0, items1, multis1;
    run_paths("conc", log, runs);
    snprintf(lock, sizeof lock, "%s/conc.lock", dir);
    int lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644); /* not in deferctl */
    CHECK(lock_fd >= 0 && flock(lock_fd, LOCK_EX) == 0);
    snprintf(cmd, sizeof cmd, "touch %s/$$; exec flock -s %s true", runs, lock);
    for (int i = 0; i < 8; i++)
        CHECK(put_job(prod, "conc", "x", 0, -1, -1, id) == 0);
    const char *args[] = {"--queue", "conc", "-c", "8", "--max-jobs", "8", "--quiet", "--",
                          "sh", "-c", cmd, NULL};
    pid_t pid = spawn_work(log, args);
    CHECK(dir_wait(runs, 8, 20000)); /* 8 commands running at once */
    usleep(300000);                  /* not needed to pass: lets the last ones reach flock */
    settles(&items0, &multis0);
    close(lock_fd);
    CHECK(wait_exit(pid, 20000) == 0);
    settles(&items1, &multis1);
    printf("8 acks: txn.settles +%llu/+%llu\n", items1 - items0, multis1 - multis0);
    CHECK(items1 - items0 == 8);
    CHECK(multis1 - multis0 >= 1 && multis1 - multis0 <= 8);
    slurp(log, out, sizeof out);
    CHECK(strstr(out, "-> ack") == NULL);
    CHECK(zk_count_jobs(zh, root, "conc") == 0);
    deferd_close(prod);
}

/* -c 3 and 9 jobs, each command counting the commands running as it starts: never more than
 * 3, and all 9 acked with a line each. */
static void concurrency_bounded(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], runs[300], counts[300], cmd[1400], out[16384];
    run_paths("bound", log, runs);
    snprintf(counts, sizeof counts, "%s/bound.counts", dir);
    snprintf(cmd, sizeof cmd, "touch %s/$$; ls %s | wc -l >> %s; sleep 0.1; rm %s/$$", runs,
             runs, counts, runs);
    for (int i = 0; i < 9; i++)
        CHECK(put_job(prod, "bound", "x", 0, -1, -1, id) == 0);
    const char *args[] = {"--queue", "bound", "--concurrency", "3", "--max-jobs", "9", "--",
                          "sh", "-c", cmd, NULL};
    CHECK(wait_exit(spawn_work(log, args), 30000) == 0);
    slurp(counts, out, sizeof out);
    int n = 0, max = 0;
    for (char *p = out, *end; *p; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        n++;
        max = v > max ? (int)v : max;
    }
    printf("-c 3: %d runs, at most %d at once\n", n, max);
    CHECK(n == 9);
    CHECK(max <= 3 && max >= 1);
    slurp(log, out, sizeof out);
    CHECK(count_of(out, "attempt 1 -> ack (exit 0)") == 9);
    deferd_close(prod);
}

/* --quiet -c 2: the failing command's job is nacked and said so; the good one is silent. */
static void failing_nacked_quiet(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], bad[DEFERD_ID_SIZE], log[300], out[16384], line[400];
    snprintf(log, sizeof log, "%s/fail.log", dir);
    CHECK(put_job(prod, "fail", "good", 0, -1, -1, id) == 0);
    CHECK(put_job(prod, "fail", "bad", 0, -1, -1, bad) == 0);
    deferd_close(prod);
    const char *args[] = {"--queue", "fail", "-c", "2", "--quiet", "--max-jobs", "2", "--",
                          "sh", "-c", "read p; [ \"$p\" != bad ] || exit 3", NULL};
    CHECK(wait_exit(spawn_work(log, args), 20000) == 0);
    slurp(log, out, sizeof out);
    snprintf(line, sizeof line, "%s attempt 1 -> nack (exit 3)", bad);
    CHECK_CONTAINS(out, line);
    CHECK(strstr(out, "-> ack") == NULL);
    CHECK(count_of(out, "deferctl: ") == 1);
}

/* A failing command on the job's last attempt (queue limited: max_attempts 1): work says
 * the job went to the dead letters, and which id to look it up by, from the daemon's answer
 * (NACK replies "OK dead=<id>"). */
static void last_attempt_dead_lettered(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], out[16384], line[400];
    snprintf(log, sizeof log, "%s/dead.log", dir);
    CHECK(put_job(prod, "limited", "doomed", 0, -1, -1, id) == 0);
    deferd_close(prod);
    const char *args[] = {"--queue", "limited", "--max-jobs", "1", "--", "sh", "-c", "exit 3",
                          NULL};
    CHECK(wait_exit(spawn_work(log, args), 20000) == 0);
    slurp(log, out, sizeof out);
    snprintf(line, sizeof line, "%s attempt 1 -> nack: dead-lettered as limited/", id);
    CHECK_CONTAINS(out, line);
    CHECK_CONTAINS(out, "(max_attempts reached; deferctl dead show limited/");
    CHECK(run_deferctl(&d, "dead list limited", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "limited/");
}

/* -c 2 --inflight 5 and 5 jobs: SIGTERM while two commands run lets them end and be acked,
 * and gives the 3 others back uncounted; then --max-jobs 3 of 6 with -c 2 runs 3 and the
 * rest is still attempt 1. */
static void concurrent_leaving_gives_back(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], runs[300], go[300], cmd[700], out[16384];
    run_paths("leave", log, runs);
    snprintf(go, sizeof go, "%s/leave.go", dir);
    snprintf(cmd, sizeof cmd, "touch %s/$$; while [ ! -e %s ]; do sleep 0.02; done", runs, go);
    for (int i = 0; i < 5; i++)
        CHECK(put_job(prod, "leave", "x", 0, -1, -1, id) == 0);
    const char *args[] = {"--queue", "leave", "-c", "2", "--inflight", "5", "--", "sh", "-c",
                          cmd, NULL};
    pid_t pid = spawn_work(log, args);
    CHECK(dir_wait(runs, 2, 20000));
    kill(pid, SIGTERM);
    CHECK(file_wait(log, "stopping on signal", 10000));
    open_gate(go);
    CHECK(wait_exit(pid, 20000) == 0);
    slurp(log, out, sizeof out);
    CHECK(count_of(out, "attempt 1 -> ack") == 2);
    CHECK_CONTAINS(out, "gave back 3 jobs");
    CHECK(dir_count(runs) == 2); /* no third command started */
    expect_fresh("leave", 3);

    snprintf(log, sizeof log, "%s/leave-max.log", dir);
    for (int i = 0; i < 6; i++)
        CHECK(put_job(prod, "leave", "y", 0, -1, -1, id) == 0);
    const char *max[] = {"--queue", "leave", "-c", "2", "--inflight", "4", "--max-jobs", "3",
                         "--", "true", NULL};
    CHECK(wait_exit(spawn_work(log, max), 20000) == 0);
    slurp(log, out, sizeof out);
    CHECK(count_of(out, "attempt 1 -> ack") == 3);
    expect_fresh("leave", 3);
    deferd_close(prod);
}

/* --touch -c 3, ttr 1 s: two commands of 2.5 s keep their jobs by renewing both leases while
 * a quick one is acked beside them; all three acked as attempt 1, nothing expired. */
static void concurrent_touch(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], out[16384];
    deferd_put_opts o = {.has_ttr = 1, .ttr_ms = 1000};
    const char *payloads[] = {"slow", "fast", "slow"};
    snprintf(log, sizeof log, "%s/touch.log", dir);
    for (int i = 0; i < 3; i++)
        CHECK(deferd_put(prod, "touch", payloads[i], 4, &o, id, sizeof id) == DEFERD_OK);
    deferd_close(prod);
    const char *args[] = {"--queue", "touch", "-c", "3", "--touch", "--max-jobs", "3", "--",
                          "sh", "-c", "read p; [ \"$p\" = fast ] || sleep 2.5", NULL};
    CHECK(wait_exit(spawn_work(log, args), 20000) == 0);
    slurp(log, out, sizeof out);
    CHECK(count_of(out, "attempt 1 -> ack (exit 0)") == 3);
    CHECK(strstr(out, "expired") == NULL && strstr(out, "failed") == NULL);
}

/* --kill-on-expiry, ttr 1 s: a command that ends on SIGTERM is reported with signal 15; one
 * that ignores SIGTERM gets SIGKILL after the grace. Each job is then cancelled. */
static void kill_on_expiry(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], got[DEFERD_ID_SIZE], log[300], out[16384];
    deferd_put_opts o = {.has_ttr = 1, .ttr_ms = 1000};
    const char *cmds[] = {"exec sleep 60", "trap '' TERM; while :; do sleep 0.1; done"};
    const char *verdict[] = {"attempt 1 -> lease expired (signal 15)",
                             "attempt 1 -> lease expired (signal 9)"};
    for (int i = 0; i < 2; i++) {
        snprintf(log, sizeof log, "%s/kill%d.log", dir, i);
        CHECK(deferd_put(prod, "kill", "k", 1, &o, id, sizeof id) == DEFERD_OK);
        const char *args[] = {"--queue", "kill", "--kill-on-expiry", "--max-jobs", "1", "--",
                              "sh", "-c", cmds[i], NULL};
        CHECK(wait_exit(spawn_work(log, args), 20000) == 0);
        slurp(log, out, sizeof out);
        CHECK_CONTAINS(out, verdict[i]);
        CHECK_CONTAINS(out, "sending SIGTERM");
        CHECK(deferd_cancel(prod, id, NULL, NULL, 1, got, sizeof got) == DEFERD_OK);
    }
    deferd_close(prod);
}

/* --kill-on-expiry and the daemon killed (SIGKILL) while a command runs: the job's lock
 * ends with the daemon's session, so the command is stopped (a queue's concurrency counts
 * on it, docs/limits.md); work exits 1. Last: the daemon is gone afterwards. */
static void daemon_lost_stops_command(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], log[300], out[16384], started[300], go[300], cmd[700];
    CHECK(put_job(prod, "kill", "k", 0, -1, -1, id) == 0);
    deferd_close(prod);
    gated("lost", started, go, cmd, sizeof cmd);
    snprintf(log, sizeof log, "%s/lost.log", dir);
    const char *args[] = {"--queue", "kill", "--kill-on-expiry", "--", "sh", "-c", cmd, NULL};
    pid_t w = spawn_work(log, args);
    struct stat st;
    for (int64_t until = now_ms() + 10000; stat(started, &st) != 0 && now_ms() < until;)
        usleep(20000);
    CHECK(stat(started, &st) == 0);
    daemon_kill(&d, SIGKILL);
    CHECK(wait_exit(w, 10000) == 1);
    slurp(log, out, sizeof out);
    CHECK_CONTAINS(out, "connection to deferd lost (its lease cannot be kept) while its command "
                        "runs");
    CHECK_CONTAINS(out, "sending SIGTERM");
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
    static const char *const queues[] = {"queue conc.priority=1", "queue bound.priority=1",
                                         "queue fail.backoff_min=5m", "queue leave.priority=1",
                                         "queue kill.priority=1", "queue touch.priority=1",
                                         NULL};
    if (daemon_start(&d, root, "w1", queues) != 0)
        return 1;
    CHECK(daemon_wait_connected(&d, 15000) == 0); /* puts before it are refused */
    snprintf(dir, sizeof dir, "%s", d.dir);
    zhandle_t *zh = zk_connect();
    socket_from_config();
    max_jobs_gives_back();
    signal_gives_back();
    expired_not_pushed_to_busy_worker();
    cancelled_run_reported(zh);
    eight_at_once(zh);
    concurrency_bounded();
    failing_nacked_quiet();
    last_attempt_dead_lettered();
    concurrent_leaving_gives_back();
    concurrent_touch();
    kill_on_expiry();
    daemon_lost_stops_command();
    zookeeper_close(zh);
    return check_report("it_work");
}
