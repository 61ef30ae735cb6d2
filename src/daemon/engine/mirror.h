/* The mirror: follows a queue's bucket tree in ZooKeeper with child watches, reading only
 * buckets whose time is near (lookahead), and reports the jobs it lists to its owner (the
 * dispatcher) through a report table, never calling it by name. */
#ifndef DEFERD_MIRROR_H
#define DEFERD_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#include "mirror_entry.h"

struct deferd;
struct dqueue;
struct job_name;

struct mirror;


/* What the mirror tells its owner. CTX is passed back to each. */
struct mirror_report {
    /* A job listed in a bucket of Q: its entry, or NULL when it is not taken (out of
     * memory). Called again for a job already known. ID: its id when known (this
     * daemon's put), else NULL. */
    struct mirror_entry *(*seen)(void *ctx, struct dqueue *q, const char *path,
                                 const struct job_name *jn, const char *id);
    /* A known job is missing from its bucket's listing, or its bucket went (the entry is
     * unlinked already). */
    void (*vanished)(void *ctx, struct mirror_entry *e);
    /* A listing of Q was entered: one dispatch for all of it. */
    void (*listed)(void *ctx, struct dqueue *q);
    /* A bucket is due earlier than before: the owner's timer calls mirror_tick. */
    void (*rearm)(void *ctx);
    void *ctx;
};

struct mirror *mirror_new(struct deferd *d);
/* Before mirror_start: REPORT must outlive the mirror. */
void mirror_set_report(struct mirror *m, const struct mirror_report *report);
void mirror_free(struct mirror *m);
int mirror_start(struct mirror *m, struct dqueue *q);      /* idempotent */
/* A watch fired; 1 if PATH is one of the mirror's buckets. */
int mirror_on_watch(struct mirror *m, const char *path);
/* Loads buckets whose time has come; returns the wall time (ms) of the next one, or
 * INT64_MAX. */
int64_t mirror_tick(struct mirror *m, int64_t wall_now);
int64_t mirror_next(const struct mirror *m);
void mirror_entry_unlink(struct mirror_entry *e);          /* the owner frees the job */
void mirror_resync(struct mirror *m);                      /* re-list everything loaded */
void mirror_reset(struct mirror *m);                       /* forget everything: session lost */
/* This daemon just created PATH, named JN, with the id ID (as the put made them: not parsed
 * again): enter it now if its bucket is followed. Its entry (what the report's seen gave),
 * or NULL when not entered. Unlike a listing it does not report `listed`: the caller gives
 * the job what the put made (its payload) and then dispatches, so that a claim sent at once
 * needs no read. */
struct mirror_entry *mirror_job_created(struct mirror *m, struct dqueue *q, const char *path,
                                        const struct job_name *jn, const char *id);
/* Bytes of the largest child listing received (names plus their 4-byte lengths). */
size_t mirror_listing_max(const struct mirror *m);
/* Listings received and names they held, for STATS. */
/* Listings received, the names they held, and those not walked: nothing but this daemon's
 * own creates had changed since the one before. */
void mirror_counts(const struct mirror *m, unsigned long long *listings,
                   unsigned long long *names, unsigned long long *unchanged);

#endif
