#include "dispatcher_int.h"
#include "flowcache.h"
#include "dispatcher_jobs.h"
#include "settle.h"
#include "jobs.h"
#include "lease.h"
#include "limit.h"
#include "rate.h"
#include "lock.h"
#include "foreign_format.h"
#include "jobtrace.h"

#include <event2/event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buckets.h"
#include "claim.h"
#include "config.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "mirror.h"
#include "protocol.h"
#include "reply.h"
#include "putset.h"
#include "stash.h"
#include "txnbatch.h"
#include "writehold.h"
#include "cluster_time.h"
#include "units.h"
#include "zkacl.h"
#include "zkstore.h"

/* Work per queue per loop turn, so that a burst of due jobs cannot stall acks and new
 * connections: the rest follows in the next turns. */
#define DUE_PER_TURN 4096
#define LOCKS_PER_TURN 1024
/* Multis of one kind on their way before new items wait (and so batch up). Enough to keep a
 * ZooKeeper with a slow transaction log busy (its group commit takes what is there at each
 * fsync: issue 43, performance.md); on a fast log they are rarely all out. */
#define TXN_INFLIGHT 16
/* Jobs are locked (and their payload read if needed) this long before they are due, while
 * the queue has consumers with room, so that at the due time only the push is left. */
#define PRELOCK_MS 50
/* A stale session waits for ZooKeeper's answer to its question, looked for this often. */
#define STALE_POLL_MS 20

/* ---- heaps ---- */

/* Keyed by the due time itself: jobs due at the same millisecond leave the delay heap in
 * the same timer turn, so that priority alone orders them. */
static int delayed_less(const void *a, const void *b)
{
    const struct job *x = a, *y = b;
    if (x->wake_ms != y->wake_ms)
        return x->wake_ms < y->wake_ms;
    /* Same due time: the more urgent leave first, should a turn not take them all. */
    if (x->jn.priority != y->jn.priority)
        return x->jn.priority < y->jn.priority;
    return x->seq < y->seq;
}

/* Among due jobs: those locked ahead of a consumer in the order they were chosen (guarantees.md,
 * Order and timing), then more urgent priority, then earlier due time, then first seen. */
static int ready_less(const void *a, const void *b)
{
    const struct job *x = a, *y = b;
    if (x->chosen != y->chosen) /* 0, not chosen, last */
        return x->chosen - 1 < y->chosen - 1;
    if (x->jn.priority != y->jn.priority)
        return x->jn.priority < y->jn.priority;
    if (x->jn.due_ms != y->jn.due_ms)
        return x->jn.due_ms < y->jn.due_ms;
    return x->seq < y->seq;
}

/* limit.h, rate.h: a slot may be free, or startable */
static void limit_woke(struct dqueue *q) { dispatcher_kick_soon(q->ds, q); }

/* [queue] group_weights: the turns a group takes in a row (turns.h); read at each turn, so a
 * reload applies at once. */
static uint32_t group_weight(const void *ctx, const char *group)
{
    const struct queue_config *qc = ctx;
    for (size_t i = 0; i < qc->nweights; i++)
        if (strcmp(qc->weights[i].group, group) == 0)
            return qc->weights[i].weight;
    return 1;
}

static int armed_less(const void *a, const void *b)
{
    const struct job *x = a, *y = b;
    return x->jn.due_ms < y->jn.due_ms || (x->jn.due_ms == y->jn.due_ms && x->seq < y->seq);
}

void dispatcher_push_ready(struct job *job)
{
    job_transition(job, JE_DUE);
    if (!job->prelocked) /* the key stays as it is while the job is in the heap */
        job->chosen = 0;
    if (turns_push(&job->q->ready, job) != 0)
        log_error("queue %s: out of memory for job %s", job->q->cfg->name, job->id);
}

void dispatcher_make_ready(struct dispatcher *ds, struct job *job)
{
    dispatcher_push_ready(job);
    dispatcher_dispatch(ds, job->q);
}

/* Due jobs go to the ready heap (the caller dispatches); others wait in the delay heap.
 * Returns 1 when the job is ready. */
int dispatcher_place(struct dispatcher *ds, struct job *job, int64_t due_wall)
{
    int64_t wall = cluster_now_ms();
    if (due_wall < job->not_before) /* given back after a failure: not before its retry */
        due_wall = job->not_before;
    if (due_wall <= wall) {
        dispatcher_push_ready(job);
        return 1;
    }
    job_transition(job, JE_WAIT);
    job->wake_ms = due_wall;
    if (heap_push(&job->q->delayed, job) != 0)
        log_error("queue %s: out of memory for job %s", job->q->cfg->name, job->id);
    if (due_wall < ds->armed_wall)
        dispatcher_rearm(ds);
    return 0;
}

void dispatcher_schedule(struct dispatcher *ds, struct job *job, int64_t due_wall)
{
    if (dispatcher_place(ds, job, due_wall))
        dispatcher_dispatch(ds, job->q);
}

/* Queues to dispatch later in this loop turn: no recursion from completions, one pass for
 * many changes. */
void dispatcher_kick_soon(struct dispatcher *ds, struct dqueue *q)
{
    q->kicked = 1;
    event_active(ds->kick, 0, 0);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct dispatcher *ds = arg;
    for (size_t i = 0; i < ds->nqueues; i++) {
        if (ds->queues[i]->kicked) {
            ds->queues[i]->kicked = 0;
            dispatcher_dispatch(ds, ds->queues[i]);
        }
    }
}

/* A consumer with a free slot may take work from any queue it follows. */
void dispatcher_consumer_changed(struct dispatcher *ds, struct consumer *c)
{
    for (struct sub *s = c->subs; s; s = s->cnext)
        dispatcher_kick_soon(ds, s->q);
    c->ops->quiet(c->conn);
}

/* A lock may be held without a consumer: not in queues whose limits it would spend before
 * its job runs (a concurrency slot, a rate start), and where a job holding a slot would
 * wait behind one that needs a slot (dispatch pushes a lock taken ahead only in its turn). */
static int unowned_lock_allowed(const struct dqueue *q)
{
    return q->cfg->format == QF_NATIVE && !q->cfg->concurrency && !q->cfg->group_concurrency &&
           !q->cfg->rate_n && !q->cfg->group_rate_n;
}

/* A lock without a consumer yet, taken now. */
static int may_lock_unowned(struct dispatcher *ds, struct dqueue *q)
{
    return unowned_lock_allowed(q) && !dispatcher_stopped(q) && zkstore_connected(ds->d->zs) &&
           !ds->clock_held;
}

/* Locking ahead of the due time needs a consumer with room for every job already locked
 * ahead, and no due job waiting: a job locked ahead is a choice, and a choice goes before
 * every job not locked yet (ready_less). */
static int may_prelock(struct dispatcher *ds, struct dqueue *q)
{
    return !turns_peek(&q->ready) && may_lock_unowned(ds, q) &&
           consumer_ring_room(&q->ring) > q->nprelocked; /* the cheap tests first */
}

#define WINDOW_UNKNOWN UINT64_MAX

/* JOB is locked before a consumer is chosen for it: once due, it goes before any job not
 * locked yet, in the order of these choices (ready_less). */
static void choose(struct dispatcher *ds, struct job *job)
{
    job->prelocked = 1;
    job->chosen = ++ds->choices;
    job->q->nprelocked++;
}

/* JOB, the first ready job, locked before a consumer is free (ahead.h): 1, or 0 when it
 * may not be. Not while groups take turns: the order of their turns is decided at the push.
 * *WINDOW: ahead.h's window, worked out once a dispatch turn (it walks the consumers). */
static int lock_ahead(struct dispatcher *ds, struct dqueue *q, struct job *job,
                      uint64_t *window)
{
    if (job->prelocked || job->ci || turns_groups(&q->ready) > 1 || !may_lock_unowned(ds, q))
        return 0;
    if (*window == WINDOW_UNKNOWN)
        *window = ahead_window(&q->ahead, cluster_now_ms(), consumer_ring_credits(&q->ring));
    if (q->nprelocked >= *window)
        return 0;
    turns_pop(&q->ready);
    job->ahead = 1;
    choose(ds, job);
    lock_take(ds, job, NULL);
    return 1;
}

int dispatcher_stopped(const struct dqueue *q) { return q->paused || q->ds->draining; }


/* ---- the timer: one libevent timer for the earliest deadline of all queues ---- */

/* The libevent timer runs on CLOCK_MONOTONIC; it is armed for "earliest due time minus
 * the wall clock now" and, when it fires, jobs are compared with the wall clock again, so
 * a clock step can delay a job but never release it early. */
void dispatcher_rearm(struct dispatcher *ds)
{
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < ds->nqueues; i++) {
        struct dqueue *q = ds->queues[i];
        struct job *top = heap_peek(&q->delayed), *armed = heap_peek(&q->armed);
        int64_t ahead = may_prelock(ds, q) ? PRELOCK_MS : 0;
        if (top && top->wake_ms - ahead < next)
            next = top->wake_ms - ahead;
        if (armed && (int64_t)armed->jn.due_ms < next)
            next = (int64_t)armed->jn.due_ms;
    }
    int64_t bucket = mirror_next(ds->d->mirror);
    if (bucket < next)
        next = bucket;
    struct job *lease = heap_peek(&ds->leases);
    /* Disconnected, a holder cannot ack: its lease waits for the connection. */
    if (lease && lease->lease_wake < next && zkstore_connected(ds->d->zs))
        next = lease->lease_wake;
    ds->armed_wall = next;
    if (next == INT64_MAX) {
        evtimer_del(ds->timer);
        return;
    }
    int64_t now = cluster_now_ms();
    struct timeval tv = units_ms_timeval(next - now);
    evtimer_add(ds->timer, &tv);
}

void dispatcher_tick(struct dispatcher *ds)
{
    int64_t wall = cluster_now_ms();
    mirror_tick(ds->d->mirror, wall);
    for (size_t i = 0; i < ds->nqueues; i++) {
        struct dqueue *q = ds->queues[i];
        struct job *job;
        int moved = 0;
        /* All due jobs enter the ready heap before any is dispatched, so that among
         * jobs due together priority decides (up to DUE_PER_TURN: the timer fires again
         * at once for the rest). */
        while (moved++ < DUE_PER_TURN && (job = heap_peek(&q->armed)) &&
               (int64_t)job->jn.due_ms <= wall) {
            heap_pop(&q->armed);
            dispatcher_push_ready(job);
        }
        while (moved++ < DUE_PER_TURN && (job = heap_peek(&q->delayed)) &&
               job->wake_ms <= wall) {
            heap_pop(&q->delayed);
            dispatcher_push_ready(job);
        }
        dispatcher_dispatch(ds, q);
        while (moved++ < DUE_PER_TURN && (job = heap_peek(&q->delayed)) &&
               job->wake_ms <= wall + PRELOCK_MS && may_prelock(ds, q)) {
            heap_pop(&q->delayed);
            choose(ds, job);
            lock_take(ds, job, NULL);
        }
    }
    lease_tick(ds, wall);
    dispatcher_rearm(ds);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    dispatcher_tick(arg);
}

/* ---- ids ---- */

const char *dispatcher_root(struct dispatcher *ds) { return ds->d->cfg->zk_root; }

void dispatcher_retry_later(struct dispatcher *ds, struct job *job, const char *what, int rc)
{
    dispatcher_retry_later_at(ds, job, what, rc, job->path);
}

void dispatcher_retry_later_at(struct dispatcher *ds, struct job *job, const char *what, int rc,
                    const char *znode)
{
    if (rc == ZNOAUTH) /* one line per queue, not one per job every second */
        queue_denied(job->q, znode);
    log_at_site(rc == ZNOAUTH ? LOG_DEBUG : LOG_WARN, "queue %s: job %s: %s failed: %s; retrying "
           "in %d ms", job->q->cfg->name, job->id, what, zk_strerror(rc), ZK_RETRY_MS);
    job_unhold(ds, job);
    if (job_settled_gone(ds, job))
        return;
    dispatcher_schedule(ds, job, cluster_now_ms() + ZK_RETRY_MS);
}

/* ---- locking and delivery ---- */


/* Locked ahead of its due time: wait in the armed heap until it is due. */
static void arm(struct dispatcher *ds, struct job *job)
{
    if ((int64_t)job->jn.due_ms <= cluster_now_ms()) {
        dispatcher_make_ready(ds, job);
        return;
    }
    job_transition(job, JE_ARM);
    if (heap_push(&job->q->armed, job) != 0)
        log_error("queue %s: out of memory for job %s", job->q->cfg->name, job->id);
    if ((int64_t)job->jn.due_ms < ds->armed_wall)
        dispatcher_rearm(ds);
}

static int push_job(const struct job *job)
{
    const struct proto_job p = {
        .id = job->id, .queue = job->q->cfg->name, .uid = job->ci ? NULL : job->jn.uid,
        .attempt = job->attempt,
        .due_ms = job->jn.due_ms, .priority = job_priority(job), .ttr_ms = job->ttr_ms,
        .payload = job->payload, .len = job->len,
    };
    return job->owner->ops->job(job->owner->conn, &p);
}

static int may_push(struct dispatcher *ds, struct dqueue *q);

/* The lock's answer came when ZooKeeper had not answered anything sent for a while (this
 * process was paused, say): the session, and the lock with it, may have expired meanwhile.
 * The job keeps its lock, as one taken ahead: it is pushed once ZooKeeper answers again
 * (may_push polls), or released with the session. In a queue with limits it is given back
 * unrun instead (its slot with it), so that it never holds a slot while waiting its turn
 * behind a job that needs one. */
static void stale_lock_answer(struct dispatcher *ds, struct job *job)
{
    job_unhold(ds, job);
    if (!unowned_lock_allowed(job->q)) {
        settle_give_back_locked(ds, job);
        return;
    }
    choose(ds, job);
    arm(ds, job);
}

/* JOB, locked or claimed, will not be pushed now (its consumer went away, or its queue
 * stopped, while its lock was on its way). A lock is released, counted as its attempt was
 * (the lock's sequence numbered it); a claim is given back unrun, as it was never pushed. */
static void release_unpushed(struct dispatcher *ds, struct job *job)
{
    if (job->claim)
        settle_give_back_locked(ds, job);
    else
        lock_release(ds, job);
}

/* Locked, payload at hand: push it to its consumer and start the lease. */
void dispatcher_deliver(struct dispatcher *ds, struct job *job)
{
    job_unheap(job); /* a lock taken ahead leaves the prelocking heap only now */
    if (!job->ci && job->attempt > job->q->cfg->max_attempts) {
        settle_bury_locked(ds, job);
        return;
    }
    if (job->owner && !job->ci && dispatcher_stopped(job->q)) {
        job_unhold(ds, job); /* paused or draining since the consumer was chosen */
        release_unpushed(ds, job);
        return;
    }
    if (job->owner && !job->ci && !may_push(ds, job->q)) {
        stale_lock_answer(ds, job);
        return;
    }
    if (!job->owner) {
        if (job->ci)
            ds->foreign->release(ds, job, 0);
        else if (!job->prelocked)
            release_unpushed(ds, job);
        else if (!dispatcher_stopped(job->q) && consumer_ring_size(&job->q->ring))
            arm(ds, job);
        else /* paused, draining or its consumers gone while the lock was on its way */
            settle_give_back_locked(ds, job);
        return;
    }
    job->ttr_ms = job->jn.ttr_ms ? job->jn.ttr_ms : (uint32_t)job->q->cfg->ttr_ms;
    lease_start(ds, job);
    if (push_job(job) != 0) {
        log_error("queue %s: job %s: cannot queue the push", job->q->cfg->name, job->id);
    } else {
        jobtrace_push(job);
        metrics_delivered(ds->d->metrics, job->q->cfg, job->attempt, job->jn.prior_attempts,
                          job->given_back ? 0 : job->jn.due_ms); /* 0: no lateness sample */
    }
    log_debug("queue %s: job %s attempt %u delivered", job->q->cfg->name, job->id, job->attempt);
    job->owner->ops->quiet(job->owner->conn);
}

/* A job locked ahead whose lock is still on its way when it falls due would be overtaken
 * by jobs locked after it: nothing is dispatched until its answer is in (its completion
 * dispatches again), unless it was chosen before it. */
static int overtakes_prelock(struct dqueue *q, const struct job *job)
{
    const struct job *pl = heap_peek(&q->prelocking);
    return pl && (int64_t)pl->jn.due_ms <= cluster_now_ms() &&
           (!job->chosen || pl->chosen < job->chosen);
}

/* A due job locked ahead of a consumer, its answer still to come, ranks before JOB: JOB
 * waits for it (the answer dispatches again), so that locking ahead never reorders. */
static int behind_ahead(struct dqueue *q, const struct job *job)
{
    const struct job *k = heap_peek(&q->ahead_locking);
    return k && ready_less(k, job);
}

/* LOCKS_PER_TURN locks sent in this turn: the rest after the loop has polled again. */
static int turn_used_up(struct dispatcher *ds, struct dqueue *q, int *locks)
{
    if ((*locks)++ < LOCKS_PER_TURN)
        return 0;
    q->kicked = 1;
    static const struct timeval now = {0, 0};
    evtimer_add(ds->later, &now);
    return 1;
}

/* A push needs a session known to be alive: a lock is ours only until ZooKeeper could have
 * expired the session, a session timeout after it last heard from us. A process frozen
 * (SIGSTOP, a VM paused) and thawed may not know yet that it lost its session: after half
 * a timeout without an answer, it asks ZooKeeper first (polling its answer) and pushes
 * nothing meanwhile. */
static int may_push(struct dispatcher *ds, struct dqueue *q)
{
    struct zkstore *zs = ds->d->zs;
    if (!zkstore_connected(zs) || ds->clock_held)
        return 0;
    int64_t age = zkstore_heard_age_ms(zs);
    if (age < zkstore_negotiated_timeout(zs) / 2) {
        if (ds->stale_held)
            log_info("zookeeper: answered again; pushing jobs");
        ds->stale_held = 0;
        return 1;
    }
    if (!ds->stale_held) {
        ds->stale_holds++;
        log_warn("zookeeper: no answer for %lld ms (was this process paused?): pushing "
                 "nothing until ZooKeeper answers", (long long)age);
    }
    ds->stale_held = 1;
    zkstore_touch(zs);
    q->kicked = 1;
    struct timeval poll = units_ms_timeval(STALE_POLL_MS);
    evtimer_add(ds->later, &poll);
    return 0;
}

/* The timer was armed for the due time of the next job, as it could not be locked ahead
 * then (consumers full, due jobs waiting); now it can: wake up PRELOCK_MS before. */
static void prelock_sooner(struct dispatcher *ds, struct dqueue *q)
{
    const struct job *top = heap_peek(&q->delayed);
    if (top && top->wake_ms - PRELOCK_MS < ds->armed_wall && may_prelock(ds, q))
        dispatcher_rearm(ds);
}

void dispatcher_dispatch(struct dispatcher *ds, struct dqueue *q)
{
    struct job *job;
    int locks = 0;
    if (dispatcher_stopped(q))
        return;
    int room = 1;
    uint64_t window = WINDOW_UNKNOWN; /* lock_ahead */
    size_t passed = 0; /* groups whose turn passed: their group_concurrency is used up */
    while ((job = turns_peek(&q->ready)) && may_push(ds, q)) {
        if (overtakes_prelock(q, job) || behind_ahead(q, job)) {
            /* it waits for an answer, but may be locked ahead itself meanwhile */
            if (job->prelocked || turn_used_up(ds, q, &locks) ||
                !lock_ahead(ds, q, job, &window))
                break;
            continue;
        }
        enum limit_room lr = job->prelocked ? LIMIT_ROOM : limit_room(q->limit, job);
        if (lr == LIMIT_ROOM && !job->prelocked)
            lr = rate_room(q->rate, job);
        if (lr == LIMIT_GROUP_FULL && ++passed < turns_groups(&q->ready)) {
            turns_pass(&q->ready);
            continue;
        }
        if (!(room = lr == LIMIT_ROOM))
            break;
        if (turn_used_up(ds, q, &locks))
            return;
        struct consumer *c = consumer_pick(&q->ring, job->avoid, job->id);
        if (!c) {
            if (lock_ahead(ds, q, job, &window))
                continue;
            return;
        }
        turns_pop(&q->ready);
        passed = 0;
        if (job->ci) {
            ds->foreign->dispatch(ds, job, c);
            continue;
        }
        if (job->prelocked) { /* locked ahead: only the push is left */
            job_unprelock(job);
            consumer_hold(c, job);
            job_transition(job, JE_LOCK);
            dispatcher_deliver(ds, job);
            continue;
        }
        lock_take(ds, job, c);
    }
    limit_set_waiting(q->limit, room ? 0 : q->ready.len);
    prelock_sooner(ds, q);
}

/* ---- jobs listed, stored and gone ---- */

/* Payloads of jobs this daemon put and will deliver soon stay in memory, so that delivery
 * needs no read: up to this much per job and in all. */
#define KEEP_PAYLOAD_MAX (64 * 1024)
#define KEEP_PAYLOADS_TOTAL (64 * 1024 * 1024)
/* Stashed: payloads of jobs due within lookahead plus this, kept until due plus this. */
#define STASH_AHEAD_MS 1000
#define STASH_KEEP_MS 10000
/* JOB, of our own put, takes PAYLOAD (LEN bytes): no read before its claim or push. */
static void job_own_payload(struct dispatcher *ds, struct job *job, unsigned char *payload,
                            size_t len)
{
    job->payload = payload;
    job->len = len;
    job->zversion = 0; /* our put: a new znode */
    job->under_name = 0;
    ds->payload_bytes += len;
}

/* struct put_env's stored: the mirror is told of the job this daemon just stored, and its
 * payload stays in memory if it is due soon, so that delivering it needs no read: in the
 * job if our mirror has it already (before it is dispatched: a claim sent without the
 * payload reads the job first), else in the stash until the mirror lists it. */
static void on_job_stored(void *engine, struct dqueue *q, const char *path,
                          const struct job_name *jn, const char *id, unsigned char **payload,
                          size_t len)
{
    struct dispatcher *ds = engine;
    int64_t now = cluster_now_ms(), due_ms = (int64_t)jn->due_ms;
    struct mirror_entry *e = mirror_job_created(ds->d->mirror, q, path, jn, id);
    /* the entry is the job's (on_job_listed), found without a second lookup */
    struct job *job = e ? (struct job *)((char *)e - offsetof(struct job, listed)) : NULL;
    int keep = *payload && len <= KEEP_PAYLOAD_MAX;
    if (keep && !job) {
        if (due_ms <= now + (int64_t)ds->d->cfg->lookahead_ms + STASH_AHEAD_MS &&
            stash_put(ds->stash, path, *payload, len, due_ms + STASH_KEEP_MS, now) == 0)
            *payload = NULL;
        return;
    }
    if (keep && !job->payload && ds->payload_bytes + len <= KEEP_PAYLOADS_TOTAL) {
        job_own_payload(ds, job, *payload, len);
        *payload = NULL;
    }
    if (job)
        dispatcher_dispatch(ds, q);
}

static struct dqueue *queue_named(void *engine, const char *name)
{
    return dispatcher_queue(engine, name);
}

const struct put_env *dispatcher_put_env(struct dispatcher *ds) { return &ds->put_env; }



/* ID: the job's id, or NULL to make it from Q and JN. */
static struct job *job_seen(struct dispatcher *ds, struct dqueue *q, const char *path,
                            const struct job_name *jn, const char *id)
{
    struct job_key k;
    char made[LAYOUT_ID_MAX + 1];
    job_key_make(&k, path); /* hashed once: looked up, then added when new */
    struct job *job = job_find_key(ds, &k);
    if (job) {
        job->gone = 0; /* listed again: it exists, whatever an earlier listing said */
        return job;
    }
    if (!id && layout_job_id(made, sizeof made, q->cfg->name, jn) == 0)
        id = made;
    if (!id || !(job = job_new(ds, q, &k, id, jn)))
        return NULL;
    unsigned char *payload;
    size_t len;
    if ((payload = stash_take(ds->stash, path, &len)))
        job_own_payload(ds, job, payload, len);
    dispatcher_place(ds, job, (int64_t)jn->due_ms); /* the mirror kicks once per listing */
    return job;
}

/* A held job missing from a listing: the listing may be older than the job (our own put,
 * locked at once), so ZooKeeper is asked. Gone for real, it was cancelled with our lock
 * (CANCEL force=1, deferctl cancel --force): its consumer is told now, not at its ack. */
struct vanish_check {
    struct dispatcher *ds;
    char path[];
};

static void on_vanish_checked(const struct zk_result *res, void *ctx)
{
    struct vanish_check *vc = ctx;
    struct dispatcher *ds = vc->ds;
    struct job *job = job_find_path(ds, vc->path);
    free(vc);
    if (job && job->state == JS_INFLIGHT && res->rc == ZOK)
        job->gone = 0; /* an older listing: its next one shows the job again */
    if (!job || job->state != JS_INFLIGHT || !job->gone || !job->owner || res->rc != ZNONODE)
        return;
    log_info("queue %s: job %s was cancelled while a consumer held it; telling the consumer",
             job->q->cfg->name, job->id);
    job_revoke(ds, job, LOST_CANCELLED);
    job_free(ds, job);
}

/* Someone else wrote our claim without JOB: a forced cancel through another daemon (or
 * deferctl). Its consumer is told now; a job with a settle on its way is left to it. */
static void on_claim_removed(struct job *job, void *ctx)
{
    struct dispatcher *ds = ctx;
    if (job->state == JS_SETTLING) { /* its settle fails, telling its consumer why */
        job->gone = 1;
        return;
    }
    if (job->state == JS_LOCKING)
        return;
    log_info("queue %s: job %s was cancelled while held here (its claim was written without "
             "it)%s", job->q->cfg->name, job->id, job->owner ? "; telling the consumer" : "");
    struct dqueue *q = job->q;
    if (job->owner)
        job_revoke(ds, job, LOST_CANCELLED);
    job_free(ds, job);
    dispatcher_dispatch(ds, q);
}

static void check_vanished_held(struct dispatcher *ds, struct job *job)
{
    size_t n = strlen(job->path) + 1;
    struct vanish_check *vc = malloc(sizeof *vc + n);
    if (!vc)
        return; /* its holder learns at its ack, as LEASE_LOST */
    vc->ds = ds;
    memcpy(vc->path, job->path, n);
    if (zkstore_exists(ds->d->zs, job->path, 0, on_vanish_checked, vc) != ZOK)
        free(vc);
}

void dispatcher_job_vanished(struct dispatcher *ds, struct job *job)
{
    if (job->claim)
        return; /* our claim deleted it: the claim node holds it now */
    switch (job->state) {
    case JS_INFLIGHT:
        if (!job->gone && !job->ci && job->owner)
            check_vanished_held(ds, job);
        job->gone = 1;
        break;
    case JS_LOCKING:
    case JS_SETTLING:
    case JS_CHECKING:
        job->gone = 1; /* its call in flight or its holder decides */
        break;
    default:
        job_free(ds, job);
    }
}

/* ---- consumers ---- */

static void unarm(struct dispatcher *ds, struct dqueue *q);

/* The last consumer of a queue left: what was locked ahead for it goes back. */
static void unarm_orphaned(struct dispatcher *ds)
{
    for (size_t i = 0; i < ds->nqueues; i++)
        if (ds->queues[i]->nprelocked && consumer_ring_size(&ds->queues[i]->ring) == 0)
            unarm(ds, ds->queues[i]);
}

void dispatcher_unsubscribe(struct dispatcher *ds, struct consumer *c, struct dqueue *q)
{
    if (q)
        consumer_unsubscribe(c, &q->ring, q);
    else
        consumer_unsubscribe_all(c, dispatcher_ring);
    unarm_orphaned(ds);
}

void dispatcher_consumer_gone(struct dispatcher *ds, struct consumer *c)
{
    while (c->held) {
        struct job *job = c->held;
        consumer_release(c, job);
        if (job->state == JS_INFLIGHT)
            lock_release(ds, job); /* delivered again, attempt + 1 */
        /* LOCKING and SETTLING jobs finish their call and see they have no owner */
    }
    unarm_orphaned(ds); /* its rings were left before this call */
}

/* Starts reading a queue's jobs from ZooKeeper (idempotent). */
static int follow(struct dispatcher *ds, struct dqueue *q)
{
    if (q->cfg->format != QF_NATIVE)
        return ds->foreign->follow(ds, q);
    return mirror_start(ds->d->mirror, q);
}

int dispatcher_subscribe(struct dispatcher *ds, struct consumer *c, struct dqueue *q)
{
    if (consumer_subscribe(c, &q->ring, q) != 0 || follow(ds, q) != 0)
        return -1;
    dispatcher_dispatch(ds, q);
    return 0;
}


/* (Re)connected: follow every queue that has consumers (after a lost session the mirror
 * starts from nothing) and hand out what is ready. */
void dispatcher_session_up(struct dispatcher *ds)
{
    claims_connected(ds->claims); /* the same session: outcomes left unknown looked up */
    settle_resume_held(ds); /* the same session came back: apply what consumers asked */
    settle_check_unknown(ds); /* a new one: were the settles sent as the old one broke applied? */
    writehold_release(ds->writehold); /* unless ZooKeeper's clock is still to be read */
    dispatcher_rearm(ds); /* leases wait while disconnected */
    for (size_t i = 0; i < ds->nqueues; i++) {
        struct dqueue *q = ds->queues[i];
        if (q->ring.head && follow(ds, q) != 0)
            log_error("queue %s: cannot follow it in ZooKeeper", q->cfg->name);
        dispatcher_dispatch(ds, q);
    }
}

int dispatcher_limit_watch(struct dispatcher *ds, const char *path)
{
    char queue[QUEUE_NAME_MAX + 1];
    int rc = layout_queue_of(path, ds->d->cfg->zk_root, LAYOUT_SLOTS, queue, sizeof queue);
    struct dqueue *q = rc == 0 ? dispatcher_queue(ds, queue) : NULL;
    if (q)
        limit_watch_fired(q->limit);
    return rc != -1;
}

/* The session is gone, and our locks with it: every holder is told its lease is lost, and
 * every job is forgotten (the new session reads them again). Jobs with a call in flight are
 * freed by its completion. */
void dispatcher_revoke_all(struct dispatcher *ds)
{
    claims_session_lost(ds->claims); /* recovered by whoever sees the session's node gone */
    settle_revoke_held(ds);
    writehold_fail(ds->writehold, RR_NO_SESSION);
    struct job *job, *tmp;
    JOBS_EACH(ds, job, tmp) {
        if (job->owner && job->state == JS_INFLIGHT)
            job_revoke(ds, job, LOST_SESSION);
        if (job->owner && job->state == JS_SETTLING) { /* answered: its reply says why */
            consumer_note_lost(job->owner, job->id, LOST_SESSION, 0);
            consumer_answer_lost(job->owner, job->id);
        }
        job_unheap(job);
        job_unhold(ds, job);
        job->gone = 1;
        if (job->state != JS_LOCKING && job->state != JS_SETTLING && job->state != JS_CHECKING)
            job_free(ds, job);
        else
            mirror_entry_unlink(&job->listed); /* out of its bucket; the mirror is reset next */
    }
    for (size_t i = 0; i < ds->nqueues; i++)
        limit_session_lost(ds->queues[i]->limit);
    if (ds->foreign)
        ds->foreign->reset(ds);
}

/* Debug builds (the ASan suite) check the counters against a walk of every job. */
static void check_counts(const struct dispatcher *ds, const struct queue_counts *out)
{
#ifndef NDEBUG
    const struct job *job, *tmp;
    struct queue_counts *walk = calloc(ds->nqueues + 1, sizeof *walk);
    if (!walk)
        return;
    JOBS_EACH(ds, job, tmp) {
        struct queue_counts *c = &walk[job->q->index];
        c->inflight += job->state == JS_INFLIGHT;
        c->ready += job->state == JS_READY;
        c->delayed += job->state == JS_DELAYED || job->state == JS_ARMED;
        c->known++;
    }
    for (size_t i = 0; i < ds->nqueues; i++)
        if (memcmp(&walk[i], &out[i], sizeof walk[i]) != 0) {
            log_error("queue %s: job counts drifted: counted %zu/%zu/%zu/%zu, walked "
                      "%zu/%zu/%zu/%zu", ds->queues[i]->cfg->name, out[i].known,
                      out[i].delayed, out[i].ready, out[i].inflight, walk[i].known,
                      walk[i].delayed, walk[i].ready, walk[i].inflight);
            abort(); /* a bug of the counting, never of input: stop the test run here */
        }
    free(walk);
#else
    (void)ds;
    (void)out;
#endif
}

void dispatcher_queue_counts(const struct dispatcher *ds, struct queue_counts *out)
{
    memset(out, 0, ds->nqueues * sizeof *out);
    for (size_t i = 0; i < ds->nqueues; i++) {
        const size_t *n = ds->queues[i]->nstate;
        out[i].inflight = n[JS_INFLIGHT];
        out[i].ready = n[JS_READY];
        out[i].delayed = n[JS_DELAYED] + n[JS_ARMED];
        for (int st = 0; st < JS_COUNT; st++)
            out[i].known += n[st];
    }
    check_counts(ds, out);
}

void dispatcher_flow_counts(const struct dispatcher *ds, struct flow_counts *out)
{
    *out = ds->flows;
}

void dispatcher_format(const struct dispatcher *ds, char *buf, size_t len)
{
    size_t inflight = 0, ready = 0, delayed = 0, ahead = 0;
    for (size_t i = 0; i < ds->nqueues; i++)
        ahead += ds->queues[i]->nprelocked;
    struct queue_counts *qc = calloc(ds->nqueues ? ds->nqueues : 1, sizeof *qc);
    if (qc)
        dispatcher_queue_counts(ds, qc);
    for (size_t i = 0; qc && i < ds->nqueues; i++) {
        inflight += qc[i].inflight;
        ready += qc[i].ready;
        delayed += qc[i].delayed;
    }
    free(qc);
    unsigned long long items[3], multis[3], lists, names, unchanged;
    mirror_counts(ds->d->mirror, &lists, &names, &unchanged);
    txnbatch_counts(ds->puts, &items[0], &multis[0]);
    txnbatch_counts(ds->locks, &items[1], &multis[1]);
    txnbatch_counts(ds->settles, &items[2], &multis[2]);
    int n = snprintf(buf, len,
                     " jobs_known=%zu delayed=%zu ready=%zu inflight=%zu locked_ahead=%zu"
                     " listing_max_bytes=%zu"
                     " listings=%llu listed_names=%llu listings_unchanged=%llu"
                     " payload_reads=%llu payload_bytes=%zu"
                     " txn.puts=%llu/%llu txn.locks=%llu/%llu txn.settles=%llu/%llu"
                     " changes=%llu change_round_trips=%llu change_round_trips_max=%u"
                     " stale_session_holds=%llu",
                     ds->jobs.count, delayed, ready, inflight, ahead,
                     mirror_listing_max(ds->d->mirror), lists, names, unchanged, ds->reads,
                     ds->payload_bytes, items[0], multis[0], items[1], multis[1], items[2],
                     multis[2], ds->changes, ds->change_round_trips,
                     ds->change_round_trips_max, ds->stale_holds);
    struct writehold_stats wh;
    writehold_report(ds->writehold, &wh);
    if (n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " writes_held=%zu writes_held_total=%llu"
                      " writes_hold_expired=%llu", wh.held, wh.total, wh.expired);
    if (ds->draining && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " draining=1");
    for (size_t i = 0; i < ds->nqueues && n > 0 && (size_t)n < len; i++)
        if (ds->queues[i]->paused)
            n += snprintf(buf + n, len - (size_t)n, " paused.%s=1", ds->queues[i]->cfg->name);
    for (size_t i = 0; i < ds->nqueues && n > 0 && (size_t)n < len; i++)
        if (ds->queues[i]->cfg->max_pending && ds->queues[i]->count_ready)
            n += snprintf(buf + n, len - (size_t)n, " pending.%s=%lld",
                          ds->queues[i]->cfg->name, (long long)queue_pending_estimate(ds->queues[i]));
    if (ds->foreign && n > 0 && (size_t)n < len)
        ds->foreign->format_stats(ds, buf + n, len - (size_t)n);
    /* issue 43's trace (DEFERD_TXN_TRACE=1 only): absent otherwise */
    n = n > 0 ? (int)strnlen(buf, len) : n;
    if (n > 0 && (size_t)n < len)
        n += txnbatch_trace_format(ds->locks, "locks", buf + n, len - (size_t)n);
    if (n > 0 && (size_t)n < len)
        n += txnbatch_trace_format(ds->settles, "settles", buf + n, len - (size_t)n);
    if (n > 0 && (size_t)n < len)
        n += txnbatch_trace_format(ds->puts, "puts", buf + n, len - (size_t)n);
    if (n > 0 && (size_t)n < len)
        jobtrace_format(buf + n, len - (size_t)n);
}

/* ---- pause and drain ---- */

struct prelocked {
    struct job **jobs;
    size_t n, max;
};

static void collect_prelocked(struct job *job, void *arg)
{
    struct prelocked *p = arg;
    if (job->prelocked && p->n < p->max)
        p->jobs[p->n++] = job;
}

/* Locks taken ahead of a consumer are given back unrun, so that a paused or stopping
 * daemon, or a queue whose last consumer left, holds only what its consumers work on and
 * spends no attempt. The jobs return to their heap by due time once the move is applied. */
static void unarm(struct dispatcher *ds, struct dqueue *q)
{
    struct job *job;
    while ((job = heap_peek(&q->armed)))
        settle_give_back_locked(ds, job); /* leaves the armed heap */
    /* Removing from a heap reorders it: collect first, then release. */
    struct prelocked found = {.max = q->nprelocked};
    found.jobs = found.max ? malloc(found.max * sizeof *found.jobs) : NULL;
    if (found.jobs)
        turns_each(&q->ready, collect_prelocked, &found);
    for (size_t i = 0; i < found.n; i++)
        settle_give_back_locked(ds, found.jobs[i]);
    if (q->nprelocked && !found.jobs)
        log_error("queue %s: out of memory giving back locks taken ahead; they go with "
                  "their delivery or the session", q->cfg->name);
    free(found.jobs);
}

void dispatcher_set_paused(struct dispatcher *ds, struct dqueue *q, int paused)
{
    if (q->paused == !!paused)
        return;
    q->paused = !!paused;
    log_info("queue %s: %s", q->cfg->name, paused ? "paused: no deliveries until resumed"
                                                  : "resumed");
    if (paused) {
        unarm(ds, q);
    } else {
        dispatcher_kick_soon(ds, q);
        dispatcher_rearm(ds);
    }
}

void dispatcher_drain(struct dispatcher *ds)
{
    ds->draining = 1;
    writehold_fail(ds->writehold, RR_DRAINING);
    for (size_t i = 0; i < ds->nqueues; i++)
        unarm(ds, ds->queues[i]);
}

int dispatcher_draining(const struct dispatcher *ds) { return ds->draining; }

/* Connected, and ZooKeeper's clock read (one round trip after the daemon's first session
 * starts): a due time is never made from the host's clock. */
int dispatcher_writes_possible(const struct dispatcher *ds)
{
    return zkstore_connected(ds->d->zs) && cluster_time_ready();
}

enum refusal_reason dispatcher_unready_reason(const struct dispatcher *ds)
{
    return zkstore_connected(ds->d->zs) ? RR_CLOCK_UNREAD : RR_NOT_CONNECTED;
}

/* How long a write may wait: hold_writes, and never longer than the session lasts (as
 * ZooKeeper granted it, which may be less than asked). */
static int64_t hold_ms(const struct dispatcher *ds)
{
    const struct deferd *d = ds->d;
    int64_t ms = (int64_t)d->cfg->hold_writes_ms, granted = zkstore_negotiated_timeout(d->zs);
    int64_t session = granted > 0 ? granted : (int64_t)d->cfg->session_timeout_ms;
    return ms < session ? ms : session;
}

static void held_put_ended(struct dispatcher *ds)
{
    if (ds->puts_done)
        ds->puts_done(ds->puts_done_arg);
}

static const struct writehold_env writehold_env = {
    dispatcher_writes_possible, dispatcher_draining, hold_ms, held_put_ended,
};

void dispatcher_reloaded(struct dispatcher *ds)
{
    writehold_release(ds->writehold);
    for (size_t i = 0; i < ds->nqueues; i++)
        dispatcher_kick_soon(ds, ds->queues[i]);
}

void dispatcher_write_holds(const struct dispatcher *ds, struct writehold_stats *out)
{
    writehold_report(ds->writehold, out);
}

const char *dispatcher_ident(const struct dispatcher *ds) { return ds->ident; }

void dispatcher_claims_poked(struct dispatcher *ds) { claims_poked(ds->claims); }

void dispatcher_claims_session(struct dispatcher *ds, int64_t session)
{
    claims_session(ds->claims, session);
    for (size_t i = 0; i < ds->nqueues; i++)
        dispatcher_kick_soon(ds, ds->queues[i]); /* what waited for a lock may be claimed */
}

void dispatcher_claim_counts(const struct dispatcher *ds, unsigned long long *nodes,
                             unsigned long long *jobs, unsigned long long *writes)
{
    claims_counts(ds->claims, nodes, jobs, writes);
}

void dispatcher_hold_for_clock(struct dispatcher *ds, int hold)
{
    /* A first sample makes writes possible even when it is over clock_limit (which holds
     * pushes, not writes): held writes go then, whatever happens to the push hold. */
    writehold_release(ds->writehold);
    if (ds->clock_held == !!hold)
        return;
    ds->clock_held = !!hold;
    for (size_t i = 0; !hold && i < ds->nqueues; i++)
        dispatcher_kick_soon(ds, ds->queues[i]);
}

size_t dispatcher_busy(const struct dispatcher *ds)
{
    /* Held jobs are exactly the lease heap: while there are any, no walk (the drain asks
     * every 20 ms); the walk for calls in flight runs only once none is held. */
    if (ds->leases.len)
        return ds->leases.len;
    size_t n = 0;
    const struct job *job, *tmp;
    JOBS_EACH(ds, job, tmp)
        n += job->state == JS_INFLIGHT || job->state == JS_LOCKING || job->state == JS_SETTLING;
    return n;
}

/* Paths, not pointers: releasing a part of a Curator item can free its other parts. */
static char **held_paths(struct dispatcher *ds, size_t *n)
{
    struct job *job, *tmp;
    char **paths = malloc((ds->jobs.count + 1) * sizeof *paths);
    *n = 0;
    JOBS_EACH(ds, job, tmp)
        if (paths && job->state == JS_INFLIGHT && job->owner)
            paths[(*n)++] = strdup(job->path);
    return paths;
}

void dispatcher_release_held(struct dispatcher *ds)
{
    size_t n;
    char **paths = held_paths(ds, &n);
    for (size_t i = 0; i < n; i++) {
        struct job *job = NULL;
        if (paths[i])
            job = job_find_path(ds, paths[i]);
        free(paths[i]);
        if (!job || job->state != JS_INFLIGHT || !job->owner)
            continue;
        log_warn("queue %s: job %s: still held at the end of the drain; released",
                 job->q->cfg->name, job->id);
        job_revoke(ds, job, LOST_DRAIN);
        lock_release(ds, job); /* delivered again by whoever runs on */
    }
    free(paths);
}

void dispatcher_close(struct dispatcher *ds)
{
    if (!ds)
        return;
    claims_close(ds->claims); /* before the batches: what it holds back goes out first */
    txnbatch_close(ds->puts);
    txnbatch_close(ds->settles);
    txnbatch_close(ds->locks);
}

void dispatcher_set_format(struct dispatcher *ds, const struct foreign_format *f)
{
    ds->foreign = f;
}

struct dqueue *dispatcher_queue(struct dispatcher *ds, const char *name)
{
    for (size_t i = 0; i < ds->nqueues; i++)
        if (strcmp(ds->queues[i]->cfg->name, name) == 0)
            return ds->queues[i];
    return NULL;
}

struct consumer_ring *dispatcher_ring(struct dqueue *q) { return &q->ring; }

struct txnbatch *dispatcher_puts(struct dispatcher *ds) { return ds->puts; }
struct txnbatch *dispatcher_locks(struct dispatcher *ds) { return ds->locks; }
struct txnbatch *dispatcher_settles(struct dispatcher *ds) { return ds->settles; }
struct deferd *dispatcher_deferd(const struct dispatcher *ds) { return ds->d; }
size_t dispatcher_nqueues(const struct dispatcher *ds) { return ds->nqueues; }

struct dqueue *dispatcher_queue_at(const struct dispatcher *ds, size_t i)
{
    return i < ds->nqueues ? ds->queues[i] : NULL;
}

int dispatcher_add_queue(struct dispatcher *ds, const struct queue_config *qc)
{
    struct dqueue **grown = realloc(ds->queues, (ds->nqueues + 1) * sizeof *grown);
    if (!grown)
        return -1;
    ds->queues = grown;
    struct dqueue *q = calloc(1, sizeof *q);
    if (!q)
        return -1;
    q->ds = ds;
    q->d = ds->d;
    q->cfg = qc;
    heap_init(&q->delayed, delayed_less, job_setpos);
    turns_init(&q->ready, ready_less, job_setpos, group_weight, qc);
    heap_init(&q->armed, armed_less, job_setpos);
    heap_init(&q->prelocking, armed_less, job_setpos);
    heap_init(&q->ahead_locking, ready_less, job_setpos);
    if (!(q->limit = limit_new(q, limit_woke)) || !(q->rate = rate_new(q, limit_woke))) {
        limit_free(q->limit);
        free(q);
        return -1;
    }
    q->index = ds->nqueues;
    ds->queues[ds->nqueues++] = q;
    return 0;
}

/* ---- the mirror's report table ---- */

static struct mirror_entry *on_job_listed(void *ctx, struct dqueue *q, const char *path,
                                          const struct job_name *jn, const char *id)
{
    struct job *job = job_seen(ctx, q, path, jn, id);
    return job ? &job->listed : NULL;
}

static void on_job_unlisted(void *ctx, struct mirror_entry *e)
{
    dispatcher_job_vanished(ctx, (struct job *)((char *)e - offsetof(struct job, listed)));
}

static void on_listing_entered(void *ctx, struct dqueue *q) { dispatcher_dispatch(ctx, q); }

static void on_bucket_earlier(void *ctx) { dispatcher_rearm(ctx); }

struct dispatcher *dispatcher_new(struct deferd *d)
{
    struct dispatcher *ds = calloc(1, sizeof *ds);
    if (!ds)
        return NULL;
    ds->d = d;
    jobs_init(ds);
    ds->armed_wall = INT64_MAX;
    ds->timer = evtimer_new(d->base, on_timer, ds);
    ds->kick = event_new(d->base, -1, 0, on_kick, ds);
    ds->later = evtimer_new(d->base, on_kick, ds);
    ds->flow_cache = flow_cache_new();
    if (!ds->timer || !ds->kick || !ds->later || !ds->flow_cache || uid_init(&ds->uids) != 0) {
        dispatcher_free(ds);
        return NULL;
    }
    ds->listings = (struct mirror_report){.seen = on_job_listed, .vanished = on_job_unlisted,
                                          .listed = on_listing_entered,
                                          .rearm = on_bucket_earlier, .ctx = ds};
    mirror_set_report(d->mirror, &ds->listings);
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    snprintf(ds->ident, sizeof ds->ident, "%s:%d", host, (int)getpid());
    for (size_t i = 0; i < d->cfg->nqueues; i++) {
        if (dispatcher_add_queue(ds, d->cfg->queues[i]) != 0) {
            dispatcher_free(ds);
            return NULL;
        }
    }
    lease_heap_init(&ds->leases);
    /* Locks and puts wait for nothing but ZooKeeper; settles hold consumers' replies. */
    ds->buckets = buckets_new(4096);
    ds->parents = buckets_new(32768); /* 30 days of 100 s buckets */
    ds->keydirs = buckets_new(16384); /* 4096 per queue that uses keys */
    ds->stash = stash_new(16 * 1024 * 1024);
    /* Issue 43's profiling knob (not a setting): DEFERD_TXN_INFLIGHT=N (1..64) instead of
     * TXN_INFLIGHT for locks, settles and puts alike. */
    int txn_inflight = TXN_INFLIGHT;
    const char *ti = getenv("DEFERD_TXN_INFLIGHT");
    if (ti && atoi(ti) >= 1 && atoi(ti) <= 64)
        txn_inflight = atoi(ti);
    ds->locks = txnbatch_new(d->base, d->zs, txn_inflight, 1);
    ds->settles = txnbatch_new(d->base, d->zs, txn_inflight, 1);
    ds->puts = txnbatch_new(d->base, d->zs, txn_inflight, 0);
    ds->claims = ds->locks && ds->settles
                     ? claims_new(d->base, d->zs, ds->locks, ds->settles, d->cfg->zk_root)
                     : NULL;
    ds->writehold = writehold_new(ds, &writehold_env, d->base);
    ds->put_env = (struct put_env){.d = d, .puts = ds->puts, .buckets = ds->buckets,
                                   .parents = ds->parents, .keydirs = ds->keydirs,
                                   .uids = &ds->uids, .pool = putset_pool_new(), .engine = ds,
                                   .queue = queue_named, .stored = on_job_stored};
    if (!ds->put_env.pool || !ds->locks || !ds->settles || !ds->puts || !ds->claims || !ds->buckets || !ds->parents || !ds->keydirs ||
        !ds->stash || !ds->writehold) {
        dispatcher_free(ds);
        return NULL;
    }
    claims_on_removed(ds->claims, on_claim_removed, ds);
    return ds;
}

void dispatcher_free(struct dispatcher *ds)
{
    if (!ds)
        return;
    struct job *job, *tmp;
    claims_free(ds->claims); /* first: it forgets the jobs without touching them */
    JOBS_EACH(ds, job, tmp) {
        free(job->path);
        free(job->payload);
        free(job);
    }
    pathindex_free(&ds->jobs);
    for (size_t i = 0; i < ds->nqueues; i++) {
        heap_free(&ds->queues[i]->delayed);
        turns_free(&ds->queues[i]->ready);
        heap_free(&ds->queues[i]->armed);
        heap_free(&ds->queues[i]->prelocking);
        heap_free(&ds->queues[i]->ahead_locking);
        limit_free(ds->queues[i]->limit);
        rate_free(ds->queues[i]->rate);
    }
    heap_free(&ds->leases);
    settle_free_held(ds);
    flow_cache_free(ds->flow_cache);
    writehold_free(ds->writehold);
    if (ds->foreign)
        ds->foreign->free(ds);
    if (ds->timer)
        event_free(ds->timer);
    if (ds->kick)
        event_free(ds->kick);
    if (ds->later)
        event_free(ds->later);
    txnbatch_free(ds->locks);
    txnbatch_free(ds->settles);
    txnbatch_free(ds->puts);
    buckets_free(ds->buckets);
    buckets_free(ds->parents);
    buckets_free(ds->keydirs);
    stash_free(ds->stash);
    struct putset_pool *pool = ds->put_env.pool;
    ds->put_env.pool = NULL; /* a set freed from here on is freed, not kept */
    putset_pool_free(pool);
    for (size_t i = 0; i < ds->nqueues; i++)
        free(ds->queues[i]);
    free(ds->queues);
    free(ds);
}
