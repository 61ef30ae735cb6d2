/* The path index (src/common/pathindex.c): every item added is found by its path and no
 * other, until it is removed; removal keeps every other item reachable, also when hashes
 * collide and runs wrap around the end of the slots, and as the slots grow and shrink. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "pathindex.h"

struct item {
    unsigned hash;
    int in;
    char path[32];
};

static const char *item_path(const void *item) { return ((const struct item *)item)->path; }

/* Every item is found exactly when it is in, and the count says how many are. */
static int consistent(const struct pathindex *ix, const struct item *items, int n)
{
    size_t in = 0;
    for (int i = 0; i < n; i++) {
        in += (size_t)items[i].in;
        void *got = pathindex_find(ix, items[i].path, items[i].hash);
        if (got != (items[i].in ? &items[i] : NULL))
            return 0;
    }
    return in == ix->count;
}

/* N items, hashed by HASH_OF (i) (NULL: their paths' hashes), added, then removed in the
 * order of a stride through them, checking the whole index after every step (after every
 * 997th removal when N is large). */
static void run(int n, unsigned (*hash_of)(int i), int stride)
{
    struct pathindex ix;
    struct item *items = calloc((size_t)n, sizeof *items);
    if (!items)
        exit(1);
    pathindex_init(&ix, item_path);
    int ok = 1;
    for (int i = 0; i < n; i++) {
        snprintf(items[i].path, sizeof items[i].path, "/q/jobs/%d", i);
        items[i].hash = hash_of ? hash_of(i) : pathindex_hash(items[i].path, strlen(items[i].path));
        ok &= pathindex_add(&ix, &items[i], items[i].hash) == 0;
        items[i].in = 1;
        if (n <= 300)
            ok &= consistent(&ix, items, n);
    }
    ok &= consistent(&ix, items, n);
    for (int k = 0, i = 0; k < n; k++, i = (i + stride) % n) {
        pathindex_remove(&ix, &items[i], items[i].hash);
        items[i].in = 0;
        if (n <= 300 || k % 997 == 0)
            ok &= consistent(&ix, items, n);
    }
    ok &= consistent(&ix, items, n) && ix.count == 0;
    CHECK(ok);
    pathindex_free(&ix);
    free(items);
}

static unsigned same_hash(int i) { (void)i; return 63; }           /* one run, wrapping */
static unsigned few_hashes(int i) { return 60u + (unsigned)(i % 5); } /* runs that merge */
static unsigned spread_hash(int i) { return (unsigned)i * 2654435761u; }

/* pathindex_hash spreads job paths that differ in a few digits (a put's, one after the
 * other) over the low bits tables use: 65,536 of them into 65,536 values of the low 16
 * bits take ~63% of the values when the hash is as good as random; a hash of the bytes'
 * sum, or one whose low bits miss the path's end, takes far fewer. */
static void spreads_paths(void)
{
    enum { N = 65536 };
    unsigned char *seen = calloc(N, 1);
    size_t distinct = 0;
    char path[128];
    for (unsigned i = 0; seen && i < N; i++) {
        int n = snprintf(path, sizeof path, "/deferd/queues/bench/jobs/179600/17960038/"
                         "17960038520/%013llu-100-%016x", 1796003852012ULL + i / 7, i * 7919u);
        unsigned h = pathindex_hash(path, (size_t)n) & (N - 1);
        distinct += !seen[h];
        seen[h] = 1;
    }
    CHECK(distinct >= N * 60 / 100);
    free(seen);
}

int main(void)
{
    spreads_paths();
    struct pathindex ix;
    pathindex_init(&ix, item_path);
    CHECK(pathindex_find(&ix, "/none", 1) == NULL);
    struct item a = {.hash = 5, .path = "/a"}, b = {.hash = 5, .path = "/b"};
    pathindex_remove(&ix, &a, a.hash); /* not in: nothing */
    CHECK(pathindex_add(&ix, &a, a.hash) == 0 && pathindex_add(&ix, &b, b.hash) == 0);
    CHECK(pathindex_find(&ix, "/a", 5) == &a && pathindex_find(&ix, "/b", 5) == &b);
    CHECK(pathindex_find(&ix, "/a", 6) == NULL); /* another hash: another path */
    CHECK(pathindex_find(&ix, "/c", 5) == NULL);
    pathindex_remove(&ix, &a, a.hash);
    CHECK(pathindex_find(&ix, "/a", 5) == NULL && pathindex_find(&ix, "/b", 5) == &b);
    pathindex_remove(&ix, &a, a.hash); /* twice: nothing */
    CHECK(ix.count == 1);
    pathindex_free(&ix);

    run(40, same_hash, 7);
    run(200, same_hash, 13);
    run(300, few_hashes, 11);
    run(300, NULL, 1);
    run(300, NULL, 17);
    run(20000, spread_hash, 7919);
    run(20000, NULL, 1);
    run(20000, NULL, 12289);
    return check_report("pathindex");
}
