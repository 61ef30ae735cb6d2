/* What the dashboard's pages share: replies with the security headers, HTML escaping, the
 * page frame, answers that wait for the reader thread, who is asking. Private to
 * src/daemon/web. */
#ifndef DEFERD_WEB_INT_H
#define DEFERD_WEB_INT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "layout.h"
#include "web_format.h"
#include "web_worker.h"

struct deferd;
struct evbuffer;
struct evhttp_request;
struct evkeyvalq;
struct jsonw;

/* A browser's sign-in (web_auth.c): the cookie holds ID, never the token. */
#define WEB_SESSIONS_MAX 256
struct web_session {
    char id[33], csrf[33];      /* random hex */
    char name[WEB_TOKEN_NAME_MAX + 1];
    int64_t expires_ms;         /* monotonic */
};

struct web {
    struct deferd *d;
    struct web_worker *worker;
    struct config *zookeeper;   /* the daemon's [zookeeper] at start, for the worker */
    struct web_session sessions[WEB_SESSIONS_MAX];
    size_t nsessions;
};

/* Sends BODY (may be NULL) with CTYPE and the dashboard's headers: no framing by other
 * sites, no sniffing, scripts and styles from this origin only; a HEAD gets no body. */
void web_reply(struct evhttp_request *req, int code, const char *reason, const char *ctype,
               struct evbuffer *body);
/* An error: a small page, or {"error": TEXT} for the API (JSON). */
void web_fail(struct evhttp_request *req, int json, int code, const char *reason,
              const char *text);
/* 200 with the JSON object FILL writes (its braces included). */
void web_send_json(struct evhttp_request *req, void (*fill)(struct jsonw *jw, void *ctx),
                   void *ctx);
/* S with & < > " ' as entities: safe in text and in quoted attributes. */
void web_escape(struct evbuffer *out, const char *s);
/* N bytes of S the same way, bytes that are not printable ASCII as \xNN. */
void web_escape_bytes(struct evbuffer *out, const char *s, size_t n);
/* S %-encoded for a query value. */
void web_urlencode(struct evbuffer *out, const char *s);
void web_page_begin(struct evbuffer *out, struct deferd *d, const char *title);
void web_page_end(struct evbuffer *out);
void web_send_page(struct evhttp_request *req, struct evbuffer *page);
/* A wall time in ms as 2026-11-27T17:03:00.123Z. */
void web_time(struct evbuffer *out, uint64_t ms);
/* The same to the second, 2026-11-27T17:03:00Z: a clock's reading for people. */
void web_time_s(struct evbuffer *out, int64_t ms);

/* The request's query (GET) or form body (POST) into Q; 0, or -1 when malformed. */
int web_params(struct evhttp_request *req, struct evkeyvalq *q);

/* The overview: every queue's depth (all daemons') and this daemon's view of it. */
int web_overview_html(struct deferd *d, struct evbuffer *out);
int web_overview_json(struct deferd *d, struct evbuffer *out);

/* ---- answers that need ZooKeeper reads or writes: made on the reader thread ---- */

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
/* The lists' pages (jobs, dead letters): rows by default and at most, and the bytes of each
 * payload shown. */
#define WEB_PAGE_DEFAULT 50
#define WEB_PAGE_MAX 500
#define WEB_PREVIEW_BYTES 120
/* web_params for C's request: 0, or -1 with C's error saying the query is malformed. */
int web_call_params(struct web_call *c, struct evkeyvalq *q);
/* A query parameter's refusal for people: "NAME=VALUE WHY" into ERR (VALUE cut when long);
 * WHY says what is wrong and what NAME takes ("is not a time: from= is ..."). */
void web_bad_param(char *err, size_t len, const char *name, const char *value,
                   const char *why);
/* ?limit=N of a page, 1..MAX (DEF when absent): 0, or -1 with ERR saying why (the value,
 * and the range). */
int web_limit(struct evkeyvalq *q, size_t def, size_t max, size_t *out, char *err,
              size_t len);
/* Sends C to the reader thread; answers 503 itself (and frees C) when too many wait. */
void web_call_start(struct web_call *c, web_work_fn work);
/* In WORK: 1 (with C's error set) when A is NULL. */
int web_call_no_session(struct web_call *c, const void *a, const char *err);
/* The answer to a failed call: 404, 409, 503 with C's error. */
void web_call_fail(struct web_call *c);

/* ---- pages ---- */
/* GET /ui/queues/Q[/dead], /api/v1/queues/Q/jobs|dead (web_queue.c, web_dead.c). */
void web_queue_page(struct web *w, struct evhttp_request *req, const char *queue, int json);
void web_dead_page(struct web *w, struct evhttp_request *req, const char *queue, int json);
/* GET /ui/schedules, /api/v1/schedules (web_schedules.c). */
void web_schedules_page(struct web *w, struct evhttp_request *req, int json);
/* GET /ui/job?id=, /api/v1/job?id= (web_job.c). */
void web_job_page(struct web *w, struct evhttp_request *req, int json);

/* ---- who asks (web_auth.c) ---- */
struct web_who {
    const char *name;           /* the token's name; NULL: none, or a wrong one. Valid for
                                 * the handler's turn of the loop only */
    int by_header;              /* Authorization: Bearer (no form: no CSRF check) */
    char peer[64];              /* address:port */
};
void web_who(struct web *w, struct evhttp_request *req, struct web_who *who);
/* POST /ui/login, /ui/logout: a session of the token (its id as a cookie), or the
 * session ended. */
void web_login(struct web *w, struct evhttp_request *req);
void web_logout(struct web *w, struct evhttp_request *req);
void web_login_form(struct web *w, struct evhttp_request *req, const char *note);
/* A hidden input with the CSRF value of REQ's session, for a form of a page shown to it. */
void web_csrf_input(struct web *w, struct evhttp_request *req, struct evbuffer *out);
/* A form posted by a browser: the csrf field is its session's, and the request comes from
 * a page of this origin (Sec-Fetch-Site, Origin, when the browser sends them). */
int web_csrf_ok(struct web *w, struct evhttp_request *req, struct evkeyvalq *form);
/* Constant time: a secret's length leaks, its bytes do not. */
int web_secret_eq(const char *a, const char *b);
/* DNS rebinding: only requests addressed (Host) to localhost, an IP address, or a name of
 * [web] allowed_hosts are answered; 1 when REQ may be. */
int web_host_ok(struct web *w, struct evhttp_request *req);
/* Sessions end: a reload (the tokens may have changed). */
void web_sessions_clear(struct web *w);

/* ---- actions (web_actions.c): POST ---- */
/* 1 when PATH named an action (answered), else 0. */
int web_action(struct web *w, struct evhttp_request *req, const char *path);
/* The action forms a page offers a token holder (none without actions, or a token). */
int web_can_act(struct web *w, struct evhttp_request *req);

#endif
