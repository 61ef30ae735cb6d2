/* Leases: how long a consumer may hold a job (its ttr) before it is taken back. Held jobs
 * sit in one heap by their next lease event: the DEADLINE notice, then the expiry. Leases
 * stand still while ZooKeeper is away (a holder cannot ack then). Loop thread only. */
#ifndef DEFERD_LEASE_H
#define DEFERD_LEASE_H

#include <stdint.h>

struct consumer;
struct dispatcher;
struct heap;
struct job;
struct reply;

void lease_heap_init(struct heap *leases);
/* A new lease of job->ttr_ms from now (a delivery, or TOUCH). */
void lease_start(struct dispatcher *ds, struct job *job);
/* Into the lease heap at its current lease end (state INFLIGHT). */
void lease_arm(struct dispatcher *ds, struct job *job);
/* Sends the notices and expires the leases due by WALL (ms). */
void lease_tick(struct dispatcher *ds, int64_t wall);
/* TOUCH: C asks for a new lease on job ID. */
void lease_touch(struct dispatcher *ds, struct consumer *c, const char *id, struct reply *r);
/* Leases stood still while disconnected: every lease end moves by the time away. */
void lease_shift_all(struct dispatcher *ds, int64_t delta_ms);

#endif
