#include "metrics_http.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "metrics_expose.h"

#define HTTP_TIMEOUT_S 10

struct metrics_http {
    struct deferd *d;
    struct evhttp *http;
    metrics_http_other_fn other;
    void *other_ctx;
};

static void on_request(struct evhttp_request *req, void *arg)
{
    struct metrics_http *h = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if ((!path || strcmp(path, "/metrics") != 0) && h->other && h->other(req, h->other_ctx))
        return;
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        struct evbuffer *text = evbuffer_new();
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        if (text) /* evhttp_send_error would drop the Allow header */
            evbuffer_add_printf(text, "only GET and HEAD\n");
        evhttp_send_reply(req, 405, "Method Not Allowed", text);
        if (text)
            evbuffer_free(text);
        return;
    }
    if (!path || strcmp(path, "/metrics") != 0) {
        evhttp_send_error(req, HTTP_NOTFOUND, "Not Found: the metrics are at /metrics");
        return;
    }
    struct evbuffer *body = evbuffer_new();
    if (!body || metrics_expose(h->d->metrics, body) != 0) {
        log_warn("metrics: cannot build the exposition: out of memory");
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
    } else {
        struct evkeyvalq *hdr = evhttp_request_get_output_headers(req);
        char len[32];
        snprintf(len, sizeof len, "%zu", evbuffer_get_length(body));
        evhttp_add_header(hdr, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        evhttp_add_header(hdr, "Content-Length", len);
        /* evhttp would send a HEAD answer's body to an HTTP/1.0 client: leave it out here */
        evhttp_send_reply(req, HTTP_OK, "OK", cmd == EVHTTP_REQ_HEAD ? NULL : body);
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
    /* Others are answered 405 in on_request; methods evhttp does not know get its 501. */
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
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

void metrics_http_set_other(struct metrics_http *h, metrics_http_other_fn fn, void *ctx)
{
    if (!h)
        return;
    h->other = fn;
    h->other_ctx = ctx;
}

void metrics_http_free(struct metrics_http *h)
{
    if (!h)
        return;
    if (h->http)
        evhttp_free(h->http);
    free(h);
}
