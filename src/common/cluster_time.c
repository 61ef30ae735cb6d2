#include "cluster_time.h"

#include <pthread.h>
#include <time.h>

#include "clock_estimate.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int published, required;
static int64_t pub_lo_us, pub_hi_us, pub_ref_us;

static int64_t system_us(clockid_t which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The system's clocks, or a unit test's (cluster_time_set_source). */
static int64_t (*clock_us)(clockid_t which) = system_us;

void cluster_time_set_source(int64_t (*read)(clockid_t which))
{
    clock_us = read ? read : system_us;
}

int64_t cluster_mono_us(void) { return clock_us(CLOCK_MONOTONIC); }

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b < 0); }

/* The bounds of ZooKeeper's time now, in µs; the wall clock's when nothing is published. */
static void bounds(int64_t *lo_us, int64_t *hi_us)
{
    pthread_mutex_lock(&lock);
    struct clock_estimate e = {.have = published, .lo_us = pub_lo_us, .hi_us = pub_hi_us,
                               .ref_us = pub_ref_us};
    pthread_mutex_unlock(&lock);
    if (!e.have) {
        *lo_us = *hi_us = clock_us(CLOCK_REALTIME);
        return;
    }
    int64_t now = cluster_mono_us();
    clock_estimate_bounds(&e, now, lo_us, hi_us);
    *lo_us += now;
    *hi_us += now;
}

int64_t cluster_now_ms(void)
{
    int64_t lo, hi;
    bounds(&lo, &hi);
    return floor_div(lo, 1000);
}

int64_t cluster_latest_ms(void)
{
    int64_t lo, hi;
    bounds(&lo, &hi);
    return -floor_div(-hi, 1000);
}

void cluster_time_publish(int64_t lo_us, int64_t hi_us, int64_t ref_us)
{
    pthread_mutex_lock(&lock);
    published = 1;
    pub_lo_us = lo_us;
    pub_hi_us = hi_us;
    pub_ref_us = ref_us;
    pthread_mutex_unlock(&lock);
}

void cluster_time_unpublish(void)
{
    pthread_mutex_lock(&lock);
    published = 0;
    pthread_mutex_unlock(&lock);
}

void cluster_time_require(int on)
{
    pthread_mutex_lock(&lock);
    required = on;
    pthread_mutex_unlock(&lock);
}

int cluster_time_ready(void)
{
    pthread_mutex_lock(&lock);
    int ready = !required || published;
    pthread_mutex_unlock(&lock);
    return ready;
}
