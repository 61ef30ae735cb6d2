/* Pending-job counts per queue, cluster-wide, for queues with a max_pending limit.
 * Each daemon keeps its own counter znode, <root>/queues/<q>/counts/<daemon uid>, holding
 * the jobs it added minus the jobs it removed; the sum over all counters is the number of
 * pending jobs. A daemon writes its counter and reads the sum once a second, so the limit
 * holds to within what other daemons put in the last second. */
#ifndef DEFERD_PENDING_H
#define DEFERD_PENDING_H

#include <stddef.h>
#include <stdint.h>

struct deferd;
struct dqueue;
struct pending;

struct pending *pending_new(struct deferd *d);
void pending_free(struct pending *p);
void pending_session_up(struct pending *p);    /* (re)create our counters, start reading */
/* After a reload: counters for queues that gained a max_pending. Like a restart, they count
 * the jobs put from then on. */
void pending_reloaded(struct pending *p);
/* At shutdown: writes every counter with changes now; returns how many queues still have
 * changes not stored (0: the counts in ZooKeeper are this run's last word). */
size_t pending_flush(struct pending *p);

#endif
