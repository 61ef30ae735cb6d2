/* What this daemon knows of the flows its settles count in (flow.h): a flow's node, its
 * version and counts after the settles this daemon sent, so that the children of one flow
 * settled here one after the other need no read each and never conflict with each other:
 * each takes the version the one before it leaves, and the transactions, sent in order on
 * one session, apply in order. While a settle reads a flow, the others of that flow wait
 * for it instead of reading too. Another daemon's count in between fails the next settle
 * (BadVersion): the entry is marked unknown and the next settle reads, the others waiting.
 * Bounded: FLOWCACHE_MAX entries (idle ones are dropped). Loop thread only. */
#ifndef DEFERD_FLOWCACHE_H
#define DEFERD_FLOWCACHE_H

#include <stdint.h>

#include "layout.h"

#define FLOWCACHE_MAX 4096

struct flow_cache;

struct flow_cache *flow_cache_new(void);
void flow_cache_free(struct flow_cache *c);

/* The flow UID's node as the next settle here finds it (VERSION, FL): 1 when known and not
 * left without children by it, and the entry moves on by one child (DEAD: counted dead;
 * ADDED: children it adds, ACK join=1); 0 when it must be read. */
int flowcache_take(struct flow_cache *c, const char *uid, int dead, unsigned added,
                   int32_t *version, struct layout_flow *fl);
/* Another settle reads UID now: 1 and DONE(CTX) once that read ended (then take or read);
 * 0 when none does: the caller reads, and must call flowcache_read_end() when it has. */
int flowcache_wait(struct flow_cache *c, const char *uid, void (*done)(void *ctx), void *ctx);
/* The caller's read of UID ended: KNOWN (it read the node at VERSION, FL, and sends a
 * settle counting one child, DEAD, adding ADDED, that leaves children pending), or not;
 * the waiters go on. */
void flowcache_read_end(struct flow_cache *c, const char *uid, int known, int32_t version,
                        const struct layout_flow *fl, int dead, unsigned added);
/* A settle sent with UID's counts came back: APPLIED or not (then what this daemon knows
 * is wrong: read again), RELEASED (the flow is gone). */
void flowcache_answered(struct flow_cache *c, const char *uid, int applied, int released);

#endif
