/* A queue format other than deferd's own, plugged into the engine: today Curator's
 * (src/daemon/curator/). The engine reaches it only through this table, for queues whose
 * format says so and for jobs that carry one of its items (job->ci); main.c installs it
 * (dispatcher_set_format), so the engine never names the format's files. */
#ifndef DEFERD_FOREIGN_FORMAT_H
#define DEFERD_FOREIGN_FORMAT_H

#include <stddef.h>
#include <stdint.h>

struct consumer;
struct dispatcher;
struct dqueue;
struct job;
struct proto_request;
struct reply;

struct foreign_format {
    /* PUT into Q (takes the payload); completes R. */
    void (*put)(struct dispatcher *ds, struct dqueue *q, struct proto_request *req,
                struct reply *r);
    /* Starts reading Q's items from ZooKeeper (idempotent): 0, or -1. */
    int (*follow)(struct dispatcher *ds, struct dqueue *q);
    /* JOB, ready, goes to consumer C: locked the format's way, then delivered. */
    void (*dispatch)(struct dispatcher *ds, struct job *job, struct consumer *c);
    /* Gives JOB's lock back (DELIVERED: it reached a consumer). */
    void (*release)(struct dispatcher *ds, struct job *job, int delivered);
    /* ACK (ACK) or NACK of a held JOB; completes R. */
    void (*settle)(struct dispatcher *ds, struct job *job, int ack, int has_delay,
                   uint64_t delay_ms, struct reply *r);
    void (*job_freed)(struct job *job);
    /* The priority its consumer is told. */
    uint32_t (*priority)(const struct job *job);
    /* The session was lost / came back (check our locks) / the engine is freed. */
    void (*reset)(struct dispatcher *ds);
    void (*resync)(struct dispatcher *ds);
    void (*free)(struct dispatcher *ds);
    /* " key=value ..." for STATS. */
    void (*format_stats)(const struct dispatcher *ds, char *buf, size_t len);
};

#endif
