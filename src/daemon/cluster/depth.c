#include "depth.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "layout.h"
#include "log.h"
#include "queue.h"
#include "units.h"
#include "zkstore.h"

#define TICK_MS 1000
/* Reads of one refresh on their way at once: the session's other requests (locks, acks)
 * wait behind at most these few. */
#define INFLIGHT_MAX 8
#define LEAF_LEVEL LAYOUT_DEPTH
#define SHARD_LEVEL (LAYOUT_DEPTH + 1)

const char *const depth_window_names[DW_COUNT] = {"overdue", "minute", "hour"};

enum call_kind { CK_BUCKETS, CK_JOBS, CK_DEAD_DIRS, CK_DEAD_COUNT };

struct call {
    struct call *next;          /* in the walk's list of calls not sent yet */
    struct walk *w;
    enum call_kind kind;
    int level;                  /* of the directory: 0 jobs/, 1-3 buckets, 4 a shard */
    uint64_t value;             /* its bucket value (a shard: its leaf's) */
    char path[LAYOUT_PATH_MAX];
};

/* One queue's refreshes; allocated on its own, since calls in flight point at it. */
struct walk {
    struct depth *dp;
    const struct queue_config *qc;
    int64_t started_mono;       /* when the last refresh began (0: never) */
    int64_t first_at;           /* monotonic ms of the first one, spread across daemons */
    int active, busy, errors, failing;
    struct call *head, *tail;   /* to send, oldest buckets first */
    struct depth_counts run;    /* being counted */
    struct depth_counts pub;    /* the last complete refresh */
};

struct depth {
    struct deferd *d;
    struct event *tick;
    struct walk **walks;        /* by queue index (cfg->queues) */
    size_t n;
    uint64_t reads;
};

static void pump(struct walk *w);

static void enqueue(struct walk *w, enum call_kind kind, int level, uint64_t value,
                    const char *path)
{
    struct call *c = calloc(1, sizeof *c);
    if (!c || snprintf(c->path, sizeof c->path, "%s", path) >= (int)sizeof c->path) {
        free(c);
        w->errors++;
        return;
    }
    c->w = w;
    c->kind = kind;
    c->level = level;
    c->value = value;
    if (w->tail)
        w->tail->next = c;
    else
        w->head = c;
    w->tail = c;
}

static void drop_queued(struct walk *w)
{
    while (w->head) {
        struct call *c = w->head;
        w->head = c->next;
        free(c);
    }
    w->tail = NULL;
}

static void finish(struct walk *w)
{
    w->active = 0;
    if (w->errors) { /* counts with holes: the last complete refresh stays */
        w->failing = 1;
        return;
    }
    if (w->failing)
        log_info("queue %s: depth refreshed again from ZooKeeper", w->qc->name);
    w->failing = 0;
    w->pub = w->run;
    log_debug("queue %s: depth: %llu overdue, %llu in a minute, %llu in the hour, %llu dead; "
              "%u reads%s", w->qc->name, (unsigned long long)w->pub.jobs[DW_OVERDUE],
              (unsigned long long)w->pub.jobs[DW_MINUTE], (unsigned long long)w->pub.jobs[DW_HOUR],
              (unsigned long long)w->pub.dead, w->pub.reads,
              w->pub.truncated ? " (stopped at depth_max_reads)" : "");
}

/* A read failed: NoAuth is reported as for every other path of the queue; the first other
 * failure of a streak is logged once. NoNode is no failure: the directory went meanwhile. */
static void failed(struct walk *w, const char *path, int rc)
{
    struct dqueue *q = dispatcher_queue(w->dp->d->dispatcher, w->qc->name);
    w->errors++;
    if (rc == ZNOAUTH && q)
        queue_denied(q, path);
    else if (!w->failing && w->errors == 1 && !zk_session_gone(rc) && rc != ZCONNECTIONLOSS)
        log_warn("queue %s: %s: cannot read the queue's depth: %s; its last figures stay",
                 w->qc->name, path, zk_strerror(rc));
}

static void call_done(struct walk *w, struct call *c)
{
    free(c);
    w->busy--;
    pump(w);
}

static void count_job(struct walk *w, uint64_t due)
{
    struct depth_counts *r = &w->run;
    int64_t d = (int64_t)due, now = r->refreshed_ms;
    if (d <= now) {
        r->jobs[DW_OVERDUE]++;
        if (r->oldest_due_ms == 0 || d < r->oldest_due_ms)
            r->oldest_due_ms = d;
    } else if (d <= now + DEPTH_MINUTE_MS) {
        r->jobs[DW_MINUTE]++;
    } else if (d <= now + DEPTH_HOUR_MS) {
        r->jobs[DW_HOUR]++;
    }
}

/* A leaf bucket's or a shard's names: jobs (foreign names are not counted), and in a leaf
 * its shards, listed in turn. */
static void on_jobs(struct walk *w, const struct call *c, const struct zk_result *res)
{
    char path[LAYOUT_PATH_MAX];
    for (int i = 0; i < res->nchildren; i++) {
        const char *name = res->children[i];
        struct job_name jn;
        if (name[0] >= '0' && name[0] <= '9') {
            if (layout_parse_name(name, &jn) == 0 && layout_job_in_bucket(jn.due_ms, c->value))
                count_job(w, jn.due_ms);
        } else if (c->level == LEAF_LEVEL && layout_valid_shard(name) &&
                   snprintf(path, sizeof path, "%s/%s", c->path, name) < (int)sizeof path) {
            enqueue(w, CK_JOBS, SHARD_LEVEL, c->value, path);
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A directory's buckets one level down that begin within the hour, earliest first. */
static void on_buckets(struct walk *w, const struct call *c, const struct zk_result *res)
{
    int level = c->level + 1;
    uint64_t *v = calloc((size_t)res->nchildren + 1, sizeof *v);
    size_t n = 0;
    char path[LAYOUT_PATH_MAX];
    if (!v) {
        w->errors++;
        return;
    }
    int64_t horizon = w->run.refreshed_ms + DEPTH_HOUR_MS;
    for (int i = 0; i < res->nchildren; i++)
        if (layout_parse_bucket(res->children[i], level, c->value, &v[n]) == 0 &&
            (int64_t)(v[n] * layout_bucket_width[level]) <= horizon)
            n++;
    qsort(v, n, sizeof *v, cmp_u64);
    for (size_t i = 0; i < n; i++)
        if (snprintf(path, sizeof path, "%s/%llu", c->path, (unsigned long long)v[i]) <
            (int)sizeof path)
            enqueue(w, level == LEAF_LEVEL ? CK_JOBS : CK_BUCKETS, level, v[i], path);
    free(v);
}

static void on_dead_dirs(struct walk *w, const struct call *c, const struct zk_result *res)
{
    char path[LAYOUT_PATH_MAX];
    uint64_t v;
    for (int i = 0; i < res->nchildren; i++)
        if (layout_parse_bucket(res->children[i], 1, 0, &v) == 0 &&
            snprintf(path, sizeof path, "%s/%s", c->path, res->children[i]) < (int)sizeof path)
            enqueue(w, CK_DEAD_COUNT, 1, v, path);
}

static void on_result(const struct zk_result *res, void *ctx)
{
    struct call *c = ctx;
    struct walk *w = c->w;
    if (res->rc == ZOK) {
        if (c->kind == CK_BUCKETS)
            on_buckets(w, c, res);
        else if (c->kind == CK_JOBS)
            on_jobs(w, c, res);
        else if (c->kind == CK_DEAD_DIRS)
            on_dead_dirs(w, c, res);
        else if (res->has_stat) /* dead/<L1> holds dead jobs only */
            w->run.dead += (uint64_t)res->stat.numChildren;
    } else if (res->rc != ZNONODE) {
        failed(w, c->path, res->rc);
    }
    call_done(w, c);
}

static void send_call(struct walk *w, struct call *c)
{
    struct zkstore *zs = w->dp->d->zs;
    int rc = ZCONNECTIONLOSS;
    w->busy++;
    w->run.reads++;
    w->dp->reads++;
    if (zkstore_connected(zs))
        rc = c->kind == CK_DEAD_COUNT ? zkstore_exists(zs, c->path, 0, on_result, c)
                                      : zkstore_children(zs, c->path, 0, on_result, c);
    if (rc != ZOK) {
        failed(w, c->path, rc);
        w->busy--;
        free(c);
    }
}

/* Sends what waits, up to INFLIGHT_MAX on their way and depth_max_reads in all; the
 * refresh ends when nothing is left. */
static void pump(struct walk *w)
{
    uint32_t max_reads = w->dp->d->cfg->depth_max_reads;
    while (w->head && w->busy < INFLIGHT_MAX) {
        if (w->run.reads >= max_reads) {
            w->run.truncated = 1;
            drop_queued(w);
            break;
        }
        struct call *c = w->head;
        w->head = c->next;
        if (!w->head)
            w->tail = NULL;
        send_call(w, c);
    }
    if (w->active && w->busy == 0 && !w->head)
        finish(w);
}

static void start(struct walk *w)
{
    const struct config *cfg = w->dp->d->cfg;
    char path[LAYOUT_PATH_MAX];
    memset(&w->run, 0, sizeof w->run);
    w->run.refreshed_ms = units_wall_ms();
    w->started_mono = units_mono_ms();
    w->active = 1;
    w->errors = 0;
    if (layout_bucket_path(path, sizeof path, cfg->zk_root, w->qc->name, 0, 0) == 0)
        enqueue(w, CK_BUCKETS, 0, 0, path);
    snprintf(path, sizeof path, "%s/queues/%s/dead", cfg->zk_root, w->qc->name);
    enqueue(w, CK_DEAD_DIRS, 0, 0, path);
    pump(w);
}

/* Queues added by a reload are counted too; the first refresh of each is spread over an
 * interval, so that daemons started together do not read together. */
static int track_queues(struct depth *dp)
{
    const struct config *cfg = dp->d->cfg;
    if (cfg->nqueues <= dp->n)
        return 0;
    struct walk **grown = realloc(dp->walks, cfg->nqueues * sizeof *grown);
    if (!grown)
        return -1;
    dp->walks = grown;
    for (; dp->n < cfg->nqueues; dp->n++) {
        struct walk *w = calloc(1, sizeof *w);
        if (!w)
            return -1;
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
            rnd = 0;
        uint64_t spread = cfg->depth_interval_ms ? cfg->depth_interval_ms : 1;
        *w = (struct walk){.dp = dp, .qc = cfg->queues[dp->n],
                           .first_at = units_mono_ms() + (int64_t)(rnd % spread)};
        dp->walks[dp->n] = w;
    }
    return 0;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct depth *dp = arg;
    int64_t interval = (int64_t)dp->d->cfg->depth_interval_ms, now = units_mono_ms();
    if (!interval || !zkstore_connected(dp->d->zs) || dp->d->drain || track_queues(dp) != 0)
        return;
    for (size_t i = 0; i < dp->n; i++) {
        struct walk *w = dp->walks[i];
        int64_t due = w->started_mono ? w->started_mono + interval : w->first_at;
        if (!w->active && w->qc->format == QF_NATIVE && now >= due)
            start(w);
    }
}

struct depth *depth_new(struct deferd *d)
{
    struct depth *dp = calloc(1, sizeof *dp);
    if (!dp)
        return NULL;
    dp->d = d;
    dp->tick = event_new(d->base, -1, EV_PERSIST, on_tick, dp);
    struct timeval tv = {.tv_sec = TICK_MS / 1000, .tv_usec = (TICK_MS % 1000) * 1000};
    if (!dp->tick || event_add(dp->tick, &tv) != 0 || track_queues(dp) != 0) {
        depth_free(dp);
        return NULL;
    }
    return dp;
}

void depth_free(struct depth *dp)
{
    if (!dp)
        return;
    for (size_t i = 0; i < dp->n; i++) {
        drop_queued(dp->walks[i]); /* a refresh cut off at exit */
        free(dp->walks[i]);
    }
    free(dp->walks);
    if (dp->tick)
        event_free(dp->tick);
    free(dp);
}

const struct depth_counts *depth_of(const struct depth *dp, const char *queue)
{
    for (size_t i = 0; dp && i < dp->n; i++)
        if (strcmp(dp->walks[i]->qc->name, queue) == 0)
            return dp->walks[i]->qc->format == QF_NATIVE ? &dp->walks[i]->pub : NULL;
    return NULL;
}

uint64_t depth_reads_total(const struct depth *dp) { return dp ? dp->reads : 0; }
