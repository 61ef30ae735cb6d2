/* CANCEL and RESCHEDULE of a pending job by id or key (cancel.c), with force=1 taking a
 * held job from its holder. The reply is always completed, now or later. */
#ifndef DEFERD_CANCEL_H
#define DEFERD_CANCEL_H

#include <stddef.h>

struct consumer;
struct dispatcher;
struct proto_request;
struct reply;

void cancel_job(struct dispatcher *ds, struct proto_request *req, struct reply *r);
void cancel_reschedule(struct dispatcher *ds, struct proto_request *req, struct reply *r);

#endif
