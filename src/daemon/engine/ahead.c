/* The lock-ahead window of a queue (ahead.h). */
#include "ahead.h"

/* Each new round trip weighs 1/8: a few slow multis do not swing the window. */
#define RTT_WEIGHT_SHIFT 3

static void roll(struct ahead *a, int64_t now_ms)
{
    if (now_ms - a->bucket_at >= 2 * AHEAD_BUCKET_MS || now_ms < a->bucket_at) {
        a->answers_prev = a->answers_now = 0;
        a->bucket_at = now_ms;
    } else if (now_ms - a->bucket_at >= AHEAD_BUCKET_MS) {
        a->answers_prev = a->answers_now;
        a->answers_now = 0;
        a->bucket_at += AHEAD_BUCKET_MS;
    }
}

void ahead_answered(struct ahead *a, int64_t now_ms)
{
    roll(a, now_ms);
    a->answers_now++;
}

void ahead_lock_rtt(struct ahead *a, int64_t rtt_us)
{
    if (rtt_us < 0)
        return;
    if (!a->measured)
        a->rtt_us = rtt_us;
    else
        a->rtt_us += (rtt_us - a->rtt_us) / (1 << RTT_WEIGHT_SHIFT);
    a->measured = 1;
}

uint64_t ahead_window(struct ahead *a, int64_t now_ms, uint64_t credits)
{
    roll(a, now_ms);
    /* answers over the time they were counted in (the last bucket and this one so far) */
    int64_t span_us = (AHEAD_BUCKET_MS + (now_ms - a->bucket_at)) * 1000;
    uint64_t answers = (uint64_t)a->answers_now + a->answers_prev;
    uint64_t want = span_us > 0 ? answers * AHEAD_RTTS * (uint64_t)a->rtt_us / (uint64_t)span_us
                                : 0;
    if (answers && a->measured)
        want++; /* a job answered and a lock measured: at least one ahead */
    uint64_t most = credits * AHEAD_PER_CREDIT;
    return want < most ? want : most;
}
