/* The dispatcher: jobs mirrored from ZooKeeper, their delay and ready heaps, the one timer,
 * locks, and the put/ack/nack transactions. */
#ifndef DEFERD_DISPATCHER_H
#define DEFERD_DISPATCHER_H

#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#include "consumers.h"
#include "heap.h"
#include "layout.h"

struct deferd;
struct dir;
struct citem;
struct cqueue;
struct reply;
struct proto_request;
struct queue_config;

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
    struct dir *leaf;           /* bucket it was listed in (mirror) */
    struct job *leaf_next, *leaf_prev;
    unsigned gen;               /* last listing that showed it */
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

struct dqueue {
    struct dispatcher *ds;
    const struct queue_config *cfg;
    size_t index;               /* position in dispatcher->queues */
    struct heap delayed, ready;
    struct heap armed;          /* jobs locked ahead of their due time, by due time */
    struct heap prelocking;     /* their lock transactions in flight, by due time */
    size_t nprelocked;          /* locked ahead (locking, armed or ready), no consumer yet */
    struct consumer_ring ring;
    struct dir *root;           /* mirror of jobs/, NULL until a consumer subscribes */
    struct cqueue *cq;          /* a Curator queue's listing, when consumed */
    size_t mirrored;            /* jobs in the mirror's buckets (mirror.c) */
    int kicked;                 /* dispatch pending for this loop turn */
    int paused;                 /* `deferctl pause`: nothing is locked or pushed */
    int denied;                 /* ZooKeeper's ZNOAUTH logged (dispatcher_denied) */
    /* pending.c: our counter's value in ZooKeeper, changes not written yet, the last sum
     * read, and our changes since that read began */
    int64_t count_written, count_unwritten, count_sum, count_since_sum, count_since_inflight;
    int count_ready;            /* our counter exists and a sum was read */
    int count_summing;          /* a sum read is in flight */
    int count_writing;          /* a counter write is in flight */
};

struct dispatcher;

struct dispatcher *dispatcher_new(struct deferd *d);
/* At exit, before the store closes: transactions not sent yet fail (ZCLOSING). */
void dispatcher_close(struct dispatcher *ds);
void dispatcher_free(struct dispatcher *ds);
struct dqueue *dispatcher_queue(struct dispatcher *ds, const char *name);
/* A queue added by a reload; QC must stay where it is for the dispatcher's lifetime. */
int dispatcher_add_queue(struct dispatcher *ds, const struct queue_config *qc);
struct consumer_ring *dispatcher_ring(struct dqueue *q);

/* From the server (socket side). The reply is always completed, now or later. */
void dispatcher_put(struct dispatcher *ds, struct proto_request *req, struct reply *r);
void dispatcher_batch(struct dispatcher *ds, struct proto_request *req, struct reply *r);
/* PUT and BATCH requests taken on and not answered yet: the server holds further ones back
 * above [daemon] max_open_puts. */
size_t dispatcher_puts_open(const struct dispatcher *ds);
int dispatcher_subscribe(struct dispatcher *ds, struct consumer *c, struct dqueue *q);
/* ACK and NACK, with follow-up jobs when REQ has items (their payloads are taken). */
void dispatcher_ack(struct dispatcher *ds, struct consumer *c, struct proto_request *req,
                    struct reply *r);
void dispatcher_nack(struct dispatcher *ds, struct consumer *c, struct proto_request *req,
                     struct reply *r);
/* CANCEL and RESCHEDULE (cancel.c). */
void dispatcher_cancel(struct dispatcher *ds, struct proto_request *req, struct reply *r);
void dispatcher_reschedule(struct dispatcher *ds, struct proto_request *req, struct reply *r);
void dispatcher_touch(struct dispatcher *ds, struct consumer *c, const char *id, struct reply *r);
void dispatcher_consumer_gone(struct dispatcher *ds, struct consumer *c);
void dispatcher_consumer_changed(struct dispatcher *ds, struct consumer *c); /* more room */
/* UNSUB: C leaves Q (NULL: every queue); what it holds stays held. */
void dispatcher_unsubscribe(struct dispatcher *ds, struct consumer *c, struct dqueue *q);

/* From the mirror (ZooKeeper side). */
struct job *dispatcher_job_seen(struct dispatcher *ds, struct dqueue *q, const char *path,
                                const struct job_name *jn);
void dispatcher_kick(struct dispatcher *ds, struct dqueue *q); /* after a listing */
/* ZooKeeper answered ZNOAUTH for PATH of Q: logged once per queue with deferd's identity,
 * counted every time (metrics); the daemon goes on. */
void dispatcher_denied(struct dqueue *q, const char *path);
#define DISPATCHER_DENIED_TEXT "permission denied by ZooKeeper (check [zookeeper] auth and " \
                               "the znode's ACL)"
/* zerror(RC), or DISPATCHER_DENIED_TEXT for ZNOAUTH: the reason given to clients. */
const char *dispatcher_zerror(int rc);
void dispatcher_job_vanished(struct dispatcher *ds, struct job *job);
void dispatcher_lock_event(struct dispatcher *ds, const char *lock_path);
void dispatcher_rearm(struct dispatcher *ds);
void dispatcher_session_up(struct dispatcher *ds);
void dispatcher_revoke_all(struct dispatcher *ds);
void dispatcher_verify_held(struct dispatcher *ds); /* after RECONNECTED */
void dispatcher_shift_leases(struct dispatcher *ds, int64_t delta_ms);
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
int dispatcher_draining(const struct dispatcher *ds);
/* Jobs held by consumers or with a lock, ack or release in flight, and settles waiting for
 * the connection: the drain ends when none is left. */
size_t dispatcher_busy(const struct dispatcher *ds);
/* The drain's grace period is over: every held job is released (consumers get EXPIRED). */
void dispatcher_release_held(struct dispatcher *ds);

#endif
