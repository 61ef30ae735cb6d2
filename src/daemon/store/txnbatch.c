#include "txnbatch.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define BATCH_BYTES_MAX (512 * 1024) /* well inside ZooKeeper's 1 MB packet limit */

struct txn_item {
    struct txn_item *next;
    struct zk_txn_op *ops;      /* in the same block as the item, and so are their paths
                                 * and data: one malloc a transaction (copy_ops) */
    int nops;
    size_t bytes;
    int64_t session;            /* the session it was added in */
    int64_t added_us;           /* trace only: when it began to wait (monotonic) */
    int last_of_batch;          /* take() ends a multi after it (a prefix known good) */
    zk_done_fn done;
    void *ctx;
};

struct txnbatch {
    struct zkstore *zs;
    struct event *flush;
    struct txn_item *head, **tail;  /* waiting to be sent */
    int inflight, max_inflight;
    int session_bound;          /* items of an earlier session fail instead of being sent */
    void (*answered)(void *arg); /* txnbatch_on_answer's */
    void *answered_arg;
    int closing;
    unsigned long long nitems, nmultis;
    struct txnbatch_trace *tr;  /* DEFERD_TXN_TRACE set: timings for STATS, else NULL */
};

/* Issue 43's optional trace (DEFERD_TXN_TRACE=1 in deferd's environment): how long items
 * wait before they are sent, how long a multi takes to be answered, and how many multis
 * are on their way over time. Off, it costs one NULL test per add, send and answer. */
struct txnbatch_trace {
    unsigned long long waited, wait_us, wait_max_us;  /* items sent, their waits */
    unsigned long long answered, rtt_us, rtt_max_us;  /* multis answered, their round trips */
    unsigned long long ops_sent;                      /* operations in the multis sent */
    unsigned long long full_sends;                    /* sends that filled TXN_BATCH_ITEMS_MAX */
    int64_t last_us;                                  /* last change of inflight */
    unsigned long long area_us;                       /* integral of inflight over time */
    unsigned long long full_us;                       /* time with inflight == max_inflight */
    unsigned long long busy_us;                       /* time with inflight > 0 */
};

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Before inflight changes: the time since the last change counted at its old value. */
static void trace_inflight(struct txnbatch *b, int64_t now)
{
    struct txnbatch_trace *tr = b->tr;
    if (tr->last_us && now > tr->last_us) {
        unsigned long long dt = (unsigned long long)(now - tr->last_us);
        tr->area_us += dt * (unsigned long long)b->inflight;
        if (b->inflight >= b->max_inflight)
            tr->full_us += dt;
        if (b->inflight > 0)
            tr->busy_us += dt;
    }
    tr->last_us = now;
}

/* One multi on its way: its items in order, and the operations it was built from. */
struct sent {
    struct txnbatch *b;
    struct txn_item *items;
    int nops;
    int64_t sent_us;            /* trace only */
};

static void free_item(struct txn_item *it) { free(it); }

/* Calls the item's DONE with RC and the item's slice of the per-operation errors (on the
 * stack for the usual few operations: this runs once a transaction). */
static void finish_item(struct txn_item *it, int rc, const int *op_err, char **op_path)
{
    enum { FEW = 16 };
    int few_errs[FEW];
    char *few_paths[FEW];
    int few = it->nops <= FEW;
    int *errs = few ? few_errs : calloc((size_t)it->nops, sizeof *errs);
    char **paths = few ? few_paths : calloc((size_t)it->nops, sizeof *paths);
    if (!errs || !paths) { /* report it without per-operation detail */
        op_err = NULL;
        rc = rc == ZOK ? ZK_ENOMEM : rc;
    }
    for (int i = 0; errs && paths && i < it->nops; i++) {
        errs[i] = op_err ? op_err[i] : rc;
        paths[i] = op_path ? op_path[i] : NULL;
    }
    struct zk_result r = {.rc = rc, .nops = errs && paths ? it->nops : 0, .op_err = errs,
                          .op_path = paths};
    if (it->done)
        it->done(&r, it->ctx);
    if (!few) {
        free(errs);
        free(paths);
    }
    free_item(it);
}

static void schedule_flush(struct txnbatch *b)
{
    if (b->head && b->inflight < b->max_inflight && !b->closing)
        event_active(b->flush, 0, 0);
}

/* Puts ITEMS (a list) back in front of the waiting ones, in their order. */
static void requeue(struct txnbatch *b, struct txn_item *items)
{
    if (!items)
        return;
    struct txn_item *last = items;
    while (last->next)
        last = last->next;
    last->next = b->head;
    if (!b->head)
        b->tail = &last->next;
    b->head = items;
}

static void fail_all(struct txn_item *items, int rc);

static void on_multi(const struct zk_result *res, void *ctx)
{
    struct sent *s = ctx;
    struct txnbatch *b = s->b;
    struct txn_item *items = s->items;
    /* -1 when the multi never reached the data (connection): no per-operation results */
    int bad = res->rc == ZOK || res->nops != s->nops ? -1 : zk_failed_op(res);
    if (b->tr) {
        int64_t now = mono_us();
        unsigned long long rtt = now > s->sent_us ? (unsigned long long)(now - s->sent_us) : 0;
        trace_inflight(b, now);
        b->tr->answered++;
        b->tr->rtt_us += rtt;
        if (rtt > b->tr->rtt_max_us)
            b->tr->rtt_max_us = rtt;
    }
    b->inflight--;
    free(s);
    if (res->rc != ZOK && bad >= 0) {
        /* One item failed: it alone gets its error; the rest were rolled back, go again.
         * Those before it passed, so they go in a multi of their own: each further bad
         * item in the rest then costs a round trip of the rest only, not of everyone. */
        struct txn_item **pp = &items, *it, *prev = NULL;
        int first = 0;
        while ((it = *pp) && first + it->nops <= bad) {
            first += it->nops;
            prev = it;
            pp = &it->next;
        }
        *pp = it->next;
        if (prev)
            prev->last_of_batch = 1;
        if (b->closing) /* nothing is sent any more: waiting, they would never finish */
            fail_all(items, ZCLOSING);
        else
            requeue(b, items);
        finish_item(it, res->op_err[bad], res->op_err + first, NULL);
        schedule_flush(b);
        if (b->answered)
            b->answered(b->answered_arg);
        return;
    }
    int first = 0;
    for (struct txn_item *it = items, *next; it; it = next) {
        int ok = res->rc == ZOK && res->op_err && res->op_path, nops = it->nops;
        next = it->next;
        finish_item(it, res->rc, ok ? res->op_err + first : NULL,
                    ok ? res->op_path + first : NULL);
        first += nops;
    }
    schedule_flush(b);
    if (b->answered)
        b->answered(b->answered_arg);
}

/* Takes the next batch off the waiting list: up to TXN_BATCH_ITEMS_MAX items, ZK_MULTI_MAX
 * operations and BATCH_BYTES_MAX bytes (a bigger item goes alone). */
static struct txn_item *take(struct txnbatch *b, int *nops)
{
    struct txn_item *items = b->head, **pp = &b->head;
    size_t bytes = 0;
    int n = 0, ops = 0;
    while (*pp && n < TXN_BATCH_ITEMS_MAX && ops + (*pp)->nops <= ZK_MULTI_MAX &&
           (n == 0 || bytes + (*pp)->bytes <= BATCH_BYTES_MAX)) {
        int last = (*pp)->last_of_batch;
        (*pp)->last_of_batch = 0;
        bytes += (*pp)->bytes;
        ops += (*pp)->nops;
        n++;
        pp = &(*pp)->next;
        if (last)
            break;
    }
    b->head = *pp;
    if (!b->head)
        b->tail = &b->head;
    *pp = NULL;
    *nops = ops;
    return items;
}

static void fail_all(struct txn_item *items, int rc)
{
    for (struct txn_item *it = items, *next; it; it = next) {
        next = it->next;
        finish_item(it, rc, NULL, NULL);
    }
}

static int send_batch(struct txnbatch *b)
{
    int nops;
    struct txn_item *items = take(b, &nops);
    struct zk_txn_op *ops = malloc((size_t)nops * sizeof *ops);
    struct sent *s = malloc(sizeof *s);
    int rc = ZK_ENOMEM;
    if (ops && s) {
        int k = 0;
        for (struct txn_item *it = items; it; it = it->next)
            for (int i = 0; i < it->nops; i++)
                ops[k++] = it->ops[i];
        *s = (struct sent){.b = b, .items = items, .nops = nops};
        if (b->tr) {
            int64_t now = mono_us();
            int n = 0;
            s->sent_us = now;
            for (struct txn_item *it = items; it; it = it->next, n++) {
                unsigned long long w = now > it->added_us ? (unsigned long long)(now - it->added_us) : 0;
                b->tr->waited++;
                b->tr->wait_us += w;
                if (w > b->tr->wait_max_us)
                    b->tr->wait_max_us = w;
                it->added_us = now; /* sent again after a rollback: its next wait from here */
            }
            b->tr->ops_sent += (unsigned long long)nops;
            b->tr->full_sends += n >= TXN_BATCH_ITEMS_MAX;
            trace_inflight(b, now);
        }
        rc = zkstore_multi(b->zs, ops, nops, on_multi, s);
    }
    free(ops);
    if (rc != ZOK) {
        free(s);
        fail_all(items, rc);
        return rc;
    }
    b->inflight++;
    b->nmultis++;
    return ZOK;
}

/* Items added under an earlier session (waiting, or rolled back and waiting again) act on
 * locks that went with it: sent now, they would act on whoever holds those paths today. */
static void drop_stale(struct txnbatch *b)
{
    int64_t now = zkstore_session_id(b->zs);
    struct txn_item **pp = &b->head, *stale = NULL, **st = &stale;
    while (*pp) {
        struct txn_item *it = *pp;
        if (it->session == now) {
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        it->next = NULL;
        *st = it;
        st = &it->next;
    }
    b->tail = pp;
    fail_all(stale, ZSESSIONEXPIRED);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct txnbatch *b = arg;
    if (b->session_bound)
        drop_stale(b);
    while (b->head && b->inflight < b->max_inflight && !b->closing)
        send_batch(b);
}

size_t txnbatch_bytes(const struct zk_txn_op *ops, int nops)
{
    size_t bytes = 0;
    for (int i = 0; i < nops; i++)
        bytes += strlen(ops[i].path) + TXN_OP_OVERHEAD +
                 (ops[i].kind == ZT_CREATE || ops[i].kind == ZT_SET ? ops[i].len : 0);
    return bytes;
}

static int has_data(const struct zk_txn_op *op)
{
    return (op->kind == ZT_CREATE || op->kind == ZT_SET) && op->len && op->data;
}

/* A new item holding copies of OPS, their paths and data, in one block; NULL when out of
 * memory. */
static struct txn_item *copy_ops(const struct zk_txn_op *ops, int nops)
{
    size_t size = sizeof(struct txn_item) + (size_t)nops * sizeof(struct zk_txn_op);
    for (int i = 0; i < nops; i++)
        size += strlen(ops[i].path) + 1 + (has_data(&ops[i]) ? ops[i].len : 0);
    struct txn_item *it = malloc(size);
    if (!it)
        return NULL;
    memset(it, 0, sizeof *it);
    it->nops = nops;
    it->ops = (struct zk_txn_op *)(it + 1);
    char *at = (char *)(it->ops + nops);
    for (int i = 0; i < nops; i++) {
        size_t plen = strlen(ops[i].path) + 1;
        it->ops[i] = ops[i];
        it->ops[i].path = memcpy(at, ops[i].path, plen);
        at += plen;
        it->ops[i].data = NULL;
        if (has_data(&ops[i])) {
            it->ops[i].data = memcpy(at, ops[i].data, ops[i].len);
            at += ops[i].len;
        }
    }
    it->bytes = txnbatch_bytes(ops, nops);
    return it;
}

int txnbatch_add(struct txnbatch *b, const struct zk_txn_op *ops, int nops, zk_done_fn done,
                 void *ctx)
{
    return txnbatch_add_jobs(b, ops, nops, 1, done, ctx);
}

int txnbatch_add_jobs(struct txnbatch *b, const struct zk_txn_op *ops, int nops, unsigned jobs,
                      zk_done_fn done, void *ctx)
{
    if (b->closing)
        return ZCLOSING;
    if (nops < 1 || nops > ZK_MULTI_MAX)
        return ZK_EINVAL;
    struct txn_item *it = copy_ops(ops, nops);
    if (!it)
        return ZK_ENOMEM;
    it->session = zkstore_session_id(b->zs);
    if (b->tr)
        it->added_us = mono_us();
    it->done = done;
    it->ctx = ctx;
    *b->tail = it;
    b->tail = &it->next;
    b->nitems += jobs;
    schedule_flush(b);
    return ZOK;
}

void txnbatch_counts(const struct txnbatch *b, unsigned long long *items,
                     unsigned long long *multis)
{
    *items = b->nitems;
    *multis = b->nmultis;
}

struct txnbatch *txnbatch_new(struct event_base *base, struct zkstore *zs, int max_inflight,
                              int session_bound)
{
    struct txnbatch *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->zs = zs;
    b->max_inflight = max_inflight;
    b->session_bound = session_bound;
    b->tail = &b->head;
    const char *trace = getenv("DEFERD_TXN_TRACE");
    if (trace && *trace && strcmp(trace, "0") != 0)
        b->tr = calloc(1, sizeof *b->tr); /* out of memory: no trace */
    if (!(b->flush = event_new(base, -1, 0, on_flush, b))) {
        free(b->tr);
        free(b);
        return NULL;
    }
    return b;
}

void txnbatch_close(struct txnbatch *b)
{
    if (!b || b->closing)
        return;
    while (b->head)
        send_batch(b); /* the store's close sends them before it ends the session */
    b->closing = 1;
}

void txnbatch_free(struct txnbatch *b)
{
    if (!b)
        return;
    txnbatch_close(b);
    event_free(b->flush);
    free(b->tr);
    free(b);
}

int txnbatch_trace_format(struct txnbatch *b, const char *name, char *buf, size_t len)
{
    struct txnbatch_trace *tr = b->tr;
    if (!tr || !len)
        return 0;
    trace_inflight(b, mono_us());
    /* raw sums, so that a reader can take differences between two STATS */
    int n = snprintf(buf, len,
                     " trace.%s=%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%d",
                     name, b->nmultis, tr->waited, tr->wait_us, tr->wait_max_us, tr->answered,
                     tr->rtt_us, tr->rtt_max_us, tr->ops_sent, tr->full_sends, tr->area_us,
                     tr->full_us, tr->busy_us, b->max_inflight);
    return n < 0 ? 0 : (size_t)n >= len ? (int)len - 1 : n;
}

int txnbatch_full(const struct txnbatch *b) { return b->inflight >= b->max_inflight; }

void txnbatch_on_answer(struct txnbatch *b, void (*fn)(void *arg), void *arg)
{
    b->answered = fn;
    b->answered_arg = arg;
}
