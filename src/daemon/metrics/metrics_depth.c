/* The queue depth's exposition: Prometheus gauges and STATS QUEUE fields from the last
 * complete refresh of each queue (depth.h). A queue not refreshed yet has no series: a
 * zero would claim an empty queue. */
#include <event2/buffer.h>
#include <stdio.h>

#include "config.h"
#include "daemon.h"
#include "depth.h"
#include "metrics_int.h"
#include "units.h"

static void windows_out(const struct config *cfg, const struct depth *dp, struct evbuffer *out)
{
    metrics_family(out, "deferd_queue_jobs", "gauge",
                   "Jobs of the queue in ZooKeeper, all daemons', by due time at the last "
                   "depth refresh: overdue (due by then, held ones too), minute (within 60 s), "
                   "hour (the rest of the hour). Later jobs are not counted.");
    for (size_t i = 0; i < cfg->nqueues; i++) {
        const struct depth_counts *c = depth_of(dp, cfg->queues[i]->name);
        for (int w = 0; c && c->refreshed_ms && w < DW_COUNT; w++)
            evbuffer_add_printf(out, "deferd_queue_jobs{queue=\"%s\",window=\"%s\"} %llu\n",
                                cfg->queues[i]->name, depth_window_names[w],
                                (unsigned long long)c->jobs[w]);
    }
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
    metrics_family(out, "deferd_queue_depth_reads_total", "counter",
                   "ZooKeeper reads made by this daemon's depth refreshes.");
    evbuffer_add_printf(out, "deferd_queue_depth_reads_total %llu\n",
                        (unsigned long long)depth_reads_total(dp));
}

int metrics_depth_fields(struct metrics *m, const char *queue, char *buf, size_t len)
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
                    (long long)(units_wall_ms() - c->refreshed_ms), c->truncated);
}
