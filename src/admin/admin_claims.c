/* Jobs held in claims (layout version 3, docs/zookeeper-layout.md "Claims"): a claimed job
 * has left its bucket, so `deferctl show`, `cancel` and `reschedule` look for it in its
 * queue's claim nodes when its znode is missing, and `deferctl list` (and the dashboard's
 * queue page) shows claimed jobs as held. An operator's look: every claim of the queue is
 * read (until one holds the job, for show). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_int.h"
#include "claimdata.h"
#include "layout.h"

void admin_claim_holder(struct admin *a, const char *name, char *holder, size_t len)
{
    uint64_t session, n;
    char path[LAYOUT_PATH_MAX];
    int got = (int)len - 1;
    if (layout_parse_claim_name(name, &session, &n) != 0 ||
        layout_session_path(path, sizeof path, a->cfg.zk_root, session) != 0 ||
        zoo_get(a->zh, path, 0, holder, &got, NULL) != ZOK || got <= 0) {
        snprintf(holder, len, "session %.16s (gone: its claim is recovered soon)", name);
        return;
    }
    holder[got] = '\0';
}

/* The record found: JOB gets the payload, size and deliveries. */
static int fill_job(struct admin_job *job, const struct claim_record *r)
{
    job->locked = 1;
    job->bytes = (int32_t)r->len;
    job->attempts = job->jn.prior_attempts + r->deliveries;
    job->len = (int)r->len;
    if (!(job->payload = malloc(r->len + 1)))
        return ZSYSTEMERROR;
    memcpy(job->payload, r->payload, r->len);
    return ZOK;
}

/* Reads claim NAME of DIR into DATA and RECS; ZNONODE when settled or recovered since its
 * listing, or unreadable (a daemon counts those: claims_unreadable). */
static int read_claim(struct admin *a, const char *dir, const char *name, char *data,
                      struct claim_record *recs, uint32_t *n)
{
    char cpath[LAYOUT_PATH_MAX];
    int len = CLAIM_BYTES_MAX;
    int w = snprintf(cpath, sizeof cpath, "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= sizeof cpath)
        return ZNONODE;
    int rc = zoo_get(a->zh, cpath, 0, data, &len, NULL);
    if (rc != ZOK)
        return rc == ZNONODE ? ZNONODE : rc;
    if (len <= 0 || claimdata_read(data, (size_t)len, recs, CLAIM_JOBS_MAX, n, NULL, 0) != 0)
        return ZNONODE;
    return ZOK;
}

int admin_claims_visit(struct admin *a, const char *queue, admin_claimed_fn fn, void *ctx)
{
    char dir[LAYOUT_PATH_MAX];
    struct String_vector kids;
    struct claim_record recs[CLAIM_JOBS_MAX]; /* 5 KiB, pointing into DATA */
    if (layout_queue_path(dir, sizeof dir, a->cfg.zk_root, queue, LAYOUT_CLAIMS, NULL) != 0)
        return ZBADARGUMENTS;
    int rc = zoo_get_children(a->zh, dir, 0, &kids);
    if (rc == ZNONODE)
        return ZOK; /* no claim was ever made in this queue */
    if (rc != ZOK)
        return rc;
    char *data = malloc(CLAIM_BYTES_MAX);
    rc = data ? ZOK : ZSYSTEMERROR;
    for (int i = 0; i < kids.count && rc == ZOK; i++) {
        uint32_t n;
        int crc = read_claim(a, dir, kids.data[i], data, recs, &n);
        if (crc != ZOK) {
            rc = crc == ZNONODE ? ZOK : crc;
            continue;
        }
        for (uint32_t k = 0; k < n && rc == ZOK; k++)
            rc = fn(ctx, &recs[k], kids.data[i]);
    }
    free(data);
    deallocate_String_vector(&kids);
    return rc;
}

struct find {
    struct admin *a;
    const char *rel;            /* the job's path under its queue's node */
    struct admin_job *job;
    char *holder;
    size_t hlen;
    int found;
};

static int find_one(void *ctx, const struct claim_record *r, const char *claim)
{
    struct find *f = ctx;
    if (claimdata_find(r, 1, f->rel) < 0)
        return ZOK;
    f->found = 1;
    admin_claim_holder(f->a, claim, f->holder, f->hlen);
    int rc = f->job ? fill_job(f->job, r) : ZOK;
    return rc == ZOK ? ZNOTHING : rc; /* found: stop the visit */
}

int admin_find_claimed(struct admin *a, const char *queue, const char *path,
                       struct admin_job *job, char *holder, size_t hlen)
{
    char qdir[LAYOUT_PATH_MAX];
    if (layout_queue_path(qdir, sizeof qdir, a->cfg.zk_root, queue, NULL, NULL) != 0 ||
        strncmp(path, qdir, strlen(qdir)) != 0 || path[strlen(qdir)] != '/')
        return ZNONODE;
    struct find f = {a, path + strlen(qdir) + 1, job, holder, hlen, 0};
    int rc = admin_claims_visit(a, queue, find_one, &f);
    if (f.found)
        return rc == ZNOTHING ? ZOK : rc;
    return rc == ZOK ? ZNONODE : rc;
}

/* The claim at CPATH as read (its N records RECS, VERSION) without record AT: written at
 * that version, or deleted when it was the last. */
static int write_without(struct admin *a, const char *cpath, struct claim_record *recs,
                         uint32_t n, uint32_t at, int version)
{
    if (n == 1)
        return zoo_delete(a->zh, cpath, version);
    size_t size = claimdata_drop(recs, &n, at);
    char *rest = malloc(size);
    long len = rest ? claimdata_write(rest, size, recs, n) : -1;
    int rc = len < 0 ? ZSYSTEMERROR : zoo_set(a->zh, cpath, rest, (int)len, version);
    free(rest);
    return rc;
}

/* The holder's session node, touched with its own data: its daemon reads its claims. */
static int touch_session(struct admin *a, const char *claim)
{
    uint64_t session, n;
    char path[LAYOUT_PATH_MAX], data[256];
    int len = sizeof data;
    if (layout_parse_claim_name(claim, &session, &n) != 0 ||
        layout_session_path(path, sizeof path, a->cfg.zk_root, session) != 0)
        return ZNONODE;
    int rc = zoo_get(a->zh, path, 0, data, &len, NULL);
    return rc == ZOK ? zoo_set(a->zh, path, data, len > 0 ? len : 0, -1) : rc;
}

static int session_alive(struct admin *a, const char *claim)
{
    uint64_t session, n;
    char path[LAYOUT_PATH_MAX];
    return layout_parse_claim_name(claim, &session, &n) == 0 &&
           layout_session_path(path, sizeof path, a->cfg.zk_root, session) == 0 &&
           zoo_exists(a->zh, path, 0, NULL) == ZOK;
}

int admin_cancel_claimed(struct admin *a, const char *queue, const char *path)
{
    char qdir[LAYOUT_PATH_MAX], dir[LAYOUT_PATH_MAX], cpath[LAYOUT_PATH_MAX];
    struct String_vector kids;
    struct claim_record recs[CLAIM_JOBS_MAX];
    if (layout_queue_path(qdir, sizeof qdir, a->cfg.zk_root, queue, NULL, NULL) != 0 ||
        layout_queue_path(dir, sizeof dir, a->cfg.zk_root, queue, LAYOUT_CLAIMS, NULL) != 0 ||
        strncmp(path, qdir, strlen(qdir)) != 0 || path[strlen(qdir)] != '/')
        return ZNONODE;
    const char *rel = path + strlen(qdir) + 1;
    int rc = zoo_get_children(a->zh, dir, 0, &kids);
    if (rc != ZOK)
        return rc;
    char *data = malloc(CLAIM_BYTES_MAX);
    rc = data ? ZNONODE : ZSYSTEMERROR;
    for (int i = 0; i < kids.count && rc == ZNONODE; i++) {
        struct Stat st;
        int len = CLAIM_BYTES_MAX;
        uint32_t n = 0;
        int w = snprintf(cpath, sizeof cpath, "%s/%s", dir, kids.data[i]);
        if (w < 0 || (size_t)w >= sizeof cpath || zoo_get(a->zh, cpath, 0, data, &len, &st) != ZOK || len <= 0 ||
            claimdata_read(data, (size_t)len, recs, CLAIM_JOBS_MAX, &n, NULL, 0) != 0)
            continue;
        int at = claimdata_find(recs, n, rel);
        if (at < 0)
            continue;
        if (!session_alive(a, kids.data[i])) {
            rc = ZNOTEMPTY;
            break;
        }
        rc = write_without(a, cpath, recs, n, (uint32_t)at, st.version);
        if (rc == ZNONODE)
            rc = ZBADVERSION; /* settled or recovered since our read */
        if (rc == ZOK && touch_session(a, kids.data[i]) != ZOK)
            fprintf(stderr, "deferctl: the daemon holding %s was not told at once; it learns "
                    "at its next write of the claim\n", cpath);
    }
    free(data);
    deallocate_String_vector(&kids);
    return rc;
}
