#include "jobs.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claim.h"
#include "cluster_time.h"
#include "config.h"
#include "daemon.h"
#include "dispatcher_int.h"
#include "dispatcher_jobs.h"
#include "foreign_format.h"
#include "limit.h"
#include "rate.h"
#include "log.h"
#include "mirror.h"

void job_setpos(void *item, size_t pos) { ((struct job *)item)->heap_pos = pos; }

/* A job is in at most one heap, the one its state names. */
void job_unheap(struct job *job)
{
    if (job->heap_pos == HEAP_NONE)
        return;
    if (job->state == JS_DELAYED)
        heap_remove(&job->q->delayed, job->heap_pos);
    else if (job->state == JS_READY)
        turns_remove(&job->q->ready, job);
    else if (job->state == JS_ARMED)
        heap_remove(&job->q->armed, job->heap_pos);
    else if (job->state == JS_LOCKING) {
        heap_remove(job->ahead ? &job->q->ahead_locking : &job->q->prelocking, job->heap_pos);
        job->ahead = 0;
        /* due jobs may wait behind it (dispatcher_dispatch); it may leave without a push */
        dispatcher_kick_soon(job->q->ds, job->q);
    }
    else if (job->state == JS_INFLIGHT)
        heap_remove(&job->q->ds->leases, job->heap_pos);
}

/* A change the table does not have is a bug of the engine: found by the debug build's
 * suite; a release build logs it and goes on as it was asked. */
static enum job_state transition_refused(const struct job *job, enum job_event ev)
{
    log_error("queue %s: job %s: event '%s' in state %s is no transition of the life cycle",
              job->q->cfg->name, job->id, job_event_name(ev), job_state_name(job->state));
    assert(!"a job state change outside the life cycle's table");
    return job_rule(ev)->to;
}

static void (*observer)(const struct job *job, enum job_event ev); /* unit tests only */

void job_transition_observe(void (*fn)(const struct job *job, enum job_event ev))
{
    observer = fn;
}

void job_transition(struct job *job, enum job_event ev)
{
    if (observer)
        observer(job, ev);
    int to = job_next_state(job->state, ev);
    if (to < 0)
        to = (int)transition_refused(job, ev);
    job_unheap(job);
    job->q->nstate[job->state]--;
    job->q->nstate[to]++;
    int freed = consumer_job_moved(job, job->state, (enum job_state)to);
    job->state = (enum job_state)to;
    if (freed) { /* the consumer answered: its next job need not wait for ZooKeeper's answer */
        ahead_answered(&job->q->ahead, cluster_now_ms());
        dispatcher_consumer_changed(job->q->ds, job->owner);
    }
}

void job_unhold(struct dispatcher *ds, struct job *job)
{
    struct consumer *c = job->owner;
    if (!c)
        return;
    consumer_release(c, job);
    dispatcher_consumer_changed(ds, c);
}

/* The job no longer holds a lock taken ahead of its consumer (or never will). */
void job_unprelock(struct job *job)
{
    if (job->prelocked) {
        job->prelocked = 0;
        job->q->nprelocked--;
    }
}

static const char *job_path_of(const void *item) { return ((const struct job *)item)->path; }

void jobs_init(struct dispatcher *ds)
{
    pathindex_init(&ds->jobs, job_path_of);
    ds->jobs_all = NULL;
}

/* In the dispatcher's index and list of every job. */
static int jobs_link(struct dispatcher *ds, struct job *job, unsigned hash)
{
    if (pathindex_add(&ds->jobs, job, hash) != 0)
        return -1;
    job->hash = hash;
    DL_APPEND2(ds->jobs_all, job, all_prev, all_next);
    return 0;
}

static void jobs_unlink(struct dispatcher *ds, struct job *job)
{
    pathindex_remove(&ds->jobs, job, job->hash);
    DL_DELETE2(ds->jobs_all, job, all_prev, all_next);
}

void job_free(struct dispatcher *ds, struct job *job)
{
    job_unprelock(job);
    limit_released(job->q->limit, job, 0); /* a slot still named: deleted if still ours */
    job_unheap(job);
    job_unhold(ds, job);
    mirror_entry_unlink(&job->listed);
    claim_forget(job);
    if (job->ci)
        job->q->ds->foreign->job_freed(job);
    jobs_unlink(ds, job);
    job->q->nstate[job->state]--;
    free(job->path);
    ds->payload_bytes -= job->payload ? job->len : 0;
    free(job->payload);
    free(job);
}

/* PATH and ID in one allocation, the id after the path (a job's two names: one malloc, no
 * fixed 241-byte id in every job); NULL when out of memory or ID is too long. */
static char *name_block(const char *path, size_t path_len, const char *id, char **id_out)
{
    size_t plen = path_len + 1, ilen = strlen(id) + 1;
    char *p = ilen <= LAYOUT_ID_MAX + 1 ? malloc(plen + ilen) : NULL;
    if (!p)
        return NULL;
    memcpy(p, path, plen);
    *id_out = memcpy(p + plen, id, ilen);
    return p;
}

int job_rename(struct dispatcher *ds, struct job *job, const char *path, const char *id)
{
    char *new_id, *p = name_block(path, strlen(path), id, &new_id);
    if (!p)
        return -1;
    unsigned hash = pathindex_hash(p, strlen(p));
    jobs_unlink(ds, job);
    free(job->path);
    job->path = p;
    job->id = new_id;
    (void)jobs_link(ds, job, hash); /* an add right after a remove never fails */
    return 0;
}

int job_keep_payload(struct dispatcher *ds, struct job *job, const void *data, size_t len)
{
    unsigned char *copy = malloc(len ? len : 1); /* empty: still a payload */
    if (!copy)
        return -1;
    if (len)
        memcpy(copy, data, len);
    job_drop_payload(ds, job);
    job->payload = copy;
    job->len = len;
    ds->payload_bytes += len;
    return 0;
}

void job_drop_payload(struct dispatcher *ds, struct job *job)
{
    if (!job->payload)
        return;
    ds->payload_bytes -= job->len;
    free(job->payload);
    job->payload = NULL;
}

struct job *job_find(struct dispatcher *ds, const char *id)
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
                job = job_find_path(ds, path);
            return job;
        }
    }
    if (layout_parse_id(id, queue, sizeof queue, &jn) == 0 &&
        layout_job_path(path, sizeof path, dispatcher_root(ds), queue, &jn) == 0)
        job = job_find_path(ds, path);
    return job;
}

/* Every ZooKeeper call made for a job holds it; a job that vanished meanwhile is freed
 * by the last completion. Returns 1 when the job is gone and the caller must stop. */
int job_settled_gone(struct dispatcher *ds, struct job *job)
{
    if (job->gone && !job->owner && job->state != JS_INFLIGHT) {
        struct dqueue *q = job->q;
        job_free(ds, job);
        dispatcher_dispatch(ds, q);
        return 1;
    }
    return 0;
}

void job_key_make(struct job_key *k, const char *path)
{
    k->path = path;
    k->len = strlen(path);
    k->hashv = pathindex_hash(path, k->len);
}

struct job *job_find_key(struct dispatcher *ds, const struct job_key *k)
{
    return pathindex_find(&ds->jobs, k->path, k->hashv);
}

struct job *job_new(struct dispatcher *ds, struct dqueue *q, const struct job_key *k,
                    const char *id, const struct job_name *jn)
{
    struct job *job = calloc(1, sizeof *job);
    if (!job || !(job->path = name_block(k->path, k->len, id, &job->id))) {
        free(job);
        return NULL;
    }
    job->q = q;
    job->jn = *jn;
    job->heap_pos = HEAP_NONE;
    job->owner_seq = OWNER_SEQ_UNKNOWN;
    job->zversion = -1;
    job->under_name = UNDER_NAME_UNKNOWN;
    job->slot = job->gslot = LIMIT_NO_SLOT;
    job->rslot = job->grslot = RATE_NO_SLOT;
    job->seq = ++ds->seq;
    job->state = JS_HELD; /* not in a heap yet */
    if (jobs_link(ds, job, k->hashv) != 0) {
        free(job->path);
        free(job);
        return NULL;
    }
    q->nstate[JS_HELD]++;
    return job;
}

void job_revoke(struct dispatcher *ds, struct job *job, enum lost_reason why)
{
    struct consumer *c = job->owner;
    (void)ds;
    if (!c)
        return;
    if (why == LOST_CANCELLED)
        c->ops->cancelled(c->conn, job->id);
    else
        c->ops->expired(c->conn, job->id);
    if (consumer_note_lost(c, job->id, why, job->ttr_ms > 1000 ? job->ttr_ms : 1000) != 0)
        log_error("queue %s: job %s: out of memory remembering it was taken from its "
                  "consumer; its slot is freed at once", job->q->cfg->name, job->id);
    job->avoid = c->serial;
}




struct job *job_find_path(struct dispatcher *ds, const char *path)
{
    struct job_key k;
    job_key_make(&k, path);
    return job_find_key(ds, &k);
}

uint32_t job_priority(const struct job *job)
{
    return job->ci ? job->q->ds->foreign->priority(job) : job->jn.priority;
}
