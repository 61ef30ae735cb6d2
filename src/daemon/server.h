/* The Unix socket server: accepts producers and consumers, decodes requests, hands them to
 * the dispatcher, and writes replies in request order however late they complete. */
#ifndef DEFERD_SERVER_H
#define DEFERD_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

struct deferd;
struct conn;
struct job;
struct reply;
struct server;

struct server *server_new(struct deferd *d);
void server_free(struct server *s);

/* Completing a reply whose connection has closed just frees it. */
void reply_ok(struct reply *r, const char *text); /* text may be NULL */
/* An error whose TEXT may be long (a list of ids); reply_err cuts at 512 bytes. */
void reply_err_text(struct reply *r, enum proto_errcode code, const char *text);
void reply_err(struct reply *r, enum proto_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

int server_push_job(struct conn *conn, const struct job *job);
int server_push_deadline(struct conn *conn, const char *id, int64_t ms_left);
int server_push_expired(struct conn *conn, const char *id);
int server_push_cancelled(struct conn *conn, const char *id);
/* A job being locked for this connection's consumer was pushed or given up: an UNSUB
 * waiting for the last such push is answered now (after its OK, no JOB comes). */
void server_consumer_quiet(struct conn *conn);
/* Tells every consumer connection: "STATE <name>". */
void server_broadcast_state(struct server *s, const char *name);
/* A PUT or BATCH was answered: requests held back for max_open_puts may go (soon, from the
 * loop, never under the caller's feet). */
void server_puts_done(struct server *s);
/* Connections whose PUT or BATCH waits for its turn (max_open_puts). */
size_t server_puts_waiting(const struct server *s);
/* Requests received and not answered yet, over all connections. */
size_t server_pending_replies(const struct server *s);

#endif
