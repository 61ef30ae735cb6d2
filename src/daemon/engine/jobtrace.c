/* Issue 43's optional trace (deferd run with DEFERD_TXN_TRACE=1): where a consumer slot's
 * time goes, as raw sums for STATS (tests/bench/trace43.py takes their differences). Off, each
 * hook costs one test. */
#include "jobtrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster_time.h"
#include "job.h"

static struct {
    int on;                                        /* -1: environment not read yet */
    unsigned long long held, due_wait_ms;          /* holds; wall ms from due to hold */
    unsigned long long pushed, hold_push_us;       /* hold -> push (the lock, if not ahead) */
    unsigned long long acked, push_ack_us;         /* push -> ack received */
    unsigned long long settled, ack_settle_us;     /* ack -> released (settle answered) */
    unsigned long long released, hold_release_us;  /* the whole slot, however it ended */
    unsigned long long hold_release_max_us;
} jt = {.on = -1};

static int jt_on(void)
{
    if (jt.on < 0) {
        const char *e = getenv("DEFERD_TXN_TRACE");
        jt.on = e && *e && strcmp(e, "0") != 0;
    }
    return jt.on;
}

static int64_t jt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static unsigned long long jt_since(int64_t t, int64_t now)
{
    return t && now > t ? (unsigned long long)(now - t) : 0;
}

void jobtrace_push(struct job *job)
{
    if (!jt_on() || !job->tr_hold_us)
        return;
    job->tr_push_us = jt_now();
    jt.pushed++;
    jt.hold_push_us += jt_since(job->tr_hold_us, job->tr_push_us);
}

void jobtrace_ack(struct job *job)
{
    if (!jt_on() || !job->tr_push_us)
        return;
    job->tr_ack_us = jt_now();
    jt.acked++;
    jt.push_ack_us += jt_since(job->tr_push_us, job->tr_ack_us);
}

int jobtrace_format(char *buf, size_t len)
{
    if (!jt_on() || !len)
        return 0;
    int n = snprintf(buf, len, " trace.jobs=%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu",
                     jt.held, jt.due_wait_ms, jt.pushed, jt.hold_push_us, jt.acked,
                     jt.push_ack_us, jt.settled, jt.ack_settle_us, jt.released,
                     jt.hold_release_us, jt.hold_release_max_us);
    return n < 0 ? 0 : (size_t)n >= len ? (int)len - 1 : n;
}

void jobtrace_hold(struct job *job)
{
    if (!jt_on())
        return;
    int64_t wall = cluster_now_ms();
    job->tr_hold_us = jt_now();
    job->tr_push_us = job->tr_ack_us = 0;
    jt.held++;
    if (wall > (int64_t)job->jn.due_ms)
        jt.due_wait_ms += (unsigned long long)(wall - (int64_t)job->jn.due_ms);
}

void jobtrace_release(struct job *job)
{
    if (!jt_on() || !job->tr_hold_us)
        return;
    int64_t now = jt_now();
    unsigned long long whole = jt_since(job->tr_hold_us, now);
    if (job->tr_ack_us) {
        jt.settled++;
        jt.ack_settle_us += jt_since(job->tr_ack_us, now);
    }
    jt.released++;
    jt.hold_release_us += whole;
    if (whole > jt.hold_release_max_us)
        jt.hold_release_max_us = whole;
    job->tr_hold_us = job->tr_push_us = job->tr_ack_us = 0;
}
