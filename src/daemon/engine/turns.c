#include "turns.h"

#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "strhash.h"

struct turn_group {
    UT_hash_handle hh;
    struct heap heap;
    struct turn_group *next, *prev; /* the ring of groups with due jobs */
    uint32_t taken;                 /* jobs taken in its current turn */
    char name[LAYOUT_GROUP_MAX + 1];
};

void turns_init(struct turns *t, heap_less_fn less, heap_setpos_fn setpos,
                turns_weight_fn weight, const void *weight_ctx)
{
    *t = (struct turns){.less = less, .setpos = setpos, .weight = weight,
                        .weight_ctx = weight_ctx};
}

static void group_free(struct turns *t, struct turn_group *g)
{
    HASH_DEL(t->groups, g);
    heap_free(&g->heap);
    free(g);
}

void turns_free(struct turns *t)
{
    struct turn_group *g, *tmp;
    HASH_ITER(hh, t->groups, g, tmp) {
        group_free(t, g);
    }
    t->cur = NULL;
    t->len = 0;
}

/* Joins the ring at the end of the round: just before the group whose turn it is. */
static void ring_join(struct turns *t, struct turn_group *g)
{
    if (!t->cur) {
        g->next = g->prev = g;
        t->cur = g;
        return;
    }
    g->next = t->cur;
    g->prev = t->cur->prev;
    g->prev->next = g;
    t->cur->prev = g;
}

/* An empty group leaves the ring and is freed; the turn passes on if it was its. */
static void ring_leave(struct turns *t, struct turn_group *g)
{
    if (g->next == g) {
        t->cur = NULL;
    } else {
        g->prev->next = g->next;
        g->next->prev = g->prev;
        if (t->cur == g)
            t->cur = g->next;
    }
    group_free(t, g);
}

int turns_push(struct turns *t, struct job *job)
{
    struct turn_group *g;
    HASH_FIND_STR(t->groups, job->jn.group, g);
    if (!g) {
        if (!(g = calloc(1, sizeof *g)))
            return -1;
        strcpy(g->name, job->jn.group);
        heap_init(&g->heap, t->less, t->setpos);
        HASH_ADD_STR(t->groups, name, g);
        ring_join(t, g);
    }
    if (heap_push(&g->heap, job) != 0) {
        if (!g->heap.len)
            ring_leave(t, g);
        return -1;
    }
    t->len++;
    return 0;
}

struct job *turns_peek(const struct turns *t)
{
    return t->cur ? heap_peek(&t->cur->heap) : NULL;
}

struct job *turns_pop(struct turns *t)
{
    struct turn_group *g = t->cur;
    if (!g)
        return NULL;
    struct job *job = heap_pop(&g->heap);
    t->len--;
    uint32_t weight = t->weight ? t->weight(t->weight_ctx, g->name) : 1;
    if (!g->heap.len) {
        ring_leave(t, g);
    } else if (++g->taken >= weight) {
        g->taken = 0;
        t->cur = g->next;
    }
    return job;
}

void turns_pass(struct turns *t)
{
    if (t->cur) {
        t->cur->taken = 0;
        t->cur = t->cur->next;
    }
}

void turns_remove(struct turns *t, struct job *job)
{
    struct turn_group *g;
    HASH_FIND_STR(t->groups, job->jn.group, g);
    if (!g || job->heap_pos >= g->heap.len || g->heap.items[job->heap_pos] != job)
        return;
    heap_remove(&g->heap, job->heap_pos);
    t->len--;
    if (!g->heap.len)
        ring_leave(t, g);
}

void turns_each(const struct turns *t, void (*fn)(struct job *job, void *arg), void *arg)
{
    struct turn_group *g, *tmp;
    HASH_ITER(hh, ((struct turns *)t)->groups, g, tmp) {
        for (size_t i = 0; i < g->heap.len; i++)
            fn(g->heap.items[i], arg);
    }
}

size_t turns_groups(const struct turns *t) { return HASH_COUNT(t->groups); }
