/* Claims (layout version 3, issue 43; docs/zookeeper-layout.md "Claims"): due jobs taken
 * out of their buckets by deleting them, many in one multi that also creates one claim node
 * holding them (src/common/claimdata.h). A delivery then costs about one ZooKeeper
 * operation where a lock costs five. The claim node is rewritten without each job that
 * settles, at its version, so a write of a claim someone else recovered fails; acks that
 * come together share one write. One write of a claim is in flight at a time.
 *
 * This file keeps the claim nodes of this daemon's session and sends their transactions;
 * it never changes a job's state: its callers (lock.c, settle.c) do, in its callbacks.
 * Loop thread only. */
#ifndef DEFERD_CLAIM_H
#define DEFERD_CLAIM_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct job;
struct txnbatch;
struct zk_txn_op;
struct zkstore;

struct claims;
struct claim;

/* JOB's claim was answered: ZOK (job->claim set; the delivery counted), or why not:
 * ZNONODE (the job is gone: settled, cancelled or claimed elsewhere), ZNOTEMPTY (a daemon
 * of layout version 2 holds its lock), ZBADVERSION (the job was made again since it was
 * read: read it again), or an error of the connection or session. */
typedef void (*claim_taken_fn)(struct job *job, int rc);
/* A write of the claim answered for the caller's CTX: ZOK, or why not: ZNONODE and
 * ZBADVERSION mean the claim is no longer this daemon's (its jobs are lost to it). */
typedef void (*claim_written_fn)(void *ctx, int rc);
/* A job someone else wrote out of our claim (CANCEL force=1 through another daemon): it is
 * no longer in a claim; the engine tells its consumer and frees it. */
typedef void (*claim_removed_fn)(struct job *job, void *ctx);

struct claims *claims_new(struct event_base *base, struct zkstore *zs, struct txnbatch *locks,
                          struct txnbatch *settles, const char *root);
void claims_free(struct claims *cs);
void claims_on_removed(struct claims *cs, claim_removed_fn fn, void *ctx);
/* This session's node was touched: a forced cancel wrote one of our claims. Each is read
 * again (those with a write on its way learn it from the write). */
void claims_poked(struct claims *cs);

/* The session whose claims these are: claims are taken only once its node under
 * sessions/ exists (claim_recovery.c makes it and says so); 0 when there is none. */
void claims_session(struct claims *cs, int64_t session);
int64_t claims_session_id(const struct claims *cs);
/* The connection is back (the same session): outcomes left unknown are looked up. */
void claims_connected(struct claims *cs);
/* The daemon stops: claims, acks and waiting writes go out or are told so before the
 * batches close; nothing is taken after. */
void claims_close(struct claims *cs);
/* The session is gone: every claim is forgotten (another daemon, or this one, recovers
 * them); jobs keep their pointer until they are freed. */
void claims_session_lost(struct claims *cs);

/* JOB (its payload in memory, job->zversion and job->under_name known) joins the next
 * claim of its queue, sent at the end of this loop turn; DONE is called exactly once. */
int claims_take(struct claims *cs, struct job *job, claim_taken_fn done);

/* A plain ACK of a claimed job: JOB leaves its claim in the next write, which the acks of
 * one loop turn share. DONE(CTX, rc) once it is answered. */
int claim_ack(struct claims *cs, struct job *job, claim_written_fn done, void *ctx);

/* A settle with operations of its own (a move, a dead letter, a give-back, follow-ups):
 * when the claim has no write in flight, OP gets the claim's write without JOB (a versioned
 * setData, or the delete of its last job) and 1 is returned; the caller sends it first in
 * its transaction and tells claim_write_answered. Else 0: RESUME(CTX) is called once the
 * claim is free, and the caller asks again. -1 when the claim is lost. */
int claim_write_op(struct claims *cs, struct job *job, struct zk_txn_op *op,
                   void (*resume)(void *), void *ctx);
/* The transaction with claim_write_op's operation came back: RC, and whether the claim's
 * operation itself failed (then it is no longer ours). */
void claim_write_answered(struct claims *cs, struct job *job, int rc, int claim_op_failed);
/* JOB's claim is being read again after someone else wrote it: a settle whose claim write
 * failed on it asks claim_write_op again (it waits for the read). */
int claim_resyncing(const struct job *job);
/* That transaction's outcome is unknown (the connection broke): the claim node is read,
 * and DONE(CTX, ZOK) if the write was applied, ZNONODE if the claim is lost, or
 * ZOPERATIONTIMEOUT if it was not applied (send it again). Returns ZOK, or the error that
 * kept the read from being sent (DONE is not called: ask again once connected). */
int claim_write_check(struct claims *cs, struct job *job, claim_written_fn done, void *ctx);

/* The path of JOB's claim node, or NULL when it is in none. */
const char *claim_path_of(const struct job *job);

/* JOB is freed: it leaves its claim's records here (its node in ZooKeeper is another
 * matter: written by a settle, or recovered after the session). */
void claim_forget(struct job *job);

/* For STATS: claim nodes made, jobs claimed, claim writes answered. */
void claims_counts(const struct claims *cs, unsigned long long *nodes, unsigned long long *jobs,
                   unsigned long long *writes);

#endif
