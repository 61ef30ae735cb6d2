#include "putset.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buckets.h"
#include "config.h"
#include "daemon.h"
#include "put_env.h"
#include "queue.h"
#include "uid.h"
#include "log.h"
#include "metrics.h"
#include "putpacks.h"
#include "tokens.h"
#include "txnbatch.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"
#include "zalloc.h"

#define SHARD_AFTER 2048
#define SHARD_SIZE 2048
#define PREFIX_MAX 8
#define JOB_OVERHEAD (2 * (LAYOUT_PATH_MAX + TXN_OP_OVERHEAD))

enum { OP_PREFIX, OP_TOKEN, OP_KEY, OP_JOB, OP_PACK, OP_MARKER, OP_FLOW };

#define OPS_INLINE 8

struct putset {
    const struct put_env *env;
    struct putjob *jobs;
    size_t n, max;
    struct txnbatch *b;
    struct zk_txn_op prefix[PREFIX_MAX];
    int nprefix;
    int *op_job;                /* per operation of the last send: its job or pack, or -1 */
    unsigned char *op_what;     /* per operation: OP_KEY, OP_JOB, OP_PACK */
    /* op_job and op_what for a send of up to OPS_INLINE operations (a single put's), so
     * that one put allocates once: the set, its jobs after it */
    int op_job_inline[OPS_INLINE];
    unsigned char op_what_inline[OPS_INLINE];
    struct putpacks packs;
    int flow_on_complete;       /* FLOW on=complete */
    char join[LAYOUT_UID_MAX + 1]; /* ACK join=1: the flow the set's jobs join, or "" */
    int rounds, lookups, lookup_rc;
    struct putjob *checking;    /* its directories' creates are being asked why */
    int counted;                /* putset_created() done */
    int token_refused;          /* a taken token could not be read: token_refusal says */
    struct token_refusal token_refusal;
    struct token_reads token_reads; /* a taken token's: every token of the set read */
    putset_done_fn done;
    void *ctx;
};

/* Enough for the puts of a few loop turns: a multi's answer frees its sets together. Under
 * AddressSanitizer or valgrind nothing is kept: a set used after its free must stay a
 * report, not a quiet reuse. */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_MAX 0
#else
#define POOL_MAX 256
#endif
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

struct putset_pool {
    int n, max;
    struct putset *spare[POOL_MAX + 1]; /* + 1: never an array of 0 */
};

struct putset_pool *putset_pool_new(void)
{
    struct putset_pool *pool = calloc(1, sizeof *pool);
    if (pool)
        pool->max = RUNNING_ON_VALGRIND ? 0 : POOL_MAX;
    return pool;
}

void putset_pool_free(struct putset_pool *pool)
{
    if (!pool)
        return;
    while (pool->n)
        free(pool->spare[--pool->n]);
    free(pool);
}

struct putset *putset_new(const struct put_env *env, size_t max_jobs)
{
    size_t n = max_jobs ? max_jobs : 1;
    if (n > (SIZE_MAX - sizeof(struct putset)) / sizeof(struct putjob))
        return NULL;
    /* not calloc: each job is cleared as it is added (putjob_clear), its 750 bytes of
     * strings only emptied; zeroing them whole was a tenth of a put's instructions */
    struct putset_pool *pool = env ? env->pool : NULL;
    struct putset *ps = n == 1 && pool && pool->n ? pool->spare[--pool->n]
                                                  : malloc(sizeof *ps + n * sizeof(struct putjob));
    if (!ps)
        return NULL;
    memset(ps, 0, sizeof *ps);
    ps->jobs = (struct putjob *)(ps + 1); /* struct putset's size keeps them aligned */
    ps->op_job = ps->op_job_inline;
    ps->op_what = ps->op_what_inline;
    ps->env = env;
    ps->max = max_jobs;
    return ps;
}

static void free_prefix(struct putset *ps)
{
    for (int i = 0; i < ps->nprefix; i++) {
        free((char *)ps->prefix[i].path);
        free((void *)ps->prefix[i].data);
    }
    ps->nprefix = 0;
}

void putset_free(struct putset *ps)
{
    if (!ps)
        return;
    for (size_t i = 0; i < ps->n; i++) {
        free(ps->jobs[i].payload);
        free(ps->jobs[i].more);
    }
    free_prefix(ps);
    if (ps->op_job != ps->op_job_inline)
        free(ps->op_job);
    if (ps->op_what != ps->op_what_inline)
        free(ps->op_what);
    putpacks_free(&ps->packs);
    struct putset_pool *pool = ps->env ? ps->env->pool : NULL;
    if ((ps->max ? ps->max : 1) == 1 && pool && pool->n < pool->max)
        pool->spare[pool->n++] = ps;
    else
        free(ps);
}

size_t putset_count(const struct putset *ps) { return ps->n; }

void putset_flow_join(struct putset *ps, const char *flow_uid)
{
    snprintf(ps->join, sizeof ps->join, "%s", flow_uid);
}

int putset_flow_child(struct putset *ps, size_t child, size_t parent, int on_complete)
{
    if (child >= ps->n || parent >= child)
        return -1;
    ps->jobs[child].flow_parent = (int)parent;
    ps->jobs[parent].flow_children++;
    ps->flow_on_complete = on_complete;
    return 0;
}

/* A waiting parent is named anew (its uid was taken): so are its children, whose names
 * carry its uid, and theirs. */
static void unname_children(struct putset *ps, size_t parent)
{
    for (size_t i = parent + 1; i < ps->n; i++)
        if (ps->jobs[i].flow_parent == (int)parent && ps->jobs[i].named) {
            ps->jobs[i].named = 0;
            unname_children(ps, i);
        }
}
const struct token_refusal *putset_token_refusal(const struct putset *ps)
{
    return ps->token_refused ? &ps->token_refusal : NULL;
}

int putset_all_keyed(const struct putset *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        if (!ps->jobs[i].jn.key[0])
            return 0;
    return ps->n > 0;
}
const struct putjob *putset_job(const struct putset *ps, size_t i) { return &ps->jobs[i]; }

size_t putset_bytes(const struct putset *ps)
{
    size_t bytes = 0;
    for (size_t i = 0; i < ps->n; i++)
        bytes += ps->jobs[i].len + JOB_OVERHEAD;
    return bytes;
}

/* ---- taking jobs in ---- */

static int refuse(enum proto_errcode *code, char *text, size_t tlen, enum proto_errcode c,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int refuse(enum proto_errcode *code, char *text, size_t tlen, enum proto_errcode c,
                  const char *fmt, ...)
{
    va_list ap;
    *code = c;
    va_start(ap, fmt);
    vsnprintf(text, tlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* An earlier job of the set with the same queue and key: this one is its duplicate. */
static int same_key_before(const struct putset *ps, const struct putjob *pj)
{
    for (size_t i = 0; pj->jn.key[0] && i < ps->n; i++)
        if (ps->jobs[i].q == pj->q && strcmp(ps->jobs[i].jn.key, pj->jn.key) == 0)
            return (int)i;
    return -1;
}

/* PJ's strings for a key, a token or a flow, made at its first need; NULL: out of memory. */
static struct putjob_more *more_of(struct putjob *pj)
{
    if (!pj->more)
        pj->more = calloc(1, sizeof *pj->more);
    return pj->more;
}

/* A job refused before it was counted in the set: putset_free will not see its strings. */
static int drop_more(struct putjob *pj, int rc)
{
    free(pj->more);
    pj->more = NULL;
    return rc;
}

int putset_add(struct putset *ps, struct proto_put *pp, enum proto_errcode *code, char *text,
               size_t tlen)
{
    struct dqueue *q = ps->env->queue(ps->env->engine, pp->queue);
    if (ps->n == ps->max)
        return refuse(code, text, tlen, PE_INTERNAL, "too many jobs");
    if (!q)
        return refuse(code, text, tlen, PE_UNKNOWN_QUEUE, "no queue '%s' is configured",
                      pp->queue);
    if (q->cfg->format != QF_NATIVE)
        return refuse(code, text, tlen, PE_BAD_REQUEST, "queue '%s' is in a Curator format: "
                      "keys, groups, batches and follow-ups need deferd's own format", pp->queue);
    if (queue_pending_full(q))
        return refuse(code, text, tlen, PE_QUEUE_FULL, "queue '%s' holds its max_pending jobs",
                      pp->queue);
    uint64_t due = pp->has_at ? pp->at_ms : (uint64_t)cluster_latest_ms() + pp->delay_ms;
    if (due > LAYOUT_DUE_MAX)
        return refuse(code, text, tlen, PE_BAD_REQUEST, "due time %llu is too far",
                      (unsigned long long)due);
    struct putjob *pj = &ps->jobs[ps->n];
    putjob_clear(pj);
    pj->q = q;
    pj->payload = pp->payload;
    pj->len = pp->len;
    pj->key_version = -1;
    pj->pack = -1;
    pj->jn.due_ms = due;
    pj->jn.priority = pp->has_prio ? pp->prio : q->cfg->priority;
    pj->jn.ttr_ms = pp->has_ttr ? (uint32_t)pp->ttr_ms : 0; /* 0: queue default */
    memcpy(pj->jn.key, pp->key, sizeof pj->jn.key);
    memcpy(pj->jn.group, pp->group, sizeof pj->jn.group);
    pj->flow_parent = -1;
    pj->dup_of = same_key_before(ps, pj);
    if ((pj->jn.key[0] || pp->idem[0]) && !(pj->more = calloc(1, sizeof *pj->more)))
        return refuse(code, text, tlen, PE_INTERNAL, "out of memory");
    if (pj->jn.key[0] &&
        layout_key_path(pj->more->key_path, sizeof pj->more->key_path, ps->env->d->cfg->zk_root,
                        q->cfg->name, pj->jn.key) != 0)
        return drop_more(pj, refuse(code, text, tlen, PE_BAD_REQUEST, "bad key '%s'", pp->key));
    if (pp->idem[0] &&
        tokens_path(pj->more->token_path, sizeof pj->more->token_path, ps->env->d->cfg->zk_root,
                    q->cfg->name, pp->idem, code, text, tlen) != 0)
        return drop_more(pj, -1);

    pp->payload = NULL;
    ps->n++;
    return 0;
}

/* ---- naming: uid, bucket, shard ---- */

static void on_dir_made(const struct zk_result *res, void *ctx)
{
    (void)res; /* NodeExists: someone else made it; other errors: the job's create will say */
    (void)ctx;
}

/* Makes sure the job's bucket exists before the job's create reaches ZooKeeper (both go
 * out on one session, in order): the bucket levels below the deepest one known to exist
 * are created in the same batch, ahead of the job; with none known (a new 2.8-hour window),
 * every missing ancestor directly. NodeExists costs only a resend of the batch. */
static int prepare_bucket(const struct put_env *env, struct txnbatch *b, const char *job_path)
{
    char path[LAYOUT_PATH_MAX], missing[LAYOUT_DEPTH][LAYOUT_PATH_MAX], *slash;
    int n = 0, level, rc = ZOK;
    size_t plen = strlen(job_path);
    if (plen >= sizeof path)
        return ZK_ETOOLONG;
    memcpy(path, job_path, plen + 1);
    for (level = LAYOUT_DEPTH; level >= 1; level--) {
        if (!(slash = strrchr(path, '/')))
            return ZK_ETOOLONG;
        *slash = '\0';
        if (buckets_known(level == LAYOUT_DEPTH ? env->buckets : env->parents, path))
            break;
        memcpy(missing[n++], path, sizeof path);
    }
    if (n == 0)
        return ZOK;
    if (level == 0)
        rc = zkstore_create_parents(env->d->zs, job_path, NULL, NULL);
    for (int i = n - 1; level > 0 && i >= 0 && rc == ZOK; i--) {
        const struct zk_txn_op op = {.kind = ZT_CREATE, .path = missing[i]};
        rc = txnbatch_add(b, &op, 1, on_dir_made, NULL);
    }
    for (int i = 0; rc == ZOK && i < n; i++)
        buckets_add(i == 0 ? env->buckets : env->parents, missing[i]);
    return rc;
}

/* Past SHARD_AFTER of our puts into one 100 ms bucket, the next ones go into shards of
 * SHARD_SIZE jobs, named for this daemon run, so that no listing of the bucket or of a
 * shard grows past about 100 KiB per writer. */
static int choose_shard(const struct put_env *env, struct txnbatch *b, struct putjob *pj)
{
    char dir[LAYOUT_PATH_MAX];
    if (layout_parent_path(dir, sizeof dir, pj->path) != 0)
        return ZK_ETOOLONG;
    unsigned n = buckets_count_put(env->buckets, dir);
    if (n < SHARD_AFTER)
        return ZOK;
    snprintf(pj->jn.shard, sizeof pj->jn.shard, "s%08llx-%u", (unsigned long long)env->uids->prefix,
             (n - SHARD_AFTER) / SHARD_SIZE);
    if (layout_job_path_id(pj->path, sizeof pj->path, pj->id, sizeof pj->id,
                           env->d->cfg->zk_root, pj->q->cfg->name, &pj->jn) != 0 ||
        layout_parent_path(dir, sizeof dir, pj->path) != 0)
        return ZK_ETOOLONG;
    if (buckets_known(env->buckets, dir))
        return ZOK;
    buckets_add(env->buckets, dir);
    const struct zk_txn_op op = {.kind = ZT_CREATE, .path = dir};
    return txnbatch_add(b, &op, 1, on_dir_made, NULL);
}

/* The key's hash directory must exist before the multi that creates the key node: a plain
 * create sent now reaches ZooKeeper first (one session, in order), and its NodeExists
 * fails nothing else, unlike a create inside the multi. Once per directory per run. */
static int prepare_key_dir(const struct put_env *env, const char *key_path)
{
    char dir[LAYOUT_PATH_MAX], keys[LAYOUT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", key_path);
    *strrchr(dir, '/') = '\0';
    if (buckets_known(env->keydirs, dir))
        return ZOK;
    snprintf(keys, sizeof keys, "%s", dir);
    *strrchr(keys, '/') = '\0';
    int rc = buckets_known(env->keydirs, keys)
                 ? zkstore_create(env->d->zs, dir, NULL, 0, 0, NULL, NULL)
                 : zkstore_create_parents(env->d->zs, key_path, NULL, NULL);
    if (rc == ZOK) {
        buckets_add(env->keydirs, keys);
        buckets_add(env->keydirs, dir);
    }
    return rc;
}

/* Its znode in a bucket (or shard), or a place in one of the set's packs. */
static int place_job(struct putset *ps, struct putjob *pj)
{
    int rc = putpacks_join(&ps->packs, ps->env, pj);
    if (rc != 1)
        return rc;
    if (layout_job_path_id(pj->path, sizeof pj->path, pj->id, sizeof pj->id,
                           ps->env->d->cfg->zk_root, pj->q->cfg->name, &pj->jn))
        return ZK_ETOOLONG;
    rc = prepare_bucket(ps->env, ps->b, pj->path);
    return rc == ZOK ? choose_shard(ps->env, ps->b, pj) : rc;
}

/* A waiting parent's nodes: its flow's node (its path) and its payload's; its counts. */
static int place_flow(struct putset *ps, struct putjob *pj)
{
    const char *root = ps->env->d->cfg->zk_root;
    struct layout_flow fl = {.on_complete = ps->flow_on_complete, .pending = pj->flow_children};
    struct putjob_more *m = more_of(pj);
    if (!m)
        return ZK_ENOMEM;
    if (layout_flow_path(pj->path, sizeof pj->path, root, pj->jn.uid, NULL) != 0 ||
        layout_flow_path(m->flow_node, sizeof m->flow_node, root, pj->jn.uid,
                         LAYOUT_FLOW_PARENT) != 0 ||
        layout_job_id(fl.parent, sizeof fl.parent, pj->q->cfg->name, &pj->jn) != 0 ||
        layout_flow_data(m->flow_data, sizeof m->flow_data, &fl) != 0)
        return ZK_ETOOLONG;
    return ZOK;
}

static int name_job(struct putset *ps, struct putjob *pj)
{
    uid_next(ps->env->uids, pj->jn.uid);
    /* each naming: a pack that could not be written left it in full form (putpacks_join) */
    pj->jn.short_buckets = ps->env->d->layout_version >= LAYOUT_VERSION_SHORT;
    pj->jn.shard[0] = pj->id[0] = '\0'; /* its id: made with its path (place_job), or below */
    if (pj->more)
        pj->more->marker_path[0] = '\0';
    if (pj->flow_parent >= 0 || ps->join[0]) { /* a flow's child: its name carries its
                                                  * parent's uid */
        memcpy(pj->jn.flow, pj->flow_parent >= 0 ? ps->jobs[pj->flow_parent].jn.uid : ps->join,
               sizeof pj->jn.flow);
        if (!more_of(pj))
            return ZK_ENOMEM;
        if (layout_flow_marker_path(pj->more->marker_path, sizeof pj->more->marker_path,
                                    ps->env->d->cfg->zk_root, pj->jn.flow, pj->jn.uid) != 0)
            return ZK_ETOOLONG;
    }
    int rc = pj->flow_children ? place_flow(ps, pj) : place_job(ps, pj);
    if (rc == ZOK && pj->jn.key[0])
        rc = prepare_key_dir(ps->env, pj->more->key_path);
    if (rc == ZOK && putjob_token_path(pj)[0])
        rc = tokens_prepare_dir(ps->env->d->zs, ps->env->keydirs, pj->more->token_path);
    if (rc == ZOK && ((pj->jn.key[0] && /* the key node's data: only a keyed job has one */
                       layout_key_data(pj->more->key_data, sizeof pj->more->key_data,
                                       &pj->jn) != 0) ||
                      (!pj->id[0] &&
                       layout_job_id(pj->id, sizeof pj->id, pj->q->cfg->name, &pj->jn) != 0)))
        rc = ZK_ETOOLONG;
    pj->named = rc == ZOK;
    return rc;
}

/* ---- sending ---- */

static void on_sent(const struct zk_result *res, void *ctx);

/* The job's operations: its token's create, its key node's, then its create (none for a
 * packed job: its pack's create comes after every job's). The token goes first: a retry
 * of a stored put fails on it, whatever became of the job since. Their count, or an error. */
static int job_ops(struct putjob *pj, struct zk_txn_op *ops, unsigned char *what)
{
    int n = 0;
    struct putjob_more *m = pj->more; /* set for a token, a key or a flow */
    if (putjob_token_path(pj)[0]) {
        int rc = tokens_create_op(&ops[n], m->token_path, &pj->jn, NULL, m->token_data,
                                  sizeof m->token_data);
        if (rc != ZOK)
            return rc;
        what[n++] = OP_TOKEN;
    }
    if (pj->jn.key[0]) {
        what[n] = OP_KEY;
        ops[n++] = (struct zk_txn_op){.kind = pj->key_version < 0 ? ZT_CREATE : ZT_SET,
                                      .path = m->key_path, .data = m->key_data,
                                      .len = strlen(m->key_data), .version = pj->key_version};
    }
    if (pj->pack >= 0)
        return n;
    if (pj->flow_children) { /* a waiting parent: its flow's node, then its payload's */
        what[n] = OP_FLOW;
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = pj->path,
                                      .data = m->flow_data, .len = strlen(m->flow_data)};
        what[n] = OP_FLOW;
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = m->flow_node,
                                      .data = pj->payload, .len = pj->len};
    } else {
        what[n] = OP_JOB;
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = pj->path, .data = pj->payload,
                                      .len = pj->len};
    }
    if (putjob_marker_path(pj)[0]) { /* a flow's child: counted by its marker (flow.h) */
        what[n] = OP_MARKER;
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = m->marker_path,
                                      .data = pj->id, .len = strlen(pj->id)};
    }
    return n;
}

static int pack_ops(struct putset *ps, struct zk_txn_op *ops, int nops)
{
    for (size_t i = 0; i < ps->packs.n; i++) {
        struct putpack *p = &ps->packs.v[i];
        unsigned count = 0;
        if (!p->name[0])
            continue;
        int rc = putpacks_encode(&ps->packs, i, ps->jobs, ps->n, &count);
        if (rc != ZOK)
            return rc;
        if (count == 0)
            continue; /* every job of it a duplicate */
        ps->op_job[nops] = (int)i;
        ps->op_what[nops] = OP_PACK;
        ops[nops++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = p->path, .data = p->data,
                                         .len = p->len};
    }
    return nops;
}

static int grow_ops(struct putset *ps, size_t max)
{
    if (max <= OPS_INLINE)
        return ZOK; /* the inline maps, or larger ones from an earlier send */
    int inl = ps->op_job == ps->op_job_inline;
    int *op_job = realloc(inl ? NULL : ps->op_job, max * sizeof *op_job);
    unsigned char *what = realloc(inl ? NULL : ps->op_what, max);
    if (inl && !(op_job && what)) { /* half of it failed: the inline maps stay */
        free(op_job);
        free(what);
        return ZK_ENOMEM;
    }
    if (op_job)
        ps->op_job = op_job;
    if (what)
        ps->op_what = what;
    return op_job && what ? ZOK : ZK_ENOMEM;
}

static int send_again(struct putset *ps)
{
    size_t max = (size_t)ps->nprefix + 5 * ps->n + 1; /* token, key, job (2 for a flow) or
                                                          * pack, marker */
    struct zk_txn_op *ops = zalloc(max, sizeof *ops);
    int rc = ops ? grow_ops(ps, max) : ZK_ENOMEM, nops = 0;
    for (int i = 0; rc == ZOK && i < ps->nprefix; i++) {
        ps->op_job[nops] = -1;
        ps->op_what[nops] = OP_PREFIX;
        ops[nops++] = ps->prefix[i];
    }
    for (size_t i = 0; rc == ZOK && i < ps->n; i++) {
        struct putjob *pj = &ps->jobs[i];
        if (pj->dup || pj->dup_of >= 0 || (!pj->named && (rc = name_job(ps, pj)) != ZOK))
            continue;
        int k = job_ops(pj, ops + nops, ps->op_what + nops);
        if (k < 0) {
            rc = k;
            break;
        }
        for (int j = 0; j < k; j++)
            ps->op_job[nops + j] = (int)i;
        nops += k;
    }
    if (rc == ZOK && (nops = pack_ops(ps, ops, nops)) < 0)
        rc = nops;
    if (rc == ZOK && nops == 0)
        rc = ZK_ENOTHING; /* every job a duplicate: nothing to send */
    if (rc == ZOK)
        rc = txnbatch_add(ps->b, ops, nops, on_sent, ps);
    free(ops);
    return rc;
}

int putset_send(struct putset *ps, struct txnbatch *b, const struct zk_txn_op *prefix,
                int nprefix, putset_done_fn done, void *ctx)
{
    if (nprefix > PREFIX_MAX)
        return ZK_EINVAL;
    free_prefix(ps);
    for (int i = 0; i < nprefix; i++) {
        struct zk_txn_op *op = &ps->prefix[ps->nprefix++];
        *op = prefix[i];
        op->path = strdup(prefix[i].path);
        op->data = NULL;
        if (prefix[i].len && (op->data = malloc(prefix[i].len)))
            memcpy((void *)op->data, prefix[i].data, prefix[i].len);
        if (!op->path || (prefix[i].len && !op->data))
            return ZSYSTEMERROR;
    }
    ps->b = b;
    ps->done = done;
    ps->ctx = ctx;
    ps->rounds = 0;
    ps->token_refused = 0;
    return send_again(ps);
}

/* ---- the outcome ---- */

void putset_created(struct putset *ps)
{
    const struct put_env *env = ps->env;
    if (ps->counted)
        return;
    ps->counted = 1;
    for (size_t i = 0; i < ps->n; i++) {
        struct putjob *pj = &ps->jobs[i];
        if ((pj->dup && !pj->stored_before) || pj->dup_of >= 0)
            continue; /* a retried put's job was made by its first try */
        metrics_event(env->d->metrics, pj->q->cfg, ME_PUT);
        queue_pending_changed(pj->q, +1);
        if (pj->pack >= 0 || pj->flow_children) /* far: seen once unpacked; a waiting parent:
                                                  * once its last child made it a job */
            continue;
        env->stored(env->engine, pj->q, pj->path, &pj->jn, pj->id, &pj->payload, pj->len);
    }
    putpacks_count(&ps->packs, env);
}

static void finish(struct putset *ps, int rc, const struct zk_result *res)
{
    if (rc == ZOK || rc == ZK_ENOTHING) {
        rc = ZOK;
        if (ps->nprefix == 0) /* else the caller counts, once it knows its part applied */
            putset_created(ps);
    }
    ps->done(ps, rc, res, ps->ctx);
}

static void resolve_keys(struct putset *ps);

/* The set ends with RC, which creating PATH for job PJ got: a denial is the queue's news
 * (queue_denied), anything else this job's. */
static void failed(struct putset *ps, struct putjob *pj, const char *path, int rc)
{
    if (rc == ZNOAUTH)
        queue_denied(pj->q, path);
    else
        log_warn("queue %s: creating %s failed: %s", pj->q->cfg->name, path, zk_strerror(rc));
    finish(ps, rc, NULL);
}

/* The directories were made once, and a create still found them missing: their creates'
 * answers say why (a denial ends the set; a bucket deleted again meanwhile is made now). */
static void on_parents_checked(const struct zk_result *res, void *ctx)
{
    struct putset *ps = ctx;
    int rc = res->rc == ZOK ? send_again(ps) : res->rc;
    if (rc != ZOK)
        failed(ps, ps->checking, res->path ? res->path : ps->checking->path, rc);
}

/* One job's operation failed; fixes what can be fixed and sends again. */
static int repair(struct putset *ps, struct putjob *pj, int key_op, int rc)
{
    if (key_op && (rc == ZNODEEXISTS || rc == ZBADVERSION || (rc == ZNONODE && pj->key_version >= 0))) {
        pj->key_version = -1;
        resolve_keys(ps);
        return ZOK;
    }
    if (rc == ZNONODE) { /* its directory is missing (deleted meanwhile, or never made) */
        ps->checking = pj;
        rc = zkstore_parents_missing(ps->env->d->zs, key_op ? pj->more->key_path : pj->path,
                                     &pj->made_parents, on_parents_checked, ps);
        return rc == ZK_PARENTS_RESEND ? send_again(ps) : rc == ZK_PARENTS_ASKED ? ZOK : rc;
    }
    if (rc == ZNODEEXISTS) { /* the uid is taken (a clock and counter collision) */
        pj->named = 0;
        unname_children(ps, (size_t)(pj - ps->jobs));
        return send_again(ps);
    }
    return rc;
}

/* A pack's create failed: a name taken (its jobs go into a new pack) or a directory
 * missing; anything else ends the set. */
static void repair_pack(struct putset *ps, size_t i, int rc)
{
    struct putpack *p = &ps->packs.v[i];
    struct putjob *member = NULL;
    for (size_t j = 0; j < ps->n && !member; j++)
        if (ps->jobs[j].pack == (int)i)
            member = &ps->jobs[j];
    if (rc == ZNODEEXISTS) {
        putpacks_rename(&ps->packs, i, ps->jobs, ps->n);
        rc = send_again(ps);
    } else if (rc == ZNONODE && member) {
        ps->checking = member;
        rc = zkstore_parents_missing(ps->env->d->zs, p->path, &p->made_parents,
                                     on_parents_checked, ps);
        rc = rc == ZK_PARENTS_RESEND ? send_again(ps) : rc == ZK_PARENTS_ASKED ? ZOK : rc;
    }
    if (rc != ZOK && member)
        failed(ps, member, p->path, rc);
    else if (rc != ZOK)
        finish(ps, rc, NULL);
}

/* ---- taken tokens (tokens.h) ---- */

/* The token names the job a try of this put made: this set's own (an earlier send applied
 * though its answer was lost) or an earlier request's (the producer's retry). Either way
 * the answer is that job, and nothing is made again. */
static void on_token_found(void *ctx, void *put, const char *id)
{
    struct putjob *pj = put;
    (void)ctx;
    pj->dup = 1;
    pj->stored_before = pj->named && strcmp(id, pj->id) == 0;
    pj->retried = !pj->stored_before;
    snprintf(pj->id, sizeof pj->id, "%s", id);
}

/* The set ends with the first refusal (put.c answers with it). */
static void on_token_refused(void *ctx, void *put, int rc, const struct token_refusal *tr)
{
    struct putset *ps = ctx;
    (void)put;
    if (ps->lookup_rc != ZOK)
        return;
    ps->lookup_rc = rc;
    ps->token_refused = 1;
    ps->token_refusal = *tr;
}

/* Every read is back: a refusal ends the set; else what is left is sent (nothing left: the
 * set is done, every job a try of it made). */
static void on_tokens_read(void *ctx)
{
    struct putset *ps = ctx;
    int rc = ps->lookup_rc != ZOK ? ps->lookup_rc : send_again(ps);
    if (rc != ZOK)
        finish(ps, rc, NULL); /* ZK_ENOTHING: OK */
}

static const struct token_answers token_answers = {on_token_found, on_token_refused,
                                                   on_tokens_read};

/* A token was taken: every token of the set not answered yet is read at once (when the
 * first send of the set was applied, all of them are taken). */
static void resolve_tokens(struct putset *ps)
{
    ps->lookup_rc = ZOK;
    tokens_reads_start(&ps->token_reads, &token_answers, ps);
    for (size_t i = 0; i < ps->n; i++) {
        struct putjob *pj = &ps->jobs[i];
        if (putjob_token_path(pj)[0] && !pj->dup && pj->dup_of < 0)
            tokens_read(&ps->token_reads, ps->env->d->zs,
                        &(struct token_wait){pj->more->token_path, pj->q, pj});
    }
    tokens_reads_sent(&ps->token_reads);
}

/* The token's create failed: taken (every token of the set is read), or its minute
 * directory missing (made, and sent again). */
static void token_failed(struct putset *ps, struct putjob *pj, int rc)
{
    if (rc == ZNODEEXISTS) {
        resolve_tokens(ps);
        return;
    }
    if (rc == ZNONODE) {
        ps->checking = pj;
        rc = zkstore_parents_missing(ps->env->d->zs, pj->more->token_path, &pj->made_parents,
                                     on_parents_checked, ps);
        rc = rc == ZK_PARENTS_RESEND ? send_again(ps) : rc == ZK_PARENTS_ASKED ? ZOK : rc;
        if (rc == ZOK)
            return;
    }
    failed(ps, pj, pj->more->token_path, rc);
}

static void on_sent(const struct zk_result *res, void *ctx)
{
    struct putset *ps = ctx;
    int bad = res->rc == ZOK ? -1 : zk_failed_op(res);
    if (res->rc == ZOK || res->rc == ZK_ENOTHING) {
        finish(ps, ZOK, res);
        return;
    }
    if (bad < ps->nprefix || ps->op_what[bad] == OP_PREFIX) { /* the caller's, or the connection */
        finish(ps, res->rc, res);
        return;
    }
    int over = ++ps->rounds > TXN_ROUNDS_MAX;
    if (ps->op_what[bad] == OP_PACK) {
        repair_pack(ps, (size_t)ps->op_job[bad], over ? ZSYSTEMERROR : res->op_err[bad]);
        return;
    }
    struct putjob *pj = &ps->jobs[ps->op_job[bad]];
    if (ps->op_what[bad] == OP_TOKEN) {
        token_failed(ps, pj, over ? ZSYSTEMERROR : res->op_err[bad]);
        return;
    }
    if (ps->op_what[bad] == OP_MARKER) { /* made with its flow's node: cannot fail alone */
        failed(ps, pj, pj->more->marker_path, res->op_err[bad]);
        return;
    }
    int key_op = ps->op_what[bad] == OP_KEY;
    int rc = over ? res->op_err[bad] : repair(ps, pj, key_op, res->op_err[bad]);
    if (rc != ZOK)
        failed(ps, pj, key_op ? pj->more->key_path : pj->path, rc);
}

/* ---- taken keys ---- */

struct lookup {
    struct putset *ps;
    struct putjob *pj;
    int version;                /* the key node's, while its job's existence is checked */
    struct job_name holder;     /* the job the key node names */
};

static void lookup_done(struct lookup *lk, int rc)
{
    struct putset *ps = lk->ps;
    free(lk);
    if (rc != ZOK && ps->lookup_rc == ZOK)
        ps->lookup_rc = rc;
    if (--ps->lookups > 0)
        return;
    rc = ps->lookup_rc != ZOK ? ps->lookup_rc : send_again(ps);
    if (rc != ZOK)
        finish(ps, rc, NULL);
}

static void take_over(struct lookup *lk, int version)
{
    log_info("queue %s: key %s: its key node names no job; taking it over (version %d)",
             lk->pj->q->cfg->name, lk->pj->jn.key, version);
    lk->pj->key_version = version;
}

/* The key is taken: by this very job when an earlier send of the set was applied though
 * its answer was lost (the same name: uids are never reused), else by another job. */
static void duplicate_of(struct lookup *lk)
{
    struct putjob *pj = lk->pj;
    char holder[LAYOUT_ID_MAX + 1];
    if (pj->named && layout_job_id(holder, sizeof holder, pj->q->cfg->name, &lk->holder) == 0 &&
        strcmp(holder, pj->id) == 0) {
        pj->dup = pj->stored_before = 1;
        return;
    }
    pj->dup = 1;
    if (layout_job_id(pj->id, sizeof pj->id, pj->q->cfg->name, &lk->holder) != 0)
        snprintf(pj->id, sizeof pj->id, "%s/-", pj->q->cfg->name);
}

static void on_key_job(const struct zk_result *res, void *ctx)
{
    struct lookup *lk = ctx;
    if (res->rc == ZOK)
        duplicate_of(lk);
    else if (res->rc == ZNONODE)
        take_over(lk, lk->version); /* its job was deleted without the key node */
    lookup_done(lk, res->rc == ZNONODE ? ZOK : res->rc);
}

/* A kept key ("done <ack ms> <name>"): taken while younger than the queue's retention,
 * then free to take over. 0 if DATA is no kept key. */
static int kept_key(struct lookup *lk, const char *data, int len, int version)
{
    int64_t acked;
    if (len <= 0 || layout_parse_kept_key(data, (size_t)len, &acked, &lk->holder) != 0)
        return 0;
    if (acked + (int64_t)lk->pj->q->cfg->key_retention_ms > cluster_now_ms())
        duplicate_of(lk);
    else
        lk->pj->key_version = version; /* retention over: the key is free again */
    return 1;
}

/* The znode that holds the key's job: the job's own, or its pack (packed while the key
 * node names "p.../name": an unpacking rewrites the key node in its own transaction, so a
 * pack that is gone means a key node changed since it was read, or a job deleted by hand;
 * a take-over at the version read settles which). */
static int holder_path(const struct lookup *lk, char *path, size_t len)
{
    const char *root = lk->ps->env->d->cfg->zk_root, *queue = lk->pj->q->cfg->name;
    if (lk->holder.pack[0])
        return layout_pack_path(path, len, root, queue, lk->holder.pack);
    return layout_job_path(path, len, root, queue, &lk->holder);
}

static void on_key_read(const struct zk_result *res, void *ctx)
{
    struct lookup *lk = ctx;
    struct putjob *pj = lk->pj;
    int rc = res->rc;
    char path[LAYOUT_PATH_MAX];
    if (rc == ZNONODE) { /* freed meanwhile: create it */
        lookup_done(lk, ZOK);
        return;
    }
    if (rc != ZOK) {
        if (rc == ZNOAUTH)
            queue_denied(pj->q, pj->more->key_path);
        lookup_done(lk, rc);
        return;
    }
    if (kept_key(lk, res->data, res->datalen, res->stat.version)) {
        lookup_done(lk, ZOK);
        return;
    }
    lk->version = res->stat.version;
    if (res->datalen <= 0 ||
        layout_parse_key_data(res->data, (size_t)res->datalen, &lk->holder) != 0 ||
        holder_path(lk, path, sizeof path) != 0) {
        take_over(lk, lk->version); /* not a job name at all */
        lookup_done(lk, ZOK);
        return;
    }
    if ((rc = zkstore_exists(lk->ps->env->d->zs, path, 0, on_key_job, lk)) != ZOK)
        lookup_done(lk, rc);
}

/* Some key was taken: reads every key of the set (pipelined), marks the jobs whose key is
 * held by a job as duplicates, takes stale keys over, and sends the rest again. */
static void resolve_keys(struct putset *ps)
{
    ps->lookups = 1; /* held until every read is sent */
    ps->lookup_rc = ZOK;
    for (size_t i = 0; i < ps->n; i++) {
        struct putjob *pj = &ps->jobs[i];
        if (!pj->jn.key[0] || pj->dup || pj->dup_of >= 0)
            continue;
        struct lookup *lk = calloc(1, sizeof *lk);
        int rc = lk ? ZOK : ZK_ENOMEM;
        if (lk) {
            *lk = (struct lookup){.ps = ps, .pj = pj};
            ps->lookups++;
            pj->key_version = -1;
            rc = zkstore_get(ps->env->d->zs, pj->more->key_path, on_key_read, lk);
            if (rc != ZOK) {
                ps->lookups--;
                free(lk);
            }
        }
        if (rc != ZOK && ps->lookup_rc == ZOK)
            ps->lookup_rc = rc;
    }
    struct lookup *self = calloc(1, sizeof *self);
    if (self) {
        self->ps = ps;
        lookup_done(self, ZOK);
    } else if (--ps->lookups == 0) {
        finish(ps, ZK_ENOMEM, NULL);
    }
}

/* ---- the reply ---- */

int putset_format(struct putset *const *parts, size_t nparts, int with_parts, char **line)
{
    size_t n = 0, cap = 64, used = 0, pos = 0;
    for (size_t p = 0; p < nparts; p++)
        for (size_t i = 0; i < parts[p]->n; i++) {
            const struct putjob *pj = &parts[p]->jobs[i];
            if (pj->dup_of >= 0) /* unnamed itself: the earlier job's id is written */
                pj = &parts[p]->jobs[pj->dup_of];
            cap += strlen(pj->id) + 1 + 12;
        }
    char *buf = malloc(cap), *dups = malloc(cap);
    size_t dn = 0;
    if (!buf || !dups) {
        free(buf);
        free(dups);
        return -1;
    }
    for (size_t p = 0; p < nparts; p++)
        n += parts[p]->n;
    used = (size_t)snprintf(buf, cap, "n=%zu", n);
    if (with_parts)
        used += (size_t)snprintf(buf + used, cap - used, " parts=%zu", nparts);
    used += (size_t)snprintf(buf + used, cap - used, " ids=");
    dups[0] = '\0';
    for (size_t p = 0; p < nparts; p++) {
        for (size_t i = 0; i < parts[p]->n; i++) {
            const struct putjob *pj = &parts[p]->jobs[i];
            int dup = (pj->dup && !pj->stored_before && !pj->retried) || pj->dup_of >= 0;
            if (pj->dup_of >= 0) /* the same key earlier in the set: that job's id */
                pj = &parts[p]->jobs[pj->dup_of];
            pos++;
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", pos > 1 ? "," : "", pj->id);
            if (dup)
                dn += (size_t)snprintf(dups + dn, cap - dn, "%s%zu", dn ? "," : "", pos);
        }
    }
    snprintf(buf + used, cap - used, " dup=%s", dn ? dups : "-");
    free(dups);
    *line = buf;
    return 0;
}
