/* One pack turned into job znodes (unpacker.h decides which and when): read it, check it
 * whole, make its jobs' directories, then one transaction: delete(pack, the version read)
 * and create(job) for each job, with setData(key node, the job's new name) for a keyed
 * job. Loop thread only. */
#ifndef DEFERD_UNPACK_H
#define DEFERD_UNPACK_H

#include "layout.h"

/* Jobs of one pack due in one 100 ms bucket go into a shard of their own (named for the
 * pack) from this many on, so that no bucket's listing grows with the packs unpacked into
 * it. */
#define UNPACK_SHARD_AT 16

struct buckets;
struct deferd;

enum unpack_outcome {
    UNPACK_DONE,        /* its jobs are znodes now, the pack is gone */
    UNPACK_GONE,        /* another daemon unpacked it first (or it was deleted) */
    UNPACK_UNREADABLE,  /* foreign or damaged: left alone; WHY says what is wrong */
    UNPACK_FAILED,      /* ZooKeeper refused or the connection failed: try again later */
};

/* WHY: a text for UNPACK_UNREADABLE and UNPACK_FAILED, else NULL. JOBS: created. */
typedef void (*unpack_done_fn)(void *ctx, const char *path, enum unpack_outcome outcome,
                               unsigned jobs, const char *why);

/* Unpacks the pack at PATH (PN: its parsed name) of QUEUE. MADE caches the job directories
 * known to exist. DONE is called exactly once, later, unless this returns an error. */
int unpack_start(struct deferd *d, struct buckets *made, const char *queue, const char *path,
                 const struct pack_name *pn, unpack_done_fn done, void *ctx);

#endif
