/* Finds a job in its queue's claims (layout version 3): a claimed job has left its bucket,
 * so CANCEL and RESCHEDULE look for it there before they answer NOT_FOUND, and name the
 * daemon holding it. Reads each claim of the queue in turn until one holds the job, then
 * the node of that claim's session (its daemon's host:pid). A forced cancel writes the
 * claim without the job at the version read, then touches that node (claim.h). */
#ifndef DEFERD_CLAIMFIND_H
#define DEFERD_CLAIMFIND_H

struct zkstore;

#include <stddef.h>

/* Where the job was found, for a forced cancel: the claim as read, and what to write. */
struct claimfind_hit {
    const char *holder;         /* who holds it (its session node's data), or a text */
    const char *claim;          /* the claim node's path */
    int version;                /* ... its data version as read */
    const unsigned char *rest;  /* its data without the job; NULL: the job was its last */
    size_t rest_len;
    const char *session;        /* the holder's session node; "" when that session ended */
};

/* RC: ZOK (HIT), ZNONODE (in no claim), or the error of a read. */
typedef void (*claimfind_fn)(void *ctx, int rc, const struct claimfind_hit *hit);

/* Looks for the job at PATH (under ROOT's queue QUEUE) in the queue's claims; DONE is
 * called once, unless the first read cannot be sent (its error is returned). */
int claimfind(struct zkstore *zs, const char *root, const char *queue, const char *path,
              claimfind_fn done, void *ctx);

#endif
