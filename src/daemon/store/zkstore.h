/* The ZooKeeper store: one session, asynchronous calls only, every completion and watch
 * event copied on the client's thread and handed to the loop (loopq). All callbacks below
 * run on the loop thread. */
#ifndef DEFERD_ZKSTORE_H
#define DEFERD_ZKSTORE_H

#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "refusal.h"
#include "zkerr.h"

struct event_base;
struct config;
struct metrics;

/* After a ZooKeeper error (or while it is away), a call is tried again this much later: a
 * job offered again, a listing, a Curator item, a schedule. */
#define ZK_RETRY_MS 1000

/* Operations in one transaction: a batch of up to 128 jobs' transactions, or one BATCH of
 * 1000 keyed jobs (2 operations each) with its bucket creates. */
#define ZK_MULTI_MAX 4096

struct zk_result {
    int rc;                    /* ZOK or a ZooKeeper error code */
    int has_stat;
    struct Stat stat;
    char *data;                /* get: copy of the node's data */
    int datalen;
    char **children;           /* get_children: copies */
    int nchildren;
    int nops;                  /* multi: per-operation results */
    int *op_err;
    char **op_path;            /* multi: name a sequential create got (NULL for others) */
    const char *path;          /* create_parents: the directory whose create failed */
    int64_t sent_ns, done_ns;  /* CLOCK_MONOTONIC: sent, answered (on the client's thread) */
};

typedef void (*zk_done_fn)(const struct zk_result *r, void *ctx);
typedef void (*zk_watch_fn)(int type, const char *path, void *ctx);
typedef void (*zk_session_fn)(int state, void *ctx);

/* One operation of a transaction; strings are copied by zkstore_multi. */
struct zk_txn_op {
    enum { ZT_CREATE, ZT_DELETE, ZT_CHECK, ZT_SET } kind;
    const char *path;
    const void *data;
    size_t len;
    int ephemeral;
    int sequential;            /* create: ZooKeeper appends the parent's cversion (10 digits) */
    int version;               /* delete/check/set, -1 = any */
};

struct zkstore;

struct zkstore *zkstore_new(struct event_base *base, const struct config *cfg,
                            zk_watch_fn on_watch, zk_session_fn on_session, void *ctx);
void zkstore_free(struct zkstore *zs);
/* The session is lost: on another thread, close the handle and create a new one, which
 * the loop installs when it arrives. Results of the old handle's calls still arrive; its
 * watch and session events do not. If the new handle cannot be created, the session
 * callback gets ZKSTORE_HANDLE_FAILED. */
int zkstore_renew(struct zkstore *zs);
#define ZKSTORE_HANDLE_FAILED ZK_OWN_STATE_FIRST
/* Request times go to M (metrics.h) from now on. */
void zkstore_set_metrics(struct zkstore *zs, struct metrics *m);
int zkstore_connected(const struct zkstore *zs);
int64_t zkstore_session_id(const struct zkstore *zs);
int zkstore_negotiated_timeout(const struct zkstore *zs);
int zkstore_session_password(const struct zkstore *zs, char passwd[16]);
/* Milliseconds since the session was last known alive: since the sending of the latest
 * request ZooKeeper answered (or the session's establishment). ZooKeeper cannot expire
 * the session sooner than a session timeout after that, so until then our ephemeral locks
 * are ours, even if this process was frozen in between. */
int64_t zkstore_heard_age_ms(const struct zkstore *zs);
/* Asks ZooKeeper something cheap, so that the age above is renewed (one at a time). */
void zkstore_touch(struct zkstore *zs);

/* Each returns ZOK when the request was sent (DONE will be called exactly once) or an
 * error code (DONE will not be called). DONE may be NULL. */
int zkstore_create(struct zkstore *zs, const char *path, const void *data, size_t len,
                   int ephemeral, zk_done_fn done, void *ctx);
int zkstore_delete(struct zkstore *zs, const char *path, int version, zk_done_fn done, void *ctx);
int zkstore_get(struct zkstore *zs, const char *path, zk_done_fn done, void *ctx);
int zkstore_set(struct zkstore *zs, const char *path, const void *data, size_t len,
                zk_done_fn done, void *ctx);
int zkstore_exists(struct zkstore *zs, const char *path, int watch, zk_done_fn done, void *ctx);
int zkstore_children(struct zkstore *zs, const char *path, int watch, zk_done_fn done,
                     void *ctx);
int zkstore_multi(struct zkstore *zs, const struct zk_txn_op *ops, int nops, zk_done_fn done,
                  void *ctx);
/* Creates every missing ancestor of PATH (not PATH itself), pipelined; NodeExists is fine.
 * Once every create is answered DONE gets ZOK (the parent of PATH exists) or the error that
 * kept it from existing (e.g. NoAuth, which makes every deeper level fail with NoNode), with
 * the directory it came from in the result's path. */
int zkstore_create_parents(struct zkstore *zs, const char *path, zk_done_fn done, void *ctx);

/* The one rule for a create that found its parent directory missing (NoNode): a bucket,
 * shard or key directory, a Curator queue's or its dead letters' directory, deleted
 * meanwhile or never made. The first time (*TRIES 0) the directories are created
 * pipelined ahead of the caller's resend, which follows them in order on the same session:
 * no wait. Later times they are created again and their answers awaited: DONE gets ZOK
 * (resend then) or what kept them from existing (a denial). *TRIES counts; how many times
 * to go on is the caller's. Returns ZK_PARENTS_RESEND (resend now), ZK_PARENTS_ASKED (DONE
 * will be called), or the error that sent nothing. */
enum { ZK_PARENTS_RESEND = ZK_OWN_STATUS_FIRST, ZK_PARENTS_ASKED = ZK_OWN_STATUS_FIRST - 1 };

int zkstore_parents_missing(struct zkstore *zs, const char *path, int *tries, zk_done_fn done,
                            void *ctx);

/* The operation that failed a multi: the first with an error of its own (the others carry
 * ZOK or ZRUNTIMEINCONSISTENCY); -1 when the multi as a whole failed (no answer, so it may
 * have been applied, or the session refused) or succeeded. */
int zk_failed_op(const struct zk_result *res);

/* The session a call was made in is over (LOST, or closed at exit, while it was in flight):
 * whatever it held (locks, owner nodes) went with it. */
int zk_session_gone(int rc);

/* No answer came to a write (the connection broke after it left, or the session ended
 * meanwhile): ZooKeeper may have applied it. */
int zk_outcome_unknown(int rc);

/* Why a request failed with RC, as a client reads it (refusal.h): permission (ZNOAUTH),
 * no_session, connection_lost (no answer came), else zookeeper. */
enum refusal_reason zk_refusal_reason(int rc);
/* The fields of a put that failed with RC: stored=no, or stored=maybe when no answer came;
 * and its reason. */
struct refusal zk_put_refusal(int rc);

/* The reply text of a put that failed with RC: "not stored: ..." or, when the answer was
 * lost, "the job may have been stored: ..." (docs/protocol.md, UNAVAILABLE). */
#define ZK_PUT_UNKNOWN_FMT "the job may have been stored: the connection to ZooKeeper broke " \
                           "before its answer (%s)"
#define ZK_PUT_FAILED_FMT "not stored: ZooKeeper did not store the job (%s)"

#define ZK_DENIED_TEXT "permission denied by ZooKeeper (check [zookeeper] auth and " \
                       "the znode's ACL)"
/* zk_strerror(RC), or ZK_DENIED_TEXT for ZNOAUTH: the reason given to clients. */
const char *zk_reason(int rc);

#endif
