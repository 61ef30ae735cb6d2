/* Malformed requests get error replies in order on a connection that stays usable, while
 * a well-behaved producer and consumer keep working. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];

static int connected(void)
{
    int fd = raw_connect(&d);
    CHECK(fd >= 0);
    return fd;
}

static void send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n > 0);
        if (n <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

/* Reads one reply line with a deadline. */
static void read_line(int fd, char *buf, size_t len)
{
    size_t n = 0;
    int64_t deadline = now_ms() + 10000;
    while (n + 1 < len) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(deadline - now_ms())) <= 0)
            break;
        if (read(fd, buf + n, 1) != 1)
            break;
        if (buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
}

static void expect(int fd, const char *prefix)
{
    char line[512];
    read_line(fd, line, sizeof line);
    CHECK(strncmp(line, prefix, strlen(prefix)) == 0);
    if (strncmp(line, prefix, strlen(prefix)) != 0)
        fprintf(stderr, "  expected '%s...', got '%s'\n", prefix, line);
}

static pid_t zk_pid(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/zk.pid", getenv("DEFERD_TEST_ZKDIR"));
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f && fscanf(f, "%d", &pid) != 1)
        pid = 0;
    if (f)
        fclose(f);
    return (pid_t)pid;
}

/* With ZooKeeper frozen, 1100 puts in one write leave more replies pending than the
 * daemon's per-connection limit: it stops decoding with requests already buffered, and
 * must resume on them once replies drain (no new bytes will arrive to wake it). */
static void pipelined_puts(void)
{
    enum { N = 1100 };
    static char buf[N * 32];
    size_t len = 0;
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "PUT a 1 delay=60000\nx\n");
    int fd = connected();
    pid_t zk = zk_pid();
    CHECK(zk > 0 && kill(zk, SIGSTOP) == 0);
    send_all(fd, buf, len);
    /* Give deferd time to read everything while ZooKeeper cannot answer; shorter than
     * the 4 s session timeout. If it read less, the test passes without the edge case. */
    usleep(700000);
    kill(zk, SIGCONT);
    int ok = 0;
    for (int i = 0; i < N; i++) {
        char line[256];
        read_line(fd, line, sizeof line);
        ok += strncmp(line, "OK a/", 5) == 0;
        if (line[0] == '\0')
            break; /* timed out */
    }
    CHECK(ok == N);
    printf("pipelined puts answered: %d of %d\n", ok, N);
    close(fd);
}

int main(void)
{
    harness_init("malformed", root, sizeof root);
    if (daemon_start(&d, root, "m1", NULL) != 0)
        return 1;
    deferd_client *good = client(&d), *cons = client(&d);
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK);
    char id[DEFERD_ID_SIZE];
    int fd = connected();

    send_all(fd, "HELLO\n", 6);
    send_all(fd, "PUT nosuch 1\nx\n", 15);
    CHECK(put_job(good, "a", "interleaved", 0, -1, -1, id) == 0);
    char big[6000];
    int n = snprintf(big, sizeof big, "PUT a 5000\n");
    memset(big + n, 'z', 5000);
    big[n + 5000] = '\n';
    send_all(fd, big, (size_t)n + 5001);
    send_all(fd, "PUT a 3 delay=soon\nabc\n", 23);
    send_all(fd, "SUB a inflight=999999\n\x01\x02\xff\n", 26);
    send_all(fd, "ACK a/not-an-id\nNACK a/1-2-abc\nPUT a 3\nabcX", 43);
    char longline[3000];
    memset(longline, 'L', sizeof longline);
    send_all(fd, longline, sizeof longline);
    send_all(fd, "\nPING\n", 6);

    expect(fd, "ERR BAD_REQUEST unknown command");
    expect(fd, "ERR UNKNOWN_QUEUE");
    expect(fd, "ERR TOO_LARGE");
    expect(fd, "ERR BAD_REQUEST");   /* delay=soon; its payload "abc" is skipped */
    expect(fd, "ERR BAD_REQUEST");   /* inflight out of range */
    expect(fd, "ERR BAD_REQUEST");   /* binary line */
    expect(fd, "ERR BAD_REQUEST");   /* bad job id */
    expect(fd, "ERR NOT_FOUND");     /* nack of a job this connection does not hold */
    expect(fd, "ERR BAD_REQUEST payload not followed");
    expect(fd, "ERR BAD_REQUEST");   /* 'X' + long line */
    expect(fd, "OK PONG");

    /* The well-behaved consumer got the well-behaved job meanwhile. */
    deferd_job job;
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);

    /* Clients that vanish mid-request do no harm. */
    for (int i = 0; i < 20; i++) {
        int f = connected();
        send_all(f, "PUT a 100\npartial", 17);
        close(f);
    }
    close(fd);
    pipelined_puts();
    CHECK(deferd_ping(good) == DEFERD_OK);
    CHECK(put_job(good, "a", "still fine", 0, -1, -1, id) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(good);
    deferd_close(cons);
    daemon_kill(&d, SIGTERM);
    return check_report("it_malformed");
}
