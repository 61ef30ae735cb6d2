/* A queue's cluster-wide start rates (deferd.ini `rate = N/s`, `/m`, `/h`: at most N of its
 * jobs locked for delivery in any window of that length, across every daemon, judged by
 * ZooKeeper's clock; `group_rate = M/s`: at most M of each group's). ZooKeeper enforces
 * them: the queue has N persistent rate slot nodes, <root>/queues/<q>/slots/r-<i>, each group
 * M more, slots/gr-<i>-<group>, and a lock's own multi starts one of each that applies: it
 * creates it (a slot never used) or sets it with the version last seen, so that the node's
 * mtime, stamped by ZooKeeper, is the start. A slot may start again once its mtime is a
 * window old by the cluster clock's lower bound (cluster_time.h): the same slot's starts
 * are a window apart by ZooKeeper's clock, so no window holds more than N. Two daemons that
 * start one slot at once: the second multi fails (BadVersion, or NodeExists), the slot is
 * read again, and the job tries another. No slot is ever freed: they expire.
 *
 * The daemon reads a slot's stat only when it does not know it (a start, or a refused one,
 * by another daemon); when every known slot is within its window it sets a timer for the
 * first to come out of it: no polling of ZooKeeper. Groups come and go by the thousand: a
 * group's slots are guessed never started until ZooKeeper says otherwise, and once all of
 * them are out of their window and none is in use the daemon forgets the group. Its nodes
 * stay: a sweep every RATE_SWEEP_MS deletes (by version) group slots idle their window and
 * RATE_IDLE_EXTRA_MS of a group the sweeping daemon does not keep. Deleting them sooner
 * would let another daemon that still knows a slot start the node made again in its
 * place with the same version (0 again): two starts in a window. So a daemon starts a
 * group slot from what it knows only while that is younger than the idle time, else it
 * reads it first.
 * docs/limits.md. Loop thread only. */
#ifndef DEFERD_RATE_H
#define DEFERD_RATE_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "limit.h"
#include "zkstore.h"

struct dqueue;
struct job;

#define RATE_NO_SLOT (-1)
#define RATE_OPS_MAX 2        /* slot operations a job adds to its lock multi: queue, group */
#define RATE_SWEEP_MS 60000   /* how often idle group rate slots are looked for */
/* A group slot is deleted once idle its window and this long: by then no daemon starts it
 * with the version it knew (rate.c, trusted): a node made again would reuse it. */
#define RATE_IDLE_EXTRA_MS 60000
#define RATE_TRUST_MARGIN_MS 10000 /* clocks' error against that idle time */
#define RATE_FRESH_MS 1000          /* a slot read this recently is trusted anyway */

struct rate;

/* WAKE: a slot may be startable now (the engine dispatches Q soon). */
struct rate *rate_new(struct dqueue *q, void (*wake)(struct dqueue *q));
void rate_free(struct rate *r);

/* May JOB start now? LIMIT_ROOM when no rate applies or a slot of each that does is
 * believed startable; otherwise reads or a timer are under way and WAKE will be called. */
enum limit_room rate_room(struct rate *r, const struct job *job);
/* The slot operations for JOB's lock multi into OPS (PATHS: RATE_OPS_MAX buffers): how
 * many (0: no rate applies); -1 when a slot is not startable (see rate_room). */
int rate_take(struct rate *r, struct job *job, struct zk_txn_op *ops,
              char (*paths)[LAYOUT_PATH_MAX]);
/* The lock multi's answer (RC ZOK, or FAILED_OP's error); FIRST: the index of the first
 * operation rate_take gave. 1 when only a rate slot refused (started by another daemon
 * meanwhile): the job was not locked and may be offered again. */
int rate_locked(struct rate *r, struct job *job, int rc, int failed_op, int first);
/* The tidy timer's pass (run by a timer; unit tests call it): groups whose starts are all
 * out of their window forgotten, their slot nodes deleted; the sweep when it is due. */
void rate_tidy(struct rate *r);
/* The rate operations JOB's lock multi carries (rate_take's count, while in flight). */
int rate_ops(const struct job *job);

struct rate_stats {
    uint32_t n;           /* starts per window, 0: no rate */
    uint64_t window_ms;
    uint32_t started;     /* slots started within the last window, as this daemon knows */
    uint32_t group_n;     /* group_rate's starts per window, 0: none */
    uint64_t group_window_ms;
    uint32_t groups;      /* groups whose slots this daemon keeps (started within a window) */
    uint64_t conflicts;   /* slots another daemon started first */
    uint64_t group_conflicts; /* ... of a group's */
    uint64_t reads;       /* slot stats read */
    uint64_t waits;       /* times a dispatch found no startable slot of the queue */
    uint64_t group_waits; /* ... of a job's group */
    uint64_t swept;       /* group slot nodes deleted once out of their window */
};
void rate_get_stats(const struct rate *r, struct rate_stats *out);

#endif
