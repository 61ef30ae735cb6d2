/* A job in its queue's claims, by its path (claimfind.h). */
#include "claimfind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claimdata.h"
#include "layout.h"
#include "zkstore.h"

struct find {
    struct zkstore *zs;
    claimfind_fn done;
    void *ctx;
    const char *rel;            /* the job's path under its queue's node (in PATH) */
    char **names;               /* the queue's claims, as listed */
    int nnames, next;
    int version;                /* of the claim that holds the job */
    unsigned char *rest;        /* ... its data without the job (NULL: none left) */
    long rest_len;
    char root[LAYOUT_PATH_MAX], dir[LAYOUT_PATH_MAX], path[LAYOUT_PATH_MAX];
    char claim[LAYOUT_PATH_MAX], session[LAYOUT_PATH_MAX];
};

static void find_end(struct find *f, int rc, const char *holder)
{
    struct claimfind_hit hit = {.holder = holder, .claim = f->claim, .version = f->version,
                                .rest = f->rest, .rest_len = f->rest_len > 0 ? (size_t)f->rest_len : 0,
                                .session = f->session};
    if (rc == ZOK && f->rest_len < 0)
        rc = ZSYSTEMERROR; /* the claim without the job could not be made: no hit */
    f->done(f->ctx, rc, rc == ZOK ? &hit : NULL);
    for (int i = 0; i < f->nnames; i++)
        free(f->names[i]);
    free(f->names);
    free(f->rest);
    free(f);
}

static void on_session(const struct zk_result *res, void *ctx)
{
    struct find *f = ctx;
    char holder[256];
    if (res->rc == ZOK && res->datalen > 0) {
        snprintf(holder, sizeof holder, "%.*s", res->datalen, res->data);
    } else { /* its daemon's session is gone: the claim is recovered soon */
        snprintf(holder, sizeof holder, "a session that ended (its claim %s is recovered soon)",
                 f->names[f->next - 1]);
        f->session[0] = '\0';
    }
    find_end(f, ZOK, holder);
}

static void holder_of(struct find *f, const char *claim)
{
    uint64_t session, n;
    char path[LAYOUT_PATH_MAX];
    if (layout_parse_claim_name(claim, &session, &n) != 0 ||
        layout_session_path(path, sizeof path, f->root, session) != 0) {
        on_session(&(struct zk_result){.rc = ZNONODE}, f);
        return;
    }
    snprintf(f->session, sizeof f->session, "%s", path);
    if (zkstore_get(f->zs, path, on_session, f) != ZOK)
        on_session(&(struct zk_result){.rc = ZNONODE}, f);
}

/* Whether the claim's data holds the job; if so, its data without the job into f->rest. */
static int holds(struct find *f, const struct zk_result *res)
{
    static struct claim_record recs[CLAIM_JOBS_MAX]; /* the loop's thread alone */
    uint32_t n = 0;
    if (res->datalen <= 0 || claimdata_read(res->data, (size_t)res->datalen, recs,
                                            CLAIM_JOBS_MAX, &n, NULL, 0) != CLAIM_OK)
        return 0; /* not a claim deferd wrote: nobody's hold on the job */
    int at = claimdata_find(recs, n, f->rel);
    if (at < 0)
        return 0;
    size_t size = claimdata_drop(recs, &n, (uint32_t)at);
    f->version = res->stat.version;
    f->rest_len = -1;
    if (n > 0 && (f->rest = malloc(size)))
        f->rest_len = claimdata_write(f->rest, size, recs, n);
    else if (n == 0)
        f->rest_len = 0; /* the job was its last: the claim is deleted */
    return 1;
}

static void read_next(struct find *f);

static void on_claim(const struct zk_result *res, void *ctx)
{
    struct find *f = ctx;
    if (res->rc == ZOK && holds(f, res)) {
        holder_of(f, f->names[f->next - 1]);
        return;
    }
    if (res->rc != ZOK && res->rc != ZNONODE) {
        find_end(f, res->rc, NULL);
        return;
    }
    read_next(f); /* not there, or settled or recovered since the listing */
}

static void read_next(struct find *f)
{
    if (f->next >= f->nnames) {
        find_end(f, ZNONODE, NULL);
        return;
    }
    int w = snprintf(f->claim, sizeof f->claim, "%s/%s", f->dir, f->names[f->next++]);
    int rc = w < 0 || (size_t)w >= sizeof f->claim ? ZBADARGUMENTS
                                                   : zkstore_get(f->zs, f->claim, on_claim, f);
    if (rc != ZOK)
        find_end(f, rc, NULL);
}

static void on_claims(const struct zk_result *res, void *ctx)
{
    struct find *f = ctx;
    if (res->rc != ZOK) { /* ZNONODE: no claim was ever made in this queue */
        find_end(f, res->rc, NULL);
        return;
    }
    if (res->nchildren > 0 && !(f->names = calloc((size_t)res->nchildren, sizeof *f->names))) {
        find_end(f, ZSYSTEMERROR, NULL);
        return;
    }
    for (int i = 0; i < res->nchildren; i++)
        if ((f->names[f->nnames] = strdup(res->children[i])))
            f->nnames++;
    read_next(f);
}

int claimfind(struct zkstore *zs, const char *root, const char *queue, const char *path,
              claimfind_fn done, void *ctx)
{
    char qdir[LAYOUT_PATH_MAX];
    struct find *f = calloc(1, sizeof *f);
    if (!f)
        return ZSYSTEMERROR;
    *f = (struct find){.zs = zs, .done = done, .ctx = ctx};
    size_t ql;
    if (layout_queue_path(qdir, sizeof qdir, root, queue, NULL, NULL) != 0 ||
        layout_queue_path(f->dir, sizeof f->dir, root, queue, LAYOUT_CLAIMS, NULL) != 0 ||
        strncmp(path, qdir, ql = strlen(qdir)) != 0 || path[ql] != '/' ||
        snprintf(f->path, sizeof f->path, "%s", path) >= (int)sizeof f->path) {
        free(f);
        return ZBADARGUMENTS;
    }
    snprintf(f->root, sizeof f->root, "%s", root);
    f->rel = f->path + ql + 1;
    int rc = zkstore_children(zs, f->dir, 0, on_claims, f);
    if (rc != ZOK)
        free(f);
    return rc;
}
