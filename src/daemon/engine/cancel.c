/* CANCEL and RESCHEDULE: a producer changes a pending job, by its id or by its queue and
 * key, with a handful of ZooKeeper calls and never a listing. A held job is refused
 * (IN_FLIGHT): the consumer wins, unless CANCEL says force=1, which deletes the holder's
 * lock and owner node in the same transaction, so that the holder's ack fails (LEASE_LOST). */
#include "cancel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attempts.h"
#include "buckets.h"
#include "claim.h"
#include "claimfind.h"
#include "config.h"
#include "daemon.h"
#include "dispatcher_int.h"
#include "dispatcher_jobs.h"
#include "flow.h"
#include "jobedit.h"
#include "jobs.h"
#include "log.h"
#include "pack.h"
#include "protocol.h"
#include "put.h"
#include "reply.h"
#include "cluster_time.h"
#include "units.h"
#include "writehold.h"
#include "zkstore.h"

#define TRIES_MAX 4 /* a key moved, a lock came or went between our reads and our write */

struct change {
    struct dispatcher *ds;
    struct dqueue *q;
    struct reply *r;
    int reschedule, force, by_key, tries, skip_key, made_parents;
    int flow_tried;             /* a waiting parent's flow looked for (flow_cancel) */
    int claims_tried;           /* a claimed job (layout version 3) looked for */
    struct job *claimed;        /* ours, claimed, force-cancelled: its claim's write on its way */
    char holder[256];           /* another daemon's claim: its session node's data, and path */
    char holder_node[LAYOUT_PATH_MAX];
    unsigned round_trips;       /* ZooKeeper calls sent for it, for STATS */
    uint64_t due_ms;            /* RESCHEDULE: the new due time */
    struct job_name jn, next;
    int key_version;            /* by key: the key node's version we read; else -1 */
    char key[LAYOUT_KEY_MAX + 1];
    char path[LAYOUT_PATH_MAX], next_path[LAYOUT_PATH_MAX], key_path[LAYOUT_PATH_MAX];
    char children[JOBEDIT_HOLDERS_MAX][LAYOUT_PATH_MAX + 40];
    int nchildren;
    struct jobedit_multi m;     /* the last transaction sent */
    char *payload;
    int len;
    uint32_t attempts;
    /* a packed job: its pack as read, and the pack without it (NULL: it was the last) */
    char pack_path[LAYOUT_PATH_MAX];
    char pack_uid[LAYOUT_UID_MAX + 1];   /* when the pack was gone: for its shard */
    int pack_version, pack_read, pack_gone;
    unsigned char *pack_rest;
    size_t pack_rest_len;
};

static void change_free(struct change *ch)
{
    struct dispatcher *ds = ch->ds;
    ds->changes++;
    ds->change_round_trips += ch->round_trips;
    if (ch->round_trips > ds->change_round_trips_max)
        ds->change_round_trips_max = ch->round_trips;
    free(ch->payload);
    free(ch->pack_rest);
    free(ch);
}

static void change_end(struct change *ch, int code, const char *text)
{
    if (code < 0)
        reply_ok(ch->r, text);
    else
        reply_err(ch->r, (enum proto_errcode)code, "%s", text);
    change_free(ch);
}

/* WHAT (of PATH) failed with RC: logged (a denial once per queue) and answered. */
static void change_zerr(struct change *ch, const char *what, const char *path, int rc)
{
    if (rc == ZNOAUTH)
        queue_denied(ch->q, path);
    else
        log_warn("queue %s: %s %s: %s", ch->q->cfg->name, what, path, zk_strerror(rc));
    reply_refuse(ch->r, PE_UNAVAILABLE, &(struct refusal){.reason = zk_refusal_reason(rc)},
                 "%s failed%s: %s; nothing was changed", what,
                 rc == ZNOAUTH ? "" : " in ZooKeeper", zk_reason(rc));
    change_free(ch);
}

/* The job's id, for messages. */
static const char *change_id(struct change *ch, char *buf, size_t len)
{
    if (layout_job_id(buf, len, ch->q->cfg->name, &ch->jn) != 0)
        snprintf(buf, len, "%.200s", ch->path);
    return buf;
}

static void act(struct change *ch);

static void changed(struct change *ch);
static void not_found(struct change *ch);

/* Not a job: a waiting parent's flow, cancelled (ZOK), or none (ZNONODE). */
static void on_flow_cancelled(void *ctx, int rc)
{
    struct change *ch = ctx;
    char path[LAYOUT_PATH_MAX];
    if (rc == ZOK) {
        changed(ch);
    } else if (rc == ZNONODE) {
        not_found(ch);
    } else if (rc == ZBADVERSION) {
        change_end(ch, PE_UNAVAILABLE, "the flow's children kept changing it; nothing was "
                   "cancelled, try again");
    } else {
        layout_flow_path(path, sizeof path, dispatcher_root(ch->ds), ch->jn.uid, NULL);
        change_zerr(ch, "cancelling the flow", path, rc);
    }
}

static int claimed(struct change *ch);

static void not_found(struct change *ch)
{
    char text[400], id[LAYOUT_ID_MAX + 1];
    if (claimed(ch))
        return;
    if (!ch->by_key && !ch->reschedule && !ch->flow_tried && !ch->jn.flow[0] &&
        !ch->jn.shard[0]) { /* a parent waiting for its children? */
        ch->flow_tried = 1;
        ch->round_trips += 3;
        int rc = flow_cancel(ch->ds->d->zs, dispatcher_root(ch->ds),
                             change_id(ch, id, sizeof id), ch->jn.uid, on_flow_cancelled, ch);
        if (rc == ZOK)
            return;
    }
    if (ch->pack_gone == 1) { /* not in its bucket: then in the shard of its pack */
        ch->pack_gone = 2;
        layout_pack_shard(ch->jn.shard, sizeof ch->jn.shard, ch->pack_uid);
        act(ch);
        return;
    }
    if (ch->by_key)
        snprintf(text, sizeof text, "no job with key '%s' in queue '%s'", ch->key,
                 ch->q->cfg->name);
    else
        snprintf(text, sizeof text, "no job %s", change_id(ch, id, sizeof id));
    change_end(ch, PE_NOT_FOUND, text);
}

static void start(struct change *ch);

static int again(struct change *ch)
{
    if (++ch->tries >= TRIES_MAX)
        return 0;
    ch->nchildren = 0;
    ch->claims_tried = 0;
    free(ch->payload);
    ch->payload = NULL;
    free(ch->pack_rest);
    ch->pack_rest = NULL;
    ch->pack_read = 0;
    start(ch);
    return 1;
}

/* ---- held: say by whom ---- */

static void on_holder(const struct zk_result *res, void *ctx)
{
    struct change *ch = ctx;
    char text[600], id[LAYOUT_ID_MAX + 1];
    if (res->rc == ZNONODE && again(ch)) /* released meanwhile: try again */
        return;
    snprintf(text, sizeof text, "job %s is being processed%s%.*s; nothing was changed%s",
             change_id(ch, id, sizeof id), res->rc == ZOK ? " by " : "", res->rc == ZOK ? res->datalen : 0,
             res->rc == ZOK && res->data ? res->data : "",
             ch->reschedule ? "" : " (force=1 cancels it anyway)");
    change_end(ch, PE_IN_FLIGHT, text);
}

static void in_flight(struct change *ch)
{
    char lock[LAYOUT_PATH_MAX + 8];
    layout_lock_path(lock, sizeof lock, ch->path);
    ch->round_trips++;
    if (zkstore_get(ch->ds->d->zs, lock, on_holder, ch) != ZOK)
        on_holder(&(struct zk_result){.rc = ZCONNECTIONLOSS}, ch);
}

/* ---- claimed (layout version 3): the job left its bucket for a claim node ---- */

static void claim_held(struct change *ch, const char *holder, int elsewhere)
{
    char text[700], id[LAYOUT_ID_MAX + 1];
    snprintf(text, sizeof text, "job %s is being processed by %s; nothing was changed%s",
             change_id(ch, id, sizeof id), holder,
             ch->reschedule ? ""
             : elsewhere ? " (it is claimed: force=1 cancels it only on the daemon holding it)"
                         : " (force=1 cancels it anyway)");
    change_end(ch, PE_IN_FLIGHT, text);
}

/* Another daemon's claim was written without the job: its session's node is touched (its
 * data as it was) so that the holder reads its claims again and tells the consumer. */
static void on_claim_written(const struct zk_result *res, void *ctx)
{
    struct change *ch = ctx;
    if (res->rc == ZOK) {
        if (zkstore_set(ch->ds->d->zs, ch->holder_node, ch->holder, strlen(ch->holder),
                        NULL, NULL) != ZOK)
            log_warn("queue %s: %s: cannot touch it after a forced cancel; its daemon learns of "
                     "it at its next write of the claim", ch->q->cfg->name, ch->holder_node);
        ch->nchildren = 1; /* its holder lost it: said in the log */
        changed(ch);
    } else if ((res->rc == ZBADVERSION || res->rc == ZNONODE) && again(ch)) {
        return; /* the claim changed meanwhile (settled, recovered): look again */
    } else {
        change_zerr(ch, "writing the claim of", ch->path, res->rc);
    }
}

/* CANCEL force=1 of a job another daemon claimed: its claim without the job, at the version
 * read (or deleted, the job its last). */
static void cancel_in_claim(struct change *ch, const struct claimfind_hit *hit)
{
    struct zk_txn_op op = {.kind = hit->rest ? ZT_SET : ZT_DELETE, .path = hit->claim,
                           .data = hit->rest, .len = hit->rest_len, .version = hit->version};
    snprintf(ch->holder, sizeof ch->holder, "%s", hit->holder);
    snprintf(ch->holder_node, sizeof ch->holder_node, "%s", hit->session);
    ch->round_trips++;
    int rc = zkstore_multi(ch->ds->d->zs, &op, 1, on_claim_written, ch);
    if (rc != ZOK)
        change_zerr(ch, "writing the claim of", ch->path, rc);
}

static void on_claim_found(void *ctx, int rc, const struct claimfind_hit *hit)
{
    struct change *ch = ctx;
    if (rc == ZOK && ch->force && !ch->reschedule && hit->session[0] &&
        (hit->rest || hit->rest_len == 0))
        cancel_in_claim(ch, hit);
    else if (rc == ZOK)
        claim_held(ch, hit->holder, 1);
    else if (rc == ZNONODE)
        not_found(ch);
    else
        change_zerr(ch, "looking for the job in its queue's claims of", ch->path, rc);
}

/* The claim's write without the force-cancelled job came back: cancelled (ZOK), or the
 * claim was lost meanwhile (recovered: the job comes back), or the outcome is unknown. */
static void on_claim_cancelled(void *ctx, int rc)
{
    struct change *ch = ctx;
    struct dispatcher *ds = ch->ds;
    struct job *job = ch->claimed;
    struct dqueue *q = job->q;
    char id[LAYOUT_ID_MAX + 1];
    ch->claimed = NULL;
    job_free(ds, job);
    if (rc == ZOK) {
        ch->nchildren = 1; /* its holder lost it: said in the log */
        changed(ch);
        return;
    }
    dispatcher_dispatch(ds, q);
    log_warn("queue %s: cancelling claimed job %s: %s", q->cfg->name,
             change_id(ch, id, sizeof id), zk_strerror(rc));
    change_end(ch, PE_UNAVAILABLE, rc == ZNONODE
               ? "its claim changed under this daemon (the job cancelled elsewhere too, or "
                 "its session lost): it is cancelled, or delivered again"
               : "the claim's write was not confirmed: the job is cancelled, or delivered "
                 "again");
}

/* CANCEL force=1 of a job this daemon claimed: its consumer is told CANCELLED now, and the
 * claim is written without it (as an ack would be). */
static void cancel_claimed(struct change *ch, struct job *job)
{
    struct dispatcher *ds = ch->ds;
    job_revoke(ds, job, LOST_CANCELLED);
    job_unhold(ds, job);
    job_unprelock(job);
    job_transition(job, JE_SETTLE);
    ch->claimed = job;
    ch->round_trips++;
    int rc = claim_ack(ds->claims, job, on_claim_cancelled, ch);
    if (rc != ZOK)
        on_claim_cancelled(ch, rc);
}

/* A job missing from its bucket may be claimed: by this daemon (known here), or by
 * another (its queue's claims are read). 1 when that look answers the request. */
static int claimed(struct change *ch)
{
    struct dispatcher *ds = ch->ds;
    if (ch->claims_tried || ds->d->layout_version < LAYOUT_VERSION_CLAIMS || ch->by_key ||
        ch->jn.flow[0] || ch->jn.pack[0] || !ch->path[0])
        return 0;
    ch->claims_tried = 1;
    struct job *job = job_find_path(ds, ch->path);
    if (job && job->claim) {
        if (ch->reschedule || !ch->force || (job->state != JS_INFLIGHT && !job->prelocked))
            claim_held(ch, ds->ident, 0);
        else
            cancel_claimed(ch, job);
        return 1;
    }
    ch->round_trips++;
    int rc = claimfind(ds->d->zs, dispatcher_root(ds), ch->q->cfg->name, ch->path,
                       on_claim_found, ch);
    if (rc != ZOK)
        change_zerr(ch, "looking for the job in its queue's claims of", ch->path, rc);
    return 1;
}

/* ---- the transaction ---- */

static void on_changed(const struct zk_result *res, void *ctx);

/* The change for jobedit.c: the key node follows the job unless it is skipped. */
static void edit_of(struct change *ch, struct jobedit *e)
{
    *e = (struct jobedit){.job_path = ch->path, .nholders = ch->nchildren,
                          .key_version = ch->key_version};
    if (ch->pack_read) {
        e->pack_path = ch->pack_path;
        e->pack_data = ch->pack_rest;
        e->pack_len = ch->pack_rest_len;
        e->pack_version = ch->pack_version;
    }
    for (int i = 0; i < ch->nchildren; i++)
        e->holders[i] = ch->children[i];
    if (ch->reschedule) {
        e->next = &ch->next;
        e->next_path = ch->next_path;
        e->payload = ch->payload;
        e->len = (size_t)ch->len;
    }
    if (ch->jn.key[0] && !ch->skip_key &&
        layout_key_path(ch->key_path, sizeof ch->key_path, dispatcher_root(ch->ds),
                        ch->q->cfg->name, ch->jn.key) == 0)
        e->key_path = ch->key_path;
}

/* The new name's bucket, when not known to exist: its creates go ahead of the multi on the
 * same session, unanswered (NodeExists is fine), so that a reschedule into a new bucket
 * costs no round trip more; a create that failed shows as the multi's NoNode. */
static void prepare_bucket(struct change *ch)
{
    char dir[LAYOUT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", ch->next_path);
    char *slash = strrchr(dir, '/');
    if (!slash || ch->made_parents)
        return;
    *slash = '\0';
    if (!buckets_known(ch->ds->buckets, dir) &&
        zkstore_create_parents(ch->ds->d->zs, ch->next_path, NULL, NULL) == ZOK)
        buckets_add(ch->ds->buckets, dir);
}

static void send_change(struct change *ch)
{
    static const int kinds[] = {[JOBEDIT_DELETE] = ZT_DELETE, [JOBEDIT_CREATE] = ZT_CREATE,
                                [JOBEDIT_SET] = ZT_SET};
    struct zk_txn_op ops[JOBEDIT_OPS_MAX];
    struct jobedit e;
    edit_of(ch, &e);
    if (jobedit_multi(&e, &ch->m) != 0) {
        change_end(ch, PE_BAD_REQUEST, "the new name is too long");
        return;
    }
    for (int i = 0; i < ch->m.n; i++) {
        const struct jobedit_op *o = &ch->m.ops[i];
        ops[i] = (struct zk_txn_op){.kind = kinds[o->kind], .path = o->path, .data = o->data,
                                    .len = o->len, .version = o->version};
    }
    if (ch->reschedule)
        prepare_bucket(ch);
    ch->round_trips++;
    int rc = zkstore_multi(ch->ds->d->zs, ops, ch->m.n, on_changed, ch);
    if (rc != ZOK)
        change_zerr(ch, ch->reschedule ? "reschedule" : "cancel", ch->path, rc);
}

static void changed(struct change *ch)
{
    char id[LAYOUT_ID_MAX + 1];
    if (!ch->reschedule)
        queue_pending_changed(ch->q, -1);
    if (layout_job_id(id, sizeof id, ch->q->cfg->name, ch->reschedule ? &ch->next : &ch->jn))
        snprintf(id, sizeof id, "%s", ch->q->cfg->name);
    log_msg(LOG_INFO, "queue %s: job %s %s%s", ch->q->cfg->name, id, /* audit: not limited */
             ch->reschedule ? "rescheduled" : "cancelled",
             ch->nchildren ? " (forced: its holder loses it)" : "");
    change_end(ch, -1, id);
}

/* The path of operation I of send_change's transaction (the job's for -1). */
static const char *op_path(const struct change *ch, int i)
{
    return i >= 0 && i < ch->m.n ? ch->m.ops[i].path : ch->path;
}

/* The new bucket was made once, and the create still found it missing: the answers to its
 * creates say why (a denial, or a bucket deleted again meanwhile: then once more). */
static void on_parents_checked(const struct zk_result *res, void *ctx)
{
    struct change *ch = ctx;
    if (res->rc == ZOK)
        send_change(ch);
    else
        change_zerr(ch, "reschedule", res->path, res->rc); /* the refused level */
}

/* The new name's bucket is missing (zkstore_parents_missing's rule, twice at most). */
static void make_parents(struct change *ch)
{
    ch->round_trips++; /* its creates go together */
    int rc = zkstore_parents_missing(ch->ds->d->zs, ch->next_path, &ch->made_parents,
                                     on_parents_checked, ch);
    if (rc == ZK_PARENTS_RESEND)
        send_change(ch);
    else if (rc != ZK_PARENTS_ASKED)
        change_zerr(ch, "reschedule", ch->next_path, rc);
}

static void on_changed(const struct zk_result *res, void *ctx)
{
    struct change *ch = ctx;
    int bad = zk_failed_op(res), job_op = ch->m.job, create_op = ch->m.create;
    int last = res->nops - 1;
    int keyed = ch->jn.key[0] && !ch->skip_key;
    if (res->rc == ZOK)
        changed(ch);
    else if (res->rc == ZNOTEMPTY && !ch->force)
        in_flight(ch);
    else if (bad == create_op && res->rc == ZNONODE && ch->made_parents < 2)
        make_parents(ch);
    else if (keyed && bad == last && res->rc == ZNONODE && !ch->by_key) {
        ch->skip_key = 1; /* a keyed name without its key node (written by hand) */
        send_change(ch);
    } else if ((res->rc == ZBADVERSION || res->rc == ZNOTEMPTY ||
                (res->rc == ZNONODE && (bad < job_op || bad == last))) && again(ch)) {
        return; /* the key moved on, or a holder came or went: read again */
    } else if (res->rc == ZNONODE && bad == job_op && ch->pack_read && again(ch)) {
        return; /* the pack was unpacked meanwhile: find the job where it went */
    } else if (res->rc == ZNONODE && bad == job_op) {
        not_found(ch);
    } else {
        change_zerr(ch, ch->reschedule ? "reschedule" : "cancel", op_path(ch, bad), res->rc);
    }
}

/* ---- the reads before it ---- */

/* A read of the job failed: answered (1), or go on (0). */
static int read_failed(struct change *ch, const struct zk_result *res, const char *what)
{
    if (res->rc == ZNONODE)
        not_found(ch);
    else if (res->rc != ZOK)
        change_zerr(ch, what, ch->path, res->rc);
    return res->rc != ZOK;
}

static void on_children(const struct zk_result *res, void *ctx)
{
    struct change *ch = ctx;
    if (read_failed(ch, res, "listing the holder of"))
        return;
    for (int i = 0; i < res->nchildren && ch->nchildren < JOBEDIT_HOLDERS_MAX; i++) /* owner-*, then lock */
        if (strncmp(res->children[i], LAYOUT_OWNER, strlen(LAYOUT_OWNER)) == 0)
            snprintf(ch->children[ch->nchildren++], sizeof ch->children[0], "%s/%s", ch->path,
                     res->children[i]);
    for (int i = 0; i < res->nchildren && ch->nchildren < JOBEDIT_HOLDERS_MAX; i++)
        if (strcmp(res->children[i], LAYOUT_LOCK) == 0)
            snprintf(ch->children[ch->nchildren++], sizeof ch->children[0], "%s/%s", ch->path,
                     res->children[i]);
    send_change(ch);
}

/* RESCHEDULE: the payload moves along; the deliveries so far go into the new name. */
static void on_job_read(const struct zk_result *res, void *ctx)
{
    struct change *ch = ctx;
    if (read_failed(ch, res, "reading"))
        return;
    if (res->stat.numChildren > 0) {
        in_flight(ch);
        return;
    }
    ch->len = res->datalen > 0 ? res->datalen : 0;
    if (ch->len && !(ch->payload = malloc((size_t)ch->len))) {
        change_zerr(ch, "reading", ch->path, ZK_ENOMEM);
        return;
    }
    if (ch->len)
        memcpy(ch->payload, res->data, (size_t)ch->len);
    /* the uid stays: the job keeps its identity (docs/protocol.md, job ids and uids) */
    jobedit_next_name(&ch->next, &ch->jn, ch->due_ms,
                      attempts_from_cversion(ch->jn.prior_attempts, res->stat.cversion));
    if (layout_job_path(ch->next_path, sizeof ch->next_path, dispatcher_root(ch->ds),
                        ch->q->cfg->name, &ch->next) != 0) {
        change_end(ch, PE_BAD_REQUEST, "the new name is too long");
        return;
    }
    if (strcmp(ch->next_path, ch->path) == 0)
        changed(ch); /* the same due time, never delivered: already where it should be */
    else
        send_change(ch);
}

/* ---- a packed job ---- */

/* The pack is gone: unpacked since the id was given (or emptied by a change). */
static void pack_gone(struct change *ch)
{
    struct pack_name pn;
    if (layout_parse_pack_name(ch->jn.pack, &pn) == 0)
        memcpy(ch->pack_uid, pn.uid, sizeof ch->pack_uid);
    ch->jn.pack[0] = '\0';
    ch->pack_gone = 1;
    act(ch);
}

/* What the change writes: the pack without the job and, to reschedule, the job's payload
 * and new name (its attempts so far are in its name: a packed job was never delivered).
 * 0, -1 out of memory, -2 a name too long. */
static int pack_change(struct change *ch, struct pack_reader *rd, const struct pack_job *pj,
                       size_t len)
{
    if (rd->count > 1 && (!(ch->pack_rest = malloc(len)) ||
                          pack_without(rd, pj->name.uid, ch->pack_rest, len,
                                       &ch->pack_rest_len) != 0))
        return -1;
    if (!ch->reschedule)
        return 0;
    ch->len = (int)pj->payload_len;
    if (ch->len && !(ch->payload = malloc(pj->payload_len)))
        return -1;
    if (ch->len)
        memcpy(ch->payload, pj->payload, pj->payload_len);
    jobedit_next_name(&ch->next, &ch->jn, ch->due_ms, ch->jn.prior_attempts);
    return layout_job_path(ch->next_path, sizeof ch->next_path, dispatcher_root(ch->ds),
                           ch->q->cfg->name, &ch->next) ? -2 : 0;
}

static void on_pack(const struct zk_result *res, void *ctx)
{
    struct change *ch = ctx;
    struct pack_reader rd;
    struct pack_job pj;
    char text[400];
    int prc;
    if (res->rc == ZNONODE) {
        pack_gone(ch);
        return;
    }
    if (res->rc != ZOK) {
        change_zerr(ch, "reading the pack", ch->pack_path, res->rc);
        return;
    }
    if ((prc = pack_open(&rd, res->data, res->datalen > 0 ? (size_t)res->datalen : 0))) {
        log_warn("queue %s: pack %s: %s", ch->q->cfg->name, ch->pack_path, rd.err);
        snprintf(text, sizeof text, "pack %s cannot be read (%s); nothing was changed",
                 ch->jn.pack, pack_strerror(prc));
        change_end(ch, PE_INTERNAL, text);
        return;
    }
    if (pack_find(&rd, ch->jn.uid, &pj) != 0) {
        not_found(ch); /* cancelled or moved already */
        return;
    }
    memcpy(pj.name.pack, ch->jn.pack, sizeof pj.name.pack);
    ch->jn = pj.name; /* the record is the truth (a by-key id names the same job) */
    ch->pack_version = res->stat.version;
    ch->pack_read = 1;
    if ((prc = pack_change(ch, &rd, &pj, (size_t)res->datalen)) == -1)
        change_zerr(ch, ch->reschedule ? "reschedule" : "cancel", ch->pack_path, ZK_ENOMEM);
    else if (prc != 0)
        change_end(ch, PE_BAD_REQUEST, "the new name is too long");
    else
        send_change(ch);
}

static void read_pack(struct change *ch)
{
    if (layout_pack_path(ch->pack_path, sizeof ch->pack_path, dispatcher_root(ch->ds),
                         ch->q->cfg->name, ch->jn.pack) != 0) {
        not_found(ch);
        return;
    }
    layout_job_path(ch->path, sizeof ch->path, dispatcher_root(ch->ds), ch->q->cfg->name,
                    &ch->jn); /* for messages: where the job will be */
    ch->round_trips++;
    int rc = zkstore_get(ch->ds->d->zs, ch->pack_path, on_pack, ch);
    if (rc != ZOK)
        change_zerr(ch, "reading the pack", ch->pack_path, rc);
}

static void act(struct change *ch)
{
    int rc;
    if (ch->jn.pack[0]) {
        read_pack(ch);
        return;
    }
    if (layout_job_path(ch->path, sizeof ch->path, dispatcher_root(ch->ds), ch->q->cfg->name,
                        &ch->jn)) {
        not_found(ch);
        return;
    }
    if (!ch->reschedule && !ch->force) {
        send_change(ch);
        return;
    }
    ch->round_trips++;
    if (ch->reschedule)
        rc = zkstore_get(ch->ds->d->zs, ch->path, on_job_read, ch);
    else
        rc = zkstore_children(ch->ds->d->zs, ch->path, 0, on_children, ch);
    if (rc != ZOK)
        change_zerr(ch, "reading", ch->path, rc);
}

static void on_key(const struct zk_result *res, void *ctx)
{
    struct change *ch = ctx;
    if (res->rc == ZNONODE || (res->rc == ZOK && (res->datalen <= 0 ||
        layout_parse_key_data(res->data, (size_t)res->datalen, &ch->jn) != 0))) {
        not_found(ch); /* no key node, a kept key ("done ..."), or not a job name */
        return;
    }
    if (res->rc != ZOK) {
        change_zerr(ch, "reading the key node of", ch->key_path, res->rc);
        return;
    }
    ch->key_version = res->stat.version;
    act(ch);
}

static void start(struct change *ch)
{
    if (!ch->by_key) {
        act(ch);
        return;
    }
    ch->round_trips++;
    int rc = zkstore_get(ch->ds->d->zs, ch->key_path, on_key, ch);
    if (rc != ZOK)
        change_zerr(ch, "reading the key node of", ch->key_path, rc);
}

/* The request's queue (by key) or the queue named in its id, native and connected. */
static struct change *change_new(struct dispatcher *ds, struct proto_request *req,
                                 struct reply *r, writehold_fn *handler)
{
    char queue[QUEUE_NAME_MAX + 1];
    struct job_name jn = {0};
    if (req->id[0] && layout_parse_id(req->id, queue, sizeof queue, &jn) != 0) {
        reply_err(r, PE_BAD_REQUEST, "job %s is not in deferd's own format", req->id);
        return NULL;
    }
    struct dqueue *q = dispatcher_queue(ds, req->id[0] ? queue : req->queue);
    struct change *ch = NULL;
    if (!q)
        reply_err(r, PE_UNKNOWN_QUEUE, "no queue '%s' is configured",
                  req->id[0] ? queue : req->queue);
    else if (q->cfg->format != QF_NATIVE)
        reply_err(r, PE_BAD_REQUEST, "queue '%s' is in a Curator format", q->cfg->name);
    else if (!dispatcher_writes_possible(ds) && writehold_take(ds->writehold, handler, req, r))
        return NULL; /* answered once ZooKeeper is back, or the hold runs out */
    else if (!dispatcher_writes_possible(ds))
        reply_refuse(r, PE_UNAVAILABLE,
                     &(struct refusal){.reason = dispatcher_unready_reason(ds)},
                     "not connected to ZooKeeper, or its clock not read yet");
    else if (!(ch = calloc(1, sizeof *ch)))
        reply_err(r, PE_INTERNAL, "out of memory");
    else {
        *ch = (struct change){.ds = ds, .q = q, .r = r, .jn = jn, .key_version = -1,
                              .by_key = !req->id[0], .force = req->force};
        memcpy(ch->key, req->key, sizeof ch->key);
        if (ch->by_key)
            layout_key_path(ch->key_path, sizeof ch->key_path, dispatcher_root(ds), q->cfg->name,
                            ch->key);
    }
    return ch;
}

void cancel_job(struct dispatcher *ds, struct proto_request *req, struct reply *r)
{
    struct job_name jn;
    char queue[QUEUE_NAME_MAX + 1];
    if (req->id[0] && layout_parse_id(req->id, queue, sizeof queue, &jn) == 0 && jn.flow[0]) {
        /* its flow counts on it: cancelled, its parent would wait for ever */
        reply_err(r, PE_BAD_REQUEST, "job %s is a child in a flow (its parent waits for it): "
                  "ack or nack it, or cancel the flow's top parent; nothing was cancelled",
                  req->id);
        return;
    }
    struct change *ch = change_new(ds, req, r, cancel_job);
    if (ch)
        start(ch);
}

void cancel_reschedule(struct dispatcher *ds, struct proto_request *req, struct reply *r)
{
    uint64_t due = req->has_at ? req->at_ms : (uint64_t)cluster_latest_ms() + req->delay_ms;
    if (due > LAYOUT_DUE_MAX) {
        reply_err(r, PE_BAD_REQUEST, "due time %llu is too far", (unsigned long long)due);
        return;
    }
    struct change *ch = change_new(ds, req, r, cancel_reschedule);
    if (!ch)
        return;
    ch->reschedule = 1;
    ch->due_ms = due;
    start(ch);
}
