/* The engine's struct and the calls between its files: dispatcher.c (heaps, timer,
 * dispatch, delivery), jobs.c, lock.c, lease.c, settle.c, put.c, cancel.c and the Curator
 * format (curator/). Private to them; the put path (putset.c, putpacks.c, packer.c,
 * tokens.c) gets struct put_env instead. Each file includes the headers of the files it
 * calls: this one includes only what its struct embeds. */
#ifndef DEFERD_DISPATCHER_INT_H
#define DEFERD_DISPATCHER_INT_H

#include <stdint.h>

#include "dispatcher.h"
#include "heap.h"
#include "mirror.h" /* struct mirror_report, a member */
#include "pathindex.h"
#include "put_env.h"
#include "uid.h"

struct claims;
struct event;
struct settle;

struct dispatcher {
    struct deferd *d;
    const struct foreign_format *foreign; /* Curator's (foreign_format.h), installed by main */
    struct dqueue **queues;     /* each on its own: jobs and consumers point to them */
    size_t nqueues;
    struct pathindex jobs;      /* by znode path */
    struct job *jobs_all;       /* every job, in the order they came (utlist, JOBS_EACH) */
    struct event *timer;
    int64_t armed_wall;         /* when the timer fires; INT64_MAX when idle */
    uint64_t seq;
    uint64_t choices;           /* jobs locked ahead of a consumer so far (job->chosen) */
    struct uidgen uids;         /* job uids (uid.h) */
    struct put_env put_env;     /* what the put path is given (put_env.h) */
    char ident[128];            /* lock data: which daemon holds it */
    struct event *kick;         /* dispatches flagged queues (dispatcher_kick_soon) once a turn */
    struct event *later;        /* the same, in the next loop turn */
    struct heap leases;         /* INFLIGHT jobs by their next lease event */
    struct settle *held;        /* acks/nacks waiting for the connection to come back */
    struct settle *unknown;     /* acks/nacks sent when the lost session broke: the next
                                 * session finds out whether they were applied */
    /* Transactions of many jobs go to ZooKeeper as few multis (txnbatch.h). */
    struct txnbatch *locks, *settles, *puts;
    struct claims *claims;      /* layout version 3: jobs claimed, not locked (claim.h) */
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
    struct flow_counts flows;   /* flow.h: counted by put.c and settle.c */
    struct flow_cache *flow_cache; /* flow.h: the flows this daemon's settles count in */
    unsigned change_round_trips_max;
    int draining;               /* SIGTERM: no new locks or pushes on any queue */
    int clock_held;             /* the cluster clock cannot be trusted (clock_sync.h) */
    int stale_held;             /* pushes wait for a sign of life of the session */
    unsigned long long stale_holds; /* how often they had to */
};

/* What the one timer does when it fires: due jobs to the ready heap, locks ahead, dispatch,
 * leases, rearm. Also the unit tests' entry after they move the test clock
 * (cluster_time_set_source), instead of waiting for libevent. */
void dispatcher_tick(struct dispatcher *ds);

#endif
