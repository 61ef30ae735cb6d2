/* A queue's cluster-wide concurrency limits (deferd.ini `concurrency = N`: at most N of its
 * jobs held at once by the consumers of every daemon; `group_concurrency = M`: at most M of
 * each group's). ZooKeeper enforces them, not this daemon's memory: a held job owns one of
 * N slot nodes, <root>/queues/<q>/slots/c-<i> (i < N), and with a group one of M more,
 * slots/g-<i>-<group>; both ephemeral, created in the lock's own multi and deleted in the
 * settle's or release's own multi. A second create of a name fails the whole lock, and the
 * holder's session ending deletes its slots with its locks. A free slot costs no extra
 * round trip.
 *
 * What the daemon keeps is a guess of which slots are free (slotset.h), corrected by
 * ZooKeeper: a slot guessed free but taken fails that one lock (NodeExists) and is marked
 * taken. When slots run out while jobs wait, the daemon lists the directory with a watch,
 * and lists again each time the watch fires while jobs still wait: no polling, and no
 * reads while nothing changes. docs/limits.md. Loop thread only. */
#ifndef DEFERD_LIMIT_H
#define DEFERD_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "zkstore.h"

struct dqueue;
struct job;

#define LIMIT_NO_SLOT (-1)
#define LIMIT_OPS_MAX 2 /* slot operations a job adds to one multi: the queue's, its group's */
#define LIMIT_TOP_GROUPS 3 /* the busiest groups STATS names */

struct limit;

/* WAKE: called when a slot may have freed (the engine dispatches Q soon). */
struct limit *limit_new(struct dqueue *q, void (*wake)(struct dqueue *q));
void limit_free(struct limit *l);

/* May JOB be locked now? */
enum limit_room {
    LIMIT_ROOM,       /* no limit, or the slots it needs are guessed free */
    LIMIT_QUEUE_FULL, /* the queue's slots are all taken: no job of the queue goes */
    LIMIT_GROUP_FULL, /* its group's are: jobs of other groups may go */
};
/* Not LIMIT_ROOM: the daemon learns when a slot frees (its own settle, or the watch). */
enum limit_room limit_room(struct limit *l, const struct job *job);
/* After a dispatch: due jobs waiting for a slot (0 when none, or there was room). */
void limit_set_waiting(struct limit *l, size_t waiting);
/* The slot creates for JOB's lock multi, into OPS (PATHS: LIMIT_OPS_MAX buffers of
 * LAYOUT_PATH_MAX): how many (0: no limit applies), or -1 when a slot is missing (see
 * limit_room). A job that still names slots (a lock whose answer was lost) tries the same
 * ones again: if that multi was applied, the lock's own create fails first. */
int limit_take(struct limit *l, struct job *job, struct zk_txn_op *ops,
               char (*paths)[LAYOUT_PATH_MAX]);
/* The lock multi's answer: RC ZOK (the slots are ours), or FAILED_OP's error; FIRST: the
 * index of the first slot operation. 1 when a slot's own create failed (taken by another
 * daemon, or its directory missing): the job was not locked and may be offered again. */
int limit_locked(struct limit *l, struct job *job, int rc, int failed_op, int first);
/* The slot deletes for JOB's settle or release multi, into OPS; how many (0: none held). */
int limit_release_ops(struct limit *l, struct job *job, struct zk_txn_op *ops,
                      char (*paths)[LAYOUT_PATH_MAX]);
/* JOB's settle or release multi was applied (APPLIED) or not: its slots are free; if not
 * applied, each slot node is deleted on its own, once ZooKeeper says it is still ours. */
void limit_released(struct limit *l, struct job *job, int applied);
/* The release's slot operation WHICH (0: the first limit_release_ops gave) found no node
 * (deleted by hand): that slot is forgotten, so that the release can be sent without it. */
void limit_slot_missing(struct limit *l, struct job *job, int which);
/* A watch on the queue's slots directory fired. */
void limit_watch_fired(struct limit *l);
/* The session is gone, and our slots with it. */
void limit_session_lost(struct limit *l);

struct limit_group_stats {
    char group[LAYOUT_GROUP_MAX + 1];
    uint32_t taken;
};
struct limit_stats {
    uint32_t max;        /* concurrency, 0: no limit */
    uint32_t group_max;  /* group_concurrency, 0: no limit */
    uint32_t ours;       /* slots (both kinds) our consumers hold or our locks try */
    uint32_t taken;      /* queue slots held in the cluster as this daemon believes (its
                          * last listing, its own, and creates refused since) */
    uint32_t groups;     /* groups with a slot held, as this daemon believes */
    size_t waiting;      /* due jobs that found no slot, at the last dispatch */
    uint64_t waits;      /* times a dispatch found no slot while jobs were due */
    uint64_t conflicts;  /* slots guessed free that another daemon had taken */
    uint64_t listings;   /* the slots directory listed (with its watch) */
    struct limit_group_stats top[LIMIT_TOP_GROUPS]; /* the busiest groups, most slots first */
};
void limit_get_stats(const struct limit *l, struct limit_stats *out);

#endif
