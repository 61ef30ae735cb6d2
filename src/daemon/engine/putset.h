/* A set of new jobs created in one ZooKeeper transaction, after some operations of the
 * caller's (the PREFIX: the ack or nack of the job that produced them) or alone (PUT, one
 * part of a BATCH). What ZooKeeper answers on the way is handled here: a bucket or key
 * directory that does not exist yet (made, then sent again), a key that is taken (that job
 * becomes a duplicate and is left out), a stale key (taken over, fenced by its version), a
 * uid that exists (renamed). Jobs due beyond their queue's pack_after go into packs the
 * same transaction creates (putpacks.h). The transaction is all or nothing every time it
 * is sent. */
#ifndef DEFERD_PUTSET_H
#define DEFERD_PUTSET_H

#include <stddef.h>

#include "protocol.h"
#include "putjob.h"

struct put_env;
struct token_refusal;
struct txnbatch;
struct zk_result;
struct zk_txn_op;

struct putset;

/* RC is ZOK (every job created or a duplicate; RES is the multi's result, the prefix's
 * operations first) or the error that ended it. RES is the failed multi's result when the
 * prefix failed or the outcome is unknown (connection), else NULL. */
typedef void (*putset_done_fn)(struct putset *ps, int rc, const struct zk_result *res,
                               void *ctx);

struct putset *putset_new(const struct put_env *env, size_t max_jobs);
void putset_free(struct putset *ps);

/* Spare single-job sets, kept for the next put instead of freed: a set is 5 KiB (its job's
 * path buffers), past malloc's per-thread cache, so every put went through malloc's slow
 * path twice. The loop's thread only; a set freed after its pool (env's pool NULL) is freed. */
struct putset_pool *putset_pool_new(void);
void putset_pool_free(struct putset_pool *pool);

/* A token of the set was found taken but could not be read (tokens.h): the answer the
 * put gets, stored=maybe; NULL when the set did not end so. */
const struct token_refusal *putset_token_refusal(const struct putset *ps);

/* Adds a job from a request's PUT (takes its payload). On a bad job returns -1 with the
 * error in *CODE and TEXT; nothing was added. */
int putset_add(struct putset *ps, struct proto_put *pp, enum proto_errcode *code, char *text,
               size_t tlen);
size_t putset_count(const struct putset *ps);
/* FLOW: job CHILD of the set is a child of job PARENT (an earlier one): its name carries
 * the parent's uid and it is created with its marker (flow.h); the parent waits for its
 * children (stored as a flow, not a job; on=complete: ON_COMPLETE). Neither is packed. -1
 * for a parent that does not come before the child. */
int putset_flow_child(struct putset *ps, size_t child, size_t parent, int on_complete);
/* ACK join=1: every job of the set is a child of the existing flow FLOW_UID (its name
 * carries it, and it is created with its marker). */
void putset_flow_join(struct putset *ps, const char *flow_uid);
/* Every job has a key: sending the set again can never store one of them twice (the key
 * answers the job an earlier send stored). */
int putset_all_keyed(const struct putset *ps);
const struct putjob *putset_job(const struct putset *ps, size_t i);
/* Bytes the jobs add to a transaction (payloads, paths, overheads), for size limits. */
size_t putset_bytes(const struct putset *ps);

/* Sends the prefix (copied) and the jobs as one transaction on B. DONE is called exactly
 * once, later, unless this returns an error. */
int putset_send(struct putset *ps, struct txnbatch *b, const struct zk_txn_op *prefix,
                int nprefix, putset_done_fn done, void *ctx);

/* Counts the created jobs (metrics, pending counts, mirror) unless done already: a set sent
 * in a transaction whose outcome was learnt by verifying never saw its own success. */
void putset_created(struct putset *ps);

/* The reply text for the jobs of NPARTS sets, in order: "n=<n> [parts=<k>] ids=<id>,...
 * dup=<positions from 1>|-" (parts= when WITH_PARTS); malloc'd in *LINE, or -1. */
int putset_format(struct putset *const *parts, size_t nparts, int with_parts, char **line);

#endif
