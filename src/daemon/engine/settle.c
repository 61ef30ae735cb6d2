/* Settling a held job: ack, nack (move or dead-letter), NACK unrun=1, and the follow-up
 * jobs of either, each one ZooKeeper transaction that deletes our owner node, so it applies
 * only while this session still holds the job. Outcomes that the connection leaves unknown
 * are verified before anyone is answered; settles asked for while ZooKeeper is away wait
 * for it (the same session) or fail (a new one). Lease expiry is lease.c's, the plain
 * release of a lock lock.c's. */
#include "settle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "attempts.h"
#include "claim.h"
#include "claim_outcome.h"
#include "config.h"
#include "daemon.h"
#include "dispatcher_int.h"
#include "jobtrace.h"
#include "dispatcher_jobs.h"
#include "jobs.h"
#include "limit.h"
#include "lease.h"
#include "lock.h"
#include "flow.h"
#include "foreign_format.h"
#include "jobedit.h"
#include "log.h"
#include "metrics.h"
#include "protocol.h"
#include "putset.h"
#include "reply.h"
#include "txnbatch.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

/* ---- ack and nack: one transaction each ---- */

enum settle_op { SETTLE_ACK, SETTLE_NACK };

struct settle {
    struct settle *next;        /* in dispatcher->held */
    struct job *job;
    struct reply *r;
    enum settle_op op;
    int has_delay;              /* nack with delay: move the job */
    int bury;                   /* the move goes to the dead letters */
    int precheck;               /* verifying the lock before sending, not after */
    int unrun;                  /* NACK unrun=1: the job goes back uncounted */
    int unrun_same;             /* ... under the same name: reply plain OK */
    uint32_t replay;            /* ... its deliveries under it made again (attempts.h) */
    int made_parents;
    int next_op;                /* index of the create of next_path (3; 1 for a claimed job) */
    int claim_write;            /* a claimed job: its claim's write is in this transaction */
    int claim_check;            /* ... whose answer was lost: to be read once connected */
    int claimed;                /* the job was claimed when its settle was sent */
    int key_op;                 /* index of the job's key node operation, or -1 */
    int slot_op;                /* index of its first slot delete (limit.h), or -1 */
    char slot_paths[LIMIT_OPS_MAX][LAYOUT_PATH_MAX];
    int skip_key;               /* the key node is missing (job written by hand): leave it */
    struct flow_settle flow;    /* a flow's child: its count and the parent's release */
    struct putset *followups;   /* ACK/NACK then=: jobs created in the same transaction */
    char next_path[LAYOUT_PATH_MAX];
    char next_child[LAYOUT_PATH_MAX + 8]; /* a claimed job made again: its replays' child */
    char claim_path[LAYOUT_PATH_MAX]; /* a claimed job: the claim its settle writes */
    char next_id[LAYOUT_ID_MAX + 1];
    char key_path[LAYOUT_PATH_MAX];
    char key_data[LAYOUT_ID_MAX + 32];
};

static void settle_free(struct settle *st)
{
    flow_settle_clear(&st->flow);
    putset_free(st->followups);
    free(st);
}

static const char *settle_name(const struct settle *st)
{
    return st->op == SETTLE_ACK ? "ack" : "nack";
}

/* What a late ACK, NACK or TOUCH of a job taken from its consumer is told. */
static const char *lost_text(enum lost_reason why)
{
    switch (why) {
    case LOST_CANCELLED:
        return "the job was cancelled while held (CANCEL force=1): it is gone and will not "
               "be delivered again";
    case LOST_SESSION:
        return "the daemon's ZooKeeper session was lost; the job will be delivered again";
    case LOST_LOCK:
        return "its lock vanished from ZooKeeper; the job will be delivered again";
    case LOST_DRAIN:
        return "the daemon's drain_grace ran out at shutdown; the job will be delivered again";
    default:
        return "lease expired; the job will be delivered again";
    }
}

/* The job C holds by ID, or NULL with the reply sent. An ACK or NACK (ANSWERS) of a job
 * taken from C frees the slot it kept. */
struct job *settle_held_job(struct dispatcher *ds, struct consumer *c, const char *id,
                            int answers, struct reply *r)
{
    struct job *job = job_find(ds, id);
    if (job && job->owner == c && job->state == JS_INFLIGHT)
        return job;
    enum lost_reason why = consumer_lost(c, id);
    if (why == LOST_NONE) {
        reply_err(r, PE_NOT_FOUND, "job %s is not held by this connection", id);
        return NULL;
    }
    reply_err(r, PE_LEASE_LOST, "job %s: %s", id, lost_text(why));
    if (answers && consumer_answer_lost(c, id))
        dispatcher_consumer_changed(ds, c);
    return NULL;
}

/* The lock is not ours any more: someone else may hold the job now, or it was cancelled
 * (CANCELLED: the job itself is gone). */
static void lease_lost_as(struct dispatcher *ds, struct settle *st, int cancelled)
{
    struct job *job = st->job;
    if (st->r && cancelled)
        reply_err(st->r, PE_LEASE_LOST, "job %s: %s; this %s changed nothing", job->id,
                  lost_text(LOST_CANCELLED), settle_name(st));
    else if (st->r)
        reply_err(st->r, PE_LEASE_LOST, "job %s: lease lost (its lock went); this %s "
                  "changed nothing", job->id, settle_name(st));
    job_unhold(ds, job);
    limit_released(job->q->limit, job, 0); /* ours or not, ZooKeeper says */
    if (job->claim) { /* its claim is someone else's now: it brings the job back */
        struct dqueue *q = job->q;
        job_free(ds, job);
        dispatcher_dispatch(ds, q);
        return;
    }
    if (!job_settled_gone(ds, job))
        dispatcher_make_ready(ds, job);
}

static void lease_lost(struct dispatcher *ds, struct settle *st)
{
    lease_lost_as(ds, st, st->job->gone);
}

static void on_gone_checked(const struct zk_result *res, void *ctx)
{
    struct settle *st = ctx;
    if (res->rc == ZNONODE)
        st->job->gone = 1;
    lease_lost_as(st->job->q->ds, st, res->rc == ZNONODE);
    settle_free(st);
}

/* Our owner node is gone: the session's locks went, or the job was cancelled with them.
 * Which one is told by the job itself, unless the mirror said already. 1 when asking. */
static int ask_if_cancelled(struct dispatcher *ds, struct settle *st)
{
    if (st->job->gone || !st->r || st->followups ||
        zkstore_exists(ds->d->zs, st->job->path, 0, on_gone_checked, st) != ZOK)
        return 0;
    job_transition(st->job, JE_SETTLE);
    return 1;
}

/* Known not applied: the job is still ours and the consumer may try again. A denial was
 * logged for the queue already (queue_denied). */
static void settle_failed(struct settle *st, int rc)
{
    struct job *job = st->job;
    log_at_site(rc == ZNOAUTH ? LOG_DEBUG : LOG_WARN, "queue %s: job %s: %s failed: %s",
            job->q->cfg->name, job->id, settle_name(st), zk_strerror(rc));
    if (st->r)
        reply_refuse(st->r, PE_UNAVAILABLE, &(struct refusal){.reason = zk_refusal_reason(rc)},
                     "%s failed%s: %s; the job is still held", settle_name(st),
                     rc == ZNOAUTH ? "" : " in ZooKeeper", zk_reason(rc));
    lease_arm(job->q->ds, job); /* the lease runs on as before */
    if (!job->owner) /* no one to try again: given back, not at once (it would fail again) */
        lock_release_later(job->q->ds, job);
}

static void reply_settled(struct settle *st)
{
    const char *next = st->has_delay && !st->bury && !st->unrun_same ? st->next_id : NULL;
    char *ids = NULL, *text = NULL, dead[8 + LAYOUT_ID_MAX];
    if (!st->followups && st->bury) { /* the consumer learns where the job went */
        snprintf(dead, sizeof dead, "dead=%s", st->next_id);
        reply_ok(st->r, dead);
        return;
    }
    if (!st->followups) {
        reply_ok(st->r, next);
        return;
    }
    if (putset_format(&st->followups, 1, 0, &ids) != 0 ||
        asprintf(&text, "%s%s%s", next ? next : "", next ? " " : "", ids) < 0)
        text = NULL;
    if (text)
        reply_ok(st->r, text);
    else
        reply_err(st->r, PE_INTERNAL, "out of memory (the %s was applied)", settle_name(st));
    free(ids);
    free(text);
}

/* The settle released parents of flows (flow.h): counted, and the top one logged. */
static void flows_released(struct dispatcher *ds, struct settle *st)
{
    int dead = 0, n = flow_settle_released(&st->flow, &dead);
    if (!n)
        return;
    /* below the top one, each released parent went to the dead letters (and up) */
    ds->flows.released += dead == 0;
    ds->flows.dead_lettered += (unsigned long long)n - 1 + (dead != 0);
    const char *path;
    char queue[LAYOUT_ID_MAX + 1];
    unsigned char *payload;
    size_t len;
    struct dqueue *q;
    /* made a job here: delivered without waiting to list it, as a job put here */
    if (flow_settle_parent_job(&st->flow, &path, queue, sizeof queue, &payload, &len)) {
        struct job_name jn;
        const char *slash = strrchr(path, '/');
        if ((q = dispatcher_queue(ds, queue)) && slash && layout_parse_name(slash + 1, &jn) == 0)
            ds->put_env.stored(ds->put_env.engine, q, path, &jn, NULL, &payload, len);
        free(payload);
    }
    log_info("queue %s: job %s was the last child of its flow: %d parent%s released, the last "
             "%s", st->job->q->cfg->name, st->job->id, n, n == 1 ? "" : "s",
             dead ? "to the dead letters" : "due");
}

static void settled(struct dispatcher *ds, struct settle *st)
{
    struct job *job = st->job;
    flows_released(ds, st);
    limit_released(job->q->limit, job, 1); /* its delete was in the transaction applied */
    if (st->bury)
        log_warn("queue %s: job %s dead-lettered after %u attempts (max_attempts %u) as "
                 "%s (deferctl dead show %s)", job->q->cfg->name, job->id, job->attempt,
                 job->q->cfg->max_attempts, st->next_id, st->next_id);
    if ((st->r || !st->bury) && !st->unrun) /* no consumer's nack: a bury without a
                                               * reply, a job given back unrun */
        metrics_event(ds->d->metrics, job->q->cfg, st->op == SETTLE_ACK ? ME_ACKED : ME_NACKED);
    if (st->bury)
        metrics_event(ds->d->metrics, job->q->cfg, ME_DEAD_LETTERED);
    if (st->r)
        reply_settled(st);
    if (st->op == SETTLE_ACK || st->bury)
        queue_pending_changed(job->q, -1);
    if (st->followups)
        putset_created(st->followups); /* counted once, also when learnt by verifying */
    if (st->unrun_same && !job->gone) { /* the same znode path again: keep the job */
        job->given_back = 1;
        job->owner_seq = OWNER_SEQ_UNKNOWN;
        if (st->claimed) { /* made again: created and set once (claim.h), replayed */
            job->zversion = 1;
            job->under_name = st->replay;
        }
        job_unhold(ds, job);
        dispatcher_schedule(ds, job, (int64_t)job->jn.due_ms); /* a lock ahead: maybe not due */
    } else if (st->op == SETTLE_ACK || st->has_delay || job->gone) {
        struct dqueue *q = job->q;
        job_free(ds, job); /* a moved job reappears through the mirror */
        dispatcher_dispatch(ds, q);
    } else {
        job_unhold(ds, job);
        dispatcher_make_ready(ds, job);
    }
}

static void on_settled(const struct zk_result *res, void *ctx);
static void verify(struct dispatcher *ds, struct settle *st);
static void on_claim_checked(void *ctx, int rc);
static void hold_settle(struct dispatcher *ds, struct settle *st);

/* The job's key node follows it: deleted with it, kept as "done" for the queue's
 * key_retention, or pointed at its new name. Returns the operation, or 0 for none. */
static int key_op(struct dispatcher *ds, struct settle *st, struct zk_txn_op *op)
{
    struct job *job = st->job;
    int keep = st->op == SETTLE_ACK && job->q->cfg->key_retention_ms > 0;
    if (!job->jn.key[0] || st->skip_key || (st->op == SETTLE_NACK && !st->has_delay) ||
        st->unrun_same ||
        layout_key_path(st->key_path, sizeof st->key_path, dispatcher_root(ds), job->q->cfg->name,
                        job->jn.key) != 0)
        return 0;
    *op = (struct zk_txn_op){.kind = ZT_DELETE, .path = st->key_path, .version = -1};
    if (!keep && (st->op == SETTLE_ACK || st->bury))
        return 1;
    if (!keep)
        snprintf(st->key_data, sizeof st->key_data, "%s", strchr(st->next_id, '/') + 1);
    else if (layout_kept_key_data(st->key_data, sizeof st->key_data, cluster_now_ms(),
                                  &job->jn) != 0)
        return 0;
    *op = (struct zk_txn_op){.kind = ZT_SET, .path = st->key_path, .data = st->key_data,
                             .len = strlen(st->key_data), .version = -1};
    return 1;
}

static void on_followups_done(struct putset *ps, int rc, const struct zk_result *res,
                              void *ctx);

/* The settle ends the job: a flow's child is counted in its transaction. */
static int ends_job(const struct settle *st) { return st->op == SETTLE_ACK || st->bury; }

static int send_settle(struct dispatcher *ds, struct settle *st);

/* The flow was read (or is to be left out): the settle goes, or fails with RC. */
static void on_flow_read(void *ctx, int rc)
{
    struct settle *st = ctx;
    if (rc == ZOK && st->flow.skip && st->flow.added) { /* ACK join=1, the flow gone */
        reply_err(st->r, PE_NOT_FOUND, "job %s: its flow is gone (its parent was released or "
                  "cancelled): its follow-ups cannot join it; nothing was changed",
                  st->job->id);
        lease_arm(st->job->q->ds, st->job); /* still held, as before the ack (INFLIGHT) */
        settle_free(st);
        return;
    }
    if (rc == ZOK && (rc = send_settle(st->job->q->ds, st)) == ZOK)
        return;
    settle_failed(st, rc);
    settle_free(st);
}

/* Given back unrun under the same name: each delivery counted under it is made again in
 * the new znode, as two children created and deleted (a lock and an owner's worth), so
 * that the next lock's owner sequence counts it (attempts.h). Returns the operations. */
static int replay_ops(const struct settle *st, const char *child, struct zk_txn_op *ops)
{
    int n = 0;
    for (uint32_t i = 0; st->unrun_same && i < 2 * st->replay; i++) {
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = child};
        ops[n++] = (struct zk_txn_op){.kind = ZT_DELETE, .path = child, .version = -1};
    }
    return n;
}

/* ---- a claimed job's settle (layout version 3, claim.h) ---- */

static void on_claim_acked(void *ctx, int rc)
{
    struct settle *st = ctx;
    struct zk_result res = {.rc = rc};
    on_settled(&res, st);
}

/* The claim had a write on its way: ours goes now (or the claim was lost meanwhile). */
static void resume_claimed(void *ctx)
{
    struct settle *st = ctx;
    if (!st->job->claim) {
        lease_lost(st->job->q->ds, st);
        settle_free(st);
        return;
    }
    int rc = send_settle(st->job->q->ds, st);
    if (rc != ZOK) {
        settle_failed(st, rc);
        settle_free(st);
    }
}

/* The claim's write instead of the lock's deletes: a plain ACK shares it with the acks of
 * the same loop turn; anything else sends it first in a transaction of its own, with the
 * move, the dead letter or the job made again (created, then set once so that its version
 * tells a reader that it was made again, with its deliveries replayed). */
static int send_claimed(struct dispatcher *ds, struct settle *st)
{
    struct job *job = st->job;
    job_transition(job, JE_SETTLE);
    st->claimed = 1;
    if (claim_path_of(job))
        snprintf(st->claim_path, sizeof st->claim_path, "%s", claim_path_of(job));
    if (st->op == SETTLE_ACK && !st->followups) {
        int rc = claim_ack(ds->claims, job, on_claim_acked, st);
        if (rc != ZNONODE)
            return rc;
        lease_lost(ds, st); /* the claim is someone else's now */
        settle_free(st);
        return ZOK;
    }
    struct zk_txn_op ops[3 + ATTEMPTS_REPLAY_OPS * ATTEMPTS_REPLAY_MAX];
    int w = claim_write_op(ds->claims, job, &ops[0], resume_claimed, st);
    if (w < 0) { /* the claim is someone else's now */
        lease_lost(ds, st);
        settle_free(st);
        return ZOK;
    }
    if (w == 0)
        return ZOK; /* resume_claimed sends it */
    int n = 1;
    st->claim_write = 1;
    st->next_op = 1;
    st->key_op = st->slot_op = -1;
    if (st->has_delay) {
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = st->next_path,
                                      .data = job->payload, .len = job->len};
        if (st->unrun_same) {
            ops[n++] = (struct zk_txn_op){.kind = ZT_SET, .path = st->next_path,
                                          .data = job->payload, .len = job->len, .version = 0};
            layout_lock_path(st->next_child, sizeof st->next_child, st->next_path);
            n += replay_ops(st, st->next_child, &ops[n]);
        }
    }
    int rc = st->followups ? putset_send(st->followups, ds->settles, ops, n, on_followups_done, st)
                           : txnbatch_add(ds->settles, ops, n, on_settled, st);
    if (rc != ZOK) { /* not sent: the claim's write ends here */
        st->claim_write = 0;
        claim_write_answered(ds->claims, job, rc, 0);
    }
    return rc;
}

static int send_settle(struct dispatcher *ds, struct settle *st)
{
    struct job *job = st->job;
    struct lock_paths lp;
    if (job->claim)
        return send_claimed(ds, st);
    st->next_op = 3;
    if (ends_job(st) && flow_settle_needs_read(job, &st->flow) &&
        !flow_settle_predict(ds->flow_cache, dispatcher_root(ds), job, st->bury, &st->flow)) {
        job_transition(job, JE_SETTLE); /* its lease stops: the read is part of the settle */
        return flow_settle_read(ds->flow_cache, ds->d->zs, dispatcher_root(ds), job, st->bury,
                                &st->flow, on_flow_read, st);
    }
    lock_paths(job, &lp);
    struct zk_txn_op ops[5 + LIMIT_OPS_MAX + FLOW_OPS_MAX +
                         ATTEMPTS_REPLAY_OPS * ATTEMPTS_REPLAY_MAX] = {
        {.kind = ZT_DELETE, .path = lp.owner, .version = -1},
        {.kind = ZT_DELETE, .path = lp.lock, .version = -1},
        {.kind = ZT_DELETE, .path = job->path, .version = -1},
        {.kind = ZT_CREATE, .path = st->next_path, .data = job->payload, .len = job->len},
    };
    int n = st->op == SETTLE_ACK ? 3 : st->has_delay ? 4 : 2;
    n += replay_ops(st, lp.lock, &ops[n]);
    st->key_op = key_op(ds, st, &ops[n]) ? n : -1;
    n += st->key_op >= 0;
    int nslots = limit_release_ops(job->q->limit, job, &ops[n], st->slot_paths);
    st->slot_op = nslots ? n : -1;
    n += nslots;
    if (ends_job(st))
        n += flow_settle_ops(dispatcher_root(ds), &st->flow, &ops[n], n);
    job_transition(job, JE_SETTLE);
    if (st->followups)
        return putset_send(st->followups, ds->settles, ops, n, on_followups_done, st);
    return txnbatch_add(ds->settles, ops, n, on_settled, st);
}

/* Connection loss or a timeout: the transaction may or may not have been applied. */
static int uncertain(int rc) { return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT; }

/* Only the key node's operation failed (a keyed name written without its key node). */
static int key_node_missing(const struct zk_result *res, int key_op)
{
    if (!res->op_err || res->nops <= key_op || res->op_err[key_op] != ZNONODE)
        return 0;
    for (int i = 0; i < key_op; i++)
        if (res->op_err[i] != ZOK)
            return 0;
    return 1;
}

/* The znode of the operation ZooKeeper refused, for the log: our lock's, the job's, its
 * new name's, or its key node's. */
static const char *refused_path(const struct settle *st, const struct zk_result *res)
{
    int op = zk_failed_op(res);
    if (op >= 0 && op == st->key_op)
        return st->key_path;
    return op == st->next_op && st->has_delay ? st->next_path : st->job->path;
}

/* The new name's directories were created, yet its create found them missing: their own
 * answers say why (a denial, or a bucket deleted again meanwhile: then one more try). */
static void on_parents_checked(const struct zk_result *res, void *ctx)
{
    struct settle *st = ctx;
    int rc = res->rc;
    if (rc == ZOK && (rc = send_settle(st->job->q->ds, st)) == ZOK)
        return;
    if (rc == ZNOAUTH)
        queue_denied(st->job->q, res->path); /* only create_parents answers NoAuth */
    settle_failed(st, rc);
    settle_free(st);
}

/* The move's create failed with NoNode: its bucket is missing (zkstore_parents_missing's
 * rule, twice at most). 1 when the settle goes on. */
static int make_parents_of(struct dispatcher *ds, struct settle *st, const char *path)
{
    if (st->made_parents >= 2)
        return 0;
    int rc = zkstore_parents_missing(ds->d->zs, path, &st->made_parents, on_parents_checked,
                                     st);
    return rc == ZK_PARENTS_RESEND ? send_settle(ds, st) == ZOK : rc == ZK_PARENTS_ASKED;
}

static void leave_to_next_session(struct dispatcher *ds, struct settle *st);

static void on_settled(const struct zk_result *res, void *ctx)
{
    struct settle *st = ctx;
    struct job *job = st->job;
    struct dispatcher *ds = job->q->ds;
    int rc = res->rc;
    int own_write = st->claim_write; /* this transaction carried the claim's write */
    if (st->claim_write) { /* the claim learns first: its write ended, applied or not */
        st->claim_write = 0;
        if (!uncertain(rc))
            claim_write_answered(ds->claims, job, rc, zk_failed_op(res) == 0);
        if (!uncertain(rc) && rc != ZOK && claim_resyncing(job) && send_settle(ds, st) == ZOK)
            return; /* someone else wrote the claim: sent again once it is read */
    }
    flow_settle_answered(ds->flow_cache, &st->flow, rc);
    int nx = st->next_op;
    int no_bucket = rc == ZNONODE && st->has_delay && res->op_err && res->nops > nx &&
                    res->op_err[nx] == ZNONODE && zk_failed_op(res) == nx;
    if (no_bucket && make_parents_of(ds, st, st->next_path))
        return;
    if (rc != ZOK && !uncertain(rc)) { /* a flow's child: refused on the flow's part? */
        enum flow_refusal why = flow_settle_refused(&st->flow, res);
        ds->flows.conflicts += why == FLOW_READ_AGAIN;
        if (why == FLOW_NO_BUCKET && make_parents_of(ds, st, flow_missing_dir(&st->flow, res)))
            return;
        if ((why == FLOW_READ_AGAIN || why == FLOW_WITHOUT) && (rc = send_settle(ds, st)) == ZOK)
            return;
    }
    if (rc == ZNONODE && st->key_op >= 0 && key_node_missing(res, st->key_op)) {
        log_warn("queue %s: job %s: its key node is missing; settling it without", 
                 job->q->cfg->name, job->id);
        st->skip_key = 1;
        if ((rc = send_settle(ds, st)) == ZOK)
            return;
    }
    if (rc == ZNONODE && st->slot_op >= 0 && zk_failed_op(res) >= st->slot_op) {
        /* deleted by hand: settle without it */
        limit_slot_missing(job->q->limit, job, zk_failed_op(res) - st->slot_op);
        if ((rc = send_settle(ds, st)) == ZOK)
            return;
    }
    if (rc == ZOK) {
        settled(ds, st);
    } else if (no_bucket) {
        settle_failed(st, rc);
    } else if (rc == ZNONODE && !st->claimed && ask_if_cancelled(ds, st)) {
        return;
    } else if (st->claimed && st->r && (zk_session_gone(rc) || (uncertain(rc) && !job->claim))) {
        leave_to_next_session(ds, st); /* its claim went with the session: recovered? */
        return;
    } else if (rc == ZNONODE || rc == ZBADVERSION || rc == ZNOTEMPTY || zk_session_gone(rc)) {
        lease_lost(ds, st); /* our owner node is gone, or another holder's is there */
    } else if (uncertain(rc) && own_write && job->claim) {
        if (claim_write_check(ds->claims, job, on_claim_checked, st) != ZOK) {
            st->claim_check = 1; /* read once the connection is back */
            hold_settle(ds, st);
        }
        return;
    } else if (uncertain(rc) && !st->claimed) {
        job->uncertain = 1;
        verify(ds, st);
        return;
    } else {
        if (rc == ZNOAUTH)
            queue_denied(job->q, refused_path(st, res));
        settle_failed(st, rc);
    }
    settle_free(st);
}

/* A claimed job's settle whose answer was lost, judged by its claim node: applied, not
 * applied (sent again), the claim lost, or still unknown (read again once connected). */
static void on_claim_checked(void *ctx, int rc)
{
    struct settle *st = ctx;
    struct dispatcher *ds = st->job->q->ds;
    if (rc == ZOK) {
        settled(ds, st);
    } else if (rc == ZOPERATIONTIMEOUT) {
        if ((rc = send_settle(ds, st)) == ZOK)
            return;
        settle_failed(st, rc);
    } else if (rc == ZNONODE || zk_session_gone(rc)) {
        lease_lost(ds, st);
    } else {
        st->claim_check = 1;
        hold_settle(ds, st);
        return;
    }
    settle_free(st);
}

/* The transaction with follow-ups came back. A failure in our own operations (or of the
 * connection) is judged as for any settle; one that the follow-ups could not get past
 * (after making directories and settling taken keys) left everything as it was. */
static void on_followups_done(struct putset *ps, int rc, const struct zk_result *res,
                              void *ctx)
{
    struct settle *st = ctx;
    (void)ps;
    if (rc == ZOK || res) {
        struct zk_result r = res ? *res : (struct zk_result){0};
        r.rc = rc;
        on_settled(&r, st);
        return;
    }
    if (st->claim_write) { /* the transaction never went: the claim's write ends */
        st->claim_write = 0;
        claim_write_answered(st->job->q->ds->claims, st->job, rc, 0);
    }
    settle_failed(st, rc);
    settle_free(st);
}

/* The look itself lost its answer: the transaction is still of unknown outcome, so the
 * consumer is not answered yet (a "still held" for an ack ZooKeeper applied would leave the
 * job neither acked nor delivered again). Looked at again: now, or once the connection is
 * back (held). */
static void verify_again(struct dispatcher *ds, struct settle *st)
{
    st->job->uncertain = 1;
    verify(ds, st);
}

static void on_verified_job(const struct zk_result *res, void *ctx)
{
    struct settle *st = ctx;
    struct dispatcher *ds = st->job->q->ds;
    if (zk_session_gone(res->rc)) {
        lease_lost(ds, st);
    } else if (res->rc == ZNONODE || (res->rc == ZOK && st->unrun_same)) {
        st->job->uncertain = 0;             /* our transaction did delete it (and, given
                                             * back unrun, create it again) */
        settled(ds, st);
    } else if (res->rc == ZOK) {
        st->job->uncertain = 0;
        lease_lost(ds, st);
    } else if (uncertain(res->rc)) {
        verify_again(ds, st);
        return;
    } else {
        settle_failed(st, res->rc); /* still unknown: stays uncertain */
    }
    settle_free(st);
}

/* Never deletes a lock not confirmed ours: looks at the lock, then at the job. */
static void on_verified_lock(const struct zk_result *res, void *ctx)
{
    struct settle *st = ctx;
    struct job *job = st->job;
    struct dispatcher *ds = job->q->ds;
    int ours = res->rc == ZOK && res->stat.ephemeralOwner == ds->d->session_id;
    if (zk_session_gone(res->rc)) {
        lease_lost(ds, st);
    } else if (uncertain(res->rc)) {
        verify_again(ds, st);
        return;
    } else if (ours || (res->rc != ZOK && res->rc != ZNONODE)) {
        if (ours)
            job->uncertain = 0;
        if (ours && st->precheck) {
            st->precheck = 0;
            int rc = send_settle(ds, st);
            if (rc == ZOK)
                return;
            settle_failed(st, rc);
        } else {
            settle_failed(st, ours ? ZCONNECTIONLOSS : res->rc); /* not applied, or unknown */
        }
    } else if (st->op == SETTLE_NACK && !st->has_delay) {
        job->uncertain = 0;              /* lock gone: the release happened */
        settled(ds, st);
    } else {
        int rc = zkstore_exists(ds->d->zs, job->path, 0, on_verified_job, st);
        if (rc == ZOK)
            return;
        settle_failed(st, rc);
    }
    settle_free(st);
}

/* A settle of unknown outcome whose session is gone: the next session looks at the job
 * (settle_check_unknown). */
static void leave_to_next_session(struct dispatcher *ds, struct settle *st)
{
    st->next = ds->unknown;
    ds->unknown = st;
}

static void hold_settle(struct dispatcher *ds, struct settle *st)
{
    job_transition(st->job, JE_SETTLE);
    st->next = ds->held;
    ds->held = st;
}

static void verify(struct dispatcher *ds, struct settle *st)
{
    if (!zkstore_connected(ds->d->zs) && ds->d->session_id != 0) {
        /* Cannot look now; the session may survive: look again when it is back. */
        st->job->uncertain = 1;
        hold_settle(ds, st);
        return;
    }
    if (ds->d->session_id == 0 && st->r) {
        /* the session went while the look was on its way: as for a settle held when it went */
        job_transition(st->job, JE_SETTLE);
        leave_to_next_session(ds, st);
        return;
    }
    char lock[LAYOUT_PATH_MAX + 8];
    lock_path(st->job, lock, sizeof lock);
    job_transition(st->job, JE_SETTLE);
    int rc = zkstore_exists(ds->d->zs, lock, 0, on_verified_lock, st);
    if (rc != ZOK) {
        settle_failed(st, rc);
        settle_free(st);
    }
}

static struct settle *settle_new(struct job *job, struct reply *r, enum settle_op op)
{
    struct settle *st = calloc(1, sizeof *st);
    if (!st) {
        if (r)
            reply_err(r, PE_INTERNAL, "out of memory");
        return NULL;
    }
    st->job = job;
    st->r = r;
    st->op = op;
    st->next_op = 3; /* after the owner's, the lock's and the job's deletes */
    return st;
}

static void settle_start(struct dispatcher *ds, struct settle *st)
{
    if (!zkstore_connected(ds->d->zs) && ds->d->session_id != 0) {
        hold_settle(ds, st); /* SUSPENDED: the session may survive; send it on reconnection */
        return;
    }
    if (st->claim_check) { /* a claimed job's write of unknown outcome: read its claim */
        st->claim_check = 0;
        int rc = st->job->claim ? claim_write_check(ds->claims, st->job, on_claim_checked, st)
                                : ZNONODE;
        if (rc == ZOK)
            return;
        if (rc == ZNONODE) {
            lease_lost(ds, st);
            settle_free(st);
        } else {
            st->claim_check = 1;
            hold_settle(ds, st);
        }
        return;
    }
    if (st->job->uncertain) { /* an earlier attempt may have changed ZooKeeper */
        st->precheck = 1;
        verify(ds, st);
        return;
    }
    int rc = send_settle(ds, st);
    if (rc != ZOK) {
        settle_failed(st, rc);
        settle_free(st);
    }
}

/* ACK/NACK then=: the follow-up jobs join the settle's transaction, which must then fit
 * one ZooKeeper request. On a bad job the reply is sent and nothing changes. */
static int take_followups(struct dispatcher *ds, struct settle *st, struct proto_request *req)
{
    enum proto_errcode code;
    char text[300];
    if (!req->nitems)
        return 0;
    if (!(st->followups = putset_new(&ds->put_env, req->nitems))) {
        reply_err(st->r, PE_INTERNAL, "out of memory");
        return -1;
    }
    if (req->flow_join && !st->job->jn.flow[0]) {
        reply_err(st->r, PE_BAD_REQUEST, "job %s is not a flow's child: join=1 adds children "
                  "to the acked job's flow; nothing was changed", st->job->id);
        return -1;
    }
    if (req->flow_join) {
        putset_flow_join(st->followups, st->job->jn.flow);
        st->flow.added = (unsigned)req->nitems;
    }
    for (size_t i = 0; i < req->nitems; i++) {
        if (req->flow_join && req->items[i].key[0]) { /* a duplicate would never settle */
            reply_err(st->r, PE_BAD_REQUEST, "item %zu: a follow-up that joins a flow takes "
                      "no key; nothing was changed", i + 1);
            return -1;
        }
        if (req->items[i].idem[0]) { /* they go with the ack, whose own retry is its job id */
            reply_err(st->r, PE_BAD_REQUEST, "item %zu: a follow-up takes no idem token; "
                      "nothing was changed", i + 1);
            return -1;
        }
        if (putset_add(st->followups, &req->items[i], &code, text, sizeof text) != 0) {
            reply_err(st->r, code, "item %zu: %s; nothing was changed", i + 1, text);
            return -1;
        }
    }
    size_t bytes = putset_bytes(st->followups) + 5 * (LAYOUT_PATH_MAX + TXN_OP_OVERHEAD) +
                   (st->has_delay ? st->job->len : 0);
    if (bytes > TXN_ITEM_BYTES_MAX) {
        reply_err(st->r, PE_TOO_LARGE, "the %s and its follow-ups need %zu bytes, over the "
                  "%d of one ZooKeeper transaction; nothing was changed", settle_name(st),
                  bytes, TXN_ITEM_BYTES_MAX);
        return -1;
    }
    return 0;
}

/* A Curator queue's job is settled on its own. */
static int foreign_job(struct job *job, struct proto_request *req, struct reply *r)
{
    if (!job->ci)
        return 0;
    if (req->nitems) {
        reply_err(r, PE_BAD_REQUEST, "job %s is in a Curator format queue: no follow-ups",
                  job->id);
        return 1;
    }
    struct dispatcher *ds = job->q->ds;
    ds->foreign->settle(ds, job, req->cmd == CMD_ACK, req->has_delay, req->delay_ms, r);
    return 1;
}

void settle_ack(struct dispatcher *ds, struct consumer *c, struct proto_request *req,
                struct reply *r)
{
    struct job *job = settle_held_job(ds, c, req->id, 1, r);
    if (!job || foreign_job(job, req, r))
        return;
    jobtrace_ack(job);
    struct settle *st = settle_new(job, r, SETTLE_ACK);
    if (st && take_followups(ds, st, req) != 0)
        settle_free(st);
    else if (st)
        settle_start(ds, st);
}

/* The job moves to a new name: new due time, attempts so far carried along, its uid kept
 * (the job's stable identity; the attempts make the name new even at the same due time). */
static int plan_move(struct dispatcher *ds, struct settle *st, uint64_t delay_ms)
{
    struct job *job = st->job;
    struct job_name next;
    jobedit_next_name(&next, &job->jn, (uint64_t)cluster_latest_ms() + delay_ms, job->attempt);
    st->has_delay = 1;
    if (delay_ms > LAYOUT_DUE_MAX || next.due_ms > LAYOUT_DUE_MAX ||
        layout_job_path(st->next_path, sizeof st->next_path, dispatcher_root(ds),
                        job->q->cfg->name, &next) != 0 ||
        layout_job_id(st->next_id, sizeof st->next_id, job->q->cfg->name, &next) != 0)
        return -1;
    return 0;
}

/* The queue's policy for a nack without a delay: doubling from backoff_min per attempt,
 * capped at backoff_max, spread by +-backoff_jitter percent so that a burst of failures
 * does not come back as a burst. */
uint64_t settle_backoff_ms(const struct queue_config *qc, uint32_t attempt)
{
    uint64_t d = qc->backoff_min_ms;
    for (uint32_t i = 1; i < attempt && d < qc->backoff_max_ms; i++)
        d *= 2;
    if (d > qc->backoff_max_ms)
        d = qc->backoff_max_ms;
    if (qc->backoff_jitter && d) {
        uint64_t span = d * qc->backoff_jitter / 100;
        uint32_t rnd = 0;
        if (span && getrandom(&rnd, sizeof rnd, 0) == sizeof rnd)
            d = d - span + (uint64_t)rnd % (2 * span + 1);
    }
    return d;
}

/* The last allowed attempt failed: the job moves to its queue's dead letters. */
static int plan_bury(struct dispatcher *ds, struct settle *st)
{
    struct job *job = st->job;
    struct job_name dead; /* its due time kept */
    jobedit_next_name(&dead, &job->jn, job->jn.due_ms, job->attempt);
    st->has_delay = st->bury = 1;
    if (layout_job_id(st->next_id, sizeof st->next_id, job->q->cfg->name, &dead) != 0)
        return -1;
    return layout_dead_path(st->next_path, sizeof st->next_path, dispatcher_root(ds),
                            job->q->cfg->name, &dead);
}

/* Locked for an attempt past max_attempts (its holders kept crashing): bury, not deliver. */
void settle_bury_locked(struct dispatcher *ds, struct job *job)
{
    struct settle *st = settle_new(job, NULL, SETTLE_NACK);
    job_unhold(ds, job);
    job_transition(job, JE_SETTLE);
    if (st && plan_bury(ds, st) == 0) {
        int rc = send_settle(ds, st);
        if (rc == ZOK)
            return;
    }
    settle_free(st);
    lock_release_later(ds, job);
}

static int plan_unrun(struct dispatcher *ds, struct settle *st, int counted);

/* Locked ahead of a consumer that will not take it now (its queue paused, the daemon
 * draining, its last consumer gone): back unrun, as by NACK unrun=1, so that the next
 * delivery does not count an attempt nobody saw. */
void settle_give_back_locked(struct dispatcher *ds, struct job *job)
{
    struct settle *st = settle_new(job, NULL, SETTLE_NACK);
    job_unprelock(job);
    job_transition(job, JE_SETTLE);
    if (st && plan_unrun(ds, st, 0) == 0) {
        settle_start(ds, st);
        return;
    }
    settle_free(st);
    lock_release_later(ds, job);
}

/* A claimed job given up with its delivery counted (its lease expired, its consumer gone,
 * a failure): made again under its name, as a lock's release leaves a job (claim.h). */
void settle_release_claimed(struct dispatcher *ds, struct job *job)
{
    struct settle *st = settle_new(job, NULL, SETTLE_NACK);
    job_unhold(ds, job);
    job_unprelock(job);
    job_transition(job, JE_SETTLE);
    if (st && plan_unrun(ds, st, 1) == 0) {
        settle_start(ds, st);
        return;
    }
    settle_free(st);
    log_error("queue %s: job %s: cannot give its claim back; it comes back when this "
              "session ends", job->q->cfg->name, job->id);
}

/* NACK unrun=1: the consumer gives back a job it never started. The job is created again
 * under its own name (a new znode's sequence starts again) with the deliveries before
 * this one made again in it (replay_ops), so the next delivery has the same attempt and
 * nothing counts this one. Past ATTEMPTS_REPLAY_MAX of them, the attempts go into a new
 * name instead, and its key node follows. */
static int plan_unrun(struct dispatcher *ds, struct settle *st, int counted)
{
    struct job *job = st->job;
    struct job_name next = job->jn;
    uint32_t spent = counted ? job->attempt : attempts_given_back(job->attempt);
    st->replay = spent > job->jn.prior_attempts ? spent - job->jn.prior_attempts : 0;
    if (st->replay > ATTEMPTS_REPLAY_MAX)
        next.prior_attempts = spent;
    st->has_delay = st->unrun = 1;
    if (layout_job_path(st->next_path, sizeof st->next_path, dispatcher_root(ds), job->q->cfg->name,
                        &next) != 0 ||
        layout_job_id(st->next_id, sizeof st->next_id, job->q->cfg->name, &next) != 0)
        return -1;
    st->unrun_same = strcmp(st->next_id, job->id) == 0;
    return 0;
}

static void nack_unrun(struct dispatcher *ds, struct job *job, struct reply *r)
{
    job->avoid = job->owner ? job->owner->serial : 0; /* to another consumer first */
    if (job->ci) { /* a Curator item stays locked by us: offered again, same attempt */
        ds->foreign->release(ds, job, 0);
        reply_ok(r, NULL);
        return;
    }
    struct settle *st = settle_new(job, r, SETTLE_NACK);
    if (!st)
        return;
    if (plan_unrun(ds, st, 0) != 0) {
        reply_err(r, PE_INTERNAL, "job %s: cannot name it again", job->id);
        settle_free(st);
        return;
    }
    settle_start(ds, st);
}

void settle_nack(struct dispatcher *ds, struct consumer *c, struct proto_request *req,
                 struct reply *r)
{
    struct job *job = settle_held_job(ds, c, req->id, 1, r);
    int has_delay = req->has_delay;
    uint64_t delay_ms = req->delay_ms;
    if (job && req->unrun) {
        nack_unrun(ds, job, r);
        return;
    }
    if (!job || foreign_job(job, req, r))
        return;
    struct settle *st = settle_new(job, r, SETTLE_NACK);
    if (!st)
        return;
    if (job->attempt >= job->q->cfg->max_attempts) {
        if (plan_bury(ds, st) == 0) {
            settle_start(ds, st);
            return;
        }
        has_delay = 0; /* cannot name it: fall back to a plain release */
    } else if (!has_delay) {
        delay_ms = settle_backoff_ms(job->q->cfg, job->attempt);
        has_delay = delay_ms > 0;
    }
    if (!has_delay && job->claim) { /* no znode to stay in: made again under its name */
        if (plan_unrun(ds, st, 1) != 0) {
            reply_err(r, PE_INTERNAL, "job %s: cannot name it again", job->id);
            settle_free(st);
            return;
        }
        st->unrun = 0; /* the consumer's nack: counted as one */
    } else if (has_delay && plan_move(ds, st, delay_ms) != 0) {
        reply_err(r, PE_BAD_REQUEST, "delay %llu ms is out of range",
                  (unsigned long long)delay_ms);
        settle_free(st);
        return;
    }
    if (take_followups(ds, st, req) != 0) {
        settle_free(st);
        return;
    }
    settle_start(ds, st);
}

/* ---- settles held across a disconnection ---- */

/* The same session came back: send what consumers asked while it was away. */
void settle_resume_held(struct dispatcher *ds)
{
    struct settle *held = ds->held;
    ds->held = NULL;
    while (held) {
        struct settle *next = held->next;
        job_transition(held->job, JE_KEEP);
        settle_start(ds, held);
        held = next;
    }
}

/* The session is gone: every held ack/nack fails with LEASE_LOST, except one that was sent
 * when the connection broke (the job is uncertain): ZooKeeper may have applied it, so the
 * next session looks at the job first (settle_check_unknown). */
void settle_revoke_held(struct dispatcher *ds)
{
    while (ds->held) {
        struct settle *st = ds->held;
        ds->held = st->next;
        if ((st->job->uncertain || st->claim_check) && st->r) {
            leave_to_next_session(ds, st);
            continue; /* the job stays JS_SETTLING: revoke_all keeps it for us */
        }
        if (st->r)
            reply_err(st->r, PE_LEASE_LOST, "job %s: the ZooKeeper session was lost",
                      st->job->id);
        job_transition(st->job, JE_PARK); /* no call in flight: the caller frees it */
        settle_free(st);
    }
}

/* The lost session's lock is gone. The job gone too means our transaction was applied
 * before the session broke (or the job was delivered again and settled elsewhere since):
 * either way it will not come back, and the consumer is told OK. The job still there means
 * it was not applied: LEASE_LOST, and it is delivered again. */
static void on_unknown_checked(const struct zk_result *res, void *ctx)
{
    struct settle *st = ctx;
    struct dispatcher *ds = st->job->q->ds;
    if (res->rc == ZNONODE || (res->rc == ZOK && st->unrun_same)) {
        log_info("queue %s: job %s: the %s sent as the session broke was applied",
                 st->job->q->cfg->name, st->job->id, settle_name(st));
        settled(ds, st);
    } else {
        if (st->r)
            reply_err(st->r, PE_LEASE_LOST, "job %s: the ZooKeeper session was lost%s",
                      st->job->id, res->rc == ZOK ? "; this settle changed nothing" : "");
        job_free(ds, st->job);
    }
    settle_free(st);
}

/* A claimed job's settle: what its claim, its bucket and its queue's claims say. */
static void on_claimed_outcome(void *ctx, int applied)
{
    struct settle *st = ctx;
    struct zk_result res = {.rc = applied > 0 ? ZNONODE : applied == 0 ? ZOK : ZCLOSING};
    on_unknown_checked(&res, st);
}

void settle_check_unknown(struct dispatcher *ds)
{
    while (ds->unknown) {
        struct settle *st = ds->unknown;
        ds->unknown = st->next;
        if (st->claimed && st->claim_path[0]) {
            st->unrun_same = 0; /* made again or not, its znode tells nothing here */
            /* the deliveries its claim's record said (claim.c record_of) */
            uint32_t deliveries = st->job->under_name == UNDER_NAME_UNKNOWN
                                      ? 0 : st->job->under_name + 1;
            claim_outcome(ds->d->zs, dispatcher_root(ds), st->job->q->cfg->name,
                          st->claim_path, st->job->path, deliveries, on_claimed_outcome, st);
            continue;
        }
        if (zkstore_exists(ds->d->zs, st->job->path, 0, on_unknown_checked, st) == ZOK)
            continue;
        struct zk_result gone = {.rc = ZCLOSING};
        on_unknown_checked(&gone, st);
    }
}

void settle_free_held(struct dispatcher *ds)
{
    struct settle *lists[2] = {ds->held, ds->unknown};
    ds->held = ds->unknown = NULL;
    for (int i = 0; i < 2; i++) {
        while (lists[i]) {
            struct settle *st = lists[i];
            lists[i] = st->next;
            settle_free(st);
        }
    }
}
