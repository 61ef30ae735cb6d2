#include "metrics.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "consumers.h"
#include "daemon.h"
#include "dispatcher.h"
#include "log.h"
#include "pending.h"
#include "server.h"
#include "session.h"
#include "units.h"

#ifndef DEFERD_VERSION
#define DEFERD_VERSION "unknown"
#endif

#define RATE_SLOTS 60      /* rates are over the last minute, a slot per second */
#define RECENT_MAX 1024    /* STATS QUEUE's lateness percentiles: the last deliveries */
#define BUCKETS_MAX 16

/* Upper bounds in seconds; "+Inf" follows. */
static const double lateness_le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                     0.5,   1,      2.5,   5,    10,    30,    60};
static const double zk_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                               0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NLE(a) (sizeof(a) / sizeof((a)[0]))

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
    struct rate rates[RK_COUNT];
    double recent[RECENT_MAX]; /* lateness in seconds, a ring */
    size_t nrecent, recent_next;
};

struct metrics {
    struct deferd *d;
    size_t nqueues;
    struct qmetrics *q;        /* in the order of cfg->queues */
    struct histogram zk[ZOP_COUNT];
    int64_t start_mono_s;
    int64_t start_wall_ms;
};

static const char *const event_names[ME_COUNT] = {"put", "acked", "nacked", "expired",
                                                  "dead_lettered"};
static const char *const refusal_names[MR_COUNT] = {"queue_full", "unavailable", "failed"};
static const char *const zk_op_names[ZOP_COUNT] = {"multi",  "create", "get",   "children",
                                                   "exists", "set",    "delete"};

struct metrics *metrics_new(struct deferd *d)
{
    struct metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->d = d;
    m->nqueues = d->cfg->nqueues;
    m->q = calloc(m->nqueues ? m->nqueues : 1, sizeof *m->q);
    if (!m->q) {
        free(m);
        return NULL;
    }
    m->start_mono_s = units_mono_ms() / 1000;
    m->start_wall_ms = units_wall_ms();
    return m;
}

void metrics_free(struct metrics *m)
{
    if (m)
        free(m->q);
    free(m);
}

/* Queues added by a reload get their counters here, zeroed. Returns -1 when out of memory
 * (those queues then go uncounted until the next try). */
static int sync_queues(struct metrics *m)
{
    size_t n = m->d->cfg->nqueues;
    if (n <= m->nqueues)
        return 0;
    struct qmetrics *q = realloc(m->q, n * sizeof *q);
    if (!q)
        return -1;
    memset(q + m->nqueues, 0, (n - m->nqueues) * sizeof *q);
    m->q = q;
    m->nqueues = n;
    return 0;
}

static struct qmetrics *queue_of(struct metrics *m, const struct queue_config *qc)
{
    if (!m || !qc || (qc->index >= m->nqueues && sync_queues(m) != 0) ||
        qc->index >= m->nqueues || m->d->cfg->queues[qc->index] != qc)
        return NULL;
    return &m->q[qc->index];
}

static void observe(struct histogram *h, const double *le, size_t nle, double v)
{
    size_t i = 0;
    while (i < nle && v > le[i])
        i++;
    h->n[i]++;
    h->count++;
    h->sum += v;
}

static void rate_add(struct rate *r)
{
    int64_t sec = units_mono_ms() / 1000;
    size_t i = (size_t)(sec % RATE_SLOTS);
    if (r->sec[i] != sec) {
        r->sec[i] = sec;
        r->n[i] = 0;
    }
    r->n[i]++;
}

/* Events per second over the last minute, or since start when that is shorter. */
static double rate_per_s(const struct metrics *m, const struct rate *r)
{
    int64_t now = units_mono_ms() / 1000, span = now - m->start_mono_s + 1;
    uint64_t sum = 0;
    for (size_t i = 0; i < RATE_SLOTS; i++)
        if (r->sec[i] > now - RATE_SLOTS && r->sec[i] <= now)
            sum += r->n[i];
    return (double)sum / (double)(span < RATE_SLOTS ? span : RATE_SLOTS);
}

void metrics_event(struct metrics *m, const struct queue_config *qc, enum metrics_event ev)
{
    struct qmetrics *q = queue_of(m, qc);
    if (!q)
        return;
    q->events[ev]++;
    if (ev == ME_PUT)
        rate_add(&q->rates[RK_PUT]);
    else if (ev == ME_ACKED)
        rate_add(&q->rates[RK_ACKED]);
}

void metrics_refused(struct metrics *m, const struct queue_config *qc, enum metrics_refusal why)
{
    struct qmetrics *q = queue_of(m, qc);
    if (q)
        q->refused[why]++;
}

void metrics_denied(struct metrics *m, const struct queue_config *qc)
{
    struct qmetrics *q = queue_of(m, qc);
    if (q)
        q->denied++;
}

void metrics_key_expired(struct metrics *m, const struct queue_config *qc)
{
    struct qmetrics *q = queue_of(m, qc);
    if (q)
        q->keys_expired++;
}

void metrics_delivered(struct metrics *m, const struct queue_config *qc, uint32_t attempt,
                       uint32_t prior_attempts, uint64_t due_ms)
{
    struct qmetrics *q = queue_of(m, qc);
    if (!q)
        return;
    q->delivered[attempt > 1]++;
    rate_add(&q->rates[RK_DELIVERED]);
    if (due_ms == 0 || attempt != prior_attempts + 1)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double late = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - (double)due_ms / 1e3;
    if (late < 0)
        late = 0; /* released a hair early by a clock step: not early in our books */
    observe(&q->lateness, lateness_le, NLE(lateness_le), late);
    q->recent[q->recent_next] = late;
    q->recent_next = (q->recent_next + 1) % RECENT_MAX;
    if (q->nrecent < RECENT_MAX)
        q->nrecent++;
}

void metrics_zk_request(struct metrics *m, enum metrics_zk_op op, int64_t ns)
{
    if (m && op < ZOP_COUNT)
        observe(&m->zk[op], zk_le, NLE(zk_le), ns > 0 ? (double)ns / 1e9 : 0);
}

/* ---- exposition ---- */

static void family(struct evbuffer *out, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* LABELS is "k=\"v\"" without braces. Queue names, op names and the version need no
 * escaping: none can hold a backslash, a quote or a newline. */
static void histogram_out(struct evbuffer *out, const char *name, const char *labels,
                          const struct histogram *h, const double *le, size_t nle)
{
    uint64_t cum = 0;
    for (size_t i = 0; i <= nle; i++) {
        cum += h->n[i];
        if (i < nle)
            evbuffer_add_printf(out, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, le[i],
                                (unsigned long long)cum);
        else
            evbuffer_add_printf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels,
                                (unsigned long long)cum);
    }
    evbuffer_add_printf(out, "%s_sum{%s} %.9g\n%s_count{%s} %llu\n", name, labels, h->sum, name,
                        labels, (unsigned long long)h->count);
}

static const char *qname(const struct metrics *m, size_t i)
{
    return m->d->cfg->queues[i]->name;
}

/* One queue's row of a family, gauge or counter. */
static void queue_row(struct evbuffer *out, const char *name, const char *queue,
                      unsigned long long v)
{
    evbuffer_add_printf(out, "%s{queue=\"%s\"} %llu\n", name, queue, v);
}

static void counters_out(struct metrics *m, struct evbuffer *out)
{
    static const char *const help[ME_COUNT] = {
        "Jobs put into the queue through this daemon.",
        "Deliveries acked by consumers, as applied in ZooKeeper.",
        "Deliveries nacked by consumers, as applied in ZooKeeper (including nacks that "
        "dead-lettered the job).",
        "Deliveries whose lease (ttr) ran out before an ack or nack.",
        "Jobs moved to the queue's dead letters by this daemon.",
    };
    char name[64];
    for (int ev = 0; ev < ME_COUNT; ev++) {
        snprintf(name, sizeof name, "deferd_jobs_%s_total", event_names[ev]);
        family(out, name, "counter", help[ev]);
        for (size_t i = 0; i < m->nqueues; i++)
            evbuffer_add_printf(out, "%s{queue=\"%s\"} %llu\n", name, qname(m, i),
                                (unsigned long long)m->q[i].events[ev]);
    }
    family(out, "deferd_puts_refused_total", "counter",
           "Puts to a configured queue refused, by reason.");
    for (size_t i = 0; i < m->nqueues; i++)
        for (int r = 0; r < MR_COUNT; r++)
            evbuffer_add_printf(out, "deferd_puts_refused_total{queue=\"%s\",reason=\"%s\"} %llu\n",
                                qname(m, i), refusal_names[r],
                                (unsigned long long)m->q[i].refused[r]);
    family(out, "deferd_zookeeper_denied_total", "counter",
           "Requests for the queue's znodes that ZooKeeper refused with NoAuth (their ACL "
           "denies deferd's identity): puts, listings, locks, acks, nacks, counters...");
    for (size_t i = 0; i < m->nqueues; i++)
        queue_row(out, "deferd_zookeeper_denied_total", qname(m, i),
                  (unsigned long long)m->q[i].denied);
    family(out, "deferd_keys_expired_total", "counter",
           "Kept idempotency keys (key_retention) this daemon deleted once older than the "
           "queue's retention.");
    for (size_t i = 0; i < m->nqueues; i++)
        queue_row(out, "deferd_keys_expired_total", qname(m, i),
                  (unsigned long long)m->q[i].keys_expired);
    family(out, "deferd_jobs_delivered_total", "counter",
           "Jobs pushed to consumers; redelivery=\"true\" when attempt > 1.");
    for (size_t i = 0; i < m->nqueues; i++)
        for (int re = 0; re < 2; re++)
            evbuffer_add_printf(out, "deferd_jobs_delivered_total{queue=\"%s\",redelivery=\"%s\"} "
                                "%llu\n", qname(m, i), re ? "true" : "false",
                                (unsigned long long)m->q[i].delivered[re]);
}

/* Read from their owners at scrape time. */
static int gauges_out(struct metrics *m, struct evbuffer *out)
{
    struct dispatcher *ds = m->d->dispatcher;
    struct queue_counts *c = calloc(m->nqueues ? m->nqueues : 1, sizeof *c);
    if (!c)
        return -1;
    if (ds)
        dispatcher_queue_counts(ds, c);
    static const struct { const char *name, *help; } g[] = {
        {"deferd_jobs_delayed", "Mirrored jobs waiting for their due time (or locked ahead of it)."},
        {"deferd_jobs_ready", "Mirrored jobs due and waiting for a consumer with room."},
        {"deferd_jobs_inflight", "Jobs pushed to a consumer of this daemon and not yet settled."},
        {"deferd_jobs_pending", "Jobs of the queue this daemon mirrors, in any state (due "
                                "within lookahead; see docs/metrics.md)."},
    };
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        family(out, g[k].name, "gauge", g[k].help);
        for (size_t i = 0; i < m->nqueues; i++) {
            size_t v = k == 0 ? c[i].delayed : k == 1 ? c[i].ready
                     : k == 2 ? c[i].inflight : c[i].known;
            queue_row(out, g[k].name, qname(m, i), v);
        }
    }
    free(c);
    family(out, "deferd_consumers", "gauge", "Consumer connections subscribed to the queue.");
    for (size_t i = 0; i < m->nqueues; i++) {
        struct dqueue *q = ds ? dispatcher_queue(ds, qname(m, i)) : NULL;
        queue_row(out, "deferd_consumers", qname(m, i), q ? consumer_ring_size(&q->ring) : 0);
    }
    family(out, "deferd_queue_paused", "gauge", "1 while the queue is paused (deferctl "
           "pause): no deliveries, puts still accepted.");
    for (size_t i = 0; i < m->nqueues; i++) {
        struct dqueue *q = ds ? dispatcher_queue(ds, qname(m, i)) : NULL;
        queue_row(out, "deferd_queue_paused", qname(m, i), q ? (unsigned long long)q->paused : 0);
    }
    family(out, "deferd_draining", "gauge", "1 while the daemon drains for shutdown (SIGTERM).");
    evbuffer_add_printf(out, "deferd_draining %d\n", ds ? dispatcher_draining(ds) : 0);
    family(out, "deferd_puts_open", "gauge", "PUT and BATCH requests being stored in "
           "ZooKeeper (at most [daemon] max_open_puts).");
    evbuffer_add_printf(out, "deferd_puts_open %zu\n", ds ? dispatcher_puts_open(ds) : 0);
    family(out, "deferd_puts_waiting", "gauge", "Connections whose PUT or BATCH waits for its "
           "turn because max_open_puts are being stored.");
    evbuffer_add_printf(out, "deferd_puts_waiting %zu\n", server_puts_waiting(m->d->server));
    family(out, "deferd_jobs_pending_cluster", "gauge", "Queues with max_pending: jobs in "
           "the queue across all daemons, as last summed (once a second).");
    for (size_t i = 0; i < m->nqueues; i++) {
        struct dqueue *q = ds ? dispatcher_queue(ds, qname(m, i)) : NULL;
        if (q && q->cfg->max_pending && q->count_ready)
            evbuffer_add_printf(out, "deferd_jobs_pending_cluster{queue=\"%s\"} %lld\n",
                                qname(m, i), (long long)pending_estimate(q));
    }
    return 0;
}

static void histograms_out(struct metrics *m, struct evbuffer *out)
{
    char labels[128];
    family(out, "deferd_delivery_lateness_seconds", "histogram",
           "Push time minus due time, first delivery at each due time.");
    for (size_t i = 0; i < m->nqueues; i++) {
        snprintf(labels, sizeof labels, "queue=\"%s\"", qname(m, i));
        histogram_out(out, "deferd_delivery_lateness_seconds", labels, &m->q[i].lateness,
                      lateness_le, NLE(lateness_le));
    }
    family(out, "deferd_zookeeper_request_seconds", "histogram",
           "ZooKeeper requests from the call to the completion, by operation.");
    for (int op = 0; op < ZOP_COUNT; op++) {
        snprintf(labels, sizeof labels, "op=\"%s\"", zk_op_names[op]);
        histogram_out(out, "deferd_zookeeper_request_seconds", labels, &m->zk[op], zk_le,
                      NLE(zk_le));
    }
}

static void lower(char *dst, const char *src, size_t len)
{
    size_t i = 0;
    for (; src[i] && i + 1 < len; i++)
        dst[i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] + 32 : src[i]);
    dst[i] = '\0';
}

static void session_out(struct metrics *m, struct evbuffer *out)
{
    /* RECONNECTED is an event, not a state one stays in (session.c): transitions only. */
    static const enum conn_state states[] = {CS_CONNECTING, CS_CONNECTED, CS_SUSPENDED, CS_LOST};
    const struct session *s = m->d->session;
    char name[16];
    family(out, "deferd_zookeeper_state", "gauge",
           "1 for the daemon's current view of its ZooKeeper session, else 0.");
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        lower(name, session_state_name(states[i]), sizeof name);
        evbuffer_add_printf(out, "deferd_zookeeper_state{state=\"%s\"} %d\n", name,
                            s && session_state(s) == states[i]);
    }
    family(out, "deferd_zookeeper_transitions_total", "counter",
           "Session state changes, by the state entered.");
    for (int st = CS_CONNECTED; st < CS_COUNT; st++) {
        lower(name, session_state_name(st), sizeof name);
        evbuffer_add_printf(out, "deferd_zookeeper_transitions_total{to=\"%s\"} %u\n", name,
                            s ? session_transitions(s, st) : 0);
    }
}

int metrics_expose(struct metrics *m, struct evbuffer *out)
{
    if (!m || sync_queues(m) != 0)
        return -1;
    family(out, "deferd_build_info", "gauge", "Always 1; the version in a label.");
    evbuffer_add_printf(out, "deferd_build_info{version=\"%s\"} 1\n", DEFERD_VERSION);
    family(out, "deferd_start_time_seconds", "gauge", "When the daemon started, Unix time.");
    evbuffer_add_printf(out, "deferd_start_time_seconds %.3f\n", (double)m->start_wall_ms / 1e3);
    counters_out(m, out);
    if (gauges_out(m, out) != 0)
        return -1;
    histograms_out(m, out);
    session_out(m, out);
    family(out, "deferd_log_dropped_total", "counter",
           "Log lines that could not be written to stderr (a full disk, a closed pipe).");
    evbuffer_add_printf(out, "deferd_log_dropped_total %llu\n", log_dropped());
    return 0;
}

/* ---- STATS QUEUE ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentiles of the recent lateness, in ms; "-" when there is none. */
static int lateness_format(const struct qmetrics *q, char *buf, size_t len)
{
    static const int pct[] = {50, 90, 99};
    double sorted[RECENT_MAX];
    size_t n = q->nrecent;
    memcpy(sorted, q->recent, n * sizeof sorted[0]);
    qsort(sorted, n, sizeof sorted[0], cmp_double);
    int at = snprintf(buf, len, " lateness_samples=%zu", n);
    for (size_t i = 0; i < 4 && at > 0 && (size_t)at < len; i++) {
        size_t rank = i < 3 ? (n * (size_t)pct[i] + 99) / 100 : n;
        char name[8] = "max";
        if (i < 3)
            snprintf(name, sizeof name, "p%d", pct[i]);
        if (n == 0)
            at += snprintf(buf + at, len - (size_t)at, " lateness_%s_ms=-", name);
        else
            at += snprintf(buf + at, len - (size_t)at, " lateness_%s_ms=%.3f", name,
                           sorted[rank ? rank - 1 : 0] * 1e3);
    }
    return at;
}

int metrics_format_queue(struct metrics *m, const char *queue, char *buf, size_t len)
{
    struct dispatcher *ds = m ? m->d->dispatcher : NULL;
    if (!m || sync_queues(m) != 0)
        return -1;
    struct dqueue *dq = ds ? dispatcher_queue(ds, queue) : NULL;
    struct qmetrics *q = dq ? queue_of(m, dq->cfg) : NULL;
    struct queue_counts *c = q ? calloc(m->nqueues, sizeof *c) : NULL;
    if (!c)
        return -1;
    dispatcher_queue_counts(ds, c);
    const struct queue_counts *qc = &c[q - m->q];
    int n = snprintf(buf, len, "queue=%s put=%llu delivered=%llu redelivered=%llu acked=%llu "
                     "nacked=%llu expired=%llu dead_lettered=%llu refused_queue_full=%llu "
                     "refused_unavailable=%llu refused_failed=%llu delayed=%zu ready=%zu "
                     "inflight=%zu pending=%zu consumers=%zu paused=%d",
                     queue, (unsigned long long)q->events[ME_PUT],
                     (unsigned long long)(q->delivered[0] + q->delivered[1]),
                     (unsigned long long)q->delivered[1], (unsigned long long)q->events[ME_ACKED],
                     (unsigned long long)q->events[ME_NACKED],
                     (unsigned long long)q->events[ME_EXPIRED],
                     (unsigned long long)q->events[ME_DEAD_LETTERED],
                     (unsigned long long)q->refused[MR_QUEUE_FULL],
                     (unsigned long long)q->refused[MR_UNAVAILABLE],
                     (unsigned long long)q->refused[MR_FAILED], qc->delayed, qc->ready,
                     qc->inflight, qc->known, consumer_ring_size(&dq->ring), dq->paused);
    free(c);
    if (n > 0 && (size_t)n < len)
        n += lateness_format(q, buf + n, len - (size_t)n);
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " put_per_s=%.3f delivered_per_s=%.3f "
                 "acked_per_s=%.3f zk_state=%s zk_denied=%llu keys_expired=%llu",
                 rate_per_s(m, &q->rates[RK_PUT]),
                 rate_per_s(m, &q->rates[RK_DELIVERED]), rate_per_s(m, &q->rates[RK_ACKED]),
                 m->d->session ? session_state_name(session_state(m->d->session)) : "CONNECTING",
                 (unsigned long long)q->denied, (unsigned long long)q->keys_expired);
    return 0;
}
