/* Puts: a job's znode created in a batch, its bucket (and shard) made first when needed,
 * and its payload kept for delivery when the job is due soon. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buckets.h"
#include "config.h"
#include "curator_queue.h"
#include "daemon.h"
#include "dispatcher_int.h"
#include "log.h"
#include "metrics.h"
#include "mirror.h"
#include "pending.h"
#include "protocol.h"
#include "server.h"
#include "stash.h"
#include "txnbatch.h"
#include "units.h"
#include "zkstore.h"

/* Payloads of jobs this daemon put and will deliver soon stay in memory, so that delivery
 * needs no read: up to this much per job and in all. */
#define KEEP_PAYLOAD_MAX (64 * 1024)
#define KEEP_PAYLOADS_TOTAL (64 * 1024 * 1024)
/* Stashed: payloads of jobs due within lookahead plus this, kept until due plus this. */
#define STASH_AHEAD_MS 1000
#define STASH_KEEP_MS 10000
#define SHARD_AFTER 2048
#define SHARD_SIZE 2048

/* ---- put ---- */

struct put {
    struct dispatcher *ds;
    struct dqueue *q;
    struct reply *r;
    struct job_name jn;
    unsigned char *payload;
    size_t len;
    char path[LAYOUT_PATH_MAX];
    int made_parents, tries;
};

static void on_put(const struct zk_result *res, void *ctx);

static int add_create(struct put *p)
{
    const struct zk_txn_op op = {.kind = ZT_CREATE, .path = p->path, .data = p->payload,
                                 .len = p->len};
    return txnbatch_add(p->ds->puts, &op, 1, on_put, p);
}

static void on_bucket_made(const struct zk_result *res, void *ctx)
{
    (void)res; /* NodeExists: someone else made it; other errors: the put will say */
    (void)ctx;
}

/* Makes sure the job's bucket exists before the job's create reaches ZooKeeper (both go
 * out on one session, in order): the bucket levels below the deepest one known to exist
 * are created in the same batch, ahead of the job; with none known (a new 2.8-hour window),
 * every missing ancestor directly. NodeExists costs only a resend of the batch. */
static int prepare_bucket(struct dispatcher *ds, const char *job_path)
{
    char path[LAYOUT_PATH_MAX], missing[LAYOUT_DEPTH][LAYOUT_PATH_MAX], *slash;
    int n = 0, level, rc = ZOK;
    snprintf(path, sizeof path, "%s", job_path);
    for (level = LAYOUT_DEPTH; level >= 1; level--) {
        if (!(slash = strrchr(path, '/')))
            return ZBADARGUMENTS;
        *slash = '\0';
        if (buckets_known(level == LAYOUT_DEPTH ? ds->buckets : ds->parents, path))
            break;
        memcpy(missing[n++], path, sizeof path);
    }
    if (n == 0)
        return ZOK;
    if (level == 0)
        rc = zkstore_create_parents(ds->d->zs, job_path, NULL, NULL);
    for (int i = n - 1; level > 0 && i >= 0 && rc == ZOK; i--) {
        const struct zk_txn_op op = {.kind = ZT_CREATE, .path = missing[i]};
        rc = txnbatch_add(ds->puts, &op, 1, on_bucket_made, NULL);
    }
    for (int i = 0; rc == ZOK && i < n; i++)
        buckets_add(i == 0 ? ds->buckets : ds->parents, missing[i]);
    return rc;
}

/* Past SHARD_AFTER of our puts into one 100 ms bucket, the next ones go into shards of
 * SHARD_SIZE jobs, named for this daemon run, so that no listing of the bucket or of a
 * shard grows past about 100 KiB per writer. */
static int choose_shard(struct put *p)
{
    struct dispatcher *ds = p->ds;
    char dir[LAYOUT_PATH_MAX], *slash;
    snprintf(dir, sizeof dir, "%s", p->path);
    if (!(slash = strrchr(dir, '/')))
        return ZBADARGUMENTS;
    *slash = '\0';
    unsigned n = buckets_count_put(ds->buckets, dir);
    if (n < SHARD_AFTER)
        return ZOK;
    snprintf(p->jn.shard, sizeof p->jn.shard, "s%08llx-%u", (unsigned long long)ds->uid_prefix,
             (n - SHARD_AFTER) / SHARD_SIZE);
    if (layout_job_path(p->path, sizeof p->path, root(ds), p->q->cfg->name, &p->jn) != 0)
        return ZBADARGUMENTS;
    snprintf(dir, sizeof dir, "%s", p->path);
    *strrchr(dir, '/') = '\0';
    if (buckets_known(ds->buckets, dir))
        return ZOK;
    buckets_add(ds->buckets, dir);
    const struct zk_txn_op op = {.kind = ZT_CREATE, .path = dir};
    return txnbatch_add(ds->puts, &op, 1, on_bucket_made, NULL);
}

static int send_put(struct put *p)
{
    new_uid(p->ds, p->jn.uid);
    p->jn.shard[0] = '\0';
    if (layout_job_path(p->path, sizeof p->path, root(p->ds), p->q->cfg->name, &p->jn) != 0)
        return ZBADARGUMENTS;
    p->tries++;
    int rc = prepare_bucket(p->ds, p->path);
    if (rc == ZOK)
        rc = choose_shard(p);
    return rc == ZOK ? add_create(p) : rc;
}

/* The job is due soon: keep its payload, so that delivering it needs no read. In the job
 * if our mirror has it already, else in the stash until the mirror lists it. Payloads
 * never change once written. */
static void keep_payload(struct put *p)
{
    struct dispatcher *ds = p->ds;
    struct job *job;
    int64_t now = units_wall_ms();
    if (p->len > KEEP_PAYLOAD_MAX || !p->payload)
        return;
    HASH_FIND_STR(ds->jobs, p->path, job);
    if (!job) {
        if ((int64_t)p->jn.due_ms <= now + (int64_t)ds->d->cfg->lookahead_ms + STASH_AHEAD_MS &&
            stash_put(ds->stash, p->path, p->payload, p->len,
                      (int64_t)p->jn.due_ms + STASH_KEEP_MS, now) == 0)
            p->payload = NULL;
        return;
    }
    if (job->payload || ds->payload_bytes + p->len > KEEP_PAYLOADS_TOTAL)
        return;
    job->payload = p->payload;
    job->len = p->len;
    ds->payload_bytes += p->len;
    p->payload = NULL;
}

static void put_done(struct put *p, int rc)
{
    char id[LAYOUT_ID_MAX + 1];
    if (rc == ZOK && layout_job_id(id, sizeof id, p->q->cfg->name, &p->jn) == 0) {
        reply_ok(p->r, id);
        metrics_event(p->ds->d->metrics, p->q->cfg, ME_PUT);
        pending_changed(p->q, +1);
        mirror_job_created(p->ds->d->mirror, p->q, p->path);
        keep_payload(p);
    } else {
        log_warn("queue %s: put to %s failed: %s", p->q->cfg->name, p->path, zerror(rc));
        metrics_refused(p->ds->d->metrics, p->q->cfg, MR_FAILED);
        reply_err(p->r, PE_UNAVAILABLE, "ZooKeeper did not store the job: %s", zerror(rc));
    }
    free(p->payload);
    free(p);
}

static void on_put(const struct zk_result *res, void *ctx)
{
    struct put *p = ctx;
    int rc = res->rc;
    if (rc == ZNONODE && !p->made_parents) {
        /* First job in this bucket: create the bucket path, then the job again. */
        p->made_parents = 1; /* known to us, but deleted meanwhile (empty past bucket) */
        rc = zkstore_create_parents(p->ds->d->zs, p->path, NULL, NULL);
        if (rc == ZOK && (rc = add_create(p)) == ZOK)
            return;
    } else if (rc == ZNODEEXISTS && p->tries < 3) {
        if ((rc = send_put(p)) == ZOK)
            return;
    }
    put_done(p, rc);
}

void dispatcher_put(struct dispatcher *ds, struct proto_request *req, struct reply *r)
{
    struct dqueue *q = dispatcher_queue(ds, req->queue);
    struct put *p = NULL;
    if (!q) {
        reply_err(r, PE_UNKNOWN_QUEUE, "no queue '%s' is configured", req->queue);
    } else if (!zkstore_connected(ds->d->zs)) {
        reply_err(r, PE_UNAVAILABLE, "not connected to ZooKeeper");
        metrics_refused(ds->d->metrics, q->cfg, MR_UNAVAILABLE);
    } else if (pending_full(q)) {
        metrics_refused(ds->d->metrics, q->cfg, MR_QUEUE_FULL);
        reply_err(r, PE_QUEUE_FULL, "queue '%s' holds %lld of at most %llu pending jobs",
                  req->queue, (long long)pending_estimate(q),
                  (unsigned long long)q->cfg->max_pending);
    } else if (q->cfg->format != QF_NATIVE) {
        curator_queue_put(ds, q, req, r); /* takes the payload */
        return;
    } else if (!(p = calloc(1, sizeof *p))) {
        reply_err(r, PE_INTERNAL, "out of memory");
    } else {
        uint64_t due = req->has_at ? req->at_ms : (uint64_t)units_wall_ms() + req->delay_ms;
        if (due > LAYOUT_DUE_MAX) {
            reply_err(r, PE_BAD_REQUEST, "due time %llu is too far", (unsigned long long)due);
            free(p);
            p = NULL;
        } else {
            *p = (struct put){.ds = ds, .q = q, .r = r, .payload = req->payload, .len = req->len};
            p->jn.due_ms = due;
            p->jn.priority = req->has_prio ? req->prio : q->cfg->priority;
            p->jn.ttr_ms = req->has_ttr ? (uint32_t)req->ttr_ms : 0; /* 0: queue default */
            req->payload = NULL;
            int rc = send_put(p);
            if (rc != ZOK)
                put_done(p, rc);
            return;
        }
    }
    free(req->payload);
    req->payload = NULL;
}

