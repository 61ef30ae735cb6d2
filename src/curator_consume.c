#include "curator_consume.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "config.h"
#include "curator.h"
#include "daemon.h"
#include "dispatcher_int.h"
#include "log.h"
#include "server.h"
#include "txnbatch.h"
#include "units.h"
#include "zkstore.h"

#define CURATOR_RETRY_MS 1000
/* A getChildren answer must fit ZooKeeper's 1 MB packet (jute.maxbuffer); a bigger one
 * makes the client drop the connection, for every queue of the daemon. Curator delay names
 * take about 33 bytes on the wire, so a queue is listed only below this many children
 * (docs/curator-compat.md). Above it, deferd says so and looks again every few seconds. */
#define CURATOR_LIST_MAX 30000
#define CURATOR_TOO_BIG_RETRY_MS 5000
#define ITEM_PATH_MAX (CURATOR_PATH_MAX + 256)

enum verdict { V_OPEN, V_ACK, V_NACK, V_DEAD };

/* One item node: one frame of one or more parts. Until it is locked a single job (the
 * head) stands for it in the heaps; once locked, each part is a job of its own, and the
 * item is settled (deleted, with a requeue of nacked parts) when every part has a verdict.
 * Freed when no listing, job or call refers to it any more. */
struct citem {
    UT_hash_handle hh;          /* cqueue->items, key: name */
    struct cqueue *cq;
    char *name;
    struct curator_name cn;
    unsigned gen;               /* last listing that showed it */
    int refs;                   /* the listing, jobs and calls in flight */
    int listed;
    int skipped;                /* a foreign name or an undecodable frame: left alone */
    int locked;                 /* we hold lockPath/<name> */
    int64_t lock_session;
    struct job *head;
    unsigned char *data;        /* the frame, read just before locking */
    size_t len;
    int32_t version;            /* of the data read; the lock bumps it (attempts) */
    uint32_t attempt;
    struct curator_item *items;
    size_t nparts, open;
    struct job **parts;
    unsigned char *verdict;
    uint64_t nack_delay_ms;
    int has_nack_delay;
    struct reply *reply;        /* the last verdict's, answered once the item is settled */
    char *dead_path;
    int made_parents;
    struct event *retry;
};

struct lockname {
    UT_hash_handle hh;
    char name[];
};

struct cqueue {
    struct dispatcher *ds;
    struct dqueue *q;
    struct citem *items;
    struct lockname *locks;     /* names in lockPath at its last listing */
    unsigned gen, token;        /* token: listings of an older session are ignored */
    int started, listing, relist, lock_listing, lock_relist;
    int too_big;                /* said that the queue is too big to list */
    struct event *retry;
};

struct listing {
    struct cqueue *cq;
    unsigned token;
    int locks;
};

static enum curator_kind kind_of(const struct dqueue *q)
{
    return q->cfg->format == QF_CURATOR_DELAY ? CURATOR_DELAY : CURATOR_PRIORITY;
}

static int item_path(const struct citem *ci, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s", ci->cq->q->cfg->curator_path, ci->name);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

static int lock_path_of(const struct citem *ci, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s", ci->cq->q->cfg->curator_lock_path, ci->name);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

static void ci_put(struct citem *ci)
{
    if (--ci->refs > 0)
        return;
    if (ci->retry)
        event_free(ci->retry);
    free(ci->name);
    free(ci->data);
    free(ci->items);
    free(ci->parts);
    free(ci->verdict);
    free(ci->dead_path);
    free(ci);
}

static void forget(struct citem *ci)
{
    if (!ci->listed)
        return;
    HASH_DEL(ci->cq->items, ci);
    ci->listed = 0;
    ci_put(ci);
}

static void drop_frame(struct citem *ci)
{
    free(ci->data);
    free(ci->items);
    ci->data = NULL;
    ci->items = NULL;
}

/* ---- the head job: ordering as Curator orders ---- */

/* Curator's priority order is the signed order of the name's number; the ready heap takes
 * lower numbers first, so the sign bit is flipped. Names without a readable priority (a
 * Curator requeue: "queue-<seq>") sort before every priority in Curator, so here too. */
static uint32_t order_key(const struct citem *ci)
{
    if (ci->cq->q->cfg->format == QF_CURATOR_DELAY)
        return ci->cq->q->cfg->priority;
    return ci->cn.has_priority ? (uint32_t)ci->cn.priority ^ 0x80000000u : 0;
}

uint32_t curator_job_priority(const struct job *job)
{
    if (job->q->cfg->format == QF_CURATOR_DELAY)
        return job->jn.priority;
    int32_t p = (int32_t)(job->jn.priority ^ 0x80000000u);
    return p < 0 ? 0 : (uint32_t)p;
}

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
    struct job_name jn = {.due_ms = (uint64_t)due_of(ci), .priority = order_key(ci)};
    int n = snprintf(id, sizeof id, "%s/%s", cq->q->cfg->name, ci->name);
    struct job *job = NULL;
    if (n > 0 && (size_t)n < sizeof id && item_path(ci, path, sizeof path) == 0)
        job = job_new(ds, cq->q, path, id, &jn);
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
        place(ds, job, due_of(ci)); /* else HELD until its lock goes */
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
    ci->gen = cq->gen;
    HASH_ADD_KEYPTR(hh, cq->items, ci->name, strlen(ci->name), ci);
    if (curator_parse_name(kind_of(cq->q), name, &ci->cn) != 0) {
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
    forget(ci);
    if (head)
        dispatcher_job_vanished(ds, head); /* a call in flight decides for itself */
    ci_put(ci);
}

/* ---- listings of the queue and of its locks ---- */

static void list_dir(struct cqueue *cq, int locks);

static void on_retry_lists(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct cqueue *cq = arg;
    if (!cq->started)
        return;
    list_dir(cq, 0);
    list_dir(cq, 1);
}

static void retry_lists_in(struct cqueue *cq, int ms)
{
    const struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(cq->retry, &tv);
}

static void retry_lists(struct cqueue *cq) { retry_lists_in(cq, CURATOR_RETRY_MS); }

static void sync_items(struct cqueue *cq, const struct zk_result *res)
{
    struct dispatcher *ds = cq->ds;
    struct citem *ci, *tmp;
    cq->gen++;
    for (int i = 0; i < res->nchildren; i++) {
        HASH_FIND_STR(cq->items, res->children[i], ci);
        if (ci)
            ci->gen = cq->gen;
        else
            add_item(cq, res->children[i]);
    }
    HASH_ITER(hh, cq->items, ci, tmp) {
        if (ci->gen != cq->gen)
            vanished(ds, ci);
    }
    kick(ds, cq->q);
}

static void free_locks(struct cqueue *cq)
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
    free_locks(cq);
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
            place(ds, job, due_of(ci));
        else if ((job->state == JS_DELAYED || job->state == JS_READY) && held)
            set_busy(job, JS_HELD);
    }
    kick(ds, cq->q);
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
    if (res->rc != ZOK && res->rc != ZNODEEXISTS) {
        log_warn("queue %s: cannot create %s: %s", cq->q->cfg->name, dir_of(cq, locks),
                 zerror(res->rc));
        retry_lists(cq);
        return;
    }
    list_dir(cq, locks);
}

/* Curator's start() creates the queue and lock directories; a consumer here does too. */
static int make_dir(struct cqueue *cq, struct listing *l)
{
    char child[CURATOR_PATH_MAX + 4];
    snprintf(child, sizeof child, "%s/x", dir_of(cq, l->locks));
    return zkstore_create_parents(cq->ds->d->zs, child, on_dir_made, l);
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
        log_warn("queue %s: listing %s failed: %s; retrying in %d ms", cq->q->cfg->name,
                 dir_of(cq, locks), zerror(res->rc), CURATOR_RETRY_MS);
        retry_lists(cq);
    }
    if (*again) {
        *again = 0;
        list_dir(cq, locks);
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
    if (fits && zkstore_children(cq->ds->d->zs, dir_of(cq, locks), 1, on_listed, l) == ZOK)
        return;
    struct zk_result failed = {.rc = fits ? ZCONNECTIONLOSS : res->rc};
    on_listed(&failed, l); /* stale, missing directory or error: as a failed listing */
}

/* One listing at a time per directory: changes during it are covered by one more. */
static void list_dir(struct cqueue *cq, int locks)
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
    int rc = zkstore_exists(cq->ds->d->zs, dir_of(cq, locks), 0, on_sized, l);
    if (rc != ZOK) {
        free(l);
        *busy = 0;
        retry_lists(cq);
    }
}

int curator_consume_start(struct dispatcher *ds, struct dqueue *q)
{
    struct cqueue *cq = q->cq;
    if (!cq) {
        if (!(cq = calloc(1, sizeof *cq)))
            return -1;
        cq->ds = ds;
        cq->q = q;
        if (!(cq->retry = evtimer_new(ds->d->base, on_retry_lists, cq))) {
            free(cq);
            return -1;
        }
        q->cq = cq;
    }
    if (cq->started || !zkstore_connected(ds->d->zs))
        return 0;
    cq->started = 1;
    list_dir(cq, 1); /* locks first: the items' listing then knows which are held */
    list_dir(cq, 0);
    return 0;
}

int curator_consume_on_watch(struct dispatcher *ds, const char *path)
{
    for (size_t i = 0; i < ds->nqueues; i++) {
        struct cqueue *cq = ds->queues[i].cq;
        if (!cq || !cq->started)
            continue;
        for (int locks = 0; locks < 2; locks++) {
            if (strcmp(path, dir_of(cq, locks)) == 0) {
                list_dir(cq, locks);
                return 1;
            }
        }
    }
    return 0;
}

/* ---- reading and locking an item, as a Curator consumer with lockPath does ---- */

static void lock_item(struct dispatcher *ds, struct citem *ci);
static void settle_item(struct dispatcher *ds, struct citem *ci);

/* The item could not be decoded. Curator deletes such items; deferd leaves them (and
 * says so once) unless the queue says curator_corrupt = delete, which deletes it under
 * the lock, as Curator would. */
static void corrupt(struct dispatcher *ds, struct citem *ci, struct job *job)
{
    const struct queue_config *qc = ci->cq->q->cfg;
    log_warn("queue %s: Curator item %s/%s is not a valid Curator frame (%zu bytes): %s",
             qc->name, qc->curator_path, ci->name, ci->len,
             qc->curator_delete_corrupt ? "deleting it (curator_corrupt = delete)"
                                        : "skipped and left in place");
    unhold(ds, job);
    free_job(ds, job);
    ci->skipped = 1;
    if (qc->curator_delete_corrupt) {
        ci->nparts = ci->open = 0;
        lock_item(ds, ci); /* locked with no parts: settled at once, i.e. deleted */
    } else {
        drop_frame(ci);
    }
}

static void on_read(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct job *job = ci->head;
    struct dispatcher *ds = ci->cq->ds;
    if (!job || job_settled_gone(ds, job)) {
        ci_put(ci);
        return;
    }
    if (res->rc == ZNONODE) { /* taken by another consumer meanwhile */
        unhold(ds, job);
        free_job(ds, job);
    } else if (res->rc != ZOK) {
        retry_later(ds, job, "reading the Curator item", res->rc);
    } else {
        long n = curator_frame_decode((const unsigned char *)res->data, (size_t)res->datalen,
                                      NULL, 0);
        ci->len = (size_t)res->datalen;
        ci->version = res->stat.version;
        ci->items = n > 0 ? calloc((size_t)n, sizeof *ci->items) : NULL;
        ci->data = malloc(ci->len ? ci->len : 1);
        if (!ci->data || (n > 0 && !ci->items)) {
            drop_frame(ci);
            retry_later(ds, job, "reading the Curator item", ZSYSTEMERROR);
        } else {
            memcpy(ci->data, res->data, ci->len);
            ci->nparts = n > 0 ? (size_t)n : 0;
            if (n < 0)
                corrupt(ds, ci, job);
            else {
                curator_frame_decode(ci->data, ci->len, ci->items, ci->nparts);
                lock_item(ds, ci);
            }
        }
    }
    ci_put(ci);
}

static void read_item(struct dispatcher *ds, struct citem *ci)
{
    char path[ITEM_PATH_MAX];
    item_path(ci, path, sizeof path);
    ci->refs++;
    int rc = zkstore_get(ds->d->zs, path, on_read, ci);
    if (rc != ZOK) {
        ci->refs--;
        retry_later(ds, ci->head, "reading the Curator item", rc);
    }
}

void curator_dispatch(struct dispatcher *ds, struct job *job, struct consumer *c)
{
    consumer_hold(c, job);
    job->state = JS_LOCKING;
    if (job->ci->locked)
        deliver(ds, job); /* a part of an item already locked */
    else
        read_item(ds, job->ci);
}

/* Part I's job: path and id get "#<i+1>" when the frame holds several. */
static struct job *part_job(struct dispatcher *ds, struct citem *ci, struct job *head, size_t i)
{
    char path[ITEM_PATH_MAX + 16], id[LAYOUT_ID_MAX + 1];
    struct job *job = head;
    if (ci->nparts > 1) {
        snprintf(path, sizeof path, "%s#%zu", head->path, i + 1);
        if (snprintf(id, sizeof id, "%s/%s#%zu", ci->cq->q->cfg->name, ci->name, i + 1) >=
            (int)sizeof id)
            return NULL;
        if (i > 0) {
            if (!(job = job_new(ds, head->q, path, id, &head->jn)))
                return NULL;
            job->ci = ci;
            ci->refs++;
        } else { /* the head becomes part 1 under its new name */
            char *p = strdup(path);
            if (!p)
                return NULL;
            HASH_DEL(ds->jobs, job);
            free(job->path);
            job->path = p;
            strcpy(job->id, id);
            HASH_ADD_KEYPTR(hh, ds->jobs, job->path, strlen(job->path), job);
        }
    }
    const struct curator_item *it = &ci->items[i];
    if (!(job->payload = malloc(it->len ? it->len : 1)))
        return NULL;
    memcpy(job->payload, ci->data + it->offset, it->len);
    job->len = it->len;
    ds->payload_bytes += it->len;
    job->attempt = ci->attempt;
    return job;
}

/* Locked: every part becomes a job; the first goes to the consumer that was picked, the
 * others to whoever has room. */
static void split(struct dispatcher *ds, struct citem *ci, struct job *head)
{
    ci->parts = calloc(ci->nparts, sizeof *ci->parts);
    ci->verdict = calloc(ci->nparts, 1);
    if (!ci->parts || !ci->verdict) {
        log_error("queue %s: out of memory for Curator item %s", head->q->cfg->name, ci->name);
        return; /* the lock is held until the session ends; the item is then taken again */
    }
    ci->head = NULL;
    ci->open = ci->nparts;
    for (size_t i = ci->nparts; i-- > 0;) {
        struct job *job = part_job(ds, ci, head, i);
        if (!job) { /* given back with the nacked ones: not lost */
            log_error("queue %s: Curator item %s: part %zu cannot be held; requeueing it",
                      head->q->cfg->name, ci->name, i + 1);
            ci->verdict[i] = V_NACK;
            ci->open--;
            continue;
        }
        ci->parts[i] = job;
        if (i > 0)
            push_ready(job);
    }
    struct dqueue *q = head->q;
    if (ci->parts[0]) {
        deliver(ds, head);
    } else {
        unhold(ds, head);
        free_job(ds, head);
    }
    if (ci->open == 0)
        settle_item(ds, ci);
    kick(ds, q);
}

static void locked(struct dispatcher *ds, struct citem *ci, struct job *job)
{
    const struct queue_config *qc = ci->cq->q->cfg;
    ci->locked = 1;
    if (ci->attempt <= qc->max_attempts && ci->nparts > 0) {
        split(ds, ci, job);
        return;
    }
    /* Nothing to deliver: an empty frame (Curator consumes it as nothing), or an item whose
     * deliveries ran out (its holders kept dying): it goes to the dead letters. */
    if (ci->nparts > 0) {
        log_warn("queue %s: Curator item %s dead-lettered after %u attempts (max_attempts %u)",
                 qc->name, ci->name, ci->attempt - 1, qc->max_attempts);
        ci->verdict = calloc(ci->nparts, 1);
        ci->parts = calloc(ci->nparts, sizeof *ci->parts);
        if (ci->verdict)
            memset(ci->verdict, V_DEAD, ci->nparts);
    }
    if (job) {
        unhold(ds, job);
        free_job(ds, job);
    }
    settle_item(ds, ci);
}

static void on_locked(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct job *job = ci->head;
    struct dispatcher *ds = ci->cq->ds;
    if (res->rc == ZOK && ci->lock_session == ds->d->session_id) {
        if (job)
            job->gone = 0; /* the transaction just proved it exists */
        locked(ds, ci, job);
    } else if (!job || job_settled_gone(ds, job)) {
        drop_frame(ci);
    } else {
        log_debug("queue %s: Curator item %s: lock not taken: %s", ci->cq->q->cfg->name,
                  ci->name, zerror(res->rc));
        drop_frame(ci);
        unhold(ds, job);
        if (res->nops > 0 && res->op_err[0] == ZNODEEXISTS) { /* someone else holds it */
            set_busy(job, JS_HELD);
            list_dir(ci->cq, 1); /* ready again when its lock is gone */
        } else if (res->rc == ZBADVERSION) { /* locked and given back meanwhile: again */
            make_ready(ds, job);
        } else if (res->rc == ZNONODE) {
            free_job(ds, job);
        } else {
            retry_later(ds, job, "taking the Curator lock", res->rc ? res->rc : ZSESSIONMOVED);
        }
    }
    ci_put(ci);
}

/* Curator's lock, and the item's data written back unchanged at the version read: the
 * version counts deliveries durably (attempts), and a change since the read fails it. */
static void lock_item(struct dispatcher *ds, struct citem *ci)
{
    char lock[ITEM_PATH_MAX], path[ITEM_PATH_MAX];
    if (lock_path_of(ci, lock, sizeof lock) != 0 || item_path(ci, path, sizeof path) != 0)
        return;
    const struct zk_txn_op ops[] = {
        {.kind = ZT_CREATE, .path = lock, .data = ds->ident, .len = strlen(ds->ident),
         .ephemeral = 1},
        {.kind = ZT_SET, .path = path, .data = ci->data, .len = ci->len, .version = ci->version},
    };
    ci->attempt = ci->cn.attempts + (uint32_t)ci->version + 1;
    ci->lock_session = ds->d->session_id;
    ci->refs++;
    int rc = txnbatch_add(ds->locks, ops, 2, on_locked, ci);
    if (rc != ZOK) {
        ci->refs--;
        drop_frame(ci);
        if (ci->head)
            retry_later(ds, ci->head, "sending the Curator lock", rc);
    }
}

/* ---- settling: every part has a verdict ---- */

/* The frame of the parts with verdict V, or NULL when there are none. */
static unsigned char *frame_of(const struct citem *ci, enum verdict v, size_t *len)
{
    size_t n = 0;
    const unsigned char **bytes = calloc(ci->nparts + 1, sizeof *bytes);
    size_t *lens = calloc(ci->nparts + 1, sizeof *lens);
    unsigned char *frame = NULL;
    for (size_t i = 0; bytes && lens && ci->verdict && i < ci->nparts; i++) {
        if (ci->verdict[i] == v) {
            bytes[n] = ci->data + ci->items[i].offset;
            lens[n++] = ci->items[i].len;
        }
    }
    if (n > 0 && (*len = curator_frame_size(lens, n)) && (frame = malloc(*len)))
        curator_frame_encode(bytes, lens, n, frame, *len);
    free(bytes);
    free(lens);
    return frame;
}

/* Nacked parts come back as a new item of their own, with deferd's back-off in the name
 * (delay queues) and the attempts made so far in a tag Curator ignores. */
static int requeue_path(struct dispatcher *ds, const struct citem *ci, char *buf, size_t len)
{
    const struct queue_config *qc = ci->cq->q->cfg;
    char prefix[CURATOR_PREFIX_MAX + 16];
    int64_t value = ci->cn.has_priority ? ci->cn.priority : 0;
    if (qc->format == QF_CURATOR_DELAY) {
        uint64_t delay = ci->has_nack_delay ? ci->nack_delay_ms : backoff_ms(qc, ci->attempt);
        value = units_wall_ms() + (int64_t)(delay < LAYOUT_DUE_MAX ? delay : LAYOUT_DUE_MAX);
    }
    (void)ds;
    if (curator_name_prefix_tagged(kind_of(ci->cq->q), value, ci->attempt, prefix,
                                   sizeof prefix) != 0)
        return -1;
    int n = snprintf(buf, len, "%s/%s", qc->curator_path, prefix);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Dead parts keep their bytes as a Curator frame in the queue's dead letters. */
static int dead_path(struct dispatcher *ds, struct citem *ci)
{
    if (ci->dead_path)
        return 0;
    struct job_name jn = {.due_ms = (uint64_t)units_wall_ms(), .priority = order_key(ci),
                          .prior_attempts = ci->attempt};
    char buf[LAYOUT_PATH_MAX];
    new_uid(ds, jn.uid);
    if (layout_dead_path(buf, sizeof buf, root(ds), ci->cq->q->cfg->name, &jn) != 0 ||
        !(ci->dead_path = strdup(buf)))
        return -1;
    return 0;
}

/* The item is done with: answer the last verdict, free the parts, forget the item. */
static void finish(struct dispatcher *ds, struct citem *ci, const char *lost)
{
    struct dqueue *q = ci->cq->q;
    ci->refs++;
    if (ci->reply) {
        if (lost)
            reply_err(ci->reply, PE_LEASE_LOST, "Curator item %s: %s; its parts will be "
                      "delivered again", ci->name, lost);
        else
            reply_ok(ci->reply, NULL);
        ci->reply = NULL;
    }
    ci->locked = 0;
    for (size_t i = 0; ci->parts && i < ci->nparts; i++)
        if (ci->parts[i])
            free_job(ds, ci->parts[i]);
    forget(ci);
    ci_put(ci);
    kick(ds, q);
}

static void on_retry_settle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct citem *ci = arg;
    settle_item(ci->cq->ds, ci);
    ci_put(ci); /* the timer's */
}

static int session_gone(int rc)
{
    return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE;
}

static void on_settled(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct dispatcher *ds = ci->cq->ds;
    const struct queue_config *qc = ci->cq->q->cfg;
    int rc = res->rc, last = res->nops - 1;
    int dead_op = ci->dead_path ? last - 1 : -1;
    if (rc == ZNONODE && dead_op > 0 && res->op_err[dead_op] == ZNONODE && !ci->made_parents) {
        ci->made_parents = 1; /* the dead letters' directory does not exist yet */
        if (zkstore_create_parents(ds->d->zs, ci->dead_path, NULL, NULL) == ZOK) {
            settle_item(ds, ci);
            ci_put(ci);
            return;
        }
    }
    if (rc == ZOK) {
        finish(ds, ci, NULL);
    } else if (rc == ZNONODE && res->op_err[0] == ZNONODE) {
        /* Deleted by someone else while we held it (or by our own earlier try whose answer
         * was lost): nothing is left to settle but our lock. */
        char lock[ITEM_PATH_MAX];
        if (lock_path_of(ci, lock, sizeof lock) == 0)
            zkstore_delete(ds->d->zs, lock, -1, NULL, NULL);
        finish(ds, ci, NULL);
    } else if (rc == ZNONODE || session_gone(rc)) {
        log_warn("queue %s: Curator item %s: our lock is gone (%s)", qc->name, ci->name,
                 zerror(rc));
        finish(ds, ci, "the lock was lost");
    } else {
        /* Unknown outcome or a passing error: the same transaction again later; if the
         * first one was applied, the item is gone and the retry says so. */
        log_warn("queue %s: Curator item %s: settling failed: %s; retrying in %d ms", qc->name,
                 ci->name, zerror(rc), CURATOR_RETRY_MS);
        static const struct timeval tv = {CURATOR_RETRY_MS / 1000,
                                          (CURATOR_RETRY_MS % 1000) * 1000};
        if (!ci->retry)
            ci->retry = evtimer_new(ds->d->base, on_retry_settle, ci);
        if (ci->retry && evtimer_add(ci->retry, &tv) == 0)
            ci->refs++;
        else
            finish(ds, ci, "settling failed");
    }
    ci_put(ci);
}

/* One transaction: delete the item, create the requeue of nacked parts and the dead
 * letter of dead ones, delete our lock. Curator consumers see the item go and, with it,
 * the lock; a Curator consumer that tries it meanwhile finds the lock taken. */
static void settle_item(struct dispatcher *ds, struct citem *ci)
{
    char item[ITEM_PATH_MAX], lock[ITEM_PATH_MAX], requeue[ITEM_PATH_MAX];
    size_t nack_len = 0, dead_len = 0;
    unsigned char *nack = frame_of(ci, V_NACK, &nack_len), *dead = frame_of(ci, V_DEAD, &dead_len);
    struct zk_txn_op ops[4];
    int n = 0, rc = ZSYSTEMERROR;
    if (item_path(ci, item, sizeof item) != 0 || lock_path_of(ci, lock, sizeof lock) != 0 ||
        (nack && requeue_path(ds, ci, requeue, sizeof requeue) != 0) ||
        (dead && dead_path(ds, ci) != 0))
        goto out;
    ops[n++] = (struct zk_txn_op){.kind = ZT_DELETE, .path = item, .version = -1};
    if (nack)
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = requeue, .data = nack,
                                      .len = nack_len, .sequential = 1};
    if (dead)
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = ci->dead_path, .data = dead,
                                      .len = dead_len};
    ops[n++] = (struct zk_txn_op){.kind = ZT_DELETE, .path = lock, .version = -1};
    ci->refs++;
    if ((rc = txnbatch_add(ds->settles, ops, n, on_settled, ci)) != ZOK)
        ci->refs--;
out:
    free(nack);
    free(dead);
    if (rc != ZOK) {
        log_error("queue %s: Curator item %s cannot be settled: %s", ci->cq->q->cfg->name,
                  ci->name, zerror(rc));
        finish(ds, ci, "it could not be settled");
    }
}

static void part_done(struct dispatcher *ds, struct job *job, enum verdict v, struct reply *r)
{
    struct citem *ci = job->ci;
    for (size_t i = 0; i < ci->nparts; i++)
        if (ci->parts[i] == job && ci->verdict[i] == V_OPEN) {
            ci->verdict[i] = (unsigned char)v;
            ci->open--;
        }
    if (ci->open > 0) { /* recorded; applied with the item's last part */
        if (r)
            reply_ok(r, NULL);
        return;
    }
    ci->reply = r;
    settle_item(ds, ci);
}

void curator_part_settle(struct dispatcher *ds, struct job *job, int ack, int has_delay,
                         uint64_t delay_ms, struct reply *r)
{
    struct citem *ci = job->ci;
    set_busy(job, JS_HELD);
    unhold(ds, job);
    if (!ack && has_delay) {
        ci->has_nack_delay = 1;
        if (delay_ms > ci->nack_delay_ms)
            ci->nack_delay_ms = delay_ms;
    }
    /* the last allowed attempt failed: to the dead letters, as native jobs go */
    int dead = !ack && job->attempt >= job->q->cfg->max_attempts;
    part_done(ds, job, ack ? V_ACK : dead ? V_DEAD : V_NACK, r);
}

void curator_part_release(struct dispatcher *ds, struct job *job, int delivered)
{
    unhold(ds, job);
    if (delivered && ++job->attempt > job->q->cfg->max_attempts) {
        set_busy(job, JS_HELD);
        part_done(ds, job, V_DEAD, NULL);
        return;
    }
    make_ready(ds, job); /* the item stays locked: delivered again from here */
}

void curator_job_freed(struct job *job)
{
    struct citem *ci = job->ci;
    job->ci = NULL;
    if (ci->head == job)
        ci->head = NULL;
    for (size_t i = 0; ci->parts && i < ci->nparts; i++)
        if (ci->parts[i] == job)
            ci->parts[i] = NULL;
    ci_put(ci);
}

/* ---- session changes ---- */

void curator_consume_reset(struct dispatcher *ds)
{
    for (size_t i = 0; i < ds->nqueues; i++) {
        struct cqueue *cq = ds->queues[i].cq;
        if (!cq)
            continue;
        cq->token++;
        cq->started = cq->listing = cq->relist = cq->lock_listing = cq->lock_relist = 0;
        evtimer_del(cq->retry);
        free_locks(cq);
        struct citem *ci, *tmp;
        HASH_ITER(hh, cq->items, ci, tmp) {
            ci->locked = 0; /* went with the session */
            forget(ci);
        }
    }
}

/* Our lock vanished while the connection was away (deleted by hand): the parts are no
 * longer ours to hand out. */
static void on_lock_checked(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct dispatcher *ds = ci->cq->ds;
    int ours = res->rc == ZOK && res->stat.ephemeralOwner == ds->d->session_id;
    if (ci->locked && !ours && (res->rc == ZOK || res->rc == ZNONODE)) {
        log_warn("queue %s: Curator item %s: our lock vanished while disconnected; revoking it",
                 ci->cq->q->cfg->name, ci->name);
        for (size_t i = 0; ci->parts && i < ci->nparts; i++) {
            struct job *job = ci->parts[i];
            if (job && job->owner && job->state == JS_INFLIGHT) {
                consumer_note_lost(job->owner, job->id);
                server_push_expired(job->owner->conn, job->id);
            }
        }
        finish(ds, ci, "the lock vanished");
    }
    ci_put(ci);
}

void curator_consume_resync(struct dispatcher *ds)
{
    for (size_t i = 0; i < ds->nqueues; i++) {
        struct cqueue *cq = ds->queues[i].cq;
        if (!cq || !cq->started)
            continue;
        list_dir(cq, 1);
        list_dir(cq, 0);
        struct citem *ci, *tmp;
        HASH_ITER(hh, cq->items, ci, tmp) {
            char lock[ITEM_PATH_MAX];
            if (!ci->locked || ci->reply || lock_path_of(ci, lock, sizeof lock) != 0)
                continue;
            ci->refs++;
            if (zkstore_exists(ds->d->zs, lock, 0, on_lock_checked, ci) != ZOK)
                ci->refs--;
        }
    }
}

void curator_consume_free(struct dispatcher *ds)
{
    for (size_t i = 0; i < ds->nqueues; i++) {
        struct cqueue *cq = ds->queues[i].cq;
        if (!cq)
            continue;
        struct citem *ci, *tmp;
        HASH_ITER(hh, cq->items, ci, tmp) {
            HASH_DEL(cq->items, ci);
            ci->refs = 1; /* jobs were freed without telling it */
            ci_put(ci);
        }
        free_locks(cq);
        event_free(cq->retry);
        free(cq);
        ds->queues[i].cq = NULL;
    }
}
