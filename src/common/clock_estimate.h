/* The offset from this host's monotonic clock to ZooKeeper's transaction clock, bounded.
 *
 * ZooKeeper's leader stamps every write's time into the znode it changes (mtime, ctime).
 * A write sent at monotonic SENT and answered at RECV was stamped between the two, so the
 * offset (ZooKeeper time minus monotonic time) lies in [stamp - RECV, stamp + 1 ms - SENT]:
 * half a round trip of error, whatever this host's wall clock says. Each sample narrows the
 * bounds (their intersection); between samples they widen by the clocks' possible drift. A
 * sample outside the bounds means the ensemble's clock moved (a new leader with another
 * clock, or its clock stepped): the bounds start again from that sample. Pure logic, all
 * times in microseconds. */
#ifndef DEFERD_CLOCK_ESTIMATE_H
#define DEFERD_CLOCK_ESTIMATE_H

#include <stdint.h>

/* How fast two clocks may drift apart, parts per million: unsynchronised quartz is within
 * 100 ppm; NTP slews at most 500 ppm, but only to correct an offset it has measured. */
#define CLOCK_DRIFT_PPM 100

struct clock_estimate {
    int have;
    int64_t lo_us, hi_us;  /* offset bounds as of ref_us */
    int64_t ref_us;        /* monotonic time of the last sample */
    uint64_t samples, jumps;
};

enum clock_sample {
    CLOCK_FIRST,     /* the first sample: the bounds start */
    CLOCK_NARROWED,  /* within the bounds: they are now the intersection */
    CLOCK_JUMPED,    /* outside them: they start again from this sample */
    CLOCK_REFUSED,   /* not a sample (answered before sent) */
};

void clock_estimate_init(struct clock_estimate *e);
enum clock_sample clock_estimate_add(struct clock_estimate *e, int64_t sent_us, int64_t recv_us,
                                     int64_t stamp_ms);
/* The bounds at monotonic NOW_US (widened by the drift since the last sample). */
void clock_estimate_bounds(const struct clock_estimate *e, int64_t now_us, int64_t *lo_us,
                           int64_t *hi_us);

#endif
