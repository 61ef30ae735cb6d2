/* The Prometheus endpoint: GET /metrics over HTTP on [metrics] listen, served by evhttp on
 * the daemon's own event loop, so the exposition is written on the loop thread. */
#ifndef DEFERD_METRICS_HTTP_H
#define DEFERD_METRICS_HTTP_H

struct deferd;
struct evhttp_request;
struct metrics_http;

/* A handler for paths other than /metrics (the dashboard, web.h): it answers REQ and
 * returns 1, or returns 0 and /metrics' listener answers 404. Any method reaches it. */
typedef int (*metrics_http_other_fn)(struct evhttp_request *req, void *ctx);

/* 0 with *out NULL when [metrics] listen is off; -1 when it cannot listen (logged). */
int metrics_http_new(struct deferd *d, struct metrics_http **out);
/* Paths other than /metrics go to FN from now on. */
void metrics_http_set_other(struct metrics_http *h, metrics_http_other_fn fn, void *ctx);
void metrics_http_free(struct metrics_http *h);

#endif
