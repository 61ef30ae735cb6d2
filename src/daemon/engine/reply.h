/* A reply: what a request handler answers through, exactly once, now or later (from a
 * ZooKeeper completion). The socket layer that made it sets its completion, which writes
 * the line in request order; handlers only say OK or which error. Loop thread only. */
#ifndef DEFERD_REPLY_H
#define DEFERD_REPLY_H

#include "protocol.h"

struct reply;

/* Takes LINE (malloc'd, no newline; NULL when out of memory). */
typedef void reply_complete_fn(struct reply *r, char *line);

struct reply {
    reply_complete_fn *complete;
};

void reply_ok(struct reply *r, const char *text); /* text may be NULL */
/* An error whose TEXT may be long (a list of ids); reply_err cuts at 512 bytes. */
void reply_err_text(struct reply *r, enum proto_errcode code, const char *text);
void reply_err(struct reply *r, enum proto_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An error with the fields F (refusal.h; NULL: none) before its text: whatever a client
 * decides from (may it send a put again?) goes there, never only into the text. */
void reply_refuse(struct reply *r, enum proto_errcode code, const struct refusal *f,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void reply_refuse_text(struct reply *r, enum proto_errcode code, const struct refusal *f,
                       const char *text);

#endif
