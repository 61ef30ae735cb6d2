/* Queue depth, cluster-wide, read from ZooKeeper (docs/metrics.md, "Queue depth"): every
 * [metrics] depth_interval each daemon walks, for every native queue, the buckets whose
 * window starts within the next hour (jobs/, then L1, L2 and L3 buckets and their shards:
 * names only, never a job's data) and counts the jobs due by now (overdue), in the next
 * minute and in the rest of the hour, with the oldest overdue due time; the jobs held in
 * claims (layout version 3: claims/, each claim's data), as overdue jobs; and the dead
 * letters, from the numChildren of each dead/<L1> directory. At most depth_max_reads
 * ZooKeeper reads a queue and refresh, at most a few in flight at once, so that a big
 * backlog costs a bounded walk and the delivery path's requests never queue behind a burst
 * of reads. Jobs due later than the hour are not counted here. Loop thread only. */
#ifndef DEFERD_DEPTH_H
#define DEFERD_DEPTH_H

#include <stddef.h>
#include <stdint.h>

struct deferd;
struct depth;

/* Disjoint windows of due time, relative to the refresh's start. */
enum depth_window { DW_OVERDUE, DW_MINUTE, DW_HOUR, DW_COUNT };
extern const char *const depth_window_names[DW_COUNT];
#define DEPTH_MINUTE_MS 60000
#define DEPTH_HOUR_MS 3600000
#define DEPTH_DAY_MS 86400000LL
#define DEPTH_WEEK_MS (7 * 86400000LL)

struct depth_counts {
    int64_t refreshed_ms;      /* wall ms the last complete refresh began; 0 = none yet */
    uint64_t jobs[DW_COUNT];   /* overdue: due <= then; minute: within 60 s; hour: the rest */
    uint64_t dead;             /* dead letters */
    int64_t oldest_due_ms;     /* of the overdue jobs; 0 when none is overdue */
    uint32_t reads;            /* ZooKeeper reads the refresh made */
    int truncated;             /* it stopped at depth_max_reads: the windows count less */
};

struct depth *depth_new(struct deferd *d);
/* After zkstore_free(): the calls in flight have been completed by then. */
void depth_free(struct depth *dp);
/* The last complete refresh of QUEUE (refreshed_ms 0 when there is none), or NULL for a
 * queue this daemon does not count (not configured here, or not in deferd's format). */
const struct depth_counts *depth_of(const struct depth *dp, const char *queue);
/* Reads made by every refresh since the daemon started. */
uint64_t depth_reads_total(const struct depth *dp);

/* The census (every job, at [metrics] census_rate reads a second): the last complete pass
 * of a queue, its windows beyond the hour summed relative to NOW by the 100-second bucket
 * each job is due in (a bucket belongs to the window its start falls in). */
struct depth_census {
    int64_t began_ms;           /* when the pass began, wall ms */
    uint64_t total;             /* every job it counted, due at any time */
    uint64_t day, week, later;  /* buckets starting after the hour and within a day; after
                                 * a day and within a week; later */
};
/* 0, or -1 when the queue has no complete pass (yet, or not counted here). */
int depth_census_of(const struct depth *dp, const char *queue, int64_t now,
                    struct depth_census *out);
uint64_t depth_census_reads_total(const struct depth *dp);
/* The dashboard's timeline: the last complete pass's jobs in N bars of WIDTH_MS, the
 * first bar's windows starting in (NOW, NOW + WIDTH_MS]; *BEGAN_MS when the pass began. 0,
 * or -1 when the queue has no complete pass. */
int depth_census_bars(const struct depth *dp, const char *queue, int64_t now,
                      int64_t width_ms, size_t n, uint64_t *bars, int64_t *began_ms);

#endif
