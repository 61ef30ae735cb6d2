/* A claimed job's settle lost with the session: applied or not (claim_outcome.h). */
#include "claim_outcome.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claimdata.h"
#include "claimfind.h"
#include "layout.h"
#include "zkstore.h"

struct look {
    struct zkstore *zs;
    claim_outcome_fn done;
    void *ctx;
    char root[LAYOUT_PATH_MAX], queue[LAYOUT_PATH_MAX];
    char claim[LAYOUT_PATH_MAX], job[LAYOUT_PATH_MAX];
    char remade[LAYOUT_PATH_MAX]; /* the job's path once a recovery made it again */
};

static void look_end(struct look *lk, int applied)
{
    lk->done(lk->ctx, applied);
    free(lk);
}

static void on_claims(void *ctx, int rc, const struct claimfind_hit *hit)
{
    (void)hit;
    look_end(ctx, rc == ZOK ? 0 : rc == ZNONODE ? 1 : -1);
}

static void on_bucket(const struct zk_result *res, void *ctx)
{
    struct look *lk = ctx;
    if (res->rc == ZOK)
        look_end(lk, 0);
    else if (res->rc != ZNONODE)
        look_end(lk, -1);
    else if (claimfind(lk->zs, lk->root, lk->queue, lk->remade, on_claims, lk) != ZOK)
        look_end(lk, -1);
}

/* Whether the claim's data (as read) still holds the job. */
static int still_held(const struct look *lk, const struct zk_result *res)
{
    static struct claim_record recs[CLAIM_JOBS_MAX]; /* the loop's thread alone */
    uint32_t n = 0;
    char qdir[LAYOUT_PATH_MAX];
    size_t ql;
    if (res->datalen <= 0 || claimdata_read(res->data, (size_t)res->datalen, recs,
                                            CLAIM_JOBS_MAX, &n, NULL, 0) != CLAIM_OK ||
        layout_queue_path(qdir, sizeof qdir, lk->root, lk->queue, NULL, NULL) != 0 ||
        strncmp(lk->job, qdir, ql = strlen(qdir)) != 0)
        return 0;
    return claimdata_find(recs, n, lk->job + ql + 1) >= 0;
}

static void on_claim(const struct zk_result *res, void *ctx)
{
    struct look *lk = ctx;
    if (res->rc == ZOK && still_held(lk, res))
        look_end(lk, 0);
    else if (res->rc != ZOK && res->rc != ZNONODE)
        look_end(lk, -1);
    else if (zkstore_exists(lk->zs, lk->remade, 0, on_bucket, lk) != ZOK)
        look_end(lk, -1); /* (a part recovered: the job may be back in its bucket) */
}

void claim_outcome(struct zkstore *zs, const char *root, const char *queue,
                   const char *claim_path, const char *job_path, uint32_t deliveries,
                   claim_outcome_fn done, void *ctx)
{
    struct look *lk = calloc(1, sizeof *lk);
    if (!lk) {
        done(ctx, -1);
        return;
    }
    *lk = (struct look){.zs = zs, .done = done, .ctx = ctx};
    snprintf(lk->root, sizeof lk->root, "%s", root);
    snprintf(lk->queue, sizeof lk->queue, "%s", queue);
    snprintf(lk->claim, sizeof lk->claim, "%s", claim_path);
    snprintf(lk->job, sizeof lk->job, "%s", job_path);
    memcpy(lk->remade, lk->job, sizeof lk->remade);
    if (claimdata_remade_path(lk->remade, sizeof lk->remade, deliveries) != 0 ||
        zkstore_get(zs, lk->claim, on_claim, lk) != ZOK)
        look_end(lk, -1);
}
