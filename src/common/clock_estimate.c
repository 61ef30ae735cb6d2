#include "clock_estimate.h"

void clock_estimate_init(struct clock_estimate *e) { *e = (struct clock_estimate){0}; }

static int64_t drift_us(int64_t elapsed_us)
{
    return elapsed_us > 0 ? (elapsed_us * CLOCK_DRIFT_PPM + 999999) / 1000000 : 0;
}

void clock_estimate_bounds(const struct clock_estimate *e, int64_t now_us, int64_t *lo_us,
                           int64_t *hi_us)
{
    int64_t d = drift_us(now_us - e->ref_us);
    *lo_us = e->lo_us - d;
    *hi_us = e->hi_us + d;
}

enum clock_sample clock_estimate_add(struct clock_estimate *e, int64_t sent_us, int64_t recv_us,
                                     int64_t stamp_ms)
{
    if (recv_us < sent_us)
        return CLOCK_REFUSED;
    /* The stamp is whole milliseconds, rounded down: the moment lies in [stamp, stamp+1). */
    int64_t lo = stamp_ms * 1000 - recv_us, hi = (stamp_ms + 1) * 1000 - sent_us;
    enum clock_sample kind = CLOCK_FIRST;
    e->samples++;
    if (e->have) {
        int64_t clo, chi;
        clock_estimate_bounds(e, recv_us, &clo, &chi);
        if (clo <= hi && lo <= chi) {
            lo = clo > lo ? clo : lo;
            hi = chi < hi ? chi : hi;
            kind = CLOCK_NARROWED;
        } else {
            e->jumps++;
            kind = CLOCK_JUMPED;
        }
    }
    e->have = 1;
    e->lo_us = lo;
    e->hi_us = hi;
    e->ref_us = recv_us;
    return kind;
}
