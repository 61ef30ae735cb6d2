#include "drain.h"

#include <event2/event.h>
#include <stdint.h>
#include <stdlib.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "log.h"
#include "pending.h"
#include "server.h"
#include "units.h"

#define DRAIN_POLL_MS 20
#define RELEASE_WAIT_MS 5000 /* for the releases at the end of the grace period */

struct drain {
    struct deferd *d;
    struct event *tick;
    int64_t grace_end;      /* monotonic ms */
    int64_t release_end;    /* monotonic ms, once held jobs were released; else 0 */
};

static void finish(struct drain *dr, const char *why)
{
    log_info("drain: %s; exiting", why);
    event_base_loopbreak(dr->d->base);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct drain *dr = arg;
    struct deferd *d = dr->d;
    size_t busy = dispatcher_busy(d->dispatcher), replies = server_unanswered_replies(d->server);
    int64_t now = units_mono_ms();
    /* max_pending counters too: a change not written now would stay in the sum for good */
    if (busy == 0 && replies == 0 && pending_flush(d->pending) == 0) {
        finish(dr, dr->release_end ? "held jobs released" : "every held job was settled");
        return;
    }
    if (!dr->release_end && now >= dr->grace_end) {
        log_warn("drain: grace period over with %zu job(s) still held; releasing them", busy);
        dr->release_end = now + RELEASE_WAIT_MS;
        dispatcher_release_held(d->dispatcher);
    } else if (dr->release_end && now >= dr->release_end) {
        /* ZooKeeper did not answer in time: our session ends now, and the locks with it. */
        finish(dr, "releases unanswered; the closing session drops the locks");
        return;
    }
    struct timeval tv = units_ms_timeval(DRAIN_POLL_MS);
    evtimer_add(dr->tick, &tv);
}

void drain_signal(struct deferd *d, int sig)
{
    if (d->drain || !d->dispatcher || !d->server) {
        log_info("signal %d: stopping at once", sig);
        event_base_loopbreak(d->base);
        return;
    }
    struct drain *dr = calloc(1, sizeof *dr);
    if (!dr || !(dr->tick = evtimer_new(d->base, on_tick, dr))) {
        free(dr);
        log_error("signal %d: out of memory for the drain; stopping at once", sig);
        event_base_loopbreak(d->base);
        return;
    }
    dr->d = d;
    dr->grace_end = units_mono_ms() + (int64_t)d->cfg->drain_grace_ms;
    d->drain = dr;
    log_info("signal %d: draining: %zu job(s) held, %llu ms to settle them (a second "
             "signal stops at once)", sig, dispatcher_busy(d->dispatcher),
             (unsigned long long)d->cfg->drain_grace_ms);
    dispatcher_drain(d->dispatcher);
    server_broadcast_state(d->server, "DRAINING");
    on_tick(-1, 0, dr);
}

void drain_free(struct drain *dr)
{
    if (!dr)
        return;
    if (dr->tick)
        event_free(dr->tick);
    free(dr);
}
