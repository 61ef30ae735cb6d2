#include "lock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "ahead.h"
#include "attempts.h"
#include "claim.h"
#include "config.h"
#include "daemon.h"
#include "dispatcher_int.h"
#include "dispatcher_jobs.h"
#include "failpoint.h"
#include "jobs.h"
#include "limit.h"
#include "rate.h"
#include "settle.h"
#include "foreign_format.h"
#include "log.h"
#include "txnbatch.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

static void on_lock_checked(const struct zk_result *res, void *ctx);

void lock_path(const struct job *job, char *buf, size_t len)
{
    layout_lock_path(buf, len, job->path);
}

/* The owner node is created sequential: its suffix is the job's cversion at that moment,
 * which counts the job's deliveries (see on_locked) with no read. OWNER_SEQ_UNKNOWN gives
 * the prefix to create it with. */
void lock_paths(const struct job *job, struct lock_paths *lp)
{
    lock_path(job, lp->lock, sizeof lp->lock);
    layout_owner_path(lp->owner, sizeof lp->owner, job->path, (uint64_t)job->lock_session,
                      job->owner_seq == OWNER_SEQ_UNKNOWN ? -1 : (int64_t)job->owner_seq);
}

/* Our lock is given back after a failure that would happen again at once (a read or a
 * dead-lettering refused): the job waits ZK_RETRY_MS before it is offered again. */
void lock_release_later(struct dispatcher *ds, struct job *job)
{
    job->not_before = cluster_now_ms() + ZK_RETRY_MS;
    lock_release(ds, job);
}

void lock_watch(struct dispatcher *ds, struct job *job)
{
    char lock[LAYOUT_PATH_MAX + 8];
    lock_path(job, lock, sizeof lock);
    job_transition(job, JE_CHECK);
    int rc = zkstore_exists(ds->d->zs, lock, 1, on_lock_checked, job);
    if (rc != ZOK)
        dispatcher_retry_later(ds, job, "watching the lock", rc);
}

/* A job written by another client with more data than max_payload is never pushed: the
 * consumers were promised no more (and a client library may refuse it, failing every
 * consumer in turn). It stays in ZooKeeper, unlocked, for the operator (deferctl show,
 * cancel); this daemon leaves it alone until it restarts. */
static int oversized(struct dispatcher *ds, struct job *job)
{
    uint64_t max = ds->d->cfg->max_payload;
    if (job->ci || job->len <= max)
        return 0;
    log_at_site(job->not_before == INT64_MAX ? LOG_DEBUG : LOG_WARN, /* said once */
            "queue %s: job %s: its data is %zu bytes, over max_payload %llu: not delivered, "
            "left in ZooKeeper (deferctl show/cancel)",
            job->q->cfg->name, job->id, job->len, (unsigned long long)max);
    job_drop_payload(ds, job);
    job->not_before = INT64_MAX; /* released, and never offered again */
    lock_release(ds, job);
    return 1;
}

static void on_fetched(const struct zk_result *res, void *ctx)
{
    struct job *job = ctx;
    struct dispatcher *ds = job->q->ds;
    if (res->rc != ZOK) {
        if (res->rc == ZNOAUTH) /* logged once for the queue */
            queue_denied(job->q, job->path);
        log_at_site(res->rc == ZNOAUTH ? LOG_DEBUG : LOG_WARN, "queue %s: job %s: reading its data "
                "failed: %s; released, offered again in %d ms", job->q->cfg->name, job->id,
                zk_strerror(res->rc), ZK_RETRY_MS);
        lock_release_later(ds, job);
        return;
    }
    /* an empty payload is answered with -1 and NULL */
    if (!job->payload &&
        job_keep_payload(ds, job, res->data, res->datalen > 0 ? (size_t)res->datalen : 0) != 0) {
        lock_release(ds, job);
        return;
    }
    if (oversized(ds, job))
        return;
    dispatcher_deliver(ds, job);
}

/* Each delivery creates two children (lock, then owner). A sequential name's suffix is the
 * number of children the parent has ever had created (ZooKeeper's internal cversion, which
 * deletes do not move), so the n-th delivery's owner node gets 2(n - 1) + 1: attempts are
 * counted durably at no extra write and no read. */
static int owner_locked(struct job *job, const struct zk_result *res)
{
    const char *name = res->op_path ? res->op_path[LOCK_OWNER_OP] : NULL;
    size_t n = name ? strlen(name) : 0;
    char *end;
    if (n < 10)
        return -1;
    unsigned long seq = strtoul(name + n - 10, &end, 10);
    if (*end || seq > UINT32_MAX - 4)
        return -1;
    job->owner_seq = (uint32_t)seq;
    job->attempt = attempts_from_owner_seq(job->jn.prior_attempts, (uint32_t)seq);
    return 0;
}

/* The lock's multi failed on its slot only (limit.h): nothing was taken, and the job is
 * offered again at once with another slot, or waits for one. */
static void slot_refused(struct dispatcher *ds, struct job *job)
{
    job_unheap(job); /* out of the prelocking heap */
    job_unhold(ds, job);
    job_unprelock(job);
    dispatcher_schedule(ds, job, (int64_t)job->jn.due_ms);
}

/* The lock (or claim) was not taken: RC says why. */
static void lock_refused(struct dispatcher *ds, struct job *job, int rc, const char *what)
{
    struct dqueue *q = job->q;
    job_unheap(job); /* out of the prelocking heap */
    job_unhold(ds, job);
    job_unprelock(job);
    if (rc == ZNONODE) {          /* acked or cancelled elsewhere */
        job_free(ds, job);
    } else if (rc == ZNODEEXISTS || rc == ZNOTEMPTY) { /* another daemon holds it */
        job->zversion = -1; /* its delivery changes what a claim must read (claim.h) */
        job->under_name = UNDER_NAME_UNKNOWN;
        if (!job_settled_gone(ds, job))
            lock_watch(ds, job);
    } else {
        dispatcher_retry_later(ds, job, what, rc);
        return;
    }
    dispatcher_dispatch(ds, q);
}

static void on_locked(const struct zk_result *res, void *ctx)
{
    struct job *job = ctx;
    struct dispatcher *ds = job->q->ds;
    int rate_op = LOCK_SLOT_OP + (job->slot != LIMIT_NO_SLOT) + (job->gslot != LIMIT_NO_SLOT);
    if (res->rc == ZOK)
        ahead_lock_rtt(&job->q->ahead, cluster_mono_us() - job->lock_sent_us);
    int limited = limit_locked(job->q->limit, job, res->rc, zk_failed_op(res), LOCK_SLOT_OP);
    if (rate_locked(job->q->rate, job, res->rc, zk_failed_op(res), rate_op) || limited) {
        slot_refused(ds, job); /* another daemon took that slot: try another */
        return;
    }
    if (res->rc == ZOK) {
        job->gone = 0; /* the check inside the transaction just proved it exists */
        if (owner_locked(job, res) != 0) {
            log_error("queue %s: job %s: no sequence in our owner node's name", job->q->cfg->name,
                      job->id);
            job->owner_seq = OWNER_SEQ_UNKNOWN;
            lock_release(ds, job);
            return;
        }
        if (job->payload) {
            if (!oversized(ds, job))
                dispatcher_deliver(ds, job);
            return;
        }
        ds->reads++;
        int rc = zkstore_get(ds->d->zs, job->path, on_fetched, job);
        if (rc != ZOK)
            lock_release(ds, job);
        return;
    }
    lock_refused(ds, job, res->rc, "taking the lock");
}

/* ---- layout version 3: due jobs claimed, not locked (claim.h) ---- */

/* Payloads up to this go into a claim with others; a bigger job is locked as before. */
#define CLAIM_PAYLOAD_MAX (64 * 1024)

/* A job claimed instead of locked: the root's layout is 3, this session's claims may be
 * taken, and the job has nothing a claim does not keep yet (a key, a flow, a limit's or a
 * rate's slot) and no payload too big to be copied into one. */
static int claimable(struct dispatcher *ds, const struct job *job)
{
    const struct queue_config *qc = job->q->cfg;
    return ds->d->layout_version >= LAYOUT_VERSION_CLAIMS && ds->d->session_id != 0 &&
           claims_session_id(ds->claims) == ds->d->session_id && !job->ci &&
           !job->jn.key[0] && !job->jn.flow[0] && !job->jn.pack[0] && !qc->concurrency &&
           !qc->group_concurrency && !qc->rate_n && !qc->group_rate_n &&
           (!job->payload || job->len <= CLAIM_PAYLOAD_MAX);
}

static void lock_send(struct dispatcher *ds, struct job *job);
static void claim_send(struct dispatcher *ds, struct job *job);

static void on_claimed(struct job *job, int rc)
{
    struct dispatcher *ds = job->q->ds;
    if (rc == ZBADVERSION) { /* made again since we read it (or put it): read it again */
        job->zversion = -1;
        job->under_name = UNDER_NAME_UNKNOWN;
        claim_send(ds, job);
        return;
    }
    if (rc != ZOK) {
        lock_refused(ds, job, rc, "claiming it");
        return;
    }
    ahead_lock_rtt(&job->q->ahead, cluster_mono_us() - job->lock_sent_us);
    job->gone = 0; /* deleted by our claim: held in it now */
    job->attempt = job->jn.prior_attempts + job->under_name + 1;
    dispatcher_deliver(ds, job);
}

static void on_claim_read(const struct zk_result *res, void *ctx)
{
    struct job *job = ctx;
    struct dispatcher *ds = job->q->ds;
    if (res->rc != ZOK) {
        lock_refused(ds, job, res->rc, "reading it to claim it");
        return;
    }
    if (res->stat.numChildren > 0) { /* locked the version 2 way */
        lock_refused(ds, job, ZNOTEMPTY, "claiming it");
        return;
    }
    if (!job->payload &&
        job_keep_payload(ds, job, res->data, res->datalen > 0 ? (size_t)res->datalen : 0) != 0) {
        lock_refused(ds, job, ZSYSTEMERROR, "keeping its payload");
        return;
    }
    job->zversion = res->stat.version;
    job->under_name = attempts_from_cversion(job->jn.prior_attempts, res->stat.cversion) -
                      job->jn.prior_attempts;
    if (job->len > CLAIM_PAYLOAD_MAX || job->len > ds->d->cfg->max_payload) {
        lock_send(ds, job); /* too big to copy: locked, and refused there if over max_payload */
        return;
    }
    int rc = claims_take(ds->claims, job, on_claimed);
    if (rc != ZOK)
        lock_send(ds, job);
}

/* Reads the job first unless its payload, data version and deliveries are known (our own
 * put's are), then claims it. */
static void claim_send(struct dispatcher *ds, struct job *job)
{
    int rc;
    if (job->payload && job->zversion >= 0 && job->under_name != UNDER_NAME_UNKNOWN) {
        rc = claims_take(ds->claims, job, on_claimed);
    } else {
        ds->reads++;
        rc = zkstore_get(ds->d->zs, job->path, on_claim_read, job);
    }
    if (rc != ZOK) {
        job_unheap(job); /* out of the prelocking heap */
        job_unprelock(job);
        dispatcher_retry_later(ds, job, "claiming it", rc);
    }
}

/* The state and the heaps of a job whose lock (or claim) is on its way. */
static void lock_begin(struct dispatcher *ds, struct job *job, struct consumer *c)
{
    job->lock_session = ds->d->session_id;
    job->owner_seq = OWNER_SEQ_UNKNOWN;
    job_transition(job, JE_LOCK);
    job->uncertain = 0;
    job->lock_sent_us = cluster_mono_us();
    if (c)
        consumer_hold(c, job);
    else if (heap_push(job->ahead ? &job->q->ahead_locking : &job->q->prelocking, job) != 0)
        log_error("queue %s: out of memory for job %s", job->q->cfg->name, job->id);
}

void lock_take(struct dispatcher *ds, struct job *job, struct consumer *c)
{
    lock_begin(ds, job, c);
    if (claimable(ds, job))
        claim_send(ds, job);
    else
        lock_send(ds, job);
}

/* The version 2 lock: multi(create lock, create owner-S- [, slots] [, a rate slot]). */
static void lock_send(struct dispatcher *ds, struct job *job)
{
    struct lock_paths lp;
    char slots[LIMIT_OPS_MAX][LAYOUT_PATH_MAX], rate[RATE_OPS_MAX][LAYOUT_PATH_MAX];
    job->zversion = -1; /* a lock's delivery is counted in the child version: read it */
    job->under_name = UNDER_NAME_UNKNOWN;
    lock_paths(job, &lp);
    struct zk_txn_op ops[LOCK_SLOT_OP + LIMIT_OPS_MAX + RATE_OPS_MAX] = {
        {.kind = ZT_CREATE, .path = lp.lock, .data = ds->ident, .len = strlen(ds->ident),
         .ephemeral = 1},
        {.kind = ZT_CREATE, .path = lp.owner, .ephemeral = 1, .sequential = 1},
    };
    int slotted = limit_take(job->q->limit, job, &ops[LOCK_SLOT_OP], slots);
    int nops = LOCK_SLOT_OP + (slotted > 0 ? slotted : 0);
    int rated = slotted < 0 ? 0 : rate_take(job->q->rate, job, &ops[nops], rate);
    if (rated < 0) /* not sent after all: the slots go back */
        limit_locked(job->q->limit, job, ZAPIERROR, -1, LOCK_SLOT_OP);
    nops += rated > 0 ? rated : 0;
    if (slotted < 0 || rated < 0) { /* no slot (a lock ahead begun before a reload set one) */
        slot_refused(ds, job);
        return;
    }
    int rc = failpoint_hit("lock-batch-refuses") ? ZCLOSING
                                                  : txnbatch_add(ds->locks, ops, nops, on_locked, job);
    if (rc != ZOK) { /* never sent: the slots it took are free again, as a rolled back multi's */
        limit_locked(job->q->limit, job, ZAPIERROR, -1, LOCK_SLOT_OP);
        rate_locked(job->q->rate, job, ZAPIERROR, -1, LOCK_SLOT_OP);
        job_unheap(job); /* out of the prelocking heap */
        job_unprelock(job); /* no lock was taken: the retry starts from scratch */
        dispatcher_retry_later(ds, job, "sending the lock transaction", rc);
    }
}

static void on_lock_checked(const struct zk_result *res, void *ctx)
{
    struct job *job = ctx;
    struct dispatcher *ds = job->q->ds;
    job_transition(job, JE_PARK);
    if (job_settled_gone(ds, job))
        return;
    if (res->rc == ZNONODE) {
        dispatcher_schedule(ds, job, (int64_t)job->jn.due_ms); /* it may have been locked ahead */
    } else if (res->rc != ZOK) {
        dispatcher_retry_later(ds, job, "watching the lock", res->rc);
    } else if (res->stat.ephemeralOwner == ds->d->session_id) {
        lock_release(ds, job); /* ours from a delivery whose release failed: free it */
    }
    /* else: wait for the watch (lock_watch_fired) */
}

void lock_watch_fired(struct dispatcher *ds, const char *lock)
{
    char path[LAYOUT_PATH_MAX + 8];
    size_t n = strlen(lock), suffix = strlen("/" LAYOUT_LOCK);
    if (n <= suffix || n >= sizeof path || strcmp(lock + n - suffix, "/" LAYOUT_LOCK) != 0)
        return;
    memcpy(path, lock, n - suffix);
    path[n - suffix] = '\0';
    struct job *job = job_find_path(ds, path);
    if (job && job->state == JS_HELD) /* another daemon may have locked it ahead */
        dispatcher_schedule(ds, job, (int64_t)job->jn.due_ms);
}

/* After a reconnection with the same session our locks should all still be there; one
 * that is not (deleted by hand meanwhile) means the job is no longer ours to hand out. */
struct owner_check {
    struct dispatcher *ds;
    char path[];                /* the job's: looked up again, it may be gone by then */
};

static void on_owner_checked(const struct zk_result *res, void *ctx)
{
    struct owner_check *oc = ctx;
    struct dispatcher *ds = oc->ds;
    struct job *job = job_find_path(ds, oc->path);
    if (job && job->state == JS_INFLIGHT && res->rc == ZNONODE) {
        log_warn("queue %s: job %s: our lock vanished while disconnected; revoking it",
                 job->q->cfg->name, job->id);
        job_revoke(ds, job, LOST_LOCK);
        job_unhold(ds, job);
        dispatcher_make_ready(ds, job);
    }
    free(oc);
}

void lock_verify_held(struct dispatcher *ds)
{
    struct job *job, *tmp;
    if (ds->foreign)
        ds->foreign->resync(ds); /* checks its own locks */
    JOBS_EACH(ds, job, tmp) {
        if (job->state != JS_INFLIGHT || job->ci || job->claim)
            continue; /* a claim's next write says whether it is still ours */
        struct lock_paths lp;
        size_t n = strlen(job->path) + 1;
        struct owner_check *oc = malloc(sizeof *oc + n);
        if (!oc)
            continue;
        oc->ds = ds;
        memcpy(oc->path, job->path, n);
        lock_paths(job, &lp);
        if (zkstore_exists(ds->d->zs, lp.owner, 0, on_owner_checked, oc) != ZOK)
            free(oc);
    }
}

static void on_released(const struct zk_result *res, void *ctx)
{
    struct job *job = ctx;
    struct dispatcher *ds = job->q->ds;
    if (res->rc != ZOK && res->rc != ZNONODE) {
        dispatcher_retry_later(ds, job, "releasing the lock", res->rc);
        return;
    }
    int nslots = (job->slot != LIMIT_NO_SLOT) + (job->gslot != LIMIT_NO_SLOT);
    int which = zk_failed_op(res) - (res->nops - nslots); /* among the slot deletes */
    if (res->rc == ZNONODE && nslots && which >= 0) {
        limit_slot_missing(job->q->limit, job, which); /* deleted by hand: release without it */
        lock_release(ds, job);
        return;
    }
    limit_released(job->q->limit, job, res->rc == ZOK);
    /* A lock taken ahead and given back (pause, drain) waits for its due time again; one
     * given back after a failure, for its retry time (dispatcher_place() knows it). */
    if (!job_settled_gone(ds, job) && dispatcher_place(ds, job, (int64_t)job->jn.due_ms))
        dispatcher_dispatch(ds, job->q);
}

static void on_owner_listed(const struct zk_result *res, void *ctx)
{
    struct job *job = ctx;
    struct dispatcher *ds = job->q->ds;
    char prefix[64];
    snprintf(prefix, sizeof prefix, LAYOUT_OWNER "%llx-", (unsigned long long)job->lock_session);
    size_t n = strlen(prefix);
    for (int i = 0; res->rc == ZOK && i < res->nchildren; i++) {
        const char *name = res->children[i];
        char *end;
        unsigned long seq;
        if (strncmp(name, prefix, n) == 0 && strlen(name + n) == 10 &&
            (seq = strtoul(name + n, &end, 10)) < OWNER_SEQ_UNKNOWN && !*end) {
            job->owner_seq = (uint32_t)seq;
            lock_release(ds, job);
            return;
        }
    }
    if (res->rc == ZNONODE) {
        if (!job_settled_gone(ds, job))
            job_free(ds, job);
        return;
    }
    if (res->rc != ZOK) {
        dispatcher_retry_later(ds, job, "looking for our owner node", res->rc);
        return;
    }
    /* Our lock (we only get here after seeing it ours) without its owner node, deleted
     * by hand: delete the lock alone. */
    char lock[LAYOUT_PATH_MAX + 8], slots[LIMIT_OPS_MAX][LAYOUT_PATH_MAX];
    lock_path(job, lock, sizeof lock);
    struct zk_txn_op ops[1 + LIMIT_OPS_MAX] = {{.kind = ZT_DELETE, .path = lock, .version = -1}};
    int nops = 1 + limit_release_ops(job->q->limit, job, &ops[1], slots);
    int rc = txnbatch_add(ds->settles, ops, nops, on_released, job);
    if (rc != ZOK)
        dispatcher_retry_later(ds, job, "releasing the lock", rc);
}

/* Lists the job's children to learn our owner node's name. */
static void find_owner(struct dispatcher *ds, struct job *job)
{
    job_transition(job, JE_SETTLE);
    int rc = zkstore_children(ds->d->zs, job->path, 0, on_owner_listed, job);
    if (rc != ZOK)
        dispatcher_retry_later(ds, job, "looking for our owner node", rc);
}

/* Gives up our lock so that the job is delivered again (attempt + 1). */
void lock_release(struct dispatcher *ds, struct job *job)
{
    if (job->ci) {
        ds->foreign->release(ds, job, job->state == JS_INFLIGHT);
        return;
    }
    if (job->claim) { /* made again from its claim, this delivery counted */
        settle_release_claimed(ds, job);
        return;
    }
    struct lock_paths lp;
    lock_paths(job, &lp);
    job_unhold(ds, job);
    job_unprelock(job);
    if (job->uncertain) { /* the lock may be someone else's now: look before deleting */
        job->uncertain = 0;
        lock_watch(ds, job);
        return;
    }
    if (job->owner_seq == OWNER_SEQ_UNKNOWN) { /* a lock whose answer we never got */
        find_owner(ds, job);
        return;
    }
    char slots[LIMIT_OPS_MAX][LAYOUT_PATH_MAX];
    struct zk_txn_op ops[2 + LIMIT_OPS_MAX] = {
        {.kind = ZT_DELETE, .path = lp.owner, .version = -1},
        {.kind = ZT_DELETE, .path = lp.lock, .version = -1},
    };
    int n = 2 + limit_release_ops(job->q->limit, job, &ops[2], slots);
    job_transition(job, JE_SETTLE);
    int rc = txnbatch_add(ds->settles, ops, n, on_released, job);
    if (rc != ZOK)
        dispatcher_retry_later(ds, job, "releasing the lock", rc);
}
