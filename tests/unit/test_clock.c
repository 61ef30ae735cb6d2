/* The cluster clock's estimator (clock_estimate.c) and the published time (cluster_time.c). */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "clock_estimate.h"
#include "cluster_time.h"

/* A leader whose clock reads monotonic + OFFSET (µs) stamps a write at a moment between
 * SENT and RECV, in whole milliseconds. */
static int64_t stamp_at(int64_t offset_us, int64_t moment_us)
{
    int64_t t = moment_us + offset_us;
    return t / 1000 - (t % 1000 < 0);
}

static int contains(const struct clock_estimate *e, int64_t now, int64_t offset)
{
    int64_t lo, hi;
    clock_estimate_bounds(e, now, &lo, &hi);
    return lo <= offset && offset <= hi;
}

static void test_first_sample(void)
{
    struct clock_estimate e;
    clock_estimate_init(&e);
    int64_t off = 5000123, sent = 1000000, recv = 1000800; /* 0.8 ms round trip */
    CHECK(clock_estimate_add(&e, sent, recv, stamp_at(off, 1000300)) == CLOCK_FIRST);
    CHECK(contains(&e, recv, off));
    int64_t lo, hi;
    clock_estimate_bounds(&e, recv, &lo, &hi);
    CHECK(hi - lo == 1800); /* the round trip plus the stamp's millisecond */
    CHECK(clock_estimate_add(&e, 10, 9, 0) == CLOCK_REFUSED);
    CHECK(e.samples == 1);
}

/* Random round trips, stamps anywhere inside them, a drift within the allowance: the
 * bounds always hold the true offset, and narrow to about the shortest round trip. */
static void test_random_samples(void)
{
    struct clock_estimate e;
    clock_estimate_init(&e);
    srand(7);
    int64_t off = -4999877, t = 50000000, lo, hi, rtt = 0, narrower = 0;
    for (int i = 0; i < 2000; i++) {
        int64_t sent = t, recv;
        rtt = 200 + rand() % 5000;
        recv = t + rtt;
        int64_t moment = sent + rand() % (rtt + 1);
        enum clock_sample k = clock_estimate_add(&e, sent, recv, stamp_at(off, moment));
        CHECK(k == CLOCK_FIRST || k == CLOCK_NARROWED);
        CHECK(contains(&e, recv, off));
        clock_estimate_bounds(&e, recv, &lo, &hi);
        narrower += hi - lo < rtt + 1000; /* earlier samples helped */
        CHECK(contains(&e, recv + 30000000, off + 30 * 50)); /* 30 s later, 50 ppm apart */
        t += 100000 + rand() % 10000000; /* 0.1 to 10 s */
        off += (t - recv) * 50 / 1000000;
    }
    clock_estimate_bounds(&e, e.ref_us, &lo, &hi);
    CHECK(hi - lo <= rtt + 1000);
    CHECK(narrower > 1000);
    CHECK(e.jumps == 0);
}

static void test_widening_and_jump(void)
{
    struct clock_estimate e;
    clock_estimate_init(&e);
    int64_t off = 1000000, lo, hi, lo2, hi2;
    clock_estimate_add(&e, 0, 1000, stamp_at(off, 500));
    clock_estimate_bounds(&e, 1000, &lo, &hi);
    clock_estimate_bounds(&e, 1000 + 10000000, &lo2, &hi2); /* 10 s later */
    CHECK(lo - lo2 == 1000 && hi2 - hi == 1000);            /* 100 ppm each way */
    /* The leader changes to a clock 2 s behind. */
    off -= 2000000;
    CHECK(clock_estimate_add(&e, 2000000, 2001000, stamp_at(off, 2000500)) == CLOCK_JUMPED);
    CHECK(contains(&e, 2001000, off));
    CHECK(e.jumps == 1 && e.samples == 2);
}

static void test_published_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t wall = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int64_t now = cluster_now_ms();
    CHECK(now >= wall && now - wall < 1000); /* nothing published: the wall clock */
    /* Published: 5 s behind the wall clock (a host 5 s fast). */
    int64_t mono = cluster_mono_us(), lo = (wall - 5000) * 1000 - mono;
    cluster_time_publish(lo, lo + 2000, mono);
    now = cluster_now_ms();
    CHECK(now >= wall - 5000 - 1 && now < wall - 5000 + 1000);
    int64_t latest = cluster_latest_ms();
    CHECK(latest >= now + 2 && latest <= now + 3);
    /* An hour after the sample, each bound has given up 360 ms of drift. */
    cluster_time_publish(lo, lo + 2000, mono - 3600LL * 1000000);
    int64_t later = cluster_now_ms();
    CHECK(later <= now - 359 && later >= now - 361 - 1000);
    CHECK(cluster_latest_ms() - later >= 720 + 2 && cluster_latest_ms() - later <= 720 + 4);
    cluster_time_unpublish();
    CHECK(cluster_now_ms() >= wall);
}

int main(void)
{
    test_first_sample();
    test_random_samples();
    test_widening_and_jump();
    test_published_time();
    return check_report("clock");
}
