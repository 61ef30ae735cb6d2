#include "tcpcut.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PAIRS 32

struct tcpcut {
    pthread_t thread;
    int listen_fd;
    struct sockaddr_in target;
    int fds[PAIRS][2]; /* client side, server side; -1 when free */
    atomic_llong cut_until_ms;
    atomic_int cut_now, stopping, relayed;
    atomic_int cut_after_ms;  /* tcpcut_cut_after_request: armed when > 0 */
    int linger_fd;            /* its server side, closed at linger_until_ms */
    int64_t linger_until_ms;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void drop(struct tcpcut *t, int i)
{
    close(t->fds[i][0]);
    close(t->fds[i][1]);
    t->fds[i][0] = t->fds[i][1] = -1;
}

static void drop_all(struct tcpcut *t)
{
    for (int i = 0; i < PAIRS; i++)
        if (t->fds[i][0] >= 0)
            drop(t, i);
}

static void accept_one(struct tcpcut *t)
{
    int c = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        return;
    int free_slot = -1;
    for (int i = 0; i < PAIRS && free_slot < 0; i++)
        if (t->fds[i][0] < 0)
            free_slot = i;
    int s = -1;
    if (free_slot >= 0 && mono_ms() >= atomic_load(&t->cut_until_ms)) {
        s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s >= 0 && connect(s, (struct sockaddr *)&t->target, sizeof t->target) != 0) {
            close(s);
            s = -1;
        }
    }
    if (s < 0) { /* cut, full, or the server refused: the client sees the connection end */
        close(c);
        return;
    }
    t->fds[free_slot][0] = c;
    t->fds[free_slot][1] = s;
    atomic_fetch_add(&t->relayed, 1);
}

/* Moves what one side sent to the other; 0 when the pair is done. */
static int relay(int from, int to)
{
    char buf[65536];
    ssize_t n = recv(from, buf, sizeof buf, 0);
    if (n <= 0)
        return 0;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w <= 0)
            return 0;
        off += w;
    }
    return 1;
}

static void linger_end(struct tcpcut *t, int now)
{
    if (t->linger_fd >= 0 && (now || mono_ms() >= t->linger_until_ms)) {
        close(t->linger_fd);
        t->linger_fd = -1;
    }
}

/* The request just passed on to the server side of pair I: the client loses the connection
 * now; the server side stays open a moment, so that the server reads the request. */
static void cut_after(struct tcpcut *t, int i)
{
    int ms = atomic_exchange(&t->cut_after_ms, 0);
    atomic_store(&t->cut_until_ms, mono_ms() + ms);
    linger_end(t, 1);
    close(t->fds[i][0]);
    t->linger_fd = t->fds[i][1];
    t->linger_until_ms = mono_ms() + 300;
    t->fds[i][0] = t->fds[i][1] = -1;
    drop_all(t);
}

static void *run(void *arg)
{
    struct tcpcut *t = arg;
    while (!atomic_load(&t->stopping)) {
        if (atomic_exchange(&t->cut_now, 0))
            drop_all(t);
        struct pollfd p[1 + 2 * PAIRS];
        int slot[1 + 2 * PAIRS], n = 0;
        p[n].fd = t->listen_fd, p[n].events = POLLIN, slot[n++] = -1;
        for (int i = 0; i < PAIRS; i++)
            for (int side = 0; side < 2 && t->fds[i][0] >= 0; side++)
                p[n].fd = t->fds[i][side], p[n].events = POLLIN, slot[n++] = i * 2 + side;
        if (poll(p, (nfds_t)n, 20) <= 0)
            continue;
        if (p[0].revents)
            accept_one(t);
        for (int k = 1; k < n; k++) {
            int i = slot[k] / 2, side = slot[k] % 2;
            if (!p[k].revents || t->fds[i][0] < 0)
                continue;
            if (!relay(t->fds[i][side], t->fds[i][1 - side]))
                drop(t, i);
            else if (side == 0 && atomic_load(&t->cut_after_ms) > 0)
                cut_after(t, i);
        }
        linger_end(t, 0);
    }
    linger_end(t, 1);
    drop_all(t);
    return NULL;
}

static int parse_target(const char *target, struct sockaddr_in *sa)
{
    char host[64];
    int port;
    if (sscanf(target, "%63[^:]:%d", host, &port) != 2)
        return -1;
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

struct tcpcut *tcpcut_start(const char *target, char *hosts, size_t len)
{
    struct tcpcut *t = calloc(1, sizeof *t);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t salen = sizeof sa;
    if (!t)
        return NULL;
    t->listen_fd = -1;
    if (parse_target(target, &t->target) != 0)
        goto fail;
    for (int i = 0; i < PAIRS; i++)
        t->fds[i][0] = t->fds[i][1] = -1;
    t->linger_fd = -1;
    t->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); /* not deferd's */
    if (t->listen_fd < 0 || bind(t->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(t->listen_fd, 16) != 0 ||
        getsockname(t->listen_fd, (struct sockaddr *)&sa, &salen) != 0 ||
        pthread_create(&t->thread, NULL, run, t) != 0)
        goto fail;
    snprintf(hosts, len, "127.0.0.1:%d", ntohs(sa.sin_port));
    return t;
fail:
    fprintf(stderr, "tcpcut: cannot relay to %s\n", target);
    if (t->listen_fd >= 0)
        close(t->listen_fd);
    free(t);
    return NULL;
}

void tcpcut_cut(struct tcpcut *t, int ms)
{
    atomic_store(&t->cut_until_ms, mono_ms() + ms);
    atomic_store(&t->cut_now, 1);
}

void tcpcut_cut_after_request(struct tcpcut *t, int ms)
{
    atomic_store(&t->cut_after_ms, ms);
}

int tcpcut_relayed(const struct tcpcut *t)
{
    return atomic_load(&t->relayed);
}

void tcpcut_stop(struct tcpcut *t)
{
    if (!t)
        return;
    atomic_store(&t->stopping, 1);
    pthread_join(t->thread, NULL);
    close(t->listen_fd);
    free(t);
}
