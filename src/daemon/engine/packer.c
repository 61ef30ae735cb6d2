#include "packer.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buckets.h"
#include "config.h"
#include "daemon.h"
#include "put_env.h"
#include "strhash.h"
#include "uid.h"
#include "failpoint.h"
#include "layout.h"
#include "log.h"
#include "metrics.h"
#include "pack.h"
#include "queue.h"
#include "reply.h"
#include "tokens.h"
#include "txnbatch.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

/* A job is packed only when its window starts this much beyond pack_after: the unpacking
 * of a window must not have begun already. */
#define PACK_MARGIN_MS 2000
#define PARENT_TRIES_MAX 3
/* A window written again after a write that changed nothing waits 1, 2, 4... ms from its
 * second round, at most this long: a conflict that repeats (two daemons rewriting one open
 * pack) costs a little time, never a spin. */
#define PACK_BACKOFF_MAX_MS 100

struct far_put {
    struct far_put *next;
    struct job_name jn;
    unsigned char *payload;
    size_t len, size;           /* payload; its record in a pack */
    struct reply *r;
    char token_path[LAYOUT_PATH_MAX]; /* "" or its put token (PUT idem=) */
    struct far_put *twins;      /* puts with the same token that came while it waited:
                                 * not written, answered as it is */
    int rounds;                 /* writes of it that changed nothing (retry()) */
    char token_data[LAYOUT_ID_MAX + 1]; /* "<pack>/<name>", as the write names the pack */
};

struct wkey {
    size_t queue;               /* dqueue index */
    uint64_t start;
};

/* One window of one queue that this daemon packs puts into. */
struct window {
    UT_hash_handle hh;
    struct wkey key;
    struct packer *pk;
    struct dqueue *q;
    struct event *backoff;      /* NULL, or the wait before its next write (retry()) */
    uint64_t width;
    struct far_put *waiting, **tail;
    int busy;                   /* a write of it is on its way */
    int ready;                  /* in the packer's ready list */
    struct window *next_ready;
    /* the open pack: ours, still small enough to rewrite; version -1 when none */
    char name[LAYOUT_PACK_MAX + 1];
    char path[LAYOUT_PATH_MAX];
    int version;
    unsigned char *data;
    size_t len;
};

struct write {
    struct packer *pk;
    struct window *w;
    struct far_put *jobs;
    int create;                 /* a new pack; else a rewrite of the open one */
    int tries;                  /* its directories made after a NoNode */
    struct far_put **tokened;   /* the operations after the pack's: these jobs' tokens */
    int ntokened;
    struct token_reads token_reads; /* after a write failed on a taken token */
    char name[LAYOUT_PACK_MAX + 1];
    char path[LAYOUT_PATH_MAX];
    unsigned char *data;
    size_t len;
};

struct packer {
    const struct put_env *env;
    struct window *windows;
    struct window *ready_head, *ready_tail;
    int writes;
    size_t open;
    struct event *flush;
    struct packer_counts counts;
};

static void on_flush(evutil_socket_t fd, short what, void *arg);
static void drop_open(struct window *w);

struct packer *packer_new(const struct put_env *env)
{
    struct packer *pk = calloc(1, sizeof *pk);
    if (!pk)
        return NULL;
    pk->env = env;
    if (!(pk->flush = event_new(env->d->base, -1, 0, on_flush, pk))) {
        free(pk);
        return NULL;
    }
    return pk;
}

static void free_puts(struct far_put *fp)
{
    for (struct far_put *next; fp; fp = next) {
        next = fp->next;
        free_puts(fp->twins);
        free(fp->payload);
        free(fp);
    }
}

/* A put's end other than ZooKeeper's answer: its fields and its text. */
struct put_end {
    struct refusal f;
    const char *text;
};

/* Answers FP and its twins: OK with ID, or the error RC (END instead, if not NULL). */
static void answer_put(struct packer *pk, struct far_put *fp, const char *id, int rc,
                       const struct put_end *end)
{
    struct refusal byrc = zk_put_refusal(rc);
    for (struct far_put *t = fp; t; t = t == fp ? fp->twins : t->next) {
        if (t != fp)
            pk->open--;
        if (id)
            reply_ok(t->r, id);
        else if (end)
            reply_refuse(t->r, PE_UNAVAILABLE, &end->f, "%s", end->text);
        else
            reply_refuse(t->r, PE_UNAVAILABLE, &byrc, byrc.stored == RS_MAYBE
                         ? ZK_PUT_UNKNOWN_FMT : ZK_PUT_FAILED_FMT, zk_reason(rc));
    }
}

static void window_free(struct packer *pk, struct window *w)
{
    HASH_DEL(pk->windows, w);
    for (struct far_put *fp = w->waiting; fp; fp = fp->next) /* at exit only */
        answer_put(pk, fp, NULL, 0, &(struct put_end){{.stored = RS_NO, .reason = RR_DRAINING},
                                                      "deferd is stopping; the job was not "
                                                      "stored"});
    free_puts(w->waiting);
    if (w->backoff)
        event_free(w->backoff);
    free(w->data);
    free(w);
}

void packer_free(struct packer *pk)
{
    if (!pk)
        return;
    struct window *w, *tmp;
    HASH_ITER(hh, pk->windows, w, tmp)
        window_free(pk, w);
    event_free(pk->flush);
    free(pk);
}

uint64_t packer_window_start(const struct dqueue *q, uint64_t due_ms)
{
    return due_ms - due_ms % q->cfg->pack_window_ms;
}

int packer_wants(const struct packer *pk, const struct dqueue *q, uint64_t due_ms, size_t len)
{
    const struct queue_config *qc = q->cfg;
    if (pk->env->d->layout_version < LAYOUT_VERSION_PACKS || qc->format != QF_NATIVE ||
        qc->pack_after_ms == 0 || due_ms > LAYOUT_DUE_MAX || len > pack_payload_max())
        return 0;
    return packer_window_start(q, due_ms) >= (uint64_t)cluster_now_ms() + qc->pack_after_ms +
                                           PACK_MARGIN_MS;
}

size_t packer_open(const struct packer *pk) { return pk ? pk->open : 0; }

void packer_counts(const struct packer *pk, struct packer_counts *out) { *out = pk->counts; }

void packer_count_written(struct packer *pk, size_t jobs, size_t bytes)
{
    pk->counts.packed += jobs;
    pk->counts.created++;
    pk->counts.bytes += bytes;
}

static void make_ready(struct packer *pk, struct window *w)
{
    if (w->ready || w->busy || !w->waiting || (w->backoff && evtimer_pending(w->backoff, NULL)))
        return;
    w->ready = 1;
    w->next_ready = NULL;
    if (pk->ready_tail)
        pk->ready_tail->next_ready = w;
    else
        pk->ready_head = w;
    pk->ready_tail = w;
    if (pk->writes < PACKER_WRITES_MAX)
        event_active(pk->flush, 0, 0); /* after this loop turn's other requests */
}

static struct window *window_for(struct packer *pk, struct dqueue *q, uint64_t start)
{
    struct wkey key = {.queue = q->cfg->index, .start = start};
    struct window *w;
    HASH_FIND(hh, pk->windows, &key, sizeof key, w);
    if (w || !(w = calloc(1, sizeof *w)))
        return w;
    w->key = key;
    w->pk = pk;
    w->q = q;
    w->width = q->cfg->pack_window_ms;
    w->tail = &w->waiting;
    w->version = -1;
    HASH_ADD(hh, pk->windows, key, sizeof key, w);
    return w;
}

void packer_put(struct packer *pk, struct dqueue *q, const struct job_name *jn,
                unsigned char *payload, size_t len, const char *token_path, struct reply *r)
{
    uint64_t start = packer_window_start(q, jn->due_ms);
    struct window *w = window_for(pk, q, start);
    struct far_put *fp = w ? calloc(1, sizeof *fp) : NULL;
    if (!fp) {
        free(payload);
        reply_err(r, PE_INTERNAL, "out of memory");
        return;
    }
    fp->jn = *jn;
    snprintf(fp->token_path, sizeof fp->token_path, "%s", token_path ? token_path : "");
    uid_next(pk->env->uids, fp->jn.uid);
    fp->payload = payload;
    fp->len = len;
    fp->size = pack_job_size(&fp->jn, start, len);
    fp->r = r;
    *w->tail = fp;
    w->tail = &fp->next;
    pk->open++;
    make_ready(pk, w);
}

/* ---- writing ---- */

/* Appends JOBS' records to the writer; the first that does not fit stays in *REST. */
static int add_puts(struct pack_writer *pw, struct far_put **jobs, struct far_put **rest)
{
    struct far_put *fp, **pp = jobs;
    int n = 0;
    while ((fp = *pp) && pack_add(pw, &fp->jn, fp->payload, fp->len) == PACK_OK) {
        pp = &fp->next;
        n++;
    }
    *rest = *pp;
    *pp = NULL;
    return n;
}

static size_t waiting_bytes(const struct window *w, size_t limit)
{
    size_t sum = 0;
    for (const struct far_put *fp = w->waiting; fp && sum <= limit; fp = fp->next)
        sum += fp->size;
    return sum;
}

int packer_name_pack(struct packer *pk, const struct dqueue *q, uint64_t start, uint64_t width,
                     char *name, size_t nlen, char *path, size_t plen)
{
    struct pack_name pn = {.start_ms = start, .width_ms = width};
    uid_next(pk->env->uids, pn.uid);
    if (layout_format_pack_name(&pn, name, nlen) != 0 ||
        layout_pack_path(path, plen, pk->env->d->cfg->zk_root, q->cfg->name, name) != 0)
        return -1;
    return 0;
}

static int name_pack(struct packer *pk, struct write *wr)
{
    return packer_name_pack(pk, wr->w->q, wr->w->key.start, wr->w->width, wr->name,
                            sizeof wr->name, wr->path, sizeof wr->path);
}

struct token_seen {
    UT_hash_handle hh;
    struct far_put *fp;
};

/* Puts that wait with the same token as an earlier one (a producer sent one put twice at
 * once, or its retry came while the first was being written and both came back) become
 * that one's twins: not written, answered as it is. In one write, the two tokens would fail
 * the transaction on each other for ever. */
static int merge_twins(struct window *w)
{
    struct token_seen *seen = NULL, *e, *tmp;
    int rc = 0;
    for (struct far_put **pp = &w->waiting, *fp; (fp = *pp) != NULL;) {
        if (!fp->token_path[0]) {
            pp = &fp->next;
            continue;
        }
        HASH_FIND_STR(seen, fp->token_path, e);
        if (e) {
            *pp = fp->next;
            struct far_put **end = &fp->twins; /* its own twins go along, one level */
            while (*end)
                end = &(*end)->next;
            *end = e->fp->twins;
            fp->next = fp->twins;
            fp->twins = NULL;
            e->fp->twins = fp;
            free(fp->payload);
            fp->payload = NULL;
            continue;
        }
        if (!(e = malloc(sizeof *e))) {
            rc = -1;
            break;
        }
        e->fp = fp;
        HASH_ADD_KEYPTR(hh, seen, fp->token_path, strlen(fp->token_path), e);
        pp = &fp->next;
    }
    w->tail = &w->waiting;
    while (*w->tail)
        w->tail = &(*w->tail)->next;
    HASH_ITER(hh, seen, e, tmp) {
        HASH_DEL(seen, e);
        free(e);
    }
    return rc;
}

static const struct refusal no_memory = {.stored = RS_NO, .reason = RR_OUT_OF_MEMORY};

/* Answers the first waiting job of W with CODE and TEXT and drops it: a write that cannot be
 * built still ends one put, so that no window is made ready again unchanged (a loop). */
static void refuse_first(struct packer *pk, struct window *w, enum proto_errcode code,
                         const struct refusal *f, const char *text)
{
    struct far_put *fp = w->waiting;
    if (!(w->waiting = fp->next))
        w->tail = &w->waiting;
    fp->next = NULL;
    metrics_refused(pk->env->d->metrics, w->q->cfg, MR_FAILED);
    log_warn("queue %s: a put of %zu bytes due %llu was not packed: %s", w->q->cfg->name,
             fp->len, (unsigned long long)fp->jn.due_ms, text);
    for (struct far_put *t = fp; t; t = t == fp ? fp->twins : t->next) {
        pk->open--;
        reply_refuse(t->r, code, f, "%s", text);
    }
    free_puts(fp);
}

/* Encodes the write: the waiting jobs into the open pack when they keep it small, else as
 * many as one pack holds into a new one. The rest waits for the next write. -1 when it
 * cannot be built; the first waiting put is then answered (refuse_first). */
static int build(struct packer *pk, struct write *wr)
{
    struct window *w = wr->w;
    struct pack_writer pw;
    struct far_put *rest;
    int merged = merge_twins(w);
    size_t cap = w->len + waiting_bytes(w, PACK_BYTES_MAX) + PACK_EMPTY_SIZE;
    wr->create = w->version < 0 || cap > PACKER_JOIN_BYTES;
    if (cap > PACK_BYTES_MAX)
        cap = PACK_BYTES_MAX;
    if (merged != 0 || failpoint_hit("pack-build-fails") || !(wr->data = malloc(cap))) {
        refuse_first(pk, w, PE_UNAVAILABLE, &no_memory, "not stored (deferd is out of memory)");
        return -1;
    }
    /* a join appends to the open pack's bytes as they are; bytes it cannot go on from
     * (never: they are its own) make a new pack instead */
    if (!wr->create && pack_writer_resume(&pw, wr->data, cap, w->data, w->len) != PACK_OK) {
        drop_open(w);
        wr->create = 1;
    }
    if (wr->create && pack_writer_init(&pw, wr->data, cap, w->key.start, w->width) != PACK_OK) {
        refuse_first(pk, w, PE_INTERNAL, NULL, pw.err);
        return -1;
    }
    wr->jobs = w->waiting;
    if (add_puts(&pw, &wr->jobs, &rest) == 0) { /* packer_wants let in only what fits */
        w->waiting = rest;
        refuse_first(pk, w, PE_INTERNAL, NULL, pw.err);
        return -1;
    }
    w->waiting = rest;
    if (!rest)
        w->tail = &w->waiting;
    if (wr->create) {
        if (name_pack(pk, wr) != 0)
            return -1;
    } else {
        memcpy(wr->name, w->name, sizeof wr->name);
        memcpy(wr->path, w->path, sizeof wr->path);
    }
    return pack_finish(&pw, &wr->len) == PACK_OK ? 0 : -1;
}

static void on_written(const struct zk_result *res, void *ctx);

/* The length of the deepest directory above PATH known to exist (0: none is). */
static size_t known_above(const struct buckets *known, const char *path)
{
    char dir[LAYOUT_PATH_MAX], *slash;
    snprintf(dir, sizeof dir, "%s", path);
    while ((slash = strrchr(dir, '/')) && slash != dir) {
        *slash = '\0';
        if (buckets_known(known, dir))
            return (size_t)(slash - dir);
    }
    return 0;
}

/* Only the levels below the deepest known one, top down: a new window directory costs one
 * create, not one for each of its ancestors. NodeExists (another's) is fine. */
int packer_prepare_dir(struct packer *pk, const char *path)
{
    char dir[LAYOUT_PATH_MAX];
    const char *last = strrchr(path, '/');
    size_t len = strlen(path);
    if (!last || len >= sizeof dir)
        return ZBADARGUMENTS;
    memcpy(dir, path, len + 1);
    for (size_t at = known_above(pk->env->parents, path); at < (size_t)(last - path);) {
        at += strcspn(dir + at + 1, "/") + 1;
        dir[at] = '\0';
        int rc = zkstore_create(pk->env->d->zs, dir, NULL, 0, 0, NULL, NULL);
        if (rc != ZOK)
            return rc;
        buckets_add(pk->env->parents, dir);
        dir[at] = '/';
    }
    return ZOK;
}

/* The create of each job's put token, in the same transaction as the pack: a retry of a
 * put whose first try was stored fails the write on its token (a job outlives nothing
 * here: the token does). Their minute directories are made ahead, as a pack's are. */
static int token_ops(struct write *wr, struct zk_txn_op *ops)
{
    int n = 0, rc = ZOK;
    free(wr->tokened);
    wr->tokened = NULL;
    wr->ntokened = 0;
    for (struct far_put *fp = wr->jobs; fp; fp = fp->next)
        n += fp->token_path[0] != '\0';
    if (n == 0)
        return ZOK;
    if (!(wr->tokened = calloc((size_t)n, sizeof *wr->tokened)))
        return ZK_ENOMEM;
    for (struct far_put *fp = wr->jobs; fp && rc == ZOK; fp = fp->next) {
        if (!fp->token_path[0])
            continue;
        rc = tokens_create_op(&ops[1 + wr->ntokened], fp->token_path, &fp->jn, wr->name,
                              fp->token_data, sizeof fp->token_data);
        if (rc == ZOK)
            rc = tokens_prepare_dir(wr->pk->env->d->zs, wr->pk->env->keydirs, fp->token_path);
        wr->tokened[wr->ntokened++] = fp;
    }
    return rc;
}

static int send_write(struct write *wr)
{
    size_t n = 1;
    for (struct far_put *fp = wr->jobs; fp; fp = fp->next)
        n += fp->token_path[0] != '\0';
    struct zk_txn_op *ops = calloc(n, sizeof *ops);
    if (!ops)
        return ZK_ENOMEM;
    ops[0] = (struct zk_txn_op){.kind = wr->create ? ZT_CREATE : ZT_SET, .path = wr->path,
                                .data = wr->data, .len = wr->len, .version = wr->w->version};
    int rc = wr->create ? packer_prepare_dir(wr->pk, wr->path) : ZOK;
    if (rc == ZOK)
        rc = token_ops(wr, ops);
    if (rc == ZOK)
        rc = txnbatch_add(wr->pk->env->puts, ops, 1 + wr->ntokened, on_written, wr);
    free(ops);
    return rc;
}

static void write_done(struct write *wr, int rc);
static void write_end(struct write *wr, uint64_t delay_ms);

static void start_write(struct packer *pk, struct window *w)
{
    struct write *wr = calloc(1, sizeof *wr);
    if (!wr) { /* one put answered: the flush loop takes the window again only with less */
        refuse_first(pk, w, PE_UNAVAILABLE, &no_memory, "not stored (deferd is out of memory)");
        make_ready(pk, w);
        return;
    }
    wr->pk = pk;
    wr->w = w;
    w->busy = 1;
    pk->writes++;
    if (build(pk, wr) != 0) { /* a refused put was answered; the jobs it took are now */
        if (wr->jobs)
            write_done(wr, ZK_EINVAL);
        else
            write_end(wr, 0);
        return;
    }
    int rc = send_write(wr);
    if (rc != ZOK)
        write_done(wr, rc);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct packer *pk = arg;
    (void)fd;
    (void)what;
    while (pk->ready_head && pk->writes < PACKER_WRITES_MAX) {
        struct window *w = pk->ready_head;
        if (!(pk->ready_head = w->next_ready))
            pk->ready_tail = NULL;
        w->ready = 0;
        start_write(pk, w);
    }
}

/* ---- the outcome ---- */

static void answer(struct packer *pk, struct write *wr, int rc)
{
    struct dqueue *q = wr->w->q;
    for (struct far_put *fp = wr->jobs; fp; fp = fp->next) {
        char id[LAYOUT_ID_MAX + 1];
        pk->open--;
        if (rc == ZOK) {
            memcpy(fp->jn.pack, wr->name, sizeof fp->jn.pack);
            if (layout_job_id(id, sizeof id, q->cfg->name, &fp->jn) != 0)
                snprintf(id, sizeof id, "%s/-", q->cfg->name);
            metrics_event(pk->env->d->metrics, q->cfg, ME_PUT);
            queue_pending_changed(q, +1);
            pk->counts.packed++;
            answer_put(pk, fp, id, rc, NULL);
        } else {
            metrics_refused(pk->env->d->metrics, q->cfg, MR_FAILED);
            answer_put(pk, fp, NULL, rc, NULL);
        }
    }
    free_puts(wr->jobs);
    wr->jobs = NULL;
}

/* Written: a new pack small enough to join becomes the window's open pack. */
static void keep_open(struct write *wr)
{
    struct window *w = wr->w;
    if (wr->create && wr->len >= PACKER_JOIN_BYTES)
        return;
    free(w->data);
    w->data = wr->data;
    w->len = wr->len;
    wr->data = NULL;
    if (wr->create) {
        memcpy(w->name, wr->name, sizeof w->name);
        memcpy(w->path, wr->path, sizeof w->path);
        w->version = 0;
    } else {
        w->version++;
    }
}

static void drop_open(struct window *w)
{
    free(w->data);
    w->data = NULL;
    w->len = 0;
    w->version = -1;
}

/* The window ended for puts (its unpacking is near) and nothing is left: forget it. */
static int window_over(const struct window *w)
{
    return !w->busy && !w->waiting &&
           w->key.start < (uint64_t)cluster_now_ms() + w->q->cfg->pack_after_ms +
                              PACK_MARGIN_MS;
}

static void write_done(struct write *wr, int rc)
{
    struct packer *pk = wr->pk;
    struct window *w = wr->w;
    if (rc == ZOK) {
        pk->counts.bytes += wr->len;
        if (wr->create)
            pk->counts.created++;
        else
            pk->counts.rewritten++;
        keep_open(wr);
    } else if (!wr->create) {
        drop_open(w); /* changed by another (a cancel), or unknown after a connection loss */
    }
    if (rc != ZOK && rc != ZNOAUTH && wr->path[0])
        log_warn("queue %s: %s pack %s failed: %s", w->q->cfg->name,
                 wr->create ? "creating" : "rewriting", wr->path, zk_strerror(rc));
    else if (rc != ZOK && rc != ZNOAUTH) /* it was not sent: naming or encoding it failed */
        log_warn("queue %s: a pack write of window %llu could not be made: %s",
                 w->q->cfg->name, (unsigned long long)w->key.start, zk_strerror(rc));
    else if (rc == ZNOAUTH)
        queue_denied(w->q, wr->path);
    answer(pk, wr, rc);
    write_end(wr, 0);
}

static void on_backoff(evutil_socket_t fd, short what, void *arg)
{
    struct window *w = arg;
    (void)fd;
    (void)what;
    make_ready(w->pk, w);
}

/* Arms W's wait of DELAY_MS before its next write: 1, or 0 when it cannot (then at once). */
static int wait_backoff(struct packer *pk, struct window *w, uint64_t delay_ms)
{
    struct timeval tv = units_ms_timeval((int64_t)delay_ms);
    if (!w->backoff && !(w->backoff = evtimer_new(pk->env->d->base, on_backoff, w)))
        return 0;
    return evtimer_add(w->backoff, &tv) == 0;
}

/* Frees WR and lets its window go on: forgotten when it is over, else written again now
 * (in the flush after this loop turn) or after DELAY_MS. */
static void write_end(struct write *wr, uint64_t delay_ms)
{
    struct packer *pk = wr->pk;
    struct window *w = wr->w;
    free(wr->data);
    free(wr->tokened);
    free(wr);
    w->busy = 0;
    pk->writes--;
    if (window_over(w)) {
        window_free(pk, w);
    } else if (!delay_ms || !wait_backoff(pk, w, delay_ms)) {
        make_ready(pk, w);
    }
    if (pk->ready_head)
        event_active(pk->flush, 0, 0);
}

/* The wait before a window's next write once its jobs came back ROUNDS times. */
static uint64_t backoff_ms(int rounds)
{
    return rounds < 2 ? 0 : rounds - 2 >= 7 ? PACK_BACKOFF_MAX_MS : 1u << (rounds - 2);
}

/* The jobs of a write that failed without effect go back in front of the waiting ones, to
 * be written again (none left: the window just goes on). */
static void retry(struct write *wr)
{
    struct packer *pk = wr->pk;
    struct window *w = wr->w;
    for (struct far_put **pp = &wr->jobs, *fp; (fp = *pp) != NULL;) {
        if (++fp->rounds <= TXN_ROUNDS_MAX) {
            pp = &fp->next;
            continue;
        }
        *pp = fp->next; /* a backstop: no write of it ever told, answered so */
        fp->next = NULL;
        pk->open--;
        char why[128];
        snprintf(why, sizeof why, "the job may have been stored: its pack was written %d times "
                 "without an answer that tells", TXN_ROUNDS_MAX);
        answer_put(pk, fp, NULL, 0, &(struct put_end){
            {.stored = RS_MAYBE, .reason = RR_CONNECTION_LOST}, why});
        free_puts(fp);
    }
    struct far_put *last = wr->jobs;
    int rounds = 0;
    for (; last && last->next; last = last->next)
        rounds = last->rounds > rounds ? last->rounds : rounds;
    if (last) {
        rounds = last->rounds > rounds ? last->rounds : rounds;
        last->next = w->waiting;
        if (!w->waiting)
            w->tail = &last->next;
        w->waiting = wr->jobs;
    }
    write_end(wr, backoff_ms(rounds));
}

static void on_parents(const struct zk_result *res, void *ctx)
{
    struct write *wr = ctx;
    int rc = res->rc == ZOK ? send_write(wr) : res->rc;
    if (rc != ZOK)
        write_done(wr, rc);
}

/* ---- taken tokens: a retry of a put whose first try was stored ---- */

/* Takes FP out of the write, answers it (and its twins: OK with ID, or RC, or END) and
 * frees it. */
static void take_out(struct write *wr, struct far_put *fp, const char *id, int rc,
                     const struct put_end *end)
{
    for (struct far_put **pp = &wr->jobs; *pp; pp = &(*pp)->next)
        if (*pp == fp) {
            *pp = fp->next;
            break;
        }
    fp->next = NULL;
    wr->pk->open--;
    answer_put(wr->pk, fp, id, rc, end);
    free_puts(fp);
}

static void on_token_found(void *ctx, void *put, const char *id)
{
    take_out(ctx, put, id, ZOK, NULL);
}

static void on_token_refused(void *ctx, void *put, int rc, const struct token_refusal *tr)
{
    take_out(ctx, put, NULL, rc, &(struct put_end){tr->f, tr->text});
}

/* Every token is read: the rest are written again (the transaction changed nothing: the
 * open pack is as it was). */
static void on_tokens_read(void *ctx)
{
    retry(ctx);
}

static const struct token_answers token_answers = {on_token_found, on_token_refused,
                                                   on_tokens_read};

/* A token was taken: every token of the write is read at once. */
static void resolve_tokens(struct write *wr)
{
    tokens_reads_start(&wr->token_reads, &token_answers, wr);
    for (int i = 0; i < wr->ntokened; i++)
        tokens_read(&wr->token_reads, wr->pk->env->d->zs,
                    &(struct token_wait){wr->tokened[i]->token_path, wr->w->q, wr->tokened[i]});
    tokens_reads_sent(&wr->token_reads);
}

/* The write failed on FP's token: taken (read them all), its directory gone (made), or
 * refused (FP alone is answered; the rest written again). */
static int token_failed(struct write *wr, struct far_put *fp, int rc)
{
    if (rc == ZNODEEXISTS) {
        resolve_tokens(wr);
        return ZOK;
    }
    if (rc == ZNONODE && wr->tries < PARENT_TRIES_MAX) {
        rc = zkstore_parents_missing(wr->pk->env->d->zs, fp->token_path, &wr->tries, on_parents,
                                     wr);
        return rc == ZK_PARENTS_RESEND ? send_write(wr) : rc == ZK_PARENTS_ASKED ? ZOK : rc;
    }
    if (rc == ZNOAUTH)
        queue_denied(wr->w->q, fp->token_path);
    take_out(wr, fp, NULL, rc, NULL);
    retry(wr);
    return ZOK;
}

static void on_written(const struct zk_result *res, void *ctx)
{
    struct write *wr = ctx;
    int rc = res->rc, bad = rc == ZOK ? -1 : zk_failed_op(res);
    if (bad >= 1 && bad <= wr->ntokened) {
        if ((rc = token_failed(wr, wr->tokened[bad - 1], res->op_err[bad])) != ZOK)
            write_done(wr, rc);
        return;
    }
    if (!wr->create && (rc == ZBADVERSION || rc == ZNONODE)) {
        drop_open(wr->w); /* rewritten or unpacked by another: a new pack, then */
        retry(wr);
        return;
    }
    if (wr->create && rc == ZNODEEXISTS && name_pack(wr->pk, wr) == 0) {
        rc = send_write(wr); /* the uid is taken: a new name */
    } else if (wr->create && rc == ZNONODE && wr->tries < PARENT_TRIES_MAX) {
        rc = zkstore_parents_missing(wr->pk->env->d->zs, wr->path, &wr->tries, on_parents, wr);
        rc = rc == ZK_PARENTS_RESEND ? send_write(wr) : rc == ZK_PARENTS_ASKED ? ZOK : rc;
    }
    if (rc != ZOK || res->rc == ZOK)
        write_done(wr, rc);
}
