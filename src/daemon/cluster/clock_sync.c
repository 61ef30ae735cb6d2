#include "clock_sync.h"

#include <event2/event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock_estimate.h"
#include "cluster_time.h"
#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "layout.h"
#include "log.h"
#include "units.h"
#include "zkstore.h"

/* A sample every 10 s keeps the drift allowance (clock_estimate.h) near 1 ms; right after a
 * connection a few quick ones narrow the bounds to about the best round trip. */
#define CLOCK_REFRESH_MS 10000
#define CLOCK_QUICK_MS 100
#define CLOCK_QUICK_SAMPLES 4

struct clock_sync {
    struct deferd *d;
    struct clock_estimate est;
    enum clock_state state;
    struct event *timer;
    char path[LAYOUT_PATH_MAX];
    int node_made;   /* our node exists (in this session) */
    int busy;        /* a create or write of it is out */
    int quick;       /* quick samples left */
    int warned;      /* the skew is above clock_warn, and that was logged */
    int tries;       /* creates of the node that found no parent (zkstore_parents_missing) */
    void (*ready)(void *ctx);
    void *ready_ctx;
};

static const char *const state_names[CLK_COUNT] = {
    "unsynced", "synced", "local", "denied", "over_limit",
};

const char *clock_state_name(enum clock_state st) { return state_names[st]; }

void clock_sync_on_ready(struct clock_sync *cs, void (*fn)(void *ctx), void *ctx)
{
    cs->ready = fn;
    cs->ready_ctx = ctx;
}

static void tell_ready(struct clock_sync *cs)
{
    if (cs->ready)
        cs->ready(cs->ready_ctx);
}

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void clock_sync_report(const struct clock_sync *cs, struct clock_report *out)
{
    *out = (struct clock_report){.state = cs->state, .have = cs->est.have,
                                 .samples = cs->est.samples, .jumps = cs->est.jumps};
    if (!cs->est.have)
        return;
    int64_t mono = cluster_mono_us(), wall = wall_us(), lo, hi;
    clock_estimate_bounds(&cs->est, mono, &lo, &hi);
    /* ZooKeeper's time now is mono + offset; the host's is wall. */
    out->skew_ms = ((double)(wall - mono) - (double)(lo + hi) / 2) / 1000;
    out->error_ms = (double)(hi - lo) / 2000;
}

static void set_state(struct clock_sync *cs, enum clock_state st)
{
    cs->state = st;
    dispatcher_hold_for_clock(cs->d->dispatcher, st == CLK_UNSYNCED || st == CLK_OVER_LIMIT);
}

/* The skew against clock_warn and clock_limit (read each time: SIGHUP may change them). */
static void judge(struct clock_sync *cs)
{
    const struct config *cfg = cs->d->cfg;
    struct clock_report r;
    clock_sync_report(cs, &r);
    double mag = fabs(r.skew_ms);
    if (cs->state != CLK_LOCAL && cfg->clock_limit_ms && mag > (double)cfg->clock_limit_ms) {
        if (cs->state != CLK_OVER_LIMIT)
            log_error("cluster clock: this host's clock is %+.0f ms off ZooKeeper's, beyond "
                      "[daemon] clock_limit (%llu ms): no job is pushed until it is back "
                      "within (check NTP on this host)", r.skew_ms,
                      (unsigned long long)cfg->clock_limit_ms);
        set_state(cs, CLK_OVER_LIMIT);
        return;
    }
    if (cs->state == CLK_OVER_LIMIT)
        log_info("cluster clock: this host's clock is %+.0f ms off ZooKeeper's, within "
                 "clock_limit again: pushing jobs", r.skew_ms);
    if (cs->state != CLK_LOCAL)
        set_state(cs, CLK_SYNCED);
    if (mag > (double)cfg->clock_warn_ms && !cs->warned) {
        cs->warned = 1;
        log_warn("cluster clock: this host's clock is %+.1f ms (+-%.1f) off ZooKeeper's, more "
                 "than [daemon] clock_warn (%llu ms); %s", r.skew_ms, r.error_ms,
                 (unsigned long long)cfg->clock_warn_ms,
                 cs->state == CLK_LOCAL ? "with clock = local, jobs are due by this host's "
                 "clock: check NTP" : "due times are judged by ZooKeeper's clock, but check "
                 "NTP on this host");
    } else if (mag < (double)cfg->clock_warn_ms / 2 && cs->warned) {
        cs->warned = 0;
        log_info("cluster clock: this host's clock is %+.1f ms off ZooKeeper's again",
                 r.skew_ms);
    }
}

static void sampled(struct clock_sync *cs, const struct zk_result *res)
{
    enum clock_sample k = clock_estimate_add(&cs->est, res->sent_ns / 1000, res->done_ns / 1000,
                                             res->stat.mtime);
    if (k == CLOCK_REFUSED)
        return;
    if (cs->state != CLK_LOCAL)
        cluster_time_publish(cs->est.lo_us, cs->est.hi_us, cs->est.ref_us);
    struct clock_report r;
    clock_sync_report(cs, &r);
    int first = k == CLOCK_FIRST && cs->state == CLK_UNSYNCED;
    if (k == CLOCK_FIRST)
        log_info("cluster clock: this host's clock is %+.1f ms (+-%.1f) off ZooKeeper's; "
                 "due times are judged by %s clock", r.skew_ms, r.error_ms,
                 cs->state == CLK_LOCAL ? "this host's (clock = local)" : "ZooKeeper's");
    else if (k == CLOCK_JUMPED)
        log_warn("cluster clock: ZooKeeper's clock moved against ours (a new leader with "
                 "another clock, or a clock stepped); the estimate starts again at %+.1f ms "
                 "(+-%.1f)", r.skew_ms, r.error_ms);
    judge(cs);
    if (first)
        tell_ready(cs); /* synced (or over the limit) before the daemon says it is ready */
}

static void denied(struct clock_sync *cs, int rc)
{
    if (cs->state != CLK_DENIED)
        log_error("cluster clock: %s: cannot write our clock node (%s); due times are judged "
                  "by this host's clock until deferd may (it needs c on %s/daemons and its "
                  "parent)", cs->path, zk_reason(rc), cs->d->cfg->zk_root);
    int was_unsynced = cs->state == CLK_UNSYNCED;
    cluster_time_unpublish();
    cluster_time_require(0);
    set_state(cs, CLK_DENIED);
    if (was_unsynced)
        tell_ready(cs);
}

static void next_sample(struct clock_sync *cs)
{
    int ms = cs->quick > 0 ? CLOCK_QUICK_MS : CLOCK_REFRESH_MS;
    if (cs->quick > 0)
        cs->quick--;
    struct timeval tv = units_ms_timeval(ms);
    evtimer_add(cs->timer, &tv);
}

static void make_node(struct clock_sync *cs);
static void write_node(struct clock_sync *cs);

/* A call about our node failed: a denial is said (and the host's clock used); unless the
 * session is gone (the next session_up starts again), the next sample tries again, since
 * the connection may come back or the ACL be mended. */
static void carry_on(struct clock_sync *cs, int rc)
{
    if (rc == ZNOAUTH)
        denied(cs, rc);
    if (!zk_session_gone(rc))
        next_sample(cs);
}

static void on_written(const struct zk_result *res, void *ctx)
{
    struct clock_sync *cs = ctx;
    cs->busy = 0;
    if (res->rc == ZOK) {
        if (res->has_stat)
            sampled(cs, res);
        next_sample(cs);
    } else if (res->rc == ZNONODE) {
        cs->node_made = 0; /* deleted by hand: made again now (or at the next session_up) */
        if (zkstore_connected(cs->d->zs))
            make_node(cs);
    } else {
        carry_on(cs, res->rc);
    }
}

/* The node's data: who we are and what we last measured, for operators (zkCli get). */
static void write_node(struct clock_sync *cs)
{
    char data[256];
    struct clock_report r;
    clock_sync_report(cs, &r);
    snprintf(data, sizeof data, "ident=%s state=%s skew_ms=%.1f error_ms=%.1f\n",
             dispatcher_ident(cs->d->dispatcher), state_names[r.state], r.skew_ms, r.error_ms);
    if (zkstore_set(cs->d->zs, cs->path, data, strlen(data), on_written, cs) == ZOK)
        cs->busy = 1;
}

static void on_parents(const struct zk_result *res, void *ctx)
{
    struct clock_sync *cs = ctx;
    cs->busy = 0;
    if (res->rc == ZOK)
        make_node(cs);
    else
        carry_on(cs, res->rc);
}

static void on_made(const struct zk_result *res, void *ctx)
{
    struct clock_sync *cs = ctx;
    cs->busy = 0;
    if (res->rc == ZOK || res->rc == ZNODEEXISTS) {
        cs->node_made = 1;
        cs->tries = 0;
        write_node(cs);
        return;
    }
    if (res->rc == ZNONODE) {
        int rc = zkstore_parents_missing(cs->d->zs, cs->path, &cs->tries, on_parents, cs);
        if (rc == ZK_PARENTS_RESEND)
            make_node(cs); /* pipelined behind the directories, on the same session */
        else if (rc == ZK_PARENTS_ASKED)
            cs->busy = 1;
        else
            next_sample(cs);
        return;
    }
    carry_on(cs, res->rc);
}

static void make_node(struct clock_sync *cs)
{
    if (zkstore_create(cs->d->zs, cs->path, "", 0, 1, on_made, cs) == ZOK)
        cs->busy = 1;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct clock_sync *cs = arg;
    if (cs->busy || !zkstore_connected(cs->d->zs))
        return; /* the answer, or the next session_up, carries on */
    if (cs->node_made)
        write_node(cs);
    else
        make_node(cs);
}

void clock_sync_session_up(struct clock_sync *cs)
{
    cs->quick = CLOCK_QUICK_SAMPLES;
    evtimer_del(cs->timer);
    if (!cs->busy)
        make_node(cs); /* a new session has lost it; after a reconnection it exists */
}

struct clock_sync *clock_sync_new(struct deferd *d)
{
    struct clock_sync *cs = calloc(1, sizeof *cs);
    if (!cs)
        return NULL;
    cs->d = d;
    clock_estimate_init(&cs->est);
    cs->timer = evtimer_new(d->base, on_timer, cs);
    if (!cs->timer) {
        free(cs);
        return NULL;
    }
    layout_root_path(cs->path, sizeof cs->path, d->cfg->zk_root, LAYOUT_DAEMONS,
                     dispatcher_ident(d->dispatcher));
    set_state(cs, d->cfg->clock_local ? CLK_LOCAL : CLK_UNSYNCED);
    cluster_time_require(!d->cfg->clock_local); /* no due time from the host's clock */
    return cs;
}

void clock_sync_free(struct clock_sync *cs)
{
    if (!cs)
        return;
    event_free(cs->timer);
    free(cs);
}
