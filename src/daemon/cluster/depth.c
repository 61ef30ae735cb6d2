#include "depth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "census.h"
#include "claimdata.h"
#include "layout.h"
#include "log.h"
#include "periodic.h"
#include "pack.h"
#include "queue.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

#define TICK_MS 1000
/* Reads of one refresh on their way at once: the session's other requests (locks, acks)
 * wait behind at most these few. */
#define INFLIGHT_MAX 8
#define LEAF_LEVEL LAYOUT_DEPTH
#define SHARD_LEVEL (LAYOUT_DEPTH + 1)

const char *const depth_window_names[DW_COUNT] = {"overdue", "minute", "hour"};

enum call_kind { CK_BUCKETS, CK_JOBS, CK_DEAD_DIRS, CK_DEAD_COUNT, CK_PACK_DIRS, CK_PACKS,
                 CK_PACK, CK_CLAIMS, CK_CLAIM };
/* A census pass starts depth_interval after the last began (and once it ended), or this
 * long after with depth_interval 0. */
#define CENSUS_EVERY_MS 10000

struct call {
    struct call *next;          /* in the walk's list of calls not sent yet */
    struct walk *w;
    enum call_kind kind;
    int level;                  /* of the directory: 0 jobs/, 1-3 buckets, 4 a shard */
    uint64_t value;             /* its bucket value (a shard: its leaf's) */
    int form;                   /* of its path's bucket names (enum layout_form) */
    char path[LAYOUT_PATH_MAX];
};

/* One queue's refreshes, or its census passes; allocated on its own, since calls in
 * flight point at it. The refresh walks breadth first within the hour; the census depth
 * first through everything, so that what waits to be sent stays a few listings long. */
struct walk {
    struct depth *dp;
    const struct queue_config *qc;
    int census;
    int64_t started_mono;       /* when the last refresh began (0: never) */
    int64_t first_at;           /* monotonic ms of the first one, spread across daemons */
    int active, busy, errors, failing;
    uint32_t queued;            /* calls waiting in head..tail */
    double tokens;              /* census: reads it may send now ([metrics] census_rate) */
    struct call *head, *tail;   /* to send, oldest buckets first */
    struct depth_counts run;    /* refresh: being counted */
    struct depth_counts pub;    /* refresh: the last complete one */
    struct census *tally;       /* census: being counted */
    struct census *done;        /* census: the last complete pass */
    int64_t done_began_ms;      /* census: when the last complete pass began, wall ms */
};

struct depth {
    struct deferd *d;
    struct periodic *tick;
    struct walk **walks;        /* by queue index (cfg->queues) */
    struct walk **censuses;     /* the same */
    size_t n;
    uint64_t reads, census_reads;
};

static void pump(struct walk *w);

static void enqueue(struct walk *w, enum call_kind kind, int level, uint64_t value, int form,
                    const char *path)
{
    /* A refresh holds no more calls than it may still send: a long overdue past (every
     * consumer down for a day) costs depth_max_reads calls, not one a bucket. */
    if (!w->census && w->run.reads + w->queued >= w->dp->d->cfg->depth_max_reads) {
        w->run.truncated = 1;
        return;
    }
    struct call *c = w->errors ? NULL : calloc(1, sizeof *c);
    if (!c || snprintf(c->path, sizeof c->path, "%s", path) >= (int)sizeof c->path) {
        free(c);
        w->errors++;
        return;
    }
    w->queued++;
    c->w = w;
    c->kind = kind;
    c->level = level;
    c->form = form;
    c->value = value;
    if (w->census) { /* depth first: what a listing finds goes before what waits */
        c->next = w->head;
        w->head = c;
        if (!w->tail)
            w->tail = c;
    } else {
        if (w->tail)
            w->tail->next = c;
        else
            w->head = c;
        w->tail = c;
    }
}

static void drop_queued(struct walk *w)
{
    while (w->head) {
        struct call *c = w->head;
        w->head = c->next;
        free(c);
    }
    w->tail = NULL;
    w->queued = 0;
}

static void finish_census(struct walk *w)
{
    w->active = 0;
    if (w->errors) { /* counts with holes: the last complete pass stays */
        w->failing = 1;
        census_free(w->tally);
        w->tally = NULL;
        return;
    }
    if (w->failing)
        log_info("queue %s: census complete again", w->qc->name);
    w->failing = 0;
    census_free(w->done);
    w->done = w->tally;
    w->tally = NULL;
    w->done_began_ms = w->run.refreshed_ms; /* a pass begins as a refresh does */
    log_debug("queue %s: census: %llu jobs in %lld ms", w->qc->name,
              (unsigned long long)census_total(w->done),
              (long long)(cluster_now_ms() - w->done_began_ms));
}

static void finish(struct walk *w)
{
    if (w->census) {
        finish_census(w);
        return;
    }
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
    drop_queued(w); /* the pass publishes nothing now: read no more of it */
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
    if (w->census) {
        if (census_add(w->tally, due, 1) != 0)
            w->errors++;
        return;
    }
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
            if (layout_parse_name(name, &jn) == 0 && layout_job_in_bucket(&jn, c->value, c->form))
                count_job(w, jn.due_ms);
        } else if (c->level == LEAF_LEVEL && layout_valid_shard(name) &&
                   snprintf(path, sizeof path, "%s/%s", c->path, name) < (int)sizeof path) {
            enqueue(w, CK_JOBS, SHARD_LEVEL, c->value, c->form, path);
        }
    }
}

struct named {
    uint64_t value;
    int form;
    const char *name;
};

static int cmp_named(const void *a, const void *b)
{
    uint64_t x = ((const struct named *)a)->value, y = ((const struct named *)b)->value;
    return (x > y) - (x < y);
}

/* A directory's buckets one level down that begin within the hour, earliest first; a
 * bucket named in both forms (while old jobs remain) is walked under each name. */
static void on_buckets(struct walk *w, const struct call *c, const struct zk_result *res)
{
    int level = c->level + 1;
    struct named *v;
    size_t n = 0;
    char path[LAYOUT_PATH_MAX];
    if (!(v = calloc((size_t)res->nchildren + 1, sizeof *v))) {
        w->errors++;
        return;
    }
    int64_t horizon = w->census ? INT64_MAX : w->run.refreshed_ms + DEPTH_HOUR_MS;
    for (int i = 0; i < res->nchildren; i++) {
        int form = layout_parse_bucket(res->children[i], level, c->value, &v[n].value);
        if (form >= 0 && (form = layout_form_join(c->form, form)) >= 0 &&
            (int64_t)(v[n].value * layout_bucket_width[level]) <= horizon) {
            v[n].form = form;
            v[n++].name = res->children[i];
        }
    }
    qsort(v, n, sizeof *v, cmp_named);
    for (size_t k = 0; k < n; k++) {
        size_t i = w->census ? n - 1 - k : k; /* pushed in front: the last goes first */
        if (snprintf(path, sizeof path, "%s/%s", c->path, v[i].name) < (int)sizeof path)
            enqueue(w, level == LEAF_LEVEL ? CK_JOBS : CK_BUCKETS, level, v[i].value, v[i].form,
                    path);
    }
    free(v);
}

static void on_dead_dirs(struct walk *w, const struct call *c, const struct zk_result *res)
{
    char path[LAYOUT_PATH_MAX];
    uint64_t v;
    for (int i = 0; i < res->nchildren; i++)
        if (layout_parse_bucket(res->children[i], 1, 0, &v) >= 0 &&
            snprintf(path, sizeof path, "%s/%s", c->path, res->children[i]) < (int)sizeof path)
            enqueue(w, CK_DEAD_COUNT, 1, v, LAYOUT_FORM_EITHER, path);
}

/* packs/: the window directories; a window directory: its packs. Names that are not
 * deferd's are left to the unpacker to report. */
static void on_pack_names(struct walk *w, const struct call *c, const struct zk_result *res)
{
    char path[LAYOUT_PATH_MAX];
    struct pack_name pn;
    uint64_t v;
    for (int i = 0; i < res->nchildren; i++) {
        const char *name = res->children[i];
        int ok = c->kind == CK_PACK_DIRS ? layout_parse_bucket(name, 1, 0, &v) >= 0
                                         : layout_parse_pack_name(name, &pn) == 0;
        if (ok && snprintf(path, sizeof path, "%s/%s", c->path, name) < (int)sizeof path)
            enqueue(w, c->kind == CK_PACK_DIRS ? CK_PACKS : CK_PACK, 0, 0, LAYOUT_FORM_EITHER,
                    path);
    }
}

/* A pack's jobs, each counted at its due time; an unreadable pack is not counted (the
 * unpacker logs it and counts it in packs_unreadable). */
static void on_pack(struct walk *w, const struct zk_result *res)
{
    struct pack_reader r;
    struct pack_job job;
    if (res->datalen <= 0 || pack_open(&r, res->data, (size_t)res->datalen) != PACK_OK)
        return;
    while (pack_next(&r, &job) == 1)
        count_job(w, job.name.due_ms);
}

/* claims/ (layout version 3): its claim nodes, each read for the jobs it holds. */
static void on_claim_names(struct walk *w, const struct call *c, const struct zk_result *res)
{
    char path[LAYOUT_PATH_MAX];
    uint64_t session, n;
    for (int i = 0; i < res->nchildren; i++)
        if (layout_parse_claim_name(res->children[i], &session, &n) == 0 &&
            snprintf(path, sizeof path, "%s/%s", c->path, res->children[i]) < (int)sizeof path)
            enqueue(w, CK_CLAIM, 0, 0, LAYOUT_FORM_EITHER, path);
}

/* A claim's jobs are held by a consumer, out of their buckets: each counted at its due time
 * as a held job in its bucket is (a refresh that meets a job on both sides of its claim
 * counts it twice or not at all, once). An unreadable claim is not counted: claim recovery
 * logs it and counts it in claims_unreadable. */
static void on_claim(struct walk *w, const struct zk_result *res)
{
    struct claim_record recs[CLAIM_JOBS_MAX]; /* 5 KiB, pointing into the data */
    struct job_name jn;
    char name[LAYOUT_NAME_MAX + 1];
    uint32_t n;
    if (res->datalen <= 0 ||
        claimdata_read(res->data, (size_t)res->datalen, recs, CLAIM_JOBS_MAX, &n, NULL, 0) != 0)
        return;
    for (uint32_t i = 0; i < n; i++)
        if (claimdata_job_name(&recs[i], name, sizeof name) == 0 &&
            layout_parse_name(name, &jn) == 0)
            count_job(w, jn.due_ms);
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
        else if (c->kind == CK_PACK_DIRS || c->kind == CK_PACKS)
            on_pack_names(w, c, res);
        else if (c->kind == CK_PACK)
            on_pack(w, res);
        else if (c->kind == CK_CLAIMS)
            on_claim_names(w, c, res);
        else if (c->kind == CK_CLAIM)
            on_claim(w, res);
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
    int rc;
    w->busy++;
    w->run.reads++;
    *(w->census ? &w->dp->census_reads : &w->dp->reads) += 1;
    if (!zkstore_connected(zs))
        rc = ZCONNECTIONLOSS;
    else if (c->kind == CK_DEAD_COUNT)
        rc = zkstore_exists(zs, c->path, 0, on_result, c);
    else if (c->kind == CK_PACK || c->kind == CK_CLAIM)
        rc = zkstore_get(zs, c->path, on_result, c);
    else
        rc = zkstore_children(zs, c->path, 0, on_result, c);
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
    uint32_t max_reads = w->census ? UINT32_MAX : w->dp->d->cfg->depth_max_reads;
    while (w->head && w->busy < INFLIGHT_MAX && (!w->census || w->tokens >= 1)) {
        w->tokens -= w->census;
        if (w->run.reads >= max_reads) {
            w->run.truncated = 1;
            drop_queued(w);
            break;
        }
        struct call *c = w->head;
        w->head = c->next;
        if (!w->head)
            w->tail = NULL;
        w->queued--;
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
    w->run.refreshed_ms = cluster_now_ms();
    w->started_mono = units_mono_ms();
    w->errors = 0;
    if (w->census && !(w->tally = census_new()))
        return;
    w->active = 1;
    if (w->census && layout_packs_path(path, sizeof path, cfg->zk_root, w->qc->name) == 0)
        enqueue(w, CK_PACK_DIRS, 0, 0, LAYOUT_FORM_EITHER, path);
    if (layout_bucket_path(path, sizeof path, cfg->zk_root, w->qc->name, 0, 0, 0) == 0)
        enqueue(w, CK_BUCKETS, 0, 0, LAYOUT_FORM_EITHER, path);
    if (!w->census &&
        layout_queue_path(path, sizeof path, cfg->zk_root, w->qc->name, LAYOUT_DEAD, NULL) == 0)
        enqueue(w, CK_DEAD_DIRS, 0, 0, LAYOUT_FORM_EITHER, path);
    /* claims exist only on a root at version 3 (and are recovered only while it is) */
    if (!w->census && w->dp->d->layout_version >= LAYOUT_VERSION_CLAIMS &&
        layout_queue_path(path, sizeof path, cfg->zk_root, w->qc->name, LAYOUT_CLAIMS, NULL) == 0)
        enqueue(w, CK_CLAIMS, 0, 0, LAYOUT_FORM_EITHER, path);
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
    if (grown)
        dp->walks = grown;
    struct walk **cgrown = grown ? realloc(dp->censuses, cfg->nqueues * sizeof *grown) : NULL;
    if (!cgrown)
        return -1;
    dp->censuses = cgrown;
    for (; dp->n < cfg->nqueues; dp->n++) {
        struct walk *w = calloc(1, sizeof *w), *c = calloc(1, sizeof *c);
        if (!w || !c) {
            free(w);
            free(c);
            return -1;
        }
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
            rnd = 0;
        uint64_t spread = cfg->depth_interval_ms ? cfg->depth_interval_ms : 1;
        *w = (struct walk){.dp = dp, .qc = cfg->queues[dp->n],
                           .first_at = units_mono_ms() + (int64_t)(rnd % spread)};
        *c = (struct walk){.dp = dp, .qc = cfg->queues[dp->n], .census = 1,
                           .first_at = w->first_at};
        dp->walks[dp->n] = w;
        dp->censuses[dp->n] = c;
    }
    return 0;
}

/* A second's reads for a census ([metrics] census_rate); a new pass when its time came. */
static void census_tick(struct walk *c, int64_t now)
{
    double rate = (double)c->dp->d->cfg->census_rate;
    int64_t every = (int64_t)c->dp->d->cfg->depth_interval_ms;
    if (rate <= 0 && c->active) { /* turned off by a reload: the pass is given up */
        c->errors++;
        drop_queued(c);
        pump(c);
        return;
    }
    c->tokens = c->tokens + rate > rate ? rate : c->tokens + rate;
    if (c->active) {
        pump(c);
        return;
    }
    int64_t due = c->started_mono ? c->started_mono + (every ? every : CENSUS_EVERY_MS)
                                  : c->first_at;
    if (rate > 0 && c->qc->format == QF_NATIVE && now >= due)
        start(c);
}

static void on_tick(void *arg)
{
    struct depth *dp = arg;
    int64_t interval = (int64_t)dp->d->cfg->depth_interval_ms, now = units_mono_ms();
    if (!zkstore_connected(dp->d->zs) || dp->d->drain || track_queues(dp) != 0)
        return;
    for (size_t i = 0; i < dp->n; i++) {
        struct walk *w = dp->walks[i];
        int64_t due = w->started_mono ? w->started_mono + interval : w->first_at;
        if (interval && !w->active && w->qc->format == QF_NATIVE && now >= due)
            start(w);
        census_tick(dp->censuses[i], now);
    }
}

struct depth *depth_new(struct deferd *d)
{
    struct depth *dp = calloc(1, sizeof *dp);
    if (!dp)
        return NULL;
    dp->d = d;
    dp->tick = periodic_new(d->base, TICK_MS, on_tick, dp);
    if (!dp->tick || periodic_start(dp->tick) != 0 || track_queues(dp) != 0) {
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
        struct walk *c = dp->censuses[i];
        drop_queued(dp->walks[i]); /* a refresh cut off at exit */
        free(dp->walks[i]);
        drop_queued(c);
        census_free(c->tally);
        census_free(c->done);
        free(c);
    }
    free(dp->walks);
    free(dp->censuses);
    periodic_free(dp->tick);
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

uint64_t depth_census_reads_total(const struct depth *dp) { return dp ? dp->census_reads : 0; }

int depth_census_of(const struct depth *dp, const char *queue, int64_t now,
                    struct depth_census *out)
{
    for (size_t i = 0; dp && i < dp->n; i++) {
        const struct walk *c = dp->censuses[i];
        if (strcmp(c->qc->name, queue) != 0 || !c->done)
            continue;
        out->began_ms = c->done_began_ms;
        out->total = census_total(c->done);
        out->day = census_between(c->done, now + DEPTH_HOUR_MS, now + DEPTH_DAY_MS);
        out->week = census_between(c->done, now + DEPTH_DAY_MS, now + DEPTH_WEEK_MS);
        out->later = census_between(c->done, now + DEPTH_WEEK_MS, INT64_MAX);
        return 0;
    }
    return -1;
}

int depth_census_bars(const struct depth *dp, const char *queue, int64_t now,
                      int64_t width_ms, size_t n, uint64_t *bars, int64_t *began_ms)
{
    for (size_t i = 0; dp && i < dp->n; i++) {
        const struct walk *c = dp->censuses[i];
        if (strcmp(c->qc->name, queue) != 0 || !c->done)
            continue;
        census_bars(c->done, now, width_ms, n, bars);
        *began_ms = c->done_began_ms;
        return 0;
    }
    return -1;
}
