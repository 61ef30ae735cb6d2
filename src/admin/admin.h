/* Operator commands that work on ZooKeeper directly, for deferctl and for the dashboard's
 * reader thread in deferd (never the daemon's loop): the dead letters here, pending jobs,
 * pause flags, layout and schedules below. Synchronous ZooKeeper calls on a session of
 * their own. */
#ifndef DEFERD_ADMIN_H
#define DEFERD_ADMIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "layout.h"
#include "schedule.h"

struct admin;

/* How admin_open waits for its session: a ZooKeeper that cannot be reached would otherwise
 * keep a command silent for the whole wait. */
struct admin_wait {
    int64_t timeout_ms;                 /* give up after this long without a session */
    int64_t notice_ms;                  /* then call notice, once */
    void (*notice)(const char *hosts);  /* may be NULL */
};

/* Reads CONFIG_PATH (deferd.ini) for the ZooKeeper hosts and root, and connects. */
int admin_open(const char *config_path, const struct admin_wait *w, struct admin **out,
               char *err, size_t errlen);
void admin_close(struct admin *a);
/* The same from deferd.ini with -o overrides; KEEP_LOGS: the caller (deferd) has its
 * own log setup, which admin_open's quiet terminal setup must not replace. */
struct admin_source {
    const char *config_path;
    const char *const *overrides;
    size_t noverrides;
    int keep_logs;
    const struct config *zookeeper; /* or NULL: [zookeeper] from here, not the file */
};
int admin_open_from(const struct admin_source *src, const struct admin_wait *w,
                    struct admin **out, char *err, size_t errlen);
/* The session expired (or its credentials were refused): a long-lived user (deferd's
 * dashboard) opens a new one; deferctl's commands end long before. */
int admin_expired(const struct admin *a);

/* Each returns 0, or -1 with a message in err (ADMIN_NOT_FOUND: no such dead job). The
 * queue must be configured. Ids are "<queue>/<job name>". */
int admin_dead_list(struct admin *a, const char *queue, FILE *out, char *err, size_t errlen);
int admin_dead_show(struct admin *a, const char *id, FILE *out, char *err, size_t errlen);
/* *unkeyed: the job had a key that another job took meanwhile; it went back without it. */
int admin_dead_kick(struct admin *a, const char *id, char *new_id, size_t idlen,
                    int *unkeyed, char *err, size_t errlen);
int admin_dead_delete(struct admin *a, const char *id, char *err, size_t errlen);
/* FN(id, CTX) for each dead letter of QUEUE (names only, in bucket and name order), from
 * the one after AFTER (an id; NULL: from the first, and AFTER need not exist any more);
 * FN returns 0 to go on. */
int admin_dead_each(struct admin *a, const char *queue, const char *after,
                    int (*fn)(const char *id, void *ctx), void *ctx, char *err, size_t errlen);
/* A dead letter (native or Curator queue) with its payload's first PREVIEW bytes (payload,
 * len; bytes the whole), one read; ADMIN_NOT_FOUND when it is not dead (any more). */
struct admin_job;
int admin_dead_read(struct admin *a, const char *id, struct admin_job *out, size_t preview,
                    char *err, size_t errlen);
/* Dead letters of QUEUE, counted from each bucket's numChildren (no job is read). */
int admin_dead_count(struct admin *a, const char *queue, long long *count, char *err,
                     size_t errlen);

/* The deferd.ini admin_open read. */
struct config;
const struct config *admin_config(const struct admin *a);
/* QUEUE's configuration, or NULL with a message in err when it is not configured. */
struct queue_config;
const struct queue_config *admin_queue(struct admin *a, const char *queue, char *err,
                                       size_t errlen);

/* Results besides 0 and -1 (any other failure) of the job and pause commands. */
enum { ADMIN_NOT_FOUND = -2, ADMIN_IN_FLIGHT = -3 };

/* A job as read from ZooKeeper (admin_jobs.c). */
struct admin_job {
    char id[LAYOUT_ID_MAX + 1];
    struct job_name jn;
    uint32_t attempts;      /* deliveries so far: durable, from the name and the cversion */
    int locked;             /* held by a consumer, or locked by a daemon just before due */
    int claimed;            /* list: held in a claim (layout version 3), its znode gone */
    int dead;               /* show: found among the dead letters */
    int32_t bytes;
    uint32_t ttr_ms;        /* list, show: the lease each delivery gets (jn.ttr_ms, else */
    int ttr_default;        /* the queue's ttr: then ttr_default is 1) */
    char holder[128];       /* show: the lock's data, "host:pid" of the deferd that locked
                             * the job (not its consumer's), "" when not locked */
    char *payload;          /* show: malloc'd (admin_job_clear), else NULL */
    int len;
    /* show, flows (docs/flows.md): a child's parent id ("" for none, or its flow gone);
     * a parent waiting for its children (waiting): its flow's counts and the children
     * not settled yet, each pending or held (malloc'd, admin_job_clear) */
    char flow_parent[LAYOUT_ID_MAX + 1];
    int waiting;
    struct layout_flow flow;
    struct admin_flow_child {
        char id[LAYOUT_ID_MAX + 1];
        int held;
    } *children;
    size_t nchildren;
};

struct admin_list_opts {
    uint64_t from_ms, until_ms; /* due time window, both inclusive */
    size_t limit;               /* jobs per page, 1..10000 */
    const char *after;          /* id of the previous page's last job, or NULL */
    size_t preview;             /* > 0: each row's payload cut to this many bytes (payload,
                                 * len; bytes is the whole), and a held job's holder */
};

typedef void (*admin_job_fn)(const struct admin_job *job, void *ctx);

/* Pending jobs of QUEUE in due order (then priority, then uid), at most o->limit of them;
 * *more tells whether another page follows, and CURSOR gets the id to pass as o->after for
 * it. Reads only the buckets the page needs. */
int admin_list(struct admin *a, const char *queue, const struct admin_list_opts *o,
               admin_job_fn fn, void *ctx, int *more, char *cursor, size_t clen, char *err,
               size_t errlen);
/* A job by id, pending or dead (ADMIN_NOT_FOUND if neither), with its payload. */
int admin_show(struct admin *a, const char *id, struct admin_job *out, char *err,
               size_t errlen);
void admin_job_clear(struct admin_job *job);
/* Which job: by id (queue and key NULL), or by QUEUE and KEY (one read of its key node).
 * found gets the id of the job acted on (or tried). */
struct admin_which {
    const char *id;
    const char *queue;
    const char *key;
    char found[LAYOUT_ID_MAX + 1];
};

/* One transaction each, which also deletes (cancel) or repoints (reschedule) the key node
 * of a keyed job, guarded by its version; a changed key, counter or lock is read again
 * and tried again a few times. A locked job is refused with ADMIN_IN_FLIGHT (its consumer
 * wins), unless FORCE: then its lock and owner nodes are deleted in the same transaction
 * (the holder's ack fails with LEASE_LOST). */
int admin_cancel(struct admin *a, struct admin_which *w, int force, char *err, size_t errlen);
int admin_reschedule(struct admin *a, struct admin_which *w, uint64_t due_ms,
                     char *new_id, size_t idlen, char *err, size_t errlen);

/* Pause flags (admin_pause.c): <root>/queues/<queue>/paused, watched by every daemon.
 * *changed is 0 when the queue already was in the asked state. */
int admin_pause(struct admin *a, const char *queue, const char *reason, int *changed,
                char *err, size_t errlen);
int admin_resume(struct admin *a, const char *queue, int *changed, char *err, size_t errlen);
/* *paused, and the flag's text (who, when, why) in info when paused. */
int admin_paused(struct admin *a, const char *queue, int *paused, char *info, size_t ilen,
                 char *err, size_t errlen);

/* The root's layout marker (admin_layout.c): version 1 when absent, -1 when it holds
 * something else (marker then has its text). */
struct admin_layout {
    int present;
    int version;
    char marker[64];
};
int admin_layout(struct admin *a, struct admin_layout *out, char *err, size_t errlen);
/* VERSION 2 writes the marker (every daemon starts packing), 1 deletes it (new packs stop;
 * those written are still unpacked). *changed is 0 when the root already was so. */
int admin_layout_set(struct admin *a, int version, int *changed, char *err, size_t errlen);
/* Packs waiting in QUEUE, counted from each window directory's numChildren. */
int admin_pack_count(struct admin *a, const char *queue, long long *packs, char *err,
                     size_t errlen);

/* A schedule's state in ZooKeeper (admin_schedules.c, docs/schedules.md). */
struct schedule_config;
struct admin_schedule {
    int present;            /* <root>/schedules/<name> exists */
    int parsed;             /* and holds a schedule's state (else: a foreign node) */
    struct schedule_state st;
    int64_t mtime;          /* when a daemon last wrote it (ZooKeeper's clock, ms) */
    enum { ADMIN_KEY_NONE, ADMIN_KEY_LIVE, ADMIN_KEY_KEPT, ADMIN_KEY_GONE } key;
    char job[LAYOUT_ID_MAX + 1]; /* LIVE: the id of the latest job put, pending or held */
    int64_t acked_ms;       /* KEPT: when it was acked */
};
int admin_schedule(struct admin *a, const struct schedule_config *sc, struct admin_schedule *o,
                   char *err, size_t errlen);

#endif
