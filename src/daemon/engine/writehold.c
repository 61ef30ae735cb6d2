#include "writehold.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_time.h"
#include "protocol.h"
#include "reply.h"
#include "units.h"

struct held_write {
    struct held_write *next;
    const struct writehold_ops *ops;
    void *ctx;
    int64_t since_ms;           /* monotonic: held then; failed hold_ms later */
    int is_put;                 /* a PUT or BATCH not taken on yet: counts as open */
};

struct writehold {
    struct dispatcher *ds;
    struct writehold_env env;
    struct held_write *head, **tail;  /* arrival order (one held again keeps its start) */
    struct event *timer;
    struct writehold_stats st;
};

/* ---- held requests: their handler is called again, or they are answered ---- */

/* The request's owner: its handler and the put slot count are the dispatcher's. */
struct held_request {
    struct writehold *wh;
    writehold_fn *fn;
    struct proto_request req;
    struct reply *r;
};

static void request_free(struct held_request *hr)
{
    int was_put = proto_stores_jobs(hr->req.cmd);
    struct writehold *wh = hr->wh;
    proto_request_clear(&hr->req);
    free(hr);
    if (was_put) /* whoever waits for max_open_puts may go */
        wh->env.put_ended(wh->ds);
}

static void request_release(struct dispatcher *ds, void *ctx)
{
    struct held_request *hr = ctx;
    hr->fn(ds, &hr->req, hr->r); /* takes the request on (put.c counts it) */
    request_free(hr);
}

/* The words for people of a held write's end. */
static const char *why_text(enum refusal_reason why)
{
    switch (why) {
    case RR_DRAINING: return "deferd is stopping";
    case RR_NO_SESSION: return "the ZooKeeper session was lost";
    default: return "ZooKeeper did not come back within [daemon] hold_writes";
    }
}

static void request_fail(struct dispatcher *ds, void *ctx, enum refusal_reason why)
{
    (void)ds;
    struct held_request *hr = ctx;
    int put = proto_stores_jobs(hr->req.cmd);
    const char *what = hr->req.cmd == CMD_CANCEL ? "nothing was cancelled"
                       : hr->req.cmd == CMD_RESCHEDULE ? "nothing was rescheduled"
                       : hr->req.cmd == CMD_BATCH || hr->req.cmd == CMD_FLOW ? "not stored: none of the jobs"
                       : "not stored";
    struct refusal f = {.stored = put ? RS_NO : RS_UNSAID, .reason = why};
    reply_refuse(hr->r, PE_UNAVAILABLE, &f, "%s (%s)", what, why_text(why));
    request_free(hr);
}

static const struct writehold_ops request_ops = {request_release, request_fail};

/* A delay counts from the request's arrival, not from its release: made a due time now
 * when ZooKeeper's clock is known (else at the release, the first moment it is). */
static void fix_due_times(struct proto_request *req)
{
    if (!cluster_time_ready())
        return;
    uint64_t now = (uint64_t)cluster_latest_ms();
    if (req->has_delay) {
        req->has_delay = 0;
        req->has_at = 1;
        req->at_ms = now + req->delay_ms;
    }
    for (size_t i = 0; i < req->nitems; i++) {
        struct proto_put *pp = &req->items[i];
        if (pp->has_delay) {
            pp->has_delay = 0;
            pp->has_at = 1;
            pp->at_ms = now + pp->delay_ms;
        }
    }
}

/* ---- the line ---- */

static void on_timer(evutil_socket_t fd, short what, void *arg);

struct writehold *writehold_new(struct dispatcher *ds, const struct writehold_env *env,
                               struct event_base *base)
{
    struct writehold *wh = calloc(1, sizeof *wh);
    if (!wh)
        return NULL;
    wh->ds = ds;
    wh->env = *env;
    wh->tail = &wh->head;
    if (!(wh->timer = evtimer_new(base, on_timer, wh))) {
        free(wh);
        return NULL;
    }
    return wh;
}

static struct held_write *pop(struct writehold *wh)
{
    struct held_write *hw = wh->head;
    if (!hw)
        return NULL;
    wh->head = hw->next;
    if (!wh->head)
        wh->tail = &wh->head;
    wh->st.held--;
    wh->st.puts -= (size_t)hw->is_put;
    return hw;
}

static void fail_one(struct writehold *wh, struct held_write *hw, enum refusal_reason why)
{
    hw->ops->fail(wh->ds, hw->ctx, why);
    free(hw);
}

/* The timer for the earliest start: a write held again may start before those ahead. */
static void arm(struct writehold *wh)
{
    if (!wh->head) {
        evtimer_del(wh->timer);
        return;
    }
    int64_t first = wh->head->since_ms;
    for (const struct held_write *hw = wh->head; hw; hw = hw->next)
        first = hw->since_ms < first ? hw->since_ms : first;
    struct timeval tv = units_ms_timeval(first + wh->env.hold_ms(wh->ds) - units_mono_ms());
    evtimer_add(wh->timer, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct writehold *wh = arg;
    int64_t until = units_mono_ms() - wh->env.hold_ms(wh->ds); /* held before: expired */
    struct held_write *expired = NULL, **ep = &expired, **pp = &wh->head;
    while (*pp) { /* taken out first: answering one may hold another */
        struct held_write *hw = *pp;
        if (hw->since_ms > until) {
            pp = &hw->next;
            continue;
        }
        *pp = hw->next;
        if (wh->tail == &hw->next)
            wh->tail = pp;
        wh->st.held--;
        wh->st.puts -= (size_t)hw->is_put;
        hw->next = NULL;
        *ep = hw;
        ep = &hw->next;
    }
    for (struct held_write *hw = expired, *next; hw; hw = next) {
        next = hw->next;
        wh->st.expired++;
        fail_one(wh, hw, RR_HOLD_EXPIRED);
    }
    arm(wh);
}

static int add(struct writehold *wh, const struct writehold_ops *ops, void *ctx, int is_put,
               int64_t since_ms)
{
    struct held_write *hw = calloc(1, sizeof *hw);
    if (!hw)
        return 0;
    *hw = (struct held_write){.ops = ops, .ctx = ctx, .is_put = is_put,
                              .since_ms = since_ms ? since_ms : units_mono_ms()};
    *wh->tail = hw;
    wh->tail = &hw->next;
    wh->st.held++;
    wh->st.puts += (size_t)is_put;
    wh->st.total++;
    if (wh->head == hw || since_ms)
        arm(wh);
    return 1;
}

/* Holding is on, and needed. */
static int may_hold(const struct writehold *wh)
{
    return wh->env.hold_ms(wh->ds) > 0 && !wh->env.draining(wh->ds) && !wh->env.possible(wh->ds);
}

int writehold_add(struct writehold *wh, const struct writehold_ops *ops, void *ctx,
                  int64_t since_ms)
{
    return may_hold(wh) && add(wh, ops, ctx, 0, since_ms);
}

int writehold_take(struct writehold *wh, writehold_fn *fn, struct proto_request *req,
                   struct reply *r)
{
    struct held_request *hr;
    if (!may_hold(wh) || !(hr = calloc(1, sizeof *hr)))
        return 0;
    *hr = (struct held_request){.wh = wh, .fn = fn, .req = *req, .r = r};
    if (!add(wh, &request_ops, hr, proto_stores_jobs(req->cmd), 0)) {
        free(hr);
        return 0;
    }
    memset(req, 0, sizeof *req); /* its payloads are the held copy's now */
    fix_due_times(&hr->req);
    return 1;
}

void writehold_release(struct writehold *wh)
{
    struct held_write *hw;
    while (wh->env.possible(wh->ds) && (hw = pop(wh))) {
        hw->ops->release(wh->ds, hw->ctx);
        free(hw);
    }
    arm(wh);
}

void writehold_fail(struct writehold *wh, enum refusal_reason why)
{
    struct held_write *hw;
    while ((hw = pop(wh)))
        fail_one(wh, hw, why);
    arm(wh);
}

void writehold_report(const struct writehold *wh, struct writehold_stats *out)
{
    *out = wh->st;
}

void writehold_free(struct writehold *wh)
{
    if (!wh)
        return;
    writehold_fail(wh, RR_DRAINING);
    event_free(wh->timer);
    free(wh);
}
