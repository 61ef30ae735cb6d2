#include "reload.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "log.h"
#include "pause.h"
#include "pending.h"
#include "scheduler.h"
#include "web.h"
#include "zklog.h"

static int same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Keys the daemon reads once (sockets, the session, paths in ZooKeeper): the new value
 * waits for a restart. */
static void restart_only(const char *key, int unchanged)
{
    if (!unchanged)
        log_warn("reload: %s changed: restart needed (the running value stays)", key);
}

static void check_restart_keys(const struct config *live, const struct config *next)
{
    restart_only("daemon.socket", same(live->socket_path, next->socket_path));
    restart_only("daemon.socket_mode", live->socket_mode == next->socket_mode);
    restart_only("daemon.max_payload", live->max_payload == next->max_payload);
    restart_only("daemon.lookahead", live->lookahead_ms == next->lookahead_ms);
    restart_only("daemon.clock", live->clock_local == next->clock_local);
    restart_only("zookeeper.hosts", same(live->zk_hosts, next->zk_hosts));
    restart_only("zookeeper.root", same(live->zk_root, next->zk_root));
    restart_only("zookeeper.session_timeout",
                 live->session_timeout_ms == next->session_timeout_ms);
    restart_only("zookeeper.auth", same(live->zk_auth, next->zk_auth));
    restart_only("zookeeper.acl", same(live->zk_acl_text, next->zk_acl_text));
    restart_only("metrics.listen", same(live->metrics_host, next->metrics_host) &&
                                   live->metrics_port == next->metrics_port);
    restart_only("web.dashboard", live->web_dashboard == next->web_dashboard);
}

static void check_restart_queue_keys(const struct queue_config *live,
                                     const struct queue_config *next)
{
    char key[QUEUE_NAME_MAX + 40];
    snprintf(key, sizeof key, "queue %s.format", live->name);
    restart_only(key, live->format == next->format);
    snprintf(key, sizeof key, "queue %s.curator_path", live->name);
    restart_only(key, same(live->curator_path, next->curator_path));
    snprintf(key, sizeof key, "queue %s.curator_lock_path", live->name);
    restart_only(key, same(live->curator_lock_path, next->curator_lock_path));
}

static void apply_logging(struct config *live, const struct config *next)
{
    if (live->log_level != next->log_level)
        log_info("reload: daemon.log_level changed");
    log_set_level(next->log_level);
    zklog_set_level(next->log_level);
    if (live->log_target != next->log_target || live->log_facility != next->log_facility ||
        live->log_timestamps != next->log_timestamps) {
        log_info("reload: log target changed; the next lines go there");
        log_configure("deferd", next->log_target, next->log_facility, next->log_timestamps);
    }
    if (live->drain_grace_ms != next->drain_grace_ms)
        log_info("reload: daemon.drain_grace changed");
    live->drain_grace_ms = next->drain_grace_ms; /* read when a drain starts */
    if (live->clock_warn_ms != next->clock_warn_ms || live->clock_limit_ms != next->clock_limit_ms)
        log_info("reload: daemon.clock_warn or clock_limit changed");
    live->clock_warn_ms = next->clock_warn_ms; /* read at each clock sample */
    live->clock_limit_ms = next->clock_limit_ms;
    if (live->hold_writes_ms != next->hold_writes_ms)
        log_info("reload: daemon.hold_writes changed");
    live->hold_writes_ms = next->hold_writes_ms; /* what is held waits by the new value */
    live->log_level = next->log_level;
    live->log_target = next->log_target;
    live->log_facility = next->log_facility;
    live->log_timestamps = next->log_timestamps;
}

/* Read at each depth refresh (depth.c): the next one follows the new values. */
static void apply_depth(struct config *live, const struct config *next)
{
    if (live->depth_interval_ms != next->depth_interval_ms ||
        live->depth_max_reads != next->depth_max_reads || live->census_rate != next->census_rate)
        log_info("reload: metrics.depth_interval, depth_max_reads or census_rate changed");
    live->depth_interval_ms = next->depth_interval_ms;
    live->depth_max_reads = next->depth_max_reads;
    live->census_rate = next->census_rate;
}

/* [web]: tokens are rotated, actions and read_token turned on or off, by a reload; the
 * dashboard's own session reads the new file from its next page on. */
static void apply_web(struct deferd *d, struct config *live, struct config *next)
{
    struct web_token *tokens = live->web_tokens;
    size_t ntokens = live->web_ntokens;
    char *file = live->web_token_file;
    live->web_tokens = next->web_tokens;
    live->web_ntokens = next->web_ntokens;
    live->web_token_file = next->web_token_file;
    next->web_tokens = tokens;
    next->web_ntokens = ntokens;
    next->web_token_file = file;
    char *hosts = live->web_allowed_hosts;
    live->web_allowed_hosts = next->web_allowed_hosts;
    next->web_allowed_hosts = hosts;
    live->web_actions = next->web_actions;
    live->web_read_token = next->web_read_token;
    web_reloaded(d->web);
}

/* A queue's settings that are read at each use (put, delivery, nack, settle): a new value
 * holds from the next use on. */
enum kind { K_U32, K_U64, K_MS, K_FLAG };
static const struct {
    const char *key;
    size_t off;
    enum kind kind;
} live_keys[] = {
    {"priority", offsetof(struct queue_config, priority), K_U32},
    {"ttr", offsetof(struct queue_config, ttr_ms), K_MS},
    {"max_attempts", offsetof(struct queue_config, max_attempts), K_U32},
    {"backoff_min", offsetof(struct queue_config, backoff_min_ms), K_MS},
    {"backoff_max", offsetof(struct queue_config, backoff_max_ms), K_MS},
    {"backoff_jitter", offsetof(struct queue_config, backoff_jitter), K_U32},
    {"max_pending", offsetof(struct queue_config, max_pending), K_U64},
    {"key_retention", offsetof(struct queue_config, key_retention_ms), K_MS},
    {"concurrency", offsetof(struct queue_config, concurrency), K_U32},
    {"group_concurrency", offsetof(struct queue_config, group_concurrency), K_U32},
    {"rate", offsetof(struct queue_config, rate_n), K_U32},
    {"rate window", offsetof(struct queue_config, rate_window_ms), K_MS},
    {"group_rate", offsetof(struct queue_config, group_rate_n), K_U32},
    {"group_rate window", offsetof(struct queue_config, group_rate_window_ms), K_MS},
    {"curator_corrupt", offsetof(struct queue_config, curator_delete_corrupt), K_FLAG},
};

static uint64_t get_key(const struct queue_config *q, size_t i)
{
    const char *p = (const char *)q + live_keys[i].off;
    switch (live_keys[i].kind) {
    case K_U32: return *(const uint32_t *)p;
    case K_FLAG: return (uint64_t)*(const int *)p;
    default: return *(const uint64_t *)p;
    }
}

static void set_key(struct queue_config *q, size_t i, uint64_t v)
{
    char *p = (char *)q + live_keys[i].off;
    switch (live_keys[i].kind) {
    case K_U32: *(uint32_t *)p = (uint32_t)v; break;
    case K_FLAG: *(int *)p = (int)v; break;
    default: *(uint64_t *)p = v;
    }
}

/* producers and consumers hold from the next request on (the lists are only read by the
 * loop, on each request); the old lists go with NEXT. */
static void apply_access(struct queue_config *live, struct queue_config *next)
{
    char was[256], now[256];
    struct access_list *l[2] = {&live->producers, &live->consumers};
    struct access_list *n[2] = {&next->producers, &next->consumers};
    for (int i = 0; i < 2; i++) {
        access_format(l[i], was, sizeof was);
        access_format(n[i], now, sizeof now);
        if (strcmp(was, now) != 0)
            log_info("reload: queue %s: %s %s -> %s", live->name, i ? "consumers" : "producers",
                     was, now);
        struct access_list t = *l[i];
        *l[i] = *n[i];
        *n[i] = t;
    }
}

/* Copies the live keys into the running queue's own object, which the dispatcher, its jobs
 * and the consumers point to; one line names what changed. */
static void apply_queue(struct queue_config *live, struct queue_config *next)
{
    char changes[512] = "";
    size_t n = 0;
    for (size_t i = 0; i < sizeof live_keys / sizeof *live_keys; i++) {
        uint64_t was = get_key(live, i), now = get_key(next, i);
        if (was == now)
            continue;
        set_key(live, i, now);
        if (n < sizeof changes)
            n += (size_t)snprintf(changes + n, sizeof changes - n, "%s%s %llu -> %llu%s",
                                  n ? ", " : "", live_keys[i].key, (unsigned long long)was,
                                  (unsigned long long)now,
                                  live_keys[i].kind == K_MS ? " ms" : "");
    }
    if (n)
        log_info("reload: queue %s: %s", live->name, changes);
    if (live->nweights != next->nweights ||
        memcmp(live->weights, next->weights, next->nweights * sizeof *next->weights) != 0) {
        memcpy(live->weights, next->weights, sizeof live->weights);
        live->nweights = next->nweights;
        log_info("reload: queue %s: group_weights changed", live->name);
    }
    apply_access(live, next);
    check_restart_queue_keys(live, next);
}

/* Two running queues must not consume one Curator path; a queue left in service after
 * its removal from the file still holds its path. */
static const struct queue_config *path_taken(const struct config *live, const char *path)
{
    for (size_t i = 0; *path && i < live->nqueues; i++)
        if (strcmp(live->queues[i]->curator_path, path) == 0)
            return live->queues[i];
    return NULL;
}

/* A new queue: its object moves from NEXT into LIVE (none of LIVE's move), and the
 * dispatcher gets its queue; the rest (mirror, Curator listing, pending counter) starts
 * on the first SUB or put, as for the queues read at start. */
static int add_queue(struct deferd *d, struct config *live, struct queue_config **slot)
{
    struct queue_config *qc = *slot;
    const struct queue_config *other = path_taken(live, qc->curator_path);
    if (other) {
        log_error("reload: queue %s not added: curator_path %s is still the path of queue %s",
                  qc->name, qc->curator_path, other->name);
        return -1;
    }
    struct queue_config **grown = realloc(live->queues, (live->nqueues + 1) * sizeof *grown);
    if (!grown)
        return -1;
    live->queues = grown;
    if (dispatcher_add_queue(d->dispatcher, qc) != 0) {
        log_error("reload: queue %s not added: out of memory", qc->name);
        return -1;
    }
    qc->index = live->nqueues;
    live->queues[live->nqueues++] = qc;
    *slot = NULL;
    pause_follow(d, qc->name); /* it may have been paused before this daemon knew it */
    log_info("reload: queue %s added", qc->name);
    return 0;
}

static void apply_queues(struct deferd *d, struct config *live, struct config *next)
{
    size_t old = live->nqueues;
    for (size_t i = 0; i < old; i++)
        if (!config_queue(next, live->queues[i]->name))
            log_warn("reload: queue %s is no longer in the file: it is still served, with "
                     "its last settings, until a restart", live->queues[i]->name);
    for (size_t i = 0; i < next->nqueues; i++) {
        struct queue_config *q = (struct queue_config *)config_queue(live, next->queues[i]->name);
        if (q)
            apply_queue(q, next->queues[i]);
        else
            add_queue(d, live, &next->queues[i]);
    }
}

/* The schedules are the file's as they are now: the scheduler takes the new sections on
 * (by name) before the old ones are freed with NEXT. */
static void apply_schedules(struct deferd *d, struct config *live, struct config *next)
{
    struct schedule_config **v = live->schedules;
    size_t n = live->nschedules;
    live->schedules = next->schedules;
    live->nschedules = next->nschedules;
    next->schedules = v;
    next->nschedules = n;
    scheduler_reload(d->scheduler);
}

int reload_config(struct deferd *d, struct config *live, const char *const *overrides,
                  size_t noverrides)
{
    struct config next;
    char err[1024];
    if (config_load(live->path, overrides, noverrides, &next, err, sizeof err) != 0) {
        log_error("reload refused: %s; running on with the previous configuration", err);
        return -1;
    }
    apply_logging(live, &next);
    apply_depth(live, &next);
    apply_web(d, live, &next);
    check_restart_keys(live, &next);
    apply_queues(d, live, &next);
    apply_schedules(d, live, &next);
    pending_reloaded(d->pending);
    dispatcher_reloaded(d->dispatcher);
    log_info("reload: %s applied; %zu queue(s)", live->path, live->nqueues);
    config_free(&next);
    return 0;
}
