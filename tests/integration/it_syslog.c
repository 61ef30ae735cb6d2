/* log_target = syslog: deferd's lines, and the ZooKeeper client's from its own threads, reach
 * the syslog socket with deferd's name, its pid, the configured facility and the right
 * priorities, and no longer go to stderr. With log_target = stderr on a full disk, the first
 * line lost is said once to syslog.
 * glibc's syslog() writes to /dev/log and nowhere else, so deferd runs in a mount namespace
 * of its own (unshare) whose /dev/log is this test's socket: the machine's /dev/log is never
 * touched. Skipped (77) where a mount namespace cannot be made. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

static char dir[64], sock_path[100];
/* Messages as they come, one per line: a thread drains the socket at once, since a full
 * socket would block deferd's syslog() (and with it deferd) until someone reads. */
static char received[1 << 18];
static size_t nreceived;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* COMMAND in a mount namespace where /dev is a small tmpfs with null, zero, full, random,
 * urandom from the real one and log bound to SOCKET. */
static const char wrapper[] =
    "#!/bin/sh\n"
    "sock=$1 dir=$2; shift 2\n"
    "exec unshare --mount --propagation private sh -c '\n"
    "  set -e\n"
    "  sock=$1 old=$2/olddev; shift 2\n"
    "  mkdir -p \"$old\"\n"
    "  mount --bind /dev \"$old\"\n"
    "  mount -t tmpfs -o size=64k,mode=755 tmpfs /dev\n"
    "  for n in null zero full random urandom; do touch /dev/$n; mount --bind \"$old/$n\" /dev/$n; done\n"
    "  touch /dev/log\n"
    "  mount --bind \"$sock\" /dev/log\n"
    "  umount -l \"$old\"\n"
    "  exec \"$@\"' sh \"$sock\" \"$dir\" \"$@\"\n";

static int listen_log(void)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    snprintf(sun.sun_path, sizeof sun.sun_path, "%s", sock_path);
    unlink(sock_path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0)
        return -1;
    return fd;
}

static void *drain(void *arg)
{
    int fd = *(int *)arg;
    char msg[4096];
    ssize_t n;
    while ((n = recv(fd, msg, sizeof msg, 0)) > 0) {
        pthread_mutex_lock(&lock);
        if (nreceived + (size_t)n + 2 < sizeof received) {
            memcpy(received + nreceived, msg, (size_t)n);
            nreceived += (size_t)n;
            received[nreceived++] = '\n';
            received[nreceived] = '\0';
        }
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static int count_messages(const char *pri, const char *text)
{
    int hit = 0;
    pthread_mutex_lock(&lock);
    for (char *line = received; line < received + nreceived;) {
        char *end = strchr(line, '\n');
        *end = '\0';
        hit += strncmp(line, pri, strlen(pri)) == 0 && strstr(line, text);
        *end = '\n';
        line = end + 1;
    }
    pthread_mutex_unlock(&lock);
    return hit;
}

/* Waits for a message with priority PRI ("<N>") that contains TEXT. */
static int wait_message(const char *pri, const char *text, int ms)
{
    int64_t deadline = now_ms() + ms;
    while (!count_messages(pri, text)) {
        if (now_ms() > deadline) {
            fprintf(stderr, "no syslog message %s...%s in %d ms\n", pri, text, ms);
            return 0;
        }
        usleep(20000);
    }
    return 1;
}

static int write_wrapper(char *cmd, size_t len)
{
    char path[400];
    snprintf(path, sizeof path, "%s/ns.sh", dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs(wrapper, f) < 0 || fclose(f) != 0)
        return -1;
    snprintf(cmd, len, "sh %s %s %s", path, sock_path, dir);
    return 0;
}

/* log_target = stderr, and stderr /dev/full (inside the namespace, after NS_CMD): every line
 * is lost, the first loss is reported to syslog at warning, once. */
static void stderr_on_full_disk(const char *root, const char *ns_cmd)
{
    char path[400], wrap[1700], text[160];
    struct daemon_proc d;
    snprintf(path, sizeof path, "%s/full.sh", dir);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs("exec \"$@\" 2>/dev/full\n", f) >= 0 && fclose(f) == 0);
    snprintf(wrap, sizeof wrap, "%s sh %s", ns_cmd, path);
    setenv("DEFERD_WRAPPER", wrap, 1);
    const char *ov[] = {"daemon.log_facility=local3", NULL};
    if (daemon_start(&d, root, "full", ov) != 0) {
        CHECK(!"deferd with stderr on /dev/full");
        return;
    }
    snprintf(text, sizeof text, "deferd[%d]: cannot write log lines to stderr (No space left "
             "on device); dropping them", (int)d.pid);
    CHECK(wait_message("<156>", text, 10000)); /* local3, warning */
    daemon_kill(&d, SIGTERM);
    CHECK(count_messages("<15", "cannot write log lines") == 1);
}

int main(void)
{
    char root[128], cmd[1200], text[128];
    harness_init("syslog", root, sizeof root);
    if (system("unshare --mount --propagation private sh -c "
               "'mount -t tmpfs tmpfs /mnt' >/dev/null 2>&1") != 0) {
        fprintf(stderr, "it_syslog: cannot make a mount namespace here; skipped\n");
        return 77;
    }
    snprintf(dir, sizeof dir, "/tmp/deferd-it-%d-syslog", (int)getpid());
    snprintf(sock_path, sizeof sock_path, "%s/log.sock", dir);
    mkdir(dir, 0755);
    int fd = listen_log();
    CHECK(fd >= 0);
    pthread_t reader;
    if (fd < 0 || write_wrapper(cmd, sizeof cmd) != 0 ||
        pthread_create(&reader, NULL, drain, &fd) != 0)
        return 1;
    setenv("DEFERD_WRAPPER", cmd, 1);
    struct daemon_proc d;
    const char *ov[] = {"daemon.log_target=syslog", "daemon.log_facility=local3", NULL};
    if (daemon_start(&d, root, "syslog", ov) != 0)
        return 1;
    /* local3 is facility 19: <19 * 8 + severity>; glibc puts "deferd[PID]: " before ours */
    snprintf(text, sizeof text, "deferd[%d]: info: deferd started", (int)d.pid);
    CHECK(wait_message("<158>", text, 10000));
    snprintf(text, sizeof text, "deferd[%d]: debug: zookeeper client: ", (int)d.pid);
    CHECK(wait_message("<159>", text, 10000));
    daemon_kill(&d, SIGTERM);
    CHECK(wait_message("<158>", "info: signal 15: draining", 10000));
    CHECK(log_count(&d, 0, "deferd started") == 0); /* stderr has none of it */
    stderr_on_full_disk(root, cmd);
    shutdown(fd, SHUT_RDWR); /* ends the reader's recv() */
    pthread_join(reader, NULL);
    close(fd);
    unlink(sock_path);
    return check_report("integration.syslog");
}
