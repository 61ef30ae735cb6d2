/* A census's tally (depth.c): every job a pass counted, by the 100-second window (the L2
 * bucket) it is due in, so that the windows beyond the hour (a day, a week, later) can be
 * summed relative to any later moment. Bounded by the windows that hold jobs (about 26,000
 * for a backlog spread over 30 days), not by the jobs. */
#ifndef DEFERD_CENSUS_H
#define DEFERD_CENSUS_H

#include <stddef.h>
#include <stdint.h>

struct census;

struct census *census_new(void);
void census_free(struct census *c);
/* N jobs due at DUE_MS; -1 when out of memory (the tally is then short). */
int census_add(struct census *c, uint64_t due_ms, uint64_t n);
uint64_t census_total(const struct census *c);
/* Jobs in the windows that begin in (FROM_MS, TO_MS]. */
uint64_t census_between(const struct census *c, int64_t from_ms, int64_t to_ms);
/* The same for N adjacent spans of WIDTH_MS from FROM_MS, in one pass over the windows:
 * BARS[i] gets the jobs of the windows that begin in (FROM + i*WIDTH, FROM + (i+1)*WIDTH]. */
void census_bars(const struct census *c, int64_t from_ms, int64_t width_ms, size_t n,
                 uint64_t *bars);

#endif
