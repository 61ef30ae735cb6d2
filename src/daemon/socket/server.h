/* The Unix socket server: accepts producers and consumers, decodes requests, hands them to
 * its request handler (the command table, commands.c), and writes replies in request order
 * however late they complete. */
#ifndef DEFERD_SERVER_H
#define DEFERD_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

struct deferd;
struct conn;
struct consumer;
struct peer;
struct reply;
struct server;

/* Each decoded request goes to HANDLE (the command table), which completes its reply. */
typedef void server_handler_fn(struct deferd *d, struct conn *c, struct proto_request *req,
                               struct reply *r);
struct server *server_new(struct deferd *d, server_handler_fn *handle);
void server_free(struct server *s);

/* What a request handler may ask of its connection: its consumer (made by the first SUB
 * when CREATE; NULL when none or out of memory), its peer, how many requests it had
 * refused before this one; UNSUB's reply R is held until no push is on its way. */
struct consumer *server_conn_consumer(struct conn *c, int create);
const struct peer *server_conn_peer(const struct conn *c);
int server_conn_denial(struct conn *c);
void server_conn_hold_unsub(struct conn *c, struct reply *r);

/* Tells every consumer connection: "STATE <name>". */
void server_broadcast_state(struct server *s, const char *name);
/* Connections whose PUT or BATCH waits for its turn (max_open_puts). */
size_t server_puts_waiting(const struct server *s);
/* Requests received and not answered yet, over all connections. */
size_t server_unanswered_replies(const struct server *s);

#endif
