/* The scripted ZooKeeper store of fake_zkstore.h: what txnbatch.c and the engine call. */
#include "fake_zkstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_PENDING_MAX 64

struct zkstore {
    int64_t session;
    int refuse;
    int sent;
    int connected;
    int64_t heard_age_ms;
    unsigned seq;
    int npending;
    struct fake_multi pending[FAKE_PENDING_MAX];
    int ncalls;
    struct fake_call calls[FAKE_PENDING_MAX];
    unsigned char *last_set;    /* the data of the last setData sent in a multi, whole */
    size_t last_set_len;
};

static void *must(void *p)
{
    if (!p) {
        fprintf(stderr, "fake_zkstore: out of memory\n");
        abort();
    }
    return p;
}

struct zkstore *fake_zk_new(int64_t session)
{
    struct zkstore *zs = must(calloc(1, sizeof *zs));
    zs->session = session;
    zs->connected = 1;
    zs->seq = 1;
    return zs;
}

void fake_zk_set_session(struct zkstore *zs, int64_t session) { zs->session = session; }
void fake_zk_set_seq(struct zkstore *zs, unsigned seq) { zs->seq = seq; }
void fake_zk_set_connected(struct zkstore *zs, int connected) { zs->connected = connected; }
void fake_zk_refuse(struct zkstore *zs, int rc) { zs->refuse = rc; }
int fake_zk_pending(const struct zkstore *zs) { return zs->npending; }
int fake_zk_sent(const struct zkstore *zs) { return zs->sent; }

const struct fake_multi *fake_zk_multi(const struct zkstore *zs, int i)
{
    return i >= 0 && i < zs->npending ? &zs->pending[i] : NULL;
}

int64_t zkstore_session_id(const struct zkstore *zs) { return zs->session; }
int zkstore_connected(const struct zkstore *zs) { return zs->connected; }
/* Just heard from unless a test says otherwise, with a session timeout of 10 s (dispatcher.c,
 * may_push). */
int64_t zkstore_heard_age_ms(const struct zkstore *zs) { return zs->heard_age_ms; }
void fake_zk_set_heard_age(struct zkstore *zs, int64_t ms) { zs->heard_age_ms = ms; }
int zkstore_negotiated_timeout(const struct zkstore *zs)
{
    (void)zs;
    return 10000;
}
void zkstore_touch(struct zkstore *zs) { (void)zs; }

int zkstore_multi(struct zkstore *zs, const struct zk_txn_op *ops, int nops, zk_done_fn done,
                  void *ctx)
{
    if (zs->refuse != ZOK)
        return zs->refuse;
    if (zs->npending == FAKE_PENDING_MAX) {
        fprintf(stderr, "fake_zkstore: more than %d multis pending\n", FAKE_PENDING_MAX);
        abort();
    }
    /* copied, as the real store copies: the caller frees its array after the call */
    struct fake_multi *m = &zs->pending[zs->npending++];
    m->nops = nops;
    m->kinds = must(calloc((size_t)nops, sizeof *m->kinds));
    m->paths = must(calloc((size_t)nops, sizeof *m->paths));
    m->lens = must(calloc((size_t)nops, sizeof *m->lens));
    m->sequential = must(calloc((size_t)nops, sizeof *m->sequential));
    m->datas = must(calloc((size_t)nops, sizeof *m->datas));
    m->versions = must(calloc((size_t)nops, sizeof *m->versions));
    for (int k = 0; k < nops; k++) {
        size_t n = ops[k].len < 255 ? ops[k].len : 255;
        m->datas[k] = must(calloc(n + 1, 1));
        if (n)
            memcpy(m->datas[k], ops[k].data, n);
        m->versions[k] = ops[k].version;
        m->kinds[k] = (int)ops[k].kind;
        if (ops[k].kind == ZT_SET) {
            free(zs->last_set);
            zs->last_set = must(malloc(ops[k].len + 1));
            memcpy(zs->last_set, ops[k].data, ops[k].len);
            zs->last_set_len = ops[k].len;
        }
        m->sequential[k] = ops[k].kind == ZT_CREATE && ops[k].sequential;
        m->paths[k] = must(strdup(ops[k].path));
        m->lens[k] = ops[k].len;
    }
    m->done = done;
    m->ctx = ctx;
    zs->sent++;
    return ZOK;
}

/* Takes multi I off the pending list (its completion may send the next one) and answers
 * it with RES, then frees its copies. */
static void answer(struct zkstore *zs, int i, struct zk_result *res)
{
    if (i < 0 || i >= zs->npending) {
        fprintf(stderr, "fake_zkstore: no pending multi %d\n", i);
        abort();
    }
    struct fake_multi m = zs->pending[i];
    memmove(&zs->pending[i], &zs->pending[i + 1],
            (size_t)(--zs->npending - i) * sizeof zs->pending[0]);
    m.done(res, m.ctx);
    for (int k = 0; k < m.nops; k++) {
        free(m.paths[k]);
        free(m.datas[k]);
    }
    free(m.paths);
    free(m.datas);
    free(m.versions);
    free(m.kinds);
    free(m.lens);
    free(m.sequential);
}

static void answer_ops(struct zkstore *zs, int i, int rc, int bad, int err)
{
    const struct fake_multi *m = fake_zk_multi(zs, i);
    int n = m ? m->nops : 0;
    int *errs = must(calloc((size_t)n + 1, sizeof *errs));
    char **names = must(calloc((size_t)n + 1, sizeof *names));
    for (int k = 0; k < n; k++) {
        errs[k] = bad < 0 || k < bad ? ZOK : k == bad ? err : ZRUNTIMEINCONSISTENCY;
        if (rc == ZOK && m->kinds[k] == ZT_CREATE)
            names[k] = must(malloc(strlen(m->paths[k]) + 11));
        if (names[k] && m->sequential[k])
            sprintf(names[k], "%s%010u", m->paths[k], zs->seq);
        else if (names[k])
            sprintf(names[k], "%s-seq", m->paths[k]);
    }
    struct zk_result res = {.rc = rc, .nops = n, .op_err = errs, .op_path = names};
    answer(zs, i, &res);
    for (int k = 0; k < n; k++)
        free(names[k]);
    free(names);
    free(errs);
}

void fake_zk_ok(struct zkstore *zs, int i) { answer_ops(zs, i, ZOK, -1, ZOK); }

void fake_zk_op_fails(struct zkstore *zs, int i, int bad, int err)
{
    answer_ops(zs, i, err, bad, err);
}

void fake_zk_lost(struct zkstore *zs, int i, int rc)
{
    const struct fake_multi *m = fake_zk_multi(zs, i);
    int n = m ? m->nops : 0;
    int *errs = must(calloc((size_t)n + 1, sizeof *errs));
    for (int k = 0; k < n; k++)
        errs[k] = rc; /* as the client's cleanup_failed_multi fakes each operation's answer */
    struct zk_result res = {.rc = rc, .nops = n, .op_err = errs};
    answer(zs, i, &res);
    free(errs);
}

/* ---- single calls ---- */

static int record_call(struct zkstore *zs, enum fake_call_kind kind, const char *path, int watch,
                       zk_done_fn done, void *ctx)
{
    if (zs->refuse != ZOK)
        return zs->refuse;
    if (zs->ncalls == FAKE_PENDING_MAX) {
        fprintf(stderr, "fake_zkstore: more than %d calls pending\n", FAKE_PENDING_MAX);
        abort();
    }
    zs->calls[zs->ncalls++] = (struct fake_call){.kind = kind, .path = must(strdup(path)),
                                                 .watch = watch, .done = done, .ctx = ctx};
    return ZOK;
}

int zkstore_exists(struct zkstore *zs, const char *path, int watch, zk_done_fn done, void *ctx)
{
    return record_call(zs, FAKE_EXISTS, path, watch, done, ctx);
}

int zkstore_set(struct zkstore *zs, const char *path, const void *data, size_t len,
                zk_done_fn done, void *ctx)
{
    (void)data;
    (void)len;
    return record_call(zs, FAKE_SET, path, 0, done, ctx);
}

int zkstore_get(struct zkstore *zs, const char *path, zk_done_fn done, void *ctx)
{
    return record_call(zs, FAKE_GET, path, 0, done, ctx);
}

int zkstore_children(struct zkstore *zs, const char *path, int watch, zk_done_fn done,
                     void *ctx)
{
    return record_call(zs, FAKE_CHILDREN, path, watch, done, ctx);
}

int zkstore_create(struct zkstore *zs, const char *path, const void *data, size_t len,
                   int ephemeral, zk_done_fn done, void *ctx)
{
    (void)data;
    (void)len;
    (void)ephemeral;
    return record_call(zs, FAKE_CREATE, path, 0, done, ctx);
}

int zkstore_delete(struct zkstore *zs, const char *path, int version, zk_done_fn done, void *ctx)
{
    int rc = record_call(zs, FAKE_DELETE, path, 0, done, ctx);
    if (rc == ZOK)
        zs->calls[zs->ncalls - 1].version = version;
    return rc;
}

/* Always the rule's second case: the directories are made and DONE awaits their answer. */
int zkstore_parents_missing(struct zkstore *zs, const char *path, int *tries, zk_done_fn done,
                            void *ctx)
{
    ++*tries;
    int rc = record_call(zs, FAKE_PARENTS, path, 0, done, ctx);
    return rc == ZOK ? ZK_PARENTS_ASKED : rc;
}

int zkstore_create_parents(struct zkstore *zs, const char *path, zk_done_fn done, void *ctx)
{
    return record_call(zs, FAKE_PARENTS, path, 0, done, ctx);
}

int fake_zk_calls(const struct zkstore *zs) { return zs->ncalls; }

const unsigned char *fake_zk_last_set(const struct zkstore *zs, size_t *len)
{
    *len = zs->last_set_len;
    return zs->last_set;
}

const struct fake_call *fake_zk_call(const struct zkstore *zs, int i)
{
    return i >= 0 && i < zs->ncalls ? &zs->calls[i] : NULL;
}

/* Takes call I off the pending list before its completion (which may make more calls). */
void fake_zk_answer(struct zkstore *zs, int i, const struct zk_result *res)
{
    if (i < 0 || i >= zs->ncalls) {
        fprintf(stderr, "fake_zkstore: no pending call %d\n", i);
        abort();
    }
    struct fake_call c = zs->calls[i];
    memmove(&zs->calls[i], &zs->calls[i + 1], (size_t)(--zs->ncalls - i) * sizeof zs->calls[0]);
    struct zk_result r = *res;
    if (c.done)
        c.done(&r, c.ctx);
    free(c.path);
}

void fake_zk_answer_rc(struct zkstore *zs, int i, int rc)
{
    fake_zk_answer(zs, i, &(struct zk_result){.rc = rc});
}

void fake_zk_free(struct zkstore *zs)
{
    free(zs->last_set);
    while (zs->npending)
        fake_zk_lost(zs, 0, ZCLOSING);
    while (zs->ncalls)
        fake_zk_answer_rc(zs, 0, ZCLOSING);
    free(zs);
}
