#include "web.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "session.h"
#include "web_assets.h"
#include "web_int.h"

#ifndef DEFERD_VERSION
#define DEFERD_VERSION "unknown"
#endif

#define STATIC_PREFIX "/ui/static/"

struct web {
    struct deferd *d;
};

void web_reply(struct evhttp_request *req, int code, const char *reason, const char *ctype,
               struct evbuffer *body)
{
    struct evkeyvalq *hdr = evhttp_request_get_output_headers(req);
    evhttp_add_header(hdr, "Content-Type", ctype);
    evhttp_add_header(hdr, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(hdr, "X-Frame-Options", "DENY");
    evhttp_add_header(hdr, "Referrer-Policy", "no-referrer");
    evhttp_add_header(hdr, "Content-Security-Policy",
                      "default-src 'none'; script-src 'self'; style-src 'self'; "
                      "connect-src 'self'; img-src 'self'; frame-ancestors 'none'; "
                      "base-uri 'none'; form-action 'self'");
    int head = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD;
    evhttp_send_reply(req, code, reason, head ? NULL : body);
}

void web_escape(struct evbuffer *out, const char *s)
{
    for (; *s; s++) {
        size_t n = strcspn(s, "&<>\"'");
        evbuffer_add(out, s, n);
        s += n;
        if (!*s)
            break;
        evbuffer_add_printf(out, "&#%d;", (unsigned char)*s);
    }
}

void web_page_begin(struct evbuffer *out, struct deferd *d, const char *title)
{
    const char *zk = d->session ? session_state_name(session_state(d->session)) : "CONNECTING";
    evbuffer_add_printf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                             "<meta name=\"viewport\" content=\"width=device-width, "
                             "initial-scale=1\"><title>");
    web_escape(out, title);
    evbuffer_add_printf(out, " · deferd</title><link rel=\"stylesheet\" href=\"" STATIC_PREFIX
                             "app.css\"></head>\n<body><header><a class=\"brand\" href=\"/ui/\">"
                             "deferd</a><span id=\"zk\" class=\"zk-%s\">ZooKeeper: %s</span>"
                             "<span class=\"version\">%s</span><span id=\"updated\"></span>"
                             "</header>\n<main>", zk, zk, DEFERD_VERSION);
}

void web_page_end(struct evbuffer *out)
{
    evbuffer_add_printf(out, "</main>\n<script src=\"" STATIC_PREFIX "app.js\"></script>"
                             "</body></html>\n");
}

static void send_text(struct evhttp_request *req, int code, const char *reason,
                      const char *text)
{
    struct evbuffer *body = evbuffer_new();
    if (body)
        evbuffer_add_printf(body, "%s\n", text);
    web_reply(req, code, reason, "text/plain; charset=utf-8", body);
    if (body)
        evbuffer_free(body);
}

static void redirect(struct evhttp_request *req, const char *to)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", to);
    send_text(req, 302, "Found", to);
}

static const char *asset_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && strcmp(dot, ".css") == 0  ? "text/css; charset=utf-8"
           : dot && strcmp(dot, ".js") == 0 ? "text/javascript; charset=utf-8"
                                            : "application/octet-stream";
}

/* Only names in the embedded table: no path is ever opened, so none can escape. */
static void send_asset(struct evhttp_request *req, const char *name)
{
    for (const struct web_asset *a = web_assets; a->name; a++) {
        if (strcmp(a->name, name) != 0)
            continue;
        struct evbuffer *body = evbuffer_new();
        if (!body) {
            send_text(req, 500, "Internal Server Error", "out of memory");
            return;
        }
        evbuffer_add_reference(body, a->data, a->len, NULL, NULL);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control",
                          "max-age=300");
        web_reply(req, 200, "OK", asset_type(a->name), body);
        evbuffer_free(body);
        return;
    }
    send_text(req, 404, "Not Found", "no such file");
}

/* A page or document built into a buffer by BUILD, sent as CTYPE. */
static void send_built(struct evhttp_request *req, struct deferd *d,
                       int (*build)(struct deferd *, struct evbuffer *), const char *ctype)
{
    struct evbuffer *body = evbuffer_new();
    if (!body || build(d, body) != 0) {
        log_warn("web: %s: cannot build the answer: out of memory",
                 evhttp_request_get_uri(req));
        send_text(req, 500, "Internal Server Error", "out of memory");
    } else {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
        web_reply(req, 200, "OK", ctype, body);
    }
    if (body)
        evbuffer_free(body);
}

static int ours(const char *path)
{
    return strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0 || strncmp(path, "/ui/", 4) == 0 ||
           strncmp(path, "/api/", 5) == 0;
}

int web_handle(struct evhttp_request *req, void *ctx)
{
    struct web *w = ctx;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (!w->d->cfg->web_dashboard || !path || !ours(path))
        return 0;
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        send_text(req, 405, "Method Not Allowed", "only GET and HEAD");
    } else if (strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0) {
        redirect(req, "/ui/");
    } else if (strcmp(path, "/ui/") == 0) {
        send_built(req, w->d, web_overview_html, "text/html; charset=utf-8");
    } else if (strncmp(path, STATIC_PREFIX, strlen(STATIC_PREFIX)) == 0) {
        send_asset(req, path + strlen(STATIC_PREFIX));
    } else if (strcmp(path, "/api/v1/overview") == 0) {
        send_built(req, w->d, web_overview_json, "application/json");
    } else {
        send_text(req, 404, "Not Found", "no such page (the dashboard starts at /ui/)");
    }
    return 1;
}

struct web *web_new(struct deferd *d)
{
    struct web *w = calloc(1, sizeof *w);
    if (w)
        w->d = d;
    if (d->cfg->web_dashboard && !d->cfg->metrics_host)
        log_warn("web: [web] dashboard = on, but [metrics] listen is off: no dashboard is "
                 "served (set listen to serve it)");
    return w;
}

void web_free(struct web *w) { free(w); }
