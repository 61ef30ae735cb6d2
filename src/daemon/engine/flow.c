#include "flow.h"

#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "job.h"
#include "log.h"

/* The settle ends the child: its ack, or its move to the dead letters. */
int flow_settle_needs_read(const struct job *job, const struct flow_settle *fs)
{
    return job->jn.flow[0] && !fs->read && !fs->skip;
}

void flow_settle_clear(struct flow_settle *fs)
{
    free(fs->payload);
    fs->payload = NULL;
    fs->len = 0;
    fs->read = 0;
}

struct flow_read {
    struct zkstore *zs;
    const struct job *job;
    struct flow_settle *fs;
    void (*done)(void *ctx, int rc);
    void *ctx;
};

static void read_end(struct flow_read *fr, int rc)
{
    void (*done)(void *ctx, int rc) = fr->done;
    void *ctx = fr->ctx;
    free(fr);
    done(ctx, rc);
}

static void on_parent_read(const struct zk_result *res, void *ctx)
{
    struct flow_read *fr = ctx;
    struct flow_settle *fs = fr->fs;
    if (res->rc == ZOK) {
        fs->len = (size_t)(res->datalen > 0 ? res->datalen : 0);
        if (fs->len && !(fs->payload = malloc(fs->len))) {
            read_end(fr, ZSYSTEMERROR);
            return;
        }
        if (fs->len)
            memcpy(fs->payload, res->data, fs->len);
        fs->read = 1;
    } else if (res->rc == ZNONODE && ++fs->rereads <= 3) { /* released meanwhile: again */
        log_debug("flow %s: its parent's node is gone; reading the flow again",
                  fr->job->jn.flow);
    } else if (res->rc == ZNONODE) {
        log_error("flow %s: %s holds counts but no parent; job %s is settled without it",
                  fr->job->jn.flow, fs->flow_path, fr->job->id);
        fs->skip = 1;
    } else {
        read_end(fr, res->rc);
        return;
    }
    read_end(fr, ZOK); /* not read nor skipped: the settle reads the flow again */
}

static int paths(const char *root, const struct job *job, struct flow_settle *fs)
{
    return layout_flow_path(fs->flow_path, sizeof fs->flow_path, root, job->jn.flow, NULL) ||
           layout_flow_path(fs->parent_node, sizeof fs->parent_node, root, job->jn.flow,
                            LAYOUT_FLOW_PARENT) ||
           layout_flow_marker_path(fs->marker_path, sizeof fs->marker_path, root,
                                   job->jn.flow, job->jn.uid);
}

static void on_flow_read(const struct zk_result *res, void *ctx)
{
    struct flow_read *fr = ctx;
    struct flow_settle *fs = fr->fs;
    if (res->rc == ZNONODE) { /* released already (not by this child), or cancelled */
        fs->skip = 1;
        read_end(fr, ZOK);
        return;
    }
    if (res->rc != ZOK) {
        read_end(fr, res->rc);
        return;
    }
    if (layout_parse_flow_data(res->data, (size_t)(res->datalen > 0 ? res->datalen : 0),
                               &fs->fl) != 0) {
        log_error("flow %s: its node %s holds no flow's counts; job %s is settled without it",
                  fr->job->jn.flow, fs->flow_path, fr->job->id);
        fs->skip = 1;
        read_end(fr, ZOK);
        return;
    }
    fs->version = res->stat.version;
    if (fs->fl.pending > 1) {
        fs->read = 1;
        read_end(fr, ZOK);
        return;
    }
    int rc = zkstore_get(fr->zs, fs->parent_node, on_parent_read, fr);
    if (rc != ZOK)
        read_end(fr, rc);
}

int flow_settle_read(struct zkstore *zs, const char *root, struct job *job,
                     struct flow_settle *fs, void (*done)(void *ctx, int rc), void *ctx)
{
    struct flow_read *fr = malloc(sizeof *fr);
    flow_settle_clear(fs);
    if (!fr)
        return ZSYSTEMERROR;
    if (paths(root, job, fs) != 0) {
        free(fr);
        return ZBADARGUMENTS;
    }
    *fr = (struct flow_read){zs, job, fs, done, ctx};
    int rc = zkstore_get(zs, fs->flow_path, on_flow_read, fr);
    if (rc != ZOK)
        free(fr);
    return rc;
}

/* Where the parent goes: its queue's jobs, or its dead letters (on=success, a child dead). */
static int parent_path(const char *root, struct flow_settle *fs, int dead)
{
    char queue[LAYOUT_ID_MAX + 1];
    struct job_name jn;
    if (layout_parse_id(fs->fl.parent, queue, sizeof queue, &jn) != 0)
        return -1;
    if (!fs->fl.on_complete && fs->fl.dead + (dead != 0) > 0)
        return layout_dead_path(fs->parent_path, sizeof fs->parent_path, root, queue, &jn);
    return layout_job_path(fs->parent_path, sizeof fs->parent_path, root, queue, &jn);
}

int flow_settle_ops(const char *root, const struct job *job, int dead,
                    struct flow_settle *fs, struct zk_txn_op *ops, int first)
{
    fs->first_op = first;
    fs->nops = 0;
    if (!job->jn.flow[0] || fs->skip || !fs->read)
        return 0;
    ops[0] = (struct zk_txn_op){.kind = ZT_DELETE, .path = fs->marker_path, .version = -1};
    if (fs->fl.pending <= 1) { /* the last: the parent becomes a job */
        if (parent_path(root, fs, dead) != 0)
            return 0;
        ops[1] = (struct zk_txn_op){.kind = ZT_DELETE, .path = fs->parent_node, .version = -1};
        ops[2] = (struct zk_txn_op){.kind = ZT_DELETE, .path = fs->flow_path,
                                    .version = fs->version};
        ops[3] = (struct zk_txn_op){.kind = ZT_CREATE, .path = fs->parent_path,
                                    .data = fs->payload, .len = fs->len};
        return fs->nops = 4;
    }
    struct layout_flow next = fs->fl;
    next.pending--;
    *(dead ? &next.dead : &next.acked) += 1;
    if (layout_flow_data(fs->data, sizeof fs->data, &next) != 0)
        return 0;
    ops[1] = (struct zk_txn_op){.kind = ZT_SET, .path = fs->flow_path, .data = fs->data,
                                .len = strlen(fs->data), .version = fs->version};
    return fs->nops = 2;
}

enum flow_refusal flow_settle_refused(struct flow_settle *fs, const struct zk_result *res)
{
    int op = zk_failed_op(res);
    if (!fs->nops || op < fs->first_op || op >= fs->first_op + fs->nops || !res->op_err)
        return FLOW_NOT_OURS;
    int k = op - fs->first_op, err = res->op_err[op], last = fs->nops == 4;
    if (k == 3 && err == ZNONODE)
        return FLOW_NO_BUCKET;
    if (err == ZBADVERSION && (k == 1 || k == 2)) { /* counted by someone meanwhile */
        flow_settle_clear(fs);
        return FLOW_READ_AGAIN;
    }
    if (!(k == 0 && err == ZNONODE)) /* the child's marker alone is the expected refusal */
        log_error("flow: %s %s refused (%s) while counting a child; settling it without",
                  last && k == 3 ? "creating the parent" : "its node",
                  k == 0 ? fs->marker_path : k == 3 ? fs->parent_path : fs->flow_path,
                  zerror(err));
    flow_settle_clear(fs);
    fs->skip = 1;
    return FLOW_WITHOUT;
}

int flow_settle_released(const struct flow_settle *fs) { return fs->nops == 4; }
