#include "census.h"

#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "strhash.h"

struct window {
    uint64_t l2;               /* due_ms / 100000: the L2 bucket */
    uint64_t n;
    UT_hash_handle hh;
};

struct census {
    struct window *map;
    uint64_t total;
};

struct census *census_new(void) { return calloc(1, sizeof(struct census)); }

void census_free(struct census *c)
{
    if (!c)
        return;
    struct window *w, *tmp;
    HASH_ITER(hh, c->map, w, tmp) {
        HASH_DEL(c->map, w);
        free(w);
    }
    free(c);
}

int census_add(struct census *c, uint64_t due_ms, uint64_t n)
{
    uint64_t l2 = layout_bucket_of(due_ms, 2);
    struct window *w;
    HASH_FIND(hh, c->map, &l2, sizeof l2, w);
    if (!w) {
        if (!(w = calloc(1, sizeof *w)))
            return -1;
        w->l2 = l2;
        HASH_ADD(hh, c->map, l2, sizeof w->l2, w);
    }
    w->n += n;
    c->total += n;
    return 0;
}

uint64_t census_total(const struct census *c) { return c ? c->total : 0; }

uint64_t census_between(const struct census *c, int64_t from_ms, int64_t to_ms)
{
    uint64_t sum = 0;
    const struct window *w;
    for (w = c ? c->map : NULL; w; w = w->hh.next) {
        int64_t start = (int64_t)(w->l2 * layout_bucket_width[2]);
        if (start > from_ms && start <= to_ms)
            sum += w->n;
    }
    return sum;
}

void census_bars(const struct census *c, int64_t from_ms, int64_t width_ms, size_t n,
                 uint64_t *bars)
{
    const struct window *w;
    memset(bars, 0, n * sizeof *bars);
    for (w = c ? c->map : NULL; w && width_ms > 0; w = w->hh.next) {
        int64_t start = (int64_t)(w->l2 * layout_bucket_width[2]);
        if (start <= from_ms)
            continue;
        uint64_t b = (uint64_t)(start - from_ms - 1) / (uint64_t)width_ms;
        if (b < n)
            bars[b] += w->n;
    }
}
