#include "metrics_expose.h"

#include <event2/buffer.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_sync.h"
#include "config.h"
#include "consumers.h"
#include "daemon.h"
#include "dispatcher.h"
#include "limit.h"
#include "rate.h"
#include "log.h"
#include "metrics_int.h"
#include "put.h"
#include "server.h"
#include "session.h"
#include "tokensweep.h"
#include "writehold.h"
#include "tokensweep.h"

#ifndef DEFERD_VERSION
#define DEFERD_VERSION "unknown"
#endif

/* LABELS is "k=\"v\"" without braces. Queue and schedule names, op names and the version
 * need no escaping: none can hold a backslash, a quote or a newline. */
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
        snprintf(name, sizeof name, "deferd_jobs_%s_total", metrics_event_names[ev]);
        metrics_family(out, name, "counter", help[ev]);
        for (size_t i = 0; i < m->nqueues; i++)
            evbuffer_add_printf(out, "%s{queue=\"%s\"} %llu\n", name, qname(m, i),
                                (unsigned long long)m->q[i].events[ev]);
    }
    metrics_family(out, "deferd_puts_refused_total", "counter",
           "Puts to a configured queue refused, by reason.");
    for (size_t i = 0; i < m->nqueues; i++)
        for (int r = 0; r < MR_COUNT; r++)
            evbuffer_add_printf(out, "deferd_puts_refused_total{queue=\"%s\",reason=\"%s\"} %llu\n",
                                qname(m, i), metrics_refusal_names[r],
                                (unsigned long long)m->q[i].refused[r]);
    metrics_family(out, "deferd_zookeeper_denied_total", "counter",
           "Requests for the queue's znodes that ZooKeeper refused with NoAuth (their ACL "
           "denies deferd's identity): puts, listings, locks, acks, nacks, counters...");
    for (size_t i = 0; i < m->nqueues; i++)
        queue_row(out, "deferd_zookeeper_denied_total", qname(m, i),
                  (unsigned long long)m->q[i].denied);
    metrics_family(out, "deferd_keys_expired_total", "counter",
           "Kept idempotency keys (key_retention) this daemon deleted once older than the "
           "queue's retention.");
    for (size_t i = 0; i < m->nqueues; i++)
        queue_row(out, "deferd_keys_expired_total", qname(m, i),
                  (unsigned long long)m->q[i].keys_expired);
    metrics_family(out, "deferd_jobs_delivered_total", "counter",
           "Jobs pushed to consumers; redelivery=\"true\" when attempt > 1.");
    for (size_t i = 0; i < m->nqueues; i++)
        for (int re = 0; re < 2; re++)
            evbuffer_add_printf(out, "deferd_jobs_delivered_total{queue=\"%s\",redelivery=\"%s\"} "
                                "%llu\n", qname(m, i), re ? "true" : "false",
                                (unsigned long long)m->q[i].delivered[re]);
}

static void schedules_out(struct metrics *m, struct evbuffer *out)
{
    static const char *const help[MS_COUNT] = {
        "Jobs a schedule's passes put through this daemon: its occurrences, a catch-up job "
        "(misfire = once) counted once. Summed over the daemons: every job put once.",
        "Occurrences found missed by this daemon (due more than 1 s before any daemon put "
        "them): put late or skipped, as misfire and misfire_grace say.",
        "Occurrences not put because the previous one was still pending or held "
        "(overlap = skip).",
    };
    char name[64];
    for (int ev = 0; ev < MS_COUNT; ev++) {
        snprintf(name, sizeof name, "deferd_schedule_occurrences_%s_total",
                 metrics_sched_event_names[ev]);
        metrics_family(out, name, "counter", help[ev]);
        for (size_t i = 0; i < m->nsched; i++)
            evbuffer_add_printf(out, "%s{schedule=\"%s\"} %llu\n", name, m->sched[i].name,
                                (unsigned long long)m->sched[i].n[ev]);
    }
}

static void web_out(struct metrics *m, struct evbuffer *out)
{
    metrics_family(out, "deferd_web_actions_total", "counter",
                   "Dashboard actions asked of this daemon, by result: ok, refused (no or a "
                   "wrong token, CSRF value or input), failed (ZooKeeper).");
    for (int a = 0; a < WA_COUNT; a++)
        for (int r = 0; r < WR_COUNT; r++)
            evbuffer_add_printf(out, "deferd_web_actions_total{action=\"%s\",result=\"%s\"} "
                                "%llu\n", metrics_web_action_names[a],
                                metrics_web_result_names[r], (unsigned long long)m->web[a][r]);
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
    static const struct { const char *name, *help; size_t off; } g[] = {
        {"deferd_jobs_delayed", "Mirrored jobs waiting for their due time (or locked ahead of "
         "it).", offsetof(struct queue_counts, delayed)},
        {"deferd_jobs_ready", "Mirrored jobs due and waiting for a consumer with room.",
         offsetof(struct queue_counts, ready)},
        {"deferd_jobs_inflight", "Jobs pushed to a consumer of this daemon and not yet settled.",
         offsetof(struct queue_counts, inflight)},
        {"deferd_jobs_mirrored", "Jobs of the queue this daemon mirrors, in any state (due "
         "within lookahead; see docs/metrics.md).", offsetof(struct queue_counts, known)},
        /* the old name of the one above, kept for dashboards: it never was the backlog */
        {"deferd_jobs_pending", "Deprecated: deferd_jobs_mirrored under its old name (not the "
         "queue's pending jobs).", offsetof(struct queue_counts, known)},
    };
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        metrics_family(out, g[k].name, "gauge", g[k].help);
        for (size_t i = 0; i < m->nqueues; i++)
            queue_row(out, g[k].name, qname(m, i),
                      *(const size_t *)((const char *)&c[i] + g[k].off));
    }
    free(c);
    metrics_family(out, "deferd_consumers", "gauge",
                   "Consumer connections subscribed to the queue.");
    for (size_t i = 0; i < m->nqueues; i++) {
        struct dqueue *q = ds ? dispatcher_queue(ds, qname(m, i)) : NULL;
        queue_row(out, "deferd_consumers", qname(m, i), q ? consumer_ring_size(&q->ring) : 0);
    }
    metrics_family(out, "deferd_queue_paused", "gauge", "1 while the queue is paused (deferctl "
           "pause): no deliveries, puts still accepted.");
    for (size_t i = 0; i < m->nqueues; i++) {
        struct dqueue *q = ds ? dispatcher_queue(ds, qname(m, i)) : NULL;
        queue_row(out, "deferd_queue_paused", qname(m, i), q ? (unsigned long long)q->paused : 0);
    }
    metrics_family(out, "deferd_draining", "gauge",
                   "1 while the daemon drains for shutdown (SIGTERM).");
    evbuffer_add_printf(out, "deferd_draining %d\n", ds ? dispatcher_draining(ds) : 0);
    metrics_family(out, "deferd_puts_open", "gauge", "PUT and BATCH requests being stored in "
           "ZooKeeper (at most [daemon] max_open_puts).");
    evbuffer_add_printf(out, "deferd_puts_open %zu\n", ds ? put_open_count(ds) : 0);
    metrics_family(out, "deferd_puts_waiting", "gauge",
                   "Connections whose PUT or BATCH waits for its "
           "turn because max_open_puts are being stored.");
    evbuffer_add_printf(out, "deferd_puts_waiting %zu\n", server_puts_waiting(m->d->server));
    struct writehold_stats wh = {0};
    if (ds)
        dispatcher_write_holds(ds, &wh);
    metrics_family(out, "deferd_writes_held", "gauge", "PUT, BATCH, CANCEL and RESCHEDULE "
           "requests waiting for ZooKeeper to come back ([daemon] hold_writes).");
    evbuffer_add_printf(out, "deferd_writes_held %zu\n", wh.held);
    metrics_family(out, "deferd_writes_held_total", "counter", "Write requests that had to wait "
           "for ZooKeeper.");
    evbuffer_add_printf(out, "deferd_writes_held_total %llu\n", wh.total);
    metrics_family(out, "deferd_writes_hold_expired_total", "counter", "Held write requests "
           "answered ERR UNAVAILABLE not stored because hold_writes ran out.");
    evbuffer_add_printf(out, "deferd_writes_hold_expired_total %llu\n", wh.expired);
    metrics_limits_out(m, out);
    metrics_family(out, "deferd_jobs_pending_cluster", "gauge", "Queues with max_pending: jobs in "
           "the queue across all daemons, as last summed (once a second).");
    for (size_t i = 0; i < m->nqueues; i++) {
        struct dqueue *q = ds ? dispatcher_queue(ds, qname(m, i)) : NULL;
        if (q && q->cfg->max_pending && q->count_ready)
            evbuffer_add_printf(out, "deferd_jobs_pending_cluster{queue=\"%s\"} %lld\n",
                                qname(m, i), (long long)queue_pending_estimate(q));
    }
    return 0;
}

static void histograms_out(struct metrics *m, struct evbuffer *out)
{
    char labels[128];
    metrics_family(out, "deferd_delivery_lateness_seconds", "histogram",
           "Push time minus due time, first delivery at each due time.");
    for (size_t i = 0; i < m->nqueues; i++) {
        snprintf(labels, sizeof labels, "queue=\"%s\"", qname(m, i));
        histogram_out(out, "deferd_delivery_lateness_seconds", labels, &m->q[i].lateness,
                      metrics_lateness_le, METRICS_LATENESS_NLE);
    }
    metrics_family(out, "deferd_limit_wait_seconds", "histogram",
           "Queues with concurrency: how long a due job waited for a free slot (from its due "
           "time, or from when every slot was taken if later, to its lock).");
    for (size_t i = 0; i < m->nqueues; i++) {
        snprintf(labels, sizeof labels, "queue=\"%s\",kind=\"concurrency\"", qname(m, i));
        histogram_out(out, "deferd_limit_wait_seconds", labels, &m->q[i].limit_wait,
                      metrics_lateness_le, METRICS_LATENESS_NLE);
    }
    metrics_family(out, "deferd_zookeeper_request_seconds", "histogram",
           "ZooKeeper requests from the call to the completion, by operation.");
    for (int op = 0; op < ZOP_COUNT; op++) {
        snprintf(labels, sizeof labels, "op=\"%s\"", metrics_zk_op_names[op]);
        histogram_out(out, "deferd_zookeeper_request_seconds", labels, &m->zk[op], metrics_zk_le,
                      METRICS_ZK_NLE);
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
    metrics_family(out, "deferd_zookeeper_state", "gauge",
           "1 for the daemon's current view of its ZooKeeper session, else 0.");
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        lower(name, session_state_name(states[i]), sizeof name);
        evbuffer_add_printf(out, "deferd_zookeeper_state{state=\"%s\"} %d\n", name,
                            s && session_state(s) == states[i]);
    }
    metrics_family(out, "deferd_zookeeper_transitions_total", "counter",
           "Session state changes, by the state entered.");
    for (int st = CS_CONNECTED; st < CS_COUNT; st++) {
        lower(name, session_state_name(st), sizeof name);
        evbuffer_add_printf(out, "deferd_zookeeper_transitions_total{to=\"%s\"} %u\n", name,
                            s ? session_transitions(s, st) : 0);
    }
}

static void clock_out(struct metrics *m, struct evbuffer *out)
{
    struct clock_report r = {0};
    if (m->d->clock)
        clock_sync_report(m->d->clock, &r);
    metrics_family(out, "deferd_clock_skew_seconds", "gauge",
           "This host's wall clock minus ZooKeeper's transaction clock (> 0: ahead).");
    evbuffer_add_printf(out, "deferd_clock_skew_seconds %.6f\n", r.skew_ms / 1e3);
    metrics_family(out, "deferd_clock_error_seconds", "gauge",
           "The skew is known within plus or minus this.");
    evbuffer_add_printf(out, "deferd_clock_error_seconds %.6f\n", r.error_ms / 1e3);
    metrics_family(out, "deferd_clock_state", "gauge",
           "1 for the cluster clock's state (no pushes while unsynced or over_limit), else 0.");
    for (int st = 0; st < CLK_COUNT; st++)
        evbuffer_add_printf(out, "deferd_clock_state{state=\"%s\"} %d\n", clock_state_name(st),
                            m->d->clock && r.state == (enum clock_state)st);
    metrics_family(out, "deferd_clock_jumps_total", "counter",
           "Samples of ZooKeeper's clock outside the estimate's bounds (the estimate restarted).");
    evbuffer_add_printf(out, "deferd_clock_jumps_total %llu\n", (unsigned long long)r.jumps);
}

static void tokens_out(struct metrics *m, struct evbuffer *out)
{
    struct tokensweep_counts tc;
    tokensweep_report(m->d->tokensweep, &tc);
    metrics_family(out, "deferd_token_sweeps_total", "counter",
                   "Passes of this daemon's sweep of put tokens past their use, all queues.");
    evbuffer_add_printf(out, "deferd_token_sweeps_total %llu\n", (unsigned long long)tc.passes);
    metrics_family(out, "deferd_token_dirs_swept_total", "counter",
                   "Minute directories of put tokens this daemon's sweep deleted.");
    evbuffer_add_printf(out, "deferd_token_dirs_swept_total %llu\n", (unsigned long long)tc.dirs);
    metrics_family(out, "deferd_tokens_swept_total", "counter",
                   "Put tokens this daemon's sweep deleted.");
    evbuffer_add_printf(out, "deferd_tokens_swept_total %llu\n", (unsigned long long)tc.tokens);
}

static void flows_out(struct metrics *m, struct evbuffer *out)
{
    struct flow_counts fc = {0};
    if (m->d->dispatcher)
        dispatcher_flow_counts(m->d->dispatcher, &fc);
    metrics_family(out, "deferd_flows_total", "counter",
                   "Flows (docs/flows.md) by what this daemon did: opened (waiting parents it "
                   "stored), released (parents its settles made jobs), dead_lettered (made "
                   "dead letters: on=success with a dead child).");
    evbuffer_add_printf(out, "deferd_flows_total{event=\"opened\"} %llu\n"
                        "deferd_flows_total{event=\"released\"} %llu\n"
                        "deferd_flows_total{event=\"dead_lettered\"} %llu\n", fc.opened,
                        fc.released, fc.dead_lettered);
    metrics_family(out, "deferd_flow_conflicts_total", "counter",
                   "A flow's child's settle that found the flow changed since it read it "
                   "(another child counted first): read and sent again.");
    evbuffer_add_printf(out, "deferd_flow_conflicts_total %llu\n", fc.conflicts);
}

int metrics_expose(struct metrics *m, struct evbuffer *out)
{
    if (!m || metrics_sync_queues(m) != 0)
        return -1;
    metrics_family(out, "deferd_build_info", "gauge", "Always 1; the version in a label.");
    evbuffer_add_printf(out, "deferd_build_info{version=\"%s\"} 1\n", DEFERD_VERSION);
    metrics_family(out, "deferd_start_time_seconds", "gauge",
                   "When the daemon started, Unix time.");
    evbuffer_add_printf(out, "deferd_start_time_seconds %.3f\n", (double)m->start_wall_ms / 1e3);
    counters_out(m, out);
    flows_out(m, out);
    schedules_out(m, out);
    web_out(m, out);
    if (gauges_out(m, out) != 0)
        return -1;
    metrics_depth_out(m, out);
    histograms_out(m, out);
    session_out(m, out);
    clock_out(m, out);
    tokens_out(m, out);
    metrics_process_out(out);
    metrics_family(out, "deferd_log_dropped_total", "counter",
           "Log lines that could not be written to stderr (a full disk, a closed pipe).");
    evbuffer_add_printf(out, "deferd_log_dropped_total %llu\n", log_dropped());
    metrics_family(out, "deferd_log_left_out_total", "counter",
           "Log lines left out because their call site wrote over its share (a repeating failure).");
    evbuffer_add_printf(out, "deferd_log_left_out_total %llu\n", log_left_out());
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

/* " group_concurrency=M limit_groups=G busiest_groups=a:3,b:1" ("-": none held). */
static int groups_format(const struct limit_stats *ls, char *buf, size_t len)
{
    int n = snprintf(buf, len, " group_concurrency=%u limit_groups=%u busiest_groups=",
                     ls->group_max, ls->groups);
    for (int k = 0; k < LIMIT_TOP_GROUPS && ls->top[k].taken && n > 0 && (size_t)n < len; k++)
        n += snprintf(buf + n, len - (size_t)n, "%s%s:%u", k ? "," : "", ls->top[k].group,
                      ls->top[k].taken);
    if (n > 0 && (size_t)n < len && !ls->top[0].taken)
        n += snprintf(buf + n, len - (size_t)n, "-");
    return n > 0 && (size_t)n < len ? n : 0;
}

int metrics_expose_queue(struct metrics *m, const char *queue, char *buf, size_t len)
{
    struct dispatcher *ds = m ? m->d->dispatcher : NULL;
    struct queue_counts *c = ds ? calloc(m->d->cfg->nqueues + 1, sizeof *c) : NULL;
    if (!c)
        return -1;
    dispatcher_queue_counts(ds, c);
    int rc = metrics_expose_queue_counted(m, queue, c, buf, len);
    free(c);
    return rc;
}

int metrics_expose_queue_counted(struct metrics *m, const char *queue,
                                 const struct queue_counts *all, char *buf, size_t len)
{
    struct dispatcher *ds = m ? m->d->dispatcher : NULL;
    if (!m || metrics_sync_queues(m) != 0)
        return -1;
    struct dqueue *dq = ds ? dispatcher_queue(ds, queue) : NULL;
    struct qmetrics *q = dq ? metrics_queue_of(m, dq->cfg) : NULL;
    if (!q)
        return -1;
    const struct queue_counts *qc = &all[q - m->q];
    struct limit_stats ls;
    limit_get_stats(dq->limit, &ls);
    int n = snprintf(buf, len, "queue=%s put=%llu delivered=%llu redelivered=%llu acked=%llu "
                     "nacked=%llu expired=%llu dead_lettered=%llu refused_queue_full=%llu "
                     "refused_unavailable=%llu refused_failed=%llu delayed=%zu ready=%zu "
                     "inflight=%zu pending=%zu consumers=%zu paused=%d concurrency=%u "
                     "slots_taken=%u slots_ours=%u limit_waiting=%zu limit_waits=%llu "
                     "slot_conflicts=%llu slot_listings=%llu",
                     queue, (unsigned long long)q->events[ME_PUT],
                     (unsigned long long)(q->delivered[0] + q->delivered[1]),
                     (unsigned long long)q->delivered[1], (unsigned long long)q->events[ME_ACKED],
                     (unsigned long long)q->events[ME_NACKED],
                     (unsigned long long)q->events[ME_EXPIRED],
                     (unsigned long long)q->events[ME_DEAD_LETTERED],
                     (unsigned long long)q->refused[MR_QUEUE_FULL],
                     (unsigned long long)q->refused[MR_UNAVAILABLE],
                     (unsigned long long)q->refused[MR_FAILED], qc->delayed, qc->ready,
                     qc->inflight, qc->known, consumer_ring_size(&dq->ring), dq->paused, ls.max,
                     ls.taken, ls.ours, ls.waiting, (unsigned long long)ls.waits,
                     (unsigned long long)ls.conflicts, (unsigned long long)ls.listings);
    if (n > 0 && (size_t)n < len)
        n += groups_format(&ls, buf + n, len - (size_t)n);
    struct rate_stats rs;
    rate_get_stats(dq->rate, &rs);
    if (n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " rate=%u rate_window_ms=%llu rate_started=%u "
                      "rate_waits=%llu rate_conflicts=%llu rate_reads=%llu", rs.n,
                      (unsigned long long)rs.window_ms, rs.started,
                      (unsigned long long)rs.waits, (unsigned long long)rs.conflicts,
                      (unsigned long long)rs.reads);
    if (n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " group_rate=%u group_rate_window_ms=%llu "
                      "rate_groups=%u group_rate_waits=%llu group_rate_conflicts=%llu "
                      "rate_slots_swept=%llu", rs.group_n,
                      (unsigned long long)rs.group_window_ms, rs.groups,
                      (unsigned long long)rs.group_waits,
                      (unsigned long long)rs.group_conflicts, (unsigned long long)rs.swept);
    if (n > 0 && (size_t)n < len)
        n += lateness_format(q, buf + n, len - (size_t)n);
    if (n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n,
                 " put_per_s=%.3f delivered_per_s=%.3f "
                 "acked_per_s=%.3f zk_state=%s zk_denied=%llu keys_expired=%llu",
                 metrics_rate_per_s(m, &q->rates[RK_PUT]),
                 metrics_rate_per_s(m, &q->rates[RK_DELIVERED]),
                 metrics_rate_per_s(m, &q->rates[RK_ACKED]),
                 m->d->session ? session_state_name(session_state(m->d->session)) : "CONNECTING",
                 (unsigned long long)q->denied, (unsigned long long)q->keys_expired);
    if (n > 0 && (size_t)n < len)
        metrics_depth_fields(m, queue, buf + n, len - (size_t)n);
    return 0;
}
