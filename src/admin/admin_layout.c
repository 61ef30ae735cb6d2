/* deferctl layout: the root's layout marker <root>/layout (docs/zookeeper-layout.md,
 * Rolling upgrade), which every daemon watches, and the packs still waiting per queue. */
#include <stdio.h>
#include <string.h>

#include "admin_int.h"

static void marker_path(const struct admin *a, char *path, size_t len)
{
    layout_root_path(path, len, a->cfg.zk_root, LAYOUT_MARKER, NULL);
}

int admin_layout(struct admin *a, struct admin_layout *out, char *err, size_t errlen)
{
    char path[LAYOUT_PATH_MAX];
    int n = (int)sizeof out->marker - 1;
    marker_path(a, path, sizeof path);
    *out = (struct admin_layout){.version = 1};
    int rc = zoo_get(a->zh, path, 0, out->marker, &n, NULL);
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK)
        return admin_failed(err, errlen, "reading", path, rc);
    out->present = 1;
    out->marker[n > 0 ? n : 0] = '\0';
    out->version = layout_parse_marker(out->marker, strlen(out->marker));
    return 0;
}

/* Writes VERSION (2, 3 or 4): created, or set over another value; *changed is 0 when it
 * already said so. */
static int upgrade(struct admin *a, const char *path, int version, int *changed, char *err,
                   size_t errlen)
{
    const char *text = version == LAYOUT_VERSION_SHORT    ? "4"
                       : version == LAYOUT_VERSION_CLAIMS ? "3"
                                                          : "2";
    int rc = admin_create_parents(a, path);
    if (rc == ZOK)
        rc = zoo_create(a->zh, path, text, 1, &a->acl, 0, NULL, 0);
    if (rc == ZNODEEXISTS) {
        char data[32];
        int n = (int)sizeof data - 1;
        if ((rc = zoo_get(a->zh, path, 0, data, &n, NULL)) == ZOK &&
            layout_parse_marker(data, n > 0 ? (size_t)n : 0) == version)
            return 0;
        if (rc == ZOK)
            rc = zoo_set(a->zh, path, text, 1, -1);
    }
    *changed = rc == ZOK;
    return rc == ZOK ? 0 : admin_failed(err, errlen, "writing", path, rc);
}

int admin_layout_set(struct admin *a, int version, int *changed, char *err, size_t errlen)
{
    char path[LAYOUT_PATH_MAX];
    marker_path(a, path, sizeof path);
    *changed = 0;
    if (version >= LAYOUT_VERSION_PACKS && version <= LAYOUT_VERSION_SHORT)
        return upgrade(a, path, version, changed, err, errlen);
    int rc = zoo_delete(a->zh, path, -1);
    *changed = rc == ZOK;
    return rc == ZOK || rc == ZNONODE ? 0 : admin_failed(err, errlen, "deleting", path, rc);
}

int admin_pack_count(struct admin *a, const char *queue, long long *packs, char *err,
                     size_t errlen)
{
    char dir[LAYOUT_PATH_MAX];
    *packs = 0;
    if (layout_packs_path(dir, sizeof dir, a->cfg.zk_root, queue) != 0)
        return snprintf(err, errlen, "bad queue name '%s'", queue), -1;
    return admin_sum_children(a, dir, packs, err, errlen);
}
