#include "heap.h"

#include <stdlib.h>

void heap_init(struct heap *h, heap_less_fn less, heap_setpos_fn setpos)
{
    h->items = NULL;
    h->len = h->cap = 0;
    h->less = less;
    h->setpos = setpos;
}

void heap_free(struct heap *h)
{
    free(h->items);
    h->items = NULL;
    h->len = h->cap = 0;
}

static void place(struct heap *h, size_t i, void *item)
{
    h->items[i] = item;
    h->setpos(item, i);
}

static void sift_up(struct heap *h, size_t i)
{
    void *item = h->items[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!h->less(item, h->items[parent]))
            break;
        place(h, i, h->items[parent]);
        i = parent;
    }
    place(h, i, item);
}

static void sift_down(struct heap *h, size_t i)
{
    void *item = h->items[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->len)
            break;
        if (child + 1 < h->len && h->less(h->items[child + 1], h->items[child]))
            child++;
        if (!h->less(h->items[child], item))
            break;
        place(h, i, h->items[child]);
        i = child;
    }
    place(h, i, item);
}

int heap_push(struct heap *h, void *item)
{
    if (h->len == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        void **grown = realloc(h->items, cap * sizeof *grown);
        if (!grown)
            return -1;
        h->items = grown;
        h->cap = cap;
    }
    h->items[h->len++] = item;
    sift_up(h, h->len - 1);
    return 0;
}

void *heap_peek(const struct heap *h)
{
    return h->len ? h->items[0] : NULL;
}

void heap_remove(struct heap *h, size_t pos)
{
    if (pos >= h->len)
        return;
    void *gone = h->items[pos];
    void *last = h->items[--h->len];
    h->setpos(gone, HEAP_NONE);
    if (pos == h->len)
        return;
    h->items[pos] = last;
    if (pos > 0 && h->less(last, h->items[(pos - 1) / 2]))
        sift_up(h, pos);
    else
        sift_down(h, pos);
}

void *heap_pop(struct heap *h)
{
    void *top = heap_peek(h);
    if (top)
        heap_remove(h, 0);
    return top;
}
