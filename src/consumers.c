#include "consumers.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "dispatcher.h"

struct consumer *consumer_new(struct conn *conn)
{
    struct consumer *c = calloc(1, sizeof *c);
    if (c) {
        c->conn = conn;
        c->inflight_max = 1;
    }
    return c;
}

int consumer_subscribe(struct consumer *c, struct consumer_ring *ring, struct dqueue *q)
{
    for (struct sub *s = c->subs; s; s = s->cnext)
        if (s->q == q)
            return 0;
    struct sub *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    s->c = c;
    s->q = q;
    s->cnext = c->subs;
    c->subs = s;
    if (!ring->head) {
        s->rnext = s->rprev = s;
        ring->head = s;
    } else { /* insert before head: last in the round */
        s->rnext = ring->head;
        s->rprev = ring->head->rprev;
        s->rprev->rnext = s;
        ring->head->rprev = s;
    }
    return 0;
}

int consumer_has_room(const struct consumer *c)
{
    return c->inflight < c->inflight_max;
}

struct consumer *consumer_pick(struct consumer_ring *ring)
{
    struct sub *s = ring->head;
    if (!s)
        return NULL;
    do {
        if (consumer_has_room(s->c)) {
            ring->head = s->rnext;
            return s->c;
        }
        s = s->rnext;
    } while (s != ring->head);
    return NULL;
}

uint64_t consumer_ring_room(const struct consumer_ring *ring)
{
    uint64_t room = 0;
    const struct sub *s = ring->head;
    if (!s)
        return 0;
    do {
        if (s->c->inflight < s->c->inflight_max)
            room += s->c->inflight_max - s->c->inflight;
        s = s->rnext;
    } while (s != ring->head);
    return room;
}

size_t consumer_ring_size(const struct consumer_ring *ring)
{
    size_t n = 0;
    const struct sub *s = ring->head;
    if (s)
        do {
            n++;
            s = s->rnext;
        } while (s != ring->head);
    return n;
}

void consumer_hold(struct consumer *c, struct job *job)
{
    job->owner = c;
    job->owner_prev = NULL;
    job->owner_next = c->held;
    if (c->held)
        c->held->owner_prev = job;
    c->held = job;
    c->inflight++;
}

void consumer_release(struct consumer *c, struct job *job)
{
    if (job->owner != c)
        return;
    if (job->owner_prev)
        job->owner_prev->owner_next = job->owner_next;
    else
        c->held = job->owner_next;
    if (job->owner_next)
        job->owner_next->owner_prev = job->owner_prev;
    job->owner = NULL;
    job->owner_next = job->owner_prev = NULL;
    c->inflight--;
}

static void unlink_sub(struct sub *s, struct consumer_ring *ring)
{
    if (s->rnext == s) {
        ring->head = NULL;
    } else {
        s->rprev->rnext = s->rnext;
        s->rnext->rprev = s->rprev;
        if (ring->head == s)
            ring->head = s->rnext;
    }
}

void consumer_unsubscribe_all(struct consumer *c,
                              struct consumer_ring *(*ring_of)(struct dqueue *q))
{
    struct sub *s = c->subs;
    while (s) {
        struct sub *next = s->cnext;
        unlink_sub(s, ring_of(s->q));
        free(s);
        s = next;
    }
    c->subs = NULL;
}

void consumer_free(struct consumer *c)
{
    free(c);
}

void consumer_note_lost(struct consumer *c, const char *id)
{
    snprintf(c->lost[c->nlost % CONSUMER_LOST_MAX], sizeof c->lost[0], "%s", id);
    c->nlost++;
}

int consumer_lost(const struct consumer *c, const char *id)
{
    unsigned n = c->nlost < CONSUMER_LOST_MAX ? c->nlost : CONSUMER_LOST_MAX;
    for (unsigned i = 0; i < n; i++)
        if (strcmp(c->lost[i], id) == 0)
            return 1;
    return 0;
}
