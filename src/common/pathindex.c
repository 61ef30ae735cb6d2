#include "pathindex.h"

#include <stdlib.h>
#include <string.h>

#include "strhash.h"

#define SLOTS_MIN 64

void pathindex_init(struct pathindex *ix, const char *(*path_of)(const void *item))
{
    *ix = (struct pathindex){.path_of = path_of};
}

void pathindex_free(struct pathindex *ix)
{
    free(ix->slots);
    ix->slots = NULL;
    ix->cap = ix->count = 0;
}

unsigned pathindex_hash(const char *path, size_t len)
{
    return strhash(path, len);
}

void *pathindex_find(const struct pathindex *ix, const char *path, unsigned hash)
{
    if (!ix->count)
        return NULL;
    size_t mask = ix->cap - 1;
    for (size_t i = hash & mask; ix->slots[i].item; i = (i + 1) & mask)
        if (ix->slots[i].hash == hash && strcmp(ix->path_of(ix->slots[i].item), path) == 0)
            return ix->slots[i].item;
    return NULL;
}

/* The first free slot of HASH's run. */
static size_t free_slot(const struct pathindex *ix, unsigned hash)
{
    size_t mask = ix->cap - 1, i = hash & mask;
    while (ix->slots[i].item)
        i = (i + 1) & mask;
    return i;
}

static int resize(struct pathindex *ix, size_t cap)
{
    struct pathindex_slot *slots = calloc(cap, sizeof *slots), *old = ix->slots;
    if (!slots)
        return -1;
    size_t old_cap = ix->cap;
    ix->slots = slots;
    ix->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].item)
            ix->slots[free_slot(ix, old[i].hash)] = old[i];
    free(old);
    return 0;
}

int pathindex_add(struct pathindex *ix, void *item, unsigned hash)
{
    if ((ix->count + 1) * 2 > ix->cap && resize(ix, ix->cap ? ix->cap * 2 : SLOTS_MIN) != 0)
        return -1;
    ix->slots[free_slot(ix, hash)] = (struct pathindex_slot){hash, item};
    ix->count++;
    return 0;
}

/* Empties slot I and moves back the items after it that a probe from their home would no
 * longer reach (linear probing's deletion, no tombstones). */
static void slot_clear(struct pathindex *ix, size_t i)
{
    size_t mask = ix->cap - 1, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!ix->slots[j].item)
            break;
        size_t home = ix->slots[j].hash & mask;
        /* J's item stays when its home lies cyclically in (I, J] */
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;
        ix->slots[i] = ix->slots[j];
        i = j;
    }
    ix->slots[i].item = NULL;
    ix->count--;
}

void pathindex_remove(struct pathindex *ix, const void *item, unsigned hash)
{
    if (!ix->count)
        return;
    size_t mask = ix->cap - 1, i = hash & mask;
    while (ix->slots[i].item && ix->slots[i].item != item)
        i = (i + 1) & mask;
    if (!ix->slots[i].item)
        return;
    slot_clear(ix, i);
    if (ix->cap > SLOTS_MIN && ix->count * 8 < ix->cap)
        (void)resize(ix, ix->cap / 2); /* out of memory: stays larger */
}
