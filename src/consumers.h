/* The consumer registry: which connection consumes which queues, how many jobs each may
 * hold, and round-robin choice among those with room. */
#ifndef DEFERD_CONSUMERS_H
#define DEFERD_CONSUMERS_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

struct conn;
struct dqueue;
struct job;

struct sub {
    struct consumer *c;
    struct dqueue *q;
    struct sub *rnext, *rprev;  /* the queue's ring */
    struct sub *cnext;          /* the consumer's subscriptions */
};

#define CONSUMER_LOST_MAX 16

struct consumer {
    struct conn *conn;
    char lost[CONSUMER_LOST_MAX][LAYOUT_ID_MAX + 1]; /* recent leases lost, newest last */
    unsigned nlost;
    uint32_t inflight_max;
    uint32_t inflight;          /* jobs being locked or held for this consumer */
    struct job *held;           /* list through job->owner_next/prev */
    struct sub *subs;
};

struct consumer_ring {
    struct sub *head;
};

struct consumer *consumer_new(struct conn *conn);
/* Idempotent per queue. 0, or -1 when out of memory. */
int consumer_subscribe(struct consumer *c, struct consumer_ring *ring, struct dqueue *q);
int consumer_has_room(const struct consumer *c);
/* Next consumer on the ring with room, rotating so that work is spread evenly. */
struct consumer *consumer_pick(struct consumer_ring *ring);
void consumer_hold(struct consumer *c, struct job *job);
/* Free slots of all consumers on the ring (a consumer on several rings counts on each). */
uint64_t consumer_ring_room(const struct consumer_ring *ring);
/* Consumers on the ring. */
size_t consumer_ring_size(const struct consumer_ring *ring);
/* Remembers that this consumer's lease on ID ended, so that a late ack is told why. */
void consumer_note_lost(struct consumer *c, const char *id);
int consumer_lost(const struct consumer *c, const char *id);
void consumer_release(struct consumer *c, struct job *job);
/* Leaves every queue's ring: no more jobs will be picked for it. */
void consumer_unsubscribe_all(struct consumer *c,
                              struct consumer_ring *(*ring_of)(struct dqueue *q));
/* Held jobs must have been released and subscriptions dropped already. */
void consumer_free(struct consumer *c);

#endif
