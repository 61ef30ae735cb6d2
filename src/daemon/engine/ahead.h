/* How many due jobs a queue may lock ahead of a free consumer (issue 43): while its
 * consumers are full and due jobs wait, a lock taken before a slot frees makes the freed
 * slot cost only the push, not a ZooKeeper round trip. The window follows Little's law:
 * the rate at which the consumers answer times a few lock round trips, so that a job waits
 * locked a round trip or two, and a consumer that stops answering gets none. Pure
 * arithmetic over times given; loop thread only. */
#ifndef DEFERD_AHEAD_H
#define DEFERD_AHEAD_H

#include <stdint.h>

/* Answers counted over two buckets of this length: the rate of the last 100-200 ms. */
#define AHEAD_BUCKET_MS 100
/* Round trips' worth of answers: with 2, a run on a slow log settled about half the time at
 * half the rate (consumers' slots tied up in their own locks' round trips kept the answers,
 * and so the window, low); 4 reached the full rate in every run (docs/performance.md). */
#define AHEAD_RTTS 4
/* At most this many times the consumers' inflight together: a bound for a burst. */
#define AHEAD_PER_CREDIT 8

struct ahead {
    uint32_t answers_now, answers_prev; /* ACK/NACKs in this bucket and the one before */
    int64_t bucket_at;                  /* start of this bucket, ms */
    int64_t rtt_us;                     /* lock round trip, a moving average */
    int measured;                       /* rtt_us holds a measure */
};

/* A consumer answered a job of the queue at NOW_MS (its slot is free). */
void ahead_answered(struct ahead *a, int64_t now_ms);
/* A lock multi of the queue was answered RTT_US after it was handed to the batch. */
void ahead_lock_rtt(struct ahead *a, int64_t rtt_us);
/* Jobs that may be locked ahead at NOW_MS, for consumers of CREDITS inflight together. */
uint64_t ahead_window(struct ahead *a, int64_t now_ms, uint64_t credits);

#endif
