/* /metrics for cluster-wide limits (docs/limits.md, docs/metrics.md): one family per figure,
 * a row per queue and kind of limit (concurrency, group_concurrency, rate, group_rate), read
 * from the
 * engine's limits at scrape time. */
#include <event2/buffer.h>
#include <stdlib.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "limit.h"
#include "metrics_int.h"
#include "rate.h"

enum fam { F_LIMIT, F_WINDOW, F_TAKEN, F_OURS, F_WAITING, F_WAITS, F_CONFLICTS, F_COUNT };

static const struct {
    const char *name, *type, *help;
} fams[F_COUNT] = {
    {"deferd_limit", "gauge", "The queue's limit: jobs held at once across every daemon "
     "(kind=\"concurrency\"), of each group (\"group_concurrency\"), or started per window "
     "(\"rate\"), of each group (\"group_rate\")."},
    {"deferd_limit_window_seconds", "gauge", "kind=\"rate\" or \"group_rate\": the window the "
     "rate counts in."},
    {"deferd_limit_slots_taken", "gauge", "Slots held across the cluster as this daemon "
     "believes (its own included); for a rate, slots started within the last window."},
    {"deferd_limit_slots_ours", "gauge", "Slots held by this daemon's consumers (or its lock "
     "transactions in flight)."},
    {"deferd_limit_waiting_jobs", "gauge", "Due jobs waiting because no slot is free."},
    {"deferd_limit_waits_total", "counter", "Times no slot was free while jobs were due."},
    {"deferd_limit_conflicts_total", "counter", "Slots guessed free that another daemon had "
     "taken or started (one lock transaction failed on it)."},
};

struct row_src {
    const char *queue;
    struct limit_stats ls;
    struct rate_stats rs;
};

static void row(struct evbuffer *out, enum fam f, const char *queue, const char *kind,
                double v)
{
    evbuffer_add_printf(out, "%s{queue=\"%s\",kind=\"%s\"} %.15g\n", fams[f].name, queue, kind,
                        v);
}

/* The rows of family F for one queue. */
static void rows(struct evbuffer *out, enum fam f, const struct row_src *s)
{
    const struct limit_stats *l = &s->ls;
    /* a queue with only a group limit counts its waits under that kind */
    const char *ckind = l->max ? "concurrency" : "group_concurrency";
    double lv[F_COUNT] = {l->max, 0, l->taken, l->ours, (double)l->waiting, (double)l->waits,
                          (double)l->conflicts};
    if (f == F_LIMIT && l->group_max)
        row(out, f, s->queue, "group_concurrency", l->group_max);
    if (f != F_WINDOW && (f == F_LIMIT || f == F_TAKEN ? l->max : l->max || l->group_max))
        row(out, f, s->queue, ckind, lv[f]);
    const struct rate_stats *r = &s->rs;
    double rv[F_COUNT] = {r->n, (double)r->window_ms / 1000, r->started, -1, -1,
                          (double)r->waits, (double)r->conflicts};
    if (r->n && rv[f] >= 0)
        row(out, f, s->queue, "rate", rv[f]);
    double gv[F_COUNT] = {r->group_n, (double)r->group_window_ms / 1000, -1, -1, -1,
                          (double)r->group_waits, (double)r->group_conflicts};
    if (r->group_n && gv[f] >= 0)
        row(out, f, s->queue, "group_rate", gv[f]);
}

void metrics_limits_out(struct metrics *m, struct evbuffer *out)
{
    struct dispatcher *ds = m->d->dispatcher;
    struct row_src *src = calloc(m->nqueues ? m->nqueues : 1, sizeof *src);
    if (!src)
        return;
    for (size_t i = 0; i < m->nqueues; i++) {
        src[i].queue = m->d->cfg->queues[i]->name;
        struct dqueue *q = ds ? dispatcher_queue(ds, src[i].queue) : NULL;
        limit_get_stats(q ? q->limit : NULL, &src[i].ls);
        rate_get_stats(q ? q->rate : NULL, &src[i].rs);
    }
    for (int f = 0; f < F_COUNT; f++) {
        metrics_family(out, fams[f].name, fams[f].type, fams[f].help);
        for (size_t i = 0; i < m->nqueues; i++)
            rows(out, (enum fam)f, &src[i]);
    }
    free(src);
}
