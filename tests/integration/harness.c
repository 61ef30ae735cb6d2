#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "claimdata.h"
#include "layout.h"

char harness_zk_hosts[128];
static const char *const *saved_overrides;

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
    fprintf(stderr, "harness: %s\n", what);
    exit(1);
}

void harness_init(const char *name, char *root, size_t rootlen)
{
    const char *dir = getenv("DEFERD_TEST_ZKDIR");
    char path[512];
    if (!dir)
        die("DEFERD_TEST_ZKDIR not set (run through ctest)");
    snprintf(path, sizeof path, "%s/port", dir);
    FILE *f = fopen(path, "r");
    int port = 0;
    if (!f || fscanf(f, "%d", &port) != 1)
        die("cannot read the fixture's ZooKeeper port");
    fclose(f);
    snprintf(harness_zk_hosts, sizeof harness_zk_hosts, "127.0.0.1:%d", port);
    snprintf(root, rootlen, "/it-%s-%d", name, (int)getpid());
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    signal(SIGPIPE, SIG_IGN);
}

static int write_config(struct daemon_proc *d)
{
    char path[400];
    snprintf(path, sizeof path, "%s/deferd.ini", d->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "[daemon]\nsocket = %s\nlog_level = debug\nmax_payload = 4KiB\nlookahead = 2s\n"
               "drain_grace = 3s\n"
               "[zookeeper]\nhosts = %s\nroot = %s\nsession_timeout = 4s\n"
               /* no packs unless a test asks (-o queue.Q.pack_after=...): whether a job a
                * few hours ahead is packed would depend on where now falls in its window */
               "[queue a]\npack_after = 0\n[queue b]\npriority = 7\npack_after = 0\n"
               "[queue emails]\npack_after = 0\n"
               "[queue retry]\nbackoff_min = 200ms\nbackoff_max = 800ms\nbackoff_jitter = 0\n"
               "max_attempts = 5\npack_after = 0\n"
               "[queue limited]\nmax_pending = 5\nmax_attempts = 1\npack_after = 0\n"
               "[metrics]\nlisten = 127.0.0.1:0\n", /* any free port: daemons run side by side */
            d->sock, harness_zk_hosts, d->root);
    return fclose(f);
}

static pid_t spawn(struct daemon_proc *d, const char *const *overrides)
{
    const char *bin = getenv("DEFERD_BIN");
    const char *wrap = getenv("DEFERD_WRAPPER"); /* e.g. valgrind */
    char cfg[400];
    const char *argv[64];
    int n = 0;
    snprintf(cfg, sizeof cfg, "%s/deferd.ini", d->dir);
    if (wrap && *wrap) {
        static char wrapbuf[512];
        snprintf(wrapbuf, sizeof wrapbuf, "%s", wrap);
        for (char *t = strtok(wrapbuf, " "); t && n < 20; t = strtok(NULL, " "))
            argv[n++] = t;
    }
    argv[n++] = bin;
    argv[n++] = "-c";
    argv[n++] = cfg;
    for (int i = 0; overrides && overrides[i] && n < 60; i++) {
        argv[n++] = "-o";
        argv[n++] = overrides[i];
    }
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, 2);
        dup2(fd, 1);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

int daemon_wait_ready(struct daemon_proc *d)
{
    int64_t deadline = now_ms() + 30000;
    while (now_ms() < deadline) {
        int status;
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            fprintf(stderr, "harness: deferd exited early; see %s\n", d->log);
            d->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            d->pid = 0;
            return -1;
        }
        deferd_client *c = deferd_connect(d->sock, NULL, 0);
        if (c) {
            int ok = deferd_ping(c) == DEFERD_OK;
            deferd_close(c);
            if (ok)
                return 0;
        }
        usleep(20000);
    }
    fprintf(stderr, "harness: deferd not ready in 30 s; see %s\n", d->log);
    return -1;
}

int daemon_wait_connected(const struct daemon_proc *d, int ms)
{
    char stats[2048];
    int64_t deadline = now_ms() + ms;
    deferd_client *c = deferd_connect(d->sock, NULL, 0);
    int up = 0;
    while (c && !up && now_ms() < deadline) {
        /* and ZooKeeper's clock read: puts are refused until it is (guarantees.md) */
        up = deferd_stats(c, stats, sizeof stats) == DEFERD_OK &&
             strstr(stats, "zk_state=CONNECTED") != NULL &&
             strstr(stats, "clock_state=unsynced") == NULL;
        if (!up)
            usleep(20000);
    }
    if (c)
        deferd_close(c);
    return up ? 0 : -1;
}

/* A passed test leaves nothing in /tmp: its /tmp/deferd-it-<pid>-* (daemons' directories,
 * ZooKeepers', journals) go at exit. A failed one keeps them for reading: a failed check, an
 * early return or exit without check_report(), a crash. With pids reused (pid_max is 32768
 * here), what an earlier run of the same pid left and this one did not touch stays too. */
static pid_t harness_pid;
static time_t harness_started;

/* Made or changed by this process: its status changed since it started (a second's slack). */
static int touched_since_start(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && st.st_ctime >= harness_started - 1;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0 && errno != ENOENT)
        fprintf(stderr, "harness: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

static void remove_own_tmp(void)
{
    char pattern[64];
    glob_t g;
    /* a forked child that did not exec exits too: only the test's own process cleans */
    if (getpid() != harness_pid || !check_passed || check_failures)
        return;
    snprintf(pattern, sizeof pattern, "/tmp/deferd-it-%d-*", (int)harness_pid);
    if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
        return;
    for (size_t i = 0; i < g.gl_pathc; i++)
        if (touched_since_start(g.gl_pathv[i]))
            nftw(g.gl_pathv[i], remove_one, 16, FTW_DEPTH | FTW_PHYS);
    globfree(&g);
}

__attribute__((constructor)) static void register_tmp_cleanup(void)
{
    harness_pid = getpid();
    harness_started = time(NULL);
    atexit(remove_own_tmp);
}

/* 1 the first time this process prepares DIR: a directory of that name is then another
 * process's, left behind by a failed run whose pid this one got again (its log would be
 * appended to, and its lines counted: integration.log failed so). */
static int first_use(const char *dir)
{
    static char used[64][256];
    static int nused;
    for (int i = 0; i < nused; i++)
        if (strcmp(used[i], dir) == 0)
            return 0;
    if (nused < 64)
        snprintf(used[nused++], sizeof used[0], "%s", dir);
    return 1;
}

int daemon_prepare(struct daemon_proc *d, const char *root, const char *tag)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "/tmp/deferd-it-%d-%s", (int)getpid(), tag);
    mkdir(d->dir, 0755);
    snprintf(d->sock, sizeof d->sock, "%s/deferd.sock", d->dir);
    snprintf(d->log, sizeof d->log, "%s/deferd.log", d->dir);
    if (first_use(d->dir)) { /* a stale run's log emptied (kept: a test may have made it,
                              * as integration.log's journal case does, by its inode) */
        if (truncate(d->log, 0) != 0 && errno != ENOENT)
            fprintf(stderr, "harness: cannot empty %s: %s\n", d->log, strerror(errno));
    }
    snprintf(d->root, sizeof d->root, "%s", root);
    return write_config(d);
}

static struct {
    char root[128], hosts[128];
    int version;
} pinned;

void harness_root_layout(const char *root, int version)
{
    snprintf(pinned.root, sizeof pinned.root, "%s", root);
    pinned.version = version;
    pinned.hosts[0] = '\0';
}

/* The pinned root's marker on this ZooKeeper, before a daemon can make the root anew. */
static void write_pinned(const char *root)
{
    char marker[200], data[8];
    if (!pinned.version || strcmp(root, pinned.root) != 0 ||
        strcmp(pinned.hosts, harness_zk_hosts) == 0)
        return;
    zhandle_t *zh = zk_connect();
    snprintf(marker, sizeof marker, "%s/layout", root);
    snprintf(data, sizeof data, "%d", pinned.version);
    int rc = zoo_create(zh, root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc == ZOK || rc == ZNODEEXISTS)
        rc = zoo_create(zh, marker, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc != ZOK && rc != ZNODEEXISTS)
        die("cannot write the layout marker of the test's root");
    snprintf(pinned.hosts, sizeof pinned.hosts, "%s", harness_zk_hosts);
    zookeeper_close(zh);
}

int daemon_spawn(struct daemon_proc *d, const char *root, const char *tag,
                 const char *const *overrides)
{
    write_pinned(root);
    if (daemon_prepare(d, root, tag) != 0)
        return -1;
    saved_overrides = overrides;
    d->pid = spawn(d, overrides);
    return d->pid > 0 ? 0 : -1;
}

int daemon_start(struct daemon_proc *d, const char *root, const char *tag,
                 const char *const *overrides)
{
    return daemon_spawn(d, root, tag, overrides) == 0 ? daemon_wait_ready(d) : -1;
}

int daemons_start(struct daemon_proc *d, int n, const char *root,
                  const char *const *overrides)
{
    char tag[16];
    for (int k = 0; k < n; k++) {
        snprintf(tag, sizeof tag, "d%d", k);
        if (daemon_start(&d[k], root, tag, overrides) != 0 ||
            daemon_wait_connected(&d[k], 20000) != 0) {
            fprintf(stderr, "harness: deferd %s did not start; see %s\n", tag, d[k].log);
            return -1;
        }
    }
    return 0;
}

int daemon_restart(struct daemon_proc *d, const char *const *overrides)
{
    d->pid = spawn(d, overrides ? overrides : saved_overrides);
    return d->pid > 0 ? daemon_wait_ready(d) : -1;
}

/* Under valgrind, every run recorded in the log must end with a clean summary. */
static void check_valgrind_log(const struct daemon_proc *d)
{
    const char *wrap = getenv("DEFERD_WRAPPER");
    if (!wrap || !strstr(wrap, "valgrind"))
        return;
    FILE *f = fopen(d->log, "r");
    char line[1024];
    int summaries = 0, clean = 0;
    while (f && fgets(line, sizeof line, f)) {
        summaries += strstr(line, "ERROR SUMMARY:") != NULL;
        clean += strstr(line, "ERROR SUMMARY: 0 errors") != NULL;
    }
    if (f)
        fclose(f);
    CHECK(summaries > 0 && summaries == clean);
    if (summaries == 0 || summaries != clean)
        fprintf(stderr, "harness: valgrind reported errors or did not run; see %s\n", d->log);
}

/* deferd's log stays small under every test: a failure repeated at loop speed once wrote
 * 18 GB in 9 minutes (issue 38). Every line is at debug level here, so the bound is loose;
 * a flood passes it within a second. */
#define LOG_BYTES_MAX (32L * 1024 * 1024)

static void check_log_size(const struct daemon_proc *d)
{
    struct stat st;
    if (stat(d->log, &st) != 0 || st.st_size <= LOG_BYTES_MAX)
        return;
    check_failures++;
    fprintf(stderr, "harness: deferd's log %s is %lld bytes, over %ld\n", d->log,
            (long long)st.st_size, LOG_BYTES_MAX);
}

/* After a failed check, the end of the daemon's log goes with the test's output: CI keeps
 * only what ctest printed, and the log explains most failures. */
static void print_log_tail(const struct daemon_proc *d)
{
    enum { TAIL = 60 };
    static char lines[TAIL][512];
    long n = 0;
    FILE *f = fopen(d->log, "r");
    if (!f)
        return;
    while (fgets(lines[n % TAIL], sizeof lines[0], f))
        n++;
    fclose(f);
    fprintf(stderr, "harness: the last %ld lines of %s:\n", n < TAIL ? n : (long)TAIL, d->log);
    for (long i = n < TAIL ? 0 : n - TAIL; i < n; i++)
        fputs(lines[i % TAIL], stderr);
}

void daemon_kill(struct daemon_proc *d, int sig)
{
    if (d->pid <= 0)
        return;
    check_log_size(d);
    if (check_failures)
        print_log_tail(d);
    kill(d->pid, sig);
    int status;
    waitpid(d->pid, &status, 0);
    if (sig == SIGTERM && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        fprintf(stderr, "harness: deferd did not exit cleanly on SIGTERM (status %d); see %s\n",
                status, d->log);
        check_failures++;
    }
    if (sig == SIGTERM)
        check_valgrind_log(d);
    d->pid = 0;
}

/* Reaps D once it ends within MS: 1 with its wait status in STATUS, else 0. */
static int reap(struct daemon_proc *d, int ms, int *status)
{
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        if (waitpid(d->pid, status, WNOHANG) == d->pid) {
            check_log_size(d);
            d->pid = 0;
            return 1;
        }
        usleep(20000);
    }
    return 0;
}

int daemon_wait_exit(struct daemon_proc *d, int ms)
{
    int status;
    return reap(d, ms, &status) && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int daemon_wait_signal(struct daemon_proc *d, int ms)
{
    int status;
    if (!reap(d, ms, &status))
        return -1;
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

long log_mark(const struct daemon_proc *d)
{
    struct stat st;
    return stat(d->log, &st) == 0 ? (long)st.st_size : 0;
}

int log_count(const struct daemon_proc *d, long mark, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    char line[4096];
    int n = 0;
    if (!f)
        return 0;
    fseek(f, mark, SEEK_SET);
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

int log_wait(const struct daemon_proc *d, long mark, const char *needle, int ms)
{
    int64_t deadline = now_ms() + ms;
    while (log_count(d, mark, needle) == 0) {
        if (now_ms() > deadline) {
            fprintf(stderr, "harness: no '%s' in %s within %d ms\n", needle, d->log, ms);
            return 0;
        }
        usleep(20000);
    }
    return 1;
}

int raw_read_lines(int fd, int n, char *out, size_t len, int ms)
{
    int lines = 0;
    size_t got = 0;
    int64_t deadline = now_ms() + ms;
    out[0] = '\0';
    while (lines < n && got + 1 < len) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - now_ms());
        ssize_t r;
        if (left <= 0 || poll(&pf, 1, left) <= 0 || (r = read(fd, out + got, 1)) <= 0)
            break;
        lines += out[got++] == '\n';
        out[got] = '\0';
    }
    return lines;
}

int raw_connect(const struct daemon_proc *d)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(d->sock) >= sizeof sun.sun_path)
        return -1;
    memcpy(sun.sun_path, d->sock, strlen(d->sock) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

deferd_client *client(const struct daemon_proc *d)
{
    char err[256];
    deferd_client *c = deferd_connect(d->sock, err, sizeof err);
    if (!c)
        die(err);
    deferd_set_timeout(c, 20000);
    return c;
}

int next_event(deferd_client *c, deferd_event *ev, int ms)
{
    memset(ev, 0, sizeof *ev);
    return deferd_next_event(c, ev, ms);
}

int next_job_push(deferd_client *c, deferd_job *job, int ms)
{
    int64_t until = now_ms() + ms;
    deferd_event ev;
    while (now_ms() < until) {
        if (next_event(c, &ev, (int)(until - now_ms())) != DEFERD_OK)
            return -1;
        if (ev.kind == DEFERD_EV_JOB) {
            *job = ev.job;
            return 0;
        }
        deferd_job_clear(&ev.job);
    }
    return -1;
}

int stats_has(const struct daemon_proc *d, const char *text)
{
    deferd_client *c = client(d);
    char buf[4096] = "";
    int ok = c && deferd_stats(c, buf, sizeof buf) == DEFERD_OK && strstr(buf, text);
    deferd_close(c);
    return ok;
}

int wait_stats(const struct daemon_proc *d, const char *text, int want)
{
    int64_t deadline = now_ms() + 10000;
    while (now_ms() < deadline) {
        if (stats_has(d, text) == want)
            return 1;
        usleep(20000);
    }
    return 0;
}

int put_job(deferd_client *c, const char *queue, const char *payload, int64_t delay_ms,
            int64_t at_ms, int prio, char *id)
{
    deferd_put_opts o = {0};
    if (delay_ms >= 0) {
        o.has_delay = 1;
        o.delay_ms = (uint64_t)delay_ms;
    }
    if (at_ms >= 0) {
        o.has_at = 1;
        o.at_ms = (uint64_t)at_ms;
    }
    if (prio >= 0) {
        o.has_priority = 1;
        o.priority = (uint32_t)prio;
    }
    int64_t deadline = now_ms() + 20000;
    for (;;) {
        int rc = deferd_put(c, queue, payload, strlen(payload), &o, id, DEFERD_ID_SIZE);
        if (rc == DEFERD_OK)
            return 0;
        if (rc != DEFERD_ESERVER || strcmp(deferd_last_error_code(c), "UNAVAILABLE") != 0 ||
            now_ms() > deadline) {
            fprintf(stderr, "put failed: %s\n", deferd_last_error(c));
            return -1;
        }
        usleep(50000);
    }
}

static void zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)type;
    (void)path;
    (void)ctx;
    (void)state;
}

zhandle_t *zk_connect(void)
{
    zhandle_t *zh = zookeeper_init(harness_zk_hosts, zk_watcher, 10000, NULL, NULL, 0);
    int64_t deadline = now_ms() + 20000;
    while (zh && zoo_state(zh) != ZOO_CONNECTED_STATE && now_ms() < deadline)
        usleep(10000);
    if (!zh || zoo_state(zh) != ZOO_CONNECTED_STATE)
        die("test's ZooKeeper session did not connect");
    return zh;
}

int zk_exists(zhandle_t *zh, const char *path)
{
    struct Stat st;
    return zoo_exists(zh, path, 0, &st) == ZOK;
}

int zk_create_path(zhandle_t *zh, const char *path, const char *data)
{
    char buf[LAYOUT_PATH_MAX + 64];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return ZBADARGUMENTS;
    for (char *p = strchr(buf + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        zoo_create(zh, buf, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0); /* there already: fine */
        *p = '/';
    }
    return zoo_create(zh, buf, data, data ? (int)strlen(data) : -1, &ZOO_OPEN_ACL_UNSAFE, 0,
                      NULL, 0);
}

static int count_under(zhandle_t *zh, const char *path, int level)
{
    struct String_vector kids;
    if (zoo_get_children(zh, path, 0, &kids) != ZOK)
        return 0;
    int n = 0;
    for (int i = 0; i < kids.count; i++) {
        char sub[600];
        snprintf(sub, sizeof sub, "%s/%s", path, kids.data[i]);
        if (level == LAYOUT_DEPTH && layout_valid_shard(kids.data[i]))
            n += count_under(zh, sub, level + 1); /* a shard: jobs only */
        else
            n += level >= LAYOUT_DEPTH ? 1 : count_under(zh, sub, level + 1);
    }
    deallocate_String_vector(&kids);
    return n;
}

/* Jobs held in QUEUE's claims: the records of every claim node. */
static int count_claimed(zhandle_t *zh, const char *root, const char *queue)
{
    char dir[300], cpath[600];
    static char data[CLAIM_BYTES_MAX];
    struct claim_record recs[CLAIM_JOBS_MAX];
    struct String_vector kids = {0};
    snprintf(dir, sizeof dir, "%s/queues/%s/claims", root, queue);
    if (zoo_get_children(zh, dir, 0, &kids) != ZOK)
        return 0;
    int total = 0;
    for (int i = 0; i < kids.count; i++) {
        int len = sizeof data;
        uint32_t n = 0;
        snprintf(cpath, sizeof cpath, "%s/%s", dir, kids.data[i]);
        if (zoo_get(zh, cpath, 0, data, &len, NULL) == ZOK && len > 0 &&
            claimdata_read(data, (size_t)len, recs, CLAIM_JOBS_MAX, &n, NULL, 0) == 0)
            total += (int)n;
    }
    deallocate_String_vector(&kids);
    return total;
}

int zk_count_claims(zhandle_t *zh, const char *root, const char *queue)
{
    char dir[300];
    struct String_vector kids = {0};
    snprintf(dir, sizeof dir, "%s/queues/%s/claims", root, queue);
    int rc = zoo_get_children(zh, dir, 0, &kids);
    int n = rc == ZOK ? kids.count : rc == ZNONODE ? 0 : -1;
    deallocate_String_vector(&kids);
    return n;
}

static int count_once(zhandle_t *zh, const char *root, const char *queue)
{
    char path[300];
    snprintf(path, sizeof path, "%s/queues/%s/jobs", root, queue);
    return count_under(zh, path, 0) + count_claimed(zh, root, queue);
}

/* Two counts that agree: the buckets and the claims are read one after the other, so a
 * job moving between them (claimed, given back) can be missed or counted twice once. */
int zk_count_jobs(zhandle_t *zh, const char *root, const char *queue)
{
    int n = count_once(zh, root, queue);
    for (int tries = 0; tries < 20; tries++) {
        int again = count_once(zh, root, queue);
        if (again == n)
            break;
        n = again;
    }
    return n;
}

int job_path(const char *root, const char *id, char *path, size_t len)
{
    char queue[80];
    struct job_name jn;
    if (layout_parse_id(id, queue, sizeof queue, &jn) != 0)
        return -1;
    return layout_job_path(path, len, root, queue, &jn);
}

int zk_job_exists(zhandle_t *zh, const char *root, const char *id)
{
    char path[LAYOUT_PATH_MAX];
    return job_path(root, id, path, sizeof path) == 0 && zk_exists(zh, path);
}

int zk_job_claimed(zhandle_t *zh, const char *root, const char *id)
{
    char queue[80], path[LAYOUT_PATH_MAX], qdir[LAYOUT_PATH_MAX], dir[LAYOUT_PATH_MAX];
    struct job_name jn;
    struct String_vector kids = {0};
    static char data[CLAIM_BYTES_MAX];
    struct claim_record recs[CLAIM_JOBS_MAX];
    if (layout_parse_id(id, queue, sizeof queue, &jn) != 0 ||
        layout_job_path(path, sizeof path, root, queue, &jn) != 0 ||
        layout_queue_path(qdir, sizeof qdir, root, queue, NULL, NULL) != 0 ||
        layout_queue_path(dir, sizeof dir, root, queue, LAYOUT_CLAIMS, NULL) != 0 ||
        zoo_get_children(zh, dir, 0, &kids) != ZOK)
        return 0;
    int found = 0;
    for (int i = 0; i < kids.count && !found; i++) {
        char cpath[LAYOUT_PATH_MAX + 64];
        int len = sizeof data;
        uint32_t n = 0;
        snprintf(cpath, sizeof cpath, "%s/%s", dir, kids.data[i]);
        found = zoo_get(zh, cpath, 0, data, &len, NULL) == ZOK && len > 0 &&
                claimdata_read(data, (size_t)len, recs, CLAIM_JOBS_MAX, &n, NULL, 0) == 0 &&
                claimdata_find(recs, n, path + strlen(qdir) + 1) >= 0;
    }
    deallocate_String_vector(&kids);
    return found;
}

int zk_get(zhandle_t *zh, const char *path, char *buf, size_t len)
{
    int n = (int)len - 1;
    struct Stat st;
    if (zoo_get(zh, path, 0, buf, &n, &st) != ZOK)
        return -1;
    n = n < 0 ? 0 : n;
    buf[n] = '\0';
    return n;
}

int zk_key_data(zhandle_t *zh, const char *root, const char *queue, const char *key, char *buf,
                size_t len)
{
    char path[LAYOUT_PATH_MAX];
    if (layout_key_path(path, sizeof path, root, queue, key) != 0)
        return -1;
    return zk_get(zh, path, buf, len);
}

int zk_private(const char *verb, const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s %s >/dev/null", getenv("DEFERD_ZK_SANDBOX"), verb, dir);
    return system(cmd) == 0 ? 0 : -1;
}

int zk_sandbox(const char *verb, const char *arg, char *out, size_t len)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s %s %s", getenv("DEFERD_ZK_SANDBOX"), verb, arg);
    FILE *p = popen(cmd, "r");
    size_t n = p && out ? fread(out, 1, len - 1, p) : 0;
    if (out)
        out[n] = '\0';
    return p && pclose(p) == 0 ? 0 : -1;
}

int zk_ensemble_start(char *ensdir, size_t len)
{
    char hosts[100];
    snprintf(ensdir, len, "/tmp/deferd-it-%d-ens", (int)getpid());
    if (zk_sandbox("ensemble", ensdir, hosts, sizeof hosts) != 0)
        return -1;
    hosts[strcspn(hosts, "\n")] = '\0';
    snprintf(harness_zk_hosts, sizeof harness_zk_hosts, "%s", hosts);
    return 0;
}

int zk_kill_leader(const char *ensdir)
{
    char leader[16], path[400], pid[32] = "";
    if (zk_sandbox("leader", ensdir, leader, sizeof leader) != 0)
        return -1;
    int n = atoi(leader);
    snprintf(path, sizeof path, "%s/node%d/zk.pid", ensdir, n);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(pid, sizeof pid, f) || atoi(pid) <= 0) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    return kill(atoi(pid), SIGKILL) == 0 ? n : -1;
}

int zk_private_start(const char *dir)
{
    char cmd[1024];
    int port = 0;
    snprintf(cmd, sizeof cmd, "%s start %s", getenv("DEFERD_ZK_SANDBOX"), dir);
    FILE *p = popen(cmd, "r");
    if (!p || fscanf(p, "%d", &port) != 1)
        port = 0;
    if (p)
        pclose(p);
    if (port <= 0)
        return -1;
    snprintf(harness_zk_hosts, sizeof harness_zk_hosts, "127.0.0.1:%d", port);
    return 0;
}

size_t curator_frame(unsigned char *buf, const char *const *parts, int n)
{
    static const unsigned char version[4] = {0, 1, 0, 1};
    size_t at = 4;
    memcpy(buf, version, 4);
    for (int i = 0; i < n; i++) {
        uint32_t len = (uint32_t)strlen(parts[i]);
        buf[at++] = 1;
        for (int k = 3; k >= 0; k--)
            buf[at++] = (unsigned char)(len >> (8 * k));
        memcpy(buf + at, parts[i], len);
        at += len;
    }
    buf[at++] = 2;
    return at;
}

int run_deferctl(const struct daemon_proc *d, const char *args, char *out, size_t len)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s -c %s/deferd.ini -s %s %s", getenv("DEFERCTL_BIN"), d->dir,
             d->sock, args);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, len - 1, p) : 0;
    out[n] = '\0';
    int status = p ? pclose(p) : -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *proc_stat_after_name(pid_t pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f && len ? fread(buf, 1, len - 1, f) : 0;
    if (f)
        fclose(f);
    if (!len)
        return NULL;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* after the name, which may hold spaces */
    return p && p[1] == ' ' ? p + 2 : NULL;
}

long stats_field(const char *line, const char *field)
{
    char key[64];
    snprintf(key, sizeof key, " %s=", field);
    const char *at = strstr(line, key);
    return at ? strtol(at + strlen(key), NULL, 10) : -1;
}

long queue_stat(deferd_client *c, const char *queue, const char *field)
{
    char text[2048];
    if (deferd_stats_queue(c, queue, text, sizeof text) != DEFERD_OK)
        return -1;
    return stats_field(text, field);
}

int wait_queue_stat(deferd_client *c, const char *queue, const char *field, long want, int ms)
{
    int64_t deadline = now_ms() + ms;
    long v;
    while ((v = queue_stat(c, queue, field)) != want && now_ms() < deadline)
        usleep(20000);
    if (v != want)
        fprintf(stderr, "queue %s: %s=%ld, waited %d ms for %ld\n", queue, field, v, ms, want);
    return v == want;
}

int make_dead_letters(const struct daemon_proc *d, const char *queue, int n)
{
    deferd_client *c = client(d);
    char id[DEFERD_ID_SIZE];
    int failed = !c;
    for (int i = 0; i < n && !failed; i++)
        failed = put_job(c, queue, "to-die", 0, -1, -1, id) != 0;
    if (!failed)
        failed = deferd_subscribe(c, queue, (unsigned)n) != DEFERD_OK;
    for (int i = 0; i < n && !failed; i++) {
        deferd_job job;
        memset(&job, 0, sizeof job);
        failed = next_job_push(c, &job, 10000) != 0 || deferd_nack(c, job.id, 0) != DEFERD_OK;
        deferd_job_clear(&job);
    }
    if (c)
        deferd_close(c);
    return failed ? -1 : 0;
}

int raw_request(const struct daemon_proc *d, const char *req, int n, char *out, size_t len,
                int ms)
{
    int fd = raw_connect(d);
    out[0] = '\0';
    if (fd < 0 || write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int lines = raw_read_lines(fd, n, out, len, ms);
    close(fd);
    return lines;
}
