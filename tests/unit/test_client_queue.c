/* libdeferd's queue of pipelined requests: a reply that has arrived is handed out without
 * writing what was sent since (so a producer that sends a put after each reply writes them
 * at once, when it would wait, not a put a write), and the queue is written before any
 * wait. The test itself is the daemon, so it sees what the client has written and when. */
#include <deferd/client.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"

/* What the client has written that the daemon has not read, without waiting ("" if none). */
static const char *written(int fd)
{
    static char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

/* CHECK_STR evaluates its arguments again to print them: read once. */
#define CHECK_WRITTEN(fd, want)                                                                \
    do {                                                                                       \
        const char *got_ = written(fd);                                                        \
        CHECK_STR(got_, want);                                                                 \
    } while (0)

static void answer(int fd, const char *line)
{
    CHECK(write(fd, line, strlen(line)) == (ssize_t)strlen(line));
}

static void run(deferd_client *c, int fd)
{
    char id[DEFERD_ID_SIZE];
    CHECK(deferd_put_send(c, "q", "a", 1, NULL) == DEFERD_OK);
    CHECK_WRITTEN(fd, "");                                   /* queued */
    CHECK(deferd_put_recv(c, id, sizeof id, 0) == DEFERD_ETIMEDOUT); /* written, then no wait */
    CHECK_WRITTEN(fd, "PUT q 1\na\n");
    answer(fd, "OK q/1-1-a\n");
    CHECK(deferd_put_send(c, "q", "b", 1, NULL) == DEFERD_OK);
    CHECK(deferd_put_send(c, "q", "c", 1, NULL) == DEFERD_OK);
    CHECK(deferd_put_recv(c, id, sizeof id, 5000) == DEFERD_OK);
    CHECK_STR(id, "q/1-1-a");
    CHECK_WRITTEN(fd, "");       /* a's reply was here: b and c still queued */
    CHECK(deferd_put_recv(c, id, sizeof id, 0) == DEFERD_ETIMEDOUT);
    CHECK_WRITTEN(fd, "PUT q 1\nb\nPUT q 1\nc\n"); /* both in one write, before the wait */
    answer(fd, "OK q/1-1-b\nOK q/1-1-c\n");
    CHECK(deferd_put_recv(c, id, sizeof id, 5000) == DEFERD_OK);
    CHECK_STR(id, "q/1-1-b");
    CHECK(deferd_put_recv(c, id, sizeof id, 5000) == DEFERD_OK);
    CHECK_STR(id, "q/1-1-c");
    CHECK(deferd_puts_outstanding(c) == 0);
}

int main(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/deferd-test-client-queue-%d.sock",
             (int)getpid());
    unlink(sa.sun_path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 1) != 0) {
        perror("fake daemon socket");
        return 1;
    }
    char err[256];
    deferd_client *c = deferd_connect(sa.sun_path, err, sizeof err);
    int fd = accept(lfd, NULL, NULL);
    CHECK(c != NULL && fd >= 0);
    if (c && fd >= 0)
        run(c, fd);
    if (c)
        deferd_close(c);
    if (fd >= 0)
        close(fd);
    close(lfd);
    unlink(sa.sun_path);
    return check_report("client_queue");
}
