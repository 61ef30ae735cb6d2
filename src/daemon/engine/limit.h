/* A queue's cluster-wide concurrency limit (deferd.ini `concurrency = N`): at most N of its
 * jobs held at once by the consumers of every daemon. ZooKeeper enforces it, not this
 * daemon's memory: a held job owns one of N slot nodes, <root>/queues/<q>/slots/c-<i>
 * (i < N), ephemeral, created in the lock's own multi and deleted in the settle's or
 * release's own multi; a second create of a name fails the whole lock, and the holder's
 * session ending deletes its slots with its locks. A free slot costs no extra round trip.
 *
 * What the daemon keeps is a guess of which slots are free, corrected by ZooKeeper: a slot
 * guessed free but taken fails that one lock (NodeExists) and is marked taken. When every
 * slot is taken and jobs wait, the daemon lists the directory with a watch, and lists
 * again each time the watch fires while jobs still wait: no polling, and no reads while
 * nothing changes. docs/limits.md. Loop thread only. */
#ifndef DEFERD_LIMIT_H
#define DEFERD_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "zkstore.h"

struct dqueue;
struct job;

#define LIMIT_NO_SLOT (-1)

struct limit;

struct limit *limit_new(struct dqueue *q);
void limit_free(struct limit *l);

/* 1 when a job of the queue may be locked now: no limit, or a slot guessed free. 0 when
 * all are taken: due jobs wait, and the daemon learns when one frees (its own settle, or
 * the watch). */
int limit_room(struct limit *l);
/* After a dispatch: how many due jobs wait for a slot (0 when none, or there is room). */
void limit_set_waiting(struct limit *l, size_t waiting);
/* The slot create for JOB's lock multi, into OP (PATH: its buffer, LAYOUT_PATH_MAX).
 * 0: OP filled (JOB's slot set); 1: no limit (OP untouched); -1: none free (see
 * limit_room). A job that still names a slot (a lock whose answer was lost) tries it
 * again: if that multi was applied, the lock's own create fails first. */
int limit_take(struct limit *l, struct job *job, struct zk_txn_op *op, char *path);
/* The lock multi's answer: RC ZOK (the slot is ours), or FAILED_OP's error. Returns 1 when
 * the slot's own create failed (taken by another daemon, or its directory missing): the
 * job was not locked and may be offered again at once. */
int limit_locked(struct limit *l, struct job *job, int rc, int failed_op, int slot_op);
/* The slot delete for JOB's settle or release multi, into OP; 0 when it holds none. */
int limit_release_op(struct limit *l, struct job *job, struct zk_txn_op *op, char *path);
/* JOB's settle or release multi was applied (APPLIED) or not: its slot is free; if not
 * applied, the slot node is deleted on its own, once ZooKeeper says it is still ours. */
void limit_released(struct limit *l, struct job *job, int applied);
/* JOB's slot node was not there when its release deleted it (deleted by hand): forgotten,
 * so that the release can be sent without it. */
void limit_slot_missing(struct limit *l, struct job *job);
/* A watch on QUEUE's slots directory fired. */
void limit_watch_fired(struct limit *l);
/* The session is gone, and our slots with it. */
void limit_session_lost(struct limit *l);

struct limit_stats {
    uint32_t max;        /* concurrency, 0: no limit */
    uint32_t ours;       /* slots our consumers hold (or our locks in flight) */
    uint32_t taken;      /* slots held in the cluster as this daemon believes (its last
                          * listing, its own, and creates refused since): ours included */
    size_t waiting;      /* due jobs that found every slot taken, at the last dispatch */
    uint64_t waits;      /* times a dispatch found every slot taken */
    uint64_t conflicts;  /* slots guessed free that another daemon had taken */
    uint64_t listings;   /* the slots directory listed (with its watch) */
};
void limit_get_stats(const struct limit *l, struct limit_stats *out);

#endif
