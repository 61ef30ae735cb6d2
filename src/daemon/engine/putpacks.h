/* The packs of one put set (putset.h): the far-future jobs of a BATCH, of a keyed PUT or of
 * the follow-ups of ACK/NACK then= go into packs created in the set's own transaction, so
 * that the set stays all or nothing. One pack per window of a queue (another when it is
 * full); each send encodes it again from the jobs still to create (a job found to be a
 * duplicate is left out). Loop thread only. */
#ifndef DEFERD_PUTPACKS_H
#define DEFERD_PUTPACKS_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

struct put_env;
struct dqueue;
struct putjob;

struct putpack {
    struct dqueue *q;
    uint64_t start, width;
    size_t bytes;               /* the records of its jobs, as chosen */
    unsigned jobs;
    int made_parents;           /* its directory was created after a NoNode */
    char name[LAYOUT_PACK_MAX + 1];
    char path[LAYOUT_PATH_MAX];
    unsigned char *data;        /* the last encoding */
    size_t len;
    unsigned encoded;           /* jobs in it */
};

struct putpacks {
    struct putpack *v;
    size_t n, cap;
};

/* Names PJ as a packed job if its queue packs jobs due then (packer_wants): a pack of the
 * set with room, or a new one (its directory prepared). 0: packed (PJ's name, path = the
 * pack's, pack = its index); 1: not a job for a pack; else a ZooKeeper error. */
int putpacks_join(struct putpacks *pp, const struct put_env *env, struct putjob *pj);

/* Encodes pack I from the set's JOBS that are in it and still to create; the count. */
int putpacks_encode(struct putpacks *pp, size_t i, const struct putjob *jobs, size_t n,
                    unsigned *count);

/* Pack I's name is taken: its jobs are to be named again (into a new pack). */
void putpacks_rename(struct putpacks *pp, size_t i, struct putjob *jobs, size_t n);

/* The packs were created: counted in the packer's STATS. */
void putpacks_count(const struct putpacks *pp, const struct put_env *env);

void putpacks_free(struct putpacks *pp);

#endif
