/* The metrics registry's insides, shared by metrics.c (counting) and metrics_expose.c
 * (the Prometheus text and the STATS QUEUE line). Private to them. */
#ifndef DEFERD_METRICS_INT_H
#define DEFERD_METRICS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

#define RATE_SLOTS 60      /* rates are over the last minute, a slot per second */
#define RECENT_MAX 1024    /* STATS QUEUE's lateness percentiles: the last deliveries */
#define BUCKETS_MAX 16

/* Histogram bucket upper bounds in seconds; "+Inf" follows. */
#define METRICS_LATENESS_NLE 15
#define METRICS_ZK_NLE 14
extern const double metrics_lateness_le[METRICS_LATENESS_NLE];
extern const double metrics_zk_le[METRICS_ZK_NLE];

struct histogram {
    uint64_t n[BUCKETS_MAX];   /* per bucket, not cumulative; the last used one is +Inf */
    uint64_t count;
    double sum;
};

struct rate {
    uint32_t n[RATE_SLOTS];
    int64_t sec[RATE_SLOTS];   /* which second each slot counts */
};

enum rate_kind { RK_PUT, RK_DELIVERED, RK_ACKED, RK_COUNT };

struct qmetrics {
    uint64_t events[ME_COUNT];
    uint64_t refused[MR_COUNT];
    uint64_t denied;           /* ZooKeeper's NoAuth answers for the queue's znodes */
    uint64_t keys_expired;     /* kept keys deleted by the sweep */
    uint64_t delivered[2];     /* [0] first deliveries, [1] redeliveries (attempt > 1) */
    struct histogram lateness;
    struct histogram limit_wait; /* seconds a due job waited for a concurrency slot */
    struct rate rates[RK_COUNT];
    double recent[RECENT_MAX]; /* lateness in seconds, a ring */
    size_t nrecent, recent_next;
};

struct smetrics {
    char *name;
    uint64_t n[MS_COUNT];
};

struct metrics {
    struct deferd *d;
    struct smetrics *sched;    /* in the order first counted */
    size_t nsched;
    size_t nqueues;
    struct qmetrics *q;        /* in the order of cfg->queues */
    struct histogram zk[ZOP_COUNT];
    uint64_t web[WA_COUNT][WR_COUNT];
    int64_t start_mono_s;
    int64_t start_wall_ms;
};

extern const char *const metrics_event_names[ME_COUNT];
extern const char *const metrics_refusal_names[MR_COUNT];
extern const char *const metrics_zk_op_names[ZOP_COUNT];
extern const char *const metrics_sched_event_names[MS_COUNT];

struct evbuffer;

/* "# HELP" and "# TYPE" lines of a family. */
void metrics_family(struct evbuffer *out, const char *name, const char *type, const char *help);
/* The families of cluster-wide limits (metrics_limits.c). */
void metrics_limits_out(struct metrics *m, struct evbuffer *out);
/* The queue depth read from ZooKeeper (depth.h), for the queues counted so far. */
void metrics_depth_out(struct metrics *m, struct evbuffer *out);
/* " depth_overdue=... depth_truncated=..." for STATS QUEUE; returns the length written. */
int metrics_depth_fields(struct metrics *m, const char *queue, char *buf, size_t len);
/* The standard process_* families of Prometheus' client libraries, from /proc/self. */
void metrics_process_out(struct evbuffer *out);

/* Queues added by a reload get their counters here, zeroed. Returns -1 when out of memory
 * (those queues then go uncounted until the next try). */
int metrics_sync_queues(struct metrics *m);
struct qmetrics *metrics_queue_of(struct metrics *m, const struct queue_config *qc);
/* Events per second over the last minute, or since start when that is shorter. */
double metrics_rate_per_s(const struct metrics *m, const struct rate *r);

#endif
