/* A job's lock: the transaction that takes it (check the job, create the lock and our
 * sequential owner node, then read the payload), watching a lock another daemon holds,
 * checking ours after a reconnection, and its release. Loop thread only. */
#ifndef DEFERD_LOCK_H
#define DEFERD_LOCK_H

#include "layout.h"

struct consumer;
struct dispatcher;
struct job;

/* The lock (exclusive: one holder) and the owner node (names the holder's session), both
 * ephemeral children of the job, created and deleted together. Every transaction that
 * releases or deletes the job deletes our owner node too, so it fails as a whole unless
 * this very session still holds the job. */
struct lock_paths {
    char lock[LAYOUT_PATH_MAX + 8];
    char owner[LAYOUT_PATH_MAX + 32];
};

/* The lock's multi: create the lock, create the owner node, then (a queue with a
 * concurrency limit) create a slot node (limit.h). No check of the job: the lock's create
 * under it fails with NoNode when it is gone, as a check would (one operation less for
 * ZooKeeper to log, about 5% of S3's rate: docs/performance.md). */
#define LOCK_OWNER_OP 1
#define LOCK_SLOT_OP 2

void lock_path(const struct job *job, char *buf, size_t len);
void lock_paths(const struct job *job, struct lock_paths *lp);
/* Locks JOB for consumer C (delivered once locked), or ahead of its due time when C is
 * NULL (prelocked: armed until due). */
void lock_take(struct dispatcher *ds, struct job *job, struct consumer *c);
/* Locked by another daemon: wait for its lock to go (state CHECKING, then HELD). */
void lock_watch(struct dispatcher *ds, struct job *job);
/* A watch on LOCK_PATH fired: a job HELD by another daemon may be free now. */
void lock_watch_fired(struct dispatcher *ds, const char *lock_path);
/* After RECONNECTED with the same session: a held job whose lock vanished is revoked. */
void lock_verify_held(struct dispatcher *ds);
/* Gives our lock back (the job is offered again, attempt + 1 at its next delivery). */
void lock_release(struct dispatcher *ds, struct job *job);
/* The same, after a failure that would happen again at once (a read or a dead-lettering
 * refused): the job waits ZK_RETRY_MS before it is offered again. */
void lock_release_later(struct dispatcher *ds, struct job *job);

#endif
