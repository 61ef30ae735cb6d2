#include "rate.h"

#include <event2/event.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster_time.h"
#include "config.h"
#include "daemon.h"
#include "job.h"
#include "log.h"
#include "queue.h"
#include "units.h"

#define READS_MAX 32 /* slot stats read at once */

enum rslot_state {
    RS_UNKNOWN, /* not read yet, or changed by someone since */
    RS_READING, /* its exists() is on the way */
    RS_MISSING, /* no node: the next start creates it */
    RS_KNOWN,   /* version and mtime as last read or written */
};

struct rslot {
    unsigned char state, busy; /* busy: in one of our lock multis */
    int32_t version;
    int64_t mtime;             /* ms on ZooKeeper's clock (ours: an upper bound) */
};

struct rate {
    struct dqueue *q;
    void (*wake)(struct dqueue *q);
    struct rslot *slots;
    uint32_t cap, n, cursor;
    int next;                  /* the slot rate_room found, or -1 */
    int reads;                 /* exists() in flight */
    int listing, listed;       /* the slots directory: being listed, listed once */
    int waiting;               /* the last rate_room found none */
    struct event *timer;
    struct rate_stats st;
};

struct rate *rate_new(struct dqueue *q, void (*wake)(struct dqueue *q))
{
    struct rate *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->q = q;
    r->wake = wake;
    r->next = -1;
    return r;
}

void rate_free(struct rate *r)
{
    if (!r)
        return;
    if (r->timer)
        event_free(r->timer);
    free(r->slots);
    free(r);
}

static int slot_path(const struct rate *r, uint32_t i, char *path)
{
    char name[16];
    snprintf(name, sizeof name, "r-%u", (unsigned)i);
    return layout_queue_path(path, LAYOUT_PATH_MAX, r->q->d->cfg->zk_root, r->q->cfg->name,
                             LAYOUT_SLOTS, i == UINT32_MAX ? NULL : name);
}

/* Follows a reload: more slots start unknown; fewer are no longer used. */
static int follow_config(struct rate *r)
{
    uint32_t n = r->q->cfg->rate_n;
    if (n > r->cap) {
        struct rslot *s = realloc(r->slots, n * sizeof *s);
        if (!s)
            return -1;
        memset(s + r->cap, 0, (n - r->cap) * sizeof *s);
        r->slots = s;
        r->cap = n;
    }
    r->n = n;
    if (r->cursor >= n)
        r->cursor = 0;
    return 0;
}

struct slot_read {
    struct rate *r;
    uint32_t i;
};

static void on_read(const struct zk_result *res, void *ctx)
{
    struct slot_read *sr = ctx;
    struct rate *r = sr->r;
    struct rslot *s = sr->i < r->cap ? &r->slots[sr->i] : NULL;
    r->reads--;
    free(sr);
    if (res->rc == ZCLOSING || !s)
        return;
    if (res->rc == ZOK && res->has_stat) {
        *s = (struct rslot){.state = RS_KNOWN, .busy = s->busy, .version = res->stat.version,
                            .mtime = res->stat.mtime};
    } else if (res->rc == ZNONODE) {
        s->state = RS_MISSING;
    } else {
        s->state = RS_UNKNOWN;
        log_warn("queue %s: reading a rate slot failed: %s", r->q->cfg->name,
                 zk_strerror(res->rc));
        return; /* the next dispatch reads again */
    }
    r->wake(r->q);
}

/* Names not in the listing are slots never started: no need to read them one by one. */
static void on_listed(const struct zk_result *res, void *ctx)
{
    struct rate *r = ctx;
    r->listing = 0;
    if (res->rc == ZCLOSING || (res->rc != ZOK && res->rc != ZNONODE))
        return; /* read one by one instead */
    r->listed = 1;
    unsigned char *seen = calloc(r->cap ? r->cap : 1, 1);
    if (!seen)
        return;
    for (int k = 0; res->rc == ZOK && k < res->nchildren; k++) {
        char *end;
        const char *name = res->children[k];
        unsigned long i = name[0] == 'r' && name[1] == '-' ? strtoul(name + 2, &end, 10) : ULONG_MAX;
        if (i < r->cap && !*end)
            seen[i] = 1;
    }
    for (uint32_t i = 0; i < r->cap; i++)
        if (r->slots[i].state == RS_UNKNOWN && !seen[i])
            r->slots[i].state = RS_MISSING;
    free(seen);
    r->wake(r->q);
}

static void read_unknown(struct rate *r)
{
    char dir[LAYOUT_PATH_MAX];
    if (!r->listed && r->n > READS_MAX) { /* many unknown at first use: one listing first */
        if (!r->listing && slot_path(r, UINT32_MAX, dir) == 0 &&
            zkstore_children(r->q->d->zs, dir, 0, on_listed, r) == ZOK) {
            r->listing = 1;
            r->st.reads++;
        }
        if (r->listing)
            return;
    }
    for (uint32_t i = 0; i < r->n && r->reads < READS_MAX; i++) {
        struct rslot *s = &r->slots[i];
        char path[LAYOUT_PATH_MAX];
        struct slot_read *sr;
        if (s->state != RS_UNKNOWN || s->busy || slot_path(r, i, path) != 0 ||
            !(sr = malloc(sizeof *sr)))
            continue;
        *sr = (struct slot_read){r, i};
        if (zkstore_exists(r->q->d->zs, path, 0, on_read, sr) != ZOK) {
            free(sr);
            return;
        }
        s->state = RS_READING;
        r->reads++;
        r->st.reads++;
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct rate *r = arg;
    r->wake(r->q);
}

/* Every known slot is within its window: wake when the first comes out of it. */
static void arm(struct rate *r, int64_t now)
{
    int64_t first = INT64_MAX;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->slots[i].state == RS_KNOWN && !r->slots[i].busy &&
            r->slots[i].mtime + (int64_t)r->q->cfg->rate_window_ms < first)
            first = r->slots[i].mtime + (int64_t)r->q->cfg->rate_window_ms;
    if (first == INT64_MAX)
        return; /* reads or our own multis will wake it */
    if (!r->timer && !(r->timer = evtimer_new(r->q->d->base, on_timer, r)))
        return;
    struct timeval tv = units_ms_timeval(first > now ? first - now + 1 : 1);
    evtimer_add(r->timer, &tv);
}

static int startable(const struct rate *r, const struct rslot *s, int64_t now)
{
    return !s->busy && (s->state == RS_MISSING ||
                        (s->state == RS_KNOWN &&
                         s->mtime + (int64_t)r->q->cfg->rate_window_ms <= now));
}

int rate_room(struct rate *r)
{
    if (!r || follow_config(r) != 0 || !r->n)
        return 1;
    int64_t now = cluster_now_ms(); /* ZooKeeper's clock reads this or later */
    for (uint32_t k = 0; k < r->n; k++) {
        uint32_t i = (r->cursor + k) % r->n;
        if (startable(r, &r->slots[i], now)) {
            r->next = (int)i;
            r->waiting = 0;
            return 1;
        }
    }
    r->next = -1;
    r->st.waits += !r->waiting;
    r->waiting = 1;
    read_unknown(r);
    arm(r, now);
    return 0;
}

int rate_take(struct rate *r, struct job *job, struct zk_txn_op *op, char *path)
{
    if (!r || !r->n)
        return 0;
    int64_t now = cluster_now_ms();
    if (r->next < 0 || (uint32_t)r->next >= r->n || !startable(r, &r->slots[r->next], now)) {
        if (!rate_room(r))
            return -1;
    }
    uint32_t i = (uint32_t)r->next;
    struct rslot *s = &r->slots[i];
    if (slot_path(r, i, path) != 0)
        return -1;
    r->next = -1;
    r->cursor = (i + 1) % r->n;
    s->busy = 1;
    job->rslot = (int32_t)i;
    if (s->state == RS_MISSING)
        *op = (struct zk_txn_op){.kind = ZT_CREATE, .path = path, .data = job->id,
                                 .len = strlen(job->id)};
    else
        *op = (struct zk_txn_op){.kind = ZT_SET, .path = path, .data = job->id,
                                 .len = strlen(job->id), .version = s->version};
    return 1;
}

static void on_dir_made(const struct zk_result *res, void *ctx)
{
    struct rate *r = ctx;
    if (res->rc != ZCLOSING)
        r->wake(r->q);
}

int rate_locked(struct rate *r, struct job *job, int rc, int failed_op, int op)
{
    if (!r || job->rslot == RATE_NO_SLOT || (uint32_t)job->rslot >= r->cap) {
        job->rslot = RATE_NO_SLOT;
        return 0;
    }
    struct rslot *s = &r->slots[job->rslot];
    job->rslot = RATE_NO_SLOT;
    s->busy = 0;
    if (rc == ZOK) { /* started now: its mtime is at most the cluster clock's upper bound */
        s->version = s->state == RS_MISSING ? 0 : s->version + 1;
        s->state = RS_KNOWN;
        s->mtime = cluster_latest_ms();
        return 0;
    }
    if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT) {
        s->state = RS_UNKNOWN; /* it may have started */
        return 0;
    }
    if (failed_op != op)
        return 0; /* rolled back: the slot is as it was */
    char dir[LAYOUT_PATH_MAX];
    if (rc == ZNONODE && s->state == RS_MISSING && slot_path(r, UINT32_MAX, dir) == 0 &&
        zkstore_create(r->q->d->zs, dir, NULL, 0, 0, on_dir_made, r) == ZOK)
        return 1; /* the directory is missing: made, then the job tries again */
    r->st.conflicts += rc == ZBADVERSION || rc == ZNODEEXISTS;
    s->state = RS_UNKNOWN; /* started by another daemon (or deleted): read it again */
    return 1;
}

void rate_get_stats(const struct rate *r, struct rate_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    *out = r->st;
    out->n = r->q->cfg->rate_n;
    out->window_ms = r->q->cfg->rate_window_ms;
    int64_t now = cluster_now_ms();
    out->started = 0;
    for (uint32_t i = 0; i < r->n; i++)
        out->started += r->slots[i].state == RS_KNOWN &&
                        r->slots[i].mtime + (int64_t)out->window_ms > now;
}
