/* The dashboard (docs/web.md): HTML pages and their JSON API on the [metrics] listen
 * address, served by the same evhttp on the daemon's loop, when [web] dashboard = on. Only
 * GET and HEAD for now: every page reads, none changes anything. */
#ifndef DEFERD_WEB_H
#define DEFERD_WEB_H

struct deferd;
struct evhttp_request;
struct web;

struct web *web_new(struct deferd *d);
void web_free(struct web *w);
/* A metrics_http_other_fn: answers /, /ui/... and /api/... while the dashboard is on
 * (returns 1); else 0, and the caller answers. */
int web_handle(struct evhttp_request *req, void *ctx);

#endif
