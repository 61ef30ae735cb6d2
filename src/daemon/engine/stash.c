#include "stash.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pathindex.h"

/* Every put of a job due soon whose bucket the mirror does not follow yet comes here (all
 * of them in a burst of puts: performance.md, session 32), and a put's lookup is always a
 * miss: the paths are indexed with their hashes beside them (pathindex.h). */
struct entry {
    struct entry *newer, *older;  /* insertion order: the oldest expires first */
    unsigned char *payload;
    size_t len;
    int64_t until_ms;
    unsigned hash;
    char path[];
};

struct stash {
    struct pathindex index;
    struct entry *oldest, *newest;
    size_t bytes, max_bytes;
};

static const char *entry_path(const void *item) { return ((const struct entry *)item)->path; }

struct stash *stash_new(size_t max_bytes)
{
    struct stash *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pathindex_init(&s->index, entry_path);
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
    pathindex_remove(&s->index, e, e->hash);
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
    size_t n = strlen(path) + 1;
    if (s->bytes + len > s->max_bytes)
        return -1;
    unsigned h = pathindex_hash(path, n - 1);
    struct entry *e;
    if (pathindex_find(&s->index, path, h) || !(e = malloc(sizeof *e + n)))
        return -1; /* one payload per path */
    *e = (struct entry){.payload = payload, .len = len, .until_ms = until_ms, .hash = h,
                        .older = s->newest};
    memcpy(e->path, path, n);
    if (pathindex_add(&s->index, e, h) != 0) {
        free(e);
        return -1;
    }
    if (s->newest)
        s->newest->newer = e;
    else
        s->oldest = e;
    s->newest = e;
    s->bytes += len;
    return 0;
}

unsigned char *stash_take(struct stash *s, const char *path, size_t *len)
{
    if (!s->index.count)
        return NULL; /* empty: most puts are not stashed, and a path's hash is not free */
    struct entry *e = pathindex_find(&s->index, path, pathindex_hash(path, strlen(path)));
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
    pathindex_free(&s->index);
    free(s);
}
