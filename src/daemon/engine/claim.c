#include "claim.h"

#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claimdata.h"
#include "config.h"
#include "job.h"
#include "layout.h"
#include "log.h"
#include "queue.h"
#include "txnbatch.h"
#include "zkerr.h"
#include "zkstore.h"

struct take {
    struct job *job;
    claim_taken_fn done;
};

struct ack {
    struct ack *next;
    struct job *job;
    claim_written_fn done;
    void *ctx;
};

struct waiter {
    struct waiter *next;
    void (*resume)(void *);
    void *ctx;
};

struct claim {
    struct claims *cs;
    struct claim *next, **prevp;    /* in cs->live */
    char path[LAYOUT_PATH_MAX];
    size_t prefix;                  /* records' paths start after this much of a job's */
    int32_t version;                /* as our last write left it */
    struct job **jobs;              /* its records, in order */
    struct take *takes;             /* while its multi is on its way: who asked */
    uint32_t njobs;
    int active, lost, gone;         /* gone: our write deleted it */
    int in_txn;                     /* calls on their way that name it (an ack write, a read) */
    int busy;                       /* inside a call that may end in claim_forget */
    int unsure;                     /* UNSURE_*: an outcome to look up once connected */
    struct claim *unsure_next;      /* in cs->unsure */
    int writing, write_deletes;     /* a write on its way, and whether it deletes the node */
    struct ack *inflight;           /* the acks it carries (none: a settle's own write) */
    struct job *write_job;          /* ... or the one job a settle's write takes out */
    struct ack *acks, **acks_tail;  /* waiting for the next write */
    struct waiter *waiters, **waiters_tail;
    unsigned char *wbuf;            /* the data of our last setData of it */
    size_t wlen;
    uint32_t dir_asks;              /* cs->dir_asks when it was sent */
    int resync_applied;             /* a read of it again: our write may have been applied */
    int poked;                      /* touched while a write was on its way: read it after */
};

/* What a claim waits to look up in ZooKeeper once the connection is back. */
enum { UNSURE_NONE, UNSURE_CLAIM, UNSURE_WRITE, UNSURE_RESYNC };

struct claims {
    struct zkstore *zs;
    struct txnbatch *locks, *settles;
    const char *root;
    struct event *flush;
    int64_t session;
    uint64_t next_n;                /* the next claim's number in this session */
    struct take *pending;
    size_t npending, cap;
    struct claim *live;
    struct claim *unsure;           /* outcomes to look up once connected */
    int parent_tries;
    uint32_t dir_asks;              /* claims/ directories asked for, ever */
    claim_removed_fn removed;       /* a job someone else wrote out of our claim */
    void *removed_ctx;
    int closing;
    unsigned long long nodes, jobs, writes;
};

static int uncertain(int rc) { return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT; }

static void schedule_flush(struct claims *cs) { event_active(cs->flush, EV_TIMEOUT, 0); }

/* Errors after which the outcome can no longer be learnt by this session. */
static int final_error(int rc)
{
    return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZAUTHFAILED || rc == ZINVALIDSTATE;
}

static void check_unsure(struct claim *cl);
static void resync(struct claim *cl, int maybe_applied);

/* The outcome of CL's claim multi or write is unknown and cannot be read now: looked up
 * when the connection is back (claims_connected). */
static void unsure_later(struct claim *cl, int kind)
{
    cl->unsure = kind;
    cl->unsure_next = cl->cs->unsure;
    cl->cs->unsure = cl;
}

static void claim_free(struct claim *cl)
{
    if (cl->prevp) {
        *cl->prevp = cl->next;
        if (cl->next)
            cl->next->prevp = cl->prevp;
    }
    for (uint32_t i = 0; cl->active && i < cl->njobs; i++) /* (a claim's multi: its takers
                                                             * may be freed by now) */
        if (cl->jobs[i]->claim == cl)
            cl->jobs[i]->claim = NULL;
    free(cl->jobs);
    free(cl->takes);
    free(cl->wbuf);
    free(cl);
}

static void link_live(struct claim *cl)
{
    struct claims *cs = cl->cs;
    cl->next = cs->live;
    if (cs->live)
        cs->live->prevp = &cl->next;
    cs->live = cl;
    cl->prevp = &cs->live;
}

/* A claim gone, or lost and empty, is freed once nothing names it any more. */
static void maybe_free(struct claim *cl)
{
    if ((cl->gone || (cl->lost && cl->njobs == 0)) && !cl->in_txn && !cl->busy &&
        !cl->unsure && !cl->acks && !cl->waiters && !cl->inflight)
        claim_free(cl);
}

/* ---- taking jobs ---- */

int claims_take(struct claims *cs, struct job *job, claim_taken_fn done)
{
    if (cs->closing)
        return ZCLOSING;
    if (cs->session == 0)
        return ZINVALIDSTATE;
    if (cs->npending == cs->cap) {
        size_t cap = cs->cap ? 2 * cs->cap : 64;
        struct take *p = realloc(cs->pending, cap * sizeof *p);
        if (!p)
            return ZSYSTEMERROR;
        cs->pending = p;
        cs->cap = cap;
    }
    cs->pending[cs->npending++] = (struct take){job, done};
    schedule_flush(cs);
    return ZOK;
}

/* A record of JOB for the claim's data. */
static struct claim_record record_of(const struct claim *cl, const struct job *job)
{
    return (struct claim_record){
        .path = job->path + cl->prefix, .path_len = strlen(job->path + cl->prefix),
        .deliveries = job->under_name + 1, .payload = job->payload, .len = job->len};
}

/* The data of CL's jobs but SKIP (NULL) and those of ACKS into cl->wbuf: its length or a
 * CLAIM_E_* code. */
static long write_data(struct claim *cl, const struct ack *acks, const struct job *skip)
{
    struct claim_record recs[CLAIM_JOBS_MAX];
    uint32_t n = 0;
    size_t bytes = 0;
    for (uint32_t i = 0; i < cl->njobs; i++) {
        const struct job *job = cl->jobs[i];
        int out = job == skip;
        for (const struct ack *a = acks; a && !out; a = a->next)
            out = a->job == job;
        if (out)
            continue;
        recs[n] = record_of(cl, job);
        bytes += claimdata_record_size(recs[n].path_len, recs[n].len);
        n++;
    }
    free(cl->wbuf);
    size_t size = claimdata_size(bytes);
    if (!(cl->wbuf = malloc(size)))
        return CLAIM_E_SPACE;
    return claimdata_write(cl->wbuf, size, recs, n);
}

static void on_claim_answer(const struct zk_result *res, void *ctx);

/* Sends the claim multi of CL's jobs: delete each (at the version read), create CL. */
static void send_claim(struct claims *cs, struct claim *cl)
{
    struct zk_txn_op *ops = calloc(cl->njobs + 1, sizeof *ops);
    long len = ops ? write_data(cl, NULL, NULL) : CLAIM_E_SPACE;
    int rc = len < 0 ? ZSYSTEMERROR : ZOK;
    for (uint32_t i = 0; rc == ZOK && i < cl->njobs; i++)
        ops[i] = (struct zk_txn_op){.kind = ZT_DELETE, .path = cl->jobs[i]->path,
                                    .version = cl->jobs[i]->zversion};
    if (rc == ZOK) {
        ops[cl->njobs] = (struct zk_txn_op){.kind = ZT_CREATE, .path = cl->path,
                                            .data = cl->wbuf, .len = (size_t)len};
        rc = txnbatch_add(cs->locks, ops, (int)cl->njobs + 1, on_claim_answer, cl);
    }
    free(ops);
    if (rc == ZOK)
        return;
    log_error("claims: cannot send the claim %s: %s", cl->path, zk_strerror(rc));
    for (uint32_t i = 0; i < cl->njobs; i++)
        cl->takes[i].done(cl->takes[i].job, rc);
    claim_free(cl);
}

/* A new claim of Q's jobs in TAKES (up to N of them, its bounds permitting): how many it
 * took, 0 when none could be. */
static size_t new_claim(struct claims *cs, const struct dqueue *q, struct take *takes, size_t n)
{
    char name[LAYOUT_CLAIM_NAME_MAX], dir[LAYOUT_PATH_MAX];
    struct claim *cl = calloc(1, sizeof *cl);
    size_t max = n < CLAIM_JOBS_MAX ? n : CLAIM_JOBS_MAX, bytes = 0, k = 0;
    if (!cl || !(cl->jobs = calloc(max, sizeof *cl->jobs)) ||
        !(cl->takes = calloc(max, sizeof *cl->takes)) ||
        layout_queue_path(dir, sizeof dir, cs->root, q->cfg->name, NULL, NULL) != 0 ||
        layout_claim_name(name, sizeof name, (uint64_t)cs->session, cs->next_n) != 0 ||
        layout_queue_path(cl->path, sizeof cl->path, cs->root, q->cfg->name, LAYOUT_CLAIMS,
                          name) != 0) {
        if (cl)
            claim_free(cl);
        return 0;
    }
    cs->next_n++;
    cl->cs = cs;
    cl->acks_tail = &cl->acks;
    cl->waiters_tail = &cl->waiters;
    cl->prefix = strlen(dir) + 1;
    cl->dir_asks = cs->dir_asks;
    for (; k < max; k++) {
        const struct job *job = takes[k].job;
        bytes += claimdata_record_size(strlen(job->path + cl->prefix), job->len);
        if (k > 0 && claimdata_size(bytes) > CLAIM_BYTES_MAX)
            break;
        cl->jobs[k] = takes[k].job;
        cl->takes[k] = takes[k];
    }
    cl->njobs = (uint32_t)k;
    send_claim(cs, cl);
    return k;
}

/* A take and its place in the loop turn's order: sorting by (queue, place) groups the
 * takes by queue and keeps each queue's in the order they came. */
struct placed_take {
    struct take t;
    size_t place;
};

static int by_queue_then_place(const void *a, const void *b)
{
    const struct placed_take *x = a, *y = b;
    uintptr_t qx = (uintptr_t)x->t.job->q, qy = (uintptr_t)y->t.job->q;
    if (qx != qy)
        return qx < qy ? -1 : 1;
    return x->place < y->place ? -1 : x->place > y->place;
}

/* ALL's N takes grouped by queue, each queue's in order (O(n log n): a turn may hold
 * thousands of takes of many queues); 0, or -1 when out of memory (ALL as it was). */
static int group_by_queue(struct take *all, size_t n)
{
    if (n < 2)
        return 0;
    struct placed_take *p = malloc(n * sizeof *p);
    if (!p)
        return -1;
    for (size_t i = 0; i < n; i++)
        p[i] = (struct placed_take){.t = all[i], .place = i};
    qsort(p, n, sizeof *p, by_queue_then_place);
    for (size_t i = 0; i < n; i++)
        all[i] = p[i].t;
    free(p);
    return 0;
}

/* The takes of one loop turn, a claim per queue (or more, past a claim's bounds). */
static void flush_takes(struct claims *cs)
{
    struct take *all = cs->pending;
    size_t n = cs->npending;
    cs->pending = NULL;
    cs->npending = cs->cap = 0;
    int rc = cs->session == 0 ? ZSESSIONEXPIRED /* taken before the session ended */
             : group_by_queue(all, n) != 0 ? ZSYSTEMERROR : ZOK;
    for (size_t i = 0; rc != ZOK && i < n; i++)
        all[i].done(all[i].job, rc);
    for (size_t first = 0; rc == ZOK && first < n;) {
        const struct dqueue *q = all[first].job->q;
        size_t end = first + 1;
        while (end < n && all[end].job->q == q)
            end++;
        while (first < end) {
            size_t k = new_claim(cs, q, all + first, end - first);
            if (k == 0) {
                for (; first < end; first++)
                    all[first].done(all[first].job, ZSYSTEMERROR);
                break;
            }
            first += k;
        }
    }
    free(all);
}

/* Takes CL's jobs again in a claim of their own (not applied; or its directory made). */
static void take_again(struct claims *cs, struct claim *cl, uint32_t except)
{
    for (uint32_t i = 0; i < cl->njobs; i++)
        if (i != except && claims_take(cs, cl->takes[i].job, cl->takes[i].done) != ZOK)
            cl->takes[i].done(cl->takes[i].job, ZSYSTEMERROR);
}

static void claim_applied(struct claims *cs, struct claim *cl)
{
    cl->active = 1;
    cl->version = 0;
    cs->nodes++;
    cs->jobs += cl->njobs;
    cs->parent_tries = 0;
    link_live(cl);
    for (uint32_t i = 0; i < cl->njobs; i++)
        cl->jobs[i]->claim = cl;
    struct take *takes = cl->takes;
    uint32_t n = cl->njobs;
    cl->takes = NULL;
    for (uint32_t i = 0; i < n; i++)
        takes[i].done(takes[i].job, ZOK);
    free(takes);
}

/* The claim multi's answer was lost: the claim node says whether it was applied; when it
 * cannot be read now, it is read once connected (the jobs stay LOCKING meanwhile). */
static void on_claim_checked(const struct zk_result *res, void *ctx)
{
    struct claim *cl = ctx;
    struct claims *cs = cl->cs;
    if (res->rc == ZOK) {
        claim_applied(cs, cl);
        if (res->stat.version != 0) /* written by a forced cancel since: read it */
            resync(cl, 0);
        return;
    }
    if (res->rc != ZNONODE && !final_error(res->rc) && cs->session) {
        unsure_later(cl, UNSURE_CLAIM);
        return;
    }
    if (res->rc == ZNONODE)
        take_again(cs, cl, UINT32_MAX);
    else
        for (uint32_t i = 0; i < cl->njobs; i++)
            cl->takes[i].done(cl->takes[i].job, res->rc);
    claim_free(cl);
}

static void on_dir_made(const struct zk_result *res, void *ctx)
{
    struct claim *cl = ctx;
    if (res->rc == ZOK) {
        cl->cs->parent_tries = 0;
        take_again(cl->cs, cl, UINT32_MAX);
    } else { /* not the jobs' NoNode: they are still in their buckets, tried again later */
        int rc = res->rc == ZNONODE ? ZAPIERROR : res->rc;
        log_warn("claims: cannot make the directory of %s: %s", cl->path, zk_strerror(res->rc));
        for (uint32_t i = 0; i < cl->njobs; i++)
            cl->takes[i].done(cl->takes[i].job, rc);
    }
    claim_free(cl);
}

/* The claim's create found no claims/ directory (a new queue): made once, then again. */
static int dir_missing(struct claims *cs, struct claim *cl)
{
    /* Sent before a directory was asked for: its NoNode says nothing of that ask (every
     * claim on its way fails alike), so it is no try of its own. It waits for the
     * directory, its creates answered after the ask's: the claims go again in order. */
    if (cl->dir_asks != cs->dir_asks)
        return zkstore_create_parents(cs->zs, cl->path, on_dir_made, cl) == ZOK;
    if (cs->parent_tries >= 3)
        return 0;
    cs->dir_asks++;
    int rc = zkstore_parents_missing(cs->zs, cl->path, &cs->parent_tries, on_dir_made, cl);
    if (rc == ZK_PARENTS_RESEND) {
        take_again(cs, cl, UINT32_MAX);
        claim_free(cl);
        return 1;
    }
    return rc == ZK_PARENTS_ASKED;
}

static void on_claim_answer(const struct zk_result *res, void *ctx)
{
    struct claim *cl = ctx;
    struct claims *cs = cl->cs;
    int bad = zk_failed_op(res);
    if (res->rc == ZOK) {
        claim_applied(cs, cl);
        return;
    }
    if (uncertain(res->rc)) {
        if (zkstore_exists(cs->zs, cl->path, 0, on_claim_checked, cl) != ZOK)
            unsure_later(cl, UNSURE_CLAIM);
        return;
    }
    if (bad == (int)cl->njobs && res->rc == ZNONODE && dir_missing(cs, cl))
        return;
    if (bad >= 0 && bad < (int)cl->njobs) { /* that job alone: the others go again */
        cl->takes[bad].done(cl->takes[bad].job, res->rc);
        take_again(cs, cl, (uint32_t)bad);
    } else {
        /* the claim's own create refused: the jobs are still in their buckets */
        int rc = bad == (int)cl->njobs && res->rc == ZNONODE ? ZAPIERROR : res->rc;
        if (bad == (int)cl->njobs)
            log_warn("claims: creating %s failed: %s", cl->path, zk_strerror(res->rc));
        for (uint32_t i = 0; i < cl->njobs; i++)
            cl->takes[i].done(cl->takes[i].job, rc);
    }
    claim_free(cl);
}

/* ---- writing a claim as its jobs settle ---- */

static void remove_job(struct claim *cl, const struct job *job)
{
    for (uint32_t i = 0; i < cl->njobs; i++) {
        if (cl->jobs[i] == job) {
            memmove(&cl->jobs[i], &cl->jobs[i + 1], (cl->njobs - i - 1) * sizeof *cl->jobs);
            cl->njobs--;
            return;
        }
    }
}

/* The write on its way was applied: its jobs are out, the node one version on or gone. */
static void write_applied(struct claim *cl)
{
    for (struct ack *a = cl->inflight; a; a = a->next) {
        remove_job(cl, a->job);
        a->job->claim = NULL;
    }
    if (cl->write_job) {
        remove_job(cl, cl->write_job);
        cl->write_job->claim = NULL;
    }
    cl->version++;
    cl->cs->writes++;
}

/* The claim is not ours any more (recovered, or deleted by hand): every job of it is lost
 * to this daemon, and every writer waiting is told so. */
static void claim_lost(struct claim *cl)
{
    if (!cl->lost)
        log_warn("claims: %s changed under this daemon (recovered elsewhere?): its %u jobs are "
                 "no longer held here", cl->path, cl->njobs);
    cl->lost = 1;
    struct ack *acks = cl->acks;
    struct waiter *waiters = cl->waiters;
    cl->acks = NULL;
    cl->acks_tail = &cl->acks;
    cl->waiters = NULL;
    cl->waiters_tail = &cl->waiters;
    cl->busy++;
    while (acks) {
        struct ack *a = acks;
        acks = a->next;
        a->done(a->ctx, ZNONODE);
        free(a);
    }
    while (waiters) {
        struct waiter *w = waiters;
        waiters = w->next;
        w->resume(w->ctx); /* claim_write_op answers -1 now */
        free(w);
    }
    cl->busy--;
}

/* The write ended, APPLIED or not: its acks are told RC; the node freed once it is gone
 * and idle. */
static void write_ended(struct claim *cl, int rc, int applied)
{
    struct ack *done = cl->inflight;
    cl->inflight = NULL;
    cl->write_job = NULL;
    cl->writing = 0;
    cl->gone |= applied && cl->write_deletes;
    cl->busy++;
    while (done) {
        struct ack *a = done;
        done = a->next;
        a->done(a->ctx, rc);
        free(a);
    }
    cl->busy--;
    if (cl->poked && !cl->lost && !cl->gone && cl->cs->session)
        resync(cl, 0); /* touched while the write was on its way */
    else if (cl->acks || cl->waiters)
        schedule_flush(cl->cs);
    maybe_free(cl);
}

static void on_write_checked(const struct zk_result *res, void *ctx);

static void on_ack_written(const struct zk_result *res, void *ctx)
{
    struct claim *cl = ctx;
    int rc = res->rc;
    cl->in_txn--;
    if (uncertain(rc) && !cl->lost) { /* the claim's version says, now or once connected */
        check_unsure(cl);
        return;
    }
    if (rc == ZOK)
        write_applied(cl);
    else if ((rc == ZBADVERSION || rc == ZNONODE) && !cl->lost && cl->cs->session) {
        resync(cl, 0); /* written by someone else: read it again */
        return;
    } else if (rc == ZBADVERSION || rc == ZNONODE)
        claim_lost(cl);
    write_ended(cl, cl->lost && rc == ZOK ? ZNONODE : rc, rc == ZOK);
}

/* What a write whose answer was lost did: ZOK applied, ZOPERATIONTIMEOUT not applied,
 * ZNONODE the claim gone, ZBADVERSION written by someone else too (read it again); from
 * the node's version now. */
static int judge_write(const struct claim *cl, const struct zk_result *res)
{
    if (res->rc == ZNONODE)
        return cl->write_deletes ? ZOK : ZNONODE;
    if (res->rc != ZOK)
        return res->rc;
    if (res->stat.version == cl->version)
        return ZOPERATIONTIMEOUT;
    if (res->stat.version == cl->version + 1 && !cl->write_deletes && cl->wbuf &&
        res->datalen >= 0 && (size_t)res->datalen == cl->wlen &&
        memcmp(res->data, cl->wbuf, cl->wlen) == 0)
        return ZOK; /* our data: a forced cancel's write would have another */
    return ZBADVERSION;
}

static void on_write_checked(const struct zk_result *res, void *ctx)
{
    struct claim *cl = ctx;
    int rc = cl->lost ? (cl->cs->session ? ZNONODE : ZSESSIONEXPIRED) : judge_write(cl, res);
    cl->in_txn--;
    if (rc == ZBADVERSION && !cl->cs->session)
        rc = ZNONODE;
    if ((rc == ZBADVERSION || rc == ZNONODE) && !cl->lost && cl->cs->session) {
        resync(cl, 1); /* someone else wrote it too: what is in it says */
        return;
    }
    if (rc != ZOK && rc != ZOPERATIONTIMEOUT && rc != ZNONODE && !final_error(rc)) {
        unsure_later(cl, UNSURE_WRITE); /* still unknown: looked up once connected */
        return;
    }
    if (rc == ZOK) {
        write_applied(cl);
        write_ended(cl, ZOK, 1);
        return;
    }
    if (rc == ZOPERATIONTIMEOUT) { /* not applied: the acks wait for the next write */
        struct ack **tail = &cl->inflight;
        while (*tail)
            tail = &(*tail)->next;
        *tail = cl->acks;
        if (!cl->acks)
            cl->acks_tail = tail;
        cl->acks = cl->inflight;
        cl->inflight = NULL;
        write_ended(cl, ZOK, 0);
        return;
    }
    if (rc == ZNONODE)
        claim_lost(cl);
    write_ended(cl, rc, 0);
}

/* Reads the claim node to learn what a claim multi or a write whose answer was lost did;
 * later, when it cannot be sent now. */
static void check_unsure(struct claim *cl)
{
    struct claims *cs = cl->cs;
    int claim = !cl->active;
    int rc = claim ? zkstore_exists(cs->zs, cl->path, 0, on_claim_checked, cl)
                   : zkstore_get(cs->zs, cl->path, on_write_checked, cl); /* its data says */
    if (rc != ZOK) {
        unsure_later(cl, claim ? UNSURE_CLAIM : UNSURE_WRITE);
        return;
    }
    cl->in_txn += !claim;
}

/* ---- a claim written by someone else while this session lives ----
 * Only this daemon writes its claims, but for one thing: CANCEL force=1 through another
 * daemon (or deferctl cancel --force) writes the claim without the cancelled job at the
 * version it read, then touches this session's node (claims_poked). A write of ours that
 * then fails on the version, a lost write judged by a version that is neither ours nor the
 * one before, and the touch, read the claim again: the jobs in it stay ours (acks waiting
 * are written again at its version), the others were cancelled (the removed callback;
 * their acks are told ZNONODE, or ZOK when a lost write of ours may have taken them out).
 * A recovery rewrites only the claims of sessions that are gone: while ours lives, nothing
 * else changes them. */

static int has_record(const struct claim *cl, const struct job *job,
                      const struct claim_record *recs, uint32_t n)
{
    return claimdata_find(recs, n, job->path + cl->prefix) >= 0;
}

/* The acks of LIST whose jobs the claim still holds are kept (in order, into *KEEP); the
 * others are told RC (their settles free the jobs): ZNONODE, they were cancelled (gone,
 * so that their consumers are told so), or ZOK, a lost write of ours took them out. */
static void sort_acks(struct claim *cl, struct ack *list, struct ack ***keep,
                      const struct claim_record *recs, uint32_t n, int rc)
{
    for (struct ack *a = list, *next; a; a = next) {
        next = a->next;
        a->next = NULL;
        if (has_record(cl, a->job, recs, n)) {
            **keep = a;
            *keep = &a->next;
            continue;
        }
        a->job->gone |= rc == ZNONODE;
        a->done(a->ctx, rc);
        free(a);
    }
}

/* Jobs of CL without a record in RECS leave it and are handed to the removed callback. */
static void drop_removed(struct claim *cl, const struct claim_record *recs, uint32_t n)
{
    struct claims *cs = cl->cs;
    struct job **out = cl->njobs ? malloc(cl->njobs * sizeof *out) : NULL;
    uint32_t nout = 0;
    for (uint32_t i = 0; i < cl->njobs;) {
        struct job *job = cl->jobs[i];
        if (has_record(cl, job, recs, n)) {
            i++;
            continue;
        }
        remove_job(cl, job);
        job->claim = NULL;
        if (out)
            out[nout++] = job;
    }
    for (uint32_t i = 0; i < nout && cs->removed; i++)
        cs->removed(out[i], cs->removed_ctx);
    free(out);
}

/* RES: the claim as read again (its data and version, or ZNONODE). 0, or -1 when its data
 * is not a claim (then it is lost to us, as before). */
static int reconcile(struct claim *cl, const struct zk_result *res, int maybe_applied)
{
    static struct claim_record recs[CLAIM_JOBS_MAX]; /* the loop's thread alone */
    uint32_t n = 0;
    if (res->rc == ZOK && (res->datalen <= 0 ||
                           claimdata_read(res->data, (size_t)res->datalen, recs, CLAIM_JOBS_MAX,
                                          &n, NULL, 0) != CLAIM_OK))
        return -1;
    struct ack *inflight = cl->inflight, *queued = cl->acks, *keep = NULL, **tail = &keep;
    cl->inflight = NULL;
    cl->acks = NULL;
    cl->busy++;
    if (res->rc == ZOK)
        cl->version = res->stat.version;
    else
        cl->gone = 1; /* deleted with its last job: nothing of it to write */
    sort_acks(cl, inflight, &tail, recs, n, maybe_applied ? ZOK : ZNONODE);
    sort_acks(cl, queued, &tail, recs, n, ZNONODE);
    cl->acks = keep;
    cl->acks_tail = keep ? tail : &cl->acks;
    cl->write_job = NULL;
    cl->writing = 0;
    log_info("claims: %s was written by someone else (a forced cancel): read again, %u of its "
             "jobs still held here", cl->path, n);
    drop_removed(cl, recs, n);
    cl->busy--;
    if (cl->acks || cl->waiters)
        schedule_flush(cl->cs);
    return 0;
}

static void on_resynced(const struct zk_result *res, void *ctx)
{
    struct claim *cl = ctx;
    int rc = res->rc;
    cl->in_txn--;
    if (cl->lost) { /* the session went meanwhile */
        write_ended(cl, ZSESSIONEXPIRED, 0);
        return;
    }
    if (uncertain(rc)) {
        unsure_later(cl, UNSURE_RESYNC); /* read again once connected */
        return;
    }
    if (rc != ZOK && rc != ZNONODE) {
        claim_lost(cl);
        write_ended(cl, rc, 0);
        return;
    }
    if (reconcile(cl, res, cl->resync_applied) != 0) {
        claim_lost(cl);
        write_ended(cl, ZNONODE, 0);
        return;
    }
    maybe_free(cl);
}

static void resync_send(struct claim *cl)
{
    if (zkstore_get(cl->cs->zs, cl->path, on_resynced, cl) != ZOK) {
        unsure_later(cl, UNSURE_RESYNC);
        return;
    }
    cl->in_txn++;
}

/* Reads CL again; its write slot stays taken (acks and settles wait) until it is read. */
static void resync(struct claim *cl, int maybe_applied)
{
    cl->poked = 0;
    cl->writing = 1;
    cl->resync_applied = maybe_applied;
    resync_send(cl);
}

void claims_poked(struct claims *cs)
{
    for (struct claim *cl = cs->live; cl; cl = cl->next) {
        if (!cl->active || cl->lost || cl->gone)
            continue;
        if (cl->writing || cl->unsure)
            cl->poked = 1; /* read once that write has ended (write_ended) */
        else
            resync(cl, 0);
    }
}

void claims_on_removed(struct claims *cs, claim_removed_fn fn, void *ctx)
{
    cs->removed = fn;
    cs->removed_ctx = ctx;
}

/* The claim's write without the jobs of ACKS (and SKIP): OP filled, cl->writing set. */
static int fill_write(struct claim *cl, struct ack *acks, const struct job *skip,
                      struct zk_txn_op *op)
{
    uint32_t out = skip ? 1 : 0;
    for (struct ack *a = acks; a; a = a->next)
        out++;
    cl->write_deletes = out >= cl->njobs;
    if (cl->write_deletes) {
        *op = (struct zk_txn_op){.kind = ZT_DELETE, .path = cl->path, .version = cl->version};
    } else {
        long len = write_data(cl, acks, skip);
        if (len < 0)
            return -1;
        cl->wlen = (size_t)len;
        *op = (struct zk_txn_op){.kind = ZT_SET, .path = cl->path, .data = cl->wbuf,
                                 .len = (size_t)len, .version = cl->version};
    }
    cl->writing = 1;
    return 0;
}

static void send_acks(struct claim *cl)
{
    struct zk_txn_op op;
    struct ack *acks = cl->acks;
    cl->acks = NULL;
    cl->acks_tail = &cl->acks;
    cl->inflight = acks;
    unsigned n = 0;
    for (const struct ack *a = acks; a; a = a->next)
        n++;
    int rc = fill_write(cl, acks, NULL, &op) == 0 ? ZOK : ZSYSTEMERROR;
    if (rc == ZOK) /* STATS' txn.settles counts the jobs settled */
        rc = txnbatch_add_jobs(cl->cs->settles, &op, 1, n, on_ack_written, cl);
    if (rc == ZOK)
        cl->in_txn++;
    else
        write_ended(cl, rc, 0);
}

static void flush_writes(struct claims *cs)
{
    struct claim *cl = cs->live, *next;
    for (; cl; cl = next) {
        next = cl->next;
        if (cl->writing || cl->lost)
            continue;
        if (cl->acks) {
            send_acks(cl);
        } else if (cl->waiters) {
            struct waiter *w = cl->waiters;
            if (!(cl->waiters = w->next))
                cl->waiters_tail = &cl->waiters;
            w->resume(w->ctx); /* it asks claim_write_op again, and is let through */
            free(w);
            maybe_free(cl);
        }
    }
}

/* While every claim multi allowed is on its way, takes wait for the next answer and go
 * then as fewer, larger claims (about one operation a job; nothing waits at low load);
 * at a full claim's worth, or at exit, they go at once. */
static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct claims *cs = arg;
    (void)what;
    int hold = fd != -2 && txnbatch_full(cs->locks) && cs->npending < CLAIM_JOBS_MAX &&
               cs->session != 0;
    if (cs->npending && !hold)
        flush_takes(cs);
    flush_writes(cs);
}

static void on_lock_answered(void *arg)
{
    struct claims *cs = arg;
    if (cs->npending)
        schedule_flush(cs);
}

int claim_ack(struct claims *cs, struct job *job, claim_written_fn done, void *ctx)
{
    struct claim *cl = job->claim;
    struct ack *a;
    if (cs->closing)
        return ZCLOSING;
    if (!cl || cl->lost)
        return ZNONODE;
    if (!(a = calloc(1, sizeof *a)))
        return ZSYSTEMERROR;
    *a = (struct ack){.job = job, .done = done, .ctx = ctx};
    *cl->acks_tail = a;
    cl->acks_tail = &a->next;
    schedule_flush(cs);
    return ZOK;
}

int claim_write_op(struct claims *cs, struct job *job, struct zk_txn_op *op,
                   void (*resume)(void *), void *ctx)
{
    struct claim *cl = job->claim;
    if (!cl || cl->lost || cs->closing)
        return -1;
    if (cl->writing || cl->acks) {
        struct waiter *w = calloc(1, sizeof *w);
        if (!w)
            return -1;
        *w = (struct waiter){.resume = resume, .ctx = ctx};
        *cl->waiters_tail = w;
        cl->waiters_tail = &w->next;
        schedule_flush(cs);
        return 0;
    }
    if (fill_write(cl, NULL, job, op) != 0)
        return -1;
    cl->write_job = job;
    return 1;
}

void claim_write_answered(struct claims *cs, struct job *job, int rc, int claim_op_failed)
{
    struct claim *cl = job->claim;
    if (!cl || cl->write_job != job)
        return;
    if (rc == ZOK) {
        write_applied(cl);
    } else if (claim_op_failed && (rc == ZBADVERSION || rc == ZNONODE) && cs->session) {
        cl->write_job = NULL;
        resync(cl, 0); /* written by someone else: the settle asks again (claim_resyncing) */
        return;
    } else if (claim_op_failed && (rc == ZBADVERSION || rc == ZNONODE)) {
        claim_lost(cl);
    }
    write_ended(cl, rc, rc == ZOK);
}

int claim_resyncing(const struct job *job)
{
    return job->claim && job->claim->writing && !job->claim->write_job && !job->claim->lost;
}

struct write_check {
    struct claim *cl;
    struct job *job;
    claim_written_fn done;
    void *ctx;
};

/* A settle's write whose answer was lost, when someone else wrote the claim too: the job's
 * record says (there: not applied, sent again at the version read; gone: applied, or
 * cancelled meanwhile: out either way). */
static void on_settle_read(const struct zk_result *res, void *ctx)
{
    static struct claim_record recs[CLAIM_JOBS_MAX]; /* the loop's thread alone */
    struct write_check *wc = ctx;
    struct claim *cl = wc->cl;
    claim_written_fn done = wc->done;
    void *dctx = wc->ctx;
    const struct job *job = wc->job;
    uint32_t n = 0;
    int rc = res->rc;
    free(wc);
    cl->in_txn--;
    cl->busy++;
    if (cl->lost || cl->write_job != job) {
        rc = ZNONODE;
    } else if (rc == ZOK || rc == ZNONODE) {
        int present = rc == ZOK && res->datalen > 0 &&
                      claimdata_read(res->data, (size_t)res->datalen, recs, CLAIM_JOBS_MAX, &n,
                                     NULL, 0) == CLAIM_OK &&
                      has_record(cl, job, recs, n);
        rc = present ? ZOPERATIONTIMEOUT : ZOK;
        if (reconcile(cl, res, 0) != 0) {
            claim_lost(cl);
            write_ended(cl, ZNONODE, 0);
            rc = ZNONODE;
        }
    }
    done(dctx, rc);
    cl->busy--;
    maybe_free(cl);
}

static void on_settle_checked(const struct zk_result *res, void *ctx)
{
    struct write_check *wc = ctx;
    struct claim *cl = wc->cl;
    int rc = cl->lost || cl->write_job != wc->job ? ZNONODE : judge_write(cl, res);
    if (rc == ZBADVERSION && cl->cs->session &&
        zkstore_get(cl->cs->zs, cl->path, on_settle_read, wc) == ZOK)
        return; /* its in_txn carries over to the read */
    if (rc == ZBADVERSION)
        rc = ZNONODE;
    claim_written_fn done = wc->done;
    void *dctx = wc->ctx;
    free(wc);
    cl->in_txn--;
    cl->busy++;
    if (rc == ZOK)
        write_applied(cl);
    else if (rc == ZNONODE)
        claim_lost(cl);
    if (rc == ZOK || rc == ZNONODE || rc == ZOPERATIONTIMEOUT)
        write_ended(cl, rc, rc == ZOK); /* else still unknown: the write stays on its way */
    done(dctx, rc);
    cl->busy--;
    maybe_free(cl);
}

int claim_write_check(struct claims *cs, struct job *job, claim_written_fn done, void *ctx)
{
    struct claim *cl = job->claim;
    struct write_check *wc = cl ? malloc(sizeof *wc) : NULL;
    if (!wc)
        return cl ? ZSYSTEMERROR : ZNONODE;
    *wc = (struct write_check){cl, job, done, ctx};
    int rc = zkstore_get(cs->zs, cl->path, on_settle_checked, wc);
    if (rc != ZOK)
        free(wc);
    else
        cl->in_txn++;
    return rc;
}

const char *claim_path_of(const struct job *job) { return job->claim ? job->claim->path : NULL; }

void claim_forget(struct job *job)
{
    struct claim *cl = job->claim;
    if (!cl)
        return;
    remove_job(cl, job);
    job->claim = NULL;
    if (cl->write_job == job)
        cl->write_job = NULL;
    maybe_free(cl);
}

/* ---- the session ---- */

void claims_session(struct claims *cs, int64_t session)
{
    if (session != cs->session)
        cs->next_n = 0;
    cs->session = session;
    if (session && cs->npending)
        schedule_flush(cs);
}

int64_t claims_session_id(const struct claims *cs) { return cs->session; }

void claims_connected(struct claims *cs)
{
    struct claim *cl = cs->unsure;
    cs->unsure = NULL;
    while (cl) {
        struct claim *next = cl->unsure_next;
        int kind = cl->unsure;
        cl->unsure = UNSURE_NONE;
        if (kind == UNSURE_RESYNC)
            resync_send(cl);
        else
            check_unsure(cl);
        cl = next;
    }
}

void claims_session_lost(struct claims *cs)
{
    cs->session = 0;
    struct claim *cl = cs->unsure, *next;
    cs->unsure = NULL;
    for (; cl; cl = next) { /* what they did is the next session's recovery's to find */
        next = cl->unsure_next;
        cl->unsure = UNSURE_NONE;
        if (cl->active) {
            write_ended(cl, ZSESSIONEXPIRED, 0);
            continue;
        }
        for (uint32_t i = 0; i < cl->njobs; i++)
            cl->takes[i].done(cl->takes[i].job, ZSESSIONEXPIRED);
        claim_free(cl);
    }
    cl = cs->live;
    for (; cl; cl = next) {
        next = cl->next;
        for (uint32_t i = 0; i < cl->njobs; i++)
            cl->jobs[i]->claim = NULL;
        cl->njobs = 0;
        cl->write_job = NULL;
        claim_lost(cl);
        maybe_free(cl);
    }
}

/* ---- life ---- */

void claims_close(struct claims *cs)
{
    on_flush(-2, 0, cs); /* what waits goes out before the batches close */
    cs->closing = 1;
    for (struct claim *cl = cs->live, *next; cl; cl = next) {
        next = cl->next;
        cl->busy++;
        while (cl->waiters) { /* told the claim is lost to them: recovered after us */
            struct waiter *w = cl->waiters;
            if (!(cl->waiters = w->next))
                cl->waiters_tail = &cl->waiters;
            w->resume(w->ctx);
            free(w);
        }
        cl->busy--;
    }
}

struct claims *claims_new(struct event_base *base, struct zkstore *zs, struct txnbatch *locks,
                          struct txnbatch *settles, const char *root)
{
    struct claims *cs = calloc(1, sizeof *cs);
    if (!cs)
        return NULL;
    *cs = (struct claims){.zs = zs, .locks = locks, .settles = settles, .root = root};
    if (!(cs->flush = event_new(base, -1, 0, on_flush, cs))) {
        free(cs);
        return NULL;
    }
    txnbatch_on_answer(locks, on_lock_answered, cs);
    return cs;
}

void claims_free(struct claims *cs)
{
    if (!cs)
        return;
    while (cs->unsure) {
        struct claim *cl = cs->unsure;
        cs->unsure = cl->unsure_next;
        if (!cl->active)
            claim_free(cl);
    }
    while (cs->live) { /* its jobs are freed by the dispatcher, without claim_forget */
        struct claim *cl = cs->live;
        cl->njobs = 0;
        for (struct ack *a = cl->acks, *n; a; a = n) { /* none after claims_close */
            n = a->next;
            free(a);
        }
        for (struct waiter *w = cl->waiters, *n; w; w = n) {
            n = w->next;
            free(w);
        }
        for (struct ack *a = cl->inflight, *n; a; a = n) { /* a write left unknown */
            n = a->next;
            free(a);
        }
        claim_free(cl);
    }
    free(cs->pending);
    event_free(cs->flush);
    free(cs);
}

void claims_counts(const struct claims *cs, unsigned long long *nodes, unsigned long long *jobs,
                   unsigned long long *writes)
{
    *nodes = cs->nodes;
    *jobs = cs->jobs;
    *writes = cs->writes;
}
