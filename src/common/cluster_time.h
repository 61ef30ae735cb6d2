/* The time deferd's daemon judges by: ZooKeeper's transaction clock, read as this host's
 * monotonic clock plus the lower bound of the estimated offset (clock_estimate.h), so that
 * it is never ahead of the ensemble's clock. Until an estimate is published (and always in
 * deferctl) it is the local wall clock. Any thread may read it; the daemon's loop
 * publishes. */
#ifndef DEFERD_CLUSTER_TIME_H
#define DEFERD_CLUSTER_TIME_H

#include <stdint.h>
#include <time.h>

/* Milliseconds since the Unix epoch on the cluster's clock, at least: ZooKeeper's clock
 * reads this or later now. What is due by it is due. */
int64_t cluster_now_ms(void);
/* At most: ZooKeeper's clock reads this or earlier now. A delay counts from here, so that
 * a job is never due before the delay asked for has passed. */
int64_t cluster_latest_ms(void);
/* From now on: monotonic time + [LO_US, HI_US], widened by the drift allowance since
 * REF_US. */
void cluster_time_publish(int64_t lo_us, int64_t hi_us, int64_t ref_us);
/* Back to the local wall clock ([daemon] clock = local). */
void cluster_time_unpublish(void);
/* ON: the time is not to be trusted for due times until an estimate is published (the
 * daemon with clock = zookeeper, from start to its first sample). */
void cluster_time_require(int on);
/* 1 unless required and not yet published. */
int cluster_time_ready(void);
/* Monotonic microseconds, the base of the above. */
int64_t cluster_mono_us(void);

/* Test seam: every clock read above goes through READ (CLOCK_MONOTONIC or CLOCK_REALTIME,
 * in microseconds), so that unit tests drive time (tests/unit/engine_harness.c); NULL
 * gives back the system's clocks. Not for the daemon. */
void cluster_time_set_source(int64_t (*read)(clockid_t which));

#endif
