#include "dispatcher_int.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "buckets.h"
#include "config.h"
#include "curator_consume.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "mirror.h"
#include "pending.h"
#include "protocol.h"
#include "server.h"
#include "stash.h"
#include "txnbatch.h"
#include "units.h"
#include "zkacl.h"
#include "zkstore.h"

/* Work per queue per loop turn, so that a burst of due jobs cannot stall acks and new
 * connections: the rest follows in the next turns. */
#define DUE_PER_TURN 4096
#define LOCKS_PER_TURN 1024
/* Multis of one kind on their way before new items wait (and so batch up). */
#define TXN_INFLIGHT 4
/* Jobs are locked (and their payload read if needed) this long before they are due, while
 * the queue has consumers with room, so that at the due time only the push is left. */
#define PRELOCK_MS 50

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

/* Among due jobs: more urgent priority, then earlier due time, then first seen. */
static int ready_less(const void *a, const void *b)
{
    const struct job *x = a, *y = b;
    if (x->jn.priority != y->jn.priority)
        return x->jn.priority < y->jn.priority;
    if (x->jn.due_ms != y->jn.due_ms)
        return x->jn.due_ms < y->jn.due_ms;
    return x->seq < y->seq;
}

static int armed_less(const void *a, const void *b)
{
    const struct job *x = a, *y = b;
    return x->jn.due_ms < y->jn.due_ms || (x->jn.due_ms == y->jn.due_ms && x->seq < y->seq);
}

static int lease_less(const void *a, const void *b)
{
    const struct job *x = a, *y = b;
    return x->lease_wake < y->lease_wake || (x->lease_wake == y->lease_wake && x->seq < y->seq);
}

static void job_setpos(void *item, size_t pos) { ((struct job *)item)->heap_pos = pos; }

/* A job is in at most one heap, the one its state names. */
static void unheap(struct job *job)
{
    if (job->heap_pos == HEAP_NONE)
        return;
    if (job->state == JS_DELAYED)
        heap_remove(&job->q->delayed, job->heap_pos);
    else if (job->state == JS_READY)
        heap_remove(&job->q->ready, job->heap_pos);
    else if (job->state == JS_ARMED)
        heap_remove(&job->q->armed, job->heap_pos);
    else if (job->state == JS_LOCKING)
        heap_remove(&job->q->prelocking, job->heap_pos);
    else if (job->state == JS_INFLIGHT)
        heap_remove(&job->q->ds->leases, job->heap_pos);
}

/* Leaves INFLIGHT for a state that is in no heap. */
void set_busy(struct job *job, enum job_state state)
{
    unheap(job);
    job->state = state;
}

/* The "deadline soon" notice comes when a fifth of the lease (at most 1 s) is left. */
static int64_t warn_before(const struct job *job)
{
    int64_t w = job->ttr_ms / 5;
    return w < 1000 ? w : 1000;
}

void lease_arm(struct dispatcher *ds, struct job *job)
{
    unheap(job);
    job->state = JS_INFLIGHT;
    job->lease_wake = job->warned ? job->lease_at : job->lease_at - warn_before(job);
    if (heap_push(&ds->leases, job) != 0)
        log_error("queue %s: out of memory for the lease of %s", job->q->cfg->name, job->id);
    if (job->lease_wake < ds->armed_wall)
        dispatcher_rearm(ds);
}

void lease_start(struct dispatcher *ds, struct job *job)
{
    job->lease_at = units_wall_ms() + job->ttr_ms;
    job->warned = 0;
    lease_arm(ds, job);
}

void push_ready(struct job *job)
{
    unheap(job);
    job->state = JS_READY;
    if (heap_push(&job->q->ready, job) != 0)
        log_error("queue %s: out of memory for job %s", job->q->cfg->name, job->id);
}

void make_ready(struct dispatcher *ds, struct job *job)
{
    push_ready(job);
    dispatch(ds, job->q);
}

/* Due jobs go to the ready heap (the caller dispatches); others wait in the delay heap.
 * Returns 1 when the job is ready. */
int place(struct dispatcher *ds, struct job *job, int64_t due_wall)
{
    int64_t wall = units_wall_ms();
    if (due_wall < job->not_before) /* given back after a failure: not before its retry */
        due_wall = job->not_before;
    if (due_wall <= wall) {
        push_ready(job);
        return 1;
    }
    unheap(job);
    job->state = JS_DELAYED;
    job->wake_ms = due_wall;
    if (heap_push(&job->q->delayed, job) != 0)
        log_error("queue %s: out of memory for job %s", job->q->cfg->name, job->id);
    if (due_wall < ds->armed_wall)
        dispatcher_rearm(ds);
    return 0;
}

static void schedule(struct dispatcher *ds, struct job *job, int64_t due_wall)
{
    if (place(ds, job, due_wall))
        dispatch(ds, job->q);
}

/* Queues to dispatch later in this loop turn: no recursion from completions, one pass for
 * many changes. */
void kick(struct dispatcher *ds, struct dqueue *q)
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
            dispatch(ds, ds->queues[i]);
        }
    }
}

/* A consumer with a free slot may take work from any queue it follows. */
void dispatcher_consumer_changed(struct dispatcher *ds, struct consumer *c)
{
    for (struct sub *s = c->subs; s; s = s->cnext)
        kick(ds, s->q);
    server_consumer_quiet(c->conn);
}

void unhold(struct dispatcher *ds, struct job *job)
{
    struct consumer *c = job->owner;
    if (!c)
        return;
    consumer_release(c, job);
    dispatcher_consumer_changed(ds, c);
}

/* The job no longer holds a lock taken ahead of its consumer (or never will). */
void unprelock(struct job *job)
{
    if (job->prelocked) {
        job->prelocked = 0;
        job->q->nprelocked--;
    }
}

/* Locking ahead needs a consumer with room for every job already locked ahead. */
static int may_prelock(struct dispatcher *ds, struct dqueue *q)
{
    return q->cfg->format == QF_NATIVE && !dispatch_stopped(q) && zkstore_connected(ds->d->zs) &&
           consumer_ring_room(&q->ring) > q->nprelocked;
}

int dispatch_stopped(const struct dqueue *q) { return q->paused || q->ds->draining; }

void free_job(struct dispatcher *ds, struct job *job)
{
    unprelock(job);
    unheap(job);
    unhold(ds, job);
    mirror_job_freed(job);
    if (job->ci)
        curator_job_freed(job);
    HASH_DEL(ds->jobs, job);
    free(job->path);
    ds->payload_bytes -= job->payload ? job->len : 0;
    free(job->payload);
    free(job);
}

static void lock_job(struct dispatcher *ds, struct job *job, struct consumer *c);

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
    int64_t now = units_wall_ms();
    int64_t wait = next > now ? next - now : 0;
    struct timeval tv = {.tv_sec = wait / 1000, .tv_usec = (wait % 1000) * 1000};
    evtimer_add(ds->timer, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct dispatcher *ds = arg;
    int64_t wall = units_wall_ms();
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
            push_ready(job);
        }
        while (moved++ < DUE_PER_TURN && (job = heap_peek(&q->delayed)) &&
               job->wake_ms <= wall) {
            heap_pop(&q->delayed);
            push_ready(job);
        }
        while (moved++ < DUE_PER_TURN && (job = heap_peek(&q->delayed)) &&
               job->wake_ms <= wall + PRELOCK_MS && may_prelock(ds, q)) {
            heap_pop(&q->delayed);
            job->prelocked = 1;
            q->nprelocked++;
            lock_job(ds, job, NULL);
        }
        dispatch(ds, q);
    }
    leases_tick(ds, wall);
    dispatcher_rearm(ds);
}

/* ---- ids ---- */

void new_uid(struct dispatcher *ds, char *uid)
{
    snprintf(uid, LAYOUT_UID_MAX + 1, "%08llx%08llx", (unsigned long long)ds->uid_prefix,
             (unsigned long long)(ds->uid_counter++ & 0xffffffffULL));
}

const char *root(struct dispatcher *ds) { return ds->d->cfg->zk_root; }

struct job *find_by_id(struct dispatcher *ds, const char *id)
{
    char queue[QUEUE_NAME_MAX + 1], path[LAYOUT_PATH_MAX];
    struct job_name jn;
    struct job *job = NULL;
    const char *slash = strchr(id, '/');
    if (slash && (size_t)(slash - id) < sizeof queue) {
        memcpy(queue, id, (size_t)(slash - id));
        queue[slash - id] = '\0';
        struct dqueue *q = dispatcher_queue(ds, queue);
        if (q && q->cfg->format != QF_NATIVE) {
            if (snprintf(path, sizeof path, "%s/%s", q->cfg->curator_path, slash + 1) <
                (int)sizeof path)
                HASH_FIND_STR(ds->jobs, path, job);
            return job;
        }
    }
    if (layout_parse_id(id, queue, sizeof queue, &jn) == 0 &&
        layout_job_path(path, sizeof path, root(ds), queue, &jn) == 0)
        HASH_FIND_STR(ds->jobs, path, job);
    return job;
}

void lock_path(const struct job *job, char *buf, size_t len)
{
    snprintf(buf, len, "%s/" LAYOUT_LOCK, job->path);
}

/* The owner node is created sequential: its suffix is the job's cversion at that moment,
 * which counts the job's deliveries (see on_locked) with no read. OWNER_SEQ_UNKNOWN gives
 * the prefix to create it with. */
void lock_paths(const struct job *job, struct lock_paths *lp)
{
    lock_path(job, lp->lock, sizeof lp->lock);
    int n = snprintf(lp->owner, sizeof lp->owner, "%s/" LAYOUT_OWNER "%llx-", job->path,
                     (unsigned long long)job->lock_session);
    if (job->owner_seq != OWNER_SEQ_UNKNOWN && n > 0 && (size_t)n < sizeof lp->owner)
        snprintf(lp->owner + n, sizeof lp->owner - (size_t)n, "%010u", job->owner_seq);
}

/* Every ZooKeeper call made for a job holds it; a job that vanished meanwhile is freed
 * by the last completion. Returns 1 when the job is gone and the caller must stop. */
int job_settled_gone(struct dispatcher *ds, struct job *job)
{
    if (job->gone && !job->owner && job->state != JS_INFLIGHT) {
        struct dqueue *q = job->q;
        free_job(ds, job);
        dispatch(ds, q);
        return 1;
    }
    return 0;
}

/* Our lock is given back after a failure that would happen again at once (a read or a
 * dead-lettering refused): the job waits RETRY_MS before it is offered again. */
void release_later(struct dispatcher *ds, struct job *job)
{
    job->not_before = units_wall_ms() + RETRY_MS;
    release_lock(ds, job);
}

void retry_later(struct dispatcher *ds, struct job *job, const char *what, int rc)
{
    retry_later_at(ds, job, what, rc, job->path);
}

void retry_later_at(struct dispatcher *ds, struct job *job, const char *what, int rc,
                    const char *znode)
{
    if (rc == ZNOAUTH) /* one line per queue, not one per job every second */
        dispatcher_denied(job->q, znode);
    log_msg(rc == ZNOAUTH ? LOG_DEBUG : LOG_WARN, "queue %s: job %s: %s failed: %s; retrying "
           "in %d ms", job->q->cfg->name, job->id, what, zerror(rc), RETRY_MS);
    unhold(ds, job);
    if (job_settled_gone(ds, job))
        return;
    schedule(ds, job, units_wall_ms() + RETRY_MS);
}

/* ---- locking and delivery ---- */

static void on_lock_checked(const struct zk_result *res, void *ctx);

void watch_lock(struct dispatcher *ds, struct job *job)
{
    char lock[LAYOUT_PATH_MAX + 8];
    lock_path(job, lock, sizeof lock);
    set_busy(job, JS_CHECKING);
    int rc = zkstore_exists(ds->d->zs, lock, 1, on_lock_checked, job);
    if (rc != ZOK)
        retry_later(ds, job, "watching the lock", rc);
}

/* Locked ahead of its due time: wait in the armed heap until it is due. */
static void arm(struct dispatcher *ds, struct job *job)
{
    if ((int64_t)job->jn.due_ms <= units_wall_ms()) {
        make_ready(ds, job);
        return;
    }
    job->state = JS_ARMED;
    if (heap_push(&job->q->armed, job) != 0)
        log_error("queue %s: out of memory for job %s", job->q->cfg->name, job->id);
    if ((int64_t)job->jn.due_ms < ds->armed_wall)
        dispatcher_rearm(ds);
}

/* Locked, payload at hand: push it to its consumer and start the lease. */
void deliver(struct dispatcher *ds, struct job *job)
{
    unheap(job); /* a lock taken ahead leaves the prelocking heap only now */
    if (!job->ci && job->attempt > job->q->cfg->max_attempts) {
        bury_locked(ds, job);
        return;
    }
    if (job->owner && !job->ci && dispatch_stopped(job->q)) {
        unhold(ds, job); /* paused or draining since the consumer was chosen */
        release_lock(ds, job);
        return;
    }
    if (!job->owner) {
        if (job->ci)
            curator_part_release(ds, job, 0);
        else if (job->prelocked && !dispatch_stopped(job->q))
            arm(ds, job);
        else
            release_lock(ds, job);
        return;
    }
    job->ttr_ms = job->jn.ttr_ms ? job->jn.ttr_ms : (uint32_t)job->q->cfg->ttr_ms;
    lease_start(ds, job);
    if (server_push_job(job->owner->conn, job) != 0)
        log_error("queue %s: job %s: cannot queue the push", job->q->cfg->name, job->id);
    else
        metrics_delivered(ds->d->metrics, job->q->cfg, job->attempt, job->jn.prior_attempts,
                          job->given_back ? 0 : job->jn.due_ms); /* 0: no lateness sample */
    log_debug("queue %s: job %s attempt %u delivered", job->q->cfg->name, job->id, job->attempt);
    server_consumer_quiet(job->owner->conn);
}

/* A job written by another client with more data than max_payload is never pushed: the
 * consumers were promised no more (and a client library may refuse it, failing every
 * consumer in turn). It stays in ZooKeeper, unlocked, for the operator (deferctl show,
 * cancel); this daemon leaves it alone until it restarts. */
static int oversized(struct dispatcher *ds, struct job *job)
{
    uint64_t max = ds->d->cfg->max_payload;
    if (job->ci || job->len <= max)
        return 0;
    log_msg(job->not_before == INT64_MAX ? LOG_DEBUG : LOG_WARN, /* said once */
            "queue %s: job %s: its data is %zu bytes, over max_payload %llu: not delivered, "
            "left in ZooKeeper (deferctl show/cancel)",
            job->q->cfg->name, job->id, job->len, (unsigned long long)max);
    ds->payload_bytes -= job->len;
    free(job->payload);
    job->payload = NULL;
    job->not_before = INT64_MAX; /* released, and never offered again */
    release_lock(ds, job);
    return 1;
}

static void on_fetched(const struct zk_result *res, void *ctx)
{
    struct job *job = ctx;
    struct dispatcher *ds = job->q->ds;
    if (res->rc != ZOK) {
        if (res->rc == ZNOAUTH) /* logged once for the queue */
            dispatcher_denied(job->q, job->path);
        log_msg(res->rc == ZNOAUTH ? LOG_DEBUG : LOG_WARN, "queue %s: job %s: reading its data "
                "failed: %s; released, offered again in %d ms", job->q->cfg->name, job->id,
                zerror(res->rc), RETRY_MS);
        release_later(ds, job);
        return;
    }
    if (!job->payload) {
        job->len = (size_t)res->datalen;
        if (!(job->payload = malloc(job->len ? job->len : 1))) {
            release_lock(ds, job);
            return;
        }
        memcpy(job->payload, res->data, job->len);
        ds->payload_bytes += job->len;
    }
    if (oversized(ds, job))
        return;
    deliver(ds, job);
}

/* Each delivery creates two children (lock, then owner). A sequential name's suffix is the
 * number of children the parent has ever had created (ZooKeeper's internal cversion, which
 * deletes do not move), so the n-th delivery's owner node gets 2(n - 1) + 1: attempts are
 * counted durably at no extra write and no read. */
static int owner_locked(struct job *job, const struct zk_result *res)
{
    const char *name = res->op_path ? res->op_path[2] : NULL;
    size_t n = name ? strlen(name) : 0;
    char *end;
    if (n < 10)
        return -1;
    unsigned long seq = strtoul(name + n - 10, &end, 10);
    if (*end || seq > UINT32_MAX - 4)
        return -1;
    job->owner_seq = (uint32_t)seq;
    job->attempt = job->jn.prior_attempts + (uint32_t)((seq + 1) / 2);
    return 0;
}

static void on_locked(const struct zk_result *res, void *ctx)
{
    struct job *job = ctx;
    struct dispatcher *ds = job->q->ds;
    if (res->rc == ZOK) {
        job->gone = 0; /* the check inside the transaction just proved it exists */
        if (owner_locked(job, res) != 0) {
            log_error("queue %s: job %s: no sequence in our owner node's name", job->q->cfg->name,
                      job->id);
            job->owner_seq = OWNER_SEQ_UNKNOWN;
            release_lock(ds, job);
            return;
        }
        if (job->payload) {
            if (!oversized(ds, job))
                deliver(ds, job);
            return;
        }
        ds->reads++;
        int rc = zkstore_get(ds->d->zs, job->path, on_fetched, job);
        if (rc != ZOK)
            release_lock(ds, job);
        return;
    }
    struct dqueue *q = job->q;
    unheap(job); /* out of the prelocking heap */
    unhold(ds, job);
    unprelock(job);
    if (res->rc == ZNONODE) {          /* acked or cancelled elsewhere */
        free_job(ds, job);
    } else if (res->rc == ZNODEEXISTS) { /* another daemon holds it */
        if (!job_settled_gone(ds, job))
            watch_lock(ds, job);
    } else {
        retry_later(ds, job, "taking the lock", res->rc);
        return;
    }
    dispatch(ds, q);
}

static void lock_job(struct dispatcher *ds, struct job *job, struct consumer *c)
{
    struct lock_paths lp;
    job->lock_session = ds->d->session_id;
    job->owner_seq = OWNER_SEQ_UNKNOWN;
    lock_paths(job, &lp);
    const struct zk_txn_op ops[] = {
        {.kind = ZT_CHECK, .path = job->path, .version = -1},
        {.kind = ZT_CREATE, .path = lp.lock, .data = ds->ident, .len = strlen(ds->ident),
         .ephemeral = 1},
        {.kind = ZT_CREATE, .path = lp.owner, .ephemeral = 1, .sequential = 1},
    };
    job->state = JS_LOCKING;
    job->uncertain = 0;
    if (c)
        consumer_hold(c, job);
    else if (heap_push(&job->q->prelocking, job) != 0) /* see dispatch() */
        log_error("queue %s: out of memory for job %s", job->q->cfg->name, job->id);
    int rc = txnbatch_add(ds->locks, ops, 3, on_locked, job);
    if (rc != ZOK) {
        unheap(job); /* out of the prelocking heap */
        unprelock(job); /* no lock was taken: the retry starts from scratch */
        retry_later(ds, job, "sending the lock transaction", rc);
    }
}

/* A job locked ahead whose lock is still on its way when it falls due would be overtaken
 * by jobs locked after it: nothing is dispatched until its answer is in (its completion
 * dispatches again), unless it is locked ahead itself. */
static int overtakes_prelock(struct dqueue *q, const struct job *job)
{
    const struct job *pl = heap_peek(&q->prelocking);
    return pl && (int64_t)pl->jn.due_ms <= units_wall_ms() && !job->prelocked;
}

void dispatch(struct dispatcher *ds, struct dqueue *q)
{
    struct job *job;
    int locks = 0;
    if (dispatch_stopped(q))
        return;
    while ((job = heap_peek(&q->ready)) && zkstore_connected(ds->d->zs) &&
           !overtakes_prelock(q, job)) {
        if (locks++ == LOCKS_PER_TURN) { /* more after the loop has polled again */
            q->kicked = 1;
            static const struct timeval now = {0, 0};
            evtimer_add(ds->later, &now);
            return;
        }
        struct consumer *c = consumer_pick(&q->ring, job->avoid, job->id);
        if (!c)
            return;
        heap_pop(&q->ready);
        if (job->ci) {
            curator_dispatch(ds, job, c);
            continue;
        }
        if (job->prelocked) { /* locked ahead: only the push is left */
            unprelock(job);
            consumer_hold(c, job);
            job->state = JS_LOCKING;
            deliver(ds, job);
            continue;
        }
        lock_job(ds, job, c);
    }
}

static void on_lock_checked(const struct zk_result *res, void *ctx)
{
    struct job *job = ctx;
    struct dispatcher *ds = job->q->ds;
    job->state = JS_HELD;
    if (job_settled_gone(ds, job))
        return;
    if (res->rc == ZNONODE) {
        schedule(ds, job, (int64_t)job->jn.due_ms); /* it may have been locked ahead */
    } else if (res->rc != ZOK) {
        retry_later(ds, job, "watching the lock", res->rc);
    } else if (res->stat.ephemeralOwner == ds->d->session_id) {
        release_lock(ds, job); /* ours from a delivery whose release failed: free it */
    }
    /* else: wait for the watch (dispatcher_lock_event) */
}

void dispatcher_lock_event(struct dispatcher *ds, const char *lock)
{
    char path[LAYOUT_PATH_MAX + 8];
    size_t n = strlen(lock), suffix = strlen("/" LAYOUT_LOCK);
    if (n <= suffix || n >= sizeof path || strcmp(lock + n - suffix, "/" LAYOUT_LOCK) != 0)
        return;
    memcpy(path, lock, n - suffix);
    path[n - suffix] = '\0';
    struct job *job;
    HASH_FIND_STR(ds->jobs, path, job);
    if (job && job->state == JS_HELD) /* another daemon may have locked it ahead */
        schedule(ds, job, (int64_t)job->jn.due_ms);
}

/* ---- the mirror's reports ---- */

struct job *job_new(struct dispatcher *ds, struct dqueue *q, const char *path, const char *id,
                    const struct job_name *jn)
{
    struct job *job = calloc(1, sizeof *job);
    if (!job || !(job->path = strdup(path)) || strlen(id) >= sizeof job->id) {
        if (job)
            free(job->path);
        free(job);
        return NULL;
    }
    strcpy(job->id, id);
    job->q = q;
    job->jn = *jn;
    job->heap_pos = HEAP_NONE;
    job->owner_seq = OWNER_SEQ_UNKNOWN;
    job->seq = ++ds->seq;
    job->state = JS_HELD; /* not in a heap yet */
    HASH_ADD_KEYPTR(hh, ds->jobs, job->path, strlen(job->path), job);
    return job;
}

struct job *dispatcher_job_seen(struct dispatcher *ds, struct dqueue *q, const char *path,
                                const struct job_name *jn)
{
    struct job *job;
    char id[LAYOUT_ID_MAX + 1];
    HASH_FIND_STR(ds->jobs, path, job);
    if (job) {
        job->gone = 0; /* listed again: it exists, whatever an earlier listing said */
        return job;
    }
    if (layout_job_id(id, sizeof id, q->cfg->name, jn) != 0 ||
        !(job = job_new(ds, q, path, id, jn)))
        return NULL;
    if ((job->payload = stash_take(ds->stash, path, &job->len)))
        ds->payload_bytes += job->len;
    place(ds, job, (int64_t)jn->due_ms); /* the mirror kicks once per listing */
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
    struct job *job = NULL;
    HASH_FIND_STR(ds->jobs, vc->path, job);
    free(vc);
    if (job && job->state == JS_INFLIGHT && res->rc == ZOK)
        job->gone = 0; /* an older listing: its next one shows the job again */
    if (!job || job->state != JS_INFLIGHT || !job->gone || !job->owner || res->rc != ZNONODE)
        return;
    log_info("queue %s: job %s was cancelled while a consumer held it; telling the consumer",
             job->q->cfg->name, job->id);
    job_revoke(ds, job, LOST_CANCELLED);
    free_job(ds, job);
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
    switch (job->state) {
    case JS_INFLIGHT:
        if (!job->gone && !job->ci && job->owner)
            check_vanished_held(ds, job);
        job->gone = 1;
        break;
    case JS_LOCKING:
    case JS_SETTLING:
    case JS_CHECKING:
        job->gone = 1; /* its pending call or its holder decides */
        break;
    default:
        free_job(ds, job);
    }
}

/* ---- consumers ---- */

void job_revoke(struct dispatcher *ds, struct job *job, enum lost_reason why)
{
    struct consumer *c = job->owner;
    (void)ds;
    if (!c)
        return;
    if (why == LOST_CANCELLED)
        server_push_cancelled(c->conn, job->id);
    else
        server_push_expired(c->conn, job->id);
    if (consumer_note_lost(c, job->id, why, job->ttr_ms > 1000 ? job->ttr_ms : 1000) != 0)
        log_error("queue %s: job %s: out of memory remembering it was taken from its "
                  "consumer; its slot is freed at once", job->q->cfg->name, job->id);
    job->avoid = c->serial;
}

void dispatcher_unsubscribe(struct dispatcher *ds, struct consumer *c, struct dqueue *q)
{
    (void)ds;
    if (q)
        consumer_unsubscribe(c, &q->ring, q);
    else
        consumer_unsubscribe_all(c, dispatcher_ring);
}

void dispatcher_consumer_gone(struct dispatcher *ds, struct consumer *c)
{
    while (c->held) {
        struct job *job = c->held;
        consumer_release(c, job);
        if (job->state == JS_INFLIGHT)
            release_lock(ds, job); /* delivered again, attempt + 1 */
        /* LOCKING and SETTLING jobs finish their call and see they have no owner */
    }
}

/* Starts reading a queue's jobs from ZooKeeper (idempotent). */
static int follow(struct dispatcher *ds, struct dqueue *q)
{
    if (q->cfg->format != QF_NATIVE)
        return curator_consume_start(ds, q);
    return mirror_start(ds->d->mirror, q);
}

int dispatcher_subscribe(struct dispatcher *ds, struct consumer *c, struct dqueue *q)
{
    if (consumer_subscribe(c, &q->ring, q) != 0 || follow(ds, q) != 0)
        return -1;
    dispatch(ds, q);
    return 0;
}

void dispatcher_kick(struct dispatcher *ds, struct dqueue *q) { dispatch(ds, q); }

void dispatcher_denied(struct dqueue *q, const char *path)
{
    char who[128];
    metrics_denied(q->ds->d->metrics, q->cfg);
    if (q->denied)
        return;
    q->denied = 1;
    zkacl_identity(q->ds->d->cfg, who, sizeof who);
    log_error("queue %s: %s: ZooKeeper denies deferd access as %s (check [zookeeper] auth "
              "and the ACL of the znode or, for a create or delete, of its parent); further "
              "denials for this queue are only counted (deferd_zookeeper_denied_total)",
              q->cfg->name, path, who);
}

const char *dispatcher_zerror(int rc)
{
    return rc == ZNOAUTH ? DISPATCHER_DENIED_TEXT : zerror(rc);
}

/* (Re)connected: follow every queue that has consumers (after a lost session the mirror
 * starts from nothing) and hand out what is ready. */
void dispatcher_session_up(struct dispatcher *ds)
{
    settle_resume_held(ds); /* the same session came back: apply what consumers asked */
    dispatcher_rearm(ds); /* leases wait while disconnected */
    for (size_t i = 0; i < ds->nqueues; i++) {
        struct dqueue *q = ds->queues[i];
        if (q->ring.head && follow(ds, q) != 0)
            log_error("queue %s: cannot follow it in ZooKeeper", q->cfg->name);
        dispatch(ds, q);
    }
}

/* The session is gone, and our locks with it: every holder is told its lease is lost, and
 * every job is forgotten (the new session reads them again). Jobs with a call in flight are
 * freed by its completion. */
void dispatcher_revoke_all(struct dispatcher *ds)
{
    settle_revoke_held(ds);
    struct job *job, *tmp;
    HASH_ITER(hh, ds->jobs, job, tmp) {
        if (job->owner && job->state == JS_INFLIGHT)
            job_revoke(ds, job, LOST_SESSION);
        if (job->owner && job->state == JS_SETTLING) { /* answered: its reply says why */
            consumer_note_lost(job->owner, job->id, LOST_SESSION, 0);
            consumer_answer_lost(job->owner, job->id);
        }
        unheap(job);
        unhold(ds, job);
        job->gone = 1;
        if (job->state != JS_LOCKING && job->state != JS_SETTLING && job->state != JS_CHECKING)
            free_job(ds, job);
        else
            mirror_job_freed(job); /* out of its bucket; the mirror is reset next */
    }
    curator_consume_reset(ds);
}

/* After a reconnection with the same session our locks should all still be there; one
 * that is not (deleted by hand meanwhile) means the job is no longer ours to hand out. */
struct owner_check {
    struct dispatcher *ds;
    char path[];                /* the job's: looked up again, it may be gone by then */
};

static void on_owner_checked(const struct zk_result *res, void *ctx)
{
    struct owner_check *oc = ctx;
    struct dispatcher *ds = oc->ds;
    struct job *job = NULL;
    HASH_FIND_STR(ds->jobs, oc->path, job);
    if (job && job->state == JS_INFLIGHT && res->rc == ZNONODE) {
        log_warn("queue %s: job %s: our lock vanished while disconnected; revoking it",
                 job->q->cfg->name, job->id);
        job_revoke(ds, job, LOST_LOCK);
        unhold(ds, job);
        make_ready(ds, job);
    }
    free(oc);
}

/* Leases stood still while disconnected: move every lease end by the time away. The
 * order of the lease heap does not change when all keys move alike. */
void dispatcher_shift_leases(struct dispatcher *ds, int64_t delta_ms)
{
    struct job *job, *tmp;
    HASH_ITER(hh, ds->jobs, job, tmp) {
        job->lease_at += delta_ms;
        job->lease_wake += delta_ms;
    }
}

void dispatcher_verify_held(struct dispatcher *ds)
{
    struct job *job, *tmp;
    curator_consume_resync(ds); /* checks its own locks */
    HASH_ITER(hh, ds->jobs, job, tmp) {
        if (job->state != JS_INFLIGHT || job->ci)
            continue;
        struct lock_paths lp;
        size_t n = strlen(job->path) + 1;
        struct owner_check *oc = malloc(sizeof *oc + n);
        if (!oc)
            continue;
        oc->ds = ds;
        memcpy(oc->path, job->path, n);
        lock_paths(job, &lp);
        if (zkstore_exists(ds->d->zs, lp.owner, 0, on_owner_checked, oc) != ZOK)
            free(oc);
    }
}

void dispatcher_queue_counts(const struct dispatcher *ds, struct queue_counts *out)
{
    const struct job *job, *tmp;
    memset(out, 0, ds->nqueues * sizeof *out);
    HASH_ITER(hh, ds->jobs, job, tmp) {
        struct queue_counts *c = &out[job->q->index];
        c->inflight += job->state == JS_INFLIGHT;
        c->ready += job->state == JS_READY;
        c->delayed += job->state == JS_DELAYED || job->state == JS_ARMED;
        c->known++;
    }
}

void dispatcher_format(const struct dispatcher *ds, char *buf, size_t len)
{
    size_t inflight = 0, ready = 0, delayed = 0;
    struct queue_counts *qc = calloc(ds->nqueues ? ds->nqueues : 1, sizeof *qc);
    if (qc)
        dispatcher_queue_counts(ds, qc);
    for (size_t i = 0; qc && i < ds->nqueues; i++) {
        inflight += qc[i].inflight;
        ready += qc[i].ready;
        delayed += qc[i].delayed;
    }
    free(qc);
    unsigned long long items[3], multis[3], lists, names;
    mirror_counts(ds->d->mirror, &lists, &names);
    txnbatch_counts(ds->puts, &items[0], &multis[0]);
    txnbatch_counts(ds->locks, &items[1], &multis[1]);
    txnbatch_counts(ds->settles, &items[2], &multis[2]);
    int n = snprintf(buf, len,
                     " jobs_known=%u delayed=%zu ready=%zu inflight=%zu listing_max_bytes=%zu"
                     " listings=%llu listed_names=%llu payload_reads=%llu payload_bytes=%zu"
                     " txn.puts=%llu/%llu txn.locks=%llu/%llu txn.settles=%llu/%llu",
                     HASH_COUNT(ds->jobs), delayed, ready, inflight,
                     mirror_listing_max(ds->d->mirror), lists, names, ds->reads, ds->payload_bytes, items[0], multis[0], items[1],
                     multis[1], items[2], multis[2]);
    if (ds->draining && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " draining=1");
    for (size_t i = 0; i < ds->nqueues && n > 0 && (size_t)n < len; i++)
        if (ds->queues[i]->paused)
            n += snprintf(buf + n, len - (size_t)n, " paused.%s=1", ds->queues[i]->cfg->name);
    for (size_t i = 0; i < ds->nqueues && n > 0 && (size_t)n < len; i++)
        if (ds->queues[i]->cfg->max_pending && ds->queues[i]->count_ready)
            n += snprintf(buf + n, len - (size_t)n, " pending.%s=%lld",
                          ds->queues[i]->cfg->name, (long long)pending_estimate(ds->queues[i]));
    if (n > 0 && (size_t)n < len)
        curator_consume_format(ds, buf + n, len - (size_t)n);
}

/* ---- pause and drain ---- */

/* Locks taken ahead of a consumer are given back, so that a paused or stopping daemon
 * holds only what its consumers work on. Released jobs return to their heap by due time. */
static void unarm(struct dispatcher *ds, struct dqueue *q)
{
    struct job *job;
    while ((job = heap_peek(&q->armed)))
        release_lock(ds, job); /* leaves the armed heap */
    /* Removing from the heap reorders it: collect first, then release. */
    size_t n = 0;
    struct job **found = q->nprelocked ? malloc(q->nprelocked * sizeof *found) : NULL;
    for (size_t i = 0; found && i < q->ready.len && n < q->nprelocked; i++)
        if (((struct job *)q->ready.items[i])->prelocked)
            found[n++] = q->ready.items[i];
    for (size_t i = 0; i < n; i++)
        release_lock(ds, found[i]);
    if (q->nprelocked && !found)
        log_error("queue %s: out of memory giving back locks taken ahead; they go with "
                  "their delivery or the session", q->cfg->name);
    free(found);
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
        kick(ds, q);
        dispatcher_rearm(ds);
    }
}

void dispatcher_drain(struct dispatcher *ds)
{
    ds->draining = 1;
    for (size_t i = 0; i < ds->nqueues; i++)
        unarm(ds, ds->queues[i]);
}

int dispatcher_draining(const struct dispatcher *ds) { return ds->draining; }

size_t dispatcher_busy(const struct dispatcher *ds)
{
    /* Held jobs are exactly the lease heap: while there are any, no walk (the drain asks
     * every 20 ms); the walk for calls in flight runs only once none is held. */
    if (ds->leases.len)
        return ds->leases.len;
    size_t n = 0;
    const struct job *job, *tmp;
    HASH_ITER(hh, ds->jobs, job, tmp)
        n += job->state == JS_INFLIGHT || job->state == JS_LOCKING || job->state == JS_SETTLING;
    return n;
}

/* Paths, not pointers: releasing a part of a Curator item can free its other parts. */
static char **held_paths(struct dispatcher *ds, size_t *n)
{
    struct job *job, *tmp;
    char **paths = malloc((HASH_COUNT(ds->jobs) + 1) * sizeof *paths);
    *n = 0;
    HASH_ITER(hh, ds->jobs, job, tmp)
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
            HASH_FIND_STR(ds->jobs, paths[i], job);
        free(paths[i]);
        if (!job || job->state != JS_INFLIGHT || !job->owner)
            continue;
        log_warn("queue %s: job %s: still held at the end of the drain; released",
                 job->q->cfg->name, job->id);
        job_revoke(ds, job, LOST_DRAIN);
        release_lock(ds, job); /* delivered again by whoever runs on */
    }
    free(paths);
}

void dispatcher_close(struct dispatcher *ds)
{
    if (!ds)
        return;
    txnbatch_close(ds->puts);
    txnbatch_close(ds->settles);
    txnbatch_close(ds->locks);
}

struct dqueue *dispatcher_queue(struct dispatcher *ds, const char *name)
{
    for (size_t i = 0; i < ds->nqueues; i++)
        if (strcmp(ds->queues[i]->cfg->name, name) == 0)
            return ds->queues[i];
    return NULL;
}

struct consumer_ring *dispatcher_ring(struct dqueue *q) { return &q->ring; }

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
    q->cfg = qc;
    heap_init(&q->delayed, delayed_less, job_setpos);
    heap_init(&q->ready, ready_less, job_setpos);
    heap_init(&q->armed, armed_less, job_setpos);
    heap_init(&q->prelocking, armed_less, job_setpos);
    q->index = ds->nqueues;
    ds->queues[ds->nqueues++] = q;
    return 0;
}

struct dispatcher *dispatcher_new(struct deferd *d)
{
    struct dispatcher *ds = calloc(1, sizeof *ds);
    if (!ds)
        return NULL;
    ds->d = d;
    ds->armed_wall = INT64_MAX;
    ds->timer = evtimer_new(d->base, on_timer, ds);
    ds->kick = event_new(d->base, -1, 0, on_kick, ds);
    ds->later = evtimer_new(d->base, on_kick, ds);
    uint32_t rnd = 0;
    if (!ds->timer || !ds->kick || !ds->later || getrandom(&rnd, sizeof rnd, 0) != sizeof rnd) {
        dispatcher_free(ds);
        return NULL;
    }
    ds->uid_prefix = rnd;
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    snprintf(ds->ident, sizeof ds->ident, "%s:%d", host, (int)getpid());
    for (size_t i = 0; i < d->cfg->nqueues; i++) {
        if (dispatcher_add_queue(ds, d->cfg->queues[i]) != 0) {
            dispatcher_free(ds);
            return NULL;
        }
    }
    heap_init(&ds->leases, lease_less, job_setpos);
    /* Locks and puts wait for nothing but ZooKeeper; settles hold consumers' replies. */
    ds->buckets = buckets_new(4096);
    ds->parents = buckets_new(32768); /* 30 days of 100 s buckets */
    ds->keydirs = buckets_new(16384); /* 4096 per queue that uses keys */
    ds->stash = stash_new(16 * 1024 * 1024);
    ds->locks = txnbatch_new(d->base, d->zs, TXN_INFLIGHT, 1);
    ds->settles = txnbatch_new(d->base, d->zs, TXN_INFLIGHT, 1);
    ds->puts = txnbatch_new(d->base, d->zs, TXN_INFLIGHT, 0);
    if (!ds->locks || !ds->settles || !ds->puts || !ds->buckets || !ds->parents || !ds->keydirs ||
        !ds->stash) {
        dispatcher_free(ds);
        return NULL;
    }
    return ds;
}

void dispatcher_free(struct dispatcher *ds)
{
    if (!ds)
        return;
    struct job *job, *tmp;
    HASH_ITER(hh, ds->jobs, job, tmp) {
        HASH_DEL(ds->jobs, job);
        free(job->path);
        free(job->payload);
        free(job);
    }
    for (size_t i = 0; i < ds->nqueues; i++) {
        heap_free(&ds->queues[i]->delayed);
        heap_free(&ds->queues[i]->ready);
        heap_free(&ds->queues[i]->armed);
        heap_free(&ds->queues[i]->prelocking);
    }
    heap_free(&ds->leases);
    settle_free_held(ds);
    curator_consume_free(ds);
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
    for (size_t i = 0; i < ds->nqueues; i++)
        free(ds->queues[i]);
    free(ds->queues);
    free(ds);
}
