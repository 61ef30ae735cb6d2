#include "pending.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config.h"
#include "daemon.h"
#include "layout.h"
#include "dispatcher.h"
#include "layout.h"
#include "log.h"
#include "periodic.h"
#include "queue.h"
#include "zkstore.h"

#define TICK_MS 1000

struct pending {
    struct deferd *d;
    struct periodic *tick;
    char uid[20];               /* this daemon run's counter name */
};

static struct pending *the; /* one per daemon; completions find it here */

static void counts_path(const struct dqueue *q, char *buf, size_t len, const char *child)
{
    layout_queue_path(buf, len, the->d->cfg->zk_root, q->cfg->name, LAYOUT_COUNTS, child);
}

static void create_counter(struct dqueue *q);

/* A counter's call failed: a denial is reported (the queue's max_pending then rests on an
 * old sum, or none: puts are not refused for it); the rest is tried again at the next tick. */
static void count_failed(struct dqueue *q, const char *child, int rc)
{
    char path[512];
    if (rc != ZNOAUTH)
        return;
    counts_path(q, path, sizeof path, child);
    queue_denied(q, path);
}

/* ---- writing our counter ---- */

struct write_ctx {
    struct dqueue *q;
    int64_t delta;
};

static void on_written(const struct zk_result *res, void *ctx)
{
    struct write_ctx *w = ctx;
    w->q->count_writing = 0;
    if (res->rc == ZOK) {
        w->q->count_written += w->delta;
        w->q->count_unwritten -= w->delta;
    } else if (res->rc == ZNONODE) {
        create_counter(w->q); /* someone deleted it; the next tick writes it again */
    } else {
        count_failed(w->q, the->uid, res->rc);
    }
    free(w);
}

static void write_counter(struct dqueue *q)
{
    char path[512], value[32];
    struct write_ctx *w;
    if (q->count_writing || q->count_unwritten == 0 || !(w = malloc(sizeof *w)))
        return;
    w->q = q;
    w->delta = q->count_unwritten;
    counts_path(q, path, sizeof path, the->uid);
    snprintf(value, sizeof value, "%" PRId64, q->count_written + w->delta);
    q->count_writing = 1;
    if (zkstore_set(the->d->zs, path, value, strlen(value), on_written, w) != ZOK) {
        q->count_writing = 0;
        free(w);
    }
}

/* ---- reading the sum of all counters ---- */

struct sum_ctx {
    struct dqueue *q;
    int remaining, failed;
    int64_t sum;
};

static void sum_done(struct sum_ctx *sc)
{
    struct dqueue *q = sc->q;
    q->count_summing = 0;
    if (!sc->failed) {
        q->count_sum = sc->sum;
        q->count_since_sum = q->count_since_inflight;
        q->count_ready = 1;
    }
    free(sc);
}

static void on_count(const struct zk_result *res, void *ctx)
{
    struct sum_ctx *sc = ctx;
    char text[32];
    if (res->rc == ZOK && res->datalen > 0 && res->datalen < (int)sizeof text) {
        memcpy(text, res->data, (size_t)res->datalen);
        text[res->datalen] = '\0';
        sc->sum += strtoll(text, NULL, 10);
    } else if (res->rc != ZNONODE) {
        count_failed(sc->q, NULL, res->rc);
        sc->failed = 1;
    }
    if (--sc->remaining == 0)
        sum_done(sc);
}

static void on_counters(const struct zk_result *res, void *ctx)
{
    struct sum_ctx *sc = ctx;
    char path[600];
    if (res->rc != ZOK || res->nchildren == 0) {
        count_failed(sc->q, NULL, res->rc);
        sc->failed = res->rc != ZOK;
        sum_done(sc);
        return;
    }
    sc->remaining = res->nchildren;
    for (int i = 0; i < res->nchildren; i++) {
        counts_path(sc->q, path, sizeof path, res->children[i]);
        if (zkstore_get(the->d->zs, path, on_count, sc) != ZOK) {
            sc->failed = 1;
            if (--sc->remaining == 0)
                sum_done(sc);
        }
    }
}

static void read_sum(struct dqueue *q)
{
    char path[512];
    struct sum_ctx *sc;
    if (q->count_summing || !(sc = calloc(1, sizeof *sc)))
        return;
    sc->q = q;
    q->count_summing = 1;
    q->count_since_inflight = 0; /* changes from now on are not in this sum */
    counts_path(q, path, sizeof path, NULL);
    if (zkstore_children(the->d->zs, path, 0, on_counters, sc) != ZOK) {
        q->count_summing = 0;
        free(sc);
    }
}

/* ---- our counter node, and the tick ---- */

static void on_created(const struct zk_result *res, void *ctx)
{
    struct dqueue *q = ctx;
    if (res->rc == ZNOAUTH)
        count_failed(q, the->uid, res->rc);
    else if (res->rc != ZOK && res->rc != ZNODEEXISTS && res->rc != ZNONODE)
        log_warn("queue %s: cannot create its pending counter: %s", q->cfg->name,
                 zk_strerror(res->rc));
}

/* counts/ could not be made (the counter's create then fails with NoNode): why. */
static void on_parents_made(const struct zk_result *res, void *ctx)
{
    struct dqueue *q = ctx;
    if (res->rc == ZNOAUTH)
        queue_denied(q, res->path);
    else if (res->rc != ZOK)
        log_warn("queue %s: cannot create %s for its pending counter: %s", q->cfg->name,
                 res->path, zk_strerror(res->rc));
}

static void create_counter(struct dqueue *q)
{
    char path[512], value[32];
    counts_path(q, path, sizeof path, the->uid);
    snprintf(value, sizeof value, "%" PRId64, q->count_written);
    if (zkstore_create_parents(the->d->zs, path, on_parents_made, q) == ZOK)
        zkstore_create(the->d->zs, path, value, strlen(value), 0, on_created, q);
}

static void on_tick(void *arg)
{
    struct pending *p = arg;
    struct dispatcher *ds = p->d->dispatcher;
    if (!zkstore_connected(p->d->zs))
        return;
    for (size_t i = 0; i < p->d->cfg->nqueues; i++) {
        struct dqueue *q = dispatcher_queue(ds, p->d->cfg->queues[i]->name);
        if (!q || !queue_pending_limited(q))
            continue;
        write_counter(q); /* ordered before the reads on the same session */
        read_sum(q);
    }
}

static void create_counters(struct pending *p)
{
    for (size_t i = 0; i < p->d->cfg->nqueues; i++) {
        struct dqueue *q = dispatcher_queue(p->d->dispatcher, p->d->cfg->queues[i]->name);
        if (q && queue_pending_limited(q))
            create_counter(q); /* one that exists already stays as it is */
    }
}

void pending_session_up(struct pending *p)
{
    create_counters(p);
    periodic_run_now(p->tick); /* the first run: the ticks begin with the session */
}

void pending_reloaded(struct pending *p)
{
    if (zkstore_connected(p->d->zs))
        create_counters(p);
}

struct pending *pending_new(struct deferd *d)
{
    struct pending *p = calloc(1, sizeof *p);
    uint64_t rnd = 0;
    if (!p || getrandom(&rnd, sizeof rnd, 0) != sizeof rnd) {
        free(p);
        return NULL;
    }
    p->d = d;
    snprintf(p->uid, sizeof p->uid, "%016" PRIx64, rnd);
    p->tick = periodic_new(d->base, TICK_MS, on_tick, p);
    if (!p->tick) {
        free(p);
        return NULL;
    }
    the = p;
    return p;
}

void pending_free(struct pending *p)
{
    if (!p)
        return;
    periodic_free(p->tick);
    if (the == p)
        the = NULL;
    free(p);
}

size_t pending_flush(struct pending *p)
{
    size_t left = 0;
    if (!p)
        return 0;
    for (size_t i = 0; i < p->d->cfg->nqueues; i++) {
        struct dqueue *q = dispatcher_queue(p->d->dispatcher, p->d->cfg->queues[i]->name);
        if (!q || !queue_pending_limited(q))
            continue;
        if (zkstore_connected(p->d->zs))
            write_counter(q);
        left += q->count_writing || q->count_unwritten != 0;
    }
    return left;
}
