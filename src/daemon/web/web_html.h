/* HTML for the dashboard's pages: escaping, the page frame every page shares, times as
 * people read them. Writes into a buffer; answers nothing (web_reply.h sends). */
#ifndef DEFERD_WEB_HTML_H
#define DEFERD_WEB_HTML_H

#include <stddef.h>
#include <stdint.h>

struct deferd;
struct evbuffer;

/* Where the embedded static files (app.css, app.js) are served. */
#define WEB_STATIC_PREFIX "/ui/static/"

/* S with & < > " ' as entities: safe in text and in quoted attributes. */
void web_escape(struct evbuffer *out, const char *s);
/* N bytes of S the same way, bytes that are not printable ASCII as \xNN. */
void web_escape_bytes(struct evbuffer *out, const char *s, size_t n);
/* S %-encoded for a query value. */
void web_urlencode(struct evbuffer *out, const char *s);
/* The page's head and header bar (D NULL: no daemon state, as on an error page). */
void web_page_begin(struct evbuffer *out, struct deferd *d, const char *title);
void web_page_end(struct evbuffer *out);
/* A wall time in ms as 2026-11-27T17:03:00.123Z. */
void web_time(struct evbuffer *out, uint64_t ms);
/* The same to the second, 2026-11-27T17:03:00Z: a clock's reading for people. */
void web_time_s(struct evbuffer *out, int64_t ms);

#endif
