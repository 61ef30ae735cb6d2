/* Answers that need ZooKeeper reads or writes: a page's or action's call runs its work on
 * the reader thread (web_worker.h), then answers on the loop. */
#ifndef DEFERD_WEB_CALL_H
#define DEFERD_WEB_CALL_H

#include <stddef.h>

#include "web_worker.h"

struct evhttp_request;
struct evkeyvalq;
struct jsonw;
struct web;

/* A page's or action's call: the first member of the page's own struct. Its answer is
 * made on the loop once WORK ran on the reader thread; then CLEAR (may be NULL), and the
 * call is freed. */
struct web_call {
    struct web *w;
    struct evhttp_request *req;
    int json;
    int rc;                     /* WORK's: 0, -1, ADMIN_NOT_FOUND, ADMIN_IN_FLIGHT */
    int unreachable;            /* no ZooKeeper session could be opened */
    char err[512];
    /* the answer once WORK succeeded: JSON written by FILL, or the page HTML sends; or
     * ANSWER, which does it all (failures too) */
    void (*fill)(struct web_call *c, struct jsonw *jw);
    void (*html)(struct web_call *c);
    void (*answer)(struct web_call *c);
    void (*clear)(struct web_call *c);
};
/* A call of SIZE bytes (the page's struct, a web_call first) for REQ, with KIND's
 * callbacks; NULL (REQ answered 500) when out of memory. */
void *web_call_new(size_t size, struct web *w, struct evhttp_request *req, int json,
                   const struct web_call *kind);
/* Answers CODE and TEXT instead of starting C; clears and frees it. */
void web_call_refuse(struct web_call *c, int code, const char *reason, const char *text);
/* web_params for C's request: 0, or -1 with C's error saying the query is malformed. */
int web_call_params(struct web_call *c, struct evkeyvalq *q);
/* Sends C to the reader thread; answers 503 itself (and frees C) when too many wait. */
void web_call_start(struct web_call *c, web_work_fn work);
/* In WORK: 1 (with C's error set) when A is NULL. */
int web_call_no_session(struct web_call *c, const void *a, const char *err);
/* The answer to a failed call: 404, 409, 503 with C's error. */
void web_call_fail(struct web_call *c);

#endif
