/* Curator-format queues in the daemon: jobs put into a flat Apache Curator queue
 * (DistributedDelayQueue or DistributedPriorityQueue) that Java consumers read. */
#ifndef DEFERD_CURATOR_QUEUE_H
#define DEFERD_CURATOR_QUEUE_H

struct dispatcher;
struct dqueue;
struct proto_request;
struct reply;

/* Puts REQ into Q's Curator queue; the reply is completed now or later. */
void curator_queue_put(struct dispatcher *ds, struct dqueue *q, struct proto_request *req,
                       struct reply *r);

#endif
