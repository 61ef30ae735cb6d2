/* The consumer registry (src/daemon/engine/consumers.c): round robin among consumers with room,
 * credits (inflight_max against held jobs and unanswered losses), the choice that avoids
 * a consumer and never picks one that owes the answer to its loss of that very job, the
 * bookkeeping of losses (noted, answered, expired, the answered ones remembered), the jobs
 * still being locked for a queue left, and leaving the rings. */
#include <stdlib.h>

#include "check.h"
#include "consumers.h"
#include "job.h"
#include "queue.h"
#include "units.h"

static struct dqueue q1, q2;
static struct consumer_ring ring1, ring2;

static struct consumer_ring *ring_of(struct dqueue *q) { return q == &q1 ? &ring1 : &ring2; }

static struct consumer *new_consumer(uint32_t inflight_max)
{
    struct consumer *c = consumer_new(NULL, NULL);
    CHECK(c != NULL);
    if (!c)
        exit(1);
    c->inflight_max = inflight_max;
    return c;
}

/* Picks N times for job ID (nobody avoided) and holds a job for each pick, so credits are
 * used as the dispatcher uses them; the picks' indexes in CS (-1 for none) go to OUT. */
static void pick_hold(struct consumer **cs, int ncs, struct job *jobs, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        struct consumer *c = consumer_pick(&ring1, 0, "q1/any");
        out[i] = -1;
        for (int k = 0; k < ncs; k++)
            if (cs[k] == c)
                out[i] = k;
        if (c)
            consumer_hold(c, &jobs[i]);
    }
}

static void round_robin_and_credits(void)
{
    struct consumer *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = new_consumer(2);
    struct consumer *fresh = consumer_new(NULL, NULL); /* the defaults */
    CHECK(fresh && fresh->inflight_max == 1 && fresh->inflight == 0 && fresh->serial > c[2]->serial);
    consumer_free(fresh);
    CHECK(c[0]->serial != c[1]->serial && c[1]->serial != c[2]->serial);
    CHECK(consumer_pick(&ring1, 0, "q1/x") == NULL); /* nobody on the ring */
    CHECK(consumer_ring_room(&ring1) == 0 && consumer_ring_size(&ring1) == 0);
    for (int i = 0; i < 3; i++)
        CHECK(consumer_subscribe(c[i], &ring1, &q1) == 0);
    CHECK(consumer_subscribe(c[1], &ring1, &q1) == 0); /* again: no second place */
    CHECK(consumer_ring_size(&ring1) == 3);
    CHECK(consumer_ring_room(&ring1) == 6 && consumer_ring_credits(&ring1) == 6);

    /* in the order they came, each once a round, until all credits are used */
    static struct job jobs[8];
    int got[8];
    pick_hold(c, 3, jobs, 7, got);
    static const int want[8] = {0, 1, 2, 0, 1, 2, -1};
    for (int i = 0; i < 7; i++) {
        if (got[i] != want[i])
            fprintf(stderr, "pick %d: consumer %d, want %d\n", i, got[i], want[i]);
        CHECK(got[i] == want[i]);
    }
    for (int i = 0; i < 3; i++)
        CHECK(!consumer_has_room(c[i]) && c[i]->inflight == 2);
    CHECK(consumer_ring_room(&ring1) == 0 && consumer_ring_credits(&ring1) == 6);
    CHECK(jobs[1].owner == c[1] && c[1]->held == &jobs[4]);

    /* a release gives that consumer its credit back; a release by another is ignored */
    consumer_release(c[2], &jobs[1]);
    CHECK(jobs[1].owner == c[1] && c[1]->inflight == 2);
    consumer_release(c[1], &jobs[1]);
    CHECK(jobs[1].owner == NULL && c[1]->inflight == 1 && consumer_has_room(c[1]));
    CHECK(c[1]->held == &jobs[4] && jobs[4].owner_next == NULL); /* unlinked */
    CHECK(consumer_ring_room(&ring1) == 1);
    CHECK(consumer_pick(&ring1, 0, "q1/x") == c[1]);
    consumer_hold(c[1], &jobs[1]);
    CHECK(consumer_pick(&ring1, 0, "q1/x") == NULL);

    /* a larger inflight_max is more room at once */
    c[0]->inflight_max = 5;
    CHECK(consumer_ring_room(&ring1) == 3 && consumer_ring_credits(&ring1) == 9);
    for (int i = 0; i < 7; i++)
        if (jobs[i].owner)
            consumer_release(jobs[i].owner, &jobs[i]);
    for (int i = 0; i < 3; i++)
        CHECK(c[i]->inflight == 0 && c[i]->held == NULL);
    CHECK(consumer_ring_room(&ring1) == 9);

    /* leaving: the ring goes on with the others, in their order */
    consumer_pick(&ring1, 0, "q1/x"); /* the round's next is c[1] now */
    consumer_unsubscribe(c[1], &ring1, &q1);
    CHECK(consumer_ring_size(&ring1) == 2 && c[1]->subs == NULL);
    int seen[3] = {0};
    for (int i = 0; i < 4; i++) {
        struct consumer *p = consumer_pick(&ring1, 0, "q1/x");
        for (int k = 0; k < 3; k++)
            seen[k] += p == c[k];
    }
    CHECK(seen[0] == 2 && seen[1] == 0 && seen[2] == 2);
    consumer_unsubscribe(c[1], &ring1, &q1); /* not subscribed: nothing */
    CHECK(consumer_ring_size(&ring1) == 2);
    CHECK(consumer_subscribe(c[0], &ring2, &q2) == 0);
    consumer_unsubscribe_all(c[0], ring_of);
    CHECK(consumer_ring_size(&ring1) == 1 && consumer_ring_size(&ring2) == 0);
    CHECK(ring2.head == NULL && c[0]->subs == NULL);
    consumer_unsubscribe_all(c[2], ring_of);
    CHECK(ring1.head == NULL && consumer_pick(&ring1, 0, "q1/x") == NULL);
    for (int i = 0; i < 3; i++)
        consumer_free(c[i]);
}

/* AVOID is passed over while another has room; a consumer that owes the answer to its
 * loss of ID is never picked for ID, even alone. */
static void avoid_and_unanswered(void)
{
    struct consumer *a = new_consumer(3), *b = new_consumer(1);
    consumer_subscribe(a, &ring1, &q1);
    consumer_subscribe(b, &ring1, &q1);
    for (int i = 0; i < 4; i++)
        CHECK(consumer_pick(&ring1, a->serial, "q1/j") == b);
    static struct job held;
    consumer_hold(b, &held);
    CHECK(consumer_pick(&ring1, a->serial, "q1/j") == a); /* nobody else has room */
    CHECK(consumer_pick(&ring1, b->serial, "q1/j") == a);
    consumer_release(b, &held);

    CHECK(consumer_note_lost(a, "q1/j", LOST_EXPIRED, 60000) == 0);
    CHECK(a->revoked == 1 && consumer_has_room(a)); /* 1 of 3 slots */
    for (int i = 0; i < 4; i++)
        CHECK(consumer_pick(&ring1, 0, "q1/j") == b);
    consumer_hold(b, &held);
    CHECK(consumer_pick(&ring1, 0, "q1/j") == NULL); /* a owes its answer for q1/j */
    CHECK(consumer_pick(&ring1, b->serial, "q1/j") == NULL);
    CHECK(consumer_pick(&ring1, 0, "q1/other") == a);
    CHECK(consumer_answer_lost(a, "q1/j") == 1);
    CHECK(consumer_pick(&ring1, 0, "q1/j") == a);
    consumer_release(b, &held);
    consumer_unsubscribe_all(a, ring_of);
    consumer_unsubscribe_all(b, ring_of);
    consumer_free(a);
    consumer_free(b);
}

/* A loss keeps its slot until answered or expired; the answered ones are remembered (why),
 * the oldest forgotten past CONSUMER_LOST_MAX. */
static void lost_slots(void)
{
    struct consumer *c = new_consumer(2);
    CHECK(consumer_lost(c, "q/a") == LOST_NONE);
    CHECK(consumer_answer_lost(c, "q/a") == 0);
    CHECK(consumer_note_lost(c, "q/a", LOST_EXPIRED, 60000) == 0);
    CHECK(consumer_note_lost(c, "q/a", LOST_SESSION, 60000) == 0); /* again: one slot */
    CHECK(c->revoked == 1 && consumer_has_room(c));
    CHECK(consumer_lost(c, "q/a") == LOST_SESSION);
    CHECK(consumer_note_lost(c, "q/b", LOST_LOCK, 60000) == 0);
    CHECK(c->revoked == 2 && !consumer_has_room(c));
    CHECK(consumer_answer_lost(c, "q/a") == 1);
    CHECK(consumer_answer_lost(c, "q/a") == 0); /* a second answer frees nothing */
    CHECK(c->revoked == 1 && consumer_has_room(c));
    CHECK(consumer_lost(c, "q/a") == LOST_SESSION); /* a repeated ack is still told why */
    CHECK(c->nanswered == 1);
    /* delivered again and lost again: unanswered once more, out of the answered */
    CHECK(consumer_note_lost(c, "q/a", LOST_DRAIN, 60000) == 0);
    CHECK(c->revoked == 2 && c->nanswered == 0 && consumer_lost(c, "q/a") == LOST_DRAIN);
    CHECK(consumer_answer_lost(c, "q/a") == 1 && consumer_answer_lost(c, "q/b") == 1);
    CHECK(c->revoked == 0 && c->nanswered == 2);

    /* expiry: only what is due by NOW, for consumers that never answer */
    int64_t now = units_mono_ms();
    CHECK(consumer_note_lost(c, "q/soon", LOST_EXPIRED, 0) == 0);
    CHECK(consumer_note_lost(c, "q/late", LOST_EXPIRED, 3600000) == 0);
    CHECK(c->revoked == 2);
    CHECK(consumer_expire_lost(c, now - 1000) == 0);
    CHECK(consumer_expire_lost(c, units_mono_ms() + 1) == 1);
    CHECK(c->revoked == 1 && consumer_lost(c, "q/soon") == LOST_EXPIRED);
    CHECK(consumer_answer_lost(c, "q/soon") == 0); /* its slot was already given up */
    CHECK(consumer_expire_lost(c, units_mono_ms() + 3600000 + 1000) == 1);
    CHECK(c->revoked == 0 && consumer_expire_lost(c, INT64_MAX) == 0);

    /* answered losses remembered: CONSUMER_LOST_MAX, the oldest forgotten first */
    char id[32];
    for (int i = 0; i < CONSUMER_LOST_MAX + 3; i++) {
        snprintf(id, sizeof id, "q/n%d", i);
        CHECK(consumer_note_lost(c, id, LOST_CANCELLED, 60000) == 0);
        CHECK(consumer_answer_lost(c, id) == 1);
    }
    CHECK(c->nanswered == CONSUMER_LOST_MAX && c->revoked == 0);
    int remembered = 0;
    for (int i = 0; i < CONSUMER_LOST_MAX + 3; i++) {
        snprintf(id, sizeof id, "q/n%d", i);
        remembered += consumer_lost(c, id) == LOST_CANCELLED;
    }
    CHECK(remembered == CONSUMER_LOST_MAX);
    CHECK(consumer_lost(c, "q/n0") == LOST_NONE && consumer_lost(c, "q/n2") == LOST_NONE);
    CHECK(consumer_lost(c, "q/n3") == LOST_CANCELLED);
    consumer_free(c); /* frees what it remembers (ASan's leak check) */
}

/* Jobs held while still being locked, in queues the consumer has left (UNSUB). */
static void locking_after_unsub(void)
{
    struct consumer *c = new_consumer(4);
    consumer_subscribe(c, &ring1, &q1);
    consumer_subscribe(c, &ring2, &q2);
    static struct job j[3];
    j[0] = (struct job){.q = &q1, .state = JS_LOCKING};
    j[1] = (struct job){.q = &q1, .state = JS_INFLIGHT};
    j[2] = (struct job){.q = &q2, .state = JS_LOCKING};
    for (int i = 0; i < 3; i++)
        consumer_hold(c, &j[i]);
    CHECK(consumer_locking(c) == 0);
    consumer_unsubscribe(c, &ring1, &q1);
    CHECK(consumer_locking(c) == 1);
    consumer_unsubscribe(c, &ring2, &q2);
    CHECK(consumer_locking(c) == 2);
    for (int i = 0; i < 3; i++)
        consumer_release(c, &j[i]);
    CHECK(consumer_locking(c) == 0 && c->inflight == 0);
    consumer_free(c);
}

int main(void)
{
    round_robin_and_credits();
    avoid_and_unanswered();
    lost_slots();
    locking_after_unsub();
    return check_report("consumers");
}
