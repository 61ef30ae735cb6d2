#include "slotset.h"

#include <stdlib.h>
#include <string.h>

void slotset_free(struct slotset *s)
{
    free(s->state);
    memset(s, 0, sizeof *s);
}

int slotset_follow(struct slotset *s, uint32_t max)
{
    if (max == s->max)
        return 0;
    if (max > s->cap) {
        unsigned char *st = realloc(s->state, max);
        if (!st)
            return -1;
        memset(st + s->cap, SL_FREE, max - s->cap);
        s->state = st;
        s->cap = max;
    }
    s->max = max;
    s->nfree = 0;
    for (uint32_t i = 0; i < max; i++)
        s->nfree += s->state[i] == SL_FREE;
    s->cursor = 0;
    return 0;
}

int slotset_pick(struct slotset *s)
{
    if (!s->nfree)
        return -1;
    uint32_t i = s->cursor % s->max;
    while (s->state[i] != SL_FREE)
        i = (i + 1) % s->max;
    s->cursor = (i + 1) % s->max;
    return (int)i;
}

void slotset_set(struct slotset *s, uint32_t i, enum slot_state st)
{
    if (i >= s->cap)
        return;
    if (i < s->max)
        s->nfree += (st == SL_FREE) - (s->state[i] == SL_FREE);
    s->state[i] = (unsigned char)st;
}

enum slot_state slotset_get(const struct slotset *s, uint32_t i)
{
    return i < s->cap ? (enum slot_state)s->state[i] : SL_FREE;
}

void slotset_listed(struct slotset *s, const unsigned char *seen)
{
    for (uint32_t i = 0; i < s->cap; i++)
        if (s->state[i] == SL_FREE || s->state[i] == SL_TAKEN)
            slotset_set(s, i, seen[i] ? SL_TAKEN : SL_FREE);
}

void slotset_reset(struct slotset *s)
{
    for (uint32_t i = 0; i < s->cap; i++)
        slotset_set(s, i, SL_FREE);
}

uint32_t slotset_count(const struct slotset *s, enum slot_state st)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->cap; i++)
        n += s->state[i] == st;
    return n;
}
