#include "unpack.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buckets.h"
#include "config.h"
#include "daemon.h"
#include "failpoint.h"
#include "log.h"
#include "pack.h"
#include "zkstore.h"

#define ROUNDS_MAX 8 /* sends of one transaction, each after fixing one thing */

struct unpack {
    struct deferd *d;
    struct buckets *made;
    char queue[QUEUE_NAME_MAX + 1];
    char path[LAYOUT_PATH_MAX];
    struct pack_name pn;
    unpack_done_fn done;
    void *ctx;
    char *data;                 /* the pack as read; the jobs point into it */
    int version, rounds, tries;
    struct pack_job *jobs;
    uint32_t n;
    unsigned char *skip;        /* per job: a znode of its name exists already */
    unsigned char *keyless;     /* per job: no key, or its key node is missing */
    char (*paths)[LAYOUT_PATH_MAX];
    char (*key_paths)[LAYOUT_PATH_MAX];
    char (*key_data)[LAYOUT_ID_MAX + 1]; /* the job's new "[shard/]name" */
    int *op_job;                /* per operation of the last send: its job */
};

static void free_jobs(struct unpack *up)
{
    free(up->jobs);
    free(up->skip);
    free(up->keyless);
    free(up->paths);
    free(up->key_paths);
    free(up->key_data);
    free(up->op_job);
}

static void finish(struct unpack *up, enum unpack_outcome outcome, const char *why)
{
    unsigned created = 0;
    for (uint32_t i = 0; outcome == UNPACK_DONE && i < up->n; i++)
        created += !up->skip[i];
    up->done(up->ctx, up->path, outcome, created, why);
    free(up->data);
    free_jobs(up);
    free(up);
}

static void finish_rc(struct unpack *up, int rc)
{
    char why[160];
    snprintf(why, sizeof why, "%s", zk_reason(rc));
    finish(up, rc == ZNONODE ? UNPACK_GONE : UNPACK_FAILED, why);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* How many of the N sorted LEAVES equal LEAF. */
static size_t count_of(const uint64_t *leaves, size_t n, uint64_t leaf)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first at or above LEAF */
        size_t mid = lo + (hi - lo) / 2;
        if (leaves[mid] < leaf)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < n && leaves[end] == leaf)
        end++;
    return end - lo;
}

/* A keyed job's key node names the job where it will be, in the same transaction. */
static int place_key(struct unpack *up, uint32_t i, const struct job_name *jn)
{
    up->keyless[i] = !jn->key[0];
    if (!jn->key[0])
        return 0;
    return layout_key_path(up->key_paths[i], sizeof up->key_paths[i], up->d->cfg->zk_root,
                           up->queue, jn->key) != 0 ||
                   layout_key_data(up->key_data[i], sizeof up->key_data[i], jn) != 0
               ? -1 : 0;
}

/* Each job's znode path: its bucket, or the pack's shard in it when the pack holds many
 * jobs of that bucket ("s" and the pack uid's first 22 characters). */
static int place_jobs(struct unpack *up)
{
    uint64_t *leaves = malloc((up->n ? up->n : 1) * sizeof *leaves);
    if (!leaves)
        return -1;
    for (uint32_t i = 0; i < up->n; i++)
        leaves[i] = layout_bucket_of(up->jobs[i].name.due_ms, LAYOUT_DEPTH);
    qsort(leaves, up->n, sizeof *leaves, cmp_u64);
    for (uint32_t i = 0; i < up->n; i++) {
        struct job_name jn = up->jobs[i].name;
        uint64_t leaf = layout_bucket_of(jn.due_ms, LAYOUT_DEPTH);
        if (count_of(leaves, up->n, leaf) >= UNPACK_SHARD_AT)
            layout_pack_shard(jn.shard, sizeof jn.shard, up->pn.uid);
        if (layout_job_path(up->paths[i], sizeof up->paths[i], up->d->cfg->zk_root, up->queue,
                            &jn) != 0 || place_key(up, i, &jn) != 0) {
            free(leaves);
            return -1;
        }
    }
    free(leaves);
    return 0;
}

/* The jobs' directories must exist before the transaction: created now, ahead of it on
 * the same session (NodeExists is fine), once per directory per run. */
static int make_dirs(struct unpack *up)
{
    char dir[LAYOUT_PATH_MAX];
    for (uint32_t i = 0; i < up->n; i++) {
        snprintf(dir, sizeof dir, "%s", up->paths[i]);
        *strrchr(dir, '/') = '\0';
        if (buckets_known(up->made, dir))
            continue;
        int rc = zkstore_create_parents(up->d->zs, up->paths[i], NULL, NULL);
        if (rc != ZOK)
            return rc;
        buckets_add(up->made, dir);
    }
    return ZOK;
}

static void on_multi(const struct zk_result *res, void *ctx);

static int send_multi(struct unpack *up)
{
    struct zk_txn_op *ops = calloc(2 * up->n + 1, sizeof *ops);
    int nops = 0, rc;
    if (!ops)
        return ZK_ENOMEM;
    up->op_job[nops] = -1;
    ops[nops++] = (struct zk_txn_op){.kind = ZT_DELETE, .path = up->path,
                                     .version = up->version};
    for (uint32_t i = 0; i < up->n; i++) {
        if (up->skip[i])
            continue;
        up->op_job[nops] = (int)i;
        ops[nops++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = up->paths[i],
                                         .data = up->jobs[i].payload,
                                         .len = up->jobs[i].payload_len};
        if (up->keyless[i])
            continue;
        up->op_job[nops] = (int)i;
        ops[nops++] = (struct zk_txn_op){.kind = ZT_SET, .path = up->key_paths[i],
                                         .data = up->key_data[i],
                                         .len = strlen(up->key_data[i]), .version = -1};
    }
    rc = zkstore_multi(up->d->zs, ops, nops, on_multi, up);
    free(ops);
    return rc;
}

/* Operation BAD of job I failed with RC: what can be fixed is, and the multi goes again. */
static int repair(struct unpack *up, int bad, uint32_t i, int rc)
{
    int key_op = bad > 0 && up->op_job[bad - 1] == (int)i;
    if (key_op && rc == ZNONODE) { /* deleted by hand: the job goes on without it */
        log_warn("unpacking %s: key node %s is missing; job %s is created without it",
                 up->path, up->key_paths[i], up->paths[i]);
        up->keyless[i] = 1;
        return send_multi(up);
    }
    if (key_op)
        return rc;
    if (rc == ZNODEEXISTS) { /* the job is a znode already: not twice */
        log_warn("unpacking %s: %s exists already; that job is not created again", up->path,
                 up->paths[i]);
        up->skip[i] = 1;
        return send_multi(up);
    }
    if (rc == ZNONODE) { /* its directory went meanwhile */
        rc = zkstore_parents_missing(up->d->zs, up->paths[i], &up->tries, NULL, NULL);
        return rc == ZK_PARENTS_RESEND || rc == ZK_PARENTS_ASKED ? send_multi(up) : rc;
    }
    return rc;
}

static void on_read(const struct zk_result *res, void *ctx);

static void on_multi(const struct zk_result *res, void *ctx)
{
    struct unpack *up = ctx;
    int bad = res->rc == ZOK ? -1 : zk_failed_op(res), rc = res->rc;
    if (rc == ZOK) {
        finish(up, UNPACK_DONE, NULL);
        return;
    }
    if (bad < 0 || ++up->rounds > ROUNDS_MAX) {
        finish_rc(up, rc);
        return;
    }
    rc = res->op_err[bad];
    if (bad == 0) /* rewritten (a cancel) or unpacked by another: read it again */
        rc = rc == ZBADVERSION ? zkstore_get(up->d->zs, up->path, on_read, up) : rc;
    else
        rc = repair(up, bad, (uint32_t)up->op_job[bad], rc);
    if (rc != ZOK)
        finish_rc(up, rc);
}

/* Checks the pack whole; the reason when it is not one of this name. */
static const char *check(struct unpack *up, struct pack_reader *rd, const struct zk_result *res)
{
    static char why[PACK_ERR_MAX + 32];
    if (res->datalen <= 0)
        return "no data: not a pack";
    if (pack_open(rd, res->data, (size_t)res->datalen) != PACK_OK) {
        snprintf(why, sizeof why, "unreadable: %s", rd->err);
        return why;
    }
    if (rd->window_start != up->pn.start_ms || rd->window_width != up->pn.width_ms)
        return "its window is not the one its name says";
    return NULL;
}

static int take_jobs(struct unpack *up, struct pack_reader *rd)
{
    free_jobs(up);
    up->n = rd->count;
    size_t n = up->n ? up->n : 1;
    up->jobs = calloc(n, sizeof *up->jobs);
    up->skip = calloc(n, 1);
    up->keyless = calloc(n, 1);
    up->paths = calloc(n, sizeof *up->paths);
    up->key_paths = calloc(n, sizeof *up->key_paths);
    up->key_data = calloc(n, sizeof *up->key_data);
    up->op_job = calloc(2 * n + 1, sizeof *up->op_job);
    if (!up->jobs || !up->skip || !up->keyless || !up->paths || !up->key_paths ||
        !up->key_data || !up->op_job)
        return ZK_ENOMEM;
    for (uint32_t i = 0; i < up->n && pack_next(rd, &up->jobs[i]) == 1; i++)
        ;
    return place_jobs(up) == 0 ? make_dirs(up) : ZK_ETOOLONG;
}

static void on_read(const struct zk_result *res, void *ctx)
{
    struct unpack *up = ctx;
    struct pack_reader rd;
    const char *why;
    if (res->rc != ZOK) {
        finish_rc(up, res->rc);
        return;
    }
    if ((why = check(up, &rd, res))) {
        finish(up, UNPACK_UNREADABLE, why);
        return;
    }
    free(up->data); /* the jobs point into the data: a copy kept until the end */
    if (!(up->data = malloc((size_t)res->datalen))) {
        finish_rc(up, ZK_ENOMEM);
        return;
    }
    memcpy(up->data, res->data, (size_t)res->datalen);
    pack_open(&rd, up->data, (size_t)res->datalen); /* checked above: the same bytes */
    up->version = res->stat.version;
    int rc = take_jobs(up, &rd);
    if (rc == ZOK && failpoint_hit("unpack-before-multi"))
        raise(SIGKILL); /* tests only: a crash between the reads and the multi */
    if (rc == ZOK)
        rc = send_multi(up);
    if (rc != ZOK)
        finish_rc(up, rc);
}

int unpack_start(struct deferd *d, struct buckets *made, const char *queue, const char *path,
                 const struct pack_name *pn, unpack_done_fn done, void *ctx)
{
    struct unpack *up = calloc(1, sizeof *up);
    if (!up)
        return ZK_ENOMEM;
    up->d = d;
    up->made = made;
    snprintf(up->queue, sizeof up->queue, "%s", queue);
    snprintf(up->path, sizeof up->path, "%s", path);
    up->pn = *pn;
    up->done = done;
    up->ctx = ctx;
    int rc = zkstore_get(d->zs, path, on_read, up);
    if (rc != ZOK)
        free(up);
    return rc;
}
