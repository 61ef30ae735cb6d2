/* PUT and BATCH: validated, cut into parts that each fit one ZooKeeper request, stored
 * (putset.c), answered. The reply is always completed, now or later. */
#ifndef DEFERD_PUT_H
#define DEFERD_PUT_H

#include <stddef.h>

struct consumer;
struct dispatcher;
struct proto_request;
struct reply;

void put_single(struct dispatcher *ds, struct proto_request *req, struct reply *r);
void put_batch(struct dispatcher *ds, struct proto_request *req, struct reply *r);
/* FLOW: a parent stored waiting (flow.h) and its children, all or none. */
void put_flow(struct dispatcher *ds, struct proto_request *req, struct reply *r);
/* PUT and BATCH requests taken on and not answered yet: the server holds further ones back
 * above [daemon] max_open_puts. */
size_t put_open_count(const struct dispatcher *ds);
/* FN(ARG) is called when one of them has been answered (NULL: nobody is told). */
void put_on_done(struct dispatcher *ds, void (*fn)(void *arg), void *arg);

#endif
