#include "limit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "dispatcher_jobs.h"
#include "job.h"
#include "layout.h"
#include "cluster_time.h"
#include "log.h"
#include "metrics.h"
#include "queue.h"

/* What this daemon believes of each slot. */
enum slot_state {
    SL_FREE,   /* no node, as far as we know: the next lock may try it */
    SL_TRYING, /* in one of our lock multis */
    SL_OURS,   /* created by our lock, deleted by its settle or release */
    SL_TAKEN,  /* another daemon's (seen, or its create failed with NodeExists) */
};

struct limit {
    struct dqueue *q;
    unsigned char *state; /* enum slot_state per slot, CAP of them */
    uint32_t cap;         /* slots known: the largest concurrency seen */
    uint32_t max;         /* the queue's concurrency when last looked at */
    uint32_t nfree;       /* SL_FREE among the first MAX */
    uint32_t cursor;      /* where the next search for a free slot starts */
    uint32_t gen;         /* session generation: slots of an older one died with it */
    int listing, watching;
    int64_t full_since;   /* cluster ms when due jobs began to wait for a slot, 0: none */
    struct limit_stats st;
};

static struct deferd *deferd_of(const struct limit *l) { return dispatcher_deferd(l->q->ds); }

static int slot_path(const struct limit *l, uint32_t i, char *path)
{
    char name[16];
    snprintf(name, sizeof name, "c-%u", (unsigned)i);
    return layout_queue_path(path, LAYOUT_PATH_MAX, deferd_of(l)->cfg->zk_root, l->q->cfg->name,
                             LAYOUT_SLOTS, i == UINT32_MAX ? NULL : name);
}

static void set_state(struct limit *l, uint32_t i, enum slot_state s)
{
    if (i >= l->cap)
        return;
    if (i < l->max)
        l->nfree += (s == SL_FREE) - (l->state[i] == SL_FREE);
    l->state[i] = (unsigned char)s;
}

/* Follows a reload of concurrency: more slots start free; fewer leave the ones above the
 * new limit to their holders, never offered again. */
static int follow_config(struct limit *l)
{
    uint32_t want = l->q->cfg->concurrency;
    if (want == l->max)
        return 0;
    if (want > l->cap) {
        unsigned char *s = realloc(l->state, want);
        if (!s)
            return -1;
        memset(s + l->cap, SL_FREE, want - l->cap);
        l->state = s;
        l->cap = want;
    }
    l->max = want;
    l->nfree = 0;
    for (uint32_t i = 0; i < want; i++)
        l->nfree += l->state[i] == SL_FREE;
    l->cursor = 0;
    return 0;
}

struct limit *limit_new(struct dqueue *q)
{
    struct limit *l = calloc(1, sizeof *l);
    if (l)
        l->q = q;
    return l;
}

void limit_free(struct limit *l)
{
    if (!l)
        return;
    free(l->state);
    free(l);
}

static void list_slots(struct limit *l);

static void on_dir_made(const struct zk_result *res, void *ctx)
{
    struct limit *l = ctx;
    if (res->rc != ZOK && res->rc != ZNODEEXISTS && res->rc != ZCLOSING)
        log_warn("queue %s: creating its slots directory failed: %s", l->q->cfg->name,
                 zk_strerror(res->rc));
    if (res->rc != ZCLOSING)
        dispatcher_kick_soon(l->q->ds, l->q);
}

static void make_dir(struct limit *l)
{
    char path[LAYOUT_PATH_MAX];
    if (slot_path(l, UINT32_MAX, path) == 0 &&
        zkstore_create(deferd_of(l)->zs, path, NULL, 0, 0, on_dir_made, l) == ZOK)
        return;
    log_warn("queue %s: cannot create its slots directory", l->q->cfg->name);
}

/* The listing is the truth for every slot not in one of our own transactions. */
static void apply_listing(struct limit *l, char **names, int n)
{
    unsigned char *seen = calloc(l->cap ? l->cap : 1, 1);
    if (!seen)
        return;
    for (int k = 0; k < n; k++) {
        char *end;
        if (strncmp(names[k], "c-", 2) != 0)
            continue; /* not a slot */
        unsigned long i = strtoul(names[k] + 2, &end, 10);
        if (!*end && end != names[k] + 2 && i < l->cap)
            seen[i] = 1;
    }
    for (uint32_t i = 0; i < l->cap; i++)
        if (l->state[i] == SL_FREE || l->state[i] == SL_TAKEN)
            set_state(l, i, seen[i] ? SL_TAKEN : SL_FREE);
    free(seen);
}

static void on_listed(const struct zk_result *res, void *ctx)
{
    struct limit *l = ctx;
    l->listing = 0;
    if (res->rc == ZCLOSING)
        return;
    if (res->rc == ZOK) {
        l->watching = 1;
        apply_listing(l, res->children, res->nchildren);
    } else if (res->rc == ZNONODE) { /* no slot was ever taken */
        apply_listing(l, NULL, 0);
        make_dir(l);
    } else {
        log_warn("queue %s: listing its slots failed: %s", l->q->cfg->name,
                 zk_strerror(res->rc));
        return; /* the next dispatch that finds no room lists again */
    }
    if (l->nfree)
        dispatcher_kick_soon(l->q->ds, l->q);
}

static void list_slots(struct limit *l)
{
    char path[LAYOUT_PATH_MAX];
    if (l->listing || slot_path(l, UINT32_MAX, path) != 0)
        return;
    if (zkstore_children(deferd_of(l)->zs, path, 1, on_listed, l) == ZOK) {
        l->listing = 1;
        l->st.listings++;
    }
}

int limit_room(struct limit *l)
{
    if (!l || follow_config(l) != 0 || !l->max || l->nfree)
        return 1;
    if (!l->watching)
        list_slots(l);
    return 0;
}

void limit_set_waiting(struct limit *l, size_t waiting)
{
    if (!l)
        return;
    if (!l->st.waiting && waiting) {
        l->st.waits++;
        l->full_since = cluster_now_ms();
    }
    if (!waiting)
        l->full_since = 0;
    l->st.waiting = waiting;
}

/* A job locked while others waited: from its due time, or from when the wait began. */
static void observe_wait(struct limit *l, const struct job *job)
{
    if (!l->full_since)
        return;
    int64_t now = cluster_now_ms(), due = (int64_t)job->jn.due_ms;
    int64_t from = due > l->full_since ? due : l->full_since;
    if (from < now)
        metrics_limit_wait(deferd_of(l)->metrics, l->q->cfg, now - from);
}

int limit_take(struct limit *l, struct job *job, struct zk_txn_op *op, char *path)
{
    if (!l || follow_config(l) != 0 || !l->max)
        return 1;
    uint32_t i = (uint32_t)job->slot;
    if (job->slot == LIMIT_NO_SLOT || job->slot_gen != l->gen || i >= l->cap) {
        if (!l->nfree)
            return -1;
        for (i = l->cursor; l->state[i % l->max] != SL_FREE; i++)
            ;
        i %= l->max;
        l->cursor = (i + 1) % l->max;
        observe_wait(l, job);
    }
    if (slot_path(l, i, path) != 0)
        return -1;
    set_state(l, i, SL_TRYING);
    job->slot = (int32_t)i;
    job->slot_gen = l->gen;
    *op = (struct zk_txn_op){.kind = ZT_CREATE, .path = path, .data = job->id,
                             .len = strlen(job->id), .ephemeral = 1};
    return 0;
}

static int slot_current(const struct limit *l, const struct job *job)
{
    return l && job->slot != LIMIT_NO_SLOT && job->slot_gen == l->gen &&
           (uint32_t)job->slot < l->cap;
}

int limit_locked(struct limit *l, struct job *job, int rc, int failed_op, int slot_op)
{
    if (!slot_current(l, job))
        return 0;
    uint32_t i = (uint32_t)job->slot;
    if (rc == ZOK) {
        set_state(l, i, SL_OURS);
        return 0;
    }
    if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT)
        return 0; /* unknown: the job keeps the slot and tries the same one again */
    job->slot = LIMIT_NO_SLOT;
    if (failed_op == slot_op && rc == ZNODEEXISTS) {
        l->st.conflicts++;
        set_state(l, i, SL_TAKEN);
        return 1;
    }
    set_state(l, i, SL_FREE); /* the multi was rolled back */
    if (failed_op == slot_op && rc == ZNONODE) {
        make_dir(l);
        return 1;
    }
    return 0;
}

int limit_release_op(struct limit *l, struct job *job, struct zk_txn_op *op, char *path)
{
    if (!slot_current(l, job)) {
        job->slot = LIMIT_NO_SLOT; /* an older session's slot went with it */
        return 0;
    }
    if (slot_path(l, (uint32_t)job->slot, path) != 0)
        return 0;
    *op = (struct zk_txn_op){.kind = ZT_DELETE, .path = path, .version = -1};
    return 1;
}

struct slot_delete {
    struct limit *l;
    uint32_t i, gen;
    int64_t session;
    char path[LAYOUT_PATH_MAX];
};

static void slot_freed(struct limit *l, uint32_t i, uint32_t gen)
{
    if (gen != l->gen || i >= l->cap)
        return;
    set_state(l, i, SL_FREE);
    dispatcher_kick_soon(l->q->ds, l->q);
}

static void on_slot_deleted(const struct zk_result *res, void *ctx)
{
    struct slot_delete *sd = ctx;
    if (res->rc != ZOK && res->rc != ZNONODE && res->rc != ZCLOSING)
        log_warn("queue %s: deleting slot %s failed: %s; it stays taken until our session "
                 "ends", sd->l->q->cfg->name, sd->path, zk_strerror(res->rc));
    else if (res->rc != ZCLOSING)
        slot_freed(sd->l, sd->i, sd->gen);
    free(sd);
}

/* Deleted only if the node is still our session's: a release whose answer was lost may
 * have deleted it already, and another daemon may have taken the name since. */
static void on_slot_checked(const struct zk_result *res, void *ctx)
{
    struct slot_delete *sd = ctx;
    if (res->rc == ZOK && res->has_stat && res->stat.ephemeralOwner == sd->session &&
        zkstore_delete(deferd_of(sd->l)->zs, sd->path, res->stat.version, on_slot_deleted,
                       sd) == ZOK)
        return;
    if (res->rc == ZOK || res->rc == ZNONODE)
        slot_freed(sd->l, sd->i, sd->gen); /* not ours (any more) */
    free(sd);
}

void limit_released(struct limit *l, struct job *job, int applied)
{
    if (!slot_current(l, job)) {
        job->slot = LIMIT_NO_SLOT;
        return;
    }
    uint32_t i = (uint32_t)job->slot;
    job->slot = LIMIT_NO_SLOT;
    if (applied) {
        slot_freed(l, i, l->gen);
        return;
    }
    struct slot_delete *sd = calloc(1, sizeof *sd);
    if (!sd || slot_path(l, i, sd->path) != 0) {
        free(sd);
        return;
    }
    *sd = (struct slot_delete){.l = l, .i = i, .gen = l->gen, .session = job->lock_session};
    slot_path(l, i, sd->path);
    if (zkstore_exists(deferd_of(l)->zs, sd->path, 0, on_slot_checked, sd) != ZOK)
        free(sd);
}

void limit_slot_missing(struct limit *l, struct job *job)
{
    if (slot_current(l, job)) {
        log_warn("queue %s: job %s: its slot c-%d was deleted by someone else", l->q->cfg->name,
                 job->id, (int)job->slot);
        slot_freed(l, (uint32_t)job->slot, l->gen);
    }
    job->slot = LIMIT_NO_SLOT;
}

void limit_watch_fired(struct limit *l)
{
    if (!l)
        return;
    l->watching = 0;
    if (l->st.waiting && l->max)
        list_slots(l);
}

void limit_session_lost(struct limit *l)
{
    if (!l)
        return;
    l->gen++;
    l->watching = 0; /* watches end with the session */
    for (uint32_t i = 0; i < l->cap; i++)
        set_state(l, i, SL_FREE);
}

void limit_get_stats(const struct limit *l, struct limit_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!l)
        return;
    *out = l->st;
    out->max = l->q->cfg->concurrency;
    out->taken = 0;
    for (uint32_t i = 0; i < l->cap; i++) {
        out->ours += l->state[i] == SL_OURS || l->state[i] == SL_TRYING;
        out->taken += l->state[i] != SL_FREE;
    }
}
