/* The queue depth's exposition: Prometheus gauges and STATS QUEUE fields from the last
 * complete refresh of each queue (depth.h). A queue not refreshed yet has no series: a
 * zero would claim an empty queue. */
#include <event2/buffer.h>
#include <stdio.h>

#include "config.h"
#include "daemon.h"
#include "depth.h"
#include "metrics_int.h"
#include "cluster_time.h"
#include "units.h"

static void windows_out(const struct config *cfg, const struct depth *dp, struct evbuffer *out)
{
    metrics_family(out, "deferd_queue_jobs", "gauge",
                   "Jobs of the queue in ZooKeeper, all daemons', by due time: overdue (due "
                   "by the last depth refresh, held ones too), minute (within 60 s), hour "
                   "(the rest of the hour), from the depth refresh; day, week, later (by "
                   "100-second bucket) from the last census pass.");
    int64_t now = cluster_now_ms();
    for (size_t i = 0; i < cfg->nqueues; i++) {
        const char *q = cfg->queues[i]->name;
        const struct depth_counts *c = depth_of(dp, q);
        struct depth_census cs;
        for (int w = 0; c && c->refreshed_ms && w < DW_COUNT; w++)
            evbuffer_add_printf(out, "deferd_queue_jobs{queue=\"%s\",window=\"%s\"} %llu\n",
                                q, depth_window_names[w], (unsigned long long)c->jobs[w]);
        if (depth_census_of(dp, q, now, &cs) == 0)
            evbuffer_add_printf(out, "deferd_queue_jobs{queue=\"%s\",window=\"day\"} %llu\n"
                                     "deferd_queue_jobs{queue=\"%s\",window=\"week\"} %llu\n"
                                     "deferd_queue_jobs{queue=\"%s\",window=\"later\"} %llu\n",
                                q, (unsigned long long)cs.day, q, (unsigned long long)cs.week, q,
                                (unsigned long long)cs.later);
    }
}

static void census_out(const struct config *cfg, const struct depth *dp, struct evbuffer *out)
{
    struct depth_census cs;
    int64_t now = cluster_now_ms();
    metrics_family(out, "deferd_queue_census_jobs", "gauge",
                   "Every job of the queue in ZooKeeper, due at any time, as the last complete "
                   "census pass counted them.");
    for (size_t i = 0; i < cfg->nqueues; i++)
        if (depth_census_of(dp, cfg->queues[i]->name, now, &cs) == 0)
            evbuffer_add_printf(out, "deferd_queue_census_jobs{queue=\"%s\"} %llu\n",
                                cfg->queues[i]->name, (unsigned long long)cs.total);
    metrics_family(out, "deferd_queue_census_timestamp_seconds", "gauge",
                   "When the last complete census pass of the queue began, Unix time.");
    for (size_t i = 0; i < cfg->nqueues; i++)
        if (depth_census_of(dp, cfg->queues[i]->name, now, &cs) == 0)
            evbuffer_add_printf(out, "deferd_queue_census_timestamp_seconds{queue=\"%s\"} "
                                "%.3f\n", cfg->queues[i]->name, (double)cs.began_ms / 1e3);
    metrics_family(out, "deferd_queue_census_reads_total", "counter",
                   "ZooKeeper reads made by this daemon's census passes, all queues "
                   "([metrics] census_rate a second at most for each).");
    evbuffer_add_printf(out, "deferd_queue_census_reads_total %llu\n",
                        (unsigned long long)depth_census_reads_total(dp));
}

/* One gauge a queue; WHICH picks the value from a refresh. */
enum gauge { G_DEAD, G_OLDEST, G_REFRESHED, G_TRUNCATED };

static void gauge_out(const struct config *cfg, const struct depth *dp, struct evbuffer *out,
                      const char *name, enum gauge which)
{
    for (size_t i = 0; i < cfg->nqueues; i++) {
        const struct depth_counts *c = depth_of(dp, cfg->queues[i]->name);
        if (!c || !c->refreshed_ms)
            continue;
        int64_t ms = which == G_REFRESHED ? c->refreshed_ms
                     : c->oldest_due_ms   ? c->refreshed_ms - c->oldest_due_ms
                                          : 0;
        if (which == G_DEAD || which == G_TRUNCATED)
            evbuffer_add_printf(out, "%s{queue=\"%s\"} %llu\n", name, cfg->queues[i]->name,
                                which == G_DEAD ? (unsigned long long)c->dead
                                                : (unsigned long long)c->truncated);
        else
            evbuffer_add_printf(out, "%s{queue=\"%s\"} %.3f\n", name, cfg->queues[i]->name,
                                (double)ms / 1e3);
    }
}

void metrics_depth_out(struct metrics *m, struct evbuffer *out)
{
    static const struct { const char *name, *help; enum gauge which; } g[] = {
        {"deferd_queue_dead_jobs", "Dead letters of the queue in ZooKeeper, at the last depth "
                                   "refresh.", G_DEAD},
        {"deferd_queue_oldest_overdue_seconds", "How long the queue's most overdue job was due "
                                                "at the last depth refresh (0 when none was).",
         G_OLDEST},
        {"deferd_queue_depth_refreshed_timestamp_seconds", "When the last complete depth "
                                                           "refresh of the queue began, Unix time.",
         G_REFRESHED},
        {"deferd_queue_depth_truncated", "1 when the last depth refresh stopped at [metrics] "
                                         "depth_max_reads: its windows count less than the "
                                         "queue holds.", G_TRUNCATED},
    };
    const struct config *cfg = m->d->cfg;
    const struct depth *dp = m->d->depth;
    windows_out(cfg, dp, out);
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        metrics_family(out, g[k].name, "gauge", g[k].help);
        gauge_out(cfg, dp, out, g[k].name, g[k].which);
    }
    census_out(cfg, dp, out);
    metrics_family(out, "deferd_queue_depth_reads_total", "counter",
                   "ZooKeeper reads made by this daemon's depth refreshes.");
    evbuffer_add_printf(out, "deferd_queue_depth_reads_total %llu\n",
                        (unsigned long long)depth_reads_total(dp));
}

/* " depth_day=... census_age_ms=...", "-" before the first census pass. */
static int census_fields(struct metrics *m, const char *queue, char *buf, size_t len)
{
    struct depth_census cs;
    int64_t now = cluster_now_ms();
    if (depth_census_of(m->d->depth, queue, now, &cs) != 0)
        return snprintf(buf, len, " depth_day=- depth_week=- depth_later=- census_total=- "
                                  "census_age_ms=-");
    return snprintf(buf, len, " depth_day=%llu depth_week=%llu depth_later=%llu "
                              "census_total=%llu census_age_ms=%lld",
                    (unsigned long long)cs.day, (unsigned long long)cs.week,
                    (unsigned long long)cs.later, (unsigned long long)cs.total,
                    (long long)(now - cs.began_ms));
}

/* " depth_overdue=... depth_truncated=...", "-" before the first refresh. */
static int refresh_fields(struct metrics *m, const char *queue, char *buf, size_t len)
{
    const struct depth_counts *c = depth_of(m->d->depth, queue);
    if (!c || !c->refreshed_ms)
        return snprintf(buf, len, " depth_overdue=- depth_minute=- depth_hour=- depth_dead=- "
                                  "depth_oldest_overdue_ms=- depth_age_ms=- depth_truncated=-");
    return snprintf(buf, len, " depth_overdue=%llu depth_minute=%llu depth_hour=%llu "
                              "depth_dead=%llu depth_oldest_overdue_ms=%lld depth_age_ms=%lld "
                              "depth_truncated=%d",
                    (unsigned long long)c->jobs[DW_OVERDUE],
                    (unsigned long long)c->jobs[DW_MINUTE], (unsigned long long)c->jobs[DW_HOUR],
                    (unsigned long long)c->dead,
                    (long long)(c->oldest_due_ms ? c->refreshed_ms - c->oldest_due_ms : 0),
                    (long long)(cluster_now_ms() - c->refreshed_ms), c->truncated);
}

int metrics_depth_fields(struct metrics *m, const char *queue, char *buf, size_t len)
{
    int n = refresh_fields(m, queue, buf, len);
    if (n < 0 || (size_t)n >= len)
        return n;
    int k = census_fields(m, queue, buf + n, len - (size_t)n);
    return k < 0 ? k : n + k;
}
