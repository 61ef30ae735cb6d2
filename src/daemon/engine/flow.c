#include "flow.h"

#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "flowcache.h"
#include "job.h"
#include "log.h"

#define REREADS_MAX 3 /* a flow inconsistent under every read of it: settled without it */

/* The counts after one more child counted (DEAD: as dead), ADDED children added. */
static void count_one(struct layout_flow *fl, int dead, unsigned added)
{
    fl->pending = fl->pending - 1 + added;
    *(dead ? &fl->dead : &fl->acked) += 1;
}

int flow_settle_needs_read(const struct job *job, const struct flow_settle *fs)
{
    return job->jn.flow[0] && !fs->read && !fs->skip;
}

void flow_settle_clear(struct flow_settle *fs)
{
    for (int k = 0; fs->lv && k < FLOW_DEPTH_MAX; k++)
        free(fs->lv[k].payload);
    free(fs->lv);
    fs->lv = NULL;
    fs->nlv = 0;
    fs->read = 0;
    fs->nops = 0;
}

struct flow_read {
    struct flow_cache *cache;
    struct zkstore *zs;
    const char *root;
    const struct job *job;
    int dead;
    struct flow_settle *fs;
    int k;                     /* the level being read */
    void (*done)(void *ctx, int rc);
    void *ctx;
};

/* The read ends: the settle goes on (RC), then the settles of the same flow that waited
 * for this read (after it: their versions follow its own). */
static void read_end(struct flow_read *fr, int rc)
{
    void (*done)(void *ctx, int rc) = fr->done;
    void *ctx = fr->ctx;
    struct flow_cache *cache = fr->cache;
    struct flow_level lv0 = fr->fs->nlv > 0 && fr->fs->lv ? fr->fs->lv[0]
                                                          : (struct flow_level){0};
    char uid[LAYOUT_UID_MAX + 1];
    int known = rc == ZOK && fr->fs->read && fr->fs->nlv > 0 && !lv0.last;
    snprintf(uid, sizeof uid, "%s", fr->job->jn.flow);
    fr->fs->cached = known;
    lv0.payload = NULL;
    free(fr);
    done(ctx, rc);
    flowcache_read_end(cache, uid, known, lv0.version, &lv0.fl, lv0.dead, lv0.added);
}

/* Level K's paths: the flow of FLOW's node, its parent's node, CHILD's marker. */
static int level_paths(const char *root, struct flow_level *lv, const char *flow,
                       const char *child)
{
    return layout_flow_path(lv->flow_path, sizeof lv->flow_path, root, flow, NULL) ||
           layout_flow_path(lv->parent_node, sizeof lv->parent_node, root, flow,
                            LAYOUT_FLOW_PARENT) ||
           layout_flow_marker_path(lv->marker_path, sizeof lv->marker_path, root, flow, child);
}

static void read_level(struct flow_read *fr, const char *flow, const char *child, int dead);

/* Reading ends at level K (the flows above, if any, are not counted in). */
static void read_ends_at(struct flow_read *fr, int k)
{
    fr->fs->nlv = k;
    fr->fs->read = k > 0;
    fr->fs->skip = k == 0;
    read_end(fr, ZOK);
}

/* A flow changed while it was read (released meanwhile): from the child's flow again. */
static void read_again(struct flow_read *fr)
{
    if (++fr->fs->rereads > 100 * REREADS_MAX) {
        log_error("flow %s: changed under %d reads; job %s is settled without it",
                  fr->job->jn.flow, REREADS_MAX, fr->job->id);
        read_ends_at(fr, 0);
        return;
    }
    for (int k = 0; k < FLOW_DEPTH_MAX; k++) {
        free(fr->fs->lv[k].payload);
        fr->fs->lv[k] = (struct flow_level){0};
    }
    fr->k = 0;
    read_level(fr, fr->job->jn.flow, fr->job->jn.uid, fr->dead);
}

/* The released parent goes to the dead letters and is itself a flow's child: count it. */
static int parent_dead_in_flow(struct flow_read *fr, struct flow_level *lv)
{
    char queue[LAYOUT_ID_MAX + 1];
    struct job_name jn;
    int dead = !lv->fl.on_complete && lv->fl.dead + (unsigned)lv->dead > 0;
    if (!dead || fr->k + 1 >= FLOW_DEPTH_MAX ||
        layout_parse_id(lv->fl.parent, queue, sizeof queue, &jn) != 0 || !jn.flow[0])
        return 0;
    fr->k++;
    read_level(fr, jn.flow, jn.uid, 1);
    return 1;
}

static void on_parent_read(const struct zk_result *res, void *ctx)
{
    struct flow_read *fr = ctx;
    struct flow_level *lv = &fr->fs->lv[fr->k];
    if (res->rc == ZNONODE) { /* released meanwhile (not by this child) */
        read_again(fr);
        return;
    }
    if (res->rc != ZOK) {
        read_end(fr, res->rc);
        return;
    }
    lv->len = (size_t)(res->datalen > 0 ? res->datalen : 0);
    if (lv->len && !(lv->payload = malloc(lv->len))) {
        read_end(fr, ZSYSTEMERROR);
        return;
    }
    if (lv->len)
        memcpy(lv->payload, res->data, lv->len);
    if (!parent_dead_in_flow(fr, lv))
        read_ends_at(fr, fr->k + 1);
}

static void on_flow_read(const struct zk_result *res, void *ctx)
{
    struct flow_read *fr = ctx;
    struct flow_level *lv = &fr->fs->lv[fr->k];
    if (res->rc != ZOK && res->rc != ZNONODE) {
        read_end(fr, res->rc);
        return;
    }
    /* gone: released already (not by this child), or cancelled; above the child's own
     * flow, a parent's flow cancelled: the dead parent is counted in none */
    if (res->rc == ZNONODE ||
        layout_parse_flow_data(res->data, (size_t)(res->datalen > 0 ? res->datalen : 0),
                               &lv->fl) != 0) {
        if (res->rc == ZOK)
            log_error("flow: %s holds no flow's counts; job %s is settled without it",
                      lv->flow_path, fr->job->id);
        read_ends_at(fr, fr->k);
        return;
    }
    lv->version = res->stat.version;
    lv->last = lv->fl.pending + lv->added <= 1;
    if (!lv->last) {
        read_ends_at(fr, fr->k + 1);
        return;
    }
    int rc = zkstore_get(fr->zs, lv->parent_node, on_parent_read, fr);
    if (rc != ZOK)
        read_end(fr, rc);
}

static void read_level(struct flow_read *fr, const char *flow, const char *child, int dead)
{
    struct flow_level *lv = &fr->fs->lv[fr->k];
    lv->dead = dead;
    lv->added = fr->k == 0 ? fr->fs->added : 0; /* ACK join=1: the child's own flow grows */
    int rc = level_paths(fr->root, lv, flow, child) != 0
                 ? ZBADARGUMENTS : zkstore_get(fr->zs, lv->flow_path, on_flow_read, fr);
    if (rc != ZOK)
        read_end(fr, rc);
}

int flow_settle_predict(struct flow_cache *cache, const char *root, const struct job *job,
                        int dead, struct flow_settle *fs)
{
    int32_t version;
    struct layout_flow fl;
    if (!flowcache_take(cache, job->jn.flow, dead, fs->added, &version, &fl))
        return 0; /* not known, being read, or the last child: read */
    flow_settle_clear(fs);
    if (!(fs->lv = calloc(FLOW_DEPTH_MAX, sizeof *fs->lv)) ||
        level_paths(root, &fs->lv[0], job->jn.flow, job->jn.uid) != 0) {
        flowcache_answered(cache, job->jn.flow, 0, 0); /* taken, never sent */
        flow_settle_clear(fs);
        return 0;
    }
    fs->lv[0].version = version;
    fs->lv[0].fl = fl;
    fs->lv[0].dead = dead;
    fs->lv[0].added = fs->added;
    fs->nlv = 1;
    fs->read = fs->cached = 1;
    snprintf(fs->uid, sizeof fs->uid, "%s", job->jn.flow);
    return 1;
}

void flow_settle_answered(struct flow_cache *cache, struct flow_settle *fs, int rc)
{
    if (!fs->cached)
        return;
    fs->cached = 0;
    flowcache_answered(cache, fs->uid, rc == ZOK, fs->nlv > 0 && fs->lv && fs->lv[0].last);
}

/* Another settle of the same flow read it meanwhile: this one takes or reads now. */
static void on_waited(void *ctx)
{
    struct flow_read *fr = ctx;
    void (*done)(void *ctx, int rc) = fr->done;
    void *dctx = fr->ctx;
    free(fr);
    done(dctx, ZOK);
}

int flow_settle_read(struct flow_cache *cache, struct zkstore *zs, const char *root,
                     struct job *job, int dead, struct flow_settle *fs,
                     void (*done)(void *ctx, int rc), void *ctx)
{
    struct flow_read *fr = malloc(sizeof *fr);
    flow_settle_clear(fs);
    if (!fr || !(fs->lv = calloc(FLOW_DEPTH_MAX, sizeof *fs->lv))) {
        free(fr);
        return ZSYSTEMERROR;
    }
    *fr = (struct flow_read){cache, zs, root, job, dead, fs, 0, done, ctx};
    snprintf(fs->uid, sizeof fs->uid, "%s", job->jn.flow);
    if (flowcache_wait(cache, job->jn.flow, on_waited, fr))
        return ZOK;
    read_level(fr, job->jn.flow, job->jn.uid, dead);
    return ZOK;
}

/* Where a released parent goes: its queue's jobs, or its dead letters (on=success, a child
 * dead). */
static int parent_path(const char *root, struct flow_level *lv)
{
    char queue[LAYOUT_ID_MAX + 1];
    struct job_name jn;
    if (layout_parse_id(lv->fl.parent, queue, sizeof queue, &jn) != 0)
        return -1;
    if (!lv->fl.on_complete && lv->fl.dead + (unsigned)lv->dead > 0)
        return layout_dead_path(lv->parent_path, sizeof lv->parent_path, root, queue, &jn);
    if (lv->fl.on_complete) { /* its name says how its children ended: "-r<acked>.<dead>" */
        struct layout_flow end = lv->fl;
        count_one(&end, lv->dead, lv->added);
        jn.has_results = 1;
        jn.flow_acked = end.acked;
        jn.flow_dead = end.dead;
    }
    return layout_job_path(lv->parent_path, sizeof lv->parent_path, root, queue, &jn);
}

/* Level LV's operations into OPS: its child's marker, then its counts, or (the last child)
 * the flow's nodes and the parent's creation. */
static int level_ops(const char *root, struct flow_level *lv, struct zk_txn_op *ops)
{
    ops[0] = (struct zk_txn_op){.kind = ZT_DELETE, .path = lv->marker_path, .version = -1};
    if (lv->last) {
        if (parent_path(root, lv) != 0)
            return -1;
        ops[1] = (struct zk_txn_op){.kind = ZT_DELETE, .path = lv->parent_node, .version = -1};
        ops[2] = (struct zk_txn_op){.kind = ZT_DELETE, .path = lv->flow_path,
                                    .version = lv->version};
        ops[3] = (struct zk_txn_op){.kind = ZT_CREATE, .path = lv->parent_path,
                                    .data = lv->payload, .len = lv->len};
        return 4;
    }
    struct layout_flow next = lv->fl;
    count_one(&next, lv->dead, lv->added);
    if (layout_flow_data(lv->data, sizeof lv->data, &next) != 0)
        return -1;
    ops[1] = (struct zk_txn_op){.kind = ZT_SET, .path = lv->flow_path, .data = lv->data,
                                .len = strlen(lv->data), .version = lv->version};
    return 2;
}

int flow_settle_ops(const char *root, struct flow_settle *fs, struct zk_txn_op *ops, int first)
{
    fs->first_op = first;
    fs->nops = 0;
    if (fs->skip || !fs->read)
        return 0;
    for (int k = 0; k < fs->nlv; k++) {
        int n = level_ops(root, &fs->lv[k], ops + fs->nops);
        if (n < 0)
            return fs->nops = 0;
        fs->nops += n;
    }
    return fs->nops;
}

/* The level and the operation within it of the transaction's operation OP. */
static struct flow_level *level_of(struct flow_settle *fs, int op, int *within)
{
    int at = fs->first_op;
    for (int k = 0; k < fs->nlv; k++) {
        int n = fs->lv[k].last ? 4 : 2;
        if (op < at + n) {
            *within = op - at;
            return &fs->lv[k];
        }
        at += n;
    }
    return NULL;
}

enum flow_refusal flow_settle_refused(struct flow_settle *fs, const struct zk_result *res)
{
    int op = zk_failed_op(res), k;
    struct flow_level *lv;
    if (!fs->nops || op < fs->first_op || op >= fs->first_op + fs->nops || !res->op_err ||
        !(lv = level_of(fs, op, &k)))
        return FLOW_NOT_OURS;
    int err = res->op_err[op], child = lv == fs->lv;
    if (k == 3 && err == ZNONODE)
        return FLOW_NO_BUCKET;
    if (child && ((k == 0 && err == ZNONODE) || ((k == 1 || k == 2) && err == ZNONODE))) {
        flow_settle_clear(fs); /* not in the flow any more, or the flow is gone */
        fs->skip = 1;
        return FLOW_WITHOUT;
    }
    /* BadVersion: another daemon counted first; every round one of them succeeds, so it
     * is read again as long as it takes. Anything else is odd: a few times. */
    if (err != ZBADVERSION)
        log_warn("flow: %s refused (%s) while counting a child; reading the flows again",
                 k == 0 ? lv->marker_path : k == 3 ? lv->parent_path : lv->flow_path,
                 zerror(err));
    if (err != ZBADVERSION && ++fs->rereads > REREADS_MAX) {
        flow_settle_clear(fs);
        fs->skip = 1;
        return FLOW_WITHOUT;
    }
    flow_settle_clear(fs); /* counted by someone meanwhile: read again, send again */
    return FLOW_READ_AGAIN;
}

const char *flow_missing_dir(const struct flow_settle *fs, const struct zk_result *res)
{
    int k, op = zk_failed_op(res);
    struct flow_level *lv = level_of((struct flow_settle *)fs, op, &k);
    return lv ? lv->parent_path : "";
}

int flow_settle_released(const struct flow_settle *fs, int *dead)
{
    int n = 0;
    for (int k = 0; fs->read && k < fs->nlv; k++)
        if (fs->lv[k].last) {
            n++;
            *dead = !fs->lv[k].fl.on_complete && fs->lv[k].fl.dead + (unsigned)fs->lv[k].dead;
        }
    return n;
}

/* ---- CANCEL of a waiting parent ---- */

struct flow_cancel {
    struct zkstore *zs;
    int tries;
    int32_t version;
    char path[LAYOUT_PATH_MAX], parent_id[LAYOUT_ID_MAX + 1];
    void (*done)(void *ctx, int rc);
    void *ctx;
};

static void cancel_end(struct flow_cancel *fc, int rc)
{
    void (*done)(void *ctx, int rc) = fc->done;
    void *ctx = fc->ctx;
    free(fc);
    done(ctx, rc);
}

static void cancel_read(struct flow_cancel *fc);

static void on_cancelled(const struct zk_result *res, void *ctx)
{
    struct flow_cancel *fc = ctx;
    /* a child settled or counted meanwhile (BadVersion, a marker gone, NotEmpty): again */
    if ((res->rc == ZBADVERSION || res->rc == ZNONODE || res->rc == ZNOTEMPTY) &&
        ++fc->tries < REREADS_MAX) {
        cancel_read(fc);
        return;
    }
    cancel_end(fc, res->rc == ZNONODE || res->rc == ZNOTEMPTY ? ZBADVERSION : res->rc);
}

static void on_markers(const struct zk_result *res, void *ctx)
{
    struct flow_cancel *fc = ctx;
    if (res->rc != ZOK) {
        cancel_end(fc, res->rc);
        return;
    }
    struct zk_txn_op *ops = calloc((size_t)res->nchildren + 1, sizeof *ops);
    char (*paths)[LAYOUT_PATH_MAX] = calloc((size_t)res->nchildren + 1, sizeof *paths);
    int n = 0, rc = ops && paths ? ZOK : ZSYSTEMERROR;
    for (int i = 0; rc == ZOK && i < res->nchildren; i++) {
        if (snprintf(paths[n], LAYOUT_PATH_MAX, "%s/%s", fc->path, res->children[i]) >=
            LAYOUT_PATH_MAX) {
            rc = ZBADARGUMENTS;
            break;
        }
        ops[n] = (struct zk_txn_op){.kind = ZT_DELETE, .path = paths[n], .version = -1};
        n++;
    }
    if (rc == ZOK) {
        ops[n++] = (struct zk_txn_op){.kind = ZT_DELETE, .path = fc->path, .version = fc->version};
        rc = zkstore_multi(fc->zs, ops, n, on_cancelled, fc);
    }
    free(ops);
    free(paths);
    if (rc != ZOK)
        cancel_end(fc, rc);
}

static void on_cancel_read(const struct zk_result *res, void *ctx)
{
    struct flow_cancel *fc = ctx;
    struct layout_flow fl;
    if (res->rc != ZOK) {
        cancel_end(fc, res->rc);
        return;
    }
    if (layout_parse_flow_data(res->data, (size_t)(res->datalen > 0 ? res->datalen : 0),
                               &fl) != 0 || strcmp(fl.parent, fc->parent_id) != 0) {
        cancel_end(fc, ZNONODE); /* not this parent's flow */
        return;
    }
    fc->version = res->stat.version;
    int rc = zkstore_children(fc->zs, fc->path, 0, on_markers, fc);
    if (rc != ZOK)
        cancel_end(fc, rc);
}

static void cancel_read(struct flow_cancel *fc)
{
    int rc = zkstore_get(fc->zs, fc->path, on_cancel_read, fc);
    if (rc != ZOK)
        cancel_end(fc, rc);
}

int flow_cancel(struct zkstore *zs, const char *root, const char *parent_id, const char *uid,
                void (*done)(void *ctx, int rc), void *ctx)
{
    struct flow_cancel *fc = calloc(1, sizeof *fc);
    if (!fc)
        return ZSYSTEMERROR;
    *fc = (struct flow_cancel){.zs = zs, .done = done, .ctx = ctx};
    snprintf(fc->parent_id, sizeof fc->parent_id, "%s", parent_id);
    if (layout_flow_path(fc->path, sizeof fc->path, root, uid, NULL) != 0) {
        free(fc);
        return ZBADARGUMENTS;
    }
    cancel_read(fc);
    return ZOK;
}

int flow_settle_parent_job(struct flow_settle *fs, const char **path, char *queue,
                           size_t qlen, unsigned char **payload, size_t *len)
{
    struct job_name jn;
    int dead = 0;
    if (!flow_settle_released(fs, &dead) || dead)
        return 0;
    struct flow_level *lv = &fs->lv[fs->nlv - 1]; /* the top one released: the job */
    if (!lv->last || layout_parse_id(lv->fl.parent, queue, qlen, &jn) != 0)
        return 0;
    *path = lv->parent_path;
    *payload = lv->payload;
    *len = lv->len;
    lv->payload = NULL;
    return 1;
}
