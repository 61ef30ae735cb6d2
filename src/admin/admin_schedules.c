/* deferctl schedules: a schedule's state node <root>/schedules/<name> and the key node of
 * the latest job it put (docs/schedules.md). */
#include <stdio.h>
#include <string.h>

#include "admin_int.h"
#include "schedule.h"

/* The latest job's key node: live (its job pending or held), kept (acked), or none. */
static int read_key(struct admin *a, const struct schedule_config *sc, struct admin_schedule *o,
                    char *err, size_t errlen)
{
    char path[LAYOUT_PATH_MAX], data[LAYOUT_ID_MAX + 32];
    int n = (int)sizeof data - 1;
    struct job_name jn;
    if (layout_key_path(path, sizeof path, a->cfg.zk_root, sc->queue, o->st.key) != 0)
        return snprintf(err, errlen, "bad key '%s'", o->st.key), -1;
    int rc = zoo_get(a->zh, path, 0, data, &n, NULL);
    if (rc == ZNONODE) {
        o->key = ADMIN_KEY_GONE;
        return 0;
    }
    if (rc != ZOK)
        return admin_failed(err, errlen, "reading", path, rc);
    data[n > 0 ? n : 0] = '\0';
    if (layout_parse_kept_key(data, strlen(data), &o->acked_ms, &jn) == 0) {
        o->key = ADMIN_KEY_KEPT;
    } else {
        o->key = ADMIN_KEY_LIVE;
        snprintf(o->job, sizeof o->job, "%.*s/%.*s", QUEUE_NAME_MAX, sc->queue,
                 (int)(sizeof o->job - QUEUE_NAME_MAX - 2), data);
    }
    return 0;
}

int admin_schedule(struct admin *a, const struct schedule_config *sc, struct admin_schedule *o,
                   char *err, size_t errlen)
{
    char path[LAYOUT_PATH_MAX], data[SCHEDULE_STATE_MAX];
    int n = (int)sizeof data - 1;
    struct Stat stat;
    memset(o, 0, sizeof *o);
    if (layout_root_path(path, sizeof path, a->cfg.zk_root, LAYOUT_SCHEDULES, sc->name) != 0)
        return snprintf(err, errlen, "bad schedule name '%s'", sc->name), -1;
    int rc = zoo_get(a->zh, path, 0, data, &n, &stat);
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK)
        return admin_failed(err, errlen, "reading", path, rc);
    o->present = 1;
    o->mtime = stat.mtime;
    if (n <= 0 || schedule_state_parse(data, (size_t)n, &o->st) != 0)
        return 0;
    o->parsed = 1;
    return o->st.key[0] ? read_key(a, sc, o, err, errlen) : 0;
}
