/* Starting and stopping around the socket path, the config file and stderr (issue 9):
 *  - every refusal is one clear line and a plain exit status: no crash, and no leak (in a
 *    sanitizer build, no report in the log);
 *  - a socket path in a missing directory names the directory; one too long for sun_path is
 *    refused by the config check, the longest that fits works;
 *  - a stale socket file is removed, a live socket (even one too busy to accept) is left to
 *    its owner, a file that is not a socket is left alone; SIGTERM removes the socket;
 *  - a read-only config owned by someone else loads and reloads; an unreadable one, or a
 *    directory, is refused with the reason;
 *  - stderr on a full disk (/dev/full) or on a pipe whose reader left costs only the lines:
 *    deferd serves on, does not spin, counts them in deferd_log_dropped_total.
 * The config cases run deferd as nobody, so they need root (skipped otherwise). nobody runs
 * a copy of deferd in a directory of the test's own under /tmp (mode 0755): the build tree
 * may lie below a directory nobody cannot search (a clone in /root, or in a mktemp -d), and
 * those cases must not depend on where the clone is (issue 17). If even the copy cannot run
 * as nobody, they are skipped with the reason. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "httpget.h"

#define NOBODY 65534
#define NOGROUP 65534

static char root[128];
/* deferd as nobody runs it: a copy of DEFERD_BIN that nobody can reach (nobody_deferd()). */
static char nobody_bin[128];

static const char *config_of(const struct daemon_proc *d)
{
    static char path[320];
    snprintf(path, sizeof path, "%s/deferd.ini", d->dir);
    return path;
}

static int log_fd(const struct daemon_proc *d)
{
    return open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* deferd -c CONFIG ARGS..., as nobody when AS_NOBODY, stdout and stderr on OUTFD (closed
 * here); its pid. */
static pid_t run(const char *config, int as_nobody, int outfd, const char *const *args)
{
    const char *argv[16] = {as_nobody ? nobody_bin : getenv("DEFERD_BIN"), "-c", config};
    for (int i = 0; args[i] && i < 12; i++)
        argv[i + 3] = args[i];
    pid_t pid = fork();
    if (pid == 0) {
        dup2(outfd, 1);
        dup2(outfd, 2);
        signal(SIGPIPE, SIG_DFL); /* as a shell or systemd starts it, not as we ignore it */
        if (as_nobody &&
            (setgroups(0, NULL) != 0 || setgid(NOGROUP) != 0 || setuid(NOBODY) != 0))
            _exit(126);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(outfd);
    return pid;
}

/* Its exit status within 20 s; -1 for a signal (a crash) or no exit (it is killed then). */
static int exit_of(pid_t pid)
{
    if (pid <= 0)
        return -1; /* no fork: waitpid(-1) and kill(-1) would reach far beyond it */
    struct daemon_proc p = {.pid = pid};
    int status = daemon_wait_exit(&p, 20000);
    if (p.pid > 0) {
        fprintf(stderr, "deferd %d did not exit within 20 s\n", (int)pid);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    return status;
}

/* deferd -c CONFIG ARGS as run(), output to D's log, to its end: its exit status. A leak
 * found by LeakSanitizer leaves a failing status as it is, so its report is looked for. */
static int run_logged(const struct daemon_proc *d, const char *config, int as_nobody,
                      const char *const *args)
{
    long mark = log_mark(d);
    int status = exit_of(run(config, as_nobody, log_fd(d), args));
    CHECK(log_count(d, mark, "Sanitizer") == 0);
    return status;
}

/* D's deferd with ARGS (as nobody when AS_NOBODY) refuses to start: exit status 1 and one
 * error line, the one that contains MSG. */
static void refused(const struct daemon_proc *d, int as_nobody, const char *const *args,
                    const char *msg)
{
    CHECK(run_logged(d, config_of(d), as_nobody, args) == 1);
    CHECK(log_count(d, 0, msg) == 1);
    CHECK(log_count(d, 0, " error: ") == 1); /* that line and no other */
}

/* The socket at D's path still answers: deferd took nothing over. */
static void still_answers(const struct daemon_proc *d)
{
    int c = raw_connect(d);
    CHECK(c >= 0);
    if (c >= 0)
        close(c);
}

/* D's deferd, answering PING. */
static int start(struct daemon_proc *d, int as_nobody, int outfd, const char *const *args)
{
    d->pid = run(config_of(d), as_nobody, outfd, args);
    return d->pid > 0 ? daemon_wait_ready(d) : -1;
}

static struct sockaddr_un unix_address(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    memcpy(sun.sun_path, path, n < sizeof sun.sun_path ? n : sizeof sun.sun_path - 1);
    return sun;
}

/* A Unix socket bound at PATH, listening with BACKLOG unless it is negative. */
static int bound_socket(const char *path, int backlog)
{
    struct sockaddr_un sun = unix_address(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0 ||
        (backlog >= 0 && listen(fd, backlog) != 0))
        perror("bound_socket");
    return fd;
}

static void socket_in_missing_directory(void)
{
    struct daemon_proc d;
    char sock[300], opt[320], msg[700];
    CHECK(daemon_prepare(&d, root, "nodir") == 0);
    snprintf(sock, sizeof sock, "%s/missing/deferd.sock", d.dir);
    snprintf(opt, sizeof opt, "daemon.socket=%s", sock);
    snprintf(msg, sizeof msg, "error: cannot listen on %s: directory %s/missing does not exist; "
             "create it first (under systemd: RuntimeDirectory= in the unit)", sock, d.dir);
    refused(&d, 0, (const char *[]){"-o", opt, NULL}, msg);
}

/* sun_path holds 108 bytes with the NUL: a 108-byte path is refused before anything starts,
 * a 107-byte one is served (and removed at SIGTERM). */
static void socket_path_length(void)
{
    struct daemon_proc d;
    char opt[400] = "daemon.socket=";
    size_t n = strlen(opt);
    CHECK(daemon_prepare(&d, root, "long") == 0);
    snprintf(opt + n, sizeof opt - n, "%s/", d.dir);
    memset(opt + strlen(opt), 'x', 108 - (strlen(opt) - n));
    opt[n + 108] = '\0';
    CHECK(run_logged(&d, config_of(&d), 0, (const char *[]){"--check-config", "-o", opt, NULL})
          == 2);
    CHECK(log_count(&d, 0, "'socket': path of 108 bytes is longer than the 107 a Unix socket "
                           "address holds") == 1);
    opt[n + 107] = '\0';
    snprintf(d.sock, sizeof d.sock, "%s", opt + n);
    CHECK(start(&d, 0, log_fd(&d), (const char *[]){"-o", opt, NULL}) == 0);
    daemon_kill(&d, SIGTERM);
    CHECK(access(d.sock, F_OK) != 0 && errno == ENOENT);
}

/* What a crashed daemon leaves: a socket file nobody listens on. */
static void stale_socket(void)
{
    struct daemon_proc d;
    char msg[400];
    CHECK(daemon_prepare(&d, root, "stale") == 0);
    int fd = bound_socket(d.sock, -1);
    close(fd);
    CHECK(start(&d, 0, log_fd(&d), (const char *[]){NULL}) == 0);
    snprintf(msg, sizeof msg, "info: removed stale socket %s (nobody was listening on it)",
             d.sock);
    CHECK(log_count(&d, 0, msg) == 1);
    daemon_kill(&d, SIGTERM);
    CHECK(access(d.sock, F_OK) != 0 && errno == ENOENT); /* removed at shutdown */
}

/* Another process's socket, listening with BACKLOG connections already waiting: deferd
 * refuses to start and leaves the socket to it. A full backlog must not hang deferd. */
static void live_socket(int backlog)
{
    struct daemon_proc d;
    char msg[400];
    CHECK(daemon_prepare(&d, root, backlog ? "live" : "busy") == 0);
    int fd = bound_socket(d.sock, backlog);
    int waiting = backlog ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_un sun = unix_address(d.sock);
    CHECK(backlog || connect(waiting, (struct sockaddr *)&sun, sizeof sun) == 0);
    snprintf(msg, sizeof msg, "error: another process is listening on %s (another deferd?); "
             "not taking it over", d.sock);
    refused(&d, 0, (const char *[]){NULL}, msg);
    if (waiting >= 0) { /* make room: a blocking connect would wait for it */
        close(waiting);
        close(accept(fd, NULL, NULL));
    }
    still_answers(&d);
    close(fd);
}

/* Root's live socket, mode 0600, in a directory of nobody's: deferd as nobody could remove
 * it but cannot connect (EACCES), which proves nothing about it being stale, so it stays. */
static void unreachable_socket(void)
{
    struct daemon_proc d;
    char msg[400];
    CHECK(daemon_prepare(&d, root, "foreign") == 0);
    CHECK(chown(d.dir, NOBODY, NOGROUP) == 0);
    int fd = bound_socket(d.sock, 8);
    CHECK(chmod(d.sock, 0600) == 0);
    snprintf(msg, sizeof msg, "error: cannot tell whether socket %s is in use (connect: "
             "Permission denied); not removing it", d.sock);
    refused(&d, 1, (const char *[]){NULL}, msg);
    still_answers(&d);
    close(fd);
}

static void not_a_socket(void)
{
    struct daemon_proc d;
    char msg[400], back[32] = "";
    CHECK(daemon_prepare(&d, root, "file") == 0);
    FILE *f = fopen(d.sock, "w");
    CHECK(f && fputs("keep me\n", f) >= 0 && fclose(f) == 0);
    snprintf(msg, sizeof msg, "error: socket path %s exists and is not a socket; not touching it",
             d.sock);
    refused(&d, 0, (const char *[]){NULL}, msg);
    f = fopen(d.sock, "r");
    CHECK(f && fgets(back, sizeof back, f) && strcmp(back, "keep me\n") == 0);
    if (f)
        fclose(f);
}

/* Mode 0444, owned by root, deferd as nobody: it loads, serves and reloads; made 0600, a
 * reload is refused and deferd runs on, and a new start is refused. */
static void config_permissions(void)
{
    struct daemon_proc d;
    char msg[600];
    CHECK(daemon_prepare(&d, root, "roconfig") == 0);
    CHECK(chown(d.dir, NOBODY, NOGROUP) == 0); /* where nobody makes its socket */
    CHECK(chmod(config_of(&d), 0444) == 0);
    CHECK(run_logged(&d, config_of(&d), 1, (const char *[]){"--check-config", NULL}) == 0);
    if (start(&d, 1, log_fd(&d), (const char *[]){NULL}) != 0) {
        CHECK(!"deferd as nobody with a read-only config");
        return; /* no pid to signal: kill(0, ...) would hit our process group */
    }
    struct stat st;
    CHECK(stat(d.sock, &st) == 0 && st.st_uid == NOBODY); /* it is nobody's deferd */
    long mark = log_mark(&d);
    kill(d.pid, SIGHUP);
    snprintf(msg, sizeof msg, "info: reload: %s applied", config_of(&d));
    CHECK(log_wait(&d, mark, msg, 10000));

    CHECK(chmod(config_of(&d), 0600) == 0);
    mark = log_mark(&d);
    kill(d.pid, SIGHUP);
    snprintf(msg, sizeof msg, "error: reload refused: %s: cannot open: Permission denied; "
             "running on with the previous configuration", config_of(&d));
    CHECK(log_wait(&d, mark, msg, 10000));
    deferd_client *c = client(&d);
    CHECK(deferd_ping(c) == DEFERD_OK);
    deferd_close(c);
    daemon_kill(&d, SIGTERM);

    snprintf(msg, sizeof msg, "deferd: %s: cannot open: Permission denied", config_of(&d));
    for (int check_only = 0; check_only < 2; check_only++) {
        mark = log_mark(&d);
        const char *args[] = {check_only ? "--check-config" : NULL, NULL};
        CHECK(run_logged(&d, config_of(&d), 1, args) == 2);
        CHECK(log_count(&d, mark, msg) == 1);
    }
}

static void config_is_a_directory(void)
{
    struct daemon_proc d;
    char msg[400];
    CHECK(daemon_prepare(&d, root, "dirconfig") == 0);
    CHECK(run_logged(&d, d.dir, 0, (const char *[]){"--check-config", NULL}) == 2);
    snprintf(msg, sizeof msg, "deferd: %s: cannot read: Is a directory", d.dir);
    CHECK(log_count(&d, 0, msg) == 1);
}

/* A connect string zookeeper_init would refuse is a config error (issue 17): exit 2 with
 * file:line, at --check-config and at start alike, not exit 1 once the handle fails. */
static void bad_connect_string(void)
{
    struct daemon_proc d;
    char config[400], msg[600];
    CHECK(daemon_prepare(&d, root, "badhosts") == 0);
    snprintf(config, sizeof config, "%s/bad.ini", d.dir);
    FILE *f = fopen(config, "w");
    CHECK(f && fprintf(f, "[daemon]\nsocket = %s\n[zookeeper]\nhosts = not a host list!!\n"
                          "[queue a]\n", d.sock) > 0);
    if (f)
        fclose(f);
    snprintf(msg, sizeof msg, "deferd: %s:4: 'hosts': 'not a host list!!': no :PORT", config);
    CHECK(run_logged(&d, config, 0, (const char *[]){"--check-config", NULL}) == 2);
    CHECK(run_logged(&d, config, 0, (const char *[]){NULL}) == 2);
    CHECK(log_count(&d, 0, msg) == 2);
    CHECK(log_count(&d, 0, "cannot create a handle") == 0);
}

/* getopt's complaints start "deferd:" like every other message, not with the binary's
 * path; usage follows, exit 2. */
static void bad_options(void)
{
    struct daemon_proc d;
    CHECK(daemon_prepare(&d, root, "badopt") == 0);
    CHECK(run_logged(&d, config_of(&d), 0, (const char *[]){"-x", NULL}) == 2);
    CHECK(run_logged(&d, config_of(&d), 0, (const char *[]){"--bogus", NULL}) == 2);
    CHECK(run_logged(&d, config_of(&d), 0, (const char *[]){"-o", NULL}) == 2);
    CHECK(log_count(&d, 0, "deferd: invalid option -- 'x'\n") == 1);
    CHECK(log_count(&d, 0, "deferd: unrecognized option '--bogus'\n") == 1);
    CHECK(log_count(&d, 0, "deferd: option requires an argument -- 'o'\n") == 1);
    CHECK(log_count(&d, 0, "/deferd: ") == 0);
    CHECK(log_count(&d, 0, "usage: deferd") == 3);
}

/* deferd_log_dropped_total from PORT's /metrics; -1 if it is not there. */
static long long dropped_lines(int port)
{
    static const char name[] = "\ndeferd_log_dropped_total ";
    char *body = NULL;
    long long n = -1;
    if (http_request(port, "GET", "/metrics", 10000, &body, NULL, 0) == 200 &&
        strstr(body, name))
        n = atoll(strstr(body, name) + strlen(name));
    free(body);
    return n;
}

/* User plus system CPU time of PID so far, in clock ticks; -1 if unreadable. */
static long cpu_ticks(pid_t pid)
{
    char buf[1024];
    unsigned long user, sys;
    const char *p = proc_stat_after_name(pid, buf, sizeof buf);
    if (!p || sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &user,
                     &sys) != 2)
        return -1;
    return (long)(user + sys);
}

/* CPU time PID uses in a second while it is idle, in ms. A logger that retried failing
 * writes would keep a core busy; the second is a measurement window, not a wait for
 * something to happen. */
static long idle_cpu_ms(pid_t pid)
{
    long before = cpu_ticks(pid);
    usleep(1000000);
    long after = cpu_ticks(pid);
    return before < 0 || after < 0 ? -1 : (after - before) * 1000 / sysconf(_SC_CLK_TCK);
}

/* stderr on OUTFD, which takes no line: deferd serves as ever (a put, its delivery and ack,
 * PING, /metrics), stays idle when idle, counts the lines it lost and stops cleanly. The
 * harness's config has log_level = debug: lines are lost all the time. */
static void serves_without_stderr(const char *tag, int outfd)
{
    struct daemon_proc d;
    char listen[64], id[DEFERD_ID_SIZE];
    deferd_job job = {0};
    int port = free_tcp_port();
    snprintf(listen, sizeof listen, "metrics.listen=127.0.0.1:%d", port);
    CHECK(daemon_prepare(&d, root, tag) == 0);
    if (start(&d, 0, outfd, (const char *[]){"-o", listen, NULL}) != 0) {
        CHECK(!"deferd serving with a failing stderr");
        return;
    }
    deferd_client *p = client(&d), *c = client(&d);
    CHECK(put_job(p, "a", "hello", -1, -1, -1, id) == 0);
    CHECK(deferd_subscribe(c, "a", 1) == DEFERD_OK);
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK && strcmp(job.id, id) == 0);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(deferd_ping(p) == DEFERD_OK);
    CHECK(dropped_lines(port) > 0);
    long cpu = idle_cpu_ms(d.pid);
    CHECK(cpu >= 0 && cpu < 300);
    deferd_close(p);
    deferd_close(c);
    daemon_kill(&d, SIGTERM);
}

static void failing_stderr(void)
{
    serves_without_stderr("devfull", open("/dev/full", O_WRONLY | O_CLOEXEC));
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    close(pipefd[0]); /* the reader left: writes fail with EPIPE, and SIGPIPE */
    serves_without_stderr("epipe", pipefd[1]);
    /* Before the logger exists too: the complaint about the config is lost, the status not. */
    CHECK(pipe(pipefd) == 0);
    close(pipefd[0]);
    CHECK(exit_of(run("/nonexistent/deferd.ini", 0, pipefd[1], (const char *[]){NULL})) == 2);
}

/* A copy of DEFERD_BIN, mode 0755, in a new directory under /tmp (mode 0755) for the runs
 * as nobody; its path in nobody_bin, and 0 once nobody has run it (--version). Else -1 and
 * WHY says what stops it. */
static int nobody_deferd(char *why, size_t len)
{
    const char *bin = getenv("DEFERD_BIN");
    char dir[] = "/tmp/deferd-it-bin-XXXXXX", buf[65536];
    if (!mkdtemp(dir) || chmod(dir, 0755) != 0) {
        snprintf(why, len, "cannot make a directory for it under /tmp: %s", strerror(errno));
        return -1;
    }
    snprintf(nobody_bin, sizeof nobody_bin, "%s/deferd", dir);
    int in = open(bin, O_RDONLY | O_CLOEXEC);
    int out = open(nobody_bin, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    ssize_t n = 0;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n) {
            n = -1;
            break;
        }
    int copied = in >= 0 && out >= 0 && n == 0 && fchmod(out, 0755) == 0;
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0)
        copied = 0;
    if (!copied) {
        snprintf(why, len, "cannot copy %s to %s: %s", bin, nobody_bin, strerror(errno));
        return -1;
    }
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int status = exit_of(run("/dev/null", 1, devnull, (const char *[]){"--version", NULL}));
    if (status != 0) {
        snprintf(why, len, "%s as nobody: --version exit status %d (126: cannot drop to "
                 "nobody, 127: cannot exec it, e.g. a library nobody cannot read)",
                 nobody_bin, status);
        return -1;
    }
    return 0;
}

static void nobody_deferd_remove(void)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s", nobody_bin);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    unlink(nobody_bin);
    *slash = '\0';
    rmdir(dir);
}

int main(void)
{
    harness_init("startup", root, sizeof root);
    socket_in_missing_directory();
    socket_path_length();
    stale_socket();
    live_socket(8);
    live_socket(0);
    not_a_socket();
    config_is_a_directory();
    bad_connect_string();
    bad_options();
    char why[512];
    if (geteuid() == 0 && nobody_deferd(why, sizeof why) == 0) {
        unreachable_socket();
        config_permissions();
    } else if (geteuid() == 0) {
        fprintf(stderr, "it_startup: SKIPPED the socket and config permission checks: deferd "
                        "cannot run as nobody: %s\n", why);
    } else {
        fprintf(stderr, "it_startup: not root: deferd cannot be run as nobody; the socket "
                        "and config permission checks are skipped\n");
    }
    failing_stderr();
    if (nobody_bin[0])
        nobody_deferd_remove();
    return check_report("integration.startup");
}
