/* The engine's insides, shared by its files: dispatcher.c (heaps, timer, dispatch,
 * delivery), jobs.c, lock.c, lease.c, settle.c, put.c, putset.c, cancel.c and the Curator
 * format (curator/). Private to them. */
#ifndef DEFERD_DISPATCHER_INT_H
#define DEFERD_DISPATCHER_INT_H

#include <stdint.h>

#include "dispatcher.h"
#include "jobs.h"
#include "lease.h"
#include "lock.h"
#include "mirror.h"
#include "foreign_format.h"

struct event;
struct settle;
struct zk_result;
struct queue_config;

struct dispatcher {
    struct deferd *d;
    const struct foreign_format *foreign; /* Curator's (foreign_format.h), installed by main */
    struct dqueue **queues;     /* each on its own: jobs and consumers point to them */
    size_t nqueues;
    struct job *jobs;           /* by znode path */
    struct event *timer;
    int64_t armed_wall;         /* when the timer fires; INT64_MAX when idle */
    uint64_t seq;
    uint64_t uid_prefix, uid_counter;
    char ident[128];            /* lock data: which daemon holds it */
    struct event *kick;         /* dispatches flagged queues (dispatcher_kick_soon) once a turn */
    struct event *later;        /* the same, in the next loop turn */
    struct heap leases;         /* INFLIGHT jobs by their next lease event */
    struct settle *held;        /* acks/nacks waiting for the connection to come back */
    struct settle *unknown;     /* acks/nacks sent when the lost session broke: the next
                                 * session finds out whether they were applied */
    /* Transactions of many jobs go to ZooKeeper as few multis (txnbatch.h). */
    struct txnbatch *locks, *settles, *puts;
    struct buckets *buckets;    /* 100 ms buckets and shards known to exist, for puts */
    struct buckets *parents;    /* coarser buckets known to exist */
    struct buckets *keydirs;    /* key hash directories (and keys/ itself) known to exist */
    struct mirror_report listings; /* what the mirror tells us (mirror.h) */
    struct stash *stash;        /* payloads of our puts not in the mirror yet */
    size_t payload_bytes;       /* held in jobs */
    size_t puts_open;           /* PUT and BATCH requests being stored (put.c) */
    struct writehold *writehold; /* writes waiting for ZooKeeper to come back */
    void (*puts_done)(void *arg); /* one of them was answered (the socket side's) */
    void *puts_done_arg;
    unsigned long long reads;   /* payloads read from ZooKeeper at delivery */
    /* CANCEL and RESCHEDULE answered, and the ZooKeeper calls they sent (cancel.c) */
    unsigned long long changes, change_round_trips;
    unsigned change_round_trips_max;
    int draining;               /* SIGTERM: no new locks or pushes on any queue */
    int clock_held;             /* the cluster clock cannot be trusted (clock_sync.h) */
    int stale_held;             /* pushes wait for a sign of life of the session */
    unsigned long long stale_holds; /* how often they had to */
};


/* dispatcher.c: the heaps, the timer, dispatch and delivery */
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
/* What the one timer does when it fires: due jobs to the ready heap, locks ahead, dispatch,
 * leases, rearm. Also the unit tests' entry after they move the test clock
 * (cluster_time_set_source), instead of waiting for libevent. */
void dispatcher_tick(struct dispatcher *ds);
void dispatcher_dispatch(struct dispatcher *ds, struct dqueue *q);
int dispatcher_stopped(const struct dqueue *q); /* paused or draining */
void dispatcher_new_uid(struct dispatcher *ds, char *uid);
const char *dispatcher_root(struct dispatcher *ds);
/* After a ZooKeeper error: the job is offered again ZK_RETRY_MS later. */
void dispatcher_retry_later(struct dispatcher *ds, struct job *job, const char *what, int rc);
/* The same, naming ZNODE (the one ZooKeeper refused) in a denial's line. */
void dispatcher_retry_later_at(struct dispatcher *ds, struct job *job, const char *what,
                               int rc, const char *znode);

/* A job gone from ZooKeeper (a listing, or a Curator item's): freed, or marked gone for
 * the call in flight or its holder to decide. */
void dispatcher_job_vanished(struct dispatcher *ds, struct job *job);

/* settle.c */
void settle_bury_locked(struct dispatcher *ds, struct job *job);
void settle_resume_held(struct dispatcher *ds);
void settle_revoke_held(struct dispatcher *ds);
void settle_check_unknown(struct dispatcher *ds);
void settle_free_held(struct dispatcher *ds);
uint64_t settle_backoff_ms(const struct queue_config *qc, uint32_t attempt);
/* The job ID that consumer C holds (SETTLING: for an ACK or NACK, which may answer a job
 * taken from it); NULL when none, and R is answered with the reason. */
struct job *settle_held_job(struct dispatcher *ds, struct consumer *c, const char *id,
                            int settling, struct reply *r);

#endif
