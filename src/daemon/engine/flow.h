/* Flows (FLOW, docs/flows.md): a parent job stored waiting until its children are settled.
 * The flow lives in ZooKeeper as <root>/flows/<parent uid> (its counts, layout_flow), the
 * parent's payload under it (LAYOUT_FLOW_PARENT) and a marker per child not settled yet
 * (LAYOUT_FLOW_CHILD<uid>); the children are jobs whose names carry -f<parent uid>.
 *
 * A child's settle that ends it (its ack, or its dead-lettering) counts it in the same
 * ZooKeeper transaction: it deletes the child's marker (so a child is counted once, whatever
 * is sent again) and sets the flow's counts with the version it read (so two daemons that
 * count children of one flow at once cannot both succeed: the second reads again and sends
 * again). The last child's transaction deletes the flow's nodes and creates the parent as a
 * job (or a dead letter: on=success with a dead child): the parent becomes due exactly once,
 * by ZooKeeper, in the transaction of its last child, whichever daemon sent it. Loop thread
 * only. */
#ifndef DEFERD_FLOW_H
#define DEFERD_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "zkstore.h"

struct job;

#define FLOW_OPS_MAX 5 /* a child's settle adds: marker, then set, or parent + flow + job */

/* What a child's settle knows of its flow. Zeroed with its settle. */
struct flow_settle {
    int read;                  /* the flow's node (and, for the last child, the parent) read */
    int rereads;               /* the parent was gone when read: the flow read again */
    int skip;                  /* settle without the flow: it is gone, or the child is not in
                                * it any more (counted already, or the flow was cancelled) */
    int first_op, nops;        /* the flow's operations in the settle's transaction */
    int32_t version;           /* of the flow's node, as read */
    struct layout_flow fl;     /* its counts, as read */
    unsigned char *payload;    /* the parent's, for the last child */
    size_t len;
    char flow_path[LAYOUT_PATH_MAX], marker_path[LAYOUT_PATH_MAX];
    char parent_node[LAYOUT_PATH_MAX], parent_path[LAYOUT_PATH_MAX];
    char data[LAYOUT_ID_MAX + 96];
};

/* Whether JOB's settle (DEAD: it goes to the dead letters; else its ack) must read its flow
 * first: 1 when it is a child and the flow was not read (nor skipped) yet. */
int flow_settle_needs_read(const struct job *job, const struct flow_settle *fs);
/* Reads the flow's node (and the parent's payload if JOB is its last child); DONE(CTX, RC)
 * later: ZOK when the settle can be sent (FS read, or marked skip), else the error. */
int flow_settle_read(struct zkstore *zs, const char *root, struct job *job,
                     struct flow_settle *fs, void (*done)(void *ctx, int rc), void *ctx);
/* ROOT: the daemon's zk_root. The flow's operations for the settle's transaction into OPS (after the settle's own, from
 * index FIRST): how many (0: none). */
int flow_settle_ops(const char *root, const struct job *job, int dead,
                    struct flow_settle *fs, struct zk_txn_op *ops, int first);

enum flow_refusal {
    FLOW_NOT_OURS,   /* the transaction failed on another operation */
    FLOW_READ_AGAIN, /* the flow changed since it was read (another child counted): read, send */
    FLOW_WITHOUT,    /* the child is not in the flow (any more), or the flow is gone: send
                      * without it */
    FLOW_NO_BUCKET,  /* the parent's directory is missing: make it (FS->parent_path), send */
};
/* The settle's transaction failed (RES): whether on one of the flow's operations, and what
 * to do. Resets FS for the next send accordingly. */
enum flow_refusal flow_settle_refused(struct flow_settle *fs, const struct zk_result *res);
/* The settle was applied: the parent created (1) or not yet (0), for logs and metrics. */
int flow_settle_released(const struct flow_settle *fs);
void flow_settle_clear(struct flow_settle *fs);

#endif
