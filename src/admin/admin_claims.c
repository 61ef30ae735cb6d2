/* Jobs held in claims (layout version 3, docs/zookeeper-layout.md "Claims"): a claimed job
 * has left its bucket, so `deferctl show`, `cancel` and `reschedule` look for it in its
 * queue's claim nodes when its znode is missing. An operator's look: every claim of the
 * queue is read until one holds the job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_int.h"
#include "claimdata.h"
#include "layout.h"

/* The daemon holding claim NAME: its session node's data (host:pid), or "session <hex>". */
static void claim_holder(struct admin *a, const char *name, char *holder, size_t len)
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

/* Record I of DATA (LEN bytes) whose path is REL, or -1. */
static int find_record(const char *data, int len, const char *rel, struct claim_record *recs,
                       uint32_t *n)
{
    if (len <= 0 || claimdata_read(data, (size_t)len, recs, CLAIM_JOBS_MAX, n, NULL, 0) != 0)
        return -1;
    for (uint32_t i = 0; i < *n; i++)
        if (recs[i].path_len == strlen(rel) && memcmp(recs[i].path, rel, recs[i].path_len) == 0)
            return (int)i;
    return -1;
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

int admin_find_claimed(struct admin *a, const char *queue, const char *path,
                       struct admin_job *job, char *holder, size_t hlen)
{
    char dir[LAYOUT_PATH_MAX], qdir[LAYOUT_PATH_MAX], cpath[LAYOUT_PATH_MAX];
    struct String_vector kids;
    static struct claim_record recs[CLAIM_JOBS_MAX];
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
        int len = CLAIM_BYTES_MAX;
        uint32_t n;
        int w = snprintf(cpath, sizeof cpath, "%s/%s", dir, kids.data[i]);
        if (w < 0 || (size_t)w >= sizeof cpath ||
            zoo_get(a->zh, cpath, 0, data, &len, NULL) != ZOK)
            continue; /* settled or recovered since the listing */
        int at = find_record(data, len, rel, recs, &n);
        if (at < 0)
            continue;
        claim_holder(a, kids.data[i], holder, hlen);
        rc = job ? fill_job(job, &recs[at]) : ZOK;
    }
    free(data);
    deallocate_String_vector(&kids);
    return rc;
}
