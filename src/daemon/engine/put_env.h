/* What the engine gives the put path (putset.c, putpacks.c, packer.c, tokens.c): the
 * daemon's parts, the put batch and the directory caches it shares with the engine, the
 * uid source, and the two calls back into the engine. The put path includes this header,
 * never dispatcher_int.h: it reaches no job, heap or consumer, and the engine's life cycle
 * learns of a stored job only through `stored` (as it learns of listed ones through
 * struct mirror_report). */
#ifndef DEFERD_PUT_ENV_H
#define DEFERD_PUT_ENV_H

#include <stddef.h>
#include <stdint.h>

struct deferd;
struct dqueue;
struct txnbatch;
struct buckets;
struct uidgen;
struct putset_pool;

struct put_env {
    struct deferd *d;           /* its store, loop, config, metrics, packer, layout */
    struct txnbatch *puts;      /* puts go to ZooKeeper as few multis (txnbatch.h) */
    struct buckets *buckets;    /* 100 ms buckets and shards known to exist */
    struct buckets *parents;    /* coarser buckets known to exist */
    struct buckets *keydirs;    /* key and token hash directories known to exist */
    struct uidgen *uids;
    struct putset_pool *pool;   /* spare single-job put sets (putset.h), or NULL */
    void *engine;               /* the first argument of the calls below */
    /* The queue of that name this daemon runs, or NULL. */
    struct dqueue *(*queue)(void *engine, const char *name);
    /* A job this daemon has just stored at PATH, named JN, with the id ID (or NULL: made
     * from the queue and JN), whose payload
     * is *PAYLOAD (LEN bytes): the engine may keep the payload for its delivery (it takes
     * it and leaves NULL). */
    void (*stored)(void *engine, struct dqueue *q, const char *path, const struct job_name *jn,
                   const char *id, unsigned char **payload, size_t len);
};

#endif
