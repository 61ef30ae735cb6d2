/* txnbatch (src/daemon/store/txnbatch.c) behind a scripted ZooKeeper store (fake_zkstore.c):
 * what one loop turn adds goes out as one multi; max_inflight holds the rest back, which
 * then go together; a failing operation fails its item alone and the others are sent
 * again until they pass; connection errors reach every item of the multi; items of an
 * earlier session fail when the batch is session bound; each DONE comes exactly once,
 * never from within txnbatch_add; what waits while every multi is out goes as one multi
 * up to TXN_BATCH_ITEMS_MAX items. */
#include <event2/event.h>
#include <stdlib.h>

#include "check.h"
#include "fake_zkstore.h"
#include "txnbatch.h"

#define ITEMS_MAX (TXN_BATCH_ITEMS_MAX + 200)
#define OPS_MAX 8

/* One item a test added, and what its DONE was told. */
struct item {
    char paths[OPS_MAX][32];
    int nops;
    int calls;
    int rc;
    int nresults;
    int op_err[OPS_MAX];
    char op_path[OPS_MAX][48];
};

static struct event_base *base;
static struct item items[ITEMS_MAX];
static int nitems;
static int in_add; /* DONE must never run inside txnbatch_add */

static void on_done(const struct zk_result *r, void *ctx)
{
    struct item *it = ctx;
    CHECK(!in_add);
    it->calls++;
    it->rc = r->rc;
    it->nresults = r->nops;
    for (int i = 0; i < r->nops && i < OPS_MAX; i++) {
        it->op_err[i] = r->op_err ? r->op_err[i] : 12345;
        snprintf(it->op_path[i], sizeof it->op_path[i], "%s",
                 r->op_path && r->op_path[i] ? r->op_path[i] : "");
    }
}

/* Adds an item of NOPS creates named NAME/0, NAME/1...; the index of its record. */
static int add(struct txnbatch *b, const char *name, int nops)
{
    struct item *it = &items[nitems];
    struct zk_txn_op ops[OPS_MAX];
    memset(it, 0, sizeof *it);
    it->nops = nops;
    for (int i = 0; i < nops; i++) {
        snprintf(it->paths[i], sizeof it->paths[i], "%s/%d", name, i);
        ops[i] = (struct zk_txn_op){.kind = ZT_CREATE, .path = it->paths[i], .data = "d",
                                    .len = 1, .version = -1};
    }
    in_add = 1;
    int rc = txnbatch_add(b, ops, nops, on_done, it);
    in_add = 0;
    CHECK(rc == ZOK);
    return nitems++;
}

/* One loop turn: the batch's flush runs if it was scheduled. */
static void turn(void) { event_base_loop(base, EVLOOP_NONBLOCK); }

/* A batch on ZS, with the record of added items emptied. */
static struct txnbatch *batch_new(struct zkstore *zs, int max_inflight, int session_bound)
{
    nitems = 0;
    return txnbatch_new(base, zs, max_inflight, session_bound);
}

/* Pending multi M holds exactly the operations of the items listed (-1 ends), in order. */
static int multi_is(struct zkstore *zs, int m, const int *which)
{
    const struct fake_multi *fm = fake_zk_multi(zs, m);
    int k = 0;
    if (!fm)
        return 0;
    for (const int *w = which; *w >= 0; w++)
        for (int i = 0; i < items[*w].nops; i++, k++)
            if (k >= fm->nops || strcmp(fm->paths[k], items[*w].paths[i]) != 0) {
                fprintf(stderr, "multi %d op %d: '%s', want '%s'\n", m, k,
                        k < fm->nops ? fm->paths[k] : "(none)", items[*w].paths[i]);
                return 0;
            }
    if (k != fm->nops)
        fprintf(stderr, "multi %d has %d operations, want %d\n", m, fm->nops, k);
    return k == fm->nops;
}

/* Item I was answered once with ZOK, each operation ZOK and its own sequential name. */
static int passed(int i)
{
    struct item *it = &items[i];
    int ok = it->calls == 1 && it->rc == ZOK && it->nresults == it->nops;
    for (int k = 0; ok && k < it->nops; k++) {
        char want[48];
        snprintf(want, sizeof want, "%s-seq", it->paths[k]);
        ok = it->op_err[k] == ZOK && strcmp(it->op_path[k], want) == 0;
    }
    if (!ok)
        fprintf(stderr, "item %d (%s): %d calls, rc %d, %d results\n", i, it->paths[0],
                it->calls, it->rc, it->nresults);
    return ok;
}

/* Item I was answered once with RC on every operation (no per-operation detail). */
static int failed_with(int i, int rc)
{
    struct item *it = &items[i];
    int ok = it->calls == 1 && it->rc == rc && it->nresults == it->nops;
    for (int k = 0; ok && k < it->nops; k++)
        ok = it->op_err[k] == rc;
    if (!ok)
        fprintf(stderr, "item %d (%s): %d calls, rc %d (want %d), %d results\n", i,
                it->paths[0], it->calls, it->rc, rc, it->nresults);
    return ok;
}

static void check_counts(struct txnbatch *b, unsigned long long want_items,
                         unsigned long long want_multis)
{
    unsigned long long n, m;
    txnbatch_counts(b, &n, &m);
    CHECK(n == want_items);
    CHECK(m == want_multis);
}

static void finish(struct txnbatch *b, struct zkstore *zs)
{
    txnbatch_close(b);
    fake_zk_free(zs);
    txnbatch_free(b);
    turn();
}

/* What one loop turn adds goes out as one multi, nothing before the turn ends. */
static void one_turn_one_multi(void)
{
    struct zkstore *zs = fake_zk_new(7);
    struct txnbatch *b = batch_new(zs, 4, 0);
    int a = add(b, "/a", 1), c = add(b, "/c", 3), e = add(b, "/e", 2);
    CHECK(fake_zk_pending(zs) == 0); /* the turn has not ended */
    turn();
    CHECK(fake_zk_pending(zs) == 1);
    CHECK(multi_is(zs, 0, (int[]){a, c, e, -1}));
    CHECK(items[a].calls == 0 && items[c].calls == 0 && items[e].calls == 0);
    fake_zk_ok(zs, 0);
    CHECK(passed(a) && passed(c) && passed(e)); /* each its own slice of the results */
    turn();
    CHECK(fake_zk_sent(zs) == 1);
    check_counts(b, 3, 1);
    finish(b, zs);
}

/* max_inflight multis on their way: what comes meanwhile waits, then goes as one. */
static void inflight_limit(void)
{
    struct zkstore *zs = fake_zk_new(7);
    struct txnbatch *b = batch_new(zs, 2, 0);
    int a = add(b, "/a", 1);
    turn();
    int c = add(b, "/c", 1);
    turn();
    CHECK(fake_zk_pending(zs) == 2);
    int e = add(b, "/e", 1), f = add(b, "/f", 2), g = add(b, "/g", 1);
    turn();
    turn();
    CHECK(fake_zk_pending(zs) == 2); /* at the limit: nothing more sent */
    fake_zk_ok(zs, 1);               /* the second comes back first */
    CHECK(passed(c) && items[a].calls == 0);
    CHECK(items[e].calls == 0 && fake_zk_pending(zs) == 1); /* not from within the answer */
    turn();
    CHECK(fake_zk_pending(zs) == 2);
    CHECK(multi_is(zs, 1, (int[]){e, f, g, -1}));
    fake_zk_ok(zs, 0);
    fake_zk_ok(zs, 0);
    CHECK(passed(a) && passed(e) && passed(f) && passed(g));
    turn();
    CHECK(fake_zk_pending(zs) == 0);
    check_counts(b, 5, 3);
    finish(b, zs);

    /* the limit holds within one flush: with one in flight, a failure's good prefix goes
     * first and the rest waits for it */
    zs = fake_zk_new(7);
    b = batch_new(zs, 1, 0);
    int p = add(b, "/p", 1), x = add(b, "/x", 1), r = add(b, "/r", 1);
    turn();
    fake_zk_op_fails(zs, 0, 1, ZNODEEXISTS);
    turn();
    CHECK(fake_zk_pending(zs) == 1 && multi_is(zs, 0, (int[]){p, -1}));
    fake_zk_ok(zs, 0);
    turn();
    CHECK(fake_zk_pending(zs) == 1 && multi_is(zs, 0, (int[]){r, -1}));
    fake_zk_ok(zs, 0);
    CHECK(passed(p) && passed(r) && items[x].calls == 1 && items[x].rc == ZNODEEXISTS);
    finish(b, zs);
}

/* One operation fails: its item alone gets the error and its own operations' results;
 * those before it go again in a multi of their own, those after it in the next one, and
 * a second bad item among those costs only their round trip. */
static void failing_item_isolated(void)
{
    struct zkstore *zs = fake_zk_new(7);
    struct txnbatch *b = batch_new(zs, 4, 0);
    int a = add(b, "/a", 1), x = add(b, "/x", 2), c = add(b, "/c", 1), y = add(b, "/y", 1),
        e = add(b, "/e", 2);
    turn();
    CHECK(fake_zk_pending(zs) == 1);
    fake_zk_op_fails(zs, 0, 2, ZNODEEXISTS); /* x's second operation */
    CHECK(items[x].calls == 1 && items[x].rc == ZNODEEXISTS && items[x].nresults == 2);
    CHECK(items[x].op_err[0] == ZOK && items[x].op_err[1] == ZNODEEXISTS);
    CHECK(items[a].calls + items[c].calls + items[y].calls + items[e].calls == 0);
    turn();
    CHECK(fake_zk_pending(zs) == 2);
    CHECK(multi_is(zs, 0, (int[]){a, -1})); /* the prefix known good, alone */
    CHECK(multi_is(zs, 1, (int[]){c, y, e, -1}));
    fake_zk_ok(zs, 0);
    CHECK(passed(a));
    fake_zk_op_fails(zs, 0, 1, ZNONODE); /* y fails too */
    CHECK(failed_with(y, ZNONODE)); /* its one operation's own error */
    CHECK(items[c].calls == 0 && items[e].calls == 0);
    turn();
    CHECK(fake_zk_pending(zs) == 2);
    CHECK(multi_is(zs, 0, (int[]){c, -1}) && multi_is(zs, 1, (int[]){e, -1}));
    fake_zk_ok(zs, 1);
    fake_zk_ok(zs, 0);
    CHECK(passed(c) && passed(e));
    CHECK(items[x].calls == 1 && items[y].calls == 1);
    turn();
    CHECK(fake_zk_pending(zs) == 0);
    check_counts(b, 5, 5);

    /* the first item fails: no prefix, the rest go again together */
    nitems = 0;
    int p = add(b, "/p", 1), q = add(b, "/q", 1), r = add(b, "/r", 1);
    turn();
    fake_zk_op_fails(zs, 0, 0, ZBADVERSION);
    CHECK(items[p].calls == 1 && items[p].rc == ZBADVERSION && items[p].op_err[0] == ZBADVERSION);
    turn();
    CHECK(fake_zk_pending(zs) == 1 && multi_is(zs, 0, (int[]){q, r, -1}));
    fake_zk_ok(zs, 0);
    CHECK(passed(q) && passed(r) && items[p].calls == 1);
    check_counts(b, 8, 7);
    finish(b, zs);
}

/* Errors of the connection: every item of the multi gets it, none is sent again. */
static void connection_errors(void)
{
    static const int rcs[] = {ZCONNECTIONLOSS, ZSESSIONEXPIRED, ZOPERATIONTIMEOUT};
    for (size_t k = 0; k < sizeof rcs / sizeof *rcs; k++) {
        struct zkstore *zs = fake_zk_new(7);
        struct txnbatch *b = batch_new(zs, 4, 0);
        int a = add(b, "/a", 1), c = add(b, "/c", 3), e = add(b, "/e", 1);
        turn();
        fake_zk_lost(zs, 0, rcs[k]);
        CHECK(failed_with(a, rcs[k]) && failed_with(c, rcs[k]) && failed_with(e, rcs[k]));
        turn();
        CHECK(fake_zk_pending(zs) == 0 && fake_zk_sent(zs) == 1);
        finish(b, zs);
    }

    /* the store refuses the request: its items fail with that error, at the turn's end */
    struct zkstore *zs = fake_zk_new(7);
    struct txnbatch *b = batch_new(zs, 4, 0);
    fake_zk_refuse(zs, ZINVALIDSTATE);
    int a = add(b, "/a", 1), c = add(b, "/c", 2);
    CHECK(items[a].calls == 0);
    turn();
    CHECK(failed_with(a, ZINVALIDSTATE) && failed_with(c, ZINVALIDSTATE));
    check_counts(b, 2, 0);
    fake_zk_refuse(zs, ZOK);
    finish(b, zs);
}

/* Session bound: an item added in an earlier session fails with ZSESSIONEXPIRED instead of
 * being sent, also one rolled back and waiting again; without the bond it is sent. */
static void session_bound(void)
{
    struct zkstore *zs = fake_zk_new(1);
    struct txnbatch *b = batch_new(zs, 4, 1);
    int a = add(b, "/a", 1), c = add(b, "/c", 1);
    fake_zk_set_session(zs, 2);
    int e = add(b, "/e", 1);
    turn();
    CHECK(failed_with(a, ZSESSIONEXPIRED) && failed_with(c, ZSESSIONEXPIRED));
    CHECK(fake_zk_pending(zs) == 1 && multi_is(zs, 0, (int[]){e, -1}));
    fake_zk_ok(zs, 0);
    CHECK(passed(e));

    int x = add(b, "/x", 1), y = add(b, "/y", 1);
    turn();
    fake_zk_set_session(zs, 3);
    fake_zk_op_fails(zs, 0, 0, ZNODEEXISTS);
    CHECK(items[x].calls == 1 && items[x].rc == ZNODEEXISTS);
    turn();
    CHECK(failed_with(y, ZSESSIONEXPIRED)); /* rolled back, then stale */
    CHECK(fake_zk_pending(zs) == 0);
    finish(b, zs);

    zs = fake_zk_new(1);
    b = batch_new(zs, 4, 0);
    a = add(b, "/a", 1);
    fake_zk_set_session(zs, 2);
    turn();
    CHECK(fake_zk_pending(zs) == 1 && items[a].calls == 0);
    fake_zk_ok(zs, 0);
    CHECK(passed(a));
    finish(b, zs);
}

/* Refused adds (DONE never called), the size counted, and multis kept within one
 * ZooKeeper request: ZK_MULTI_MAX operations, a large item alone. */
static void limits(void)
{
    struct zkstore *zs = fake_zk_new(7);
    struct txnbatch *b = batch_new(zs, 8, 0);
    struct zk_txn_op op = {.kind = ZT_CREATE, .path = "/p", .data = "d", .len = 1};
    memset(&items[0], 0, sizeof items[0]);
    CHECK(txnbatch_add(b, &op, 0, on_done, &items[0]) == ZK_EINVAL);
    static struct zk_txn_op many[ZK_MULTI_MAX + 1];
    for (int i = 0; i <= ZK_MULTI_MAX; i++)
        many[i] = (struct zk_txn_op){.kind = ZT_CHECK, .path = "/m", .version = -1};
    CHECK(txnbatch_add(b, many, ZK_MULTI_MAX + 1, on_done, &items[0]) == ZK_EINVAL);
    turn();
    CHECK(items[0].calls == 0 && fake_zk_sent(zs) == 0);
    check_counts(b, 0, 0);

    /* size: the path and an allowance per operation, data only where it is written */
    static char big[TXN_ITEM_BYTES_MAX / 2];
    struct zk_txn_op sized[] = {
        {.kind = ZT_CREATE, .path = "/abc", .data = big, .len = 1000},
        {.kind = ZT_SET, .path = "/de", .data = big, .len = 10},
        {.kind = ZT_DELETE, .path = "/f", .len = 99},
        {.kind = ZT_CHECK, .path = "/gh", .len = 99}};
    CHECK(txnbatch_bytes(sized, 4) == 4 + 3 + 2 + 3 + 4 * TXN_OP_OVERHEAD + 1010);

    /* two items of half the largest size: never in one multi */
    struct zk_txn_op half = {.kind = ZT_CREATE, .path = "/big", .data = big, .len = sizeof big};
    CHECK(txnbatch_bytes(&half, 1) < TXN_ITEM_BYTES_MAX);
    memset(items, 0, 3 * sizeof items[0]);
    for (int i = 0; i < 3; i++) {
        items[i].nops = 1;
        snprintf(items[i].paths[0], sizeof items[i].paths[0], "/big");
        CHECK(txnbatch_add(b, &half, 1, on_done, &items[i]) == ZOK);
    }
    turn();
    CHECK(fake_zk_pending(zs) == 3);
    for (int m = 0; m < fake_zk_pending(zs); m++) {
        const struct fake_multi *fm = fake_zk_multi(zs, m);
        CHECK(fm->nops == 1 && fm->lens[0] == sizeof big);
    }
    while (fake_zk_pending(zs))
        fake_zk_ok(zs, 0);
    CHECK(passed(0) && passed(1) && passed(2));

    /* ZK_MULTI_MAX operations at most in one multi */
    static struct zk_txn_op third[ZK_MULTI_MAX / 3 + 1];
    for (int i = 0; i <= ZK_MULTI_MAX / 3; i++)
        third[i] = (struct zk_txn_op){.kind = ZT_CHECK, .path = "/t", .version = -1};
    int ok = 0;
    for (int i = 0; i < 4; i++)
        ok += txnbatch_add(b, third, ZK_MULTI_MAX / 3 + 1, NULL, NULL) == ZOK;
    CHECK(ok == 4);
    turn();
    int total = 0, within = 1;
    for (int m = 0; m < fake_zk_pending(zs); m++) {
        total += fake_zk_multi(zs, m)->nops;
        within &= fake_zk_multi(zs, m)->nops <= ZK_MULTI_MAX;
    }
    CHECK(within && total == 4 * (ZK_MULTI_MAX / 3 + 1) && fake_zk_pending(zs) == 2);
    while (fake_zk_pending(zs))
        fake_zk_ok(zs, 0);
    check_counts(b, 7, 5);

    /* the caller's strings may go away once added: they are copied */
    char path[16] = "/copied";
    nitems = 0;
    struct item *it = &items[nitems++];
    memset(it, 0, sizeof *it);
    it->nops = 1;
    snprintf(it->paths[0], sizeof it->paths[0], "/copied");
    struct zk_txn_op cp = {.kind = ZT_CREATE, .path = path, .data = "d", .len = 1};
    CHECK(txnbatch_add(b, &cp, 1, on_done, it) == ZOK);
    memset(path, 'z', sizeof path - 1);
    turn();
    CHECK(multi_is(zs, 0, (int[]){0, -1}));
    fake_zk_ok(zs, 0);
    CHECK(passed(0));
    finish(b, zs);
}

/* While the one multi allowed is out, 1,124 items wait; its answer sends the first
 * TXN_BATCH_ITEMS_MAX of them in one multi, the next answer the rest: batches grow with
 * the wait instead of a fixed 128. */
static void grows_while_waiting(void)
{
    struct zkstore *zs = fake_zk_new(7);
    struct txnbatch *b = batch_new(zs, 1, 0);
    int first = add(b, "/first", 1);
    turn();
    CHECK(fake_zk_pending(zs) == 1);
    int n = TXN_BATCH_ITEMS_MAX + 100;
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "/w%d", i);
        add(b, name, 1);
    }
    turn();
    CHECK(fake_zk_pending(zs) == 1); /* all wait behind the first */
    fake_zk_ok(zs, 0);
    CHECK(passed(first));
    turn();
    CHECK(fake_zk_pending(zs) == 1);
    CHECK(fake_zk_multi(zs, 0)->nops == TXN_BATCH_ITEMS_MAX && TXN_BATCH_ITEMS_MAX >= 1024);
    fake_zk_ok(zs, 0);
    turn();
    CHECK(fake_zk_pending(zs) == 1 && fake_zk_multi(zs, 0)->nops == 100);
    fake_zk_ok(zs, 0);
    for (int i = 0; i <= n; i++)
        CHECK(passed(i));
    check_counts(b, (unsigned long long)n + 1, 3);
    finish(b, zs);
}

/* At close what waits is sent (the store's close answers it); later adds fail with
 * ZCLOSING and DONE is not called; rolled-back items fail with ZCLOSING. */
static void closing(void)
{
    struct zkstore *zs = fake_zk_new(7);
    struct txnbatch *b = batch_new(zs, 1, 0);
    int a = add(b, "/a", 1);
    turn();
    int c = add(b, "/c", 1), e = add(b, "/e", 1);
    turn();
    CHECK(fake_zk_pending(zs) == 1); /* c, e wait behind a */
    txnbatch_close(b);
    CHECK(fake_zk_pending(zs) == 2 && multi_is(zs, 1, (int[]){c, e, -1}));
    struct zk_txn_op op = {.kind = ZT_CREATE, .path = "/late", .data = "d", .len = 1};
    struct item late = {0};
    CHECK(txnbatch_add(b, &op, 1, on_done, &late) == ZCLOSING);
    fake_zk_ok(zs, 0);
    CHECK(passed(a));
    fake_zk_op_fails(zs, 0, 0, ZNODEEXISTS);
    CHECK(items[c].calls == 1 && items[c].rc == ZNODEEXISTS);
    CHECK(failed_with(e, ZCLOSING)); /* nothing is sent any more */
    turn();
    CHECK(fake_zk_sent(zs) == 2 && late.calls == 0);
    fake_zk_free(zs);
    txnbatch_free(b);
}

/* An item that settles several jobs at once (a claim's write for the acks of three) counts
 * them all: txn.settles counts jobs, not transactions' parts. */
static void counts_jobs(void)
{
    struct zkstore *zs = fake_zk_new(7);
    struct txnbatch *b = batch_new(zs, 4, 0);
    struct zk_txn_op op = {.kind = ZT_SET, .path = "/claim", .data = "d", .len = 1, .version = 0};
    memset(&items[0], 0, sizeof items[0]);
    CHECK(txnbatch_add_jobs(b, &op, 1, 3, on_done, &items[0]) == ZOK);
    nitems = 1;
    add(b, "/a", 1);
    turn();
    fake_zk_ok(zs, 0);
    turn();
    check_counts(b, 4, 1);
    finish(b, zs);
}

int main(void)
{
    base = event_base_new();
    if (!base)
        return 1;
    one_turn_one_multi();
    inflight_limit();
    failing_item_isolated();
    connection_errors();
    session_bound();
    limits();
    grows_while_waiting();
    closing();
    counts_jobs();
    event_base_free(base);
    return check_report("txnbatch");
}
