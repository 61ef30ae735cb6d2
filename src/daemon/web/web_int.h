/* What the dashboard's pages share: replies with the security headers, HTML escaping,
 * the page frame. Private to src/daemon/web. */
#ifndef DEFERD_WEB_INT_H
#define DEFERD_WEB_INT_H

struct deferd;
struct evbuffer;
struct evhttp_request;

/* Sends BODY (may be NULL) with CTYPE and the dashboard's headers: no framing by other
 * sites, no sniffing, scripts and styles from this origin only; a HEAD gets no body. */
void web_reply(struct evhttp_request *req, int code, const char *reason, const char *ctype,
               struct evbuffer *body);
/* S with & < > " ' as entities: safe in text and in quoted attributes. */
void web_escape(struct evbuffer *out, const char *s);
void web_page_begin(struct evbuffer *out, struct deferd *d, const char *title);
void web_page_end(struct evbuffer *out);

/* The overview: every queue's depth (all daemons') and this daemon's view of it. */
int web_overview_html(struct deferd *d, struct evbuffer *out);
int web_overview_json(struct deferd *d, struct evbuffer *out);

#endif
