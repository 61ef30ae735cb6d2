/* log_target = syslog: deferd's lines, and the ZooKeeper client's from its own threads, reach
 * the syslog socket with deferd's name, its pid, the configured facility and the right
 * priorities, and no longer go to stderr.
 * glibc's syslog() writes to /dev/log and nowhere else, so deferd runs in a mount namespace
 * of its own (unshare) whose /dev/log is this test's socket: the machine's /dev/log is never
 * touched. Skipped (77) where a mount namespace cannot be made. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

static char dir[64], sock_path[100];
static char received[1 << 16];
static size_t nreceived;

/* COMMAND in a mount namespace where /dev is a small tmpfs with null, zero, random, urandom
 * from the real one and log bound to SOCKET. */
static const char wrapper[] =
    "#!/bin/sh\n"
    "sock=$1 dir=$2; shift 2\n"
    "exec unshare --mount --propagation private sh -c '\n"
    "  set -e\n"
    "  sock=$1 old=$2/olddev; shift 2\n"
    "  mkdir -p \"$old\"\n"
    "  mount --bind /dev \"$old\"\n"
    "  mount -t tmpfs -o size=64k,mode=755 tmpfs /dev\n"
    "  for n in null zero random urandom; do touch /dev/$n; mount --bind \"$old/$n\" /dev/$n; done\n"
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

/* Reads messages (one per datagram, kept one per line) until one holds both PRI and TEXT. */
static int wait_message(int fd, const char *pri, const char *text, int ms)
{
    int64_t deadline = now_ms() + ms;
    for (;;) {
        for (char *line = received; line < received + nreceived;) {
            char *end = strchr(line, '\n');
            *end = '\0';
            int hit = strncmp(line, pri, strlen(pri)) == 0 && strstr(line, text);
            *end = '\n';
            if (hit)
                return 1;
            line = end + 1;
        }
        int left = (int)(deadline - now_ms());
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, left) <= 0) {
            fprintf(stderr, "no syslog message %s...%s in %d ms\n", pri, text, ms);
            return 0;
        }
        ssize_t n = recv(fd, received + nreceived, sizeof received - nreceived - 1, 0);
        if (n > 0) {
            nreceived += (size_t)n;
            received[nreceived++] = '\n';
        }
    }
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
    if (fd < 0 || write_wrapper(cmd, sizeof cmd) != 0)
        return 1;
    setenv("DEFERD_WRAPPER", cmd, 1);
    struct daemon_proc d;
    const char *ov[] = {"daemon.log_target=syslog", "daemon.log_facility=local3", NULL};
    if (daemon_start(&d, root, "syslog", ov) != 0)
        return 1;
    /* local3 is facility 19: <19 * 8 + severity>; glibc puts "deferd[PID]: " before ours */
    snprintf(text, sizeof text, "deferd[%d]: info: deferd started", (int)d.pid);
    CHECK(wait_message(fd, "<158>", text, 10000));
    snprintf(text, sizeof text, "deferd[%d]: debug: zookeeper client: ", (int)d.pid);
    CHECK(wait_message(fd, "<159>", text, 10000));
    daemon_kill(&d, SIGTERM);
    CHECK(wait_message(fd, "<158>", "info: signal 15: shutting down", 10000));
    CHECK(log_count(&d, 0, "deferd started") == 0); /* stderr has none of it */
    close(fd);
    unlink(sock_path);
    return check_report("integration.syslog");
}
