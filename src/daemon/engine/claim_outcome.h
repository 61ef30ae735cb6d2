/* What became of a claimed job's settle whose answer was lost with the session (layout
 * version 3): the claim it was written to may have been recovered since. Read in order:
 * the old claim (the job's record still in it: not applied), the job's bucket (made again
 * by a recovery: not applied), the queue's claims (recovered and claimed again: not
 * applied); none of them: applied. A recovery is one transaction, so the job is always in
 * one of those places until it is settled. A job past 8 deliveries is made again under a
 * new name (a<N>: claimdata_remade_path), and looked for under that one in its bucket and
 * in the claims. */
#ifndef DEFERD_CLAIM_OUTCOME_H
#define DEFERD_CLAIM_OUTCOME_H

#include <stdint.h>

struct zkstore;

/* APPLIED: 1, 0 (the job is still there: the settle changed nothing), or -1 (a read
 * failed: not known). */
typedef void (*claim_outcome_fn)(void *ctx, int applied);

/* Looks for the job at JOB_PATH (of queue QUEUE under ROOT), last written to the claim at
 * CLAIM_PATH with DELIVERIES under its name; DONE is called once. */
void claim_outcome(struct zkstore *zs, const char *root, const char *queue,
                   const char *claim_path, const char *job_path, uint32_t deliveries,
                   claim_outcome_fn done, void *ctx);

#endif
