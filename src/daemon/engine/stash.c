#include "stash.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h> /* HASH_VALUE: the hash uthash uses, not its tables */

/* Every put of a job due soon whose bucket the mirror does not follow yet comes here (all
 * of them in a burst of puts: performance.md, session 32), and a put's lookup is always a
 * miss. uthash walked a chain of entries for it, a cache miss each; this index keeps each
 * path's hash beside its entry in one array (linear probing, at most half full), so a miss
 * reads a run of adjacent slots and touches no entry. */
#define SLOTS_MIN 64

struct entry {
    struct entry *newer, *older;  /* insertion order: the oldest expires first */
    unsigned char *payload;
    size_t len;
    int64_t until_ms;
    unsigned hash;
    char path[];
};

struct slot {
    unsigned hash;
    struct entry *e;              /* NULL: free */
};

struct stash {
    struct slot *slots;
    size_t cap, count;            /* cap: 0 or a power of two */
    struct entry *oldest, *newest;
    size_t bytes, max_bytes;
};

struct stash *stash_new(size_t max_bytes)
{
    struct stash *s = calloc(1, sizeof *s);
    if (s)
        s->max_bytes = max_bytes;
    return s;
}

static unsigned path_hash(const char *path, size_t n)
{
    unsigned h;
    HASH_VALUE(path, n, h);
    return h;
}

/* The slot holding PATH (hash H), or the free slot that ends its run. */
static size_t slot_of(const struct stash *s, const char *path, unsigned h)
{
    size_t mask = s->cap - 1, i = h & mask;
    while (s->slots[i].e && (s->slots[i].hash != h || strcmp(s->slots[i].e->path, path) != 0))
        i = (i + 1) & mask;
    return i;
}

static int resize(struct stash *s, size_t cap)
{
    struct slot *slots = calloc(cap, sizeof *slots), *old = s->slots;
    if (!slots)
        return -1;
    size_t old_cap = s->cap;
    s->slots = slots;
    s->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].e)
            s->slots[slot_of(s, old[i].e->path, old[i].hash)] = old[i];
    free(old);
    return 0;
}

/* Empties slot I and moves back the entries after it that a probe from their home would no
 * longer reach (linear probing's deletion, no tombstones). */
static void slot_clear(struct stash *s, size_t i)
{
    size_t mask = s->cap - 1, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!s->slots[j].e)
            break;
        size_t home = s->slots[j].hash & mask;
        /* J's entry stays when its home lies cyclically in (I, J] */
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;
        s->slots[i] = s->slots[j];
        i = j;
    }
    s->slots[i].e = NULL;
    s->count--;
}

static void drop(struct stash *s, struct entry *e)
{
    if (e->older)
        e->older->newer = e->newer;
    else
        s->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        s->newest = e->older;
    slot_clear(s, slot_of(s, e->path, e->hash));
    s->bytes -= e->len;
    if (s->cap > SLOTS_MIN && s->count * 8 < s->cap)
        (void)resize(s, s->cap / 2); /* out of memory: stays larger */
}

int stash_put(struct stash *s, const char *path, unsigned char *payload, size_t len,
              int64_t until_ms, int64_t now_ms)
{
    while (s->oldest && (s->oldest->until_ms < now_ms || s->bytes + len > s->max_bytes)) {
        struct entry *e = s->oldest;
        drop(s, e);
        free(e->payload);
        free(e);
    }
    size_t n = strlen(path) + 1;
    if (s->bytes + len > s->max_bytes ||
        ((s->count + 1) * 2 > s->cap && resize(s, s->cap ? s->cap * 2 : SLOTS_MIN) != 0))
        return -1;
    unsigned h = path_hash(path, n - 1);
    size_t i = slot_of(s, path, h);
    struct entry *e;
    if (s->slots[i].e || !(e = malloc(sizeof *e + n)))
        return -1; /* one payload per path */
    *e = (struct entry){.payload = payload, .len = len, .until_ms = until_ms, .hash = h,
                        .older = s->newest};
    memcpy(e->path, path, n);
    if (s->newest)
        s->newest->newer = e;
    else
        s->oldest = e;
    s->newest = e;
    s->slots[i] = (struct slot){h, e};
    s->count++;
    s->bytes += len;
    return 0;
}

unsigned char *stash_take(struct stash *s, const char *path, size_t *len)
{
    if (!s->count)
        return NULL; /* empty: most puts are not stashed, and a path's hash is not free */
    struct entry *e = s->slots[slot_of(s, path, path_hash(path, strlen(path)))].e;
    if (!e)
        return NULL;
    drop(s, e);
    unsigned char *payload = e->payload;
    *len = e->len;
    free(e);
    return payload;
}

void stash_free(struct stash *s)
{
    if (!s)
        return;
    for (struct entry *e = s->oldest, *next; e; e = next) {
        next = e->newer;
        free(e->payload);
        free(e);
    }
    free(s->slots);
    free(s);
}
