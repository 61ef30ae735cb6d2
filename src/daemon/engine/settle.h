/* ACK and NACK of a held job (settle.c): one transaction each, with the follow-up jobs
 * of ACK then= / NACK then=. The reply is always completed, now or later. */
#ifndef DEFERD_SETTLE_H
#define DEFERD_SETTLE_H

#include <stddef.h>

struct consumer;
struct dispatcher;
struct proto_request;
struct reply;

/* ACK and NACK, with follow-up jobs when REQ has items (their payloads are taken). */
void settle_ack(struct dispatcher *ds, struct consumer *c, struct proto_request *req,
                struct reply *r);
void settle_nack(struct dispatcher *ds, struct consumer *c, struct proto_request *req,
                 struct reply *r);

#endif
