/* deferctl's pending-job commands: list, show, cancel, reschedule. Each works from the job
 * id or the bucket tree alone (docs/zookeeper-layout.md): no scan of the queue. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin_int.h"
#include "attempts.h"
#include "claimdata.h"
#include "jobedit.h"
#include "units.h"

/* ---- list ---- */

struct page {
    struct admin_job *rows;
    size_t n, cap, want;        /* want = limit + 1: the extra row only says "more" */
    const struct admin_list_opts *o;
    struct job_name after;      /* the cursor, when o->after */
    char queue[QUEUE_NAME_MAX + 1];
};

/* Due order, then priority, then uid: a total order, so pages neither skip nor repeat. */
static int job_cmp(const struct job_name *a, const struct job_name *b)
{
    if (a->due_ms != b->due_ms)
        return a->due_ms < b->due_ms ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    return strcmp(a->uid, b->uid);
}

static int row_cmp(const void *x, const void *y)
{
    return job_cmp(&((const struct admin_job *)x)->jn, &((const struct admin_job *)y)->jn);
}

static int wanted(const struct page *pg, const struct job_name *jn)
{
    return jn->due_ms >= pg->o->from_ms && jn->due_ms <= pg->o->until_ms &&
           (!pg->o->after || job_cmp(jn, &pg->after) > 0);
}

/* Rows past the page's end are dropped, with a packed row's preview. */
static void cut_rows(struct page *pg, size_t keep)
{
    for (; pg->n > keep; pg->n--)
        admin_job_clear(&pg->rows[pg->n - 1]);
}

static int add_row(struct page *pg, const struct job_name *jn)
{
    if (pg->n == pg->cap) {
        size_t cap = pg->cap ? pg->cap * 2 : 64;
        struct admin_job *rows = realloc(pg->rows, cap * sizeof *rows);
        if (!rows)
            return -1;
        pg->rows = rows;
        pg->cap = cap;
    }
    struct admin_job *r = &pg->rows[pg->n++];
    memset(r, 0, sizeof *r);
    r->jn = *jn;
    return layout_job_id(r->id, sizeof r->id, pg->queue, jn);
}

/* The jobs of one directory (a 100 ms bucket or a shard in it); foreign names are skipped
 * as the daemons skip them. */
static int add_names(struct page *pg, const struct String_vector *names, uint64_t leaf,
                     int form, const char *shard)
{
    for (int i = 0; i < names->count; i++) {
        struct job_name jn;
        if (layout_parse_name(names->data[i], &jn) != 0 ||
            !layout_job_in_bucket(&jn, leaf, form))
            continue;
        snprintf(jn.shard, sizeof jn.shard, "%s", shard);
        if (wanted(pg, &jn) && add_row(pg, &jn) != 0)
            return -1;
    }
    return 0;
}

/* The jobs of one leaf bucket and of its shards, added to the page unsorted. */
static int read_leaf(struct admin *a, struct page *pg, const char *path, uint64_t leaf,
                     int form)
{
    struct String_vector kids;
    int rc = zoo_get_children(a->zh, path, 0, &kids);
    if (rc == ZNONODE)
        return ZOK; /* emptied and deleted since its parent was listed */
    if (rc != ZOK)
        return rc;
    rc = add_names(pg, &kids, leaf, form, "") == 0 ? ZOK : ZSYSTEMERROR;
    for (int i = 0; rc == ZOK && i < kids.count; i++) {
        if (!layout_valid_shard(kids.data[i]))
            continue;
        char sub[LAYOUT_PATH_MAX];
        struct String_vector jobs;
        snprintf(sub, sizeof sub, "%s/%s", path, kids.data[i]);
        int src = zoo_get_children(a->zh, sub, 0, &jobs);
        if (src == ZOK) {
            rc = add_names(pg, &jobs, leaf, form, kids.data[i]) == 0 ? ZOK : ZSYSTEMERROR;
            deallocate_String_vector(&jobs);
        } else if (src != ZNONODE) {
            rc = src;
        }
    }
    deallocate_String_vector(&kids);
    return rc;
}

/* One bucket's window under as many names as it has: its full name and its short one
 * (layout version 4) while jobs of both forms remain, each under its own parent's path. */
enum { NAMES_A_BUCKET = 2 };
struct group {
    int n;
    uint64_t value;
    char path[NAMES_A_BUCKET][LAYOUT_PATH_MAX];
    int form[NAMES_A_BUCKET];
};

struct bucket { uint64_t value; int form, parent; char name[24]; };

static int bucket_cmp(const void *x, const void *y)
{
    uint64_t a = ((const struct bucket *)x)->value, b = ((const struct bucket *)y)->value;
    return a < b ? -1 : a > b;
}

/* Appends the valid buckets of one level under G's name PARENT whose window meets [from,
 * until] to *B (*COUNT of them). */
static int buckets_of(struct admin *a, const struct page *pg, const struct group *g, int parent,
                      int level, struct bucket **b, int *count)
{
    struct String_vector kids;
    int rc = zoo_get_children(a->zh, g->path[parent], 0, &kids);
    if (rc != ZOK)
        return rc == ZNONODE ? ZOK : rc;
    uint64_t width = layout_bucket_width[level], from = pg->o->from_ms;
    if (pg->o->after && pg->after.due_ms > from)
        from = pg->after.due_ms; /* nothing before the cursor's bucket is on this page */
    struct bucket *more = realloc(*b, ((size_t)*count + (size_t)kids.count + 1) * sizeof **b);
    for (int i = 0; more && i < kids.count; i++) {
        uint64_t v;
        int form = layout_parse_bucket(kids.data[i], level, g->value, &v);
        if (form < 0 || (form = layout_form_join(g->form[parent], form)) < 0 ||
            (v + 1) * width <= from || v * width > pg->o->until_ms)
            continue;
        struct bucket *at = &more[(*count)++];
        *at = (struct bucket){.value = v, .form = form, .parent = parent};
        snprintf(at->name, sizeof at->name, "%s", kids.data[i]);
    }
    deallocate_String_vector(&kids);
    if (more)
        *b = more;
    return more ? ZOK : ZSYSTEMERROR;
}

/* The leaves of one window, all of its names read before the page is sorted and cut, so
 * that a page ends at the same job whichever name held it. */
static int read_leaves(struct admin *a, struct page *pg, const struct group *g)
{
    size_t first = pg->n;
    int rc = ZOK;
    for (int k = 0; rc == ZOK && k < g->n; k++)
        rc = read_leaf(a, pg, g->path[k], g->value, g->form[k]);
    if (pg->n > first) /* rows may still be NULL */
        qsort(pg->rows + first, pg->n - first, sizeof *pg->rows, row_cmp);
    cut_rows(pg, pg->want);
    return rc;
}

/* Depth first through the levels, in due order, until the page is full; a window under two
 * names is walked as one. */
static int walk(struct admin *a, struct page *pg, const struct group *g, int level)
{
    if (level > LAYOUT_DEPTH)
        return read_leaves(a, pg, g);
    struct bucket *b = NULL;
    int count = 0, rc = ZOK;
    for (int k = 0; rc == ZOK && k < g->n; k++)
        rc = buckets_of(a, pg, g, k, level, &b, &count);
    if (b)
        qsort(b, (size_t)count, sizeof *b, bucket_cmp);
    for (int i = 0; rc == ZOK && i < count && pg->n < pg->want;) {
        struct group *sub = calloc(1, sizeof *sub);
        if (!sub) {
            rc = ZSYSTEMERROR;
            break;
        }
        sub->value = b[i].value;
        for (; i < count && b[i].value == sub->value; i++) {
            if (sub->n == NAMES_A_BUCKET)
                continue; /* a value has two names at most: full and short */
            int len = snprintf(sub->path[sub->n], sizeof sub->path[0], "%s/%s",
                               g->path[b[i].parent], b[i].name);
            if (len > 0 && (size_t)len < sizeof sub->path[0]) /* else no such znode */
                sub->form[sub->n++] = b[i].form;
        }
        rc = walk(a, pg, sub, level + 1);
        free(sub);
    }
    free(b);
    return rc;
}

/* ---- the state of each listed job: its stat, asked for all at once ---- */

struct stat_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left;
    int rc;                     /* the first error other than "gone" */
};

struct stat_ask {
    struct stat_wait *w;
    struct admin_job *job;
    size_t preview;
};

static void fill_from_stat(struct admin_job *job, const struct Stat *st)
{
    job->attempts = attempts_from_cversion(job->jn.prior_attempts, st->cversion);
    job->locked = st->numChildren > 0;
    job->bytes = st->dataLength;
}

static void asked(const struct stat_ask *ask, int rc)
{
    pthread_mutex_lock(&ask->w->mu);
    if (rc != ZOK && rc != ZNONODE && ask->w->rc == ZOK)
        ask->w->rc = rc;
    if (--ask->w->left == 0)
        pthread_cond_signal(&ask->w->cv);
    pthread_mutex_unlock(&ask->w->mu);
}

static void on_stat(int rc, const struct Stat *st, const void *data)
{
    const struct stat_ask *ask = data;
    if (rc == ZOK)
        fill_from_stat(ask->job, st);
    else
        ask->job->bytes = -1; /* ZNONODE: gone since it was listed (acked, cancelled, moved) */
    asked(ask, rc);
}

/* The same with the payload's first bytes (list's preview). */
static void on_data(int rc, const char *value, int len, const struct Stat *st,
                    const void *data)
{
    const struct stat_ask *ask = data;
    size_t n = len > 0 ? (size_t)len : 0;
    if (n > ask->preview)
        n = ask->preview;
    if (rc == ZOK && (ask->job->payload = malloc(n + 1)) != NULL) {
        memcpy(ask->job->payload, value, n);
        ask->job->len = (int)n;
    }
    on_stat(rc, st, data);
}

static int stat_rows(struct admin *a, const char *queue, struct admin_job *rows, size_t n,
                     size_t preview)
{
    struct stat_wait w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, ZOK};
    struct stat_ask *asks = calloc(n ? n : 1, sizeof *asks);
    if (!asks)
        return ZSYSTEMERROR;
    int rc = ZOK;
    pthread_mutex_lock(&w.mu);
    for (size_t i = 0; i < n; i++) {
        char path[LAYOUT_PATH_MAX];
        if (rows[i].jn.pack[0] || rows[i].claimed)
            continue; /* filled from its pack or its claim */
        asks[i] = (struct stat_ask){&w, &rows[i], preview};
        layout_job_path(path, sizeof path, a->cfg.zk_root, queue, &rows[i].jn);
        int arc = preview ? zoo_aget(a->zh, path, 0, on_data, &asks[i])
                          : zoo_aexists(a->zh, path, 0, on_stat, &asks[i]);
        if (arc != ZOK) {
            rc = arc;
            break;
        }
        w.left++;
    }
    while (w.left > 0)
        pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    free(asks);
    return rc != ZOK ? rc : w.rc;
}

static void read_holder(struct admin *a, const char *path, char *holder, size_t len);

/* list's preview: who holds each held job (few are held at once: one read each). */
static void holder_rows(struct admin *a, const char *queue, struct admin_job *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[LAYOUT_PATH_MAX];
        if (!rows[i].locked || rows[i].jn.pack[0] || rows[i].claimed || rows[i].bytes < 0)
            continue;
        layout_job_path(path, sizeof path, a->cfg.zk_root, queue, &rows[i].jn);
        read_holder(a, path, rows[i].holder, sizeof rows[i].holder);
    }
}

/* ---- packed jobs in the page ---- */

/* Only the first pg->want rows in order can be shown: the rest is dropped. */
static void keep_first(struct page *pg)
{
    if (pg->n)
        qsort(pg->rows, pg->n, sizeof *pg->rows, row_cmp);
    cut_rows(pg, pg->want);
}

static int add_packed(const struct pack_job *job, const char *pack, void *ctx)
{
    struct page *pg = ctx;
    struct job_name jn = job->name;
    snprintf(jn.pack, sizeof jn.pack, "%s", pack);
    if (!wanted(pg, &jn))
        return ZOK;
    if (add_row(pg, &jn) != 0)
        return ZSYSTEMERROR;
    struct admin_job *r = &pg->rows[pg->n - 1];
    r->attempts = jn.prior_attempts; /* never delivered while packed */
    r->bytes = (int32_t)job->payload_len;
    size_t keep = job->payload_len < pg->o->preview ? job->payload_len : pg->o->preview;
    if (keep && (r->payload = malloc(keep + 1)) != NULL) {
        memcpy(r->payload, job->payload, keep);
        r->len = (int)keep;
    }
    return ZOK;
}

/* Packs are visited in window order: none from START on can come before the page's last
 * row once the page is full. */
static int page_full_before(uint64_t start, void *ctx)
{
    struct page *pg = ctx;
    keep_first(pg);
    return pg->n >= pg->want && pg->rows[pg->want - 1].jn.due_ms < start;
}

static int add_packs(struct admin *a, struct page *pg, const char *queue)
{
    uint64_t from = pg->o->from_ms;
    if (pg->o->after && pg->after.due_ms > from)
        from = pg->after.due_ms;
    struct admin_pack_visit v = {add_packed, page_full_before, pg};
    int rc = admin_packs_visit(a, queue, from, pg->o->until_ms, &v);
    keep_first(pg);
    return rc;
}

/* ---- claimed jobs in the page (layout version 3) ---- */

struct claimed_page {
    struct admin *a;
    struct page *pg;
    char claim[64];             /* the claim HOLDER was read for */
    char holder[128];
};

static int add_claimed(void *ctx, const struct claim_record *r, const char *claim)
{
    struct claimed_page *cp = ctx;
    struct page *pg = cp->pg;
    char name[LAYOUT_NAME_MAX + 1];
    const char *slash = memrchr(r->path, '/', r->path_len);
    const char *base = slash ? slash + 1 : r->path;
    size_t len = r->path_len - (size_t)(base - r->path);
    struct job_name jn;
    if (len >= sizeof name)
        return ZOK;
    memcpy(name, base, len);
    name[len] = '\0';
    if (layout_parse_name(name, &jn) != 0 || !wanted(pg, &jn))
        return ZOK;
    if (add_row(pg, &jn) != 0)
        return ZSYSTEMERROR;
    struct admin_job *row = &pg->rows[pg->n - 1];
    row->claimed = row->locked = 1;
    row->bytes = (int32_t)r->len;
    row->attempts = jn.prior_attempts + r->deliveries;
    size_t keep = r->len < pg->o->preview ? r->len : pg->o->preview;
    if (keep && (row->payload = malloc(keep + 1)) != NULL) {
        memcpy(row->payload, r->payload, keep);
        row->len = (int)keep;
    }
    if (pg->o->preview) { /* one read a claim, not a job */
        if (strcmp(cp->claim, claim) != 0) {
            snprintf(cp->claim, sizeof cp->claim, "%s", claim);
            admin_claim_holder(cp->a, claim, cp->holder, sizeof cp->holder);
        }
        snprintf(row->holder, sizeof row->holder, "%s", cp->holder);
    }
    return ZOK;
}

/* A claim takes jobs as they fall due (or just before): none holds a job due later than
 * this past the clock, so a page that starts later reads no claim (skew included). */
#define CLAIM_AHEAD_MAX_MS (10 * 60 * 1000)

/* Claimed jobs left their buckets: every claim of the queue is read, its jobs in the page's
 * window merged in due order. */
static int add_claims(struct admin *a, struct page *pg, const char *queue)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    uint64_t from = pg->o->after && pg->after.due_ms > pg->o->from_ms ? pg->after.due_ms
                                                                      : pg->o->from_ms;
    if (from > now + CLAIM_AHEAD_MAX_MS)
        return ZOK;
    struct claimed_page cp = {.a = a, .pg = pg};
    int rc = admin_claims_visit(a, queue, add_claimed, &cp);
    keep_first(pg);
    return rc;
}

/* The lease a delivery of the job gets, as the daemon picks it: the job's own ttr, else
 * its queue's (a name without ttr= follows the queue's setting). */
static void effective_ttr(struct admin_job *j, const struct queue_config *qc)
{
    j->ttr_default = j->jn.ttr_ms == 0;
    j->ttr_ms = j->ttr_default ? (uint32_t)qc->ttr_ms : j->jn.ttr_ms;
}

int admin_list(struct admin *a, const char *queue, const struct admin_list_opts *o,
               admin_job_fn fn, void *ctx, int *more, char *cursor, size_t clen, char *err,
               size_t errlen)
{
    struct page pg = {.want = o->limit + 1, .o = o};
    char dir[LAYOUT_PATH_MAX], q2[QUEUE_NAME_MAX + 1];
    const struct queue_config *qc = admin_queue(a, queue, err, errlen);
    if (!qc)
        return -1;
    if (qc->format != QF_NATIVE)
        return snprintf(err, errlen, "queue %s is a Curator queue: list its items in %s "
                        "(deferctl lists deferd's own layout only)", queue, qc->curator_path), -1;
    if (o->after && (layout_parse_id(o->after, q2, sizeof q2, &pg.after) != 0 ||
                     strcmp(q2, queue) != 0))
        return snprintf(err, errlen, "--after: '%s' is not a job id of queue %s", o->after,
                        queue), -1;
    snprintf(pg.queue, sizeof pg.queue, "%s", queue);
    struct group *top = calloc(1, sizeof *top);
    if (!top)
        return snprintf(err, errlen, "out of memory"), -1;
    *top = (struct group){.n = 1, .form = {LAYOUT_FORM_EITHER}};
    layout_bucket_path(dir, sizeof dir, a->cfg.zk_root, queue, 0, 0, 0);
    snprintf(top->path[0], sizeof top->path[0], "%s", dir);
    int rc = walk(a, &pg, top, 1);
    free(top);
    if (rc == ZOK && (rc = add_packs(a, &pg, queue)) != ZOK)
        layout_packs_path(dir, sizeof dir, a->cfg.zk_root, queue);
    if (rc == ZOK && (rc = add_claims(a, &pg, queue)) != ZOK)
        layout_queue_path(dir, sizeof dir, a->cfg.zk_root, queue, LAYOUT_CLAIMS, NULL);
    size_t shown = pg.n < o->limit ? pg.n : o->limit;
    if (rc == ZOK)
        rc = stat_rows(a, queue, pg.rows, shown, o->preview);
    if (rc == ZOK && o->preview)
        holder_rows(a, queue, pg.rows, shown);
    if (rc == ZOK)
        for (size_t i = 0; i < shown; i++)
            if (pg.rows[i].bytes >= 0) {
                effective_ttr(&pg.rows[i], qc);
                fn(&pg.rows[i], ctx);
            }
    *more = pg.n > o->limit;
    if (cursor && clen)
        snprintf(cursor, clen, "%s", rc == ZOK && *more ? pg.rows[shown - 1].id : "");
    cut_rows(&pg, 0);
    free(pg.rows);
    return rc == ZOK ? 0 : admin_failed(err, errlen, "listing the jobs under", dir, rc);
}

/* ---- one job by id ---- */

struct located {
    char queue[QUEUE_NAME_MAX + 1];
    char path[LAYOUT_PATH_MAX];
    struct job_name jn;
    struct admin_packed pk;     /* a packed job: its pack (pk.in), else unpacked since */
};

/* show, cancel and reschedule: only queues in deferd's own layout have job ids and keys. */
static int native_queue(struct admin *a, const char *queue, char *err, size_t errlen)
{
    const struct queue_config *qc = admin_queue(a, queue, err, errlen);
    if (!qc)
        return -1;
    if (qc->format != QF_NATIVE)
        return snprintf(err, errlen, "queue %s is a Curator queue: show, cancel and reschedule "
                        "work on deferd's own layout only", queue), -1;
    return 0;
}

static int not_found(char *err, size_t errlen, const char *id);

/* A job named in a pack: in it still, or where unpacking put it. */
static int locate_packed(struct admin *a, struct located *at, const char *id, char *err,
                         size_t errlen)
{
    int rc = admin_packed_read(a, at->queue, &at->jn, at->path, sizeof at->path, &at->pk,
                               err, errlen);
    if (rc == ZNONODE)
        return not_found(err, errlen, id);
    return rc == ZOK ? 0 : -1;
}

static int locate(struct admin *a, const char *id, struct located *at, char *err,
                  size_t errlen)
{
    if (layout_parse_id(id, at->queue, sizeof at->queue, &at->jn) != 0)
        return snprintf(err, errlen, "'%s' is not a job id (QUEUE/NAME as put printed it)",
                        id), -1;
    if (native_queue(a, at->queue, err, errlen) != 0)
        return -1;
    layout_job_path(at->path, sizeof at->path, a->cfg.zk_root, at->queue, &at->jn);
    return at->jn.pack[0] ? locate_packed(a, at, id, err, errlen) : 0;
}

static int not_found(char *err, size_t errlen, const char *id)
{
    snprintf(err, errlen, "no job %s, pending or dead: acked, cancelled or moved (a nack "
             "and a reschedule give the job a new id), or never put", id);
    return ADMIN_NOT_FOUND;
}

/* Who holds a locked job: the data of its lock node. */
static void read_holder(struct admin *a, const char *path, char *holder, size_t len)
{
    char lock[LAYOUT_PATH_MAX + 8];
    int n = (int)len - 1;
    layout_lock_path(lock, sizeof lock, path);
    if (zoo_get(a->zh, lock, 0, holder, &n, NULL) != ZOK || n < 0)
        n = 0;
    holder[n] = '\0';
}

static int in_flight_by(const char *holder, const char *id, char *err, size_t errlen)
{
    snprintf(err, errlen, "job %s is in flight (held by deferd at %s for one of its "
             "consumers): the consumer's ack or nack decides; try again once it is released",
             id, holder[0] ? holder : "?");
    return ADMIN_IN_FLIGHT;
}

static int in_flight(struct admin *a, const char *path, const char *id, char *err,
                     size_t errlen)
{
    char holder[128];
    read_holder(a, path, holder, sizeof holder);
    return in_flight_by(holder, id, err, errlen);
}

/* The job is gone from its bucket: not found, or held in a claim (layout version 3). */
static int gone_or_claimed(struct admin *a, const struct located *at, const char *id,
                           char *err, size_t errlen)
{
    char holder[128];
    if (admin_find_claimed(a, at->queue, at->path, NULL, holder, sizeof holder) == ZOK)
        return in_flight_by(holder, id, err, errlen);
    return not_found(err, errlen, id);
}

static int read_job(struct admin *a, const char *path, struct admin_job *out)
{
    struct Stat st;
    int len = (int)CONFIG_MAX_PAYLOAD_LIMIT + 1;
    out->payload = malloc((size_t)len);
    if (!out->payload)
        return ZSYSTEMERROR;
    int rc = zoo_get(a->zh, path, 0, out->payload, &len, &st);
    if (rc == ZOK && st.dataLength > len)
        rc = ZMARSHALLINGERROR; /* larger than any job deferd writes: not cut silently */
    if (rc != ZOK) {
        admin_job_clear(out);
        return rc;
    }
    out->len = len > 0 ? len : 0;
    fill_from_stat(out, &st);
    if (out->locked)
        read_holder(a, path, out->holder, sizeof out->holder);
    return ZOK;
}

/* A job in its pack: its record has it all; it was never delivered. */
static int show_packed(const struct admin_packed *pk, struct admin_job *out)
{
    out->len = (int)pk->job.payload_len;
    out->bytes = out->len;
    out->attempts = out->jn.prior_attempts;
    if (!(out->payload = malloc(pk->job.payload_len + 1)))
        return -1;
    memcpy(out->payload, pk->job.payload, pk->job.payload_len);
    return 0;
}

/* The counts of the flow whose parent has UID into FL; ZNONODE when there is none. */
static int read_flow_node(struct admin *a, const char *uid, struct layout_flow *fl)
{
    char path[LAYOUT_PATH_MAX], data[LAYOUT_ID_MAX + 128];
    int len = (int)sizeof data - 1;
    if (layout_flow_path(path, sizeof path, a->cfg.zk_root, uid, NULL) != 0)
        return ZBADARGUMENTS;
    int rc = zoo_get(a->zh, path, 0, data, &len, NULL);
    if (rc != ZOK)
        return rc;
    return layout_parse_flow_data(data, (size_t)(len > 0 ? len : 0), fl) == 0 ? ZOK : ZNONODE;
}

/* A child's state: pending (its znode, not locked) or held (locked). */
static void child_state(struct admin *a, struct admin_flow_child *c)
{
    struct located at = {0};
    char err[200], lock[LAYOUT_PATH_MAX + 8];
    if (locate(a, c->id, &at, err, sizeof err) == 0 && !at.pk.in &&
        layout_lock_path(lock, sizeof lock, at.path) == 0)
        c->held = zoo_exists(a->zh, lock, 0, NULL) == ZOK;
    if (at.pk.in)
        admin_packed_clear(&at.pk);
}

/* Its children not settled yet: the markers' data (their ids). */
static int read_children(struct admin *a, const char *uid, struct admin_job *out)
{
    char dir[LAYOUT_PATH_MAX], path[LAYOUT_PATH_MAX + 64];
    struct String_vector sv = {0};
    if (layout_flow_path(dir, sizeof dir, a->cfg.zk_root, uid, NULL) != 0)
        return ZBADARGUMENTS;
    int rc = zoo_get_children(a->zh, dir, 0, &sv);
    if (rc != ZOK)
        return rc;
    out->children = calloc(sv.count ? (size_t)sv.count : 1, sizeof *out->children);
    for (int i = 0; out->children && i < sv.count; i++) {
        struct admin_flow_child *c = &out->children[out->nchildren];
        int len = LAYOUT_ID_MAX;
        if (strncmp(sv.data[i], LAYOUT_FLOW_CHILD, strlen(LAYOUT_FLOW_CHILD)) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, sv.data[i]);
        if (zoo_get(a->zh, path, 0, c->id, &len, NULL) != ZOK || len <= 0)
            continue;
        c->id[len] = '\0';
        child_state(a, c);
        out->nchildren++;
    }
    deallocate_String_vector(&sv);
    return out->children ? ZOK : ZSYSTEMERROR;
}

/* ID is no job: a parent waiting for its children? Its flow's counts, payload, children. */
static int read_waiting(struct admin *a, const char *id, const struct job_name *jn,
                        struct admin_job *out)
{
    char path[LAYOUT_PATH_MAX];
    int rc = read_flow_node(a, jn->uid, &out->flow);
    if (rc != ZOK || strcmp(out->flow.parent, id) != 0)
        return rc == ZOK ? ZNONODE : rc;
    if (layout_flow_path(path, sizeof path, a->cfg.zk_root, jn->uid, LAYOUT_FLOW_PARENT) != 0)
        return ZBADARGUMENTS;
    if ((rc = read_job(a, path, out)) != ZOK)
        return rc;
    out->locked = 0;
    out->attempts = 0;
    out->waiting = 1;
    return read_children(a, jn->uid, out);
}

/* ID is no job and no waiting parent: an on=complete parent released since? It was created
 * in the same bucket under its name and "-r<acked>.<dead>" (flow.c): one listing finds it,
 * and AT becomes it. */
/* Whether KID is the parent AT released: its NAME with the flow's results, its uid. */
static int released_as(const struct located *at, const char *name, const char *kid,
                       struct job_name *jn)
{
    size_t n = strlen(name);
    return !strncmp(kid, name, n) && !strncmp(kid + n, "-r", 2) &&
           layout_parse_name(kid, jn) == 0 && jn->has_results && !strcmp(jn->uid, at->jn.uid);
}

struct released_look {
    struct admin *a;
    struct located *at;
};

/* A claim's record of the released parent: AT gets its name and path (the visit stops). */
static int claimed_released(void *ctx, const struct claim_record *r, const char *claim)
{
    struct released_look *look = ctx;
    struct located *at = look->at;
    char rel[CLAIM_PATH_MAX + 1], name[LAYOUT_NAME_MAX + 1], qdir[LAYOUT_PATH_MAX];
    struct job_name jn;
    (void)claim;
    if (r->path_len > CLAIM_PATH_MAX || layout_format_name(&at->jn, name, sizeof name))
        return ZOK;
    snprintf(rel, sizeof rel, "%.*s", (int)r->path_len, r->path);
    const char *kid = strrchr(rel, '/');
    if (!kid || !released_as(at, name, kid + 1, &jn))
        return ZOK;
    if (layout_queue_path(qdir, sizeof qdir, look->a->cfg.zk_root, at->queue, NULL, NULL) != 0)
        return ZOK;
    int w = snprintf(at->path, sizeof at->path, "%s/%s", qdir, rel);
    if (w < 0 || (size_t)w >= sizeof at->path)
        return ZOK;
    at->jn = jn;
    return ZNOTHING;
}

static int find_released(struct admin *a, struct located *at)
{
    char dir[LAYOUT_PATH_MAX], name[LAYOUT_NAME_MAX + 1];
    struct String_vector kids;
    struct job_name jn;
    if (at->jn.has_results || at->jn.shard[0] || layout_format_name(&at->jn, name, sizeof name) ||
        layout_job_path(at->path, sizeof at->path, a->cfg.zk_root, at->queue, &at->jn) != 0)
        return ZNONODE; /* (the path was the dead letter's) */
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(at->path, '/') - at->path), at->path);
    int rc = zoo_get_children(a->zh, dir, 0, &kids);
    if (rc != ZOK)
        return rc;
    rc = ZNONODE;
    for (int i = 0; i < kids.count && rc == ZNONODE; i++)
        if (released_as(at, name, kids.data[i], &jn)) {
            at->jn = jn;
            snprintf(at->path + strlen(dir), sizeof at->path - strlen(dir), "/%s", kids.data[i]);
            rc = ZOK;
        }
    deallocate_String_vector(&kids);
    struct released_look look = {a, at};
    if (rc == ZNONODE && admin_claims_visit(a, at->queue, claimed_released, &look) == ZNOTHING)
        rc = ZOK; /* claimed since (layout version 3): out of its bucket */
    return rc;
}

int admin_show(struct admin *a, const char *id, struct admin_job *out, char *err,
               size_t errlen)
{
    struct located at = {0};
    memset(out, 0, sizeof *out);
    int rc = locate(a, id, &at, err, errlen);
    if (rc != 0)
        return rc;
    snprintf(out->id, sizeof out->id, "%s", id);
    out->jn = at.jn;
    effective_ttr(out, admin_queue(a, at.queue, err, errlen)); /* locate checked it */
    if (at.pk.in) {
        rc = show_packed(&at.pk, out);
        admin_packed_clear(&at.pk);
        return rc == 0 ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    }
    rc = read_job(a, at.path, out);
    if (rc == ZNONODE && !at.pk.in) /* claimed (layout version 3): out of its bucket */
        rc = admin_find_claimed(a, at.queue, at.path, out, out->holder, sizeof out->holder);
    if (rc == ZNONODE) { /* dead letters keep the name: one more O(1) look */
        layout_dead_path(at.path, sizeof at.path, a->cfg.zk_root, at.queue, &at.jn);
        out->dead = 1;
        rc = read_job(a, at.path, out);
        out->attempts = at.jn.prior_attempts; /* a<N> of a dead job counts them all */
    }
    if (rc == ZNONODE && !at.jn.shard[0]) { /* not a job: a parent waiting for its flow? */
        out->dead = 0;
        rc = read_waiting(a, id, &at.jn, out);
    }
    if (rc == ZNONODE && (rc = find_released(a, &at)) == ZOK) { /* or released */
        layout_job_id(out->id, sizeof out->id, at.queue, &at.jn);
        out->jn = at.jn;
        rc = read_job(a, at.path, out);
        if (rc == ZNONODE) /* and claimed */
            rc = admin_find_claimed(a, at.queue, at.path, out, out->holder, sizeof out->holder);
    }
    if (rc == ZNONODE)
        return not_found(err, errlen, id);
    struct layout_flow fl;
    if (rc == ZOK && at.jn.flow[0] && read_flow_node(a, at.jn.flow, &fl) == ZOK)
        snprintf(out->flow_parent, sizeof out->flow_parent, "%s", fl.parent);
    return rc == ZOK ? 0 : admin_failed(err, errlen, "reading", at.path, rc);
}

void admin_job_clear(struct admin_job *job)
{
    free(job->payload);
    job->payload = NULL;
    job->len = 0;
    free(job->children);
    job->children = NULL;
    job->nchildren = 0;
}

/* ---- cancel and reschedule, by id or by key ---- */

/* The job a cancel or reschedule acts on, and its key node when that names it: the key
 * node is then changed in the same multi, guarded by the version read here, so that a
 * concurrent change of the key makes the multi fail instead of leaving the key wrong. */
struct target {
    struct located at;
    char id[LAYOUT_ID_MAX + 1];
    char key_path[LAYOUT_PATH_MAX];
    int keyed;                  /* the key node names this job: key_version guards it */
    int key_version;
};

/* Reads the key node; 1 and *jn when it names a job, 0 when there is none (no node, a kept
 * key "done <ms> <name>", or data that is no job name), or a negative ZooKeeper code. */
static int read_key(struct admin *a, const char *path, struct job_name *jn, int *version)
{
    char data[LAYOUT_ID_MAX + 1];
    int len = (int)sizeof data;
    struct Stat st;
    int rc = zoo_get(a->zh, path, 0, data, &len, &st);
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK)
        return rc;
    *version = st.version;
    return len > 0 && len <= (int)sizeof data && st.dataLength == len &&
           layout_parse_key_data(data, (size_t)len, jn) == 0;
}

static int same_job(const struct job_name *x, const struct job_name *y)
{
    char a[LAYOUT_ID_MAX + 1], b[LAYOUT_ID_MAX + 1];
    return layout_key_data(a, sizeof a, x) == 0 && layout_key_data(b, sizeof b, y) == 0 &&
           strcmp(a, b) == 0;
}

/* By id: a keyed job's key node is read to learn its version (and left alone if it names
 * another job: then it is not this job's to change). */
static int target_by_id(struct admin *a, const char *id, struct target *t, char *err,
                        size_t errlen)
{
    memset(t, 0, sizeof *t);
    int found = locate(a, id, &t->at, err, errlen);
    if (found != 0)
        return found;
    snprintf(t->id, sizeof t->id, "%s", id);
    if (!t->at.jn.key[0])
        return 0;
    struct job_name named;
    layout_key_path(t->key_path, sizeof t->key_path, a->cfg.zk_root, t->at.queue,
                    t->at.jn.key);
    int rc = read_key(a, t->key_path, &named, &t->key_version);
    if (rc < 0)
        return admin_failed(err, errlen, "reading", t->key_path, rc);
    t->keyed = rc == 1 && same_job(&named, &t->at.jn);
    return 0;
}

/* By key: one getData of the key node names the job; no listing. */
static int target_by_key(struct admin *a, const char *queue, const char *key,
                         struct target *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (native_queue(a, queue, err, errlen) != 0)
        return -1;
    if (layout_key_path(t->key_path, sizeof t->key_path, a->cfg.zk_root, queue, key) != 0)
        return snprintf(err, errlen, "invalid key '%s' (1-%d of A-Z a-z 0-9 _ . : @ -, "
                        "starting with a letter or digit)", key, NAMES_KEY_MAX), -1;
    int rc = read_key(a, t->key_path, &t->at.jn, &t->key_version);
    if (rc < 0)
        return admin_failed(err, errlen, "reading", t->key_path, rc);
    if (rc == 0 || strcmp(t->at.jn.key, key) != 0) {
        snprintf(err, errlen, "no job with key %s in queue %s (never put, or acked, "
                 "cancelled or dead-lettered)", key, queue);
        return ADMIN_NOT_FOUND;
    }
    snprintf(t->at.queue, sizeof t->at.queue, "%s", queue);
    layout_job_path(t->at.path, sizeof t->at.path, a->cfg.zk_root, queue, &t->at.jn);
    layout_job_id(t->id, sizeof t->id, queue, &t->at.jn);
    t->keyed = 1;
    return t->at.jn.pack[0] ? locate_packed(a, &t->at, t->id, err, errlen) : 0;
}

static int find_target(struct admin *a, const struct admin_which *w, struct target *t,
                       char *err, size_t errlen)
{
    return w->key ? target_by_key(a, w->queue, w->key, t, err, errlen)
                  : target_by_id(a, w->id, t, err, errlen);
}

/* The first op of a failed multi that failed by itself (those after it are only rolled
 * back: ZRUNTIMEINCONSISTENCY). */
static int failed_op(const zoo_op_result_t *res, int n)
{
    for (int i = 0; i < n; i++)
        if (res[i].err != ZOK && res[i].err != ZRUNTIMEINCONSISTENCY)
            return i;
    return -1;
}

/* A changed key node, counter or set of lock children: read again and retry. */
#define MOVE_TRIES 5

/* Runs M (jobedit.h) as one zoo_multi; *failed: the operation that failed, or -1. */
static int run_multi(struct admin *a, const struct jobedit_multi *m, int *failed)
{
    zoo_op_t ops[JOBEDIT_OPS_MAX];
    zoo_op_result_t res[JOBEDIT_OPS_MAX];
    for (int i = 0; i < m->n; i++) {
        const struct jobedit_op *o = &m->ops[i];
        if (o->kind == JOBEDIT_DELETE)
            zoo_delete_op_init(&ops[i], o->path, o->version);
        else if (o->kind == JOBEDIT_CREATE)
            zoo_create_op_init(&ops[i], o->path, o->data, (int)o->len, &a->acl, 0, NULL, 0);
        else
            zoo_set_op_init(&ops[i], o->path, o->data, (int)o->len, o->version, NULL);
    }
    int rc = zoo_multi(a->zh, m->n, ops, res);
    *failed = rc == ZOK ? -1 : failed_op(res, m->n);
    return rc;
}

struct cancel_ops {
    struct jobedit e;
    char kids[JOBEDIT_HOLDERS_MAX][LAYOUT_PATH_MAX + 16];
    char cpath[LAYOUT_PATH_MAX], cvalue[32];
};

/* What failed in a cancel's multi. */
enum { FAILED_NONE = -1, FAILED_HOLDER, FAILED_JOB, FAILED_OTHER, FAILED_FOREIGN_KIDS };

/* --force: the holder's lock and owner node go in the same multi, so its ack fails
 * (LEASE_LOST) instead of finding its job changed under it. */
static int add_holders(struct admin *a, const struct target *t, struct cancel_ops *c,
                       int *failed)
{
    struct String_vector kids;
    int rc = zoo_get_children(a->zh, t->at.path, 0, &kids);
    *failed = FAILED_JOB;
    if (rc != ZOK)
        return rc;
    if (kids.count > JOBEDIT_HOLDERS_MAX) {
        *failed = FAILED_FOREIGN_KIDS; /* not a deferd lock: never deleted blindly */
        rc = ZNOTEMPTY;
    }
    for (int i = 0; rc == ZOK && i < kids.count; i++) {
        snprintf(c->kids[i], sizeof c->kids[i], "%s/%s", t->at.path, kids.data[i]);
        c->e.holders[c->e.nholders++] = c->kids[i];
    }
    deallocate_String_vector(&kids);
    return rc;
}

/* A packed job: its pack is rewritten without it (or deleted) in its place, at the version
 * read. */
static void edit_pack(struct jobedit *e, const struct admin_packed *pk)
{
    if (!pk->in)
        return;
    e->pack_path = pk->path;
    e->pack_data = pk->rest;
    e->pack_len = pk->rest_len;
    e->pack_version = pk->version;
}

static int cancel_once(struct admin *a, const struct target *t, int force, int *failed)
{
    struct cancel_ops c = {.e = {.job_path = t->at.path, .counter_version = -1,
                                 .key_path = t->keyed ? t->key_path : NULL,
                                 .key_version = t->key_version}};
    struct jobedit_multi m;
    int f, rc = force && !t->at.pk.in ? add_holders(a, t, &c, failed) : ZOK;
    if (rc != ZOK)
        return rc;
    *failed = FAILED_NONE;
    int counted = admin_counter(a, t->at.queue, -1, c.cpath, sizeof c.cpath, c.cvalue,
                                sizeof c.cvalue, &c.e.counter_version);
    if (counted < 0)
        return ZSYSTEMERROR;
    if (counted > 0) {
        c.e.counter_path = c.cpath;
        c.e.counter_value = c.cvalue;
    }
    edit_pack(&c.e, &t->at.pk);
    if (jobedit_multi(&c.e, &m) != 0)
        return ZSYSTEMERROR;
    rc = run_multi(a, &m, &f);
    if (rc == ZNONODE && f == m.job && t->at.pk.in)
        rc = ZBADVERSION; /* the pack was unpacked meanwhile: look again */
    *failed = f < 0 ? FAILED_NONE : f == m.job ? FAILED_JOB : f < m.job ? FAILED_HOLDER
                                                                          : FAILED_OTHER;
    return rc;
}

/* --force of a job gone from its bucket: held in a claim (layout version 3), or gone. */
static int cancel_claimed(struct admin *a, const struct target *t, char *err, size_t errlen)
{
    int rc = ZBADVERSION;
    for (int tries = 0; tries < MOVE_TRIES && rc == ZBADVERSION; tries++)
        rc = admin_cancel_claimed(a, t->at.queue, t->at.path);
    if (rc == ZOK)
        return 0;
    if (rc == ZNONODE)
        return gone_or_claimed(a, &t->at, t->id, err, errlen);
    if (rc == ZNOTEMPTY)
        return snprintf(err, errlen, "job %s is held in the claim of a daemon whose session "
                        "ended; its claim is recovered in a moment: try again", t->id), -1;
    if (rc == ZBADVERSION)
        return snprintf(err, errlen, "job %s: its claim kept changing; nothing was cancelled, "
                        "try again", t->id), -1;
    return admin_failed(err, errlen, "cancelling (in its claim)", t->at.path, rc);
}

int admin_cancel(struct admin *a, struct admin_which *w, int force, char *err, size_t errlen)
{
    struct target t;
    int rc = ZBADVERSION, failed = FAILED_NONE;
    for (int tries = 0; tries < MOVE_TRIES; tries++) {
        int found = find_target(a, w, &t, err, errlen);
        if (found != 0)
            return found;
        rc = cancel_once(a, &t, force, &failed);
        admin_packed_clear(&t.at.pk);
        /* The job itself gone or locked is the answer; anything else moved under us. */
        if (rc == ZOK || failed == FAILED_FOREIGN_KIDS ||
            (failed == FAILED_JOB && (rc == ZNONODE || (rc == ZNOTEMPTY && !force))) ||
            (rc != ZNONODE && rc != ZBADVERSION && rc != ZNOTEMPTY))
            break;
    }
    snprintf(w->found, sizeof w->found, "%s", t.id);
    if (rc == ZNONODE && failed == FAILED_JOB && force)
        return cancel_claimed(a, &t, err, errlen);
    if (rc == ZNONODE && failed == FAILED_JOB)
        return gone_or_claimed(a, &t.at, t.id, err, errlen);
    if (rc == ZNOTEMPTY && !force)
        return in_flight(a, t.at.path, t.id, err, errlen);
    if (failed == FAILED_FOREIGN_KIDS)
        return snprintf(err, errlen, "job %s has children other than a deferd lock; not "
                        "cancelled", t.id), -1;
    if (rc == ZBADVERSION || rc == ZNOTEMPTY || rc == ZNONODE)
        return snprintf(err, errlen, "job %s: its key, lock or the queue's counter kept "
                        "changing; nothing was cancelled, try again", t.id), -1;
    return rc == ZOK ? 0 : admin_failed(err, errlen, "cancelling", t.at.path, rc);
}

/* The move: delete the job (only if unlocked) and create it under its new name in one
 * transaction, pointing its key node at the new name. Its attempts so far go into the
 * new name (a<N>). *job_gone tells a ZNONODE of the job itself. */
static int move_job(struct admin *a, const struct target *t, const struct job_name *jn,
                    const char *next, const struct admin_job *cur, int *job_gone)
{
    struct jobedit e = {.job_path = t->at.path, .next = jn, .next_path = next,
                        .payload = cur->payload, .len = (size_t)cur->len,
                        .key_path = t->keyed ? t->key_path : NULL,
                        .key_version = t->key_version};
    struct jobedit_multi m;
    int rc = ZNONODE, f;
    *job_gone = 0;
    edit_pack(&e, &t->at.pk);
    if (jobedit_multi(&e, &m) != 0)
        return ZK_ETOOLONG;
    for (int tries = 0; tries < 3 && rc == ZNONODE; tries++) {
        /* a daemon may delete an empty bucket between our create and the move */
        if ((rc = admin_create_parents(a, next)) != ZOK)
            return rc;
        rc = run_multi(a, &m, &f);
        if (rc == ZNONODE && f != m.create) {
            *job_gone = f == m.job && !t->at.pk.in; /* a pack gone was unpacked: again */
            return ZNONODE; /* the job, or its key node, is gone: not a bucket race */
        }
    }
    return rc;
}

/* One try: read the job (its payload and attempts go to the new name) and move it. */
static int reschedule_once(struct admin *a, const struct target *t, uint64_t due_ms,
                           struct job_name *jn, int *job_gone)
{
    struct admin_job cur = {0};
    char next[LAYOUT_PATH_MAX];
    const struct admin_packed *pk = &t->at.pk;
    int rc = pk->in ? ZOK : read_job(a, t->at.path, &cur);
    *job_gone = rc == ZNONODE;
    if (rc != ZOK)
        return rc;
    if (pk->in) { /* never delivered: its attempts are in its name */
        cur = (struct admin_job){.payload = (char *)pk->job.payload,
                                 .len = (int)pk->job.payload_len,
                                 .attempts = t->at.jn.prior_attempts};
    }
    jobedit_next_name(jn, &t->at.jn, due_ms, cur.attempts);
    layout_job_path(next, sizeof next, a->cfg.zk_root, t->at.queue, jn);
    if (cur.locked)
        rc = ZNOTEMPTY;
    else if (strcmp(next, t->at.path) != 0 || pk->in) /* out of its pack in any case */
        rc = move_job(a, t, jn, next, &cur, job_gone);
    if (!pk->in)
        admin_job_clear(&cur);
    return rc;
}

int admin_reschedule(struct admin *a, struct admin_which *w, uint64_t due_ms,
                     char *new_id, size_t idlen, char *err, size_t errlen)
{
    struct target t;
    struct job_name jn;
    int rc = ZBADVERSION, gone = 0;
    if (due_ms > LAYOUT_DUE_MAX)
        return snprintf(err, errlen, "due time %llu is past the year 2286",
                        (unsigned long long)due_ms), -1;
    for (int tries = 0; tries < MOVE_TRIES && (rc == ZBADVERSION || (rc == ZNONODE && !gone));
         tries++) {
        int found = find_target(a, w, &t, err, errlen);
        if (found != 0)
            return found;
        rc = reschedule_once(a, &t, due_ms, &jn, &gone);
        admin_packed_clear(&t.at.pk);
    }
    snprintf(w->found, sizeof w->found, "%s", t.id);
    if (rc == ZNONODE)
        return gone ? gone_or_claimed(a, &t.at, t.id, err, errlen)
                    : (snprintf(err, errlen, "job %s: its key node kept changing; nothing was "
                                "moved, try again", t.id), -1);
    if (rc == ZNOTEMPTY)
        return in_flight(a, t.at.path, t.id, err, errlen);
    if (rc == ZBADVERSION)
        return snprintf(err, errlen, "job %s: its key node kept changing; nothing was moved, "
                        "try again", t.id), -1;
    if (rc != ZOK)
        return admin_failed(err, errlen, "rescheduling", t.at.path, rc);
    layout_job_id(new_id, idlen, t.at.queue, &jn);
    return 0;
}
