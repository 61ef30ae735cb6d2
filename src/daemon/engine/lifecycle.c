#include "lifecycle.h"

#include <stddef.h>

#define B(s) JS_BIT(JS_##s)

/* Each event, the states it may start from and what it sends (docs/architecture.md has the
 * same table; unit.lifecycle holds them equal). Every transition here was made by the
 * integration suite when it was traced, or is made by a path of the code that no test
 * reaches on demand yet, named in its comment. */
static const struct job_rule rules[JE_COUNT] = {
    /* CHECKING: the watch could not be sent */
    [JE_WAIT] = {JS_DELAYED, B(HELD) | B(LOCKING) | B(SETTLING) | B(CHECKING), "nothing"},
    [JE_DUE] = {JS_READY, B(DELAYED) | B(ARMED) | B(HELD) | B(LOCKING) | B(SETTLING) |
                              B(CHECKING) | B(INFLIGHT), "nothing"},
    [JE_LOCK] = {JS_LOCKING, B(READY) | B(DELAYED),
                 "multi(create lock, create owner-S- sequential [, create slots] "
                 "[, start a rate slot]); "
                 "getData when the payload is not in memory; layout 3: getData unless our "
                 "put, then multi(delete job, ..., create claim)"},
    [JE_ARM] = {JS_ARMED, B(LOCKING), "nothing"},
    [JE_DELIVER] = {JS_INFLIGHT, B(LOCKING) | B(INFLIGHT) | B(SETTLING), "nothing"},
    /* ARMED, READY: a lock taken ahead given back; HELD: our own lock found by its watch */
    [JE_SETTLE] = {JS_SETTLING, B(INFLIGHT) | B(LOCKING) | B(SETTLING) | B(ARMED) | B(READY) |
                                    B(HELD),
                   "ack multi(delete owner, lock, job [, slot]); nack/release multi(delete "
                   "owner, lock [, move] [, slot]); or the reads that verify an unknown outcome; "
                   "a claimed job: the claim's versioned setData or delete [, move]"},
    [JE_KEEP] = {JS_INFLIGHT, B(SETTLING), "nothing"},
    /* ARMED, READY, INFLIGHT, HELD: a release whose lock may be someone else's by now */
    [JE_CHECK] = {JS_CHECKING, B(LOCKING) | B(ARMED) | B(READY) | B(INFLIGHT) | B(HELD),
                  "exists(lock, watch)"},
    [JE_PARK] = {JS_HELD, B(CHECKING) | B(INFLIGHT) | B(READY) | B(DELAYED) | B(SETTLING) |
                              B(LOCKING), "nothing"},
};

static const char *const state_names[JS_COUNT] = {
    "DELAYED", "READY", "LOCKING", "INFLIGHT", "SETTLING", "CHECKING", "HELD", "ARMED",
};

static const char *const event_names[JE_COUNT] = {
    "wait", "due", "lock", "arm", "deliver", "settle", "keep", "check", "park",
};

const struct job_rule *job_rule(enum job_event ev) { return &rules[ev]; }

int job_next_state(enum job_state from, enum job_event ev)
{
    if ((unsigned)from >= JS_COUNT || (unsigned)ev >= JE_COUNT)
        return -1;
    return rules[ev].from & JS_BIT(from) ? (int)rules[ev].to : -1;
}

const char *job_state_name(enum job_state st)
{
    return (unsigned)st < JS_COUNT ? state_names[st] : "?";
}

const char *job_event_name(enum job_event ev)
{
    return (unsigned)ev < JE_COUNT ? event_names[ev] : "?";
}
