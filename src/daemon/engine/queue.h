/* A queue as the engine runs it: its configuration, its heaps of jobs by state, its
 * consumers, and its mirror. One per configured queue, owned by the dispatcher. */
#ifndef DEFERD_QUEUE_H
#define DEFERD_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "ahead.h"
#include "consumers.h"
#include "heap.h"
#include "job.h"
#include "turns.h"

struct dir;
struct cqueue;
struct deferd;
struct dispatcher;
struct queue_config;

struct dqueue {
    struct dispatcher *ds;
    struct deferd *d;
    const struct queue_config *cfg;
    size_t index;               /* position in dispatcher->queues */
    struct heap delayed;
    struct turns ready;         /* due jobs, by group in turns (turns.h) */
    struct heap armed;          /* jobs locked ahead of their due time, by due time */
    struct heap prelocking;     /* their lock transactions in flight, by due time */
    size_t nprelocked;          /* locked ahead (locking, armed or ready), no consumer yet */
    struct heap ahead_locking;  /* due jobs whose lock, taken ahead, is in flight: by rank */
    struct ahead ahead;         /* how many due jobs may be locked ahead (ahead.h) */
    struct consumer_ring ring;
    struct dir *root;           /* mirror of jobs/, NULL until a consumer subscribes */
    struct cqueue *cq;          /* a Curator queue's listing, when consumed */
    struct limit *limit;        /* its concurrency slots (limit.h) */
    struct rate *rate;          /* its rate slots (rate.h) */
    size_t mirrored;            /* jobs in the mirror's buckets (mirror.c) */
    size_t nstate[JS_COUNT];    /* its jobs by state (job_transition), for STATS and pages
                                 * without a walk of every job */
    int kicked;                 /* a dispatch is due in this loop turn */
    int paused;                 /* `deferctl pause`: nothing is locked or pushed */
    int denied;                 /* ZooKeeper's ZNOAUTH logged (queue_denied) */
    /* pending.c: our counter's value in ZooKeeper, changes not written yet, the last sum
     * read, and our changes since that read began */
    int64_t count_written, count_unwritten, count_sum, count_since_sum, count_since_inflight;
    int count_ready;            /* our counter exists and a sum was read */
    int count_summing;          /* a sum read is in flight */
    int count_writing;          /* a counter write is in flight */
};

/* ZooKeeper answered ZNOAUTH for PATH of Q: logged once per queue with deferd's identity,
 * counted every time (metrics); the daemon goes on. */
void queue_denied(struct dqueue *q, const char *path);

/* Pending-job counts for max_pending (the counters in ZooKeeper: pending.c). */
int queue_pending_limited(const struct dqueue *q);
void queue_pending_changed(struct dqueue *q, int delta); /* +1 put, -1 ack or dead-lettered */
int queue_pending_full(const struct dqueue *q);        /* 1 when a put must be refused */
int64_t queue_pending_estimate(const struct dqueue *q);

#endif
