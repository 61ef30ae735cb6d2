/* A pass run on the loop every so often (the key and token sweeps, the depth walks, the
 * unpacker, the pending counters): one libevent timer, its next run counted from the
 * previous one's due time, so that the passes keep their pace. What a pass does at a run,
 * and the spread of its first work (each queue's jitter, a first delay), is its own. */
#ifndef DEFERD_PERIODIC_H
#define DEFERD_PERIODIC_H

#include <stdint.h>

struct event_base;
struct periodic;

typedef void (*periodic_fn)(void *arg);

/* Not running until periodic_start or periodic_run_now; NULL when out of memory. */
struct periodic *periodic_new(struct event_base *base, int64_t every_ms, periodic_fn fn,
                              void *arg);
/* The first run EVERY_MS from now. 0, or -1 if the timer could not be added. */
int periodic_start(struct periodic *p);
/* A run at the loop's next turn, the next EVERY_MS after it (started if it was not). */
void periodic_run_now(struct periodic *p);
void periodic_free(struct periodic *p);

#endif
