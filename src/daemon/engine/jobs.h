/* The engine's jobs: the table of records by znode path (job.h is the record), which heap
 * a job sits in, its holder, its revocation, and its end. Loop thread only. */
#ifndef DEFERD_JOBS_H
#define DEFERD_JOBS_H

#include <stddef.h>
#include <stdint.h>
#include <utlist.h>

#include "consumers.h"
#include "job.h"

struct dispatcher;
struct dqueue;

/* A path as the job table's key: its length and hash made once, for a lookup and then an
 * add of the same path (a new job's). */
struct job_key {
    const char *path;
    size_t len;
    unsigned hashv;
};
void job_key_make(struct job_key *k, const char *path);
/* The dispatcher's table of jobs, empty (dispatcher_new). */
void jobs_init(struct dispatcher *ds);
struct job *job_find_key(struct dispatcher *ds, const struct job_key *k);
/* Every job of the dispatcher (dispatcher_int.h), in the order they came; the body may free
 * JOB (TMP is the next one), as it may free no other job. */
#define JOBS_EACH(ds, job, tmp) DL_FOREACH_SAFE2((ds)->jobs_all, job, tmp, all_next)
/* A new job at K's path in the dispatcher's hash, in no heap yet (state HELD); NULL when
 * out of memory. */
struct job *job_new(struct dispatcher *ds, struct dqueue *q, const struct job_key *k,
                    const char *id, const struct job_name *jn);
/* Unlinks the job from its heap, holder, bucket and Curator item, and frees it. */
void job_free(struct dispatcher *ds, struct job *job);
/* The job is known by PATH and ID from now on (a Curator item's part); -1 when out of
 * memory (it keeps its old names). */
int job_rename(struct dispatcher *ds, struct job *job, const char *path, const char *id);
/* A copy of DATA becomes the job's payload, counted in what jobs hold; -1 when out of
 * memory. */
int job_keep_payload(struct dispatcher *ds, struct job *job, const void *data, size_t len);
/* The job holds no payload any more. */
void job_drop_payload(struct dispatcher *ds, struct job *job);
/* By job id ("queue/name"), native or Curator; NULL when not known. */
struct job *job_find(struct dispatcher *ds, const char *id);
struct job *job_find_path(struct dispatcher *ds, const char *path);
/* The priority its consumer is told (a Curator item's is in its data). */
uint32_t job_priority(const struct job *job);
/* heap_init's position callback for every heap of jobs. */
void job_setpos(void *item, size_t pos);
/* Out of the heap its state names (a job is in at most one). */
void job_unheap(struct job *job);
/* Every change of a job's state goes here: EV must be a transition of the life cycle from
 * the job's state (lifecycle.h; a debug build stops on one that is not, a release build
 * logs it). The job leaves the heap its old state names (the caller places it in the new
 * state's heap); its queue counts its jobs by state. */
void job_transition(struct job *job, enum job_event ev);
/* Test seam: FN sees every transition (the job before it changes, and the event), so that
 * unit tests check which rows of the table a path took (tests/unit/engine_harness.c); NULL
 * for none, as in the daemon. */
void job_transition_observe(void (*fn)(const struct job *job, enum job_event ev));

/* consumer_release, and its consumer may take more work. */
void job_unhold(struct dispatcher *ds, struct job *job);
/* Takes a held job from its consumer, which is told (EXPIRED, or CANCELLED) and keeps the
 * slot until it answers; the job goes to other consumers first. Call before job_unhold(). */
void job_revoke(struct dispatcher *ds, struct job *job, enum lost_reason why);
/* The job no longer holds a lock taken ahead of its consumer (or never will). */
void job_unprelock(struct job *job);
/* Every ZooKeeper call made for a job holds it; a job that vanished meanwhile is freed
 * by the last completion. Returns 1 when the job is gone and the caller must stop. */
int job_settled_gone(struct dispatcher *ds, struct job *job);

#endif
