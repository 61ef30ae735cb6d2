#include "limit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster_time.h"
#include "config.h"
#include "daemon.h"
#include "job.h"
#include "log.h"
#include "metrics.h"
#include "queue.h"
#include "slotset.h"
#include "strhash.h"

/* A group's slots (group_concurrency), kept while the daemon knows of one held or waited. */
struct glimit {
    UT_hash_handle hh;
    struct slotset s;
    char group[LAYOUT_GROUP_MAX + 1];
};

struct limit {
    struct dqueue *q;
    void (*wake)(struct dqueue *q); /* a slot may be free: dispatch the queue soon */
    struct slotset all;       /* the queue's concurrency */
    struct glimit *groups;    /* by name */
    uint32_t gen;             /* session generation: slots of an older one died with it */
    int listing, watching;
    int64_t full_since;       /* cluster ms when due jobs began to wait for a slot, 0: none */
    struct limit_stats st;
};

static struct deferd *deferd_of(const struct limit *l) { return l->q->d; }

/* slots/c-<i> (GROUP NULL), slots/g-<i>-<group>, or the directory itself (I UINT32_MAX). */
static int slot_path(const struct limit *l, const char *group, uint32_t i, char *path)
{
    char name[LAYOUT_PATH_MAX];
    if (i != UINT32_MAX &&
        layout_slot_name(name, sizeof name,
                         group ? LAYOUT_SLOT_GROUP_CONCURRENCY : LAYOUT_SLOT_CONCURRENCY, i,
                         group) != 0)
        return -1;
    return layout_queue_path(path, LAYOUT_PATH_MAX, deferd_of(l)->cfg->zk_root, l->q->cfg->name,
                             LAYOUT_SLOTS, i == UINT32_MAX ? NULL : name);
}

static struct glimit *group_of(struct limit *l, const char *group, int make)
{
    struct glimit *g;
    HASH_FIND_STR(l->groups, group, g);
    if (!g && make && (g = calloc(1, sizeof *g))) {
        snprintf(g->group, sizeof g->group, "%s", group);
        HASH_ADD_STR(l->groups, group, g);
    }
    if (g && slotset_follow(&g->s, l->q->cfg->group_concurrency) != 0)
        return NULL;
    return g;
}

/* A group whose slots are all free again is forgotten: groups come and go by the thousand. */
static void group_tidy(struct limit *l, struct glimit *g)
{
    if (slotset_count(&g->s, SL_FREE) != g->s.cap)
        return;
    HASH_DEL(l->groups, g);
    slotset_free(&g->s);
    free(g);
}

struct limit *limit_new(struct dqueue *q, void (*wake)(struct dqueue *q))
{
    struct limit *l = calloc(1, sizeof *l);
    if (l) {
        l->q = q;
        l->wake = wake;
    }
    return l;
}

void limit_free(struct limit *l)
{
    if (!l)
        return;
    struct glimit *g, *tmp;
    HASH_ITER(hh, l->groups, g, tmp) {
        HASH_DEL(l->groups, g);
        slotset_free(&g->s);
        free(g);
    }
    slotset_free(&l->all);
    free(l);
}

static void on_dir_made(const struct zk_result *res, void *ctx)
{
    struct limit *l = ctx;
    if (res->rc != ZOK && res->rc != ZNODEEXISTS && res->rc != ZCLOSING)
        log_warn("queue %s: creating its slots directory failed: %s", l->q->cfg->name,
                 zk_strerror(res->rc));
    if (res->rc != ZCLOSING)
        l->wake(l->q);
}

static void make_dir(struct limit *l)
{
    char path[LAYOUT_PATH_MAX];
    if (slot_path(l, NULL, UINT32_MAX, path) == 0 &&
        zkstore_create(deferd_of(l)->zs, path, NULL, 0, 0, on_dir_made, l) == ZOK)
        return;
    log_warn("queue %s: cannot create its slots directory", l->q->cfg->name);
}

/* "c-<i>" or "g-<i>-<group>": the index, and *GROUP ("" for c-); -1 for another name
 * (a rate's slots among them). */
static long parse_slot(const char *name, const char **group)
{
    enum layout_slot_kind kind;
    long i = layout_parse_slot(name, &kind, group);
    if (i < 0 || i > QUEUE_CONCURRENCY_MAX ||
        (kind != LAYOUT_SLOT_CONCURRENCY && kind != LAYOUT_SLOT_GROUP_CONCURRENCY))
        return -1;
    return i;
}

/* Marks SEEN for one slot set: the names of GROUP ("" the queue's) in the listing. */
static void apply_one(struct slotset *s, const char *group, char **names, int n)
{
    unsigned char *seen = calloc(s->cap ? s->cap : 1, 1);
    if (!seen)
        return;
    for (int k = 0; k < n; k++) {
        const char *g;
        long i = parse_slot(names[k], &g);
        if (i >= 0 && (uint32_t)i < s->cap && strcmp(g, group) == 0)
            seen[i] = 1;
    }
    slotset_listed(s, seen);
    free(seen);
}

/* The listing is the truth for every slot not in one of our own transactions; groups this
 * daemon did not know of are learnt only when it has jobs of theirs (their first take). */
static void apply_listing(struct limit *l, char **names, int n)
{
    apply_one(&l->all, "", names, n);
    struct glimit *g, *tmp;
    HASH_ITER(hh, l->groups, g, tmp) {
        apply_one(&g->s, g->group, names, n);
    }
}

static int has_room(const struct limit *l);

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
    l->wake(l->q);
}

static void list_slots(struct limit *l)
{
    char path[LAYOUT_PATH_MAX];
    if (l->listing || l->watching || slot_path(l, NULL, UINT32_MAX, path) != 0)
        return;
    if (zkstore_children(deferd_of(l)->zs, path, 1, on_listed, l) == ZOK) {
        l->listing = 1;
        l->st.listings++;
    }
}

static int has_room(const struct limit *l) { return !l->all.max || l->all.nfree; }

enum limit_room limit_room(struct limit *l, const struct job *job)
{
    if (!l || slotset_follow(&l->all, l->q->cfg->concurrency) != 0)
        return LIMIT_ROOM;
    if (!has_room(l)) {
        list_slots(l);
        return LIMIT_QUEUE_FULL;
    }
    /* a group this daemon holds nothing of is guessed free: no record until it takes one */
    struct glimit *g = job->jn.group[0] && l->q->cfg->group_concurrency
                           ? group_of(l, job->jn.group, 0) : NULL;
    if (g && !g->s.nfree && job->gslot == LIMIT_NO_SLOT) {
        list_slots(l);
        return LIMIT_GROUP_FULL;
    }
    return LIMIT_ROOM;
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

static int current(const struct limit *l, const struct job *job)
{
    return l && job->slot_gen == l->gen;
}

/* One slot of S for JOB (*SLOT: kept from a lost answer, or picked), its create into OP. */
static int take_one(struct limit *l, struct slotset *s, const char *group, struct job *job,
                    int32_t *slot, struct zk_txn_op *op, char *path)
{
    if (*slot == LIMIT_NO_SLOT || !current(l, job) || (uint32_t)*slot >= s->cap) {
        int i = slotset_pick(s);
        if (i < 0)
            return -1;
        *slot = i;
    }
    if (slot_path(l, group, (uint32_t)*slot, path) != 0)
        return -1;
    slotset_set(s, (uint32_t)*slot, SL_TRYING);
    *op = (struct zk_txn_op){.kind = ZT_CREATE, .path = path, .data = job->id,
                             .len = strlen(job->id), .ephemeral = 1};
    return 0;
}

int limit_take(struct limit *l, struct job *job, struct zk_txn_op *ops,
               char (*paths)[LAYOUT_PATH_MAX])
{
    if (!l || slotset_follow(&l->all, l->q->cfg->concurrency) != 0)
        return 0;
    struct glimit *g = job->jn.group[0] && l->q->cfg->group_concurrency
                           ? group_of(l, job->jn.group, 1) : NULL;
    int n = 0, fresh = job->slot == LIMIT_NO_SLOT && job->gslot == LIMIT_NO_SLOT;
    if (l->all.max && take_one(l, &l->all, NULL, job, &job->slot, &ops[n], paths[n]) == 0)
        n++;
    else if (l->all.max)
        return -1;
    if (g && take_one(l, &g->s, g->group, job, &job->gslot, &ops[n], paths[n]) == 0) {
        n++;
    } else if (g) {
        if (job->slot != LIMIT_NO_SLOT) /* give the queue's slot back: not sent */
            slotset_set(&l->all, (uint32_t)job->slot, SL_FREE);
        job->slot = LIMIT_NO_SLOT;
        return -1;
    }
    job->slot_gen = l->gen;
    if (fresh && n)
        observe_wait(l, job);
    return n;
}

/* JOB's slot of S (*SLOT) is no longer in a transaction of ours: STATE says what it is. */
static void settle_one(struct limit *l, struct slotset *s, int32_t *slot, enum slot_state st)
{
    if (*slot != LIMIT_NO_SLOT && (uint32_t)*slot < s->cap)
        slotset_set(s, (uint32_t)*slot, st);
    if (st == SL_FREE || st == SL_TAKEN)
        *slot = LIMIT_NO_SLOT;
    if (st == SL_FREE)
        l->wake(l->q);
}

int limit_locked(struct limit *l, struct job *job, int rc, int failed_op, int first)
{
    if (!current(l, job) || (job->slot == LIMIT_NO_SLOT && job->gslot == LIMIT_NO_SLOT))
        return 0;
    struct glimit *g = job->gslot != LIMIT_NO_SLOT ? group_of(l, job->jn.group, 0) : NULL;
    struct slotset none = {0}, *gs = g ? &g->s : &none;
    if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT)
        return 0; /* unknown: the job keeps its slots and tries the same ones again */
    if (rc == ZOK) {
        settle_one(l, &l->all, &job->slot, SL_OURS);
        settle_one(l, gs, &job->gslot, SL_OURS);
        return 0;
    }
    /* the multi was rolled back: which slot failed, if one did */
    int which = failed_op - first, queue_first = job->slot != LIMIT_NO_SLOT;
    int bad_queue = which == 0 && queue_first, bad_group = which == queue_first;
    int refused = (bad_queue || bad_group) && rc == ZNODEEXISTS;
    l->st.conflicts += (uint64_t)refused;
    settle_one(l, &l->all, &job->slot, bad_queue && refused ? SL_TAKEN : SL_FREE);
    settle_one(l, gs, &job->gslot, bad_group && refused ? SL_TAKEN : SL_FREE);
    if ((bad_queue || bad_group) && rc == ZNONODE) {
        make_dir(l);
        return 1;
    }
    return refused;
}

int limit_release_ops(struct limit *l, struct job *job, struct zk_txn_op *ops,
                      char (*paths)[LAYOUT_PATH_MAX])
{
    if (!current(l, job)) {
        job->slot = job->gslot = LIMIT_NO_SLOT; /* an older session's slots went with it */
        return 0;
    }
    int n = 0;
    if (job->slot != LIMIT_NO_SLOT && slot_path(l, NULL, (uint32_t)job->slot, paths[n]) == 0) {
        ops[n] = (struct zk_txn_op){.kind = ZT_DELETE, .path = paths[n], .version = -1};
        n++;
    }
    if (job->gslot != LIMIT_NO_SLOT &&
        slot_path(l, job->jn.group, (uint32_t)job->gslot, paths[n]) == 0) {
        ops[n] = (struct zk_txn_op){.kind = ZT_DELETE, .path = paths[n], .version = -1};
        n++;
    }
    return n;
}

struct slot_delete {
    struct limit *l;
    uint32_t i, gen;
    int64_t session;
    char group[LAYOUT_GROUP_MAX + 1]; /* "" for the queue's slot */
    char path[LAYOUT_PATH_MAX];
};

static void slot_freed(struct limit *l, const char *group, uint32_t i, uint32_t gen)
{
    if (gen != l->gen)
        return;
    struct glimit *g = group[0] ? group_of(l, group, 0) : NULL;
    if (group[0] && !g)
        return;
    slotset_set(g ? &g->s : &l->all, i, SL_FREE);
    if (g)
        group_tidy(l, g);
    l->wake(l->q);
}

static void on_slot_deleted(const struct zk_result *res, void *ctx)
{
    struct slot_delete *sd = ctx;
    if (res->rc != ZOK && res->rc != ZNONODE && res->rc != ZCLOSING)
        log_warn("queue %s: deleting slot %s failed: %s; it stays taken until our session "
                 "ends", sd->l->q->cfg->name, sd->path, zk_strerror(res->rc));
    else if (res->rc != ZCLOSING)
        slot_freed(sd->l, sd->group, sd->i, sd->gen);
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
        slot_freed(sd->l, sd->group, sd->i, sd->gen); /* not ours (any more) */
    free(sd);
}

static void delete_guarded(struct limit *l, const struct job *job, const char *group,
                           uint32_t i)
{
    struct slot_delete *sd = calloc(1, sizeof *sd);
    if (!sd || slot_path(l, group[0] ? group : NULL, i, sd->path) != 0) {
        free(sd);
        return;
    }
    sd->l = l;
    sd->i = i;
    sd->gen = l->gen;
    sd->session = job->lock_session;
    snprintf(sd->group, sizeof sd->group, "%s", group);
    if (zkstore_exists(deferd_of(l)->zs, sd->path, 0, on_slot_checked, sd) != ZOK)
        free(sd);
}

void limit_released(struct limit *l, struct job *job, int applied)
{
    int32_t slot = job->slot, gslot = job->gslot;
    job->slot = job->gslot = LIMIT_NO_SLOT;
    if (!current(l, job))
        return;
    if (slot != LIMIT_NO_SLOT) {
        if (applied)
            slot_freed(l, "", (uint32_t)slot, l->gen);
        else
            delete_guarded(l, job, "", (uint32_t)slot);
    }
    if (gslot != LIMIT_NO_SLOT) {
        if (applied)
            slot_freed(l, job->jn.group, (uint32_t)gslot, l->gen);
        else
            delete_guarded(l, job, job->jn.group, (uint32_t)gslot);
    }
}

void limit_slot_missing(struct limit *l, struct job *job, int which)
{
    int queue = which == 0 && job->slot != LIMIT_NO_SLOT;
    int32_t *slot = queue ? &job->slot : &job->gslot;
    if (current(l, job) && *slot != LIMIT_NO_SLOT) {
        log_warn("queue %s: job %s: its slot %s%d was deleted by someone else", l->q->cfg->name,
                 job->id, queue ? "c-" : "g-", (int)*slot);
        slot_freed(l, queue ? "" : job->jn.group, (uint32_t)*slot, l->gen);
    }
    *slot = LIMIT_NO_SLOT;
}

void limit_watch_fired(struct limit *l)
{
    if (!l)
        return;
    l->watching = 0;
    if (l->st.waiting)
        list_slots(l);
}

void limit_session_lost(struct limit *l)
{
    if (!l)
        return;
    l->gen++;
    l->watching = 0; /* watches end with the session */
    slotset_reset(&l->all);
    struct glimit *g, *tmp;
    HASH_ITER(hh, l->groups, g, tmp) {
        slotset_reset(&g->s);
        group_tidy(l, g);
    }
}

static uint32_t held(const struct slotset *s)
{
    return s->cap - slotset_count(s, SL_FREE);
}

/* The busiest groups, most slots first, into TOP. */
static void top_groups(const struct limit *l, struct limit_group_stats *top)
{
    struct glimit *g, *tmp, *groups = l->groups;
    HASH_ITER(hh, groups, g, tmp) {
        uint32_t n = held(&g->s);
        for (int k = 0; n && k < LIMIT_TOP_GROUPS; k++) {
            if (n <= top[k].taken)
                continue;
            memmove(&top[k + 1], &top[k], (size_t)(LIMIT_TOP_GROUPS - 1 - k) * sizeof *top);
            top[k].taken = n;
            snprintf(top[k].group, sizeof top[k].group, "%s", g->group);
            break;
        }
    }
}

void limit_get_stats(const struct limit *l, struct limit_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!l)
        return;
    *out = l->st;
    memset(out->top, 0, sizeof out->top);
    out->max = l->q->cfg->concurrency;
    out->group_max = l->q->cfg->group_concurrency;
    out->taken = held(&l->all);
    out->ours = slotset_count(&l->all, SL_OURS) + slotset_count(&l->all, SL_TRYING);
    out->groups = 0;
    struct glimit *g, *tmp, *groups = l->groups;
    HASH_ITER(hh, groups, g, tmp) {
        out->ours += slotset_count(&g->s, SL_OURS) + slotset_count(&g->s, SL_TRYING);
        out->groups += held(&g->s) > 0;
    }
    top_groups(l, out->top);
}
