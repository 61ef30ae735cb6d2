/* The dashboard's answers: every reply carries its security headers; errors are a small
 * page, or JSON for the API. */
#ifndef DEFERD_WEB_REPLY_H
#define DEFERD_WEB_REPLY_H

struct evbuffer;
struct evhttp_request;
struct jsonw;

/* Sends BODY (may be NULL) with CTYPE and the dashboard's headers: no framing by other
 * sites, no sniffing, scripts and styles from this origin only; a HEAD gets no body. */
void web_reply(struct evhttp_request *req, int code, const char *reason, const char *ctype,
               struct evbuffer *body);
/* TEXT and a newline as text/plain. */
void web_send_text(struct evhttp_request *req, int code, const char *reason,
                   const char *text);
/* 200 with the HTML of PAGE, never cached. */
void web_send_page(struct evhttp_request *req, struct evbuffer *page);
/* 200 with the JSON object FILL writes (its braces included). */
void web_send_json(struct evhttp_request *req, void (*fill)(struct jsonw *jw, void *ctx),
                   void *ctx);
/* 303 to TO, no body: where a form's POST leads the browser. */
void web_see_other(struct evhttp_request *req, const char *to);
/* An error: a small page, or {"error": TEXT} for the API (JSON). */
void web_fail(struct evhttp_request *req, int json, int code, const char *reason,
              const char *text);

#endif
