#include "tokensweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_time.h"
#include "config.h"
#include "daemon.h"
#include "layout.h"
#include "log.h"
#include "periodic.h"
#include "units.h"
#include "zkstore.h"

#define TICK_MS 1000
#define FIRST_PASS_MS 3000
#define PASS_EVERY_MS 60000
#define DELETES_IN_FLIGHT 256

struct tokensweep {
    struct deferd *d;
    struct periodic *tick;
    int64_t next_pass;       /* monotonic */
    int active;              /* a pass is under way */
    int busy;                /* a listing is on its way */
    size_t queue;            /* the pass's queue (index into the config's queues) */
    char **dirs;             /* the queue's old minute directories, still to sweep */
    int ndirs, dir;
    char **names;            /* the directory's tokens, being deleted */
    int nnames, next, out;   /* next to delete; deletes on their way */
    char base[LAYOUT_PATH_MAX]; /* <root>/queues/<q>/tokens */
    struct tokensweep_counts counts;
};

static void free_list(char ***list, int *n)
{
    for (int i = 0; i < *n; i++)
        free((*list)[i]);
    free(*list);
    *list = NULL;
    *n = 0;
}

static char **copy_list(char **src, int n)
{
    char **out = calloc(n > 0 ? (size_t)n : 1, sizeof *out);
    for (int i = 0; out && i < n; i++)
        if (!(out[i] = strdup(src[i]))) {
            free_list(&out, &i);
            return NULL;
        }
    return out;
}

static void next_queue(struct tokensweep *ts);

/* <base>/<dir>[/<name>]; -1 if it does not fit (then it is skipped). */
static int path_of(const struct tokensweep *ts, char *buf, size_t len, const char *name)
{
    int n = name ? snprintf(buf, len, "%s/%s/%s", ts->base, ts->dirs[ts->dir], name)
                 : snprintf(buf, len, "%s/%s", ts->base, ts->dirs[ts->dir]);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

static void end_queue(struct tokensweep *ts)
{
    free_list(&ts->dirs, &ts->ndirs);
    free_list(&ts->names, &ts->nnames);
    ts->queue++;
    next_queue(ts);
}

/* A name under tokens/ that is a whole minute over long enough ago; anything else (a
 * foreign node, a minute still in use) is left alone. */
static int expired_minute(const char *name, int64_t now)
{
    char *end;
    unsigned long long m = strtoull(name, &end, 10);
    if (*end || end == name || name[0] == '0' || m > (unsigned long long)INT64_MAX / 2 /
        LAYOUT_TOKEN_MINUTE_MS)
        return 0;
    return (int64_t)(m + 1) * LAYOUT_TOKEN_MINUTE_MS + LAYOUT_TOKEN_KEEP_MS < now;
}

static void sweep_dir(struct tokensweep *ts);

static void on_dir_deleted(const struct zk_result *res, void *ctx)
{
    struct tokensweep *ts = ctx;
    ts->busy = 0;
    if (res->rc == ZOK)
        ts->counts.dirs++;
    else if (res->rc != ZNONODE && res->rc != ZNOTEMPTY) /* NotEmpty: a late token; next pass */
        log_warn("token sweep: deleting %s/%s failed: %s", ts->base, ts->dirs[ts->dir],
                 zk_strerror(res->rc));
    ts->dir++;
    free_list(&ts->names, &ts->nnames);
    sweep_dir(ts);
}

static void delete_more(struct tokensweep *ts);

static void on_token_deleted(const struct zk_result *res, void *ctx)
{
    struct tokensweep *ts = ctx;
    ts->out--;
    if (res->rc == ZOK)
        ts->counts.tokens++;
    delete_more(ts);
}

/* Keeps up to DELETES_IN_FLIGHT deletes on their way; the directory's own once all came. */
static void delete_more(struct tokensweep *ts)
{
    char path[LAYOUT_PATH_MAX];
    while (ts->out < DELETES_IN_FLIGHT && ts->next < ts->nnames) {
        if (path_of(ts, path, sizeof path, ts->names[ts->next++]) != 0 ||
            zkstore_delete(ts->d->zs, path, -1, on_token_deleted, ts) != ZOK)
            continue; /* not connected: the next pass */
        ts->out++;
    }
    if (ts->out > 0 || ts->busy)
        return;
    ts->busy = 1;
    if (path_of(ts, path, sizeof path, NULL) != 0 ||
        zkstore_delete(ts->d->zs, path, -1, on_dir_deleted, ts) != ZOK) {
        ts->busy = 0;
        end_queue(ts);
    }
}

static void on_dir_listed(const struct zk_result *res, void *ctx)
{
    struct tokensweep *ts = ctx;
    ts->busy = 0;
    if (res->rc != ZOK) {
        if (res->rc == ZNONODE) { /* another daemon's sweep was first */
            ts->dir++;
            sweep_dir(ts);
        } else {
            end_queue(ts);
        }
        return;
    }
    if (!(ts->names = copy_list(res->children, res->nchildren))) {
        end_queue(ts);
        return;
    }
    ts->nnames = res->nchildren;
    ts->next = 0;
    delete_more(ts);
}

static void sweep_dir(struct tokensweep *ts)
{
    char path[LAYOUT_PATH_MAX];
    if (ts->dir >= ts->ndirs || !zkstore_connected(ts->d->zs)) {
        end_queue(ts);
        return;
    }
    ts->busy = 1;
    if (path_of(ts, path, sizeof path, NULL) != 0 ||
        zkstore_children(ts->d->zs, path, 0, on_dir_listed, ts) != ZOK) {
        ts->busy = 0;
        end_queue(ts);
    }
}

static void on_tokens_listed(const struct zk_result *res, void *ctx)
{
    struct tokensweep *ts = ctx;
    int64_t now = cluster_now_ms();
    ts->busy = 0;
    if (res->rc != ZOK) { /* NoNode: the queue never had a token */
        if (res->rc != ZNONODE)
            log_warn("token sweep: listing %s failed: %s", ts->base, zk_strerror(res->rc));
        end_queue(ts);
        return;
    }
    ts->dirs = calloc(res->nchildren > 0 ? (size_t)res->nchildren : 1, sizeof *ts->dirs);
    for (int i = 0; ts->dirs && i < res->nchildren; i++)
        if (expired_minute(res->children[i], now) &&
            (ts->dirs[ts->ndirs] = strdup(res->children[i])))
            ts->ndirs++;
    ts->dir = 0;
    sweep_dir(ts);
}

/* The pass's next native queue, or the pass's end. */
static void next_queue(struct tokensweep *ts)
{
    const struct config *cfg = ts->d->cfg;
    while (ts->queue < cfg->nqueues && cfg->queues[ts->queue]->format != QF_NATIVE)
        ts->queue++;
    if (ts->queue >= cfg->nqueues || !zkstore_connected(ts->d->zs) || ts->d->drain) {
        ts->active = 0;
        ts->counts.passes++;
        ts->next_pass = units_mono_ms() + PASS_EVERY_MS;
        return;
    }
    int rc = layout_queue_path(ts->base, sizeof ts->base, cfg->zk_root,
                               cfg->queues[ts->queue]->name, LAYOUT_TOKENS, NULL);
    ts->busy = 1;
    if (rc != 0 ||
        zkstore_children(ts->d->zs, ts->base, 0, on_tokens_listed, ts) != ZOK) {
        ts->busy = 0;
        ts->queue = cfg->nqueues; /* not connected: the pass ends */
        next_queue(ts);
    }
}

static void on_tick(void *arg)
{
    struct tokensweep *ts = arg;
    if (ts->active || !zkstore_connected(ts->d->zs) || ts->d->drain ||
        !cluster_time_ready() || units_mono_ms() < ts->next_pass)
        return;
    ts->active = 1;
    ts->queue = 0;
    next_queue(ts);
}

struct tokensweep *tokensweep_new(struct deferd *d)
{
    struct tokensweep *ts = calloc(1, sizeof *ts);
    if (!ts)
        return NULL;
    ts->d = d;
    ts->next_pass = units_mono_ms() + FIRST_PASS_MS;
    ts->tick = periodic_new(d->base, TICK_MS, on_tick, ts);
    if (!ts->tick || periodic_start(ts->tick) != 0) {
        tokensweep_free(ts);
        return NULL;
    }
    return ts;
}

void tokensweep_report(const struct tokensweep *ts, struct tokensweep_counts *out)
{
    *out = ts ? ts->counts : (struct tokensweep_counts){0};
}

void tokensweep_free(struct tokensweep *ts)
{
    if (!ts)
        return;
    free_list(&ts->dirs, &ts->ndirs);
    free_list(&ts->names, &ts->nnames);
    periodic_free(ts->tick);
    free(ts);
}
