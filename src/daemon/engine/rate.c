#include "rate.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <zookeeper/zookeeper.h>

#include "cluster_time.h"
#include "config.h"
#include "daemon.h"
#include "job.h"
#include "log.h"
#include "queue.h"
#include "strhash.h"
#include "units.h"

#define READS_MAX 32      /* slot stats read at once */
#define SWEEP_READS_MAX 1024 /* group slots a sweep reads in one pass */

enum rslot_state {
    RS_UNKNOWN, /* not read yet, or changed by someone since */
    RS_READING, /* its exists() is on the way */
    RS_MISSING, /* no node: the next start creates it */
    RS_KNOWN,   /* version and mtime as last read or written */
};

struct rslot {
    unsigned char state, busy; /* busy: in one of our lock multis */
    int32_t version;
    int64_t mtime;             /* ms on ZooKeeper's clock (ours: an upper bound) */
    int64_t seen_at;           /* ms (cluster) when read or started by us */
};

/* One set of rate slots: the queue's (rate), or a group's (group_rate). A group's is freed
 * once nothing refers to it (no slot busy, no read or listing in flight) and every start
 * it knows is out of its window. */
struct rwin {
    UT_hash_handle hh;
    struct rate *r;
    struct rslot *slots;
    uint32_t cap, n, cursor, busy;
    int64_t window_ms;         /* as of the last follow_config */
    int next;                  /* the slot win_room found, or -1 */
    int reads;                 /* exists() in flight */
    int listing, listed;       /* the slots directory: being listed, listed once */
    int waiting;               /* the last win_room found none */
    uint64_t changes, seen;    /* slot changes so far; as of the last scan that found none */
    int64_t wake_at;           /* ms: that scan's first slot out of its window (arm) */
    int64_t until;             /* ms: the last known start comes out of its window */
    int64_t kept_at;           /* ms: tidy first kept it out of its window for answers, or 0 */
    int kept_said;             /* ... and said so, after KEPT_SAY_MS */
    struct event *timer;
    char group[LAYOUT_GROUP_MAX + 1]; /* "" the queue's */
};

struct rate {
    struct dqueue *q;
    void (*wake)(struct dqueue *q);
    struct rwin all;
    struct rwin *groups;       /* by name */
    struct event *tidy_timer;  /* forgets groups out of their window; sweeps */
    int64_t swept_at;          /* ms (cluster) of the last sweep, 0: none yet */
    int sweeping;              /* the sweep's listing and reads in flight */
    struct rate_stats st;
};

static int grouped(const struct rwin *w) { return w->group[0] != '\0'; }

static uint32_t win_limit(const struct rwin *w)
{
    return grouped(w) ? w->r->q->cfg->group_rate_n : w->r->q->cfg->rate_n;
}

static int64_t win_ms(const struct rwin *w)
{
    return (int64_t)(grouped(w) ? w->r->q->cfg->group_rate_window_ms
                                : w->r->q->cfg->rate_window_ms);
}

/* A group slot idle this long (its mtime) may be deleted by a sweep. */
static int64_t idle_ms(const struct rate *r)
{
    return (int64_t)r->q->cfg->group_rate_window_ms + RATE_IDLE_EXTRA_MS;
}

/* A slot's version may be used to start it only while the node cannot have been deleted and
 * made again since it was seen (a new node starts at version 0 again: the same version
 * would start it twice in a window): its known start is younger than a sweep's idle time
 * (with RATE_TRUST_MARGIN_MS for the clocks), or it was read just now. Groups only: the
 * queue's slots are never deleted. */
/* Left open: a sweep deleting a slot read just now (long idle) and another daemon making it
 * again, both between this daemon's read and its set (docs/limits.md). */
static int trusted(const struct rwin *w, const struct rslot *s, int64_t now)
{
    return !grouped(w) || s->mtime + idle_ms(w->r) - RATE_TRUST_MARGIN_MS > now ||
           s->seen_at + RATE_FRESH_MS > now;
}

struct rate *rate_new(struct dqueue *q, void (*wake)(struct dqueue *q))
{
    struct rate *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->q = q;
    r->wake = wake;
    r->all.r = r;
    r->all.next = -1;
    return r;
}

static void win_free(struct rwin *w)
{
    if (w->timer)
        event_free(w->timer);
    free(w->slots);
}

void rate_free(struct rate *r)
{
    if (!r)
        return;
    struct rwin *g, *tmp;
    HASH_ITER(hh, r->groups, g, tmp) {
        HASH_DEL(r->groups, g);
        win_free(g);
        free(g);
    }
    win_free(&r->all);
    if (r->tidy_timer)
        event_free(r->tidy_timer);
    free(r);
}

/* Slot I's node (I UINT32_MAX: the slots directory). */
static int slot_path(const struct rwin *w, uint32_t i, char *path)
{
    char name[LAYOUT_PATH_MAX];
    if (i != UINT32_MAX &&
        layout_slot_name(name, sizeof name, grouped(w) ? LAYOUT_SLOT_GROUP_RATE : LAYOUT_SLOT_RATE,
                         i, w->group) != 0)
        return -1;
    return layout_queue_path(path, LAYOUT_PATH_MAX, w->r->q->d->cfg->zk_root,
                             w->r->q->cfg->name, LAYOUT_SLOTS, i == UINT32_MAX ? NULL : name);
}

/* Follows a reload: more slots start unknown (a group's: never started, until ZooKeeper
 * says otherwise); fewer are no longer used. */
static int follow_config(struct rwin *w)
{
    uint32_t n = win_limit(w);
    if (n > w->cap) {
        struct rslot *s = realloc(w->slots, n * sizeof *s);
        if (!s)
            return -1;
        memset(s + w->cap, 0, (n - w->cap) * sizeof *s);
        for (uint32_t i = w->cap; grouped(w) && i < n; i++)
            s[i].state = RS_MISSING;
        w->slots = s;
        w->cap = n;
    }
    w->changes += w->n != n || w->window_ms != win_ms(w);
    w->n = n;
    w->window_ms = win_ms(w);
    if (w->cursor >= n)
        w->cursor = 0;
    return 0;
}

static void known(struct rwin *w, struct rslot *s, int32_t version, int64_t mtime)
{
    w->changes++;
    s->state = RS_KNOWN;
    s->version = version;
    s->mtime = mtime;
    s->seen_at = cluster_now_ms();
    if (mtime + win_ms(w) > w->until)
        w->until = mtime + win_ms(w);
}

struct slot_read {
    struct rwin *w;
    uint32_t i;
};

static void on_read(const struct zk_result *res, void *ctx)
{
    struct slot_read *sr = ctx;
    struct rwin *w = sr->w;
    struct rslot *s = sr->i < w->cap ? &w->slots[sr->i] : NULL;
    w->reads--;
    w->changes++;
    free(sr);
    if (res->rc == ZCLOSING || !s)
        return;
    if (res->rc == ZOK && res->has_stat) {
        known(w, s, res->stat.version, res->stat.mtime);
    } else if (res->rc == ZNONODE) {
        s->state = RS_MISSING;
    } else {
        s->state = RS_UNKNOWN;
        log_warn("queue %s: reading a rate slot failed: %s", w->r->q->cfg->name,
                 zk_strerror(res->rc));
        return; /* the next dispatch reads again */
    }
    w->r->wake(w->r->q);
}

/* Names not in the listing are slots never started: no need to read them one by one. */
static void on_listed(const struct zk_result *res, void *ctx)
{
    struct rwin *w = ctx;
    w->listing = 0;
    w->changes++;
    if (res->rc == ZCLOSING || (res->rc != ZOK && res->rc != ZNONODE))
        return; /* read one by one instead */
    w->listed = 1;
    unsigned char *seen = calloc(w->cap ? w->cap : 1, 1);
    if (!seen)
        return;
    for (int k = 0; res->rc == ZOK && k < res->nchildren; k++) {
        enum layout_slot_kind kind;
        const char *group;
        long i = layout_parse_slot(res->children[k], &kind, &group);
        if (i >= 0 && (uint32_t)i < w->cap && strcmp(group, w->group) == 0 &&
            kind == (grouped(w) ? LAYOUT_SLOT_GROUP_RATE : LAYOUT_SLOT_RATE))
            seen[i] = 1;
    }
    for (uint32_t i = 0; i < w->cap; i++)
        if (w->slots[i].state == RS_UNKNOWN && !seen[i])
            w->slots[i].state = RS_MISSING;
    free(seen);
    w->r->wake(w->r->q);
}

static void read_unknown(struct rwin *w)
{
    struct rate *r = w->r;
    char dir[LAYOUT_PATH_MAX];
    if (!w->listed && !grouped(w) && w->n > READS_MAX) { /* many unknown at first use */
        if (!w->listing && slot_path(w, UINT32_MAX, dir) == 0 &&
            zkstore_children(r->q->d->zs, dir, 0, on_listed, w) == ZOK) {
            w->listing = 1;
            r->st.reads++;
        }
        if (w->listing)
            return;
    }
    for (uint32_t i = 0; i < w->n && w->reads < READS_MAX; i++) {
        struct rslot *s = &w->slots[i];
        char path[LAYOUT_PATH_MAX];
        struct slot_read *sr;
        if (s->state != RS_UNKNOWN || s->busy || slot_path(w, i, path) != 0 ||
            !(sr = malloc(sizeof *sr)))
            continue;
        *sr = (struct slot_read){w, i};
        if (zkstore_exists(r->q->d->zs, path, 0, on_read, sr) != ZOK) {
            free(sr);
            return;
        }
        s->state = RS_READING;
        w->reads++;
        r->st.reads++;
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct rwin *w = arg;
    w->r->wake(w->r->q);
}

/* Every known slot is within its window: wake when the first comes out of it. */
static void arm(struct rwin *w, int64_t now)
{
    int64_t first = INT64_MAX;
    for (uint32_t i = 0; i < w->n; i++)
        if (w->slots[i].state == RS_KNOWN && !w->slots[i].busy &&
            w->slots[i].mtime + win_ms(w) < first)
            first = w->slots[i].mtime + win_ms(w);
    w->wake_at = first;
    if (first == INT64_MAX)
        return; /* reads or our own multis will wake it */
    if (!w->timer && !(w->timer = evtimer_new(w->r->q->d->base, on_timer, w)))
        return;
    struct timeval tv = units_ms_timeval(first > now ? first - now + 1 : 1);
    evtimer_add(w->timer, &tv);
}

static int startable(const struct rwin *w, const struct rslot *s, int64_t now)
{
    return !s->busy && (s->state == RS_MISSING ||
                        (s->state == RS_KNOWN && s->mtime + win_ms(w) <= now &&
                         trusted(w, s, now)));
}

/* Out of its window but known too long ago to trust: read it again (read_unknown). */
static void distrust(struct rwin *w, struct rslot *s, int64_t now)
{
    if (!s->busy && s->state == RS_KNOWN && s->mtime + win_ms(w) <= now && !trusted(w, s, now)) {
        s->state = RS_UNKNOWN;
        w->changes++;
    }
}

/* 1 when a slot of W may start now (W->next names it), else reads or a timer are set.
 * While none is and nothing changed since the last scan, no scan: a dispatch stays
 * O(1) with thousands of slots in their window. */
static int win_room(struct rwin *w, int64_t now, uint64_t *waits)
{
    if (w->waiting && w->seen == w->changes && now < w->wake_at) {
        /* libevent counts a timer from its loop's cached time, so it may fire before the
         * cluster clock reaches wake_at: without a timer again nothing would wake W */
        if (w->wake_at != INT64_MAX && !(w->timer && evtimer_pending(w->timer, NULL)))
            arm(w, now);
        return 0;
    }
    for (uint32_t k = 0; k < w->n; k++) {
        uint32_t i = (w->cursor + k) % w->n;
        if (startable(w, &w->slots[i], now)) {
            w->next = (int)i;
            w->waiting = 0;
            return 1;
        }
        distrust(w, &w->slots[i], now);
    }
    w->next = -1;
    *waits += !w->waiting;
    w->waiting = 1;
    read_unknown(w);
    w->seen = w->changes; /* after the reads it sent: their answers change it */
    arm(w, now);
    return 0;
}

static void tidy_later(struct rate *r, int64_t ms);

/* JOB's group's slots: NULL when no group_rate applies to it (or no memory: no limit). */
static struct rwin *group_win(struct rate *r, const struct job *job, int make)
{
    struct rwin *g;
    if (!job->jn.group[0])
        return NULL;
    HASH_FIND_STR(r->groups, job->jn.group, g);
    if (!g && make && r->q->cfg->group_rate_n && (g = calloc(1, sizeof *g))) {
        g->r = r;
        g->next = -1;
        snprintf(g->group, sizeof g->group, "%s", job->jn.group);
        HASH_ADD_STR(r->groups, group, g);
        /* forgotten like the others, also if it never starts here (its jobs taken by
         * another daemon): the tidy timer may be set for the next sweep only */
        tidy_later(r, 1000);
    }
    if (g && make && follow_config(g) != 0)
        return NULL;
    return g && g->n ? g : NULL;
}

enum limit_room rate_room(struct rate *r, const struct job *job)
{
    if (!r || follow_config(&r->all) != 0)
        return LIMIT_ROOM;
    int64_t now = cluster_now_ms(); /* ZooKeeper's clock reads this or later */
    if (r->all.n && !win_room(&r->all, now, &r->st.waits))
        return LIMIT_QUEUE_FULL;
    struct rwin *g = group_win(r, job, 1);
    if (r->q->cfg->group_rate_n && !r->swept_at)
        tidy_later(r, 1000); /* the first sweep */
    if (g && !win_room(g, now, &r->st.group_waits))
        return LIMIT_GROUP_FULL;
    return LIMIT_ROOM;
}

/* W's slot for JOB's multi into OP (PATH: its buffer), its index into *SLOT; -1: none. */
static int win_take(struct rwin *w, const struct job *job, struct zk_txn_op *op, char *path,
                    int32_t *slot)
{
    int64_t now = cluster_now_ms();
    uint64_t waits = 0;
    if (w->next < 0 || (uint32_t)w->next >= w->n || !startable(w, &w->slots[w->next], now)) {
        if (!win_room(w, now, &waits))
            return -1;
    }
    uint32_t i = (uint32_t)w->next;
    struct rslot *s = &w->slots[i];
    if (slot_path(w, i, path) != 0)
        return -1;
    w->next = -1;
    w->cursor = (i + 1) % w->n;
    s->busy = 1;
    w->busy++;
    *slot = (int32_t)i;
    if (s->state == RS_MISSING)
        *op = (struct zk_txn_op){.kind = ZT_CREATE, .path = path, .data = job->id,
                                 .len = strlen(job->id)};
    else
        *op = (struct zk_txn_op){.kind = ZT_SET, .path = path, .data = job->id,
                                 .len = strlen(job->id), .version = s->version};
    return 0;
}

static void win_untake(struct rwin *w, int32_t *slot)
{
    if (*slot != RATE_NO_SLOT && (uint32_t)*slot < w->cap) {
        w->slots[*slot].busy = 0;
        w->busy--;
        w->changes++;
    }
    *slot = RATE_NO_SLOT;
}

int rate_take(struct rate *r, struct job *job, struct zk_txn_op *ops,
              char (*paths)[LAYOUT_PATH_MAX])
{
    int n = 0;
    if (!r)
        return 0;
    if (follow_config(&r->all) == 0 && r->all.n) {
        if (win_take(&r->all, job, &ops[n], paths[n], &job->rslot) != 0)
            return -1;
        n++;
    }
    struct rwin *g = group_win(r, job, 1);
    if (g) {
        if (win_take(g, job, &ops[n], paths[n], &job->grslot) != 0) {
            win_untake(&r->all, &job->rslot);
            return -1;
        }
        n++;
    }
    return n;
}

int rate_ops(const struct job *job)
{
    return (job->rslot != RATE_NO_SLOT) + (job->grslot != RATE_NO_SLOT);
}

static void on_dir_made(const struct zk_result *res, void *ctx)
{
    struct rate *r = ctx;
    if (res->rc != ZCLOSING)
        r->wake(r->q);
}

/* The answer for W's slot *SLOT, operation OP of the multi: 1 when only it refused. */
static int win_locked(struct rwin *w, int32_t *slot, int rc, int failed_op, int op)
{
    struct rate *r = w->r;
    if ((uint32_t)*slot >= w->cap) {
        *slot = RATE_NO_SLOT;
        return 0;
    }
    struct rslot *s = &w->slots[*slot];
    win_untake(w, slot);
    if (rc == ZOK) { /* started now: its mtime is at most the cluster clock's upper bound */
        known(w, s, s->state == RS_MISSING ? 0 : s->version + 1, cluster_latest_ms());
        if (grouped(w))
            tidy_later(r, win_ms(w));
        return 0;
    }
    if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT) {
        s->state = RS_UNKNOWN; /* it may have started */
        return 0;
    }
    if (failed_op != op)
        return 0; /* rolled back: the slot is as it was */
    char dir[LAYOUT_PATH_MAX];
    if (rc == ZNONODE && s->state == RS_MISSING && slot_path(w, UINT32_MAX, dir) == 0 &&
        zkstore_create(r->q->d->zs, dir, NULL, 0, 0, on_dir_made, r) == ZOK)
        return 1; /* the directory is missing: made, then the job tries again */
    *(grouped(w) ? &r->st.group_conflicts : &r->st.conflicts) +=
        rc == ZBADVERSION || rc == ZNODEEXISTS;
    s->state = RS_UNKNOWN; /* started by another daemon (or deleted): read it again */
    return 1;
}

int rate_locked(struct rate *r, struct job *job, int rc, int failed_op, int first)
{
    int refused = 0, op = first;
    if (!r) {
        job->rslot = job->grslot = RATE_NO_SLOT;
        return 0;
    }
    if (job->rslot != RATE_NO_SLOT)
        refused |= win_locked(&r->all, &job->rslot, rc, failed_op, op++);
    if (job->grslot != RATE_NO_SLOT) {
        struct rwin *g;
        HASH_FIND_STR(r->groups, job->jn.group, g); /* kept while its slot is busy */
        if (g)
            refused |= win_locked(g, &job->grslot, rc, failed_op, op);
        job->grslot = RATE_NO_SLOT;
    }
    return refused;
}

/* ---- groups forgotten, their slot nodes deleted ---- */

static void on_slot_deleted(const struct zk_result *res, void *ctx)
{
    struct rate *r = ctx;
    if (res->rc == ZOK)
        r->st.swept++;
    else if (res->rc != ZNONODE && res->rc != ZBADVERSION && res->rc != ZCLOSING)
        log_warn("queue %s: deleting a group's rate slot failed: %s", r->q->cfg->name,
                 zk_strerror(res->rc)); /* the next sweep tries again */
}

/* A group kept long past its window is held by an answer not in yet: said once, so that one
 * that never comes shows in the log. */
#define KEPT_SAY_MS 10000

static void say_kept(struct rwin *g, int64_t now)
{
    if (g->until > now) {
        g->kept_at = 0;
        return;
    }
    if (!g->kept_at)
        g->kept_at = now;
    if (g->kept_said || now - g->kept_at < KEPT_SAY_MS)
        return;
    g->kept_said = 1;
    log_warn("queue %s: group %s kept %lld ms out of its rate window for answers not in: %u "
             "of its slots in a lock multi, %d read(s) in flight, %s", g->r->q->cfg->name,
             g->group, (long long)(now - g->kept_at), g->busy, g->reads,
             g->listing ? "its slots' listing in flight" : "no listing");
}

static void tidy(struct rate *r, int64_t now)
{
    struct rwin *g, *tmp;
    int waited = 0;
    HASH_ITER(hh, r->groups, g, tmp) {
        if (g->busy || g->reads || g->listing || g->until > now) {
            say_kept(g, now);
            continue;
        }
        waited |= g->waiting;
        HASH_DEL(r->groups, g); /* its nodes stay: another daemon may know them (sweep) */
        win_free(g);            /* and its timer with it */
        free(g);
    }
    if (waited) /* the group's jobs waited for that timer: they try again now */
        r->wake(r->q);
}

static void sweep(struct rate *r);
static void on_tidy_timer(evutil_socket_t fd, short what, void *arg);

void rate_tidy(struct rate *r)
{
    int64_t now = cluster_now_ms();
    tidy(r, now);
    if (r->q->cfg->group_rate_n && !r->sweeping &&
        (!r->swept_at || now - r->swept_at >= RATE_SWEEP_MS)) {
        r->swept_at = now;
        sweep(r);
    }
    if (r->groups || r->q->cfg->group_rate_n)
        tidy_later(r, r->groups ? 1000 : RATE_SWEEP_MS);
}

static void on_tidy_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rate_tidy(arg);
}

/* In MS (at least a second), or sooner if already set for later. */
static void tidy_later(struct rate *r, int64_t ms)
{
    struct timeval at, now, tv = units_ms_timeval(ms < 1000 ? 1000 : ms);
    if (!r->tidy_timer && !(r->tidy_timer = evtimer_new(r->q->d->base, on_tidy_timer, r)))
        return;
    if (evtimer_pending(r->tidy_timer, &at) && event_base_gettimeofday_cached(r->q->d->base,
                                                                              &now) == 0) {
        struct timeval want;
        evutil_timeradd(&now, &tv, &want);
        if (!evutil_timercmp(&want, &at, <))
            return;
    }
    evtimer_add(r->tidy_timer, &tv);
}

struct sweep_read {
    struct rate *r;
    char group[LAYOUT_GROUP_MAX + 1];
    char path[LAYOUT_PATH_MAX];
};

/* A group slot no daemon forgot: deleted once out of its window, if no daemon keeps its
 * group here (one that does deletes it itself). */
static void on_sweep_read(const struct zk_result *res, void *ctx)
{
    struct sweep_read *sr = ctx;
    struct rate *r = sr->r;
    struct rwin *g;
    r->sweeping--;
    HASH_FIND_STR(r->groups, sr->group, g);
    if (res->rc == ZOK && res->has_stat && !g && res->stat.mtime + idle_ms(r) <= cluster_now_ms())
        zkstore_delete(r->q->d->zs, sr->path, res->stat.version, on_slot_deleted, r);
    free(sr);
}

static void on_sweep_listed(const struct zk_result *res, void *ctx)
{
    struct rate *r = ctx;
    r->sweeping--;
    /* A pass reads at most SWEEP_READS_MAX: each starts at a random place in the listing,
     * so that over passes (and daemons) every node is looked at, however many there are. */
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
        rnd = (uint32_t)cluster_now_ms(); /* any start will do */
    int from = res->rc == ZOK && res->nchildren > 0 ? (int)(rnd % (uint32_t)res->nchildren) : 0;
    for (int j = 0; res->rc == ZOK && j < res->nchildren && r->sweeping < SWEEP_READS_MAX; j++) {
        int k = (from + j) % res->nchildren;
        enum layout_slot_kind kind;
        const char *group;
        struct rwin *g;
        struct sweep_read *sr;
        if (layout_parse_slot(res->children[k], &kind, &group) < 0 ||
            kind != LAYOUT_SLOT_GROUP_RATE || strlen(group) > LAYOUT_GROUP_MAX)
            continue;
        HASH_FIND_STR(r->groups, group, g);
        if (g || !(sr = calloc(1, sizeof *sr)))
            continue;
        sr->r = r;
        snprintf(sr->group, sizeof sr->group, "%s", group);
        if (layout_queue_path(sr->path, sizeof sr->path, r->q->d->cfg->zk_root, r->q->cfg->name,
                              LAYOUT_SLOTS, res->children[k]) != 0 ||
            zkstore_exists(r->q->d->zs, sr->path, 0, on_sweep_read, sr) != ZOK) {
            free(sr);
            continue;
        }
        r->sweeping++;
    }
}

static void sweep(struct rate *r)
{
    char dir[LAYOUT_PATH_MAX];
    if (slot_path(&r->all, UINT32_MAX, dir) == 0 &&
        zkstore_children(r->q->d->zs, dir, 0, on_sweep_listed, r) == ZOK)
        r->sweeping++;
}

void rate_get_stats(const struct rate *r, struct rate_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    *out = r->st;
    out->n = r->q->cfg->rate_n;
    out->window_ms = r->q->cfg->rate_window_ms;
    out->group_n = r->q->cfg->group_rate_n;
    out->group_window_ms = r->q->cfg->group_rate_window_ms;
    out->groups = HASH_COUNT(r->groups);
    int64_t now = cluster_now_ms();
    out->started = 0;
    for (uint32_t i = 0; i < r->all.n; i++)
        out->started += r->all.slots[i].state == RS_KNOWN &&
                        r->all.slots[i].mtime + (int64_t)out->window_ms > now;
}
