/* The job record: one job of a queue as this daemon knows it (mirrored from ZooKeeper),
 * its state, the heap it sits in, its lock and lease fields, and its holder. The engine's
 * files (dispatcher.c, lock.c, lease.c, settle.c, put.c, cancel.c, curator/) change these
 * fields; the rest of the daemon only reads them. Loop thread only. */
#ifndef DEFERD_JOB_H
#define DEFERD_JOB_H

#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#include "consumers.h"
#include "layout.h"
#include "mirror.h"

struct citem;
struct dispatcher;
struct dqueue;

#define OWNER_SEQ_UNKNOWN UINT32_MAX

enum job_state {
    JS_DELAYED,   /* in the delay heap */
    JS_READY,     /* in the ready heap */
    JS_LOCKING,   /* lock transaction and data read in flight */
    JS_INFLIGHT,  /* pushed to its owner, lock held */
    JS_SETTLING,  /* ack/nack/release in flight */
    JS_CHECKING,  /* locked by someone else; exists+watch on the lock in flight */
    JS_HELD,      /* locked by someone else; waiting for the lock watch */
    JS_ARMED,     /* locked by us ahead of its due time, in the armed heap, no consumer */
};

struct job {
    UT_hash_handle hh;          /* dispatcher->jobs, key: path */
    char *path;
    char id[LAYOUT_ID_MAX + 1];
    struct dqueue *q;
    struct job_name jn;
    enum job_state state;
    int gone;                   /* vanished from ZooKeeper while busy */
    int uncertain;              /* an ack/nack's outcome is unknown: verify the lock first */
    int prelocked;              /* our lock was taken before a consumer was chosen */
    int64_t lock_session;       /* session that took the lock (names the owner node) */
    uint32_t owner_seq;         /* the owner node's sequence suffix; OWNER_SEQ_UNKNOWN */
    size_t heap_pos;
    int64_t wake_ms;            /* delay heap key: due time, or a retry time */
    int64_t not_before;         /* after a failure with our lock: not offered before this */
    uint64_t seq;               /* creation order, last tie-break */
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
};

/* A new job in the dispatcher's hash, in no heap yet (state HELD); NULL when out of
 * memory. */
struct job *job_new(struct dispatcher *ds, struct dqueue *q, const char *path, const char *id,
                    const struct job_name *jn);
/* Unlinks the job from its heap, holder, bucket and Curator item, and frees it. */
void job_free(struct dispatcher *ds, struct job *job);
/* By job id ("queue/name"), native or Curator; NULL when not known. */
struct job *job_find(struct dispatcher *ds, const char *id);
struct job *job_find_path(struct dispatcher *ds, const char *path);
/* The priority its consumer is told (a Curator item's is in its data). */
uint32_t job_priority(const struct job *job);
/* heap_init's position callback for every heap of jobs. */
void job_setpos(void *item, size_t pos);
/* Out of the heap its state names (a job is in at most one). */
void job_unheap(struct job *job);
/* Leaves any heap for a state that is in no heap. */
void job_set_busy(struct job *job, enum job_state state);

/* Holders: C holds JOB (its slot is taken) until job_disown. */
void job_own(struct consumer *c, struct job *job);
void job_disown(struct consumer *c, struct job *job);
/* job_disown, and C may take more work. */
void job_unhold(struct dispatcher *ds, struct job *job);
/* Jobs being locked for C in queues it has left (UNSUB): their pushes are still to come. */
size_t job_locking_left(const struct consumer *c);
/* Takes a held job from its consumer, which is told (EXPIRED, or CANCELLED) and keeps the
 * slot until it answers; the job goes to other consumers first. Call before job_unhold(). */
void job_revoke(struct dispatcher *ds, struct job *job, enum lost_reason why);
/* The job no longer holds a lock taken ahead of its consumer (or never will). */
void job_unprelock(struct job *job);
/* Every ZooKeeper call made for a job holds it; a job that vanished meanwhile is freed
 * by the last completion. Returns 1 when the job is gone and the caller must stop. */
int job_settled_gone(struct dispatcher *ds, struct job *job);

#endif
