/* The mirror: follows a queue's bucket tree in ZooKeeper with child watches, reading only
 * buckets whose time is near (lookahead), and reports jobs to the dispatcher. */
#ifndef DEFERD_MIRROR_H
#define DEFERD_MIRROR_H

#include <stddef.h>
#include <stdint.h>

struct deferd;
struct dqueue;
struct job;

struct mirror;

struct mirror *mirror_new(struct deferd *d);
void mirror_free(struct mirror *m);
int mirror_start(struct mirror *m, struct dqueue *q);      /* idempotent */
/* A watch fired; 1 if PATH is one of the mirror's buckets. */
int mirror_on_watch(struct mirror *m, const char *path);
/* Loads buckets whose time has come; returns the wall time (ms) of the next one, or
 * INT64_MAX. */
int64_t mirror_tick(struct mirror *m, int64_t wall_now);
int64_t mirror_next(const struct mirror *m);
void mirror_job_freed(struct job *job);                    /* unlink from its bucket */
void mirror_resync(struct mirror *m);                      /* re-list everything loaded */
void mirror_reset(struct mirror *m);                       /* forget everything: session lost */
/* This daemon just created PATH: enter it now if its bucket is followed. */
void mirror_job_created(struct mirror *m, struct dqueue *q, const char *path);
/* Bytes of the largest child listing received (names plus their 4-byte lengths). */
size_t mirror_listing_max(const struct mirror *m);
/* Listings received and names they held, for STATS. */
void mirror_counts(const struct mirror *m, unsigned long long *listings,
                   unsigned long long *names);

#endif
