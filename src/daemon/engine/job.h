/* The job record: one job of a queue as this daemon knows it (mirrored from ZooKeeper),
 * its state, the heap it sits in, its lock and lease fields, and its holder. The engine's
 * files (jobs.c, dispatcher.c, lock.c, lease.c, settle.c, put.c, putset.c, cancel.c,
 * curator/) change these fields; the consumer registry links its holder's list through
 * them. Loop thread only. */
#ifndef DEFERD_JOB_H
#define DEFERD_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "lifecycle.h"
#include "mirror_entry.h"

struct citem;
struct claim;
struct consumer;
struct dqueue;

#define OWNER_SEQ_UNKNOWN UINT32_MAX
#define UNDER_NAME_UNKNOWN UINT32_MAX

struct job {
    unsigned hash;              /* of path, in dispatcher->jobs (pathindex.h) */
    struct job *all_prev, *all_next; /* dispatcher->jobs_all (utlist): every job, in order */
    char *path;
    char *id;                   /* in path's allocation, after it (jobs.c: name_block) */
    struct dqueue *q;
    struct job_name jn;
    enum job_state state;
    int gone;                   /* vanished from ZooKeeper while busy */
    int uncertain;              /* an ack/nack's outcome is unknown: verify the lock first */
    int prelocked;              /* our lock was taken before a consumer was chosen */
    int ahead;                  /* ... for a due job, its lock in flight (q->ahead_locking) */
    int64_t lock_sent_us;       /* its lock handed to the batch (for the round trip) */
    int64_t lock_session;       /* session that took the lock (names the owner node) */
    uint32_t owner_seq;         /* the owner node's sequence suffix; OWNER_SEQ_UNKNOWN */
    size_t heap_pos;
    int64_t wake_ms;            /* delay heap key: due time, or a retry time */
    int64_t not_before;         /* after a failure with our lock: not offered before this */
    uint64_t seq;               /* creation order, last tie-break */
    uint64_t chosen;            /* locked ahead of a consumer: the choice's order; else 0 */
    struct mirror_entry listed; /* the bucket it was listed in (mirror.c) */
    struct consumer *owner;
    struct job *owner_next, *owner_prev;
    uint64_t avoid;             /* serial of a consumer it was taken from: others first */
    int given_back;             /* NACK unrun=1: its next push is no first delivery */
    unsigned char *payload;
    size_t len;
    uint32_t attempt;
    uint32_t ttr_ms;            /* lease length of the current delivery */
    int64_t lease_at;           /* wall ms when the lease runs out */
    int64_t lease_wake;         /* lease heap key: the notice, then the expiry */
    int warned;                 /* DEADLINE notice sent for this lease */
    struct citem *ci;           /* a Curator queue's item (curator_consume.c), or NULL */
    /* Layout version 3 (claim.h): the claim node holding it, or NULL; the data version of
     * its znode as read (-1 unknown: our put's is 0), and the deliveries counted under its
     * name before this one (UNDER_NAME_UNKNOWN until read, from the znode's cversion). */
    struct claim *claim;
    int32_t zversion;
    uint32_t under_name;
    int32_t slot;               /* its concurrency slot (limit.h), or LIMIT_NO_SLOT (-1) */
    int32_t gslot;              /* its group's slot (group_concurrency), or LIMIT_NO_SLOT */
    uint32_t slot_gen;          /* ... taken in this session generation of the limit */
    int32_t rslot;              /* the rate slot its lock multi starts (rate.h), or -1 */
    int32_t grslot;             /* its group's rate slot (group_rate), or -1 */
    int64_t tr_hold_us, tr_push_us, tr_ack_us; /* DEFERD_TXN_TRACE only (consumers.c) */
};

#endif
