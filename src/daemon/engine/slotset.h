/* What a daemon believes of N slot names (limit.h): which are free, in one of its own lock
 * transactions, its own, or another daemon's. Pure bookkeeping, no ZooKeeper: limit.c keeps
 * one for the queue's concurrency and one per group for group_concurrency. */
#ifndef DEFERD_SLOTSET_H
#define DEFERD_SLOTSET_H

#include <stdint.h>

enum slot_state {
    SL_FREE,   /* no node, as far as we know: the next lock may try it */
    SL_TRYING, /* in one of our lock multis */
    SL_OURS,   /* created by our lock, deleted by its settle or release */
    SL_TAKEN,  /* another daemon's (seen, or its create failed with NodeExists) */
};

struct slotset {
    unsigned char *state; /* enum slot_state per slot, CAP of them */
    uint32_t cap;         /* slots known: the largest limit seen */
    uint32_t max;         /* the limit now: slots at or above it are never offered */
    uint32_t nfree;       /* SL_FREE among the first MAX */
    uint32_t cursor;      /* where the next search for a free slot starts */
};

void slotset_free(struct slotset *s);
/* Follows a change of the limit: more slots start free; fewer leave the ones above the new
 * limit to their holders. 0, or -1 when out of memory (nothing changed). */
int slotset_follow(struct slotset *s, uint32_t max);
/* A free slot below the limit, searched from where the last search stopped; -1 if none. */
int slotset_pick(struct slotset *s);
void slotset_set(struct slotset *s, uint32_t i, enum slot_state st);
enum slot_state slotset_get(const struct slotset *s, uint32_t i);
/* A listing of the slot nodes: SEEN[i] (i < CAP) for the names present. Slots in our own
 * transactions keep their state; the others become TAKEN or FREE as the listing says. */
void slotset_listed(struct slotset *s, const unsigned char *seen);
/* Every slot free (our session, and with it our slots, is gone). */
void slotset_reset(struct slotset *s);
/* Slots in state ST. */
uint32_t slotset_count(const struct slotset *s, enum slot_state st);

#endif
