#include "buckets.h"

#include <stdlib.h>
#include <string.h>

#include "strhash.h"

struct bucket {
    UT_hash_handle hh;
    struct bucket *newer;       /* insertion order, for forgetting the oldest */
    unsigned puts;
    char path[];
};

struct buckets {
    struct bucket *by_path, *oldest, *newest;
    size_t count, capacity;
};

struct buckets *buckets_new(size_t capacity)
{
    struct buckets *b = calloc(1, sizeof *b);
    if (b)
        b->capacity = capacity ? capacity : 1;
    return b;
}

int buckets_known(const struct buckets *b, const char *path)
{
    struct bucket *e;
    HASH_FIND_STR(b->by_path, path, e);
    return e != NULL;
}

unsigned buckets_count_put(struct buckets *b, const char *path)
{
    struct bucket *e;
    HASH_FIND_STR(b->by_path, path, e);
    return e ? e->puts++ : 0;
}

static void forget_oldest(struct buckets *b)
{
    struct bucket *e = b->oldest;
    b->oldest = e->newer;
    if (!b->oldest)
        b->newest = NULL;
    HASH_DEL(b->by_path, e);
    free(e);
    b->count--;
}

void buckets_add(struct buckets *b, const char *path)
{
    if (buckets_known(b, path))
        return;
    size_t n = strlen(path) + 1;
    struct bucket *e = malloc(sizeof *e + n);
    if (!e)
        return;
    memcpy(e->path, path, n);
    e->newer = NULL;
    e->puts = 0;
    HASH_ADD_STR(b->by_path, path, e);
    if (b->newest)
        b->newest->newer = e;
    else
        b->oldest = e;
    b->newest = e;
    if (++b->count > b->capacity)
        forget_oldest(b);
}

void buckets_free(struct buckets *b)
{
    if (!b)
        return;
    while (b->oldest)
        forget_oldest(b);
    free(b);
}
