/* Finds a job in its queue's claims (layout version 3): a claimed job has left its bucket,
 * so CANCEL and RESCHEDULE look for it there before they answer NOT_FOUND, and name the
 * daemon holding it. Reads each claim of the queue in turn until one holds the job, then
 * the node of that claim's session (its daemon's host:pid). */
#ifndef DEFERD_CLAIMFIND_H
#define DEFERD_CLAIMFIND_H

struct zkstore;

/* RC: ZOK (HOLDER: who holds it, a text), ZNONODE (in no claim), or the error of a read. */
typedef void (*claimfind_fn)(void *ctx, int rc, const char *holder);

/* Looks for the job at PATH (under ROOT's queue QUEUE) in the queue's claims; DONE is
 * called once, unless the first read cannot be sent (its error is returned). */
int claimfind(struct zkstore *zs, const char *root, const char *queue, const char *path,
              claimfind_fn done, void *ctx);

#endif
