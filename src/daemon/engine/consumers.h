/* The consumer registry: which connection consumes which queues, how many jobs each may
 * hold, and round-robin choice among those with room. */
#ifndef DEFERD_CONSUMERS_H
#define DEFERD_CONSUMERS_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "lifecycle.h"
#include "protocol.h"

struct conn;
struct dqueue;
struct job;

struct sub {
    struct consumer *c;
    struct dqueue *q;
    struct sub *rnext, *rprev;  /* the queue's ring */
    struct sub *cnext;          /* the consumer's subscriptions */
};

/* Why a consumer lost a job it held: the words its late ACK/NACK/TOUCH is told. */
enum lost_reason {
    LOST_NONE,
    LOST_EXPIRED,               /* its lease ran out */
    LOST_SESSION,               /* the daemon's ZooKeeper session was lost */
    LOST_LOCK,                  /* its lock vanished (deleted by hand) */
    LOST_DRAIN,                 /* the daemon's drain_grace ran out */
    LOST_CANCELLED,             /* cancelled while held (CANCEL force=1): gone for good */
};

/* How the engine reaches a consumer's connection: the socket layer supplies these, so the
 * engine never calls up into it. A push returns 0, or -1 when it could not be queued. */
struct consumer_ops {
    int (*job)(struct conn *conn, const struct proto_job *p);
    int (*deadline)(struct conn *conn, const char *id, int64_t ms_left);
    int (*expired)(struct conn *conn, const char *id);
    int (*cancelled)(struct conn *conn, const char *id);
    /* A job being locked for it was pushed or given up: an UNSUB waiting for the last such
     * push may be answered now. */
    void (*quiet)(struct conn *conn);
};

#define CONSUMER_LOST_MAX 16    /* answered losses remembered, for a repeated ack */

struct lost_job;

struct consumer {
    struct conn *conn;
    const struct consumer_ops *ops;
    uint64_t serial;            /* unique per daemon run: a job remembers whom to avoid */
    struct lost_job *lost;      /* jobs taken from it, by id (uthash) */
    struct lost_job *answered[CONSUMER_LOST_MAX]; /* the answered ones, oldest first out */
    unsigned nanswered;
    uint32_t revoked;           /* taken from it and not answered yet: each keeps its slot,
                                 * since the consumer may still be running the job */
    uint32_t inflight_max;
    int push_uid;               /* SUB uid=1: its JOB pushes carry the stable uid */
    uint32_t inflight;          /* jobs being locked or held for this consumer */
    uint32_t settling;          /* of those, answered (ACK/NACK) and being applied: their
                                 * slots are free for the next pushes (issue 43) */
    struct job *held;           /* list through job->owner_next/prev */
    struct sub *subs;
};

struct consumer_ring {
    struct sub *head;
};

struct consumer *consumer_new(struct conn *conn, const struct consumer_ops *ops);
/* Idempotent per queue. 0, or -1 when out of memory. */
int consumer_subscribe(struct consumer *c, struct consumer_ring *ring, struct dqueue *q);
int consumer_has_room(const struct consumer *c);
/* C holds JOB (its slot is taken) until consumer_release. */
void consumer_hold(struct consumer *c, struct job *job);
void consumer_release(struct consumer *c, struct job *job);
/* A held job moved FROM -> TO. Its consumer's answer being applied (JS_SETTLING) gives its
 * slot back at once, not once ZooKeeper answered: a slot then costs the lock, the push
 * and the consumer's work, not a settle's round trip too. Back to INFLIGHT (the answer
 * failed, the job still held) it takes the slot again. 1 when a slot was freed. */
int consumer_job_moved(struct job *job, enum job_state from, enum job_state to);
/* Jobs being locked for C in queues it has left (UNSUB): their pushes are still to come. */
size_t consumer_locking(const struct consumer *c);
/* 1 when C follows Q. */
int consumer_subscribed(const struct consumer *c, const struct dqueue *q);
/* Next consumer on the ring with room for job ID, rotating so that work is spread evenly:
 * never one that has not answered its loss of ID yet (its answer would settle the new
 * delivery), and one other than the consumer numbered AVOID (0: none) when another has
 * room (a job taken from a consumer, or given back by it, goes elsewhere first). */
struct consumer *consumer_pick(struct consumer_ring *ring, uint64_t avoid, const char *id);
/* Free slots of all consumers on the ring (a consumer on several rings counts on each). */
uint64_t consumer_ring_room(const struct consumer_ring *ring);
/* The inflight of every consumer on the ring, together. */
uint64_t consumer_ring_credits(const struct consumer_ring *ring);
/* Consumers on the ring. */
size_t consumer_ring_size(const struct consumer_ring *ring);
/* The job ID was taken from this consumer (WHY): its slot stays taken until the consumer
 * answers it (consumer_answer_lost), or for KEEP_MS at most (consumer_expire_lost), and
 * a late ack is told why. 0, or -1 when out of memory (then the slot is freed at once). */
int consumer_note_lost(struct consumer *c, const char *id, enum lost_reason why,
                       int64_t keep_ms);
/* Frees the slots of losses not answered within their KEEP_MS by NOW (monotonic ms), for
 * consumers that never answer; how many. */
unsigned consumer_expire_lost(struct consumer *c, int64_t now);
/* Why ID was taken from this consumer, or LOST_NONE. */
enum lost_reason consumer_lost(const struct consumer *c, const char *id);
/* The consumer answered (ACK or NACK) a job taken from it: 1 when that freed its slot. */
int consumer_answer_lost(struct consumer *c, const char *id);
/* Leaves Q's ring (UNSUB): no more of its jobs are picked for this consumer. */
void consumer_unsubscribe(struct consumer *c, struct consumer_ring *ring, struct dqueue *q);
/* Leaves every queue's ring: no more jobs will be picked for it. */
void consumer_unsubscribe_all(struct consumer *c,
                              struct consumer_ring *(*ring_of)(struct dqueue *q));
/* Held jobs must have been released and subscriptions dropped already. */
void consumer_free(struct consumer *c);

#endif
