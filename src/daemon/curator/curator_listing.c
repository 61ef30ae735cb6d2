/* Listings of a Curator queue's directory and of its lock directory, with watches: items
 * appear as head jobs (ordered as Curator orders them), vanish when deleted, and wait while
 * someone else's lock exists. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "curator_listing.h"
#include "curator_int.h"
#include "daemon.h"
#include "dispatcher.h"
#include "dispatcher_jobs.h"
#include "jobs.h"
#include "log.h"
#include "units.h"
#include "zkstore.h"

/* A getChildren answer must fit ZooKeeper's 1 MB packet (jute.maxbuffer); a bigger one
 * makes the client drop the connection, for every queue of the daemon. Curator delay names
 * take about 33 bytes on the wire, so a queue is listed only below this many children
 * (docs/curator-compat.md). Above it, deferd says so and looks again every few seconds. */
#define CURATOR_LIST_MAX 30000
#define CURATOR_TOO_BIG_RETRY_MS 5000

struct listing {
    struct cqueue *cq;
    unsigned token;
    int locks;
};

/* ---- the head job: ordering as Curator orders ---- */


static int64_t due_of(const struct citem *ci)
{
    return ci->cq->q->cfg->format == QF_CURATOR_DELAY && ci->cn.epoch_ms > 0 ? ci->cn.epoch_ms
                                                                              : 0;
}

static int lock_seen(const struct cqueue *cq, const char *name)
{
    struct lockname *ln;
    HASH_FIND_STR(cq->locks, name, ln);
    return ln != NULL;
}

static void make_head(struct cqueue *cq, struct citem *ci)
{
    struct dispatcher *ds = cq->ds;
    char path[ITEM_PATH_MAX], id[LAYOUT_ID_MAX + 1];
    struct job_name jn = {.due_ms = (uint64_t)due_of(ci), .priority = curator_item_order_key(ci)};
    int n = snprintf(id, sizeof id, "%s/%s", cq->q->cfg->name, ci->name);
    struct job *job = NULL;
    if (n > 0 && (size_t)n < sizeof id && curator_item_path(ci, path, sizeof path) == 0) {
        struct job_key k;
        job_key_make(&k, path);
        job = job_find_key(ds, &k);
        if (job) { /* a job of the last session, its call still on the way: after it */
            cq->blocked = 1;
            return;
        }
        job = job_new(ds, cq->q, &k, id, &jn);
    }
    if (!job) {
        log_warn("queue %s: Curator item %s: name too long or out of memory; skipped",
                 cq->q->cfg->name, ci->name);
        ci->skipped = 1;
        return;
    }
    job->ci = ci;
    ci->head = job;
    ci->refs++;
    if (!lock_seen(cq, ci->name))
        dispatcher_place(ds, job, due_of(ci)); /* else HELD until its lock goes */
}

static void add_item(struct cqueue *cq, const char *name)
{
    struct citem *ci = calloc(1, sizeof *ci);
    if (!ci || !(ci->name = strdup(name))) {
        free(ci);
        log_error("queue %s: out of memory for Curator item %s", cq->q->cfg->name, name);
        return;
    }
    ci->cq = cq;
    ci->refs = ci->listed = 1;
    ci->next = cq->all;
    if (cq->all)
        cq->all->prev = ci;
    cq->all = ci;
    cq->live++;
    ci->gen = cq->gen;
    HASH_ADD_KEYPTR(hh, cq->items, ci->name, strlen(ci->name), ci);
    if (curator_parse_name(curator_consume_kind(cq->q), name, &ci->cn) != 0) {
        ci->skipped = 1; /* as Curator does; said once, not on every listing */
        log_warn("queue %s: foreign node %s/%s in the Curator queue: skipped and left in place",
                 cq->q->cfg->name, cq->q->cfg->curator_path, name);
        return;
    }
    make_head(cq, ci);
}

static void vanished(struct dispatcher *ds, struct citem *ci)
{
    struct job *head = ci->head;
    ci->refs++;
    curator_item_forget(ci);
    if (head)
        dispatcher_job_vanished(ds, head); /* a call in flight decides for itself */
    curator_item_put(ci);
}


/* ---- listings of the queue and of its locks ---- */


static void on_retry_lists(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct cqueue *cq = arg;
    if (!cq->started)
        return;
    curator_listing_request(cq, 0);
    curator_listing_request(cq, 1);
}

static void retry_lists_in(struct cqueue *cq, int ms)
{
    const struct timeval tv = units_ms_timeval(ms);
    evtimer_add(cq->retry, &tv);
}

static void retry_lists(struct cqueue *cq) { retry_lists_in(cq, ZK_RETRY_MS); }

static void sync_items(struct cqueue *cq, const struct zk_result *res)
{
    struct dispatcher *ds = cq->ds;
    struct citem *ci, *tmp;
    cq->gen++;
    for (int i = 0; i < res->nchildren; i++) {
        HASH_FIND_STR(cq->items, res->children[i], ci);
        if (!ci) {
            add_item(cq, res->children[i]);
            continue;
        }
        ci->gen = cq->gen;
        if (!ci->head && !ci->locked && !ci->skipped)
            make_head(cq, ci); /* its job was dropped while the item stayed (or waited) */
    }
    HASH_ITER(hh, cq->items, ci, tmp) {
        if (ci->gen != cq->gen)
            vanished(ds, ci);
    }
    dispatcher_kick_soon(ds, cq->q);
}

void curator_listing_free_locks(struct cqueue *cq)
{
    struct lockname *ln, *tmp;
    HASH_ITER(hh, cq->locks, ln, tmp) {
        HASH_DEL(cq->locks, ln);
        free(ln);
    }
}

/* Items whose lock went away (an orphan of a dead consumer, or a consumer that gave the
 * item back) are ready again; items newly locked by others wait without trying. */
static void sync_locks(struct cqueue *cq, const struct zk_result *res)
{
    struct dispatcher *ds = cq->ds;
    curator_listing_free_locks(cq);
    for (int i = 0; i < res->nchildren; i++) {
        size_t n = strlen(res->children[i]) + 1;
        struct lockname *ln = malloc(sizeof *ln + n);
        if (!ln)
            break;
        memcpy(ln->name, res->children[i], n);
        HASH_ADD_STR(cq->locks, name, ln);
    }
    struct citem *ci, *tmp;
    HASH_ITER(hh, cq->items, ci, tmp) {
        struct job *job = ci->head;
        if (!job)
            continue;
        int held = lock_seen(cq, ci->name);
        if (job->state == JS_HELD && !held)
            dispatcher_place(ds, job, due_of(ci));
        else if ((job->state == JS_DELAYED || job->state == JS_READY) && held)
            job_transition(job, JE_PARK);
    }
    dispatcher_kick_soon(ds, cq->q);
}

static const char *dir_of(const struct cqueue *cq, int locks)
{
    return locks ? cq->q->cfg->curator_lock_path : cq->q->cfg->curator_path;
}

static void on_dir_made(const struct zk_result *res, void *ctx)
{
    struct listing *l = ctx;
    struct cqueue *cq = l->cq;
    int locks = l->locks, stale = l->token != cq->token;
    free(l);
    if (stale)
        return;
    *(locks ? &cq->lock_listing : &cq->listing) = 0;
    if (res->rc != ZOK) { /* res->path: the deepest level that could not be made */
        if (res->rc == ZNOAUTH)
            queue_denied(cq->q, res->path);
        else
            log_warn("queue %s: cannot create %s: %s", cq->q->cfg->name, res->path,
                     zk_strerror(res->rc));
        retry_lists(cq);
        return;
    }
    curator_listing_request(cq, locks);
}

/* Curator's start() creates the queue and lock directories; a consumer here does too. */
static int make_dir(struct cqueue *cq, struct listing *l)
{
    char child[CURATOR_PATH_MAX + 4];
    snprintf(child, sizeof child, "%s/x", dir_of(cq, l->locks));
    return zkstore_create_parents(dispatcher_deferd(cq->ds)->zs, child, on_dir_made, l);
}

static void on_listed(const struct zk_result *res, void *ctx)
{
    struct listing *l = ctx;
    struct cqueue *cq = l->cq;
    int locks = l->locks;
    if (l->token != cq->token) {
        free(l);
        return;
    }
    int *again = locks ? &cq->lock_relist : &cq->relist;
    *(locks ? &cq->lock_listing : &cq->listing) = 0;
    if (res->rc == ZNONODE && make_dir(cq, l) == ZOK) {
        *(locks ? &cq->lock_listing : &cq->listing) = 1; /* until the listing after it */
        return;
    }
    free(l);
    if (res->rc == ZOK) {
        if (locks) {
            sync_locks(cq, res);
        } else {
            cq->too_big = 0;
            sync_items(cq, res);
        }
    } else {
        if (res->rc == ZNOAUTH)
            queue_denied(cq->q, dir_of(cq, locks));
        else
            log_warn("queue %s: listing %s failed: %s; retrying in %d ms", cq->q->cfg->name,
                     dir_of(cq, locks), zk_strerror(res->rc), ZK_RETRY_MS);
        retry_lists(cq);
    }
    if (*again) {
        *again = 0;
        curator_listing_request(cq, locks);
    }
}

/* The directory's size first: a listing too big for ZooKeeper's packet is not asked for. */
static void on_sized(const struct zk_result *res, void *ctx)
{
    struct listing *l = ctx;
    struct cqueue *cq = l->cq;
    int locks = l->locks, fits = res->rc == ZOK && res->stat.numChildren <= CURATOR_LIST_MAX;
    if (l->token == cq->token && res->rc == ZOK && !fits) {
        if (!cq->too_big)
            log_error("queue %s: %s has %d children, more than one ZooKeeper reply can carry "
                      "(deferd lists at most %d): not consuming it until it shrinks",
                      cq->q->cfg->name, dir_of(cq, locks), res->stat.numChildren,
                      CURATOR_LIST_MAX);
        cq->too_big = 1;
        *(locks ? &cq->lock_listing : &cq->listing) = 0;
        free(l);
        retry_lists_in(cq, CURATOR_TOO_BIG_RETRY_MS);
        return;
    }
    if (fits && zkstore_children(dispatcher_deferd(cq->ds)->zs, dir_of(cq, locks), 1, on_listed, l) == ZOK)
        return;
    struct zk_result failed = {.rc = fits ? ZCONNECTIONLOSS : res->rc};
    on_listed(&failed, l); /* stale, missing directory or error: as a failed listing */
}

/* One listing at a time per directory: changes during it are covered by one more. */
void curator_listing_request(struct cqueue *cq, int locks)
{
    int *busy = locks ? &cq->lock_listing : &cq->listing;
    if (*busy) {
        *(locks ? &cq->lock_relist : &cq->relist) = 1;
        return;
    }
    struct listing *l = malloc(sizeof *l);
    if (!l) {
        retry_lists(cq);
        return;
    }
    *l = (struct listing){.cq = cq, .token = cq->token, .locks = locks};
    *busy = 1;
    int rc = zkstore_exists(dispatcher_deferd(cq->ds)->zs, dir_of(cq, locks), 0, on_sized, l);
    if (rc != ZOK) {
        free(l);
        *busy = 0;
        retry_lists(cq);
    }
}

int curator_listing_start(struct dispatcher *ds, struct dqueue *q)
{
    struct cqueue *cq = q->cq;
    if (!cq) {
        if (!(cq = calloc(1, sizeof *cq)))
            return -1;
        cq->ds = ds;
        cq->q = q;
        if (!(cq->retry = evtimer_new(dispatcher_deferd(ds)->base, on_retry_lists, cq))) {
            free(cq);
            return -1;
        }
        q->cq = cq;
    }
    if (cq->started || !zkstore_connected(dispatcher_deferd(ds)->zs))
        return 0;
    cq->started = 1;
    curator_listing_request(cq, 1); /* locks first: the items' listing then knows which are held */
    curator_listing_request(cq, 0);
    return 0;
}

int curator_listing_on_watch(struct dispatcher *ds, const char *path)
{
    for (size_t i = 0; i < dispatcher_nqueues(ds); i++) {
        struct cqueue *cq = dispatcher_queue_at(ds, i)->cq;
        if (!cq || !cq->started)
            continue;
        for (int locks = 0; locks < 2; locks++) {
            if (strcmp(path, dir_of(cq, locks)) == 0) {
                curator_listing_request(cq, locks);
                return 1;
            }
        }
    }
    return 0;
}

