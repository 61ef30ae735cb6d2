/* Writes held while ZooKeeper cannot take them. A PUT, BATCH, CANCEL or RESCHEDULE that
 * comes while the daemon is SUSPENDED, is building a session, or has not read ZooKeeper's
 * clock yet waits here, up to [daemon] hold_writes, instead of being refused: a leader
 * election costs producers a pause, not errors. Held requests go on in arrival order once
 * writes are possible again; they are answered ERR UNAVAILABLE "not stored" when the hold
 * runs out, when the session is lost, or when the daemon drains. Held PUTs and BATCHes
 * count as open puts, so max_open_puts bounds them too. Other writes may wait here as well
 * (writehold_add): a keyed put whose answer the connection lost is sent again. */
#ifndef DEFERD_WRITEHOLD_H
#define DEFERD_WRITEHOLD_H

#include <stddef.h>

#include <stdint.h>

#include "refusal.h"

struct dispatcher;
struct event_base;
struct proto_request;
struct reply;
struct writehold;

/* A request's handler, called again when the request is let go. */
typedef void writehold_fn(struct dispatcher *ds, struct proto_request *req, struct reply *r);

/* A write of another kind: RELEASE sends it again, FAIL answers it with WHY (a refusal's
 * reason: draining, no_session, hold_expired); either ends it. */
struct writehold_ops {
    void (*release)(struct dispatcher *ds, void *ctx);
    void (*fail)(struct dispatcher *ds, void *ctx, enum refusal_reason why);
};

/* What the line needs of its owner (the dispatcher), given at creation so that this file
 * depends on nothing of the engine. */
struct writehold_env {
    int (*possible)(const struct dispatcher *ds);   /* writes can go to ZooKeeper now */
    int (*draining)(const struct dispatcher *ds);   /* stopping: hold nothing new */
    int64_t (*hold_ms)(const struct dispatcher *ds); /* how long a write may wait now */
    void (*put_ended)(struct dispatcher *ds);       /* a held PUT or BATCH let go of its slot */
};

struct writehold_stats {
    size_t held, puts;                 /* now: all, and PUT/BATCH among them */
    unsigned long long total, expired; /* ever held; answered because the hold ran out */
};

struct writehold *writehold_new(struct dispatcher *ds, const struct writehold_env *env,
                               struct event_base *base);
/* Answers what is still held ("deferd is stopping") and frees it all. */
void writehold_free(struct writehold *wh);
/* Holds REQ (taken: REQ is left empty) with its reply R when writes are not possible now
 * and holding is on; 1 when held, 0 when the caller must answer now. */
int writehold_take(struct writehold *wh, writehold_fn *fn, struct proto_request *req,
                   struct reply *r);
/* Holds CTX with OPS the same way, as if held at monotonic SINCE_MS (0: now; a write held
 * again keeps its first wait's start); 1 when held, 0 when holding is off or not needed. */
int writehold_add(struct writehold *wh, const struct writehold_ops *ops, void *ctx,
                  int64_t since_ms);
/* Writes are possible again: each held request goes to its handler, in arrival order. Also
 * called when hold_writes changed: the wait of what is held is counted by the new value. */
void writehold_release(struct writehold *wh);
/* Answers every held request ERR UNAVAILABLE "not stored", with WHY. */
void writehold_fail(struct writehold *wh, enum refusal_reason why);
void writehold_report(const struct writehold *wh, struct writehold_stats *out);

#endif
