#include "flowcache.h"

#include <stdio.h>
#include <stdlib.h>

#include "strhash.h"

struct waiter {
    struct waiter *next;
    void (*done)(void *ctx);
    void *ctx;
};

struct flow_entry {
    UT_hash_handle hh;
    char uid[LAYOUT_UID_MAX + 1];
    int known;                 /* version and counts are right once what was sent applies */
    int reading;               /* a settle reads the flow: the others wait */
    int32_t version;
    struct layout_flow fl;
    unsigned in_flight;        /* settles sent with it, not answered yet */
    struct waiter *waiters, **tail;
};

struct flow_cache {
    struct flow_entry *by_uid;
};

struct flow_cache *flow_cache_new(void) { return calloc(1, sizeof(struct flow_cache)); }

static int idle(const struct flow_entry *e) { return !e->in_flight && !e->reading && !e->waiters; }

static void entry_drop(struct flow_cache *c, struct flow_entry *e)
{
    HASH_DEL(c->by_uid, e);
    while (e->waiters) {
        struct waiter *w = e->waiters;
        e->waiters = w->next;
        free(w);
    }
    free(e);
}

void flow_cache_free(struct flow_cache *c)
{
    struct flow_entry *e, *tmp;
    if (!c)
        return;
    HASH_ITER(hh, c->by_uid, e, tmp)
        entry_drop(c, e);
    free(c);
}

static struct flow_entry *entry_of(struct flow_cache *c, const char *uid, int make)
{
    struct flow_entry *e, *tmp;
    HASH_FIND_STR(c->by_uid, uid, e);
    if (e || !make)
        return e;
    if (HASH_COUNT(c->by_uid) >= FLOWCACHE_MAX) /* idle ones go: they read again */
        HASH_ITER(hh, c->by_uid, e, tmp)
            if (idle(e))
                entry_drop(c, e);
    if (!(e = calloc(1, sizeof *e)))
        return NULL;
    snprintf(e->uid, sizeof e->uid, "%s", uid);
    e->tail = &e->waiters;
    HASH_ADD_STR(c->by_uid, uid, e);
    return e;
}

/* One child more counted, as the settle just sent will leave it. */
static void move_on(struct flow_entry *e, int dead, unsigned added)
{
    e->version++;
    e->fl.pending = e->fl.pending - 1 + added;
    *(dead ? &e->fl.dead : &e->fl.acked) += 1;
    e->in_flight++;
}

int flowcache_take(struct flow_cache *c, const char *uid, int dead, unsigned added,
                   int32_t *version, struct layout_flow *fl)
{
    struct flow_entry *e = entry_of(c, uid, 0);
    if (!e || !e->known || e->reading || e->fl.pending + added <= 1)
        return 0;
    *version = e->version;
    *fl = e->fl;
    move_on(e, dead, added);
    return 1;
}

int flowcache_wait(struct flow_cache *c, const char *uid, void (*done)(void *ctx), void *ctx)
{
    struct flow_entry *e = entry_of(c, uid, 1);
    struct waiter *w;
    if (!e)
        return 0;
    if (!e->reading) {
        e->reading = 1;
        return 0;
    }
    if (!(w = calloc(1, sizeof *w)))
        return 0; /* reads too, then */
    *w = (struct waiter){NULL, done, ctx};
    *e->tail = w;
    e->tail = &w->next;
    return 1;
}

void flowcache_read_end(struct flow_cache *c, const char *uid, int known, int32_t version,
                        const struct layout_flow *fl, int dead, unsigned added)
{
    struct flow_entry *e = entry_of(c, uid, 0);
    if (!e)
        return;
    e->reading = 0;
    e->known = known;
    if (known) {
        e->version = version;
        e->fl = *fl;
        move_on(e, dead, added);
    }
    struct waiter *w = e->waiters; /* each may read, wait or drop again: detached first */
    e->waiters = NULL;
    e->tail = &e->waiters;
    if (!known && idle(e) && !w)
        entry_drop(c, e);
    while (w) {
        struct waiter *next = w->next;
        w->done(w->ctx);
        free(w);
        w = next;
    }
}

void flowcache_answered(struct flow_cache *c, const char *uid, int applied, int released)
{
    struct flow_entry *e = entry_of(c, uid, 0);
    if (!e)
        return;
    if (e->in_flight)
        e->in_flight--;
    if (!applied || released)
        e->known = 0; /* what was sent after it counted on it: they fail and read again */
    if ((released || !e->known) && idle(e))
        entry_drop(c, e);
}
