/* A queue's due jobs, taking turns by group (PUT group=; docs/limits.md, Fair turns). Each
 * group has its own heap, ordered as a queue's ready jobs always were (priority, then due
 * time, then arrival); the groups that have due jobs form a ring, the next job is the top
 * of the group whose turn it is, and after its weight's worth of jobs (1 unless deferd.ini
 * says more) the turn passes on. A group that gets due jobs joins at the end of the round.
 * Jobs without a group are one group of their own, so a queue that never uses groups has
 * one heap and exactly the order it had before groups. Loop thread only. */
#ifndef DEFERD_TURNS_H
#define DEFERD_TURNS_H

#include <stddef.h>
#include <stdint.h>

#include "heap.h"

struct job;
struct turn_group;

/* How many jobs GROUP takes in a row when its turn comes (at least 1). */
typedef uint32_t (*turns_weight_fn)(const void *ctx, const char *group);

struct turns {
    struct turn_group *groups; /* by name (uthash) */
    struct turn_group *cur;    /* whose turn it is; NULL when no job is due */
    size_t len;                /* jobs in every group */
    heap_less_fn less;
    heap_setpos_fn setpos;
    turns_weight_fn weight;    /* NULL: 1 for every group */
    const void *weight_ctx;
};

void turns_init(struct turns *t, heap_less_fn less, heap_setpos_fn setpos,
                turns_weight_fn weight, const void *weight_ctx);
void turns_free(struct turns *t);
/* 0, or -1 when out of memory (the job is not added). */
int turns_push(struct turns *t, struct job *job);
/* The job whose turn it is, left in place; NULL when none. */
struct job *turns_peek(const struct turns *t);
/* Takes turns_peek()'s job; the turn passes on once its group had its weight's worth. */
struct job *turns_pop(struct turns *t);
/* The group whose turn it is lets the next one go first (its jobs must wait), keeping its
 * place in the ring. */
void turns_pass(struct turns *t);
/* JOB leaves, wherever it is (its heap position). */
void turns_remove(struct turns *t, struct job *job);
/* Calls FN for every job, in no order; FN must not change T. */
void turns_each(const struct turns *t, void (*fn)(struct job *job, void *arg), void *arg);
/* Groups with due jobs now. */
size_t turns_groups(const struct turns *t);

#endif
