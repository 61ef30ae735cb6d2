#include "layout_marker.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "layout.h"
#include "log.h"
#include "zkstore.h"

static void marker_path(const struct deferd *d, char *buf, size_t len)
{
    snprintf(buf, len, "%s/" LAYOUT_MARKER, d->cfg->zk_root);
}

static void set_version(struct deferd *d, int version, const char *why)
{
    if (version == d->layout_version)
        return;
    log_info("layout version %d (%s): %s", version, why,
             version >= LAYOUT_VERSION_PACKS ? "far-future jobs are packed"
                                            : "no new packs are written");
    d->layout_version = version;
}

static void on_data(const struct zk_result *res, void *ctx)
{
    struct deferd *d = ctx;
    char path[LAYOUT_PATH_MAX];
    int v;
    if (res->rc == ZNONODE) { /* gone since the exists: watch it again */
        layout_marker_session_up(d);
        return;
    }
    if (res->rc != ZOK)
        return; /* connection trouble: the next session_up reads it again */
    marker_path(d, path, sizeof path);
    v = res->datalen > 0 ? layout_parse_marker(res->data, (size_t)res->datalen) : -1;
    if (v < 1) {
        log_warn("%s: '%.*s' names no layout version (expected 1 or 2); packing stays off",
                 path, res->datalen > 0 && res->datalen < 40 ? res->datalen : 0,
                 res->datalen > 0 ? res->data : "");
        v = 1;
    }
    set_version(d, v > LAYOUT_VERSION_PACKS ? LAYOUT_VERSION_PACKS : v, path);
}

static void claim_new_root(struct deferd *d, int made_root);

static void on_root_made(const struct zk_result *res, void *ctx)
{
    struct deferd *d = ctx;
    if (res->rc == ZOK)
        claim_new_root(d, 1);
    else
        set_version(d, 1, "no layout marker; the root could not be created");
}

/* queues/ existed: some deferd stored jobs here, maybe one older than packs (version 1);
 * the marker existed: another daemon claimed the root first (read it); the root is missing:
 * made (once: MAY_MAKE_ROOT), then claimed again. */
static void claimed(struct deferd *d, const struct zk_result *res, int may_make_root)
{
    char path[LAYOUT_PATH_MAX];
    int bad = zk_failed_op(res);
    if (res->rc == ZOK) {
        set_version(d, LAYOUT_VERSION_PACKS, "a new root");
    } else if (res->rc == ZNODEEXISTS && bad == 1) {
        layout_marker_session_up(d);
    } else if (res->rc == ZNONODE && bad == 0 && may_make_root) {
        marker_path(d, path, sizeof path);
        if (zkstore_create_parents(d->zs, path, on_root_made, d) != ZOK)
            set_version(d, 1, "no layout marker");
    } else {
        set_version(d, 1, "no layout marker");
    }
}

static void on_claimed(const struct zk_result *res, void *ctx) { claimed(ctx, res, 1); }
static void on_claimed_again(const struct zk_result *res, void *ctx) { claimed(ctx, res, 0); }

/* A root where nothing was ever stored (no queues/ node) starts at the newest layout: no
 * older daemon can have jobs there. queues/ and the marker are made in one transaction, so
 * a root that got its first job meanwhile keeps version 1 and the explicit upgrade. */
static void claim_new_root(struct deferd *d, int made_root)
{
    char marker[LAYOUT_PATH_MAX], queues[LAYOUT_PATH_MAX];
    static const char version[] = "2";
    marker_path(d, marker, sizeof marker);
    snprintf(queues, sizeof queues, "%s/queues", d->cfg->zk_root);
    struct zk_txn_op ops[2] = {
        {.kind = ZT_CREATE, .path = queues, .data = "", .len = 0},
        {.kind = ZT_CREATE, .path = marker, .data = version, .len = sizeof version - 1},
    };
    if (zkstore_multi(d->zs, ops, 2, made_root ? on_claimed_again : on_claimed, d) != ZOK)
        set_version(d, 1, "no layout marker");
}

static void on_exists(const struct zk_result *res, void *ctx)
{
    struct deferd *d = ctx;
    char path[LAYOUT_PATH_MAX];
    marker_path(d, path, sizeof path);
    if (res->rc == ZNONODE)
        claim_new_root(d, 0);
    else if (res->rc == ZOK && zkstore_get(d->zs, path, on_data, d) != ZOK)
        log_warn("%s: cannot read the layout marker; packing stays as it was", path);
}

void layout_marker_session_up(struct deferd *d)
{
    char path[LAYOUT_PATH_MAX];
    marker_path(d, path, sizeof path);
    zkstore_exists(d->zs, path, 1, on_exists, d);
}

int layout_marker_on_watch(struct deferd *d, const char *path)
{
    char mine[LAYOUT_PATH_MAX];
    marker_path(d, mine, sizeof mine);
    if (strcmp(path, mine) != 0)
        return 0;
    layout_marker_session_up(d);
    return 1;
}
