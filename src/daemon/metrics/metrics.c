#include "metrics.h"
#include "metrics_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "daemon.h"
#include "units.h"

const double metrics_lateness_le[METRICS_LATENESS_NLE] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
const double metrics_zk_le[METRICS_ZK_NLE] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const char *const metrics_event_names[ME_COUNT] = {"put", "acked", "nacked", "expired",
                                                   "dead_lettered"};
const char *const metrics_refusal_names[MR_COUNT] = {"queue_full", "unavailable", "failed"};
const char *const metrics_sched_event_names[MS_COUNT] = {"put", "misfired",
                                                         "overlap_skipped"};
const char *const metrics_zk_op_names[ZOP_COUNT] = {"multi",  "create", "get",   "children",
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
    if (m) {
        free(m->q);
        for (size_t i = 0; i < m->nsched; i++)
            free(m->sched[i].name);
        free(m->sched);
    }
    free(m);
}

int metrics_sync_queues(struct metrics *m)
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

struct qmetrics *metrics_queue_of(struct metrics *m, const struct queue_config *qc)
{
    if (!m || !qc || (qc->index >= m->nqueues && metrics_sync_queues(m) != 0) ||
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

double metrics_rate_per_s(const struct metrics *m, const struct rate *r)
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
    struct qmetrics *q = metrics_queue_of(m, qc);
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
    struct qmetrics *q = metrics_queue_of(m, qc);
    if (q)
        q->refused[why]++;
}

void metrics_denied(struct metrics *m, const struct queue_config *qc)
{
    struct qmetrics *q = metrics_queue_of(m, qc);
    if (q)
        q->denied++;
}

void metrics_key_expired(struct metrics *m, const struct queue_config *qc)
{
    struct qmetrics *q = metrics_queue_of(m, qc);
    if (q)
        q->keys_expired++;
}

void metrics_limit_wait(struct metrics *m, const struct queue_config *qc, int64_t ms)
{
    struct qmetrics *q = metrics_queue_of(m, qc);
    if (q)
        observe(&q->limit_wait, metrics_lateness_le, METRICS_LATENESS_NLE,
                ms > 0 ? (double)ms / 1e3 : 0);
}

void metrics_delivered(struct metrics *m, const struct queue_config *qc, uint32_t attempt,
                       uint32_t prior_attempts, uint64_t due_ms)
{
    struct qmetrics *q = metrics_queue_of(m, qc);
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
    observe(&q->lateness, metrics_lateness_le, METRICS_LATENESS_NLE, late);
    q->recent[q->recent_next] = late;
    q->recent_next = (q->recent_next + 1) % RECENT_MAX;
    if (q->nrecent < RECENT_MAX)
        q->nrecent++;
}

static struct smetrics *schedule_of(struct metrics *m, const char *name)
{
    for (size_t i = 0; i < m->nsched; i++)
        if (strcmp(m->sched[i].name, name) == 0)
            return &m->sched[i];
    struct smetrics *v = realloc(m->sched, (m->nsched + 1) * sizeof *v);
    if (!v)
        return NULL;
    m->sched = v;
    if (!(v[m->nsched].name = strdup(name)))
        return NULL;
    memset(v[m->nsched].n, 0, sizeof v[m->nsched].n);
    return &v[m->nsched++];
}

void metrics_schedule(struct metrics *m, const char *name, enum metrics_sched_event ev,
                      uint64_t n)
{
    struct smetrics *s = m && n && ev < MS_COUNT ? schedule_of(m, name) : NULL;
    if (s)
        s->n[ev] += n;
}

const char *const metrics_web_action_names[WA_COUNT] = {
    "pause", "resume", "cancel", "reschedule", "kick", "delete", "kick_all", "delete_all",
    "login"};
const char *const metrics_web_result_names[WR_COUNT] = {"ok", "refused", "failed"};

void metrics_web_action(struct metrics *m, enum metrics_web_action a,
                        enum metrics_web_result r)
{
    if (m && a < WA_COUNT && r < WR_COUNT)
        m->web[a][r]++;
}

void metrics_zk_request(struct metrics *m, enum metrics_zk_op op, int64_t ns)
{
    if (m && op < ZOP_COUNT)
        observe(&m->zk[op], metrics_zk_le, METRICS_ZK_NLE, ns > 0 ? (double)ns / 1e9 : 0);
}
