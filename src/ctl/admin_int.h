/* What admin.c (connection, dead letters), admin_jobs.c (pending jobs) and admin_pause.c
 * (pause flags) share. Private to them. */
#ifndef DEFERD_ADMIN_INT_H
#define DEFERD_ADMIN_INT_H

#include <zookeeper/zookeeper.h>

#include "admin.h"
#include "config.h"
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

#endif
