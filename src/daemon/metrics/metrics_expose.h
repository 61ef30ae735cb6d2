/* The metrics' exposition: the Prometheus text (docs/metrics.md) and the STATS QUEUE line,
 * from the registry's counters (metrics.h) and gauges read from their owners (jobs,
 * consumers, session state, puts waiting) when asked, never counted twice. Loop thread
 * only. */
#ifndef DEFERD_METRICS_EXPOSE_H
#define DEFERD_METRICS_EXPOSE_H

#include <stddef.h>

struct evbuffer;
struct metrics;

/* The Prometheus text format, version 0.0.4. 0, or -1 when out of memory. */
int metrics_expose(struct metrics *m, struct evbuffer *out);
/* "key=value ..." for STATS QUEUE (docs/protocol.md); -1 when no such queue. */
int metrics_expose_queue(struct metrics *m, const char *queue, char *buf, size_t len);
/* The same with every queue's job counts read already (dispatcher_queue_counts into ALL,
 * which walks every mirrored job): a page of many queues walks them once, not per queue. */
struct queue_counts;
int metrics_expose_queue_counted(struct metrics *m, const char *queue,
                                 const struct queue_counts *all, char *buf, size_t len);

#endif
