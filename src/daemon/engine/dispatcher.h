/* The engine's front: its queues, the jobs it mirrors (their heaps and the one timer in
 * dispatcher.c), and what the layers above ask of it: puts, subscriptions, acks and nacks,
 * cancel and reschedule, session changes, pause and drain, counts for STATS. Lock, lease
 * and settle transactions have files of their own (lock.h, lease.h, settle.c). */
#ifndef DEFERD_DISPATCHER_H
#define DEFERD_DISPATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "queue.h"
#include "refusal.h"
#include "strhash.h"

struct deferd;
struct reply;
struct proto_request;
struct queue_config;
struct foreign_format;

struct dispatcher;
struct txnbatch;

struct dispatcher *dispatcher_new(struct deferd *d);
/* At exit, before the store closes: transactions not sent yet fail (ZCLOSING). */
void dispatcher_close(struct dispatcher *ds);
void dispatcher_free(struct dispatcher *ds);
/* The queue format for queues not in deferd's own (foreign_format.h); F must outlive DS. */
void dispatcher_set_format(struct dispatcher *ds, const struct foreign_format *f);
struct dqueue *dispatcher_queue(struct dispatcher *ds, const char *name);
/* A queue added by a reload; QC must stay where it is for the dispatcher's lifetime. */
int dispatcher_add_queue(struct dispatcher *ds, const struct queue_config *qc);
struct consumer_ring *dispatcher_ring(struct dqueue *q);
/* Where puts go (putset_send), for those that put jobs of their own (schedules). */
struct txnbatch *dispatcher_puts(struct dispatcher *ds);
/* The lock and settle batches, for a queue format's own transactions (Curator's). */
struct txnbatch *dispatcher_locks(struct dispatcher *ds);
struct txnbatch *dispatcher_settles(struct dispatcher *ds);
/* The daemon the engine runs in (its store, loop, metrics, session). */
struct deferd *dispatcher_deferd(const struct dispatcher *ds);
/* Its queues, in the order of the configuration (and reloads). */
size_t dispatcher_nqueues(const struct dispatcher *ds);
struct dqueue *dispatcher_queue_at(const struct dispatcher *ds, size_t i);
/* What the put path (putset_new, packer_new) works with. */
const struct put_env *dispatcher_put_env(struct dispatcher *ds);

/* From the command table (socket/commands.c); requests that change jobs have their own
 * headers: put.h, settle.h, cancel.h. */
int dispatcher_subscribe(struct dispatcher *ds, struct consumer *c, struct dqueue *q);
void dispatcher_consumer_gone(struct dispatcher *ds, struct consumer *c);
void dispatcher_consumer_changed(struct dispatcher *ds, struct consumer *c); /* more room */
/* UNSUB: C leaves Q (NULL: every queue); what it holds stays held. */
void dispatcher_unsubscribe(struct dispatcher *ds, struct consumer *c, struct dqueue *q);

/* The timer: armed for the earliest of every heap and the mirror's next bucket. */
void dispatcher_rearm(struct dispatcher *ds);
void dispatcher_session_up(struct dispatcher *ds);
void dispatcher_revoke_all(struct dispatcher *ds);
/* A watch fired on PATH: 1 if it was a queue's slots directory (limit.h). */
int dispatcher_limit_watch(struct dispatcher *ds, const char *path);

/* Flows (docs/flows.md), as this daemon saw them since it started. */
struct flow_counts {
    unsigned long long opened;        /* waiting parents it stored (FLOW) */
    unsigned long long released;      /* parents its settles made jobs */
    unsigned long long dead_lettered; /* ... made dead letters (on=success, a dead child) */
    unsigned long long conflicts;     /* a child's settle that found its flow changed since
                                       * it read it (another child counted): read again */
};
void dispatcher_flow_counts(const struct dispatcher *ds, struct flow_counts *out);
void dispatcher_format(const struct dispatcher *ds, char *buf, size_t len); /* for STATS */
/* Jobs this daemon mirrors, per queue (OUT has one entry per configured queue, in order):
 * delayed includes jobs locked ahead of their due time; known counts every state. */
struct queue_counts {
    size_t delayed, ready, inflight, known;
};
void dispatcher_queue_counts(const struct dispatcher *ds, struct queue_counts *out);

/* Pausing (a queue, from its ZooKeeper flag) and draining (all queues, at SIGTERM): no
 * new locks or pushes; locks taken ahead of a consumer are given back. Held jobs stay. */
void dispatcher_set_paused(struct dispatcher *ds, struct dqueue *q, int paused);
void dispatcher_drain(struct dispatcher *ds);
/* The cluster clock cannot be trusted yet, or no longer (clock_sync.h): no pushes, no locks
 * for pushes, until it can. */
void dispatcher_hold_for_clock(struct dispatcher *ds, int hold);
/* "host:pid", written into our locks: which daemon holds a job. */
const char *dispatcher_ident(const struct dispatcher *ds);
/* Layout version 3: SESSION's node under sessions/ exists, so jobs may be claimed
 * (claim.h); claim_recovery.c says so after making it. */
void dispatcher_claims_session(struct dispatcher *ds, int64_t session);
/* This session's node was touched: a forced cancel wrote one of our claims (claim.h). */
void dispatcher_claims_poked(struct dispatcher *ds);
/* Claim nodes made, jobs claimed and claim writes answered, for STATS. */
void dispatcher_claim_counts(const struct dispatcher *ds, unsigned long long *nodes,
                             unsigned long long *jobs, unsigned long long *writes);
int dispatcher_draining(const struct dispatcher *ds);
/* PUT, BATCH, CANCEL, RESCHEDULE can be served: connected, and ZooKeeper's clock read. */
int dispatcher_writes_possible(const struct dispatcher *ds);
/* Why not (a refusal's reason=): not_connected, or clock_unread. */
enum refusal_reason dispatcher_unready_reason(const struct dispatcher *ds);
/* Writes held while ZooKeeper is away (writehold.h). */
struct writehold_stats;
void dispatcher_write_holds(const struct dispatcher *ds, struct writehold_stats *out);
/* After a reload (SIGHUP): held writes see a changed hold_writes, and every queue is
 * dispatched again (a concurrency raised or removed lets waiting jobs go). */
void dispatcher_reloaded(struct dispatcher *ds);
/* Jobs held by consumers or with a lock, ack or release in flight, and settles waiting for
 * the connection: the drain ends when none is left. */
size_t dispatcher_busy(const struct dispatcher *ds);
/* The drain's grace period is over: every held job is released (consumers get EXPIRED). */
void dispatcher_release_held(struct dispatcher *ds);

#endif
