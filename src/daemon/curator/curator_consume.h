/* Consuming a flat Apache Curator queue (DistributedDelayQueue or DistributedPriorityQueue
 * with lockPath) side by side with Curator's own consumers: the queue directory and the
 * lock directory are listed with watches, an item is read, then locked as Curator locks it
 * (lockPath/<item name>, ephemeral), its frame's items are delivered as jobs, and once all
 * of them are settled the item is deleted together with the lock in one transaction
 * (docs/curator-compat.md). */
#ifndef DEFERD_CURATOR_CONSUME_H
#define DEFERD_CURATOR_CONSUME_H

#include <stddef.h>
#include <stdint.h>

struct consumer;
struct dispatcher;
struct dqueue;
struct job;
struct reply;

/* The session is lost (jobs were already revoked): forget every item. */
void curator_consume_reset(struct dispatcher *ds);
/* The same session is back: list again and check that our locks are still ours. */
void curator_consume_resync(struct dispatcher *ds);
void curator_consume_free(struct dispatcher *ds);
/* " curator_items.<queue>=<n>" for STATS: items held in memory (listed or in use). */
void curator_consume_format(const struct dispatcher *ds, char *buf, size_t len);

/* From the engine (foreign_format.h), for jobs with job->ci set: */
/* JOB left the ready heap for consumer C: read and lock its item, or deliver the part. */
void curator_consume_dispatch(struct dispatcher *ds, struct job *job, struct consumer *c);
/* The priority to show in a delivery. */
uint32_t curator_consume_priority(const struct job *job);

#endif
