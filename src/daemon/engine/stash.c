#include "stash.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

struct entry {
    UT_hash_handle hh;
    struct entry *newer, *older;  /* insertion order: the oldest expires first */
    unsigned char *payload;
    size_t len;
    int64_t until_ms;
    char path[];
};

struct stash {
    struct entry *by_path, *oldest, *newest;
    size_t bytes, max_bytes;
};

struct stash *stash_new(size_t max_bytes)
{
    struct stash *s = calloc(1, sizeof *s);
    if (s)
        s->max_bytes = max_bytes;
    return s;
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
    HASH_DEL(s->by_path, e);
    s->bytes -= e->len;
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
    struct entry *e, *old;
    size_t n = strlen(path) + 1;
    HASH_FIND_STR(s->by_path, path, old);
    if (old || s->bytes + len > s->max_bytes || !(e = malloc(sizeof *e + n)))
        return -1;
    *e = (struct entry){.payload = payload, .len = len, .until_ms = until_ms,
                        .older = s->newest};
    memcpy(e->path, path, n);
    if (s->newest)
        s->newest->newer = e;
    else
        s->oldest = e;
    s->newest = e;
    HASH_ADD_STR(s->by_path, path, e);
    s->bytes += len;
    return 0;
}

unsigned char *stash_take(struct stash *s, const char *path, size_t *len)
{
    struct entry *e;
    if (!s->by_path)
        return NULL; /* empty: most puts are not stashed, and a path's hash is not free */
    HASH_FIND_STR(s->by_path, path, e);
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
    while (s->oldest) {
        struct entry *e = s->oldest;
        drop(s, e);
        free(e->payload);
        free(e);
    }
    free(s);
}
