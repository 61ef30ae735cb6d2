/* The dashboard (docs/web.md): HTML pages and their JSON API on the [metrics] listen
 * address, served by the same evhttp on the daemon's loop, when [web] dashboard = on. Pages
 * that read jobs, and the actions ([web] actions = on, with a token), run on a reader
 * thread with a ZooKeeper session of its own (web_worker.h). */
#ifndef DEFERD_WEB_H
#define DEFERD_WEB_H

struct deferd;
struct evhttp_request;
struct web;

#include <stddef.h>

/* OVERRIDES: deferd's -o options, read again with deferd.ini by the dashboard's own
 * ZooKeeper session (web_worker.h); kept by the caller. */
struct web *web_new(struct deferd *d, const char *const *overrides, size_t noverrides);
/* Answers the pages still waiting for ZooKeeper (503) and stops the reader thread: before
 * the HTTP listener is freed, which would free their requests. */
void web_free(struct web *w);
/* deferd.ini was reloaded (tokens, actions). */
void web_reloaded(struct web *w);
/* A metrics_http_other_fn: answers /, /ui/... and /api/... while the dashboard is on
 * (returns 1); else 0, and the caller answers. */
int web_handle(struct evhttp_request *req, void *ctx);

#endif
