#include "periodic.h"

#include <event2/event.h>
#include <stdlib.h>

#include "units.h"

struct periodic {
    struct event *ev;
    struct timeval every;
    periodic_fn fn;
    void *arg;
};

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct periodic *p = arg;
    p->fn(p->arg);
}

struct periodic *periodic_new(struct event_base *base, int64_t every_ms, periodic_fn fn,
                              void *arg)
{
    struct periodic *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    *p = (struct periodic){.every = units_ms_timeval(every_ms), .fn = fn, .arg = arg};
    /* EV_PERSIST: libevent adds it again from its due time, or from now after a run_now */
    p->ev = event_new(base, -1, EV_PERSIST, on_timer, p);
    if (!p->ev) {
        free(p);
        return NULL;
    }
    return p;
}

int periodic_start(struct periodic *p) { return event_add(p->ev, &p->every) == 0 ? 0 : -1; }

void periodic_run_now(struct periodic *p)
{
    /* added for its period (libevent re-adds a persistent timer only if it was); activated
     * without EV_TIMEOUT, so that the next run is counted from this one, not from the due
     * time it had */
    event_add(p->ev, &p->every);
    event_active(p->ev, 0, 0);
}

void periodic_free(struct periodic *p)
{
    if (!p)
        return;
    event_free(p->ev);
    free(p);
}
