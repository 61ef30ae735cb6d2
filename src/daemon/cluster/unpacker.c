#include "unpacker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buckets.h"
#include "config.h"
#include "daemon.h"
#include "layout.h"
#include "log.h"
#include "periodic.h"
#include "pack.h"
#include "strhash.h"
#include "unpack.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

#define TICK_MS 1000
#define UNPACKS_MAX 4           /* packs being unpacked at once */
#define PACKS_RELIST_MS 10000   /* a queue's packs/ that did not exist, looked at again */
#define PACKS_CHECK_MS 60000    /* and one that did, besides its watch */
#define DIR_GONE_MS 60000
#define UNPACK_AFTER_DEFAULT_MS 3600000       /* an empty packs/<L1> this long past its window: deleted */

struct pdir {                   /* packs/<L1> of one queue */
    UT_hash_handle hh;          /* u->dirs, key: path */
    char *path;
    size_t queue;
    uint64_t l1;
    int dirty, listing, seen;
    int64_t next_ms;            /* wall ms its next pack ripens; INT64_MAX when none */
};

struct qpacks {                 /* one queue's packs/ */
    int listing;
    int64_t relist_at;          /* wall ms: 0 when its watch fired */
};

struct noted {                  /* unreadable packs and foreign names, logged once */
    UT_hash_handle hh;
    char *path;
};

struct unpacker {
    struct deferd *d;
    struct periodic *tick;
    struct qpacks *queues;
    size_t nqueues;
    struct pdir *dirs;
    struct noted *busy;         /* packs being unpacked, by path */
    int nbusy;
    struct noted *noted;
    struct buckets *made;       /* job directories known to exist */
    struct unpacker_counts counts;
};

static void on_tick(void *arg);

struct unpacker *unpacker_new(struct deferd *d)
{
    struct unpacker *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->d = d;
    u->made = buckets_new(4096);
    u->tick = periodic_new(d->base, TICK_MS, on_tick, u);
    if (!u->made || !u->tick || periodic_start(u->tick) != 0) {
        unpacker_free(u);
        return NULL;
    }
    return u;
}

static void forget(struct noted **set, struct noted *n)
{
    HASH_DEL(*set, n);
    free(n->path);
    free(n);
}

static void forget_all(struct noted **set)
{
    struct noted *n, *tmp;
    HASH_ITER(hh, *set, n, tmp)
        forget(set, n);
}

static struct noted *find(struct noted *set, const char *path)
{
    struct noted *n;
    HASH_FIND_STR(set, path, n);
    return n;
}

static struct noted *remember(struct noted **set, const char *path)
{
    struct noted *n = calloc(1, sizeof *n);
    if (n && !(n->path = strdup(path))) {
        free(n);
        n = NULL;
    }
    if (n)
        HASH_ADD_KEYPTR(hh, *set, n->path, strlen(n->path), n);
    return n;
}

void unpacker_free(struct unpacker *u)
{
    if (!u)
        return;
    struct pdir *pd, *ptmp;
    HASH_ITER(hh, u->dirs, pd, ptmp) {
        HASH_DEL(u->dirs, pd);
        free(pd->path);
        free(pd);
    }
    forget_all(&u->busy); /* after the store's close: no call is in flight */
    forget_all(&u->noted);
    periodic_free(u->tick);
    buckets_free(u->made);
    free(u->queues);
    free(u);
}

void unpacker_counts(const struct unpacker *u, struct unpacker_counts *out) { *out = u->counts; }

/* Foreign names and unreadable packs are logged once and left alone. */
static void note_once(struct unpacker *u, const char *path, const char *why)
{
    if (find(u->noted, path) || !remember(&u->noted, path))
        return;
    u->counts.unreadable++;
    log_warn("ignoring %s: %s (never unpacked, never deleted)", path, why);
}

/* Every daemon of a native queue unpacks, whether it packs itself or not. */
static const struct queue_config *native_queue(const struct unpacker *u, size_t i)
{
    const struct queue_config *qc = i < u->d->cfg->nqueues ? u->d->cfg->queues[i] : NULL;
    return qc && qc->format == QF_NATIVE ? qc : NULL;
}

/* When a window's pack is unpacked: pack_after before it (the default for a queue that
 * does not pack itself). */
static int64_t ripens_at(const struct queue_config *qc, uint64_t start_ms)
{
    return (int64_t)start_ms - (int64_t)(qc->pack_after_ms ? qc->pack_after_ms
                                                           : UNPACK_AFTER_DEFAULT_MS);
}

void unpacker_session_up(struct unpacker *u)
{
    for (size_t i = 0; i < u->nqueues; i++)
        u->queues[i].relist_at = 0;
    struct pdir *pd, *tmp;
    HASH_ITER(hh, u->dirs, pd, tmp)
        pd->dirty = 1;
}


/* ---- a queue's packs/: its L1 directories ---- */

/* DIR/NAME into BUF; -1 when it is longer than any path of the layout. */
static int join(char *buf, const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    if (a + 1 + b >= LAYOUT_PATH_MAX)
        return -1;
    memcpy(buf, dir, a);
    buf[a] = '/';
    memcpy(buf + a + 1, name, b + 1);
    return 0;
}

struct call {
    struct unpacker *u;
    size_t queue;
    char path[LAYOUT_PATH_MAX];
};

static struct call *call_new(struct unpacker *u, size_t queue, const char *path)
{
    struct call *c = malloc(sizeof *c);
    if (c) {
        c->u = u;
        c->queue = queue;
        snprintf(c->path, sizeof c->path, "%s", path);
    }
    return c;
}

static struct pdir *dir_of(struct unpacker *u, size_t queue, const char *path, uint64_t l1)
{
    struct pdir *pd;
    HASH_FIND_STR(u->dirs, path, pd);
    if (pd || !(pd = calloc(1, sizeof *pd)) || !(pd->path = strdup(path))) {
        if (pd && !pd->path)
            free(pd);
        return pd && pd->path ? pd : NULL;
    }
    pd->queue = queue;
    pd->l1 = l1;
    pd->dirty = 1;
    pd->next_ms = INT64_MAX;
    HASH_ADD_KEYPTR(hh, u->dirs, pd->path, strlen(pd->path), pd);
    return pd;
}

static void on_packs_listed(const struct zk_result *res, void *ctx)
{
    struct call *c = ctx;
    struct unpacker *u = c->u;
    struct qpacks *qp = c->queue < u->nqueues ? &u->queues[c->queue] : NULL;
    char path[LAYOUT_PATH_MAX];
    uint64_t l1;
    if (qp) { /* a watch tells of changes; NoNode sets none: looked at again later */
        qp->listing = 0;
        qp->relist_at = cluster_now_ms() + (res->rc == ZOK       ? PACKS_CHECK_MS
                                           : res->rc == ZNONODE ? PACKS_RELIST_MS
                                                                : TICK_MS);
    }
    for (int i = 0; qp && res->rc == ZOK && i < res->nchildren; i++) {
        if (join(path, c->path, res->children[i]) != 0)
            continue;
        if (layout_parse_bucket(res->children[i], 1, 0, &l1) < 0)
            note_once(u, path, "not a window directory of packs/");
        else
            dir_of(u, c->queue, path, l1);
    }
    free(c);
}

static void list_packs(struct unpacker *u, size_t i, const struct queue_config *qc)
{
    char path[LAYOUT_PATH_MAX];
    struct call *c;
    if (layout_packs_path(path, sizeof path, u->d->cfg->zk_root, qc->name) != 0 ||
        !(c = call_new(u, i, path)))
        return;
    u->queues[i].listing = 1;
    if (zkstore_children(u->d->zs, path, 1, on_packs_listed, c) != ZOK) {
        u->queues[i].listing = 0;
        free(c);
    }
}

/* ---- packs/<L1>: its packs ---- */

static void on_unpacked(void *ctx, const char *path, enum unpack_outcome outcome,
                        unsigned jobs, const char *why)
{
    struct unpacker *u = ctx;
    struct noted *n = find(u->busy, path);
    if (n)
        forget(&u->busy, n);
    u->nbusy--;
    if (outcome == UNPACK_DONE) {
        u->counts.packs++;
        u->counts.jobs += jobs;
    } else if (outcome == UNPACK_GONE) {
        u->counts.lost_races++;
    } else if (outcome == UNPACK_UNREADABLE) {
        note_once(u, path, why);
    } else {
        log_warn("unpacking %s failed: %s; trying again", path, why);
    }
    /* the directory's listing shows what is left (a failed pack is tried at the next tick) */
    char dir[LAYOUT_PATH_MAX];
    struct pdir *pd;
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    HASH_FIND_STR(u->dirs, dir, pd);
    if (pd && outcome == UNPACK_FAILED)
        pd->dirty = 1;
}

/* A pack of the listing: unpacked now if ripe, else its time is remembered. */
static void consider(struct unpacker *u, struct pdir *pd, const struct queue_config *qc,
                     const char *name, int64_t now)
{
    char path[LAYOUT_PATH_MAX];
    struct pack_name pn;
    if (join(path, pd->path, name) != 0)
        return;
    if (layout_parse_pack_name(name, &pn) != 0 || layout_bucket_of(pn.start_ms, 1) != pd->l1) {
        note_once(u, path, "not a pack name of this window directory");
        return;
    }
    if (find(u->noted, path) || find(u->busy, path))
        return;
    if (ripens_at(qc, pn.start_ms) > now) {
        if (ripens_at(qc, pn.start_ms) < pd->next_ms)
            pd->next_ms = ripens_at(qc, pn.start_ms);
        return;
    }
    if (u->nbusy >= UNPACKS_MAX) {
        pd->dirty = 1; /* the next tick lists it again */
        return;
    }
    if (!remember(&u->busy, path))
        return;
    u->nbusy++;
    if (unpack_start(u->d, u->made, qc->name, path, &pn, on_unpacked, u) != ZOK) {
        forget(&u->busy, find(u->busy, path));
        u->nbusy--;
        pd->dirty = 1;
    }
}

static void on_dir_deleted(const struct zk_result *res, void *ctx)
{
    (void)res; /* NotEmpty: a pack came meanwhile, and the next listing shows it */
    (void)ctx;
}

/* Empty long after its window: no put goes there any more. */
static void drop_dir(struct unpacker *u, struct pdir *pd, const struct queue_config *qc,
                     int64_t now)
{
    int64_t end = (int64_t)((pd->l1 + 1) * layout_bucket_width[1]);
    if (ripens_at(qc, (uint64_t)end) + DIR_GONE_MS > now)
        return;
    zkstore_delete(u->d->zs, pd->path, -1, on_dir_deleted, NULL);
    HASH_DEL(u->dirs, pd);
    free(pd->path);
    free(pd);
}

static void on_dir_listed(const struct zk_result *res, void *ctx)
{
    struct call *c = ctx;
    struct unpacker *u = c->u;
    struct pdir *pd;
    const struct queue_config *qc = native_queue(u, c->queue);
    int64_t now = cluster_now_ms();
    HASH_FIND_STR(u->dirs, c->path, pd);
    free(c);
    if (!pd)
        return;
    pd->listing = 0;
    if (res->rc == ZNONODE || !qc) {
        HASH_DEL(u->dirs, pd);
        free(pd->path);
        free(pd);
        return;
    }
    pd->dirty = res->rc != ZOK;
    pd->next_ms = INT64_MAX;
    for (int i = 0; res->rc == ZOK && i < res->nchildren; i++)
        consider(u, pd, qc, res->children[i], now);
    if (res->rc == ZOK && res->nchildren == 0)
        drop_dir(u, pd, qc, now);
}

static void list_dir(struct unpacker *u, struct pdir *pd)
{
    struct call *c = call_new(u, pd->queue, pd->path);
    if (!c)
        return;
    pd->listing = 1;
    pd->dirty = 0;
    if (zkstore_children(u->d->zs, pd->path, 1, on_dir_listed, c) != ZOK) {
        pd->listing = 0;
        pd->dirty = 1;
        free(c);
    }
}

/* ---- the tick ---- */

static int grow_queues(struct unpacker *u)
{
    size_t n = u->d->cfg->nqueues;
    if (n <= u->nqueues)
        return 0;
    struct qpacks *grown = realloc(u->queues, n * sizeof *grown);
    if (!grown)
        return -1;
    for (size_t i = u->nqueues; i < n; i++)
        grown[i] = (struct qpacks){0};
    u->queues = grown;
    u->nqueues = n;
    return 0;
}

static void on_tick(void *arg)
{
    struct unpacker *u = arg;
    int64_t now = cluster_now_ms();
    if (!zkstore_connected(u->d->zs) || grow_queues(u) != 0)
        return;
    for (size_t i = 0; i < u->nqueues; i++) {
        const struct queue_config *qc = native_queue(u, i);
        struct qpacks *qp = &u->queues[i];
        if (qc && !qp->listing && qp->relist_at <= now)
            list_packs(u, i, qc);
    }
    struct pdir *pd, *tmp;
    HASH_ITER(hh, u->dirs, pd, tmp) {
        const struct queue_config *qc = native_queue(u, pd->queue);
        if (!qc || pd->listing ||
            ripens_at(qc, pd->l1 * layout_bucket_width[1]) > now)
            continue;
        if (pd->dirty || pd->next_ms <= now)
            list_dir(u, pd);
    }
}

int unpacker_on_watch(struct unpacker *u, const char *path)
{
    struct pdir *pd;
    HASH_FIND_STR(u->dirs, path, pd);
    if (pd) {
        pd->dirty = 1;
        return 1;
    }
    char mine[LAYOUT_PATH_MAX];
    for (size_t i = 0; i < u->nqueues; i++) {
        const struct queue_config *qc = native_queue(u, i);
        if (qc && layout_packs_path(mine, sizeof mine, u->d->cfg->zk_root, qc->name) == 0 &&
            strcmp(mine, path) == 0) {
            u->queues[i].relist_at = 0;
            return 1;
        }
    }
    return 0;
}
