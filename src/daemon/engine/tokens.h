/* Put tokens in the engine (PUT idem=, docs/zookeeper-layout.md "Put tokens"): the one home
 * of what both put paths do with them, the put set (putset.c: near jobs, keyed puts,
 * batches) and the packer (packer.c: far puts without a key). A token's node is created in
 * the put's own transaction; a retry of a stored put fails that transaction on it
 * (NodeExists), and then the token is read: the job it names answers the put.
 *
 * After a write failed on a taken token, each token read ends in one of three ways:
 *  - found: it names a job; the put is answered with it (OK <id>), nothing is made again;
 *  - refused: it is taken but could not be read (an error, a denial, data naming no job
 *    this version knows, or gone after its use time, when the sweep may have taken it while
 *    the first try's job lives on). A try may have stored the job, so the put is answered
 *    ERR UNAVAILABLE stored=maybe with the refusal given, never "not stored";
 *  - neither: gone (NoNode) while still within its use time. The sweep cannot have taken it
 *    yet, so the NodeExists came from a transaction that was rolled back (another put with
 *    the same token in the same multi, which txnbatch.c sends again after this answer): the
 *    put is written again, and its token answers it then.
 * Calls nothing of the engine above it (the callers' per-put records are theirs). */
#ifndef DEFERD_TOKENS_H
#define DEFERD_TOKENS_H

#include <stddef.h>

#include "protocol.h"
#include "refusal.h"

struct buckets;
struct dqueue;
struct job_name;
struct zk_txn_op;
struct zkstore;

/* The node of put token TOKEN of a job of QUEUE under ROOT into PATH. A token is good while
 * a retry may still come (LAYOUT_TOKEN_USE_MS from its first try, by this host's clock,
 * which the producer on this host shares): older, its node may be swept already, and the
 * retry could make a second job. On a bad one returns -1 with the error in *CODE and TEXT. */
int tokens_path(char *path, size_t len, const char *root, const char *queue, const char *token,
                enum proto_errcode *code, char *text, size_t tlen);

/* The token's minute directory, created ahead of the transaction (one session, in order)
 * unless KNOWN has it: a create inside the multi would fail it on NodeExists. */
int tokens_prepare_dir(struct zkstore *zs, struct buckets *known, const char *path);

/* The create of the token at PATH for job JN, into *OP: its data, written into DATA (DLEN
 * bytes, kept until the op is sent), is a key node's, the job id without "<queue>/", with
 * PACK ("" or NULL: JN's own) for a packed job: "<pack>/<name>". ZOK or ZK_ETOOLONG. */
int tokens_create_op(struct zk_txn_op *op, const char *path, const struct job_name *jn,
                     const char *pack, char *data, size_t dlen);

/* How a put whose token is taken but unreadable is answered: stored=maybe, and the text. */
struct token_refusal {
    struct refusal f;
    char text[200];
};

/* One put waiting on its taken token: PATH stays valid until the put is answered or the
 * reads are done; Q is its queue; PUT is the caller's own record, handed back. */
struct token_wait {
    const char *path;
    struct dqueue *q;
    void *put;
};

/* The caller's answers. FOUND: the put's token names job ID. REFUSED: answer the put with
 * TR (RC is the read's error, for the caller's accounting). DONE: every read is back; puts
 * that got neither are to be written again. */
struct token_answers {
    void (*found)(void *ctx, void *put, const char *id);
    void (*refused)(void *ctx, void *put, int rc, const struct token_refusal *tr);
    void (*done)(void *ctx);
};

/* The reads of one failed write's tokens, in the caller's record (alive until DONE). */
struct token_reads {
    const struct token_answers *ans;
    void *ctx;
    int out;                    /* reads on their way, plus one until tokens_reads_sent */
};

/* Reads go out pipelined, all before the first answer: one round trip however many. A read
 * that cannot be sent (no memory, the store closing) refuses its put at once: stored=maybe
 * still, as the token is taken. DONE is called exactly once, after tokens_reads_sent, maybe
 * within it. */
void tokens_reads_start(struct token_reads *rs, const struct token_answers *ans, void *ctx);
void tokens_read(struct token_reads *rs, struct zkstore *zs, const struct token_wait *w);
void tokens_reads_sent(struct token_reads *rs);

#endif
