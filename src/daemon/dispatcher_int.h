/* The dispatcher's insides, shared by dispatcher.c (heaps, timer, locking, delivery),
 * settle.c (ack, nack, release, leases) and put.c (puts). Private to them. */
#ifndef DEFERD_DISPATCHER_INT_H
#define DEFERD_DISPATCHER_INT_H

#include <stdint.h>

#include "dispatcher.h"
#include "layout.h"

struct event;
struct settle;
struct zk_result;
struct queue_config;

#define RETRY_MS 1000 /* after a ZooKeeper error, try a job again this much later */

struct dispatcher {
    struct deferd *d;
    struct dqueue **queues;     /* each on its own: jobs and consumers point to them */
    size_t nqueues;
    struct job *jobs;           /* by znode path */
    struct event *timer;
    int64_t armed_wall;         /* when the timer fires; INT64_MAX when idle */
    uint64_t seq;
    uint64_t uid_prefix, uid_counter;
    char ident[128];            /* lock data: which daemon holds it */
    struct event *kick;         /* dispatches queues flagged by kick() once per loop turn */
    struct event *later;        /* the same, in the next loop turn */
    struct heap leases;         /* INFLIGHT jobs by their next lease event */
    struct settle *held;        /* acks/nacks waiting for the connection to come back */
    /* Transactions of many jobs go to ZooKeeper as few multis (txnbatch.h). */
    struct txnbatch *locks, *settles, *puts;
    struct buckets *buckets;    /* 100 ms buckets and shards known to exist, for puts */
    struct buckets *parents;    /* coarser buckets known to exist */
    struct buckets *keydirs;    /* key hash directories (and keys/ itself) known to exist */
    struct stash *stash;        /* payloads of our puts not in the mirror yet */
    size_t payload_bytes;       /* held in jobs */
    size_t puts_open;           /* PUT and BATCH requests being stored (put.c) */
    unsigned long long reads;   /* payloads read from ZooKeeper at delivery */
    int draining;               /* SIGTERM: no new locks or pushes on any queue */
};

/* The lock (exclusive: one holder) and the owner node (names the holder's session), both
 * ephemeral children of the job, created and deleted together. Every transaction that
 * releases or deletes the job deletes our owner node too, so it fails as a whole unless
 * this very session still holds the job. */
struct lock_paths {
    char lock[LAYOUT_PATH_MAX + 8];
    char owner[LAYOUT_PATH_MAX + 32];
};

/* dispatcher.c: job states and heaps */
void set_busy(struct job *job, enum job_state state);
void lease_arm(struct dispatcher *ds, struct job *job);
void lease_start(struct dispatcher *ds, struct job *job);
void push_ready(struct job *job);
void make_ready(struct dispatcher *ds, struct job *job);
int place(struct dispatcher *ds, struct job *job, int64_t due_wall);
void deliver(struct dispatcher *ds, struct job *job);
void kick(struct dispatcher *ds, struct dqueue *q);
/* A new job in the hash, in no heap yet (state HELD); NULL when out of memory. */
struct job *job_new(struct dispatcher *ds, struct dqueue *q, const char *path, const char *id,
                    const struct job_name *jn);
void dispatch(struct dispatcher *ds, struct dqueue *q);
void unhold(struct dispatcher *ds, struct job *job);
void free_job(struct dispatcher *ds, struct job *job);
void unprelock(struct job *job);
int dispatch_stopped(const struct dqueue *q); /* paused or draining */
/* ids and paths */
void new_uid(struct dispatcher *ds, char *uid);
const char *root(struct dispatcher *ds);
struct job *find_by_id(struct dispatcher *ds, const char *id);
void lock_path(const struct job *job, char *buf, size_t len);
void lock_paths(const struct job *job, struct lock_paths *lp);
/* calls in flight */
int job_settled_gone(struct dispatcher *ds, struct job *job);
void retry_later(struct dispatcher *ds, struct job *job, const char *what, int rc);
/* The same, naming ZNODE (the one ZooKeeper refused) in a denial's line. */
void retry_later_at(struct dispatcher *ds, struct job *job, const char *what, int rc,
                    const char *znode);
void release_later(struct dispatcher *ds, struct job *job);
/* Takes a held job from its consumer, which is told (EXPIRED, or CANCELLED) and keeps the
 * slot until it answers; the job goes to other consumers first. Call before unhold(). */
void job_revoke(struct dispatcher *ds, struct job *job, enum lost_reason why);
void watch_lock(struct dispatcher *ds, struct job *job);

/* settle.c */
void release_lock(struct dispatcher *ds, struct job *job);
void bury_locked(struct dispatcher *ds, struct job *job);
void leases_tick(struct dispatcher *ds, int64_t wall);
void settle_resume_held(struct dispatcher *ds);
void settle_revoke_held(struct dispatcher *ds);
void settle_free_held(struct dispatcher *ds);
uint64_t backoff_ms(const struct queue_config *qc, uint32_t attempt);

#endif
