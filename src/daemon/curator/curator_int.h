/* Private to the three files that consume a Curator queue: curator_consume.c (items,
 * reading and locking them, session changes), curator_listing.c (listings of the queue and
 * lock directories) and curator_settle.c (settling a locked item). */
#ifndef DEFERD_CURATOR_INT_H
#define DEFERD_CURATOR_INT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "curator.h"
#include "strhash.h"

struct dispatcher;
struct dqueue;
struct event;
struct job;
struct reply;
struct zk_result;

#define ITEM_PATH_MAX (CURATOR_PATH_MAX + 256)

enum verdict { V_OPEN, V_ACK, V_NACK, V_DEAD };

/* One item node: one frame of one or more parts. Until it is locked a single job (the
 * head) stands for it in the heaps; once locked, each part is a job of its own, and the
 * item is settled (deleted, with a requeue of nacked parts) when every part has a verdict.
 * Freed when no listing, job or call refers to it any more. */
struct citem {
    UT_hash_handle hh;          /* cqueue->items, key: name */
    struct citem *next, *prev;  /* cqueue->all: every item not freed yet */
    struct cqueue *cq;
    char *name;
    struct curator_name cn;
    unsigned gen;               /* last listing that showed it */
    int refs;                   /* the listing, jobs and calls in flight */
    int listed;
    int skipped;                /* a foreign name or an undecodable frame: left alone */
    int locked;                 /* we hold lockPath/<name> */
    int64_t lock_session;
    struct job *head;
    unsigned char *data;        /* the frame, read just before locking */
    size_t len;
    int32_t version;            /* of the data read; the lock bumps it (attempts) */
    uint32_t attempt;
    struct curator_item *items;
    size_t nparts, open;
    struct job **parts;
    unsigned char *verdict;
    uint64_t nack_delay_ms;
    int has_nack_delay;
    struct reply *reply;        /* the last verdict's, answered once the item is settled */
    char *dead_path;
    int made_parents;
    int settling;               /* the settling transaction is on its way */
    int tries;                  /* settling attempts that failed */
    struct event *retry;
};

struct lockname {
    UT_hash_handle hh;
    char name[];
};

struct cqueue {
    struct dispatcher *ds;
    struct dqueue *q;
    struct citem *items;
    struct citem *all;          /* listed or not, until freed */
    size_t live;
    struct lockname *locks;     /* names in lockPath at its last listing */
    unsigned gen, token;        /* token: listings of an older session are ignored */
    int started, listing, relist, lock_listing, lock_relist;
    int too_big;                /* said that the queue is too big to list */
    int blocked;                /* an item waits for an old job of its name to go */
    struct event *retry;
};



/* curator_consume.c */
enum curator_kind curator_consume_kind(const struct dqueue *q);
int curator_item_path(const struct citem *ci, char *buf, size_t len);
int curator_item_lock_path(const struct citem *ci, char *buf, size_t len);
void curator_item_put(struct citem *ci);
void curator_item_forget(struct citem *ci);           /* out of the listing's hash */
void curator_item_drop_frame(struct citem *ci);
uint32_t curator_item_order_key(const struct citem *ci);
/* Deletes our lock if this session holds it (a failure that gives the item back). */
void curator_item_unlock(struct dispatcher *ds, struct citem *ci);

/* curator_listing.c */
void curator_listing_request(struct cqueue *cq,
                             int locks); /* the queue (0) or lock (1) directory */
void curator_listing_free_locks(struct cqueue *cq);

/* curator_settle.c */
void curator_settle_item(struct dispatcher *ds, struct citem *ci);
/* The item is done with: answers the last verdict (LOST: why it failed), frees the parts,
 * forgets the item. */
void curator_settle_finish(struct dispatcher *ds, struct citem *ci, const char *lost);

#endif
