/* Answers that wait for the reader thread (web_worker.h). evhttp keeps the request until
 * it is answered (it reads nothing more from that connection meanwhile); only evhttp_free
 * would free it first, which is why web_free, which answers every waiting call, runs
 * before the listener is freed. */
#include "web_call.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "log.h"
#include "web_params.h"
#include "web_reply.h"
#include "web_state.h"

static void fill(struct jsonw *jw, void *ctx)
{
    struct web_call *c = ctx;
    c->fill(c, jw);
}

static void done(void *ctx, int ran)
{
    struct web_call *c = ctx;
    if (ran && c->answer)
        c->answer(c);
    else if (ran && c->rc != 0)
        web_call_fail(c);
    else if (ran && c->json)
        web_send_json(c->req, fill, c);
    else if (ran)
        c->html(c);
    else
        web_fail(c->req, c->json, 503, "Service Unavailable", "deferd is stopping");
    if (c->clear)
        c->clear(c);
    free(c);
}

void *web_call_new(size_t size, struct web *w, struct evhttp_request *req, int json,
                   const struct web_call *kind)
{
    struct web_call *c = calloc(1, size);
    if (!c) {
        web_fail(req, json, 500, "Internal Server Error", "out of memory");
        return NULL;
    }
    *c = *kind;
    c->w = w;
    c->req = req;
    c->json = json;
    return c;
}

void web_call_refuse(struct web_call *c, int code, const char *reason, const char *text)
{
    web_fail(c->req, c->json, code, reason, text);
    if (c->clear)
        c->clear(c);
    free(c);
}

int web_call_params(struct web_call *c, struct evkeyvalq *q)
{
    if (web_params(c->req, q) == 0)
        return 0;
    snprintf(c->err, sizeof c->err, "the query is not key=value&... (%%-encoded)");
    return -1;
}

void web_call_start(struct web_call *c, web_work_fn work)
{
    if (web_worker_submit(c->w->worker, work, done, c) == 0)
        return;
    log_warn("web: %s: refused: too many pages wait for ZooKeeper",
             evhttp_request_get_uri(c->req));
    web_fail(c->req, c->json, 503, "Service Unavailable",
             "too many pages wait for ZooKeeper: try again in a moment");
    if (c->clear)
        c->clear(c);
    free(c);
}

int web_call_no_session(struct web_call *c, const void *a, const char *err)
{
    if (a)
        return 0;
    c->rc = -1;
    c->unreachable = 1;
    snprintf(c->err, sizeof c->err, "%s", err && err[0] ? err : "no ZooKeeper session");
    return 1;
}

void web_call_fail(struct web_call *c)
{
    if (c->rc == ADMIN_NOT_FOUND)
        web_fail(c->req, c->json, 404, "Not Found", c->err);
    else if (c->rc == ADMIN_IN_FLIGHT)
        web_fail(c->req, c->json, 409, "Conflict", c->err);
    else
        web_fail(c->req, c->json, 503, "Service Unavailable", c->err);
}
