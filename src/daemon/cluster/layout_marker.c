#include "layout_marker.h"

#include <stdio.h>
#include <string.h>

#include "claim_recovery.h"
#include "config.h"
#include "daemon.h"
#include "layout.h"
#include "log.h"
#include "zkstore.h"

static void read_marker(struct deferd *d);

static void marker_path(const struct deferd *d, char *buf, size_t len)
{
    layout_root_path(buf, len, d->cfg->zk_root, LAYOUT_MARKER, NULL);
}

static void set_version(struct deferd *d, int version, const char *why)
{
    if (version == d->layout_version)
        return;
    log_info("layout version %d (%s): %s", version, why,
             version >= LAYOUT_VERSION_SHORT ? "far-future jobs are packed, due jobs claimed, "
                                               "new jobs' buckets named short"
             : version >= LAYOUT_VERSION_CLAIMS ? "far-future jobs are packed, due jobs claimed"
             : version >= LAYOUT_VERSION_PACKS ? "far-future jobs are packed"
                                               : "no new packs are written");
    d->layout_version = version;
    claim_recovery_session_up(d->claim_recovery); /* at 3: this session's node, then a look */
}

static void on_data(const struct zk_result *res, void *ctx)
{
    struct deferd *d = ctx;
    char path[LAYOUT_PATH_MAX];
    int v;
    if (res->rc == ZNONODE) { /* gone since the exists: watch it again */
        read_marker(d);
        return;
    }
    if (res->rc != ZOK)
        return; /* connection trouble: the next session_up reads it again */
    marker_path(d, path, sizeof path);
    v = res->datalen > 0 ? layout_parse_marker(res->data, (size_t)res->datalen) : -1;
    if (v < 1) {
        log_warn("%s: '%.*s' names no layout version (expected 1 to 4); packing stays off",
                 path, res->datalen > 0 && res->datalen < 40 ? res->datalen : 0,
                 res->datalen > 0 ? res->data : "");
        v = 1;
    }
    set_version(d, v > LAYOUT_VERSION_SHORT ? LAYOUT_VERSION_SHORT : v, path);
}

static void on_exists(const struct zk_result *res, void *ctx)
{
    struct deferd *d = ctx;
    char path[LAYOUT_PATH_MAX];
    marker_path(d, path, sizeof path);
    if (res->rc == ZNONODE)
        set_version(d, 1, "no layout marker");
    else if (res->rc == ZOK && zkstore_get(d->zs, path, on_data, d) != ZOK)
        log_warn("%s: cannot read the layout marker; packing stays as it was", path);
}

/* Reads the marker with a watch. */
static void read_marker(struct deferd *d)
{
    char path[LAYOUT_PATH_MAX];
    marker_path(d, path, sizeof path);
    zkstore_exists(d->zs, path, 1, on_exists, d);
}

static void on_claimed(const struct zk_result *res, void *ctx)
{
    if (res->rc == ZOK) /* the read that follows finds "4" and says nothing more */
        set_version(ctx, LAYOUT_VERSION_SHORT, "a new root");
}

/* A root where nothing was ever stored starts at the newest layout, 4 (claims, and short
 * bucket names; issue 43: a delivery costs about one ZooKeeper operation where a lock costs
 * five, a put's path 14 bytes less): no older daemon can have jobs there. Transactions
 * sent before any other request of the session that could create a directory (one session
 * is served in order), one for each level of the root's path (the levels from that one
 * down, queues/ and the marker), and one for queues/ and the marker alone. Each fails, changing nothing, when one of its nodes exists, so at most one
 * succeeds: the one that starts at the first missing level. A root where some deferd made
 * queues/ (maybe one older than packs) keeps version 1; of daemons starting together one
 * claims the root for all. */
static void claim_new_root(struct deferd *d)
{
    enum { LEVELS = 16 }; /* of a deeper root, the deepest: the rest are taken to exist */
    char marker[LAYOUT_PATH_MAX], queues[LAYOUT_PATH_MAX], levels[LEVELS][LAYOUT_PATH_MAX];
    static const char version[] = "4";
    struct zk_txn_op ops[LEVELS + 2];
    const char *root = d->cfg->zk_root;
    int n = 0, all = 0;
    marker_path(d, marker, sizeof marker);
    layout_queue_path(queues, sizeof queues, root, NULL, NULL, NULL);
    for (const char *at = root + 1;; at++) { /* each level's path, deepest LEVELS kept */
        if (*at != '/' && *at != '\0')
            continue;
        snprintf(levels[all % LEVELS], sizeof levels[0], "%.*s", (int)(at - root), root);
        all++;
        if (*at == '\0')
            break;
    }
    for (int k = all > LEVELS ? all - LEVELS : 0; k < all; k++)
        ops[n++] = (struct zk_txn_op){.kind = ZT_CREATE, .path = levels[k % LEVELS], .data = ""};
    ops[n] = (struct zk_txn_op){.kind = ZT_CREATE, .path = queues, .data = ""};
    ops[n + 1] = (struct zk_txn_op){.kind = ZT_CREATE, .path = marker, .data = version,
                                    .len = sizeof version - 1};
    for (int first = 0; first <= n; first++)
        zkstore_multi(d->zs, ops + first, n + 2 - first, on_claimed, d);
}

void layout_marker_session_up(struct deferd *d)
{
    if (d->layout_version == 0) /* once: after that the root holds a marker or queues/ */
        claim_new_root(d);
    read_marker(d);
}

int layout_marker_on_watch(struct deferd *d, const char *path)
{
    char mine[LAYOUT_PATH_MAX];
    marker_path(d, mine, sizeof mine);
    if (strcmp(path, mine) != 0)
        return 0;
    read_marker(d);
    return 1;
}
