/* What dispatcher.c does with one job, for the engine's files and for a queue format
 * (Curator's): place it by its due time, make it ready, dispatch its queue, deliver it,
 * offer it again after an error, forget it when it vanished. Each moves the job through
 * the life cycle (lifecycle.h) and touches no field of struct dispatcher outside
 * dispatcher.c. */
#ifndef DEFERD_DISPATCHER_JOBS_H
#define DEFERD_DISPATCHER_JOBS_H

#include <stdint.h>

struct dispatcher;
struct dqueue;
struct job;

void dispatcher_push_ready(struct job *job);
void dispatcher_make_ready(struct dispatcher *ds, struct job *job);
/* Places the job by DUE_WALL and dispatches its queue when it is ready. */
void dispatcher_schedule(struct dispatcher *ds, struct job *job, int64_t due_wall);
/* Due jobs go to the ready heap (the caller dispatches); others wait in the delay heap.
 * Returns 1 when the job is ready. */
int dispatcher_place(struct dispatcher *ds, struct job *job, int64_t due_wall);
/* Locked, payload at hand: push it to its consumer and start the lease. */
void dispatcher_deliver(struct dispatcher *ds, struct job *job);
/* Queues to dispatch later in this loop turn: no recursion from completions, one pass for
 * many changes. */
void dispatcher_kick_soon(struct dispatcher *ds, struct dqueue *q);
void dispatcher_dispatch(struct dispatcher *ds, struct dqueue *q);
int dispatcher_stopped(const struct dqueue *q); /* paused or draining */
const char *dispatcher_root(struct dispatcher *ds);
/* After a ZooKeeper error: the job is offered again ZK_RETRY_MS later. */
void dispatcher_retry_later(struct dispatcher *ds, struct job *job, const char *what, int rc);
/* The same, naming ZNODE (the one ZooKeeper refused) in a denial's line. */
void dispatcher_retry_later_at(struct dispatcher *ds, struct job *job, const char *what,
                               int rc, const char *znode);

/* A job gone from ZooKeeper (a listing, or a Curator item's): freed, or marked gone for
 * the call in flight or its holder to decide. */
void dispatcher_job_vanished(struct dispatcher *ds, struct job *job);

#endif
