/* One job of a put set (putset.h): what the request gave, where it goes, how its key
 * stands. Shared by putset.c, which sends the set, and putpacks.c, which packs its far
 * jobs. */
#ifndef DEFERD_PUTJOB_H
#define DEFERD_PUTJOB_H

#include <stddef.h>
#include <string.h>

#include "layout.h"

struct dqueue;

/* What only keyed, tokened (PUT idem=) and flow puts need. Most puts are none of these:
 * without it a put's job is 1.1 KiB instead of 4, and thousands of puts are in flight
 * under load. */
struct putjob_more {
    char key_path[LAYOUT_PATH_MAX];
    char key_data[LAYOUT_ID_MAX + 1]; /* the key's node data */
    char token_path[LAYOUT_PATH_MAX]; /* "" or its put token's node (PUT idem=) */
    char token_data[LAYOUT_ID_MAX + 1]; /* the token's (tokens_create_op) */
    char marker_path[LAYOUT_PATH_MAX]; /* a flow's child: its marker (flow.h), else "" */
    char flow_node[LAYOUT_PATH_MAX]; /* a waiting parent's payload node */
    char flow_data[LAYOUT_ID_MAX + 96]; /* its flow's counts (layout_flow) */
};

struct putjob {
    struct dqueue *q;
    struct job_name jn;
    unsigned char *payload;
    size_t len;
    int dup_of;                 /* an earlier job of the set with the same queue and key, or -1 */
    int dup;                    /* its key is taken: not created; id names the key's job */
    int stored_before;          /* ...taken by this job itself: an earlier send was applied */
    int named;                  /* uid, shard and buckets chosen */
    int key_version;            /* -1: create the key node; else take a stale one over */
    int made_parents;           /* its directories were created after a NoNode */
    int pack;                   /* far: its pack in the set (putpacks.h); else -1 */
    int flow_parent;            /* FLOW: the job of the set whose child it is, or -1 */
    unsigned flow_children;     /* FLOW: its children in the set; > 0: it waits for them,
                                 * stored as a flow (path: the flow's node), not as a job */
    int retried;                /* its token was taken: a try before stored it; id names that */
    struct putjob_more *more;   /* keyed, tokened and flow puts only; else NULL */
    /* The strings last: putjob_clear zeroes what comes before and empties these, instead
     * of zeroing them whole on every put. */
    char path[LAYOUT_PATH_MAX]; /* its znode, or its pack's */
    char id[LAYOUT_ID_MAX + 1];
};

/* PJ as a new job: every field 0 and every string empty (its `more` freed before). */
static inline void putjob_clear(struct putjob *pj)
{
    memset(pj, 0, offsetof(struct putjob, path));
    pj->path[0] = pj->id[0] = '\0';
}

static inline const char *putjob_token_path(const struct putjob *pj)
{
    return pj->more ? pj->more->token_path : "";
}

static inline const char *putjob_marker_path(const struct putjob *pj)
{
    return pj->more ? pj->more->marker_path : "";
}

#endif
