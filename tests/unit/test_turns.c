/* Fair turns (src/daemon/engine/turns.c): without groups, exactly one heap's order; with
 * groups, one job of each in turn, a group's own jobs by priority, weights, a group that
 * joins at the end of the round, removal from anywhere, and the big-and-small case of
 * issue 40 (one group with many due jobs cannot make a small one wait its whole length). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "heap.h"
#include "job.h"
#include "turns.h"

static int less(const void *a, const void *b)
{
    const struct job *x = a, *y = b;
    if (x->jn.priority != y->jn.priority)
        return x->jn.priority < y->jn.priority;
    return x->seq < y->seq;
}

static void setpos(void *item, size_t pos) { ((struct job *)item)->heap_pos = pos; }

static struct job jobs[64];
static int njobs;

static struct job *mk(const char *group, uint32_t prio)
{
    struct job *j = &jobs[njobs];
    memset(j, 0, sizeof *j);
    j->seq = (uint64_t)++njobs;
    j->jn.priority = prio;
    strcpy(j->jn.group, group);
    j->heap_pos = HEAP_NONE;
    return j;
}

/* The groups (first letter) and priorities of what pops, as "a1 b5 ...". */
static const char *drain(struct turns *t)
{
    static char out[512];
    size_t n = 0;
    struct job *j;
    out[0] = '\0';
    while ((j = turns_pop(t)) && n + 8 < sizeof out)
        n += (size_t)snprintf(out + n, sizeof out - n, "%s%s%u", n ? " " : "",
                              j->jn.group[0] ? j->jn.group : "-", j->jn.priority);
    return out;
}

/* drain() once: CHECK_STR evaluates its arguments twice */
#define CHECK_DRAIN(t, want)                                                                \
    do {                                                                                    \
        const char *got_ = drain(t);                                                        \
        CHECK_STR(got_, want);                                                              \
    } while (0)

static void no_groups_one_order(void)
{
    struct turns t;
    turns_init(&t, less, setpos, NULL, NULL);
    njobs = 0;
    uint32_t prios[] = {5, 1, 9, 1, 3};
    for (int i = 0; i < 5; i++)
        CHECK(turns_push(&t, mk("", prios[i])) == 0);
    CHECK(t.len == 5 && turns_groups(&t) == 1);
    CHECK_DRAIN(&t, "-1 -1 -3 -5 -9");
    CHECK(t.len == 0 && turns_groups(&t) == 0 && turns_peek(&t) == NULL);
    turns_free(&t);
}

static void round_robin(void)
{
    struct turns t;
    turns_init(&t, less, setpos, NULL, NULL);
    njobs = 0;
    for (int i = 0; i < 4; i++)
        turns_push(&t, mk("a", (uint32_t)(9 - i)));
    turns_push(&t, mk("b", 7));
    turns_push(&t, mk("b", 2));
    turns_push(&t, mk("", 0));
    /* a first (it came first), then b, then the no-group jobs; priority within each */
    CHECK_DRAIN(&t, "a6 b2 -0 a7 b7 a8 a9");
    turns_free(&t);
}

static void joins_at_end_of_round(void)
{
    struct turns t;
    turns_init(&t, less, setpos, NULL, NULL);
    njobs = 0;
    turns_push(&t, mk("a", 1));
    turns_push(&t, mk("a", 2));
    turns_push(&t, mk("b", 1));
    turns_push(&t, mk("b", 2));
    CHECK(turns_pop(&t)->jn.group[0] == 'a');
    turns_push(&t, mk("c", 0)); /* b's turn is next; c after a, who was waiting */
    CHECK_DRAIN(&t, "b1 a2 c0 b2");
    turns_free(&t);
}

static uint32_t weights(const void *ctx, const char *group)
{
    (void)ctx;
    return strcmp(group, "vip") == 0 ? 3 : 1;
}

static void weighted(void)
{
    struct turns t;
    turns_init(&t, less, setpos, weights, NULL);
    njobs = 0;
    for (int i = 0; i < 5; i++)
        turns_push(&t, mk("vip", (uint32_t)i));
    for (int i = 0; i < 3; i++)
        turns_push(&t, mk("x", (uint32_t)i));
    CHECK_DRAIN(&t, "vip0 vip1 vip2 x0 vip3 vip4 x1 x2");
    turns_free(&t);
}

static void removal(void)
{
    struct turns t;
    turns_init(&t, less, setpos, NULL, NULL);
    njobs = 0;
    struct job *a1 = mk("a", 1), *b1 = mk("b", 1), *a2 = mk("a", 2);
    turns_push(&t, a1);
    turns_push(&t, b1);
    turns_push(&t, a2);
    turns_remove(&t, b1); /* b empties: it leaves the ring */
    CHECK(b1->heap_pos == HEAP_NONE && turns_groups(&t) == 1 && t.len == 2);
    turns_remove(&t, a1); /* the top of the group whose turn it is */
    CHECK(turns_peek(&t) == a2);
    turns_remove(&t, a2);
    CHECK(turns_peek(&t) == NULL && t.len == 0);
    turns_remove(&t, a2); /* not in: nothing happens */
    turns_free(&t);
}

/* 20 small groups of 2 behind a big group of 20: every small job is out within 2 rounds. */
static void small_groups_not_starved(void)
{
    struct turns t;
    turns_init(&t, less, setpos, NULL, NULL);
    njobs = 0;
    static struct job big[200];
    for (int i = 0; i < 200; i++) {
        memset(&big[i], 0, sizeof big[i]);
        strcpy(big[i].jn.group, "big");
        big[i].seq = (uint64_t)i;
        big[i].heap_pos = HEAP_NONE;
        turns_push(&t, &big[i]);
    }
    char name[8];
    for (int g = 0; g < 20; g++) {
        snprintf(name, sizeof name, "s%d", g);
        turns_push(&t, mk(name, 0));
        turns_push(&t, mk(name, 1));
    }
    int popped = 0, small_left = 40;
    struct job *j;
    while (small_left && (j = turns_pop(&t))) {
        popped++;
        small_left -= j->jn.group[0] == 's';
    }
    CHECK(small_left == 0 && popped == 42); /* 2 rounds of 21 groups */
    turns_free(&t);
}

int main(void)
{
    no_groups_one_order();
    round_robin();
    joins_at_end_of_round();
    weighted();
    removal();
    small_groups_not_starved();
    return check_report("unit.turns");
}
