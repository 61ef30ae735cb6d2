/* What admin.c (connection, dead letters), admin_jobs.c (pending jobs) and admin_pause.c
 * (pause flags) share. Private to them. */
#ifndef DEFERD_ADMIN_INT_H
#define DEFERD_ADMIN_INT_H

#include <zookeeper/zookeeper.h>

#include "admin.h"
#include "config.h"
#include "pack.h"
#include "zkerr.h"

#define AUTH_WAITING 1 /* no ZooKeeper code is positive */

struct admin {
    struct config cfg;
    zhandle_t *zh;
    struct ACL_vector acl; /* [zookeeper] acl: on every znode created (zkacl.h) */
    _Atomic int auth_rc;  /* the answer to [zookeeper] auth, set on the client's thread */
};

/* Formats "WHAT PATH: zerror" into err (ZNOAUTH: "permission denied by ZooKeeper", and
 * where to look); returns -1. */
int admin_failed(char *err, size_t errlen, const char *what, const char *path, int rc);
/* Creates every missing ancestor of PATH (not PATH itself). Returns a ZooKeeper code. */
int admin_create_parents(struct admin *a, const char *path);
/* The children of DIR's children, counted from their numChildren (no child read); 0 when
 * DIR does not exist. */
int admin_sum_children(struct admin *a, const char *dir, long long *count, char *err,
                       size_t errlen);
/* Children of PATH sorted by strcmp (free with deallocate_String_vector). */
int admin_sorted_children(struct admin *a, const char *path, struct String_vector *kids);
/* For queues with max_pending: the "admin" counter's path, its value plus DELTA and its
 * version, so that a transaction can set it (docs/zookeeper-layout.md, Pending counts).
 * Returns 1 when the queue is counted, 0 when not, -1 on error. */
int admin_counter(struct admin *a, const char *queue, int delta, char *path, size_t len,
                  char *value, size_t vlen, int *version);

/* Layout version 3 (admin_claims.c): the claim holding the job at PATH of QUEUE. ZOK with
 * the daemon holding it (host:pid) in HOLDER and, when JOB is given, its payload, size and
 * deliveries (JOB's jn must be set); ZNONODE when no claim holds it; another code when the
 * claims could not be listed. */
int admin_find_claimed(struct admin *a, const char *queue, const char *path,
                       struct admin_job *job, char *holder, size_t hlen);
/* Every job held in a claim of QUEUE, claim by claim: FN(CTX, record, claim's name) goes
 * on while it returns ZOK, and its other code ends the visit and is returned. ZOK when the
 * queue has no claims; claims settled or unreadable since the listing are skipped. */
struct claim_record;
typedef int (*admin_claimed_fn)(void *ctx, const struct claim_record *r, const char *claim);
int admin_claims_visit(struct admin *a, const char *queue, admin_claimed_fn fn, void *ctx);
/* The daemon holding claim NAME: its session node's data (host:pid), or a text saying the
 * session is gone. */
void admin_claim_holder(struct admin *a, const char *name, char *holder, size_t len);
/* `deferctl cancel --force` of the claimed job at PATH of QUEUE: its claim written without it
 * at the version read (deleted, the job its last), then the holder's session node touched
 * so that its daemon tells the consumer (docs/protocol.md, CANCEL). ZOK; ZNONODE when no
 * claim holds it; ZBADVERSION when the claim changed meanwhile (look again); ZNOTEMPTY
 * when its session is gone (its claim is about to be recovered: try again). */
int admin_cancel_claimed(struct admin *a, const char *queue, const char *path);

/* A packed job as its pack holds it (admin_packs.c). */
struct admin_packed {
    int in;                         /* the job is in the pack as read */
    char path[LAYOUT_PATH_MAX];     /* the pack's znode */
    int version;
    unsigned char *data;            /* the pack as read */
    size_t len;
    unsigned char *rest;            /* the pack without the job; NULL when it was the last */
    size_t rest_len;
    struct pack_job job;            /* payload points into data */
};
void admin_packed_clear(struct admin_packed *p);

#define ADMIN_PACK_FAILED 1 /* no ZooKeeper code is positive; err says why */
/* For a job JN of QUEUE whose id names a pack: ZOK with p->in when the pack holds it (JN
 * then from its record); ZOK without p->in when the pack is gone (unpacked): JN and PATH
 * name the job znode where unpacking put it (its bucket, or the pack's shard); ZNONODE
 * when the pack is there without the job; ADMIN_PACK_FAILED with err. */
int admin_packed_read(struct admin *a, const char *queue, struct job_name *jn, char *path,
                      size_t plen, struct admin_packed *p, char *err, size_t errlen);

/* list: every job of the packs of QUEUE whose window meets [FROM, UNTIL], pack by pack in
 * window order, until ENOUGH says the rest (windows from START on) is not needed. */
struct admin_pack_visit {
    int (*each)(const struct pack_job *job, const char *pack, void *ctx); /* a ZooKeeper code */
    int (*enough)(uint64_t start, void *ctx);
    void *ctx;
};
int admin_packs_visit(struct admin *a, const char *queue, uint64_t from, uint64_t until,
                      const struct admin_pack_visit *v);

#endif
