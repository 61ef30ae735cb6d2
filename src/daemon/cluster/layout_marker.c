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
