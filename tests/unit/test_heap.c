/* The heap against a sorted reference under random inserts, pops and removals. */
#include <stdlib.h>

#include "check.h"
#include "heap.h"

struct item {
    int key;
    int id;
    size_t pos;
};

static int less(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    return x->key < y->key || (x->key == y->key && x->id < y->id);
}

static void setpos(void *it, size_t pos) { ((struct item *)it)->pos = pos; }

static int cmp(const void *a, const void *b)
{
    const struct item *x = *(struct item *const *)a, *y = *(struct item *const *)b;
    return less(x, y) ? -1 : less(y, x) ? 1 : 0;
}

int main(void)
{
    enum { N = 4000 };
    static struct item items[N];
    struct item *live[N];
    size_t nlive = 0;
    struct heap h;
    heap_init(&h, less, setpos);
    srand(42);
    CHECK(heap_pop(&h) == NULL);
    for (int round = 0; round < 20000; round++) {
        int op = rand() % 3;
        if (op == 0 && nlive < N) { /* insert */
            struct item *it = &items[round % N];
            if (it->pos != HEAP_NONE && it->id)
                continue;
            it->key = rand() % 500;
            it->id = round + 1;
            CHECK(heap_push(&h, it) == 0);
            live[nlive++] = it;
        } else if (op == 1 && nlive) { /* pop the minimum */
            qsort(live, nlive, sizeof live[0], cmp);
            struct item *top = heap_pop(&h);
            CHECK(top == live[0]);
            CHECK(top->pos == HEAP_NONE);
            memmove(live, live + 1, (--nlive) * sizeof live[0]);
        } else if (op == 2 && nlive) { /* remove an arbitrary one */
            size_t k = (size_t)rand() % nlive;
            heap_remove(&h, live[k]->pos);
            CHECK(live[k]->pos == HEAP_NONE);
            live[k] = live[--nlive];
        }
        CHECK(h.len == nlive);
    }
    for (size_t i = 0; i < h.len; i++) /* every element knows its slot */
        CHECK(((struct item *)h.items[i])->pos == i);
    qsort(live, nlive, sizeof live[0], cmp);
    for (size_t i = 0; i < nlive; i++)
        CHECK(heap_pop(&h) == live[i]);
    CHECK(heap_peek(&h) == NULL);
    heap_free(&h);
    return check_report("heap");
}
