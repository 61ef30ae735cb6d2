/* deferctl pause/resume: the durable, cluster-wide pause flag of a queue,
 * <root>/queues/<queue>/paused, which every daemon watches (src/pause.c). */
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin_int.h"
#include "cluster_time.h"
#include "units.h"

static int flag_path(struct admin *a, const char *queue, char *path, size_t len, char *err,
                     size_t errlen)
{
    if (!admin_queue(a, queue, err, errlen))
        return -1;
    if (layout_queue_path(path, len, a->cfg.zk_root, queue, LAYOUT_PAUSED, NULL) == 0)
        return 0;
    snprintf(err, errlen, "queue %s: its path is too long", queue);
    return -1;
}

/* The flag's data says who paused the queue, when and why, for `deferctl stats`/`list`. */
static void describe(const char *reason, char *buf, size_t len)
{
    char host[64] = "?", when[40];
    const struct passwd *pw = getpwuid(getuid());
    gethostname(host, sizeof host - 1);
    units_format_time(cluster_now_ms(), when, sizeof when);
    snprintf(buf, len, "paused by %s@%s at %s%s%s", pw ? pw->pw_name : "?", host, when,
             reason && *reason ? ": " : "", reason ? reason : "");
}

int admin_pause(struct admin *a, const char *queue, const char *reason, int *changed,
                char *err, size_t errlen)
{
    char path[LAYOUT_PATH_MAX], info[512];
    if (flag_path(a, queue, path, sizeof path, err, errlen) != 0)
        return -1;
    describe(reason, info, sizeof info);
    int rc = admin_create_parents(a, path);
    if (rc == ZOK)
        rc = zoo_create(a->zh, path, info, (int)strlen(info), &a->acl, 0, NULL, 0);
    *changed = rc == ZOK;
    return rc == ZOK || rc == ZNODEEXISTS ? 0 : admin_failed(err, errlen, "creating", path, rc);
}

int admin_resume(struct admin *a, const char *queue, int *changed, char *err, size_t errlen)
{
    char path[LAYOUT_PATH_MAX];
    if (flag_path(a, queue, path, sizeof path, err, errlen) != 0)
        return -1;
    int rc = zoo_delete(a->zh, path, -1);
    *changed = rc == ZOK;
    return rc == ZOK || rc == ZNONODE ? 0 : admin_failed(err, errlen, "deleting", path, rc);
}

int admin_paused(struct admin *a, const char *queue, int *paused, char *info, size_t ilen,
                 char *err, size_t errlen)
{
    char path[LAYOUT_PATH_MAX];
    if (flag_path(a, queue, path, sizeof path, err, errlen) != 0)
        return -1;
    int n = (int)ilen - 1;
    int rc = zoo_get(a->zh, path, 0, info, &n, NULL);
    *paused = rc == ZOK;
    info[rc == ZOK && n > 0 ? n : 0] = '\0';
    return rc == ZOK || rc == ZNONODE ? 0 : admin_failed(err, errlen, "reading", path, rc);
}
