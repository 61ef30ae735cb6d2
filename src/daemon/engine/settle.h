/* ACK and NACK of a held job (settle.c): one transaction each, with the follow-up jobs
 * of ACK then= / NACK then=. The reply is always completed, now or later. */
#ifndef DEFERD_SETTLE_H
#define DEFERD_SETTLE_H

#include <stddef.h>
#include <stdint.h>

struct consumer;
struct job;
struct queue_config;
struct dispatcher;
struct proto_request;
struct reply;

/* ACK and NACK, with follow-up jobs when REQ has items (their payloads are taken). */
void settle_ack(struct dispatcher *ds, struct consumer *c, struct proto_request *req,
                struct reply *r);
void settle_nack(struct dispatcher *ds, struct consumer *c, struct proto_request *req,
                 struct reply *r);

/* For the engine's files: a job past max_attempts at delivery goes to the dead letters;
 * settles held over a disconnection are sent, refused or checked; the nack back-off; the
 * job a consumer holds. */
void settle_bury_locked(struct dispatcher *ds, struct job *job);
/* A lock taken ahead that no consumer will take now: given back unrun (no attempt spent). */
void settle_give_back_locked(struct dispatcher *ds, struct job *job);
/* A claimed job (claim.h) given up with its delivery counted: made again under its name. */
void settle_release_claimed(struct dispatcher *ds, struct job *job);
void settle_resume_held(struct dispatcher *ds);
void settle_revoke_held(struct dispatcher *ds);
void settle_check_unknown(struct dispatcher *ds);
void settle_free_held(struct dispatcher *ds);
uint64_t settle_backoff_ms(const struct queue_config *qc, uint32_t attempt);
/* The job ID that consumer C holds (SETTLING: for an ACK or NACK, which may answer a job
 * taken from it); NULL when none, and R is answered with the reason. */
struct job *settle_held_job(struct dispatcher *ds, struct consumer *c, const char *id,
                            int settling, struct reply *r);

#endif
