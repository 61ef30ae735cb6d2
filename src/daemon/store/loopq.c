#include "loopq.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct loopq {
    pthread_mutex_t lock;
    struct loopq_item *head, *tail;
    int fd;
    struct event *ev;
    loopq_fn handler;
    void *ctx;
};

void loopq_drain(struct loopq *q)
{
    pthread_mutex_lock(&q->lock);
    struct loopq_item *item = q->head;
    q->head = q->tail = NULL;
    pthread_mutex_unlock(&q->lock);
    while (item) {
        struct loopq_item *next = item->next;
        q->handler(item, q->ctx);
        item = next;
    }
}

static void on_wakeup(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    uint64_t n;
    while (read(fd, &n, sizeof n) < 0 && errno == EINTR)
        ;
    loopq_drain(arg);
}

struct loopq *loopq_new(struct event_base *base, loopq_fn handler, void *ctx)
{
    struct loopq *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->fd < 0) {
        free(q);
        return NULL;
    }
    pthread_mutex_init(&q->lock, NULL);
    q->handler = handler;
    q->ctx = ctx;
    q->ev = event_new(base, q->fd, EV_READ | EV_PERSIST, on_wakeup, q);
    if (!q->ev || event_add(q->ev, NULL) != 0) {
        loopq_free(q);
        return NULL;
    }
    return q;
}

void loopq_push(struct loopq *q, struct loopq_item *item)
{
    item->next = NULL;
    pthread_mutex_lock(&q->lock);
    int was_empty = q->head == NULL;
    if (q->tail)
        q->tail->next = item;
    else
        q->head = item;
    q->tail = item;
    pthread_mutex_unlock(&q->lock);
    if (was_empty) { /* one wakeup per batch is enough: the loop drains everything */
        uint64_t one = 1;
        while (write(q->fd, &one, sizeof one) < 0 && errno == EINTR)
            ;
    }
}

void loopq_free(struct loopq *q)
{
    if (!q)
        return;
    if (q->ev)
        event_free(q->ev);
    loopq_drain(q);
    close(q->fd);
    pthread_mutex_destroy(&q->lock);
    free(q);
}
