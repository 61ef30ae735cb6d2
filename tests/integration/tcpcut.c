#include "tcpcut.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PAIRS 32

/* ZooKeeper's frames, as far as tcpcut_lose_reply() reads them: a 4-byte big-endian length,
 * then a request header (xid, type) or a reply header (xid, zxid, err). The first frame of
 * each direction (the connect request and response) has neither. */
enum { REQ_HEAD = 8, REPLY_HEAD = 16 };

struct framer {
    long frames;       /* frames begun so far */
    uint8_t head[4 + REPLY_HEAD];
    size_t have, want; /* header bytes collected, and how many this frame's header has */
    uint32_t left;     /* body bytes after the header still to come */
};

struct tcpcut {
    pthread_t thread;
    int listen_fd;
    struct sockaddr_in target;
    int fds[PAIRS][2]; /* client side, server side; -1 when free */
    atomic_llong cut_until_ms;
    atomic_int cut_now, stopping, relayed;
    /* tcpcut_lose_reply: armed while lose_op >= 0; the request's pair and xid once sent */
    atomic_int lose_op, lose_ms, lost, lost_err;
    int lose_pair;
    int32_t lose_xid;
    struct framer framers[PAIRS][2]; /* what each side of each pair sent */
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
    memset(t->framers[i], 0, sizeof t->framers[i]);
    if (t->lose_pair == i)
        t->lose_pair = -1; /* its request, if sent, will never be answered here */
}

static int32_t be32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

/* Reads the next byte B of a stream into F; returns 1 when it completed a frame's header
 * (F->head then holds the length and the header). HEAD is the header's size after the
 * length. */
static int frame_byte(struct framer *f, uint8_t b, size_t head)
{
    if (f->have < 4 || f->have < f->want) {
        f->head[f->have++] = b;
        if (f->have == 4) {
            uint32_t len = (uint32_t)be32(f->head);
            size_t h = f->frames == 0 ? 0 : (len < head ? len : head);
            f->want = 4 + h;
            f->left = len - (uint32_t)h;
        }
        if (f->have < f->want || f->have < 4)
            return 0;
        int done = f->frames > 0 && f->want == 4 + head;
        if (f->left == 0)
            f->have = 0, f->frames++;
        return done;
    }
    if (--f->left == 0)
        f->have = 0, f->frames++;
    return 0;
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

/* The client's bytes of pair I: notes the xid of the first request of the armed type. */
static void watch_requests(struct tcpcut *t, int i, const uint8_t *buf, size_t n)
{
    struct framer *f = &t->framers[i][0];
    int op = atomic_load(&t->lose_op);
    for (size_t k = 0; k < n; k++)
        if (frame_byte(f, buf[k], REQ_HEAD) && op >= 0 && t->lose_pair < 0 &&
            be32(f->head + 8) == op) {
            t->lose_pair = i;
            t->lose_xid = be32(f->head + 4);
        }
}

/* The server's bytes of pair I: how many of them to pass on, all but the armed request's
 * answer and what follows it (then *CUT is set). */
static size_t watch_replies(struct tcpcut *t, int i, const uint8_t *buf, size_t n, int *cut)
{
    struct framer *f = &t->framers[i][1];
    size_t begin = 0;
    for (size_t k = 0; k < n; k++) {
        if (f->have == 0)
            begin = k;
        if (frame_byte(f, buf[k], REPLY_HEAD) && t->lose_pair == i &&
            be32(f->head + 4) == t->lose_xid) {
            atomic_store(&t->lost_err, be32(f->head + 16));
            *cut = 1;
            return begin; /* a header begun in an earlier read was partly passed on: still
                             no answer the client can read */
        }
    }
    return n;
}

/* Moves what one side sent to the other; 0 when the pair is done, 2 when the armed
 * request's answer was swallowed. */
static int relay(struct tcpcut *t, int i, int side)
{
    int from = t->fds[i][side], to = t->fds[i][1 - side], cut = 0;
    uint8_t buf[65536];
    ssize_t got = recv(from, buf, sizeof buf, 0);
    if (got <= 0)
        return 0;
    size_t n = (size_t)got;
    if (side == 0)
        watch_requests(t, i, buf, n);
    else
        n = watch_replies(t, i, buf, n, &cut);
    for (size_t off = 0; off < n;) {
        ssize_t w = send(to, buf + off, n - off, MSG_NOSIGNAL);
        if (w <= 0)
            return 0;
        off += (size_t)w;
    }
    return cut ? 2 : 1;
}

/* The armed request's answer was swallowed: every connection ends, none is relayed for the
 * armed time. */
static void lose_reply_done(struct tcpcut *t)
{
    atomic_store(&t->cut_until_ms, mono_ms() + atomic_load(&t->lose_ms));
    atomic_store(&t->lose_op, -1);
    t->lose_pair = -1;
    atomic_store(&t->lost, 1);
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
            int r = relay(t, i, side);
            if (r == 0)
                drop(t, i);
            else if (r == 2)
                lose_reply_done(t);
        }
    }
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
    t->lose_pair = -1;
    atomic_store(&t->lose_op, -1);
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

void tcpcut_lose_reply(struct tcpcut *t, int op, int ms)
{
    atomic_store(&t->lost, 0);
    atomic_store(&t->lose_ms, ms);
    atomic_store(&t->lose_op, op);
}

int tcpcut_lost_reply(const struct tcpcut *t, int *err)
{
    if (!atomic_load(&t->lost))
        return 0;
    if (err)
        *err = atomic_load(&t->lost_err);
    return 1;
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
