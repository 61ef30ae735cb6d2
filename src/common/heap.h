/* Binary min-heap of pointers; each element remembers its slot so any element can be
 * removed in O(log n). Every deadline of the daemon is one: a queue's delay (due time),
 * ready (priority), armed and prelocking heaps, the lease heap, the mirror's buckets
 * waiting to be listed. */
#ifndef DEFERD_HEAP_H
#define DEFERD_HEAP_H

#include <stddef.h>

#define HEAP_NONE ((size_t)-1)

typedef int (*heap_less_fn)(const void *a, const void *b);
typedef void (*heap_setpos_fn)(void *item, size_t pos); /* HEAP_NONE when it leaves */

struct heap {
    void **items;
    size_t len, cap;
    heap_less_fn less;
    heap_setpos_fn setpos;
};

void heap_init(struct heap *h, heap_less_fn less, heap_setpos_fn setpos);
void heap_free(struct heap *h);
int heap_push(struct heap *h, void *item); /* 0, or -1 when out of memory */
void *heap_peek(const struct heap *h);
void *heap_pop(struct heap *h);
void heap_remove(struct heap *h, size_t pos);

#endif
