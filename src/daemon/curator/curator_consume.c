#include "curator_consume.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "curator_int.h"
#include "daemon.h"
#include "dispatcher.h"
#include "dispatcher_jobs.h"
#include "jobs.h"
#include "log.h"
#include "reply.h"
#include "txnbatch.h"
#include "zkstore.h"

enum curator_kind curator_consume_kind(const struct dqueue *q)
{
    return q->cfg->format == QF_CURATOR_DELAY ? CURATOR_DELAY : CURATOR_PRIORITY;
}

int curator_item_path(const struct citem *ci, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s", ci->cq->q->cfg->curator_path, ci->name);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int curator_item_lock_path(const struct citem *ci, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s", ci->cq->q->cfg->curator_lock_path, ci->name);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

static void ci_free(struct citem *ci)
{
    struct cqueue *cq = ci->cq;
    if (ci->prev)
        ci->prev->next = ci->next;
    else
        cq->all = ci->next;
    if (ci->next)
        ci->next->prev = ci->prev;
    cq->live--;
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

void curator_item_put(struct citem *ci)
{
    if (--ci->refs == 0)
        ci_free(ci);
}

void curator_item_forget(struct citem *ci)
{
    if (!ci->listed)
        return;
    HASH_DEL(ci->cq->items, ci);
    ci->listed = 0;
    curator_item_put(ci);
}

void curator_item_drop_frame(struct citem *ci)
{
    free(ci->data);
    free(ci->items);
    ci->data = NULL;
    ci->items = NULL;
}

void curator_item_unlock(struct dispatcher *ds, struct citem *ci)
{
    char lock[ITEM_PATH_MAX];
    if (ci->locked && ci->lock_session == dispatcher_deferd(ds)->session_id &&
        curator_item_lock_path(ci, lock, sizeof lock) == 0)
        zkstore_delete(dispatcher_deferd(ds)->zs, lock, -1, NULL, NULL);
    ci->locked = 0;
}


/* Curator's priority order is the signed order of the name's number; the ready heap takes
 * lower numbers first, so the sign bit is flipped. Names without a readable priority (a
 * Curator requeue: "queue-<seq>") sort before every priority in Curator, so here too. */
uint32_t curator_item_order_key(const struct citem *ci)
{
    if (ci->cq->q->cfg->format == QF_CURATOR_DELAY)
        return ci->cq->q->cfg->priority;
    return ci->cn.has_priority ? (uint32_t)ci->cn.priority ^ 0x80000000u : 0;
}

uint32_t curator_consume_priority(const struct job *job)
{
    if (job->q->cfg->format == QF_CURATOR_DELAY)
        return job->jn.priority;
    int32_t p = (int32_t)(job->jn.priority ^ 0x80000000u);
    return p < 0 ? 0 : (uint32_t)p;
}

/* ---- reading and locking an item, as a Curator consumer with lockPath does ---- */

static void lock_item(struct dispatcher *ds, struct citem *ci);

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
    job_unhold(ds, job);
    job_free(ds, job);
    ci->skipped = 1;
    if (qc->curator_delete_corrupt) {
        ci->nparts = ci->open = 0;
        lock_item(ds, ci); /* locked with no parts: settled at once, i.e. deleted */
    } else {
        curator_item_drop_frame(ci);
    }
}

/* The head job a completion is for; NULL (and the call's reference dropped) when the job
 * went away meanwhile. */
static struct job *live_head(struct citem *ci)
{
    struct job *job = ci->head;
    if (job && !job_settled_gone(ci->cq->ds, job))
        return job;
    curator_item_put(ci);
    return NULL;
}

static void on_read(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct dispatcher *ds = ci->cq->ds; /* before live_head, which may free CI */
    struct job *job = live_head(ci);
    if (!job)
        return;
    if (res->rc == ZNONODE) { /* taken by another consumer meanwhile */
        job_unhold(ds, job);
        job_free(ds, job);
    } else if (res->rc != ZOK) {
        dispatcher_retry_later(ds, job, "reading the Curator item", res->rc);
    } else {
        long n = curator_frame_decode((const unsigned char *)res->data, (size_t)res->datalen,
                                      NULL, 0);
        ci->len = (size_t)res->datalen;
        ci->version = res->stat.version;
        ci->items = n > 0 ? calloc((size_t)n, sizeof *ci->items) : NULL;
        ci->data = malloc(ci->len ? ci->len : 1);
        if (!ci->data || (n > 0 && !ci->items)) {
            curator_item_drop_frame(ci);
            dispatcher_retry_later(ds, job, "reading the Curator item", ZK_ENOMEM);
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
    curator_item_put(ci);
}

static void read_item(struct dispatcher *ds, struct citem *ci)
{
    char path[ITEM_PATH_MAX];
    curator_item_path(ci, path, sizeof path);
    ci->refs++;
    int rc = zkstore_get(dispatcher_deferd(ds)->zs, path, on_read, ci);
    if (rc != ZOK) {
        ci->refs--;
        dispatcher_retry_later(ds, ci->head, "reading the Curator item", rc);
    }
}

void curator_consume_dispatch(struct dispatcher *ds, struct job *job, struct consumer *c)
{
    consumer_hold(c, job);
    job_transition(job, JE_LOCK);
    if (job->ci->locked)
        dispatcher_deliver(ds, job); /* a part of an item already locked */
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
            struct job_key k;
            job_key_make(&k, path);
            if (!(job = job_new(ds, head->q, &k, id, &head->jn)))
                return NULL;
            job->ci = ci;
            ci->refs++;
        } else if (job_rename(ds, job, path, id) != 0) { /* the head becomes part 1 */
            return NULL;
        }
    }
    const struct curator_item *it = &ci->items[i];
    if (job_keep_payload(ds, job, ci->data + it->offset, it->len) != 0) {
        if (job != head)
            job_free(ds, job);
        return NULL;
    }
    job->attempt = ci->attempt;
    return job;
}

/* Out of memory with the item locked: the lock goes, the head tries again later. */
static void give_back(struct dispatcher *ds, struct citem *ci, struct job *head)
{
    free(ci->parts);
    free(ci->verdict);
    ci->parts = NULL;
    ci->verdict = NULL;
    curator_item_unlock(ds, ci);
    curator_item_drop_frame(ci);
    dispatcher_retry_later(ds, head, "holding the Curator item", ZK_ENOMEM);
}

/* Locked: every part becomes a job; the first goes to the consumer that was picked, the
 * others to whoever has room. */
static void split(struct dispatcher *ds, struct citem *ci, struct job *head)
{
    ci->parts = calloc(ci->nparts, sizeof *ci->parts);
    ci->verdict = calloc(ci->nparts, 1);
    if (!ci->parts || !ci->verdict) {
        give_back(ds, ci, head);
        return;
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
            dispatcher_push_ready(job);
    }
    struct dqueue *q = head->q;
    if (ci->parts[0]) {
        dispatcher_deliver(ds, head);
    } else {
        job_unhold(ds, head);
        job_free(ds, head);
    }
    if (ci->open == 0)
        curator_settle_item(ds, ci);
    dispatcher_kick_soon(ds, q);
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
        if (!ci->verdict || !ci->parts) {
            if (job) {
                give_back(ds, ci, job);
                return;
            }
            curator_item_unlock(ds, ci); /* (no head: a corrupt item, never with parts) */
            return;
        }
        memset(ci->verdict, V_DEAD, ci->nparts);
    }
    if (job) {
        job_unhold(ds, job);
        job_free(ds, job);
    }
    curator_settle_item(ds, ci);
}

/* Our lock attempt found the lock taken. If it is this session's own (a lock whose answer
 * was lost, or one left by a failure), it is deleted and the item taken again; otherwise the
 * item waits until the lock listing shows the lock gone. */
static void on_lock_owner(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct dispatcher *ds = ci->cq->ds; /* before live_head, which may free CI */
    struct job *job = live_head(ci);
    if (!job)
        return;
    if (job->gone) {
        job_free(ds, job);
    } else if (res->rc == ZOK && res->stat.ephemeralOwner == dispatcher_deferd(ds)->session_id) {
        log_info("queue %s: Curator item %s: removing a lock of our own left behind",
                 ci->cq->q->cfg->name, ci->name);
        ci->locked = 1;
        ci->lock_session = dispatcher_deferd(ds)->session_id;
        curator_item_unlock(ds,
                            ci); /* sent before the next read and lock: ZooKeeper keeps the order */
        dispatcher_make_ready(ds, job);
    } else if (res->rc == ZNONODE) {
        dispatcher_make_ready(ds, job);
    } else {
        job_transition(job, JE_PARK);
        curator_listing_request(ci->cq, 1); /* ready again when its lock is gone */
    }
    curator_item_put(ci);
}

static void lock_taken(struct dispatcher *ds, struct citem *ci, struct job *job)
{
    char lock[ITEM_PATH_MAX];
    job_transition(job, JE_CHECK);
    ci->refs++;
    if (curator_item_lock_path(ci, lock, sizeof lock) != 0 ||
        zkstore_exists(dispatcher_deferd(ds)->zs, lock, 0, on_lock_owner, ci) != ZOK) {
        ci->refs--;
        job_transition(job, JE_PARK);
        curator_listing_request(ci->cq, 1);
    }
}

static void on_locked(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct job *job = ci->head;
    struct dispatcher *ds = ci->cq->ds;
    int rc = res->rc, lock_err = res->nops > 0 ? res->op_err[0] : rc,
        item_err = res->nops > 1 ? res->op_err[1] : rc;
    if (rc == ZOK && ci->lock_session == dispatcher_deferd(ds)->session_id) {
        if (job)
            job->gone = 0; /* the transaction just proved it exists */
        locked(ds, ci, job);
        curator_item_put(ci);
        return;
    }
    curator_item_drop_frame(ci);
    if (!job || job_settled_gone(ds, job)) {
        curator_item_put(ci);
        return;
    }
    log_debug("queue %s: Curator item %s: lock not taken: %s", ci->cq->q->cfg->name, ci->name,
              zk_strerror(rc));
    job_unhold(ds, job);
    if (job->gone) { /* the listing dropped it meanwhile: its name never comes back */
        job_free(ds, job);
    } else if (lock_err == ZNODEEXISTS) {
        lock_taken(ds, ci, job);
    } else if (rc == ZBADVERSION) { /* locked and given back meanwhile: again */
        dispatcher_make_ready(ds, job);
    } else if (item_err == ZNONODE) { /* consumed by someone else */
        job_free(ds, job);
    } else {
        if (lock_err == ZNONODE) /* the lock directory is missing: the listing makes it */
            curator_listing_request(ci->cq, 1);
        dispatcher_retry_later_at(ds, job, "taking the Curator lock", rc ? rc : ZSESSIONMOVED,
                       lock_err == ZNOAUTH ? ci->cq->q->cfg->curator_lock_path : job->path);
    }
    curator_item_put(ci);
}

/* Curator's lock, and the item's data written back unchanged at the version read: the
 * version counts deliveries durably (attempts), and a change since the read fails it. */
static void lock_item(struct dispatcher *ds, struct citem *ci)
{
    char lock[ITEM_PATH_MAX], path[ITEM_PATH_MAX];
    if (curator_item_lock_path(ci, lock, sizeof lock) != 0 ||
        curator_item_path(ci, path, sizeof path) != 0) {
        log_error("queue %s: Curator item %s: path too long; skipped", ci->cq->q->cfg->name,
                  ci->name);
        ci->skipped = 1;
        curator_item_drop_frame(ci);
        if (ci->head) {
            job_unhold(ds, ci->head);
            job_free(ds, ci->head);
        }
        return;
    }
    const struct zk_txn_op ops[] = {
        {.kind = ZT_CREATE, .path = lock, .data = dispatcher_ident(ds), .len = strlen(dispatcher_ident(ds)),
         .ephemeral = 1},
        {.kind = ZT_SET, .path = path, .data = ci->data, .len = ci->len, .version = ci->version},
    };
    ci->attempt = ci->cn.attempts + (uint32_t)ci->version + 1;
    ci->lock_session = dispatcher_deferd(ds)->session_id;
    ci->refs++;
    int rc = txnbatch_add(dispatcher_locks(ds), ops, 2, on_locked, ci);
    if (rc != ZOK) {
        ci->refs--;
        curator_item_drop_frame(ci);
        if (ci->head)
            dispatcher_retry_later(ds, ci->head, "sending the Curator lock", rc);
    }
}


/* ---- session changes ---- */

void curator_consume_reset(struct dispatcher *ds)
{
    for (size_t i = 0; i < dispatcher_nqueues(ds); i++) {
        struct cqueue *cq = dispatcher_queue_at(ds, i)->cq;
        if (!cq)
            continue;
        cq->token++;
        cq->started = cq->listing = cq->relist = cq->lock_listing = cq->lock_relist = 0;
        evtimer_del(cq->retry);
        curator_listing_free_locks(cq);
        struct citem *ci, *tmp;
        HASH_ITER(hh, cq->items, ci, tmp) {
            ci->locked = 0; /* went with the session */
            curator_item_forget(ci);
        }
    }
}

/* Our lock vanished while the connection was away (deleted by hand): the parts are no
 * longer ours to hand out. */
static void on_lock_checked(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct dispatcher *ds = ci->cq->ds;
    int ours = res->rc == ZOK && res->stat.ephemeralOwner == dispatcher_deferd(ds)->session_id;
    if (ci->locked && !ci->settling && !ours && (res->rc == ZOK || res->rc == ZNONODE)) {
        log_warn("queue %s: Curator item %s: our lock vanished while disconnected; revoking it",
                 ci->cq->q->cfg->name, ci->name);
        for (size_t i = 0; ci->parts && i < ci->nparts; i++) {
            struct job *job = ci->parts[i];
            if (job && job->owner && job->state == JS_INFLIGHT)
                job_revoke(ds, job, LOST_LOCK);
        }
        curator_settle_finish(ds, ci, "the lock vanished");
    }
    curator_item_put(ci);
}

void curator_consume_resync(struct dispatcher *ds)
{
    for (size_t i = 0; i < dispatcher_nqueues(ds); i++) {
        struct cqueue *cq = dispatcher_queue_at(ds, i)->cq;
        if (!cq || !cq->started)
            continue;
        curator_listing_request(cq, 1);
        curator_listing_request(cq, 0);
        struct citem *ci, *tmp;
        HASH_ITER(hh, cq->items, ci, tmp) {
            char lock[ITEM_PATH_MAX];
            if (!ci->locked || ci->settling || curator_item_lock_path(ci, lock, sizeof lock) != 0)
                continue;
            ci->refs++;
            if (zkstore_exists(dispatcher_deferd(ds)->zs, lock, 0, on_lock_checked, ci) != ZOK)
                ci->refs--;
        }
    }
}

void curator_consume_free(struct dispatcher *ds)
{
    for (size_t i = 0; i < dispatcher_nqueues(ds); i++) {
        struct cqueue *cq = dispatcher_queue_at(ds, i)->cq;
        if (!cq)
            continue;
        HASH_CLEAR(hh, cq->items);
        while (cq->all)
            ci_free(cq->all); /* jobs were freed without telling it */
        curator_listing_free_locks(cq);
        event_free(cq->retry);
        free(cq);
        dispatcher_queue_at(ds, i)->cq = NULL;
    }
}

void curator_consume_format(const struct dispatcher *ds, char *buf, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < dispatcher_nqueues(ds) && n >= 0 && (size_t)n < len; i++) {
        const struct cqueue *cq = dispatcher_queue_at(ds, i)->cq;
        if (cq)
            n += snprintf(buf + n, len - (size_t)n, " curator_items.%s=%zu",
                          cq->q->cfg->name, cq->live);
    }
}
