/* Service manager notifications, as systemd would see them: the test binds the datagram
 * socket systemd would, passes it in NOTIFY_SOCKET, and reads what deferd sends. READY=1
 * only once deferd serves (its socket answers and puts reach ZooKeeper), WATCHDOG=1 at half
 * of WATCHDOG_USEC, STOPPING=1 on SIGTERM; no READY=1 while ZooKeeper cannot be reached. */
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

static char root[128];

static int bind_notify(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        perror("notify socket");
        exit(1);
    }
    return fd;
}

/* One datagram within MS: its length, or -1. */
static int recv_within(int fd, char *buf, size_t len, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) != 1)
        return -1;
    ssize_t n = recv(fd, buf, len - 1, 0);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

/* Does the newline-separated message hold exactly this assignment? */
static int has_line(const char *msg, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = msg;; p++) {
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
            return 1;
        if (!(p = strchr(p, '\n')))
            return 0;
    }
}

/* Reads until a message holds LINE or MS pass; counts WATCHDOG=1 seen meanwhile. The
 * message with LINE is left in BUF. Returns 0 when LINE came. */
static int wait_line(int fd, const char *line, int ms, char *buf, size_t len, int *watchdogs)
{
    int64_t deadline = now_ms() + ms;
    for (int64_t left = ms; left > 0; left = deadline - now_ms()) {
        if (recv_within(fd, buf, len, (int)left) < 0)
            return -1;
        if (watchdogs && has_line(buf, "WATCHDOG=1"))
            (*watchdogs)++;
        if (has_line(buf, line))
            return 0;
    }
    return -1;
}

/* READY=1 must mean "serving": the socket answers and a put is stored without retries. */
static void ready_watchdog_stopping(int fd)
{
    struct daemon_proc d;
    char msg[512];
    setenv("WATCHDOG_USEC", "200000", 1);
    CHECK(daemon_spawn(&d, root, "ready", NULL) == 0);
    CHECK(wait_line(fd, "READY=1", 30000, msg, sizeof msg, NULL) == 0);
    CHECK_CONTAINS(msg, "STATUS=connected to ZooKeeper");
    deferd_client *c = deferd_connect(d.sock, NULL, 0);
    CHECK(c != NULL);
    if (c) {
        CHECK(deferd_ping(c) == DEFERD_OK);
        char id[DEFERD_ID_SIZE];
        CHECK(deferd_put(c, "a", "x", 1, NULL, id, sizeof id) == DEFERD_OK);
        deferd_close(c);
    }

    /* A ping every 100 ms: 1.5 s gives about 15; a loaded machine still gives several. */
    int watchdogs = 0;
    wait_line(fd, "never", 1500, msg, sizeof msg, &watchdogs);
    fprintf(stderr, "it_notify: %d WATCHDOG=1 in 1.5 s\n", watchdogs);
    CHECK(watchdogs >= 4);

    daemon_kill(&d, SIGTERM); /* the harness checks exit status 0 */
    CHECK(wait_line(fd, "STOPPING=1", 5000, msg, sizeof msg, NULL) == 0);
    unsetenv("WATCHDOG_USEC");
}

/* A TCP port bound but not listening: connections to it are refused. */
static int refusing_port(int *fd)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    if (*fd < 0 || bind(*fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(*fd, (struct sockaddr *)&sa, &len) != 0) {
        perror("refusing port");
        exit(1);
    }
    return ntohs(sa.sin_port);
}

static void no_ready_without_zookeeper(int fd)
{
    int tcp;
    char hosts[64], msg[512];
    snprintf(hosts, sizeof hosts, "zookeeper.hosts=127.0.0.1:%d", refusing_port(&tcp));
    const char *const overrides[] = {hosts, NULL};
    struct daemon_proc d;
    /* Once it listens, so that what follows is about ZooKeeper, not a slow start. */
    CHECK(daemon_start(&d, root, "nozk", overrides) == 0);
    CHECK(wait_line(fd, "READY=1", 2500, msg, sizeof msg, NULL) != 0);
    daemon_kill(&d, SIGTERM);
    CHECK(wait_line(fd, "STOPPING=1", 5000, msg, sizeof msg, NULL) == 0);
    close(tcp);
}

int main(void)
{
    harness_init("notify", root, sizeof root);
    char path[108];
    snprintf(path, sizeof path, "/tmp/deferd-it-%d-notify.sock", (int)getpid());
    int fd = bind_notify(path);
    setenv("NOTIFY_SOCKET", path, 1);
    ready_watchdog_stopping(fd);
    no_ready_without_zookeeper(fd);
    close(fd);
    unlink(path);
    return check_report("it_notify");
}
