/* CANCEL and RESCHEDULE of a pending job, written once for the daemon (cancel.c, on its
 * asynchronous store) and deferctl (admin_jobs.c, synchronous): the name a rescheduled job
 * moves to and the one ZooKeeper multi that makes either change. No I/O: each caller reads
 * the job with its own client, fills a struct jobedit and sends the operations. */
#ifndef DEFERD_JOBEDIT_H
#define DEFERD_JOBEDIT_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#define JOBEDIT_HOLDERS_MAX 2 /* a held job's children: lock and owner-<session>-<seq> */
/* holders, the job, its new name, its key node, a pending counter */
#define JOBEDIT_OPS_MAX (JOBEDIT_HOLDERS_MAX + 4)

/* The change, as paths the caller has made; NULL where an operation does not apply. */
struct jobedit {
    const char *job_path;
    const char *holders[JOBEDIT_HOLDERS_MAX]; /* force: the holder's lock and owner node */
    int nholders;
    const struct job_name *next; /* RESCHEDULE: the new name (jobedit_next_name) ... */
    const char *next_path;       /* ... its path, and the payload that moves along */
    const char *payload;
    size_t len;
    /* The job's key node follows it: deleted with it, or pointed at its new name. The
     * version guards it (-1: any), so that a concurrent change of the key fails the multi. */
    const char *key_path;
    int key_version;
    /* A packed job (layout version 2): instead of job_path being deleted, the pack is
     * rewritten without the job (pack_data) or, when it held only this job, deleted
     * (pack_data NULL); both at pack_version, so that a pack changed since it was read
     * (a put joined it, another change, an unpacking) fails the multi. */
    const char *pack_path;
    const unsigned char *pack_data;
    size_t pack_len;
    int pack_version;
    /* A pending counter to set in the same multi (deferctl's, for max_pending). */
    const char *counter_path, *counter_value;
    int counter_version;
};

struct jobedit_op {
    enum { JOBEDIT_DELETE, JOBEDIT_CREATE, JOBEDIT_SET } kind;
    const char *path;
    const char *data;           /* create, set */
    size_t len;
    int version;                /* delete, set; -1 = any */
};

/* The multi, in this order: holders, job (or its pack), new name, key, counter. The indexes say which
 * operation a failure came from (-1 where there is none). Points into itself (key data)
 * and at the caller's strings: keep both until it is sent. */
struct jobedit_multi {
    struct jobedit_op ops[JOBEDIT_OPS_MAX];
    int n, job, create, key, counter;
    char key_data[LAYOUT_ID_MAX + 1];
};

/* RESCHEDULE's new name: CUR's, due at DUE_MS, with the ATTEMPTS made so far carried in it
 * (attempts.h) and out of any shard or pack; the uid is CUR's until the caller gives a new one. */
void jobedit_next_name(struct job_name *next, const struct job_name *cur, uint64_t due_ms,
                       uint32_t attempts);

/* The operations of E into M: 0, or -1 when the new name does not fit a key node. */
int jobedit_multi(const struct jobedit *e, struct jobedit_multi *m);

#endif
