/* Flows (FLOW, docs/flows.md): a parent job stored waiting until its children are settled.
 * A flow lives in ZooKeeper as <root>/flows/<parent uid> (its counts, layout_flow), the
 * parent's payload under it (LAYOUT_FLOW_PARENT) and a marker per child not settled yet
 * (LAYOUT_FLOW_CHILD<uid>); the children are jobs (or waiting parents themselves) whose
 * names carry -f<parent uid>.
 *
 * A child's settle that ends it (its ack, or its dead-lettering) counts it in the same
 * ZooKeeper transaction: it deletes the child's marker (so a child is counted once, whatever
 * is sent again) and sets the flow's counts with the version it read (so two daemons that
 * count children of one flow at once cannot both succeed: the second reads again and sends
 * again). The last child's transaction deletes the flow's nodes and creates the parent as a
 * job, or as a dead letter (on=success with a dead child); a parent dead-lettered so is
 * itself a dead child of its own flow, counted in the same transaction, and so on up. The
 * parent becomes due exactly once, by ZooKeeper, in the transaction of its last child,
 * whichever daemon sent it. Loop thread only. */
#ifndef DEFERD_FLOW_H
#define DEFERD_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "zkstore.h"

struct job;

#define FLOW_DEPTH_MAX 8 /* levels of flows in flows (a FLOW's parent= chains) */
#define FLOW_OPS_MAX (4 * FLOW_DEPTH_MAX) /* a child's settle's operations on its flows */

struct flow_cache; /* flowcache.h */

/* One flow a settle counts in: the child's own, then (a parent dead-lettered) its parent's. */
struct flow_level {
    int32_t version;           /* of the flow's node, as read */
    struct layout_flow fl;     /* its counts, as read */
    int last;                  /* the settling child is its last: the parent is released */
    int dead;                  /* the child counts as dead here */
    unsigned added;            /* children its settle adds here (ACK join=1) */
    unsigned char *payload;    /* the parent's, when released */
    size_t len;
    char flow_path[LAYOUT_PATH_MAX], marker_path[LAYOUT_PATH_MAX];
    char parent_node[LAYOUT_PATH_MAX], parent_path[LAYOUT_PATH_MAX];
    char data[LAYOUT_ID_MAX + 96];
};

/* What a child's settle knows of its flows. Zeroed with its settle. */
struct flow_settle {
    int read;                  /* the flows it counts in were read */
    int skip;                  /* settle without the flow: it is gone, or the child is not in
                                * it any more (counted already, or the flow was cancelled) */
    int rereads;               /* a flow changed while read: read again */
    int first_op, nops;        /* the flows' operations in the settle's transaction */
    int cached;                /* counted in the cache (flowcache.h): answered to it */
    unsigned added;            /* ACK join=1: the follow-ups join the child's flow; set by
                                * the caller before the first read */
    char uid[LAYOUT_UID_MAX + 1]; /* the child's flow, for the cache */
    struct flow_level *lv;     /* malloc'd: the child's flow first */
    int nlv;
};

/* Whether JOB's settle must read its flow first: 1 when it is a flow's child and the flow
 * was not read (nor skipped) yet. */
int flow_settle_needs_read(const struct job *job, const struct flow_settle *fs);
/* Reads JOB's flow (and the parent's payload if JOB is its last child, and up while a
 * released parent goes to the dead letters). DEAD: JOB goes to the dead letters. DONE(CTX,
 * RC) later: ZOK when the settle can be sent (FS read, or marked skip), else the error. */
/* The child's flow from the cache, when it knows it and the child is not its last: 1 and FS
 * ready (no read), else 0. */
int flow_settle_predict(struct flow_cache *cache, const char *root, const struct job *job,
                        int dead, struct flow_settle *fs);
int flow_settle_read(struct flow_cache *cache, struct zkstore *zs, const char *root,
                     struct job *job, int dead, struct flow_settle *fs,
                     void (*done)(void *ctx, int rc), void *ctx);
/* ROOT: the daemon's zk_root. The flows' operations for the settle's transaction into OPS
 * (FLOW_OPS_MAX of room; the settle's own come first, FIRST of them): how many (0: none). */
int flow_settle_ops(const char *root, struct flow_settle *fs, struct zk_txn_op *ops,
                    int first);

enum flow_refusal {
    FLOW_NOT_OURS,   /* the transaction failed on another operation */
    FLOW_READ_AGAIN, /* a flow changed since it was read (another child counted): read, send */
    FLOW_WITHOUT,    /* the child is not in the flow (any more), or the flow is gone: send
                      * without it */
    FLOW_NO_BUCKET,  /* a parent's directory is missing: make it (flow_missing_dir), send */
};
/* The settle's transaction failed (RES): whether on one of the flows' operations, and what
 * to do. Resets FS for the next send accordingly. */
enum flow_refusal flow_settle_refused(struct flow_settle *fs, const struct zk_result *res);
/* After FLOW_NO_BUCKET: the path whose directories are missing. */
const char *flow_missing_dir(const struct flow_settle *fs, const struct zk_result *res);
/* The settle's transaction came back (RC; ZOK: applied): the cache follows. Call before
 * flow_settle_refused() or flow_settle_released(). */
void flow_settle_answered(struct flow_cache *cache, struct flow_settle *fs, int rc);
/* The settle was applied and made a parent a job (not a dead letter): its path, queue
 * and payload (taken: *PAYLOAD is the caller's to free), so that this daemon delivers it
 * without waiting to list it; 0 when it made none. */
int flow_settle_parent_job(struct flow_settle *fs, const char **path, char *queue,
                           size_t qlen, unsigned char **payload, size_t *len);
/* The settle was applied: parents released (0: none), the last of them dead-lettered. */
int flow_settle_released(const struct flow_settle *fs, int *dead);
void flow_settle_clear(struct flow_settle *fs);

/* CANCEL of a waiting parent, PARENT_ID (uid UID), not itself a flow's child: its flow's
 * nodes are deleted in one transaction (its markers, its payload, its node by version);
 * its children run on, settled as plain jobs. DONE(CTX, RC): ZOK cancelled, ZNONODE no
 * such waiting parent (released or cancelled already), else the error. */
int flow_cancel(struct zkstore *zs, const char *root, const char *parent_id, const char *uid,
                void (*done)(void *ctx, int rc), void *ctx);

#endif
