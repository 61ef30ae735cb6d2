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
    if (r->path_len != strlen(f->rel) || memcmp(r->path, f->rel, r->path_len) != 0)
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
