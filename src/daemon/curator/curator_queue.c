#include "curator_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "curator.h"
#include "daemon.h"
#include "dispatcher.h"
#include "log.h"
#include "metrics.h"
#include "protocol.h"
#include "reply.h"
#include "txnbatch.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

struct cput {
    struct dispatcher *ds;
    struct dqueue *q;
    struct reply *r;
    unsigned char *frame;
    size_t len;
    int made_parents;
    char path[CURATOR_PATH_MAX + CURATOR_PREFIX_MAX + 2]; /* queuePath/prefix */
};

static void on_created(const struct zk_result *res, void *ctx);

static int send_create(struct cput *cp)
{
    const struct zk_txn_op op = {.kind = ZT_CREATE, .path = cp->path, .data = cp->frame,
                                 .len = cp->len, .sequential = 1};
    return txnbatch_add(dispatcher_puts(cp->ds), &op, 1, on_created, cp);
}

/* A put that failed with RC, or (ZOK) was stored but its name did not come back. */
static void refuse_put(struct reply *r, int rc)
{
    struct refusal f = zk_put_refusal(rc);
    f.no_tokens = 1; /* tokens=no: a retry after stored=maybe may store it twice */
    if (rc == ZOK)
        reply_refuse(r, PE_UNAVAILABLE, &(struct refusal){.stored = RS_YES, .no_tokens = 1},
                     "the job was stored, but its name did not come back: do not put it "
                     "again");
    else if (f.stored == RS_MAYBE)
        reply_refuse(r, PE_UNAVAILABLE, &f, ZK_PUT_UNKNOWN_FMT "; a Curator format queue keeps "
                     "no put tokens: a retry may store it twice", zk_reason(rc));
    else
        reply_refuse(r, PE_UNAVAILABLE, &f, ZK_PUT_FAILED_FMT, zk_reason(rc));
}

/* CREATED: the item's name; DENIED_PATH: the directory ZooKeeper refused, if known. */
static void finish(struct cput *cp, int rc, const char *created, const char *denied_path)
{
    const char *name = created ? strrchr(created, '/') : NULL;
    char id[LAYOUT_ID_MAX + 1];
    if (rc == ZOK && name &&
        snprintf(id, sizeof id, "%s/%s", cp->q->cfg->name, name + 1) < (int)sizeof id) {
        reply_ok(cp->r, id);
        metrics_event(dispatcher_deferd(cp->ds)->metrics, cp->q->cfg, ME_PUT);
    } else {
        metrics_refused(dispatcher_deferd(cp->ds)->metrics, cp->q->cfg, MR_FAILED);
        if (rc == ZNOAUTH)
            queue_denied(cp->q, denied_path ? denied_path : cp->path);
        else
            log_warn("queue %s: put to Curator queue %s failed: %s", cp->q->cfg->name,
                     cp->path, rc == ZOK ? "no name came back" : zk_strerror(rc));
        refuse_put(cp->r, rc);
    }
    free(cp->frame);
    free(cp);
}

/* The queue's directory was made once and is still missing: its creates' answers say why
 * (a denial); made, the item is created again. */
static void on_dir_checked(const struct zk_result *res, void *ctx)
{
    struct cput *cp = ctx;
    int rc = res->rc == ZOK ? send_create(cp) : res->rc;
    if (rc != ZOK)
        finish(cp, rc, NULL, res->path);
}

static void on_created(const struct zk_result *res, void *ctx)
{
    struct cput *cp = ctx;
    int rc = res->rc;
    if (rc == ZNONODE && cp->made_parents < 2) { /* the queue directory does not exist */
        rc = zkstore_parents_missing(dispatcher_deferd(cp->ds)->zs, cp->path, &cp->made_parents,
                                     on_dir_checked, cp);
        if (rc == ZK_PARENTS_ASKED || (rc == ZK_PARENTS_RESEND && (rc = send_create(cp)) == ZOK))
            return;
    }
    finish(cp, rc, rc == ZOK && res->op_path ? res->op_path[0] : NULL, NULL);
}

/* Curator's name carries what it orders by: the priority (a signed 32-bit number) or the
 * due time; a ttr has no place in a Curator item. */
static int name_value(const struct dqueue *q, const struct proto_request *req, int64_t *value,
                      struct reply *r)
{
    if (req->has_ttr) {
        reply_err(r, PE_BAD_REQUEST, "a Curator queue item cannot carry a ttr");
        return -1;
    }
    if (q->cfg->format == QF_CURATOR_DELAY) {
        *value = req->has_at ? (int64_t)req->at_ms : cluster_latest_ms() + (int64_t)req->delay_ms;
        return 0;
    }
    uint64_t prio = req->has_prio ? req->prio : q->cfg->priority;
    if (prio > INT32_MAX) {
        reply_err(r, PE_BAD_REQUEST, "Curator priorities are signed 32-bit: %llu is over "
                  "2147483647", (unsigned long long)prio);
        return -1;
    }
    *value = (int64_t)prio;
    return 0;
}

void curator_queue_put(struct dispatcher *ds, struct dqueue *q, struct proto_request *req,
                       struct reply *r)
{
    int64_t value;
    char prefix[CURATOR_PREFIX_MAX];
    enum curator_kind kind = q->cfg->format == QF_CURATOR_DELAY ? CURATOR_DELAY : CURATOR_PRIORITY;
    struct cput *cp = NULL;
    unsigned char *frame = NULL;
    if (name_value(q, req, &value, r) != 0)
        goto out;
    const unsigned char *item = req->payload ? req->payload : (const unsigned char *)"";
    size_t ilen = req->len, flen = curator_frame_size(&ilen, 1);
    if (curator_name_prefix(kind, value, prefix, sizeof prefix) != 0) {
        reply_err(r, PE_BAD_REQUEST, "due time %lld cannot be written", (long long)value);
        goto out;
    }
    if (!(frame = malloc(flen)) || !(cp = malloc(sizeof *cp))) {
        reply_err(r, PE_INTERNAL, "out of memory");
        goto out;
    }
    *cp = (struct cput){.ds = ds, .q = q, .r = r, .frame = frame,
                        .len = curator_frame_encode(&item, &ilen, 1, frame, flen)};
    snprintf(cp->path, sizeof cp->path, "%s/%s", q->cfg->curator_path, prefix);
    int rc = send_create(cp);
    if (rc != ZOK)
        finish(cp, rc, NULL, NULL); /* frees cp and the frame */
    cp = NULL;
    frame = NULL;
out:
    free(frame);
    free(cp);
    free(req->payload);
    req->payload = NULL;
}
