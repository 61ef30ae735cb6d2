/* A queue's cluster-wide start rate (deferd.ini `rate = N/s`, `/m`, `/h`): at most N of its
 * jobs locked for delivery in any window of that length, across every daemon, judged by
 * ZooKeeper's clock. ZooKeeper enforces it: the queue has N persistent rate slot nodes,
 * <root>/queues/<q>/slots/r-<i>, and a lock's own multi starts one of them: it creates it
 * (a slot never used) or sets it with the version last seen, so that the node's mtime,
 * stamped by ZooKeeper, is the start. A slot may start again once its mtime is a window
 * old by the cluster clock's lower bound (cluster_time.h): the same slot's starts are a
 * window apart by ZooKeeper's clock, so no window holds more than N. Two daemons that
 * start one slot at once: the second multi fails (BadVersion, or NodeExists), the slot is
 * read again, and the job tries another. No slot is ever freed: they expire.
 *
 * The daemon reads a slot's stat only when it does not know it (a start, or a refused one,
 * by another daemon); when every known slot is within its window it sets a timer for the
 * first to come out of it: no polling of ZooKeeper. docs/limits.md. Loop thread only. */
#ifndef DEFERD_RATE_H
#define DEFERD_RATE_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "zkstore.h"

struct dqueue;
struct job;

#define RATE_NO_SLOT (-1)

struct rate;

/* WAKE: a slot may be startable now (the engine dispatches Q soon). */
struct rate *rate_new(struct dqueue *q, void (*wake)(struct dqueue *q));
void rate_free(struct rate *r);

/* 1 when a job of the queue may start now (no rate, or a slot believed startable); 0 when
 * not: reads or a timer are under way and WAKE will be called. */
int rate_room(struct rate *r);
/* The slot's operation for JOB's lock multi into OP (PATH: its buffer): 1, or 0 when the
 * queue has no rate; -1 when no slot is startable (see rate_room). */
int rate_take(struct rate *r, struct job *job, struct zk_txn_op *op, char *path);
/* The lock multi's answer (RC ZOK, or FAILED_OP's error); OP: the rate operation's index.
 * 1 when only the rate slot refused (started by another daemon meanwhile): the job was not
 * locked and may be offered again. */
int rate_locked(struct rate *r, struct job *job, int rc, int failed_op, int op);

struct rate_stats {
    uint32_t n;           /* starts per window, 0: no rate */
    uint64_t window_ms;
    uint32_t started;     /* slots started within the last window, as this daemon knows */
    uint64_t conflicts;   /* slots another daemon started first */
    uint64_t reads;       /* slot stats read */
    uint64_t waits;       /* times a dispatch found no startable slot */
};
void rate_get_stats(const struct rate *r, struct rate_stats *out);

#endif
