#include "metrics_http.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"

#define HTTP_TIMEOUT_S 10

struct metrics_http {
    struct deferd *d;
    struct evhttp *http;
};

static void on_request(struct evhttp_request *req, void *arg)
{
    struct metrics_http *h = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    if (!path || strcmp(path, "/metrics") != 0) {
        evhttp_send_error(req, HTTP_NOTFOUND, "Not Found: the metrics are at /metrics");
        return;
    }
    struct evbuffer *body = evbuffer_new();
    if (!body || metrics_expose(h->d->metrics, body) != 0) {
        log_warn("metrics: cannot build the exposition: out of memory");
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
    } else {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                          "text/plain; version=0.0.4; charset=utf-8");
        evhttp_send_reply(req, HTTP_OK, "OK", body); /* HEAD: evhttp leaves the body out */
    }
    if (body)
        evbuffer_free(body);
}

/* With port 0 the kernel chose one: say which, so that tests and people can find it. */
static void log_bound(const struct config *cfg, struct evhttp_bound_socket *bs)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int port = (int)cfg->metrics_port;
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &len) == 0)
        port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
    int v6 = strchr(cfg->metrics_host, ':') != NULL;
    log_info("metrics: serving http://%s%s%s:%d/metrics", v6 ? "[" : "", cfg->metrics_host,
             v6 ? "]" : "", port);
}

int metrics_http_new(struct deferd *d, struct metrics_http **out)
{
    const struct config *cfg = d->cfg;
    *out = NULL;
    if (!cfg->metrics_host)
        return 0;
    struct metrics_http *h = calloc(1, sizeof *h);
    if (!h || !(h->http = evhttp_new(d->base))) {
        log_error("metrics: out of memory");
        free(h);
        return -1;
    }
    h->d = d;
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_timeout(h->http, HTTP_TIMEOUT_S);
    evhttp_set_max_headers_size(h->http, 8192);
    evhttp_set_max_body_size(h->http, 4096);
    evhttp_set_gencb(h->http, on_request, h);
    struct evhttp_bound_socket *bs =
        evhttp_bind_socket_with_handle(h->http, cfg->metrics_host, (uint16_t)cfg->metrics_port);
    if (!bs) {
        log_error("metrics: cannot listen on %s port %u (in use, or not an address of this "
                  "host?); set [metrics] listen, or off", cfg->metrics_host, cfg->metrics_port);
        metrics_http_free(h);
        return -1;
    }
    log_bound(cfg, bs);
    *out = h;
    return 0;
}

void metrics_http_free(struct metrics_http *h)
{
    if (!h)
        return;
    if (h->http)
        evhttp_free(h->http);
    free(h);
}
