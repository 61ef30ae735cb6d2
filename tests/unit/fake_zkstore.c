/* The scripted ZooKeeper store of fake_zkstore.h: only what txnbatch.c calls. */
#include "fake_zkstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_PENDING_MAX 64

struct zkstore {
    int64_t session;
    int refuse;
    int sent;
    int npending;
    struct fake_multi pending[FAKE_PENDING_MAX];
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
    return zs;
}

void fake_zk_set_session(struct zkstore *zs, int64_t session) { zs->session = session; }
void fake_zk_refuse(struct zkstore *zs, int rc) { zs->refuse = rc; }
int fake_zk_pending(const struct zkstore *zs) { return zs->npending; }
int fake_zk_sent(const struct zkstore *zs) { return zs->sent; }

const struct fake_multi *fake_zk_multi(const struct zkstore *zs, int i)
{
    return i >= 0 && i < zs->npending ? &zs->pending[i] : NULL;
}

int64_t zkstore_session_id(const struct zkstore *zs) { return zs->session; }

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
    for (int k = 0; k < nops; k++) {
        m->kinds[k] = (int)ops[k].kind;
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
    for (int k = 0; k < m.nops; k++)
        free(m.paths[k]);
    free(m.paths);
    free(m.kinds);
    free(m.lens);
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
            names[k] = must(malloc(strlen(m->paths[k]) + 5));
        if (names[k])
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

void fake_zk_free(struct zkstore *zs)
{
    while (zs->npending)
        fake_zk_lost(zs, 0, ZCLOSING);
    free(zs);
}
