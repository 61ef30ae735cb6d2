#include "mirror.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "heap.h"
#include "layout.h"
#include "log.h"
#include "queue.h"
#include "cluster_time.h"
#include "strhash.h"
#include "units.h"
#include "zkstore.h"

/* A queue whose mirror holds this many jobs lists no new bucket until some are gone: a
 * daemon that comes back to a million overdue jobs takes them oldest bucket first, in
 * bounded memory. Buckets it already follows are still re-listed. */
#define MIRRORED_MAX 50000
#define FULL_RETRY_MS 100
#define GC_GRACE_MS 2000 /* an empty bucket this far in the past is deleted */
/* ...unless it was made this recently: an overdue put (at= in the past, or one that waited
 * in a backlog) recreates its bucket and would otherwise lose a race with us every time. */
#define GC_FRESH_MS 30000
/* A busy bucket is re-listed at most every RELIST_MIN_MS plus 1 ms per RELIST_NAMES_PER_MS
 * names it held (plus more while it is not due yet): every change fires its watch, and a
 * re-list per change would cost O(bucket) each time (Curator's quadratic trap). Jobs this daemon writes are entered
 * directly and deletions show when a lock fails, so only other writers' new jobs wait. */
#define RELIST_MIN_MS 20
#define RELIST_NAMES_PER_MS 20
#define RELIST_MAX_AHEAD_MS 1000 /* and a quarter of the time until it is due, up to this */
/* ...and no sooner than this before it is due: its jobs are needed only then (a lock is
 * taken at most PRELOCK_MS ahead), and every re-list before that costs ZooKeeper the whole
 * bucket again, mostly for the jobs this daemon is putting into it (S4 in performance.md) */
#define RELIST_LEAD_MS 250

/* A bucket directory (or the queue's jobs/ directory at level 0, or at level 4 a shard
 * of a 100 ms bucket, which covers the same time). */
#define SHARD_LEVEL (LAYOUT_DEPTH + 1)

struct dir {
    UT_hash_handle hh;          /* mirror->dirs, key: path */
    char *path;
    int level;
    uint64_t value;
    int form;                   /* of its path's bucket names: enum layout_form */
    int64_t start_ms, end_ms;   /* due times it may hold */
    struct mirror *m;
    struct dqueue *q;
    struct dir *parent, *kids, *next, *prev;
    struct mirror_entry *jobs;  /* level 3 only */
    unsigned gen;
    int listing, dirty, removed, loaded;
    int names;                  /* in the last listing */
    /* The last listing's child version, and this daemon's creates entered into the leaf
     * since (mirror_job_created): a listing whose version moved by exactly those saw no
     * other change, and is not walked name by name again (listing_skip). */
    int cversion_known;
    int32_t cversion;
    uint32_t own_creates;
    int64_t listed_at;          /* wall ms of the last listing request */
    int64_t load_at;            /* wall ms, key of the relists heap */
    size_t relist_pos;
};

struct foreign {                /* names we refuse, logged once each */
    UT_hash_handle hh;
    char *path;
};

struct mirror {
    struct deferd *d;
    const struct mirror_report *report;
    struct dir *dirs;
    struct heap relists;        /* dirs waiting to be (re)listed, by load_at */
    struct foreign *foreign;
    size_t listing_max;         /* bytes of the largest listing so far, as on the wire */
    unsigned long long listings, listed_names;
    unsigned long long listings_unchanged; /* not walked: listing_unchanged */
};

static void load(struct mirror *m, struct dir *dir);
static void relist(struct mirror *m, struct dir *dir);

static int relist_less(const void *a, const void *b)
{
    return ((const struct dir *)a)->load_at < ((const struct dir *)b)->load_at;
}

static void relist_setpos(void *item, size_t pos) { ((struct dir *)item)->relist_pos = pos; }

static void defer_load(struct mirror *m, struct dir *dir, int64_t at)
{
    if (dir->relist_pos != HEAP_NONE)
        heap_remove(&m->relists, dir->relist_pos);
    dir->load_at = at;
    if (heap_push(&m->relists, dir) == 0)
        m->report->rearm(m->report->ctx);
}

static void note_foreign(struct mirror *m, const char *path, const char *why)
{
    struct foreign *f;
    HASH_FIND_STR(m->foreign, path, f);
    if (f || !(f = calloc(1, sizeof *f)))
        return;
    if (!(f->path = strdup(path))) {
        free(f);
        return;
    }
    HASH_ADD_KEYPTR(hh, m->foreign, f->path, strlen(f->path), f);
    log_warn("ignoring znode %s: %s (never delivered, never deleted)", path, why);
}

static struct dir *dir_new(struct mirror *m, struct dqueue *q, struct dir *parent,
                           const char *path, int level, uint64_t value, int form)
{
    struct dir *dir = calloc(1, sizeof *dir);
    if (!dir || !(dir->path = strdup(path))) {
        free(dir);
        return NULL;
    }
    dir->m = m;
    dir->q = q;
    dir->level = level;
    dir->value = value;
    dir->form = form;
    dir->relist_pos = HEAP_NONE;
    dir->parent = parent;
    if (level == 0) {
        dir->start_ms = 0;
        dir->end_ms = INT64_MAX;
    } else if (level == SHARD_LEVEL) {
        dir->start_ms = parent->start_ms;
        dir->end_ms = parent->end_ms;
    } else {
        dir->start_ms = (int64_t)(value * layout_bucket_width[level]);
        dir->end_ms = dir->start_ms + (int64_t)layout_bucket_width[level];
    }
    if (parent) {
        dir->next = parent->kids;
        if (parent->kids)
            parent->kids->prev = dir;
        parent->kids = dir;
    }
    HASH_ADD_KEYPTR(hh, m->dirs, dir->path, strlen(dir->path), dir);
    return dir;
}

static void dir_unlink(struct dir *dir)
{
    if (!dir->parent)
        return;
    if (dir->prev)
        dir->prev->next = dir->next;
    else
        dir->parent->kids = dir->next;
    if (dir->next)
        dir->next->prev = dir->prev;
    dir->parent = dir->next = dir->prev = NULL;
}

void mirror_entry_unlink(struct mirror_entry *e)
{
    struct dir *leaf = e->leaf;
    if (!leaf)
        return;
    if (e->prev)
        e->prev->next = e->next;
    else
        leaf->jobs = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->leaf = NULL;
    leaf->q->mirrored--;
    e->next = e->prev = NULL;
}

/* The bucket is gone from ZooKeeper: forget it, its sub-buckets and its idle jobs. */
static void dir_remove(struct mirror *m, struct dir *dir)
{
    while (dir->kids)
        dir_remove(m, dir->kids);
    while (dir->jobs) {
        struct mirror_entry *e = dir->jobs;
        mirror_entry_unlink(e);
        m->report->vanished(m->report->ctx, e);
    }
    if (dir->relist_pos != HEAP_NONE)
        heap_remove(&m->relists, dir->relist_pos);
    dir_unlink(dir);
    HASH_DEL(m->dirs, dir);
    if (dir->q->root == dir)
        dir->q->root = NULL;
    if (dir->listing) {
        dir->removed = 1; /* freed when its listing returns */
        return;
    }
    free(dir->path);
    free(dir);
}

/* MADE and ID: the job's name and id as this daemon's put made them, or NULL: NAME parsed.
 * ENTERED (may be NULL) gets 1 when the job was not in LEAF before. */
static struct mirror_entry *job_listed(struct mirror *m, struct dir *leaf, const char *path,
                                       const char *name, const struct job_name *made,
                                       const char *id, int *entered)
{
    struct job_name jn;
    const char *shard = leaf->level == SHARD_LEVEL ? strrchr(leaf->path, '/') + 1 : "";
    if (made) {
        jn = *made;
    } else if (layout_parse_name(name, &jn) != 0) {
        note_foreign(m, path, "not a job name <due ms>-<priority>-<uid>[-<attempts>]");
        return NULL;
    }
    if (!layout_job_in_bucket(&jn, leaf->value, leaf->form)) {
        note_foreign(m, path, "due time or bucket form ('-c') does not belong to this bucket");
        return NULL;
    }
    size_t slen = strlen(shard);
    if (slen >= sizeof jn.shard) {
        note_foreign(m, path, "shard name too long");
        return NULL;
    }
    memcpy(jn.shard, shard, slen + 1);
    struct mirror_entry *e = m->report->seen(m->report->ctx, leaf->q, path, &jn, id);
    if (!e) { /* not entered (out of memory): the next listing is walked, not skipped */
        leaf->cversion_known = 0;
        return NULL;
    }
    if (entered)
        *entered = e->leaf != leaf;
    if (e->leaf != leaf) {
        mirror_entry_unlink(e);
        e->leaf = leaf;
        leaf->q->mirrored++;
        e->next = leaf->jobs;
        if (leaf->jobs)
            leaf->jobs->prev = e;
        leaf->jobs = e;
    }
    e->gen = leaf->gen;
    return e;
}

/* A shard of a 100 ms bucket: as near as its bucket, so listed at once. */
static void shard_listed(struct mirror *m, struct dir *leaf, const char *path)
{
    struct dir *shard;
    HASH_FIND_STR(m->dirs, path, shard);
    if (!shard && (shard = dir_new(m, leaf->q, leaf, path, SHARD_LEVEL, leaf->value, leaf->form)))
        load(m, shard);
    if (shard)
        shard->gen = leaf->gen;
}

static void dir_listed(struct mirror *m, struct dir *dir, const char *path, const char *name)
{
    uint64_t v;
    int form = layout_parse_bucket(name, dir->level + 1, dir->value, &v);
    if (form < 0) {
        note_foreign(m, path, "not a bucket of this level");
        return;
    }
    if ((form = layout_form_join(dir->form, form)) < 0) {
        note_foreign(m, path, "a short bucket name under a full one, or the reverse");
        return;
    }
    struct dir *kid;
    HASH_FIND_STR(m->dirs, path, kid);
    if (!kid) {
        kid = dir_new(m, dir->q, dir, path, dir->level + 1, v, form);
        if (!kid)
            return;
        int64_t at = kid->start_ms - (int64_t)m->d->cfg->lookahead_ms;
        if (at <= cluster_now_ms())
            load(m, kid);
        else
            defer_load(m, kid, at);
    }
    kid->gen = dir->gen;
}

/* Whatever the last listing did not show has been deleted in ZooKeeper. */
static void sweep(struct mirror *m, struct dir *dir)
{
    for (struct dir *kid = dir->kids, *next; kid; kid = next) {
        next = kid->next;
        if (kid->gen != dir->gen)
            dir_remove(m, kid);
    }
    for (struct mirror_entry *e = dir->jobs, *next; e; e = next) {
        next = e->next;
        if (e->gen != dir->gen) {
            mirror_entry_unlink(e);
            m->report->vanished(m->report->ctx, e);
        }
    }
}

/* Empty buckets in the past are deleted, so ZooKeeper does not collect one node per
 * 100 ms forever. A concurrent put into it fails with NoNode and recreates the path.
 * ctime is the server's clock: skew only makes a bucket wait longer or go sooner. */
static void collect(struct mirror *m, struct dir *dir, const struct zk_result *res)
{
    int64_t now = cluster_now_ms();
    if (dir->level == 0 || res->nchildren > 0 || dir->end_ms > now - GC_GRACE_MS ||
        !res->has_stat)
        return;
    if (res->stat.ctime > now - GC_FRESH_MS) { /* nothing else would list it again */
        defer_load(m, dir, res->stat.ctime + GC_FRESH_MS);
        return;
    }
    zkstore_delete(m->d->zs, dir->path, -1, NULL, NULL);
}

static void listing_counted(struct mirror *m, size_t bytes, int names)
{
    if (bytes > m->listing_max)
        m->listing_max = bytes;
    m->listings++;
    m->listed_names += (unsigned)names;
}

/* RES shows DIR as the mirror has it already: since the last listing its children changed
 * only by the jobs this daemon created and entered (cversion counts every create and delete
 * of a child; a delete of ours, a shard made, anyone else's change makes the count differ,
 * and the listing is then walked). The answers of one session come in order, so a create
 * counted here was applied before this listing was read. */
static int listing_unchanged(struct dir *dir, const struct zk_result *res)
{
    int same = dir->cversion_known && res->has_stat &&
               res->stat.cversion == (int32_t)((uint32_t)dir->cversion + dir->own_creates) &&
               res->nchildren == dir->names + (int)dir->own_creates;
    dir->cversion_known = res->has_stat;
    dir->cversion = res->has_stat ? res->stat.cversion : 0;
    dir->own_creates = 0;
    return same;
}

static void apply_listing(struct mirror *m, struct dir *dir, const struct zk_result *res)
{
    char path[LAYOUT_PATH_MAX];
    size_t bytes = 0, dlen = strlen(dir->path);
    if (listing_unchanged(dir, res)) {
        for (int i = 0; i < res->nchildren; i++)
            bytes += 4 + strlen(res->children[i]);
        listing_counted(m, bytes, res->nchildren);
        m->listings_unchanged++;
        collect(m, dir, res);
        if (dir->level >= LAYOUT_DEPTH)
            m->report->listed(m->report->ctx, dir->q);
        return;
    }
    dir->gen++;
    if (dlen + 1 < sizeof path) { /* not snprintf: this runs for every name listed */
        memcpy(path, dir->path, dlen);
        path[dlen] = '/';
    }
    for (int i = 0; i < res->nchildren; i++) {
        const char *name = res->children[i];
        size_t nlen = strlen(name);
        bytes += 4 + nlen;
        if (dlen + 1 + nlen >= sizeof path)
            continue;
        memcpy(path + dlen + 1, name, nlen + 1);
        if (dir->level == LAYOUT_DEPTH && layout_valid_shard(name))
            shard_listed(m, dir, path);
        else if (dir->level >= LAYOUT_DEPTH)
            job_listed(m, dir, path, name, NULL, NULL, NULL);
        else
            dir_listed(m, dir, path, name);
    }
    listing_counted(m, bytes, res->nchildren);
    sweep(m, dir);
    collect(m, dir, res);
    if (dir->level >= LAYOUT_DEPTH)
        m->report->listed(m->report->ctx, dir->q);
}

/* jobs/ (or a level above) refused: said as such, and not tried 10 times a second. */
static void on_jobs_made(const struct zk_result *res, void *ctx)
{
    struct dqueue *q = ctx; /* lives as long as the daemon, unlike a dir */
    if (res->rc != ZNOAUTH || !q->root)
        return;
    queue_denied(q, q->root->path);
    defer_load(q->root->m, q->root, cluster_now_ms() + ZK_RETRY_MS);
}

static void on_list(const struct zk_result *res, void *ctx)
{
    struct dir *dir = ctx;
    struct mirror *m = dir->m;
    dir->listing = 0;
    if (dir->removed) {
        free(dir->path);
        free(dir);
        return;
    }
    if (res->rc == ZNONODE && dir->level > 0) {
        dir_remove(m, dir);
        return;
    }
    if (res->rc != ZOK) {
        if (res->rc == ZNONODE) { /* jobs/ itself missing: create it, list again */
            zkstore_create_parents(m->d->zs, dir->path, NULL, NULL);
            zkstore_create(m->d->zs, dir->path, NULL, 0, 0, on_jobs_made, dir->q);
        } else if (res->rc == ZNOAUTH) {
            queue_denied(dir->q, dir->path);
        } else if (res->rc != ZCLOSING) { /* closing: deferd exits, or an old handle's
                                             * call after a renewal: retried, not news */
            log_warn("listing %s failed: %s; retrying", dir->path, zk_strerror(res->rc));
        }
        /* jobs/ just created: list it again soon, but never in a tight loop */
        defer_load(m, dir, cluster_now_ms() + (res->rc == ZNONODE ? 100 : ZK_RETRY_MS));
        return;
    }
    dir->loaded = 1;
    apply_listing(m, dir, res);
    dir->names = res->nchildren;
    if (dir->dirty) { /* changed while we listed: again, but not at once */
        dir->dirty = 0;
        relist(m, dir);
    }
}

/* Lists DIR and leaves a child watch on it; one listing at a time per directory. */
static void load(struct mirror *m, struct dir *dir)
{
    if (dir->listing) {
        dir->dirty = 1;
        return;
    }
    if (!dir->loaded && dir->level >= LAYOUT_DEPTH && dir->q->mirrored >= MIRRORED_MAX) {
        defer_load(m, dir, cluster_now_ms() + FULL_RETRY_MS);
        return;
    }
    if (dir->relist_pos != HEAP_NONE)
        heap_remove(&m->relists, dir->relist_pos);
    dir->listed_at = cluster_now_ms();
    int rc = zkstore_children(m->d->zs, dir->path, 1, on_list, dir);
    if (rc != ZOK) {
        log_warn("listing %s failed: %s; retrying", dir->path, zk_strerror(rc));
        defer_load(m, dir, cluster_now_ms() + ZK_RETRY_MS);
        return;
    }
    dir->listing = 1;
}

static void relist(struct mirror *m, struct dir *dir)
{
    /* Others' new jobs in a bucket due later can wait longer to be seen: until shortly
     * before it is due. */
    int64_t now = cluster_now_ms(), ahead = (dir->start_ms - now) / 4;
    ahead = ahead < 0 ? 0 : ahead > RELIST_MAX_AHEAD_MS ? RELIST_MAX_AHEAD_MS : ahead;
    int64_t due = dir->listed_at + RELIST_MIN_MS + ahead + dir->names / RELIST_NAMES_PER_MS;
    if (due < dir->start_ms - RELIST_LEAD_MS)
        due = dir->start_ms - RELIST_LEAD_MS;
    if (now >= due)
        load(m, dir);
    else if (dir->relist_pos == HEAP_NONE || dir->load_at > due)
        defer_load(m, dir, due);
}

int mirror_on_watch(struct mirror *m, const char *path)
{
    struct dir *dir;
    HASH_FIND_STR(m->dirs, path, dir);
    if (!dir)
        return 0;
    if (!dir->loaded && !dir->listing)
        return 1;
    /* Children changed or the node went: the next listing tells which. */
    if (dir->listing)
        dir->dirty = 1;
    else
        relist(m, dir);
    return 1;
}

size_t mirror_listing_max(const struct mirror *m) { return m->listing_max; }

void mirror_counts(const struct mirror *m, unsigned long long *listings,
                   unsigned long long *names, unsigned long long *unchanged)
{
    *listings = m->listings;
    *names = m->listed_names;
    *unchanged = m->listings_unchanged;
}

int64_t mirror_next(const struct mirror *m)
{
    const struct dir *top = heap_peek(&m->relists);
    return top ? top->load_at : INT64_MAX;
}

int64_t mirror_tick(struct mirror *m, int64_t wall_now)
{
    struct dir *top;
    while ((top = heap_peek(&m->relists)) && top->load_at <= wall_now) {
        heap_pop(&m->relists);
        load(m, top);
    }
    return mirror_next(m);
}

int mirror_start(struct mirror *m, struct dqueue *q)
{
    if (q->root)
        return 0;
    char path[LAYOUT_PATH_MAX];
    if (layout_bucket_path(path, sizeof path, m->d->cfg->zk_root, q->cfg->name, 0, 0, 0) != 0)
        return -1;
    q->root = dir_new(m, q, NULL, path, 0, 0, LAYOUT_FORM_EITHER);
    if (!q->root)
        return -1;
    load(m, q->root);
    return 0;
}

struct mirror_entry *mirror_job_created(struct mirror *m, struct dqueue *q, const char *path,
                                        const struct job_name *jn, const char *id)
{
    char leaf_path[LAYOUT_PATH_MAX];
    if (layout_parent_path(leaf_path, sizeof leaf_path, path) != 0)
        return NULL;
    const char *slash = strrchr(path, '/');
    struct dir *leaf;
    HASH_FIND_STR(m->dirs, leaf_path, leaf);
    if (!leaf || !leaf->loaded || leaf->level < LAYOUT_DEPTH || leaf->q != q)
        return NULL; /* not followed (yet): its listing will show the job */
    int entered = 0;
    struct mirror_entry *e = job_listed(m, leaf, path, slash + 1, jn, id, &entered);
    if (e && entered) /* not yet in a listing walked since: a change the next one shows */
        leaf->own_creates++;
    return e; /* not dispatched here: the caller hands it the put's payload first */
}

void mirror_reset(struct mirror *m)
{
    struct dir *dir;
    while ((dir = m->dirs)) {
        while (dir->parent)
            dir = dir->parent;
        dir_remove(m, dir);
    }
}

void mirror_resync(struct mirror *m)
{
    struct dir *dir, *tmp;
    HASH_ITER(hh, m->dirs, dir, tmp) {
        if (dir->loaded)
            load(m, dir);
    }
}

struct mirror *mirror_new(struct deferd *d)
{
    struct mirror *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->d = d;
    heap_init(&m->relists, relist_less, relist_setpos);
    return m;
}

void mirror_set_report(struct mirror *m, const struct mirror_report *report)
{
    m->report = report;
}

void mirror_free(struct mirror *m)
{
    if (!m)
        return;
    struct dir *dir, *tmp;
    HASH_ITER(hh, m->dirs, dir, tmp) {
        HASH_DEL(m->dirs, dir);
        free(dir->path);
        free(dir);
    }
    struct foreign *f, *ftmp;
    HASH_ITER(hh, m->foreign, f, ftmp) {
        HASH_DEL(m->foreign, f);
        free(f->path);
        free(f);
    }
    heap_free(&m->relists);
    free(m);
}
