#include "keysweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "layout.h"
#include "log.h"
#include "periodic.h"
#include "metrics.h"
#include "names.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

#define TICK_MS 1000
#define PERIOD_MIN_MS 5000
#define PERIOD_MAX_MS 86400000LL
#define FIRST_PASS_MAX_MS 60000 /* a daemon's first pass of a queue: within a minute */
#define SWEEP_RETRY_MS 60000 /* after a pass that met errors */

/* One queue's sweep; allocated on its own, since calls in flight point at it. */
struct pass {
    struct deferd *d;
    const struct queue_config *qc;
    int64_t started_at;        /* monotonic ms: when the last pass began (0: never) */
    int64_t first_at;          /* monotonic ms: the first pass, spread across daemons */
    int active;
    char **dirs;               /* the queue's hash directories */
    int ndirs, next_dir, per_tick;
    int busy;                  /* calls in flight */
    int errors;                /* calls that failed (not NoNode or BadVersion) */
    unsigned expired;          /* kept keys deleted */
};

struct keysweep {
    struct deferd *d;
    struct periodic *tick;
    struct pass **passes;      /* by queue index (cfg->queues) */
    size_t n;
};

struct call {
    struct pass *p;
    char path[LAYOUT_PATH_MAX];
};

/* How long a pass of a queue with RETENTION_MS takes, and how often one starts. */
static int64_t keysweep_period_ms(uint64_t retention_ms)
{
    int64_t p = (int64_t)(retention_ms / 4);
    return p < PERIOD_MIN_MS ? PERIOD_MIN_MS : p > PERIOD_MAX_MS ? PERIOD_MAX_MS : p;
}

static void forget_dirs(struct pass *p)
{
    for (int i = 0; i < p->ndirs; i++)
        free(p->dirs[i]);
    free(p->dirs);
    p->dirs = NULL;
    p->ndirs = p->next_dir = 0;
    p->active = 0;
}

/* When the queue's next pass may start: a period (of the retention as configured now)
 * after the last began, or a minute after a pass that met errors, if that is sooner. */
static int64_t next_at(const struct pass *p)
{
    if (!p->started_at)
        return p->first_at;
    int64_t at = p->started_at + keysweep_period_ms(p->qc->key_retention_ms);
    int64_t retry = p->started_at + SWEEP_RETRY_MS;
    return p->errors && at > retry ? retry : at;
}

static void end_pass(struct pass *p)
{
    log_debug("queue %s: kept keys swept: %d hash directories, %u expired keys deleted%s",
              p->qc->name, p->ndirs, p->expired, p->errors ? ", with errors" : "");
    forget_dirs(p);
}

static void call_done(struct pass *p, struct call *c)
{
    free(c);
    p->busy--;
    if (p->busy == 0 && p->active && p->next_dir >= p->ndirs)
        end_pass(p);
}

/* A failed call: NoAuth is reported as for every other path of the queue. */
static void failed(struct pass *p, const char *path, int rc)
{
    p->errors++;
    struct dqueue *q = dispatcher_queue(p->d->dispatcher, p->qc->name);
    if (rc == ZNOAUTH && q)
        queue_denied(q, path);
    else if (p->errors == 1 && rc != ZCLOSING && rc != ZCONNECTIONLOSS &&
             rc != ZSESSIONEXPIRED && rc != ZSYSTEMERROR)
        log_warn("queue %s: %s: cannot sweep kept keys: %s; trying again in %d s",
                 p->qc->name, path, zk_strerror(rc), SWEEP_RETRY_MS / 1000);
}

/* Sends one call of KIND for PATH (VERSION: the delete's). */
enum call_kind { CK_LIST_DIRS, CK_LIST_KEYS, CK_READ, CK_DELETE };
static void send_call(struct pass *p, enum call_kind kind, const char *path, int version);

static void on_deleted(const struct zk_result *res, void *ctx)
{
    struct call *c = ctx;
    struct pass *p = c->p;
    if (res->rc == ZOK) {
        p->expired++;
        metrics_key_expired(p->d->metrics, p->qc);
    } else if (res->rc != ZNONODE && res->rc != ZBADVERSION) { /* taken over: theirs */
        failed(p, c->path, res->rc);
    }
    call_done(p, c);
}

/* The key node's name must be the key its data names, in the key's own hash directory:
 * only deferd's own kept keys are ever deleted, never a foreign znode. */
static int expired_key(const struct pass *p, const struct call *c, const struct zk_result *res)
{
    struct job_name jn;
    int64_t acked;
    char own[LAYOUT_PATH_MAX];
    const char *name = strrchr(c->path, '/') + 1;
    return res->datalen > 0 &&
           layout_parse_kept_key(res->data, (size_t)res->datalen, &acked, &jn) == 0 &&
           strcmp(jn.key, name) == 0 &&
           layout_key_path(own, sizeof own, p->d->cfg->zk_root, p->qc->name, name) == 0 &&
           strcmp(own, c->path) == 0 &&
           acked + (int64_t)p->qc->key_retention_ms <= cluster_now_ms();
}

static void on_read(const struct zk_result *res, void *ctx)
{
    struct call *c = ctx;
    struct pass *p = c->p;
    if (res->rc == ZOK && expired_key(p, c, res))
        send_call(p, CK_DELETE, c->path, res->stat.version); /* fenced: see keysweep.h */
    else if (res->rc != ZOK && res->rc != ZNONODE)
        failed(p, c->path, res->rc);
    call_done(p, c);
}

static void on_keys(const struct zk_result *res, void *ctx)
{
    struct call *c = ctx;
    struct pass *p = c->p;
    char path[LAYOUT_PATH_MAX];
    for (int i = 0; res->rc == ZOK && i < res->nchildren; i++) {
        int n = snprintf(path, sizeof path, "%s/%s", c->path, res->children[i]);
        if (names_valid_key(res->children[i]) && n > 0 && (size_t)n < sizeof path)
            send_call(p, CK_READ, path, -1);
    }
    if (res->rc != ZOK && res->rc != ZNONODE)
        failed(p, c->path, res->rc);
    call_done(p, c);
}

/* Walks the next few hash directories: a pass is spread over its period. */
static void walk(struct pass *p)
{
    char path[LAYOUT_PATH_MAX];
    for (int k = 0; k < p->per_tick && p->next_dir < p->ndirs; k++) {
        if (layout_queue_path(path, sizeof path, p->d->cfg->zk_root, p->qc->name, LAYOUT_KEYS,
                              p->dirs[p->next_dir++]) == 0)
            send_call(p, CK_LIST_KEYS, path, -1);
    }
    if (p->busy == 0 && p->next_dir >= p->ndirs) /* every call refused at once */
        end_pass(p);
}

static int hash_dir(const char *name)
{
    return strlen(name) == 3 && strspn(name, "0123456789abcdef") == 3;
}

static void on_dirs(const struct zk_result *res, void *ctx)
{
    struct call *c = ctx;
    struct pass *p = c->p;
    if (res->rc == ZOK && res->nchildren > 0 &&
        (p->dirs = calloc((size_t)res->nchildren, sizeof *p->dirs))) {
        for (int i = 0; i < res->nchildren; i++)
            if (hash_dir(res->children[i]) && (p->dirs[p->ndirs] = strdup(res->children[i])))
                p->ndirs++;
        int64_t per = (int64_t)p->ndirs * TICK_MS / keysweep_period_ms(p->qc->key_retention_ms);
        p->per_tick = (int)per + 1;
        walk(p);
    } else if (res->rc != ZOK && res->rc != ZNONODE) {
        failed(p, c->path, res->rc);
    }
    call_done(p, c);
}

static void send_call(struct pass *p, enum call_kind kind, const char *path, int version)
{
    struct zkstore *zs = p->d->zs;
    struct call *c = zkstore_connected(zs) ? malloc(sizeof *c) : NULL;
    if (!c) { /* not connected (the rest waits for the next pass), or out of memory */
        p->errors++;
        return;
    }
    c->p = p;
    snprintf(c->path, sizeof c->path, "%s", path);
    p->busy++;
    int rc = kind == CK_LIST_DIRS   ? zkstore_children(zs, c->path, 0, on_dirs, c)
             : kind == CK_LIST_KEYS ? zkstore_children(zs, c->path, 0, on_keys, c)
             : kind == CK_READ      ? zkstore_get(zs, c->path, on_read, c)
                                    : zkstore_delete(zs, c->path, version, on_deleted, c);
    if (rc != ZOK) {
        p->errors++;
        p->busy--;
        free(c);
    }
}

static void start_pass(struct pass *p)
{
    char path[LAYOUT_PATH_MAX];
    p->active = 1;
    p->errors = 0;
    p->expired = 0;
    p->started_at = units_mono_ms();
    if (layout_queue_path(path, sizeof path, p->d->cfg->zk_root, p->qc->name, LAYOUT_KEYS,
                          NULL) == 0)
        send_call(p, CK_LIST_DIRS, path, -1);
    if (p->busy == 0)
        end_pass(p);
}

/* Queues added by a reload get their first pass within a minute, as at the start: spread,
 * so that daemons started together do not sweep together. */
static int track_queues(struct keysweep *ks)
{
    const struct config *cfg = ks->d->cfg;
    if (cfg->nqueues <= ks->n)
        return 0;
    struct pass **grown = realloc(ks->passes, cfg->nqueues * sizeof *grown);
    if (!grown)
        return -1;
    ks->passes = grown;
    for (; ks->n < cfg->nqueues; ks->n++) {
        struct pass *p = calloc(1, sizeof *p);
        if (!p)
            return -1;
        const struct queue_config *qc = cfg->queues[ks->n];
        int64_t period = keysweep_period_ms(qc->key_retention_ms);
        int64_t first = period < FIRST_PASS_MAX_MS ? period : FIRST_PASS_MAX_MS;
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
            rnd = 0;
        *p = (struct pass){.d = ks->d, .qc = qc,
                           .first_at = units_mono_ms() + (int64_t)(rnd % (uint32_t)first)};
        ks->passes[ks->n] = p;
    }
    return 0;
}

static void on_tick(void *arg)
{
    struct keysweep *ks = arg;
    if (!zkstore_connected(ks->d->zs) || ks->d->drain || track_queues(ks) != 0)
        return;
    int64_t now = units_mono_ms();
    for (size_t i = 0; i < ks->n; i++) {
        struct pass *p = ks->passes[i];
        if (p->busy > 0) /* one step at a time per queue */
            continue;
        if (p->active)
            walk(p);
        else if (p->qc->format == QF_NATIVE && p->qc->key_retention_ms > 0 && now >= next_at(p))
            start_pass(p);
    }
}

struct keysweep *keysweep_new(struct deferd *d)
{
    struct keysweep *ks = calloc(1, sizeof *ks);
    if (!ks)
        return NULL;
    ks->d = d;
    ks->tick = periodic_new(d->base, TICK_MS, on_tick, ks);
    if (!ks->tick || periodic_start(ks->tick) != 0) {
        keysweep_free(ks);
        return NULL;
    }
    return ks;
}

void keysweep_free(struct keysweep *ks)
{
    if (!ks)
        return;
    for (size_t i = 0; i < ks->n; i++) {
        forget_dirs(ks->passes[i]); /* a pass cut off at exit */
        free(ks->passes[i]);
    }
    free(ks->passes);
    periodic_free(ks->tick);
    free(ks);
}
