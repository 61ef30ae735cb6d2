#include "consumers.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "job.h"
#include "strhash.h"
#include "units.h"
#include "jobtrace.h"

struct lost_job {
    UT_hash_handle hh;
    enum lost_reason why;
    int unanswered;
    int64_t until;              /* monotonic ms: its slot is given up then, unanswered */
    char id[LAYOUT_ID_MAX + 1];
};

struct consumer *consumer_new(struct conn *conn, const struct consumer_ops *ops)
{
    static uint64_t serial; /* the loop thread only */
    struct consumer *c = calloc(1, sizeof *c);
    if (c) {
        c->conn = conn;
        c->ops = ops;
        c->serial = ++serial;
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

static uint32_t slots_taken(const struct consumer *c)
{
    return c->inflight - c->settling + c->revoked;
}

int consumer_job_moved(struct job *job, enum job_state from, enum job_state to)
{
    struct consumer *c = job->owner;
    if (!c || (from == JS_SETTLING) == (to == JS_SETTLING))
        return 0;
    if (to == JS_SETTLING)
        return c->settling++, 1;
    c->settling--;
    return 0;
}

int consumer_has_room(const struct consumer *c)
{
    return slots_taken(c) < c->inflight_max;
}

static int unanswered(const struct consumer *c, const char *id)
{
    struct lost_job *l;
    if (!c->revoked)
        return 0;
    HASH_FIND_STR(c->lost, id, l);
    return l && l->unanswered;
}

struct consumer *consumer_pick(struct consumer_ring *ring, uint64_t avoid, const char *id)
{
    struct sub *s = ring->head, *fallback = NULL;
    if (!s)
        return NULL;
    do {
        int room = consumer_has_room(s->c) && !unanswered(s->c, id);
        if (room && s->c->serial != avoid) {
            ring->head = s->rnext;
            return s->c;
        }
        if (room)
            fallback = s;
        s = s->rnext;
    } while (s != ring->head);
    if (fallback)
        ring->head = fallback->rnext;
    return fallback ? fallback->c : NULL;
}

/* OF summed over the consumers on the ring. */
static uint64_t ring_sum(const struct consumer_ring *ring,
                         uint64_t (*of)(const struct consumer *c))
{
    uint64_t n = 0;
    const struct sub *s = ring->head;
    if (!s)
        return 0;
    do {
        n += of(s->c);
        s = s->rnext;
    } while (s != ring->head);
    return n;
}

static uint64_t room_of(const struct consumer *c)
{
    return consumer_has_room(c) ? c->inflight_max - slots_taken(c) : 0;
}

static uint64_t credits_of(const struct consumer *c) { return c->inflight_max; }

uint64_t consumer_ring_room(const struct consumer_ring *ring) { return ring_sum(ring, room_of); }

uint64_t consumer_ring_credits(const struct consumer_ring *ring)
{
    return ring_sum(ring, credits_of);
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

int consumer_subscribed(const struct consumer *c, const struct dqueue *q)
{
    for (const struct sub *s = c->subs; s; s = s->cnext)
        if (s->q == q)
            return 1;
    return 0;
}

size_t consumer_locking(const struct consumer *c)
{
    size_t n = 0;
    for (const struct job *job = c->held; job; job = job->owner_next)
        n += job->state == JS_LOCKING && !consumer_subscribed(c, job->q);
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
    c->settling += job->state == JS_SETTLING;
    jobtrace_hold(job);
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
    c->settling -= job->state == JS_SETTLING;
    jobtrace_release(job);
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

void consumer_unsubscribe(struct consumer *c, struct consumer_ring *ring, struct dqueue *q)
{
    for (struct sub **sp = &c->subs; *sp; sp = &(*sp)->cnext) {
        if ((*sp)->q != q)
            continue;
        struct sub *s = *sp;
        *sp = s->cnext;
        unlink_sub(s, ring);
        free(s);
        return;
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
    struct lost_job *l, *tmp;
    HASH_ITER(hh, c->lost, l, tmp) {
        HASH_DEL(c->lost, l);
        free(l);
    }
    free(c);
}

int consumer_note_lost(struct consumer *c, const char *id, enum lost_reason why,
                       int64_t keep_ms)
{
    struct lost_job *l;
    HASH_FIND_STR(c->lost, id, l);
    if (!l) {
        if (!(l = calloc(1, sizeof *l)))
            return -1;
        snprintf(l->id, sizeof l->id, "%s", id);
        HASH_ADD_STR(c->lost, id, l);
    } else if (!l->unanswered) { /* delivered again and lost again: out of the answered */
        for (unsigned i = 0; i < c->nanswered; i++)
            if (c->answered[i] == l) {
                memmove(&c->answered[i], &c->answered[i + 1],
                        (--c->nanswered - i) * sizeof *c->answered);
                break;
            }
    }
    l->why = why;
    l->until = units_mono_ms() + keep_ms;
    if (!l->unanswered)
        c->revoked++;
    l->unanswered = 1;
    return 0;
}

unsigned consumer_expire_lost(struct consumer *c, int64_t now)
{
    struct lost_job *l, *tmp, **due;
    unsigned n = 0;
    if (!c->revoked || !(due = malloc(c->revoked * sizeof *due)))
        return 0;
    /* Collected first: answering one may free answered entries the iteration would visit. */
    HASH_ITER(hh, c->lost, l, tmp)
        if (l->unanswered && l->until <= now && n < c->revoked)
            due[n++] = l;
    for (unsigned i = 0; i < n; i++)
        consumer_answer_lost(c, due[i]->id); /* frees only entries answered before it */
    free(due);
    return n;
}

enum lost_reason consumer_lost(const struct consumer *c, const char *id)
{
    struct lost_job *l;
    HASH_FIND_STR(c->lost, id, l);
    return l ? l->why : LOST_NONE;
}

int consumer_answer_lost(struct consumer *c, const char *id)
{
    struct lost_job *l;
    HASH_FIND_STR(c->lost, id, l);
    if (!l || !l->unanswered)
        return 0;
    l->unanswered = 0;
    c->revoked--;
    if (c->nanswered == CONSUMER_LOST_MAX) { /* the oldest answered one is forgotten */
        HASH_DEL(c->lost, c->answered[0]);
        free(c->answered[0]);
        memmove(&c->answered[0], &c->answered[1], --c->nanswered * sizeof *c->answered);
    }
    c->answered[c->nanswered++] = l;
    return 1;
}
