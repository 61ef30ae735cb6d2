#include "lease.h"

#include <zookeeper/zookeeper.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher_int.h"
#include "settle.h"
#include "jobs.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"
#include "reply.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

static int lease_less(const void *a, const void *b)
{
    const struct job *x = a, *y = b;
    return x->lease_wake < y->lease_wake || (x->lease_wake == y->lease_wake && x->seq < y->seq);
}

void lease_heap_init(struct heap *leases) { heap_init(leases, lease_less, job_setpos); }

/* The "deadline soon" notice comes when a fifth of the lease (at most 1 s) is left. */
static int64_t warn_before(const struct job *job)
{
    int64_t w = job->ttr_ms / 5;
    return w < 1000 ? w : 1000;
}

void lease_arm(struct dispatcher *ds, struct job *job)
{
    job_transition(job, JE_DELIVER);
    job->lease_wake = job->warned ? job->lease_at : job->lease_at - warn_before(job);
    if (heap_push(&ds->leases, job) != 0)
        log_error("queue %s: out of memory for the lease of %s", job->q->cfg->name, job->id);
    if (job->lease_wake < ds->armed_wall)
        dispatcher_rearm(ds);
}

void lease_start(struct dispatcher *ds, struct job *job)
{
    job->lease_at = cluster_now_ms() + job->ttr_ms;
    job->warned = 0;
    lease_arm(ds, job);
}

/* Leases stood still while disconnected: move every lease end by the time away. The
 * order of the lease heap does not change when all keys move alike. */
void lease_shift_all(struct dispatcher *ds, int64_t delta_ms)
{
    struct job *job, *tmp;
    JOBS_EACH(ds, job, tmp) {
        job->lease_at += delta_ms;
        job->lease_wake += delta_ms;
    }
}

/* The lease ran out: tell the holder, give the lock up, deliver again (attempt + 1). */
static void expire(struct dispatcher *ds, struct job *job)
{
    log_info("queue %s: job %s: lease of %u ms expired, releasing it", job->q->cfg->name,
             job->id, job->ttr_ms);
    metrics_event(ds->d->metrics, job->q->cfg, ME_EXPIRED);
    job_revoke(ds, job, LOST_EXPIRED);
    lock_release(ds, job);
}

void lease_tick(struct dispatcher *ds, int64_t wall)
{
    struct job *job;
    if (!zkstore_connected(ds->d->zs))
        return;
    while ((job = heap_peek(&ds->leases)) && job->lease_wake <= wall) {
        heap_pop(&ds->leases);
        if (job->warned || !job->owner) {
            expire(ds, job);
            continue;
        }
        job->warned = 1;
        job->owner->ops->deadline(job->owner->conn, job->id, job->lease_at - wall);
        lease_arm(ds, job);
    }
}

void lease_touch(struct dispatcher *ds, struct consumer *c, const char *id, struct reply *r)
{
    struct job *job = settle_held_job(ds, c, id, 0, r);
    if (!job)
        return;
    lease_start(ds, job);
    reply_ok(r, NULL);
}
