/* PUT, BATCH and FLOW: the request side of creating jobs (putset.c does the ZooKeeper
 * side). A batch larger than one ZooKeeper request goes in parts, one after the other; a
 * flow goes in one, its parent's nodes (flow.h) before its children. */
#include "put.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher_int.h"
#include "dispatcher_jobs.h"
#include "flow.h"
#include "foreign_format.h"
#include "log.h"
#include "metrics.h"
#include "packer.h"
#include "protocol.h"
#include "putset.h"
#include "tokens.h"
#include "reply.h"
#include "txnbatch.h"
#include "writehold.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"
#include "zalloc.h"

struct put {
    struct dispatcher *ds;
    struct reply *r;
    int flow;                   /* FLOW: reply with n=, ids= (the parent's first), dup=- */
    int batch;                  /* BATCH: reply with n=, parts=, ids=, dup= */
    int unsure;                 /* the current part's first send may have been applied */
    int64_t held_since;         /* monotonic: first held to find out (0: never); a put held
                                 * again waits no longer in all than hold_writes */
    struct putset **parts;
    size_t nparts, sent;
};

static void put_free(struct put *p)
{
    p->ds->puts_open--;
    if (p->ds->puts_done) /* a request waiting for its turn may go now */
        p->ds->puts_done(p->ds->puts_done_arg);
    for (size_t i = 0; i < p->nparts; i++)
        putset_free(p->parts[i]);
    free(p->parts);
    free(p);
}

static void reply_single(struct put *p)
{
    const struct putjob *pj = putset_job(p->parts[0], 0); /* a single put: never dup_of */
    char text[LAYOUT_ID_MAX + 16];
    size_t n = strlen(pj->id); /* an id fits LAYOUT_ID_MAX */
    memcpy(text, pj->id, n + 1);
    if (pj->dup && !pj->stored_before && !pj->retried)
        memcpy(text + n, " duplicate", sizeof " duplicate");
    reply_ok(p->r, text);
}

static void reply_batch(struct put *p)
{
    char *text = NULL;
    if (putset_format(p->parts, p->nparts, 1, &text) != 0)
        reply_err(p->r, PE_INTERNAL, "out of memory");
    else
        reply_ok(p->r, text);
    free(text);
}

/* Part P failed with RC: nothing of it was stored, or (no answer) maybe all of it; earlier
 * parts were stored. */
static void reply_failed(struct put *p, size_t part, int rc)
{
    const struct putjob *pj = putset_job(p->parts[part], 0);
    char *ids = NULL;
    size_t stored = 0;
    const char *why = zk_reason(rc);
    const struct token_refusal *taken = putset_token_refusal(p->parts[part]);
    metrics_refused(p->ds->d->metrics, pj->q->cfg, MR_FAILED);
    if (rc != ZNOAUTH && !taken) /* putset.c or tokens.c told, with the path */
        log_warn("queue %s: put%s failed: %s", pj->q->cfg->name, p->batch ? " of a batch" : "",
                 why);
    for (size_t i = 0; i < part; i++)
        stored += putset_count(p->parts[i]);
    int unknown = zk_outcome_unknown(rc) || p->unsure || taken;
    const char *fate = unknown ? "may have been stored" : "was not stored";
    struct refusal f = zk_put_refusal(rc);
    if (unknown && f.reason == RR_ZOOKEEPER) /* unsure since an earlier try's loss */
        f.reason = RR_CONNECTION_LOST;
    f.stored = unknown ? RS_MAYBE : RS_NO;
    if (part == 0 && taken) {
        reply_refuse(p->r, PE_UNAVAILABLE, &taken->f, "%s", taken->text);
    } else if (part == 0 || putset_format(p->parts, part, 0, &ids) != 0) {
        if (unknown)
            reply_refuse(p->r, PE_UNAVAILABLE, &f, "the job%s may have been stored: the "
                         "connection to ZooKeeper broke before its answer (%s)",
                         p->batch ? "s" : "", why);
        else
            reply_refuse(p->r, PE_UNAVAILABLE, &f, "not stored: ZooKeeper did not store the "
                         "job%s (%s)", p->batch ? "s" : "", why);
    } else {
        /* stored=<k> alone: an older libdeferd wants " ids=" right after it */
        char *text = NULL;
        f = (struct refusal){.stored = RS_COUNT, .count = stored};
        if (asprintf(&text, "%s; the rest %s: %s", strstr(ids, "ids="), fate, why) < 0)
            text = NULL;
        reply_refuse_text(p->r, PE_PARTIAL, &f, text ? text : "the rest was not stored");
        free(text);
    }
    free(ids);
}

static void on_part_done(struct putset *ps, int rc, const struct zk_result *res, void *ctx);

static int send_part(struct put *p)
{
    return putset_send(p->parts[p->sent], p->ds->puts, NULL, 0, on_part_done, p);
}

/* "n=<n> ids=<parent>,<child>,... dup=-": a flow's reply, as a batch's without parts=. */
static void reply_flow(struct put *p)
{
    char *text = NULL;
    for (size_t i = 0; i < putset_count(p->parts[0]); i++)
        p->ds->flows.opened += putset_job(p->parts[0], i)->flow_children > 0;
    if (putset_format(p->parts, 1, 0, &text) != 0)
        reply_err(p->r, PE_INTERNAL, "out of memory (the flow was stored)");
    else
        reply_ok(p->r, text);
    free(text);
}

/* ---- a part whose answer the connection lost: found out once it is back ---- */

/* The job of PS whose absence proves that the part was not stored: the one due last, when
 * it is not due yet even by ZooKeeper's latest possible time (so nobody can have delivered
 * and acked it since). NULL when there is none, or a job went into a pack (packs hold
 * others' jobs too). */
static const struct putjob *witness(const struct putset *ps)
{
    const struct putjob *w = NULL;
    for (size_t i = 0; i < putset_count(ps); i++) {
        const struct putjob *pj = putset_job(ps, i);
        if (pj->pack >= 0)
            return NULL;
        /* unkeyed: nobody knows its id (the put was never answered), so nobody cancelled it */
        if (pj->named && !pj->dup && pj->dup_of < 0 && !pj->jn.key[0] && !pj->flow_children &&
            (!w || pj->jn.due_ms > w->jn.due_ms))
            w = pj;
    }
    return w && (int64_t)w->jn.due_ms > cluster_latest_ms() ? w : NULL;
}

/* Every job of PS has a put token (idem=): sent again, the tokens tell what the first
 * send stored, whatever became of its jobs since (a token outlives its job). Or every job
 * has a key and none is due yet: the keys tell (a job due already may have been delivered
 * and acked meanwhile, its key freed with it: sent again, it would be stored twice). */
static int keys_tell(const struct putset *ps)
{
    size_t tokens = 0;
    for (size_t i = 0; i < putset_count(ps); i++)
        tokens += putjob_token_path(putset_job(ps, i))[0] != '\0';
    if (tokens == putset_count(ps))
        return 1;
    if (!putset_all_keyed(ps))
        return 0;
    int64_t latest = cluster_latest_ms();
    for (size_t i = 0; i < putset_count(ps); i++) {
        const struct putjob *pj = putset_job(ps, i);
        if (!pj->dup && pj->dup_of < 0 && (int64_t)pj->jn.due_ms <= latest)
            return 0;
    }
    return 1;
}

static int resend_later(struct put *p, int rc);

/* Unless the failure is one to hold again, the put is answered with it and ends. */
static void unsure_end(struct put *p, int rc)
{
    if (rc == ZOK || resend_later(p, rc))
        return;
    reply_failed(p, p->sent, rc);
    put_free(p);
}

/* The witness is there: the first send was applied. Gone: it was not; sent now. */
static void on_checked(const struct zk_result *res, void *ctx)
{
    struct put *p = ctx;
    struct putset *ps = p->parts[p->sent];
    if (res->rc == ZOK) {
        p->unsure = 0;
        putset_created(ps);
        on_part_done(ps, ZOK, NULL, p);
    } else if (res->rc == ZNONODE) {
        p->unsure = 0; /* not applied: what follows is this send's own fate */
        unsure_end(p, send_part(p));
    } else {
        unsure_end(p, res->rc);
    }
}

/* Tokens or keys: the same send again, they answer what was stored. Without: a check (a write,
 * so ordered after anything the old connection sent) of the witness. */
static void unsure_release(struct dispatcher *ds, void *ctx)
{
    struct put *p = ctx;
    struct putset *ps = p->parts[p->sent];
    const struct putjob *w = keys_tell(ps) ? NULL : witness(ps);
    if (keys_tell(ps)) {
        unsure_end(p, send_part(p));
    } else if (w) {
        struct zk_txn_op check = {.kind = ZT_CHECK, .path = w->path, .version = -1};
        unsure_end(p, zkstore_multi(ds->d->zs, &check, 1, on_checked, p));
    } else {
        unsure_end(p, ZCONNECTIONLOSS); /* due meanwhile: its absence would prove nothing */
    }
}

static void unsure_fail(struct dispatcher *ds, void *ctx, enum refusal_reason why)
{
    struct put *p = ctx;
    (void)ds;
    (void)why;
    reply_failed(p, p->sent, ZCONNECTIONLOSS);
    put_free(p);
}

static const struct writehold_ops unsure_ops = {unsure_release, unsure_fail};

/* RC leaves the part's fate unknown, but ZooKeeper can tell once it is back: held. */
static int resend_later(struct put *p, int rc)
{
    struct putset *ps = p->parts[p->sent];
    if (!zk_outcome_unknown(rc) || zk_session_gone(rc) || !(keys_tell(ps) || witness(ps)) ||
        !writehold_add(p->ds->writehold, &unsure_ops, p, p->held_since))
        return 0;
    if (!p->held_since)
        p->held_since = units_mono_ms();
    p->unsure = 1;
    log_debug("queue %s: put%s: the connection broke before ZooKeeper's answer; finding out "
              "whether it was stored when it is back", putset_job(ps, 0)->q->cfg->name,
              p->batch ? " of a batch" : "");
    return 1;
}

static void on_part_done(struct putset *ps, int rc, const struct zk_result *res, void *ctx)
{
    struct put *p = ctx;
    (void)ps;
    (void)res;
    if (rc == ZOK)
        p->unsure = 0; /* this part is settled; the next starts sure */
    if (rc == ZOK && ++p->sent < p->nparts && (rc = send_part(p)) == ZOK)
        return;
    if (rc != ZOK && resend_later(p, rc))
        return;
    if (rc != ZOK)
        reply_failed(p, p->sent, rc);
    else if (p->flow)
        reply_flow(p);
    else if (p->batch)
        reply_batch(p);
    else
        reply_single(p);
    put_free(p);
}

/* The same put token twice in one request, across its parts too (putset_add sees one part):
 * refused, as a token names one put. */
static int token_repeated(struct proto_put *items, size_t n, struct reply *r)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = 0; items[i].idem[0] && j < i; j++)
            if (strcmp(items[i].idem, items[j].idem) == 0 &&
                strcmp(items[i].queue, items[j].queue) == 0) {
                reply_err(r, PE_BAD_REQUEST, "item %zu: idem token %s is given twice (job %zu "
                          "has it): a token names one put; nothing was stored", i + 1,
                          items[i].idem, j + 1);
                return 1;
            }
    return 0;
}

/* Cuts the jobs into parts that each fit one ZooKeeper request. */
static int split(struct put *p, struct proto_put *items, size_t n, struct reply *r)
{
    enum proto_errcode code;
    char text[300];
    size_t bytes = 0;
    if (token_repeated(items, n, r))
        return -1;
    if (!(p->parts = zalloc(n, sizeof *p->parts)))
        return reply_err(r, PE_INTERNAL, "out of memory"), -1;
    for (size_t i = 0; i < n; i++) {
        size_t need = items[i].len + 2 * (LAYOUT_PATH_MAX + TXN_OP_OVERHEAD);
        if (p->nparts && bytes + need > TXN_ITEM_BYTES_MAX) {
            bytes = 0;
            p->nparts++;
        }
        if (!p->nparts)
            p->nparts = 1;
        struct putset **ps = &p->parts[p->nparts - 1];
        if (!*ps && !(*ps = putset_new(&p->ds->put_env, n - i)))
            return reply_err(r, PE_INTERNAL, "out of memory"), -1;
        if (putset_add(*ps, &items[i], &code, text, sizeof text) != 0) {
            if (p->batch)
                reply_err(r, code, "item %zu: %s; nothing was stored", i + 1, text);
            else
                reply_err(r, code, "%s", text);
            return -1;
        }
        bytes += need;
    }
    return 0;
}

static void put_jobs(struct dispatcher *ds, struct proto_put *items, size_t n, int batch,
                     struct reply *r)
{
    struct put *p = malloc(sizeof *p);
    if (!p) {
        reply_err(r, PE_INTERNAL, "out of memory");
        return;
    }
    *p = (struct put){.ds = ds, .r = r, .batch = batch};
    ds->puts_open++;
    if (split(p, items, n, r) != 0) {
        put_free(p);
        return;
    }
    int rc = send_part(p);
    if (rc != ZOK) {
        reply_failed(p, 0, rc);
        put_free(p);
    }
}

/* A far job without a key goes into a pack (packer.h); -1 when it is not one for a pack. */
static int put_packed(struct dispatcher *ds, struct dqueue *q, struct proto_request *req,
                      struct reply *r)
{
    uint64_t due = req->has_at ? req->at_ms : (uint64_t)cluster_latest_ms() + req->delay_ms;
    if (!packer_wants(ds->d->packer, q, due, req->len))
        return -1;
    struct job_name jn = {.due_ms = due, .priority = req->has_prio ? req->prio : q->cfg->priority,
                          .ttr_ms = req->has_ttr ? (uint32_t)req->ttr_ms : 0};
    char token[LAYOUT_PATH_MAX] = "", text[300];
    enum proto_errcode code;
    if (req->idem[0] &&
        tokens_path(token, sizeof token, dispatcher_root(ds), q->cfg->name, req->idem, &code,
                    text, sizeof text) != 0) {
        reply_err(r, code, "%s", text);
        proto_request_clear(req);
        return 0;
    }
    packer_put(ds->d->packer, q, &jn, req->payload, req->len, token, r);
    req->payload = NULL;
    proto_request_clear(req);
    return 0;
}

static void refuse_unavailable(struct dispatcher *ds, struct dqueue *q, struct reply *r)
{
    struct refusal f = {.stored = RS_NO, .reason = dispatcher_unready_reason(ds)};
    if (f.reason == RR_CLOCK_UNREAD)
        reply_refuse(r, PE_UNAVAILABLE, &f, "not stored: ZooKeeper's clock not read yet (just "
                     "connected)");
    else
        reply_refuse(r, PE_UNAVAILABLE, &f, "not stored: not connected to ZooKeeper");
    if (q)
        metrics_refused(ds->d->metrics, q->cfg, MR_UNAVAILABLE);
}

void put_single(struct dispatcher *ds, struct proto_request *req, struct reply *r)
{
    struct dqueue *q = dispatcher_queue(ds, req->queue);
    struct proto_put pp = {.has_delay = req->has_delay, .has_at = req->has_at,
                           .has_prio = req->has_prio, .has_ttr = req->has_ttr,
                           .delay_ms = req->delay_ms, .at_ms = req->at_ms,
                           .ttr_ms = req->ttr_ms, .prio = req->prio,
                           .payload = req->payload, .len = req->len};
    memcpy(pp.idem, req->idem, sizeof pp.idem);
    memcpy(pp.group, req->group, sizeof pp.group);
    /* keyed puts take the put set's path; a pack has no field for a group (pack.c) */
    int named = req->key[0] || req->group[0];
    if (!q) {
        reply_err(r, PE_UNKNOWN_QUEUE, "no queue '%s' is configured", req->queue);
    } else if (req->flow_parent) {
        reply_err(r, PE_BAD_REQUEST, "parent= is for the jobs of a FLOW; nothing was stored");
    } else if (!dispatcher_writes_possible(ds)) {
        if (!writehold_take(ds->writehold, put_single, req, r))
            refuse_unavailable(ds, q, r);
    } else if (queue_pending_full(q)) {
        metrics_refused(ds->d->metrics, q->cfg, MR_QUEUE_FULL);
        reply_err(r, PE_QUEUE_FULL, "queue '%s' holds %lld of at most %llu pending jobs",
                  req->queue, (long long)queue_pending_estimate(q),
                  (unsigned long long)q->cfg->max_pending);
    } else if (!named && put_packed(ds, q, req, r) == 0) {
        return;
    } else if (q->cfg->format != QF_NATIVE && !named) { /* no tokens there: idem ignored */
        ds->foreign->put(ds, q, req, r); /* takes the payload */
        return;
    } else {
        memcpy(pp.queue, req->queue, sizeof pp.queue);
        memcpy(pp.key, req->key, sizeof pp.key);
        req->payload = NULL;
        put_jobs(ds, &pp, 1, 0, r);
        free(pp.payload); /* still here if it was refused */
        return;
    }
    proto_request_clear(req);
}

void put_on_done(struct dispatcher *ds, void (*fn)(void *arg), void *arg)
{
    ds->puts_done = fn;
    ds->puts_done_arg = arg;
}

size_t put_open_count(const struct dispatcher *ds)
{
    size_t packed = packer_open(ds->d->packer);
    struct writehold_stats held;
    writehold_report(ds->writehold, &held);
    return ds->puts_open + held.puts + (packed + PACKER_PUTS_PER_SLOT - 1) / PACKER_PUTS_PER_SLOT;
}

void put_batch(struct dispatcher *ds, struct proto_request *req, struct reply *r)
{
    if (!dispatcher_writes_possible(ds)) {
        if (!writehold_take(ds->writehold, put_batch, req, r))
            refuse_unavailable(ds, NULL, r);
    } else
        put_jobs(ds, req->items, req->nitems, 1, r);
    proto_request_clear(req); /* payloads taken by the jobs are NULL here */
}

/* ---- FLOW: parents waiting for their children ---- */

/* Item I of a flow: refused (-1, replied) when it takes what a flow cannot keep, or names
 * a parent that does not come before it. */
static int flow_item_refused(const struct proto_put *pp, size_t i, struct reply *r)
{
    if (pp->key[0] || pp->idem[0]) {
        reply_err(r, PE_BAD_REQUEST, "item %zu: a FLOW's jobs take no %s= (a flow is created "
                  "once, in one transaction); nothing was stored", i + 1,
                  pp->key[0] ? "key" : "idem");
        return -1;
    }
    if (pp->flow_parent && (i == 0 || pp->flow_parent > i)) {
        reply_err(r, PE_BAD_REQUEST, "item %zu: parent=%u must name an earlier job of the "
                  "flow (1 .. %zu); nothing was stored", i + 1, (unsigned)pp->flow_parent, i);
        return -1;
    }
    return 0;
}

/* What a flow's transaction takes at most, as txnbatch_bytes() counts it: a job's create
 * (its path: root, queue, buckets, a name of LAYOUT_NAME_MAX), its marker's (its path under
 * <root>/flows and the job's id as data); a waiting parent's two nodes instead of a job. */
static size_t flow_bytes(const char *root, const struct proto_request *req)
{
    size_t bytes = 0, r = strlen(root);
    for (size_t i = 0; i < req->nitems; i++) {
        size_t q = strlen(req->items[i].queue);
        bytes += req->items[i].len + (r + q + 40 + LAYOUT_NAME_MAX + TXN_OP_OVERHEAD) +
                 (r + 80 + TXN_OP_OVERHEAD) + (q + 1 + LAYOUT_NAME_MAX) +
                 (r + 80 + TXN_OP_OVERHEAD + 96 + q + 1 + LAYOUT_NAME_MAX); /* if a parent */
    }
    return bytes;
}

/* Every job of the flow in one put set, each child linked to its parent (item 1 unless
 * parent= names another): one transaction. */
static int plan_flow(struct put *p, struct proto_request *req)
{
    enum proto_errcode code;
    char text[300];
    struct putset *ps = putset_new(&p->ds->put_env, req->nitems);
    if (!ps || !(p->parts = calloc(1, sizeof *p->parts))) {
        putset_free(ps);
        return reply_err(p->r, PE_INTERNAL, "out of memory"), -1;
    }
    p->parts[0] = ps;
    p->nparts = 1;
    unsigned char depth[PROTO_GROUP_MAX] = {0}; /* of each job: flows above it */
    for (size_t i = 0; i < req->nitems; i++) {
        struct proto_put *pp = &req->items[i];
        size_t parent = pp->flow_parent ? pp->flow_parent - 1 : 0;
        if (flow_item_refused(pp, i, p->r) != 0)
            return -1;
        depth[i] = i ? depth[parent] + 1 : 0;
        if (depth[i] > FLOW_DEPTH_MAX) {
            reply_err(p->r, PE_BAD_REQUEST, "item %zu: flows nest %d deep at most; nothing was "
                      "stored", i + 1, FLOW_DEPTH_MAX);
            return -1;
        }
        if (putset_add(ps, pp, &code, text, sizeof text) != 0) {
            reply_err(p->r, code, "item %zu: %s; nothing was stored", i + 1, text);
            return -1;
        }
        if (i > 0)
            putset_flow_child(ps, i, parent, req->flow_on == FLOW_ON_COMPLETE);
    }
    size_t bytes = flow_bytes(dispatcher_root(p->ds), req);
    if (bytes > TXN_ITEM_BYTES_MAX) {
        reply_err(p->r, PE_TOO_LARGE, "the flow needs %zu bytes, over the %d one ZooKeeper "
                  "transaction carries; nothing was stored", bytes, TXN_ITEM_BYTES_MAX);
        return -1;
    }
    return 0;
}

static void flow_jobs(struct dispatcher *ds, struct proto_request *req, struct reply *r)
{
    struct put *p = calloc(1, sizeof *p);
    if (!p) {
        reply_err(r, PE_INTERNAL, "out of memory");
        return;
    }
    *p = (struct put){.ds = ds, .r = r, .batch = 1, .flow = 1};
    ds->puts_open++;
    if (plan_flow(p, req) != 0) {
        put_free(p);
        return;
    }
    int rc = send_part(p);
    if (rc != ZOK) {
        reply_failed(p, 0, rc);
        put_free(p);
    }
}

void put_flow(struct dispatcher *ds, struct proto_request *req, struct reply *r)
{
    if (!dispatcher_writes_possible(ds)) {
        if (!writehold_take(ds->writehold, put_flow, req, r))
            refuse_unavailable(ds, NULL, r);
    } else
        flow_jobs(ds, req, r);
    proto_request_clear(req);
}
