/* Request routing: the command table. Each decoded request goes to its command's handler
 * after the checks every command shares (the queue's access rules, the drain). Handlers
 * answer through the reply, now or later. Loop thread only. */
#ifndef DEFERD_COMMANDS_H
#define DEFERD_COMMANDS_H

struct conn;
struct deferd;
struct proto_request;
struct reply;

/* The server's request handler (server_new): takes REQ's payloads, completes R. */
void commands_handle(struct deferd *d, struct conn *c, struct proto_request *req,
                     struct reply *r);

#endif
