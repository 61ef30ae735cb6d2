/* Configurable limits: max_connections (the one over is told why and closed), max_line,
 * max_inflight, requests_per_turn (a client pipelining many requests is answered in full
 * while another client's request still gets through), max_open_puts (puts beyond it wait
 * in a line of connections: another client's put is answered in its turn). */
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static char root[128];
static struct daemon_proc d;

/* Reads one line (up to LEN - 1 bytes) within MS; its length, or -1 (EOF or deadline). */
static int read_line(int fd, char *buf, size_t len, int ms)
{
    size_t n = 0;
    int64_t deadline = now_ms() + ms;
    while (n + 1 < len) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - now_ms());
        if (left <= 0 || poll(&pf, 1, left) <= 0 || read(fd, buf + n, 1) != 1)
            return -1;
        if (buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
    return (int)n;
}

static int send_str(int fd, const char *s)
{
    size_t n = strlen(s);
    return write(fd, s, n) == (ssize_t)n ? 0 : -1;
}

static void connections(void)
{
    int fds[3];
    char line[256];
    for (int i = 0; i < 3; i++) {
        fds[i] = raw_connect(&d);
        CHECK(fds[i] >= 0 && send_str(fds[i], "PING\n") == 0);
        CHECK(read_line(fds[i], line, sizeof line, 5000) > 0 && strcmp(line, "OK PONG") == 0);
    }
    long mark = log_mark(&d);
    int extra = raw_connect(&d);
    CHECK(extra >= 0);
    CHECK(read_line(extra, line, sizeof line, 5000) > 0);
    CHECK_CONTAINS(line, "ERR UNAVAILABLE stored=no reason=max_connections too many connections");
    CHECK(read_line(extra, line, sizeof line, 5000) < 0); /* then closed */
    close(extra);
    CHECK(log_wait(&d, mark, "refusing connections: 3 open, max_connections 3", 5000));
    close(fds[0]); /* room again, once deferd saw the close */
    int again = -1, ok = 0;
    for (int64_t end = now_ms() + 5000; !ok && now_ms() < end;) {
        again = raw_connect(&d);
        ok = again >= 0 && send_str(again, "PING\n") == 0 &&
             read_line(again, line, sizeof line, 2000) > 0 && strcmp(line, "OK PONG") == 0;
        if (!ok && again >= 0)
            close(again);
    }
    CHECK(ok);
    close(again);
    close(fds[1]);
    close(fds[2]);
}

static void lines_and_inflight(void)
{
    char line[512], req[400];
    int fd = -1;
    for (int64_t end = now_ms() + 5000; fd < 0 && now_ms() < end;)
        if ((fd = raw_connect(&d)) >= 0 && (send_str(fd, "PING\n") != 0 ||
                                          read_line(fd, line, sizeof line, 2000) <= 0 ||
                                          strcmp(line, "OK PONG") != 0)) {
            close(fd); /* refused while the earlier connections were still counted */
            fd = -1;
        }
    CHECK(fd >= 0);
    memset(req, 'Z', 300); /* exactly max_line: a (bad) command, not too long */
    memcpy(req + 300, "\n", 2);
    CHECK(send_str(fd, req) == 0 && read_line(fd, line, sizeof line, 5000) > 0);
    CHECK_CONTAINS(line, "unknown command");
    memset(req, 'Z', 301);
    memcpy(req + 301, "\n", 2);
    CHECK(send_str(fd, req) == 0 && read_line(fd, line, sizeof line, 5000) > 0);
    CHECK_CONTAINS(line, "line longer than 300 bytes");
    CHECK(send_str(fd, "SUB a inflight=6\n") == 0 && read_line(fd, line, sizeof line, 5000) > 0);
    CHECK_CONTAINS(line, "max_inflight 5");
    CHECK(send_str(fd, "SUB a inflight=5\nPING\n") == 0);
    CHECK(read_line(fd, line, sizeof line, 5000) > 0 && strcmp(line, "OK") == 0);
    CHECK(read_line(fd, line, sizeof line, 5000) > 0 && strcmp(line, "OK PONG") == 0);
    close(fd);
}

/* 2000 pipelined PINGs on one connection (2 per loop turn) and one PING on another: the
 * other is answered while the burst is still being worked off, and the burst in full. */
static void fairness(void)
{
    enum { BURST = 2000 };
    static char burst[BURST * 5 + 1];
    char line[64];
    for (int i = 0; i < BURST; i++)
        memcpy(burst + 5 * i, "PING\n", 5);
    int busy = raw_connect(&d), other = raw_connect(&d);
    CHECK(busy >= 0 && other >= 0);
    CHECK(write(busy, burst, BURST * 5) == BURST * 5);
    CHECK(send_str(other, "PING\n") == 0);
    CHECK(read_line(other, line, sizeof line, 5000) > 0 && strcmp(line, "OK PONG") == 0);
    int answered = 0;
    while (answered < BURST && read_line(busy, line, sizeof line, 10000) > 0 &&
           strcmp(line, "OK PONG") == 0)
        answered++;
    printf("burst of %d PINGs: %d answered\n", BURST, answered);
    CHECK(answered == BURST);
    close(busy);
    close(other);
}

/* max_open_puts=1: one client pipelines PUTS puts, another sends one put after them. The
 * second is answered in its turn, after a few of the first's, not after all of them (with
 * no line it would share a multi with the first's first requests_per_turn); then every put
 * of the first is answered, in order, and the wait was logged. */
static void put_line(void)
{
    enum { PUTS = 200 };
    static char burst[PUTS * 16];
    char line[160], stats[2048];
    size_t n = 0;
    long mark = log_mark(&d);
    for (int i = 0; i < PUTS; i++)
        n += (size_t)snprintf(burst + n, sizeof burst - n, "PUT a 4\nj%03d\n", i);
    deferd_client *c = client(&d);
    CHECK(daemon_wait_connected(&d, 10000) == 0);
    int busy = raw_connect(&d), other = raw_connect(&d);
    CHECK(busy >= 0 && other >= 0);
    CHECK(write(busy, burst, n) == (ssize_t)n);
    CHECK(send_str(other, "PUT b 1\nx\n") == 0);
    int got = read_line(other, line, sizeof line, 10000);
    if (got < 0 || strncmp(line, "OK b/", 5) != 0)
        fprintf(stderr, "the other put got: %s\n", got < 0 ? "nothing" : line);
    CHECK(got > 0 && strncmp(line, "OK b/", 5) == 0);
    CHECK(deferd_stats_queue(c, "a", stats, sizeof stats) == DEFERD_OK);
    const char *put = strstr(stats, " put=");
    long stored = put ? strtol(put + 5, NULL, 10) : -1;
    printf("the other client's put answered when %ld of %d were stored\n", stored, PUTS);
    CHECK(stored >= 0 && stored < 20);
    /* While the rest goes one at a time, STATS shows the line (until all 200 are stored). */
    int seen = 0;
    for (int64_t end = now_ms() + 10000; !seen && now_ms() < end;) {
        CHECK(deferd_stats(c, stats, sizeof stats) == DEFERD_OK);
        const char *w = strstr(stats, " puts_open=1 puts_waiting=");
        seen = w && strtol(w + 26, NULL, 10) == 1;
        CHECK(deferd_stats_queue(c, "a", stats, sizeof stats) == DEFERD_OK);
        if (strstr(stats, " put=200 "))
            break;
    }
    CHECK(seen);
    int answered = 0;
    while (answered < PUTS && read_line(busy, line, sizeof line, 20000) > 0 &&
           strncmp(line, "OK a/", 5) == 0)
        answered++;
    CHECK(answered == PUTS);
    CHECK(log_count(&d, mark, "puts wait their turn") == 1);
    deferd_close(c);
    close(busy);
    close(other);
}

int main(void)
{
    harness_init("limits", root, sizeof root);
    const char *o[] = {"daemon.max_connections=3", "daemon.max_line=300",
                       "daemon.max_inflight=5", "daemon.requests_per_turn=2", NULL};
    /* daemon_start's own readiness probe uses a connection, closed before it returns */
    CHECK(daemon_start(&d, root, "limits", o) == 0);
    connections();
    lines_and_inflight();
    fairness();
    daemon_kill(&d, SIGTERM);
    const char *line[] = {"daemon.max_open_puts=1", NULL};
    CHECK(daemon_start(&d, root, "limits-puts", line) == 0);
    put_line();
    daemon_kill(&d, SIGTERM);
    const char *bad[] = {"daemon.max_line=100", NULL};
    CHECK(daemon_spawn(&d, root, "limits-bad", bad) == 0);
    CHECK(daemon_wait_exit(&d, 10000) > 0);
    CHECK(log_wait(&d, 0, "'max_line': '100' is not a number from 256 to 8192", 1000));
    return check_report("it_limits");
}
