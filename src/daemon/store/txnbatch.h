/* Batched transactions: many small all-or-nothing transactions (one per job: a put, a lock,
 * an ack...) sent to ZooKeeper as few multis. ZooKeeper's cost is per request, so 100 jobs
 * in one multi cost about a tenth of 100 multis.
 *
 * Nothing waits to fill a batch: what was added during one loop turn goes out at the end
 * of that turn. Only when `max_inflight` multis are already on their way do new items wait,
 * for the first of them to come back; so batches grow with the load and stay single under
 * light load.
 *
 * A multi fails as a whole when one operation fails. The item that failed gets its error;
 * the others were rolled back and are sent again in the next batch, so each item's outcome
 * is exactly what it would have been alone. Errors of the connection (unknown outcome,
 * session gone) go to every item of the multi. */
#ifndef DEFERD_TXNBATCH_H
#define DEFERD_TXNBATCH_H

#include <stddef.h>

#include "zkstore.h"

struct event_base;

/* An item larger than this (paths, data and a per-operation allowance) cannot be one
 * ZooKeeper request: jute.maxbuffer is 1 MiB by default. */
#define TXN_ITEM_BYTES_MAX 1040000
#define TXN_OP_OVERHEAD 64
/* A multi carries at most this many items: while every multi allowed is on its way, work
 * waits and the next multi takes all of it (also at most ZK_MULTI_MAX operations and 512 KB),
 * so batches grow when ZooKeeper answers slowly (issue 43: 128 capped puts at ~55,000/s on a
 * slow log with 5,000 in flight, 1,024 let them reach ~64,000-77,000). */
#define TXN_BATCH_ITEMS_MAX 1024
/* A put's transaction (a set's, a pack's write) is sent at most this often, each send after
 * fixing one thing ZooKeeper refused (a directory, a taken key, a pack rewritten meanwhile);
 * then it is answered as failed. */
#define TXN_ROUNDS_MAX 32

struct txnbatch;

/* SESSION_BOUND: the items act on this session's locks; one still waiting when a new
 * session is in place fails with ZSESSIONEXPIRED instead of being sent. */
struct txnbatch *txnbatch_new(struct event_base *base, struct zkstore *zs, int max_inflight,
                              int session_bound);
/* At exit, before the store closes: sends what is waiting (the store's close delivers the
 * results), and later adds fail with ZCLOSING. */
void txnbatch_close(struct txnbatch *b);
/* After the store is freed (its last completions may still name the batch). */
void txnbatch_free(struct txnbatch *b);

/* Adds one transaction of 1..ZK_MULTI_MAX operations (paths and data are copied). DONE gets
 * a result whose rc is ZOK or the item's own error, and whose op_err (nops entries) are the
 * item's operations only. Returns ZOK (DONE will be called exactly once, never from within
 * this call) or an error (DONE will not be called). */
int txnbatch_add(struct txnbatch *b, const struct zk_txn_op *ops, int nops, zk_done_fn done,
                 void *ctx);
/* The same for an item that carries JOBS jobs at once (a claim's write for the acks of
 * several): txnbatch_counts counts jobs. */
int txnbatch_add_jobs(struct txnbatch *b, const struct zk_txn_op *ops, int nops, unsigned jobs,
                      zk_done_fn done, void *ctx);
/* The size txnbatch_add counts for OPS, to compare with TXN_ITEM_BYTES_MAX. */
size_t txnbatch_bytes(const struct zk_txn_op *ops, int nops);

/* 1 when an item added now would wait: every multi allowed is on its way. */
int txnbatch_full(const struct txnbatch *b);
/* FN(ARG) once each multi is answered (one listener): a caller that holds its items back
 * while the batch is full, to make fewer and larger ones, adds them then. */
void txnbatch_on_answer(struct txnbatch *b, void (*fn)(void *arg), void *arg);

/* Items added and multis sent so far, for STATS. */
void txnbatch_counts(const struct txnbatch *b, unsigned long long *items,
                     unsigned long long *multis);

/* Issue 43's optional trace (deferd run with DEFERD_TXN_TRACE=1): appends
 * " trace.NAME=multis,waited,wait_us,wait_max_us,answered,rtt_us,rtt_max_us,ops_sent,
 * full_sends,inflight_area_us,full_us,busy_us,max_inflight" to BUF: raw sums (microseconds
 * of monotonic time) that a reader differences between two STATS (tests/bench/trace43.py):
 * items' waits before they were sent, multis' round trips, the integral of multis in flight
 * over time, the time all max_inflight were out (full) and any was (busy). Returns the
 * length written, 0 when the trace is off. Profiling only, not a stable STATS field. */
int txnbatch_trace_format(struct txnbatch *b, const char *name, char *buf, size_t len);

#endif
