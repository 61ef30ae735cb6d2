/* Settling a locked Curator item once every part has a verdict: one transaction deletes the
 * item, puts nacked parts back as a new item and dead parts into the dead letters, and
 * deletes the lock. Also the parts' verdicts and their local redelivery. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "curator_int.h"
#include "curator_settle.h"
#include "daemon.h"
#include "dispatcher.h"
#include "put_env.h"
#include "uid.h"
#include "dispatcher_jobs.h"
#include "settle.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "reply.h"
#include "txnbatch.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

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
        uint64_t delay = ci->has_nack_delay ? ci->nack_delay_ms
                                         : settle_backoff_ms(qc, ci->attempt);
        value = cluster_latest_ms() + (int64_t)(delay < LAYOUT_DUE_MAX ? delay : LAYOUT_DUE_MAX);
    }
    (void)ds;
    if (curator_name_prefix_tagged(curator_consume_kind(ci->cq->q), value, ci->attempt, prefix,
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
    struct job_name jn = {.due_ms = (uint64_t)cluster_now_ms(),
                          .priority = curator_item_order_key(ci),
                          .prior_attempts = ci->attempt};
    char buf[LAYOUT_PATH_MAX];
    uid_next(dispatcher_put_env(ds)->uids, jn.uid);
    if (layout_dead_path(buf, sizeof buf, dispatcher_root(ds), ci->cq->q->cfg->name, &jn) != 0 ||
        !(ci->dead_path = strdup(buf)))
        return -1;
    return 0;
}

void curator_settle_finish(struct dispatcher *ds, struct citem *ci, const char *lost)
{
    struct cqueue *cq = ci->cq;
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
            job_free(ds, ci->parts[i]);
    curator_item_forget(ci);
    if (lost && cq->started) /* the item may still be there: taken again from a new listing */
        curator_listing_request(cq, 0);
    curator_item_put(ci);
    dispatcher_kick_soon(ds, cq->q);
}

#define SETTLE_TRIES 10 /* then the lock is given up and the item taken again later */

static void on_retry_settle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct citem *ci = arg;
    curator_settle_item(ci->cq->ds, ci);
    curator_item_put(ci); /* the timer's */
}

/* A passing error or an unknown outcome: the same transaction again in a second; if the
 * first one was applied, the item is gone and the retry says so. */
static void retry_settle(struct dispatcher *ds, struct citem *ci, int rc)
{
    struct timeval tv = units_ms_timeval(ZK_RETRY_MS);
    log_at_site(rc == ZNOAUTH ? LOG_DEBUG : LOG_WARN, "queue %s: Curator item %s: settling failed: "
            "%s; retrying in %d ms", ci->cq->q->cfg->name, ci->name, zk_strerror(rc),
            ZK_RETRY_MS); /* a denial: logged for the queue by the caller */
    if (++ci->tries < SETTLE_TRIES && !ci->retry)
        ci->retry = evtimer_new(dispatcher_deferd(ds)->base, on_retry_settle, ci);
    if (ci->tries < SETTLE_TRIES && ci->retry && evtimer_add(ci->retry, &tv) == 0) {
        ci->refs++;
        return;
    }
    curator_item_unlock(ds, ci);
    curator_settle_finish(ds, ci,
                          rc == ZNOAUTH ? "settling failed: " ZK_DENIED_TEXT : "settling failed");
}

/* Applied: the parts' verdicts count as native acks, nacks and dead letters do (a nack of
 * the last attempt counts as dead-lettered only). */
static void count_verdicts(struct dispatcher *ds, const struct citem *ci)
{
    static const enum metrics_event ev[] = {[V_ACK] = ME_ACKED, [V_NACK] = ME_NACKED,
                                            [V_DEAD] = ME_DEAD_LETTERED};
    for (size_t i = 0; ci->verdict && i < ci->nparts; i++)
        if (ci->verdict[i] != V_OPEN)
            metrics_event(dispatcher_deferd(ds)->metrics, ci->cq->q->cfg, ev[ci->verdict[i]]);
}

/* The dead letters' directory was made once and is still missing: its creates' answers
 * say why (a denial); made, the item is settled again. */
static void on_dead_dir(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct dispatcher *ds = ci->cq->ds;
    if (res->rc == ZOK) {
        curator_settle_item(ds, ci);
    } else {
        if (res->rc == ZNOAUTH)
            queue_denied(ci->cq->q, res->path);
        ci->made_parents = 1; /* the next try asks again: it may be allowed by then */
        retry_settle(ds, ci, res->rc);
    }
    curator_item_put(ci);
}

/* The znode of the settling operation ZooKeeper refused: the item, the requeue or dead
 * letter created, or our lock. */
static const char *settle_refused(const struct citem *ci, const struct zk_result *res,
                                  char *buf, size_t len)
{
    int op = zk_failed_op(res);
    if (op == res->nops - 1 && op > 0 && curator_item_lock_path(ci, buf, len) == 0)
        return buf;
    if (op > 0 && ci->dead_path && op == res->nops - 2)
        return ci->dead_path;
    if (op > 0)
        return ci->cq->q->cfg->curator_path; /* the requeue's directory */
    return curator_item_path(ci, buf, len) == 0 ? buf : ci->name;
}

static void on_settled(const struct zk_result *res, void *ctx)
{
    struct citem *ci = ctx;
    struct dispatcher *ds = ci->cq->ds;
    const struct queue_config *qc = ci->cq->q->cfg;
    int rc = res->rc, last = res->nops - 1;
    int dead_op = ci->dead_path ? last - 1 : -1;
    int item_gone = rc == ZNONODE && res->op_err[0] == ZNONODE;
    int lock_gone = rc == ZNONODE && last > 0 && res->op_err[last] == ZNONODE;
    ci->settling = 0;
    if (rc == ZNONODE && dead_op > 0 && res->op_err[dead_op] == ZNONODE && ci->made_parents < 2) {
        /* the dead letters' directory does not exist yet (zkstore_parents_missing) */
        int how = zkstore_parents_missing(dispatcher_deferd(ds)->zs, ci->dead_path, &ci->made_parents,
                                          on_dead_dir, ci);
        if (how == ZK_PARENTS_RESEND || how == ZK_PARENTS_ASKED) {
            if (how == ZK_PARENTS_RESEND)
                curator_settle_item(ds, ci);
            else
                ci->refs++; /* on_dead_dir's */
            curator_item_put(ci);
            return;
        }
    }
    if (rc == ZOK) {
        count_verdicts(ds, ci);
        curator_settle_finish(ds, ci, NULL);
    } else if (item_gone) {
        /* Deleted by someone else while we held it (or by our own earlier try whose answer
         * was lost): nothing is left to settle but our lock. */
        curator_item_unlock(ds, ci);
        curator_settle_finish(ds, ci, NULL);
    } else if (lock_gone || zk_session_gone(rc)) {
        log_warn("queue %s: Curator item %s: our lock is gone (%s)", qc->name, ci->name,
                 zk_strerror(rc));
        curator_settle_finish(ds, ci, "the lock was lost");
    } else {
        char path[ITEM_PATH_MAX];
        if (rc == ZNOAUTH)
            queue_denied(ci->cq->q, settle_refused(ci, res, path, sizeof path));
        retry_settle(ds, ci, rc);
    }
    curator_item_put(ci);
}

/* Does any part have verdict V? */
static int any(const struct citem *ci, enum verdict v)
{
    for (size_t i = 0; ci->verdict && i < ci->nparts; i++)
        if (ci->verdict[i] == v)
            return 1;
    return 0;
}

/* One transaction: delete the item, create the requeue of nacked parts and the dead
 * letter of dead ones, delete our lock. Curator consumers see the item go and, with it,
 * the lock; a Curator consumer that tries it meanwhile finds the lock taken. Sent only
 * while the session that took the lock lasts: the lock's name does not say whose it is. */
void curator_settle_item(struct dispatcher *ds, struct citem *ci)
{
    char item[ITEM_PATH_MAX], lock[ITEM_PATH_MAX], requeue[ITEM_PATH_MAX];
    size_t nack_len = 0, dead_len = 0;
    if (!ci->locked || ci->lock_session != dispatcher_deferd(ds)->session_id) {
        curator_settle_finish(ds, ci, "the ZooKeeper session was lost");
        return;
    }
    unsigned char *nack = frame_of(ci, V_NACK, &nack_len), *dead = frame_of(ci, V_DEAD, &dead_len);
    struct zk_txn_op ops[4];
    int n = 0, rc = ZK_ENOMEM;
    if ((any(ci, V_NACK) && !nack) || (any(ci, V_DEAD) && !dead)) /* out of memory */
        goto out;
    if (curator_item_path(ci, item, sizeof item) != 0 ||
        curator_item_lock_path(ci, lock, sizeof lock) != 0 ||
        (nack && requeue_path(ds, ci, requeue, sizeof requeue) != 0) ||
        (dead && dead_path(ds, ci) != 0)) {
        rc = ZK_ETOOLONG;
        goto out;
    }
    ops[n++] = (struct zk_txn_op){.kind = ZT_DELETE, .path = item, .version = -1};
    if (nack)
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = requeue, .data = nack,
                                      .len = nack_len, .sequential = 1};
    if (dead)
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = ci->dead_path, .data = dead,
                                      .len = dead_len};
    ops[n++] = (struct zk_txn_op){.kind = ZT_DELETE, .path = lock, .version = -1};
    ci->refs++;
    ci->settling = 1;
    if ((rc = txnbatch_add(dispatcher_settles(ds), ops, n, on_settled, ci)) != ZOK) {
        ci->refs--;
        ci->settling = 0;
    }
out:
    free(nack);
    free(dead);
    if (rc != ZOK)
        retry_settle(ds, ci, rc);
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
    curator_settle_item(ds, ci);
}

void curator_settle_part(struct dispatcher *ds, struct job *job, int ack, int has_delay,
                         uint64_t delay_ms, struct reply *r)
{
    struct citem *ci = job->ci;
    job_transition(job, JE_PARK);
    job_unhold(ds, job);
    if (!ack && has_delay) {
        ci->has_nack_delay = 1;
        if (delay_ms > ci->nack_delay_ms)
            ci->nack_delay_ms = delay_ms;
    }
    /* the last allowed attempt failed: to the dead letters, as native jobs go */
    int dead = !ack && job->attempt >= job->q->cfg->max_attempts;
    part_done(ds, job, ack ? V_ACK : dead ? V_DEAD : V_NACK, r);
}

void curator_settle_release(struct dispatcher *ds, struct job *job, int delivered)
{
    job_unhold(ds, job);
    if (delivered && ++job->attempt > job->q->cfg->max_attempts) {
        job_transition(job, JE_PARK);
        part_done(ds, job, V_DEAD, NULL);
        return;
    }
    dispatcher_make_ready(ds, job); /* the item stays locked: delivered again from here */
}

void curator_settle_job_freed(struct job *job)
{
    struct citem *ci = job->ci;
    job->ci = NULL;
    if (ci->head == job)
        ci->head = NULL;
    if (ci->cq->blocked && ci->cq->started) { /* a new item of the same name waits */
        ci->cq->blocked = 0;
        curator_listing_request(ci->cq, 0);
    }
    for (size_t i = 0; ci->parts && i < ci->nparts; i++)
        if (ci->parts[i] == job)
            ci->parts[i] = NULL;
    curator_item_put(ci);
}

