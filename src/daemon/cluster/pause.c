#include "pause.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "layout.h"
#include "log.h"
#include "zkstore.h"

struct flag_check {
    struct deferd *d;
    char queue[QUEUE_NAME_MAX + 1]; /* looked up again: the queue outlives no call */
};

static void on_flag(const struct zk_result *res, void *ctx)
{
    struct flag_check *fc = ctx;
    struct dqueue *q = dispatcher_queue(fc->d->dispatcher, fc->queue);
    if (q && (res->rc == ZOK || res->rc == ZNONODE))
        dispatcher_set_paused(fc->d->dispatcher, q, res->rc == ZOK);
    else if (q && res->rc != ZCONNECTIONLOSS && res->rc != ZCLOSING &&
             res->rc != ZSESSIONEXPIRED)
        log_warn("queue %s: cannot read its pause flag: %s; keeping it %s", fc->queue,
                 zk_strerror(res->rc), q->paused ? "paused" : "running");
    /* connection trouble: the next session_up reads it again */
    free(fc);
}

static void check_flag(struct deferd *d, const char *queue)
{
    char path[LAYOUT_PATH_MAX];
    struct flag_check *fc = malloc(sizeof *fc);
    if (!fc)
        return;
    fc->d = d;
    snprintf(fc->queue, sizeof fc->queue, "%s", queue);
    if (layout_queue_path(path, sizeof path, d->cfg->zk_root, queue, LAYOUT_PAUSED, NULL) != 0 ||
        zkstore_exists(d->zs, path, 1, on_flag, fc) != ZOK)
        free(fc);
}

void pause_session_up(struct deferd *d)
{
    for (size_t i = 0; i < d->cfg->nqueues; i++)
        check_flag(d, d->cfg->queues[i]->name);
}

void pause_follow(struct deferd *d, const char *queue)
{
    if (zkstore_connected(d->zs)) /* else the next session_up reads it */
        check_flag(d, queue);
}

int pause_on_watch(struct deferd *d, const char *path)
{
    char queue[QUEUE_NAME_MAX + 1];
    int rc = layout_queue_of(path, d->cfg->zk_root, LAYOUT_PAUSED, queue, sizeof queue);
    if (rc == 0)
        check_flag(d, queue); /* sets a new watch, then applies what it finds */
    return rc != -1; /* a name too long is no queue of ours, but the watch was ours */
}
