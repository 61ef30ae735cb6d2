/* The Prometheus endpoint: GET /metrics over HTTP on [metrics] listen, served by evhttp on
 * the daemon's own event loop, so the exposition is written on the loop thread. */
#ifndef DEFERD_METRICS_HTTP_H
#define DEFERD_METRICS_HTTP_H

struct deferd;
struct metrics_http;

/* 0 with *out NULL when [metrics] listen is off; -1 when it cannot listen (logged). */
int metrics_http_new(struct deferd *d, struct metrics_http **out);
void metrics_http_free(struct metrics_http *h);

#endif
