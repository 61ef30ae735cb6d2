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

#define PAUSE_NODE "paused"

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
    snprintf(path, sizeof path, "%s/queues/%s/" PAUSE_NODE, d->cfg->zk_root, queue);
    if (zkstore_exists(d->zs, path, 1, on_flag, fc) != ZOK)
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
    size_t rlen = strlen(d->cfg->zk_root);
    static const char mid[] = "/queues/", tail[] = "/" PAUSE_NODE;
    size_t plen = strlen(path);
    if (strncmp(path, d->cfg->zk_root, rlen) != 0 || strncmp(path + rlen, mid, sizeof mid - 1))
        return 0;
    const char *name = path + rlen + sizeof mid - 1;
    const char *end = path + plen - (sizeof tail - 1);
    if (end <= name || strcmp(end, tail) != 0 || memchr(name, '/', (size_t)(end - name)))
        return 0;
    char queue[QUEUE_NAME_MAX + 1];
    if ((size_t)(end - name) > QUEUE_NAME_MAX)
        return 1;
    memcpy(queue, name, (size_t)(end - name));
    queue[end - name] = '\0';
    check_flag(d, queue); /* sets a new watch, then applies what it finds */
    return 1;
}
