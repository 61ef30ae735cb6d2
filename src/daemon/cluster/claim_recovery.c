#include "claim_recovery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attempts.h"
#include "claimdata.h"
#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "layout.h"
#include "log.h"
#include "periodic.h"
#include "zkerr.h"
#include "zkstore.h"

#define RESCAN_MS 60000             /* a claim whose session went while no watch was set */
#define RECOVER_OPS_MAX 1000        /* per transaction: a claim of 128 jobs may need more */
#define RECOVER_BYTES_MAX (400 * 1024)
#define RECORD_OPS_MAX (3 + ATTEMPTS_REPLAY_OPS * ATTEMPTS_REPLAY_MAX)

struct candidate {
    struct candidate *next;
    uint64_t session;
    char path[];
};

struct claim_recovery {
    struct deferd *d;
    struct periodic *every;
    int64_t marked;             /* the session whose node exists */
    int marking, scanning, again;
    size_t listings;            /* claims/ listings of this scan still to come */
    struct candidate *cands;
    struct recovery *active;    /* claims being recovered: a later look leaves them be */
    struct claim_recovery_counts n;
};

/* One claim being recovered, a chunk of its records at a time. */
struct recovery {
    struct claim_recovery *cr;
    struct recovery *next;      /* in cr->active */
    char path[LAYOUT_PATH_MAX];
    size_t dir_len;             /* the queue's node: the path before "/claims/" */
    int32_t version;
    char *data;
    struct claim_record recs[CLAIM_JOBS_MAX];
    uint32_t n, first, count;   /* records; the chunk on its way */
    unsigned char skip[CLAIM_JOBS_MAX]; /* found made already: left out */
    int op_rec[RECOVER_OPS_MAX]; /* the record of each operation of the chunk, -1 the claim's */
    uint32_t rec_k[CLAIM_JOBS_MAX]; /* each record's place in the chunk: its path r->paths[2k] */
    int tries;                  /* bucket directories made for it */
    unsigned char *rest;        /* the claim's data after the chunk */
    char (*paths)[LAYOUT_PATH_MAX];
};

static void scan(struct claim_recovery *cr);
static void read_claim(struct recovery *rc);

static int enabled(const struct claim_recovery *cr)
{
    return cr->d->layout_version >= LAYOUT_VERSION_CLAIMS && cr->d->session_id != 0;
}

static void recovery_free(struct recovery *r)
{
    struct recovery **at = &r->cr->active;
    while (*at && *at != r)
        at = &(*at)->next;
    if (*at)
        *at = r->next;
    free(r->data);
    free(r->rest);
    free(r->paths);
    free(r);
}

/* ---- one claim ---- */

/* The znode path of record I (made again under its name, or a<N> past the replays). */
static int record_path(const struct recovery *r, uint32_t i, char *buf, size_t len)
{
    const struct claim_record *rec = &r->recs[i];
    int n = snprintf(buf, len, "%.*s/%.*s", (int)r->dir_len, r->path, (int)rec->path_len,
                     rec->path);
    if (n < 0 || (size_t)n >= len)
        return -1;
    return claimdata_remade_path(buf, len, rec->deliveries);
}

/* Record I's operations: its job created, set once (its version says it was made again:
 * claim.h) and its deliveries replayed as children created and deleted. */
static int record_ops(struct recovery *r, uint32_t i, uint32_t k, struct zk_txn_op *ops)
{
    char *path = r->paths[2 * k], *child = r->paths[2 * k + 1];
    const struct claim_record *rec = &r->recs[i];
    int n = 0;
    if (record_path(r, i, path, LAYOUT_PATH_MAX) != 0 ||
        layout_lock_path(child, LAYOUT_PATH_MAX, path) != 0)
        return -1;
    ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = path, .data = rec->payload,
                                  .len = rec->len};
    if (rec->deliveries > ATTEMPTS_REPLAY_MAX)
        return n;
    ops[n++] = (struct zk_txn_op){.kind = ZT_SET, .path = path, .data = rec->payload,
                                  .len = rec->len, .version = 0};
    for (uint32_t d = 0; d < 2 * rec->deliveries; d++) {
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = child};
        ops[n++] = (struct zk_txn_op){.kind = ZT_DELETE, .path = child, .version = -1};
    }
    return n;
}

/* The claim's data without the records before END (and the skipped ones) into r->rest. */
static long rest_data(struct recovery *r, uint32_t end)
{
    struct claim_record keep[CLAIM_JOBS_MAX];
    uint32_t n = 0;
    size_t bytes = 0;
    for (uint32_t i = end; i < r->n; i++) {
        if (r->skip[i])
            continue;
        keep[n] = r->recs[i];
        bytes += claimdata_record_size(keep[n].path_len, keep[n].len);
        n++;
    }
    free(r->rest);
    size_t size = claimdata_size(bytes);
    if (!n || !(r->rest = malloc(size)))
        return n ? -1 : 0;
    return claimdata_write(r->rest, size, keep, n);
}

static void on_recovered(const struct zk_result *res, void *ctx);

/* The next chunk: the claim's write first (set without the chunk, or delete at the end). */
static void send_chunk(struct recovery *r)
{
    static struct zk_txn_op ops[RECOVER_OPS_MAX + RECORD_OPS_MAX];
    uint32_t i = r->first, k = 0;
    int n = 1;
    size_t bytes = 0;
    free(r->paths);
    r->paths = calloc(2 * CLAIM_JOBS_MAX, sizeof *r->paths);
    r->op_rec[0] = -1;
    for (; r->paths && i < r->n; i++) {
        if (r->skip[i])
            continue;
        if (n + RECORD_OPS_MAX > RECOVER_OPS_MAX || bytes + r->recs[i].len > RECOVER_BYTES_MAX)
            break;
        r->rec_k[i] = k;
        int m = record_ops(r, i, k++, &ops[n]);
        if (m < 0) {
            r->skip[i] = 1;
            log_error("%s: record %u names no job path; left out", r->path, i);
            continue;
        }
        for (int j = 0; j < m; j++)
            r->op_rec[n + j] = (int)i;
        n += m;
        bytes += r->recs[i].len;
    }
    r->count = i - r->first;
    long len = i < r->n ? rest_data(r, i) : 0;
    if (!r->paths || len < 0) {
        log_error("%s: out of memory recovering it; left for the next look", r->path);
        recovery_free(r);
        return;
    }
    ops[0] = i < r->n ? (struct zk_txn_op){.kind = ZT_SET, .path = r->path, .data = r->rest,
                                           .len = (size_t)len, .version = r->version}
                      : (struct zk_txn_op){.kind = ZT_DELETE, .path = r->path,
                                           .version = r->version};
    if (zkstore_multi(r->cr->d->zs, ops, n, on_recovered, r) != ZOK)
        recovery_free(r);
}

static void on_dirs_made(const struct zk_result *res, void *ctx)
{
    struct recovery *r = ctx;
    if (res->rc == ZOK) {
        send_chunk(r);
        return;
    }
    log_warn("%s: cannot make a bucket of its jobs (%s): %s; left for the next look", r->path,
             res->path ? res->path : "?", zk_strerror(res->rc));
    recovery_free(r);
}

static void on_recovered(const struct zk_result *res, void *ctx)
{
    struct recovery *r = ctx;
    struct claim_recovery *cr = r->cr;
    int bad = zk_failed_op(res);
    int rec = bad > 0 && bad < RECOVER_OPS_MAX ? r->op_rec[bad] : -1;
    if (res->rc == ZOK) {
        cr->n.jobs += r->count;
        r->first += r->count;
        r->version++;
        r->tries = 0;
        if (r->first < r->n) {
            send_chunk(r);
            return;
        }
        cr->n.claims++;
        log_info("%s: its session is gone: recovered (%u job%s back in their queue)", r->path,
                 r->n, r->n == 1 ? "" : "s");
    } else if (bad == 0) { /* the claim changed: recovered by another daemon, or more to see */
        cr->n.lost_races++;
        if (res->rc == ZBADVERSION) {
            read_claim(r);
            return;
        }
    } else if (rec >= 0 && res->rc == ZNODEEXISTS) { /* that job is there already */
        log_warn("%s: job %.*s exists already; left out of the recovery", r->path,
                 (int)r->recs[rec].path_len, r->recs[rec].path);
        r->skip[rec] = 1;
        send_chunk(r);
        return;
    } else if (rec >= 0 && res->rc == ZNONODE && r->tries < 3) { /* its bucket went */
        int prc = zkstore_parents_missing(cr->d->zs, r->paths[2 * r->rec_k[rec]], &r->tries,
                                          on_dirs_made, r);
        if (prc == ZK_PARENTS_ASKED)
            return;
        if (prc == ZK_PARENTS_RESEND) {
            send_chunk(r);
            return;
        }
    } else if (res->rc == ZCONNECTIONLOSS || res->rc == ZOPERATIONTIMEOUT) {
        read_claim(r); /* what it holds now says what was applied */
        return;
    } else if (res->rc != ZNONODE || rec >= 0) {
        log_warn("%s: recovering it failed: %s; left for the next look", r->path,
                 zk_strerror(res->rc));
    }
    recovery_free(r);
}

static void on_claim_read(const struct zk_result *res, void *ctx)
{
    struct recovery *r = ctx;
    char err[128];
    if (res->rc != ZOK) {
        if (res->rc != ZNONODE)
            log_warn("%s: cannot read it to recover it: %s", r->path, zk_strerror(res->rc));
        recovery_free(r);
        return;
    }
    free(r->data);
    r->data = malloc(res->datalen > 0 ? (size_t)res->datalen : 1);
    if (!r->data) {
        recovery_free(r);
        return;
    }
    if (res->datalen > 0)
        memcpy(r->data, res->data, (size_t)res->datalen);
    if (claimdata_read(r->data, res->datalen > 0 ? (size_t)res->datalen : 0, r->recs,
                       CLAIM_JOBS_MAX, &r->n, err, sizeof err) != CLAIM_OK) {
        r->cr->n.unreadable++;
        log_error("%s: %s: not recovered, not deleted (deferd reads only its own claims)",
                  r->path, err);
        recovery_free(r);
        return;
    }
    r->version = res->stat.version;
    r->first = 0;
    memset(r->skip, 0, sizeof r->skip);
    send_chunk(r);
}

static void read_claim(struct recovery *r)
{
    if (zkstore_get(r->cr->d->zs, r->path, on_claim_read, r) != ZOK)
        recovery_free(r);
}

/* Recovers the claim at PATH, unless a recovery of it is on its way (a watch and the
 * rescan may both find it: two would only race each other's version checks). */
static void recover(struct claim_recovery *cr, const char *path)
{
    for (const struct recovery *a = cr->active; a; a = a->next)
        if (strcmp(a->path, path) == 0)
            return;
    struct recovery *r = calloc(1, sizeof *r);
    const char *dir = strstr(path, "/" LAYOUT_CLAIMS "/");
    if (!r || !dir || strlen(path) >= sizeof r->path) {
        free(r);
        return;
    }
    r->cr = cr;
    r->next = cr->active;
    cr->active = r;
    strcpy(r->path, path);
    r->dir_len = (size_t)(dir - path);
    read_claim(r);
}

/* ---- looking for claims of dead sessions ---- */

static void scan_done(struct claim_recovery *cr)
{
    cr->scanning = 0;
    while (cr->cands) {
        struct candidate *c = cr->cands;
        cr->cands = c->next;
        free(c);
    }
    if (cr->again) {
        cr->again = 0;
        scan(cr);
    }
}

static int session_listed(const struct zk_result *res, uint64_t session)
{
    char hex[20];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)session);
    for (int i = 0; i < res->nchildren; i++)
        if (strcmp(res->children[i], hex) == 0)
            return 1;
    return 0;
}

/* Listed after the claims: a claim's session made its node before the claim, so a node
 * missing now is a session gone. */
static void on_sessions_listed(const struct zk_result *res, void *ctx)
{
    struct claim_recovery *cr = ctx;
    if (res->rc == ZOK || res->rc == ZNONODE) {
        for (struct candidate *c = cr->cands; c; c = c->next)
            if (res->rc == ZNONODE || !session_listed(res, c->session))
                recover(cr, c->path);
    }
    scan_done(cr);
}

static void listings_done(struct claim_recovery *cr)
{
    char path[LAYOUT_PATH_MAX];
    if (!cr->cands) { /* nothing of another session: the watch is all that is needed */
        layout_session_path(path, sizeof path, cr->d->cfg->zk_root, 0);
        zkstore_children(cr->d->zs, path, 1, NULL, NULL);
        scan_done(cr);
        return;
    }
    if (layout_session_path(path, sizeof path, cr->d->cfg->zk_root, 0) != 0 ||
        zkstore_children(cr->d->zs, path, 1, on_sessions_listed, cr) != ZOK)
        scan_done(cr);
}

struct listing {
    struct claim_recovery *cr;
    char dir[];
};

static void on_claims_listed(const struct zk_result *res, void *ctx)
{
    struct listing *l = ctx;
    struct claim_recovery *cr = l->cr;
    for (int i = 0; res->rc == ZOK && i < res->nchildren; i++) {
        uint64_t session, n;
        size_t len = strlen(l->dir) + strlen(res->children[i]) + 2;
        struct candidate *c;
        if (layout_parse_claim_name(res->children[i], &session, &n) != 0 ||
            (int64_t)session == cr->d->session_id || !(c = malloc(sizeof *c + len)))
            continue;
        c->session = session;
        snprintf(c->path, len, "%s/%s", l->dir, res->children[i]);
        c->next = cr->cands;
        cr->cands = c;
    }
    free(l);
    if (--cr->listings == 0)
        listings_done(cr);
}

static void scan(struct claim_recovery *cr)
{
    if (!enabled(cr))
        return;
    if (cr->scanning) {
        cr->again = 1;
        return;
    }
    cr->scanning = 1;
    cr->listings = 1; /* held until every listing is sent */
    const struct config *cfg = cr->d->cfg;
    for (size_t i = 0; i < cfg->nqueues; i++) {
        char dir[LAYOUT_PATH_MAX];
        struct listing *l;
        if (cfg->queues[i]->format != QF_NATIVE ||
            layout_queue_path(dir, sizeof dir, cfg->zk_root, cfg->queues[i]->name,
                              LAYOUT_CLAIMS, NULL) != 0 ||
            !(l = malloc(sizeof *l + strlen(dir) + 1)))
            continue;
        l->cr = cr;
        strcpy(l->dir, dir);
        cr->listings++;
        if (zkstore_children(cr->d->zs, dir, 0, on_claims_listed, l) != ZOK) {
            cr->listings--;
            free(l);
        }
    }
    if (--cr->listings == 0)
        listings_done(cr);
}

static void on_rescan(void *arg) { scan(arg); }

/* ---- this session's node ---- */

static void mark(struct claim_recovery *cr);

static void on_own_watched(const struct zk_result *res, void *ctx)
{
    (void)res;
    (void)ctx; /* the watch is what counts: set when the node exists, re-set as it fires */
}

/* A forced cancel through another daemon writes one of our claims, then touches this
 * session's node: its data watch tells the claims to read theirs again. */
static void watch_own(struct claim_recovery *cr)
{
    char path[LAYOUT_PATH_MAX];
    if (layout_session_path(path, sizeof path, cr->d->cfg->zk_root,
                            (uint64_t)cr->d->session_id) == 0)
        zkstore_exists(cr->d->zs, path, 1, on_own_watched, cr);
}

static void on_marked(const struct zk_result *res, void *ctx)
{
    struct claim_recovery *cr = ctx;
    struct deferd *d = cr->d;
    char path[LAYOUT_PATH_MAX];
    cr->marking = 0;
    layout_session_path(path, sizeof path, d->cfg->zk_root, (uint64_t)d->session_id);
    if (res->rc == ZOK || res->rc == ZNODEEXISTS) {
        cr->marked = d->session_id;
        dispatcher_claims_session(d->dispatcher, d->session_id);
        watch_own(cr);
        scan(cr);
    } else {
        log_warn("%s: cannot make this session's node: %s; jobs are locked, not claimed, "
                 "until it exists", path, zk_strerror(res->rc));
    }
}

static void on_dir_made(const struct zk_result *res, void *ctx)
{
    struct claim_recovery *cr = ctx;
    cr->marking = 0;
    if (res->rc == ZOK)
        mark(cr);
}

static void on_mark_answer(const struct zk_result *res, void *ctx)
{
    struct claim_recovery *cr = ctx;
    char path[LAYOUT_PATH_MAX];
    if (res->rc != ZNONODE) {
        on_marked(res, cr);
        return;
    }
    layout_session_path(path, sizeof path, cr->d->cfg->zk_root, (uint64_t)cr->d->session_id);
    if (zkstore_create_parents(cr->d->zs, path, on_dir_made, cr) != ZOK)
        cr->marking = 0;
}

static void mark(struct claim_recovery *cr)
{
    char path[LAYOUT_PATH_MAX];
    struct deferd *d = cr->d;
    if (cr->marking || layout_session_path(path, sizeof path, d->cfg->zk_root,
                                           (uint64_t)d->session_id) != 0)
        return;
    cr->marking = 1;
    if (zkstore_create(d->zs, path, dispatcher_ident(d->dispatcher),
                       strlen(dispatcher_ident(d->dispatcher)), 1, on_mark_answer, cr) != ZOK)
        cr->marking = 0;
}

void claim_recovery_session_up(struct claim_recovery *cr)
{
    if (!enabled(cr))
        return;
    if (cr->marked == cr->d->session_id)
        scan(cr); /* the same session back: sessions may have gone meanwhile */
    else
        mark(cr);
    periodic_start(cr->every);
}

int claim_recovery_on_watch(struct claim_recovery *cr, const char *path)
{
    char mine[LAYOUT_PATH_MAX], own[LAYOUT_PATH_MAX];
    if (cr->d->session_id &&
        layout_session_path(own, sizeof own, cr->d->cfg->zk_root,
                            (uint64_t)cr->d->session_id) == 0 && strcmp(path, own) == 0) {
        watch_own(cr);
        dispatcher_claims_poked(cr->d->dispatcher);
        return 1;
    }
    if (layout_session_path(mine, sizeof mine, cr->d->cfg->zk_root, 0) != 0 ||
        strcmp(path, mine) != 0)
        return 0;
    scan(cr);
    return 1;
}

struct claim_recovery *claim_recovery_new(struct deferd *d)
{
    struct claim_recovery *cr = calloc(1, sizeof *cr);
    if (!cr)
        return NULL;
    cr->d = d;
    if (!(cr->every = periodic_new(d->base, RESCAN_MS, on_rescan, cr))) {
        free(cr);
        return NULL;
    }
    return cr;
}

void claim_recovery_free(struct claim_recovery *cr)
{
    if (!cr)
        return;
    periodic_free(cr->every);
    while (cr->cands) {
        struct candidate *c = cr->cands;
        cr->cands = c->next;
        free(c);
    }
    free(cr);
}

void claim_recovery_counts(const struct claim_recovery *cr, struct claim_recovery_counts *out)
{
    *out = cr->n;
}
