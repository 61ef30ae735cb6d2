#include "web.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "daemon.h"
#include "jsonw.h"
#include "log.h"
#include "cluster_time.h"
#include "session.h"
#include "units.h"
#include "web_assets.h"
#include "web_int.h"

#ifndef DEFERD_VERSION
#define DEFERD_VERSION "unknown"
#endif

#define STATIC_PREFIX "/ui/static/"

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

void web_escape_bytes(struct evbuffer *out, const char *s, size_t n)
{
    size_t u;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '&' || ch == '<' || ch == '>' || ch == '"' || ch == '\'')
            evbuffer_add_printf(out, "&#%d;", ch);
        else if (ch == '\\')
            evbuffer_add(out, "\\\\", 2);
        else if (ch >= 0x20 && ch < 0x7f)
            evbuffer_add(out, &s[i], 1);
        else if (ch >= 0x80 && (u = jsonw_utf8_len((const unsigned char *)s + i, n - i)) > 0) {
            evbuffer_add(out, &s[i], u);
            i += u - 1;
        }
        else if (ch == '\n')
            evbuffer_add(out, "\n", 1);
        else
            evbuffer_add_printf(out, "\\x%02x", ch);
    }
}

void web_urlencode(struct evbuffer *out, const char *s)
{
    char *enc = evhttp_encode_uri(s);
    if (enc)
        evbuffer_add(out, enc, strlen(enc));
    free(enc);
}

void web_time(struct evbuffer *out, uint64_t ms)
{
    char buf[40];
    units_format_time((int64_t)ms, buf, sizeof buf);
    evbuffer_add(out, buf, strlen(buf));
}

void web_time_s(struct evbuffer *out, int64_t ms)
{
    char buf[40];
    units_format_time(ms, buf, sizeof buf);
    evbuffer_add_printf(out, "%.19sZ", buf); /* 2026-11-27T17:03:00, the ms left off */
}

void web_page_begin(struct evbuffer *out, struct deferd *d, const char *title)
{
    const char *zk = !d ? "" : d->session ? session_state_name(session_state(d->session))
                                         : "CONNECTING";
    evbuffer_add_printf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                             "<meta name=\"viewport\" content=\"width=device-width, "
                             "initial-scale=1\"><title>");
    web_escape(out, title);
    evbuffer_add_printf(out, " · deferd</title><link rel=\"stylesheet\" href=\"" STATIC_PREFIX
                             "app.css\"></head>\n<body><header><a class=\"brand\" href=\"/ui/\">"
                             "deferd</a><nav><a href=\"/ui/\">Queues</a> <a href=\"/ui/"
                             "schedules\">Schedules</a></nav><span id=\"zk\" class=\"zk-%s\">"
                             "%s%s</span>"
                             "<span class=\"version\">%s</span><span id=\"updated\">", zk,
                        zk[0] ? "ZooKeeper: " : "", zk, DEFERD_VERSION);
    /* the daemon's clock in UTC, as every other time of the pages; app.js keeps it so */
    if (d) {
        evbuffer_add_printf(out, "updated ");
        web_time_s(out, cluster_now_ms());
    }
    evbuffer_add_printf(out, "</span>%s</header>\n<main>",
                        d && d->cfg->web_token_file
                            ? "<a class=\"signin\" href=\"/ui/login\">Sign in</a>" : "");
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

void web_send_page(struct evhttp_request *req, struct evbuffer *page)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
    web_reply(req, 200, "OK", "text/html; charset=utf-8", page);
}

void web_send_json(struct evhttp_request *req, void (*fill)(struct jsonw *jw, void *ctx),
                   void *ctx)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    struct evbuffer *body = evbuffer_new();
    if (mem) {
        struct jsonw jw;
        jsonw_init(&jw, mem);
        fill(&jw, ctx);
        jsonw_finish(&jw);
    }
    if (!mem || fclose(mem) != 0 || !body || evbuffer_add(body, text, len) != 0) {
        send_text(req, 500, "Internal Server Error", "out of memory");
    } else {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
        web_reply(req, 200, "OK", "application/json", body);
    }
    if (body)
        evbuffer_free(body);
    free(text);
}

void web_fail(struct evhttp_request *req, int json, int code, const char *reason,
              const char *text)
{
    struct evbuffer *body = evbuffer_new();
    if (!body) {
        send_text(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    if (json) {
        char *text_json = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text_json, &len);
        if (mem) {
            struct jsonw jw;
            jsonw_init(&jw, mem);
            jsonw_obj_begin(&jw, NULL);
            jsonw_str(&jw, "error", text);
            jsonw_obj_end(&jw);
            jsonw_finish(&jw);
        }
        if (mem && fclose(mem) == 0)
            evbuffer_add(body, text_json, len);
        free(text_json);
        web_reply(req, code, reason, "application/json", body);
    } else {
        char title[64];
        snprintf(title, sizeof title, "%d %s", code, reason);
        web_page_begin(body, NULL, title);
        evbuffer_add_printf(body, "<h1>");
        web_escape(body, title);
        evbuffer_add_printf(body, "</h1>\n<p class=\"error\">");
        web_escape(body, text);
        evbuffer_add_printf(body, "</p>\n<p><a href=\"/ui/\">Queues</a></p>\n");
        web_page_end(body);
        web_reply(req, code, reason, "text/html; charset=utf-8", body);
    }
    evbuffer_free(body);
}

int web_params(struct evhttp_request *req, struct evkeyvalq *q)
{
    TAILQ_INIT(q);
    if (evhttp_request_get_command(req) == EVHTTP_REQ_POST) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(in);
        char *body = malloc(len + 1);
        if (!body)
            return -1;
        evbuffer_copyout(in, body, len);
        body[len] = '\0';
        int rc = strlen(body) == len ? evhttp_parse_query_str(body, q) : -1;
        free(body);
        return rc;
    }
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    return query ? evhttp_parse_query_str(query, q) : 0;
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

/* /ui/queues/NAME[/REST] and /api/v1/queues/NAME/REST: the queue (configured here) and
 * REST ("" or "jobs", "dead"...); 0, or -1 when PATH names no queue of deferd.ini. */
static int queue_path(struct web *w, const char *path, const char *prefix, char *queue,
                      const char **rest)
{
    const char *name = path + strlen(prefix), *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : strlen(name);
    if (n == 0 || n > QUEUE_NAME_MAX)
        return -1;
    memcpy(queue, name, n);
    queue[n] = '\0';
    *rest = slash ? slash + 1 : "";
    return config_queue(w->d->cfg, queue) ? 0 : -1;
}

/* NAME: the path's segment that named no queue (not NUL-terminated), told back. */
static void no_queue(struct evhttp_request *req, int json, const char *name, size_t n)
{
    char text[QUEUE_NAME_MAX + 160];
    snprintf(text, sizeof text, "no queue '%.*s%s' in deferd.ini (the queues are listed at "
             "/ui/)", (int)(n > QUEUE_NAME_MAX ? QUEUE_NAME_MAX : n), name,
             n > QUEUE_NAME_MAX ? "..." : "");
    web_fail(req, json, 404, "Not Found", text);
}

static void route_queue(struct web *w, struct evhttp_request *req, const char *path, int json)
{
    char queue[QUEUE_NAME_MAX + 1];
    const char *rest, *prefix = json ? "/api/v1/queues/" : "/ui/queues/";
    const char *name = path + strlen(prefix);
    if (queue_path(w, path, prefix, queue, &rest) != 0)
        no_queue(req, json, name, strcspn(name, "/"));
    else if (strcmp(rest, json ? "jobs" : "") == 0)
        web_queue_page(w, req, queue, json);
    else if (strcmp(rest, "dead") == 0)
        web_dead_page(w, req, queue, json);
    else
        web_fail(req, json, 404, "Not Found", "no such page of a queue");
}

static void route_get(struct web *w, struct evhttp_request *req, const char *path)
{
    if (strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0)
        redirect(req, "/ui/");
    else if (strcmp(path, "/ui/") == 0)
        send_built(req, w->d, web_overview_html, "text/html; charset=utf-8");
    else if (strcmp(path, "/api/v1/overview") == 0)
        send_built(req, w->d, web_overview_json, "application/json");
    else if (strcmp(path, "/ui/login") == 0)
        web_login_form(w, req, NULL);
    else if (strcmp(path, "/ui/schedules") == 0 || strcmp(path, "/api/v1/schedules") == 0)
        web_schedules_page(w, req, path[1] == 'a');
    else if (strcmp(path, "/ui/job") == 0 || strcmp(path, "/api/v1/job") == 0)
        web_job_page(w, req, path[1] == 'a');
    else if (strncmp(path, "/ui/queues/", 11) == 0)
        route_queue(w, req, path, 0);
    else if (strncmp(path, "/api/v1/queues/", 15) == 0)
        route_queue(w, req, path, 1);
    else
        web_fail(req, strncmp(path, "/api/", 5) == 0, 404, "Not Found",
                 "no such page (the dashboard starts at /ui/)");
}

/* read_token = on: every page but the login form and the static files needs a token. */
static int may_read(struct web *w, struct evhttp_request *req, const char *path)
{
    struct web_who who;
    if (!w->d->cfg->web_read_token || strcmp(path, "/ui/login") == 0 ||
        strncmp(path, STATIC_PREFIX, strlen(STATIC_PREFIX)) == 0)
        return 1;
    web_who(w, req, &who);
    if (who.name)
        return 1;
    if (strncmp(path, "/api/", 5) == 0) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                          "Bearer realm=\"deferd\"");
        web_fail(req, 1, 401, "Unauthorized", "a token is needed ([web] read_token = on): "
                 "send Authorization: Bearer TOKEN");
    } else {
        web_login_form(w, req, "This dashboard needs a token to be read.");
    }
    return 0;
}

int web_handle(struct evhttp_request *req, void *ctx)
{
    struct web *w = ctx;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (!w->d->cfg->web_dashboard || !path || !ours(path))
        return 0;
    int api = strncmp(path, "/api/", 5) == 0;
    if (!web_host_ok(w, req))
        web_fail(req, api, 403, "Forbidden", "this dashboard answers requests addressed "
                 "(Host) to localhost, an IP address, or a name of [web] allowed_hosts only");
    else if (cmd == EVHTTP_REQ_POST && strcmp(path, "/ui/login") == 0)
        web_login(w, req);
    else if (cmd == EVHTTP_REQ_POST && strcmp(path, "/ui/logout") == 0)
        web_logout(w, req);
    else if (cmd == EVHTTP_REQ_POST && web_action(w, req, path))
        ;
    else if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        /* actions are POSTs to their own paths (docs/web.md); pages are read only */
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        web_fail(req, api, 405, "Method Not Allowed", "only GET and HEAD here (actions are "
                 "POSTs to their own paths)");
    } else if (strncmp(path, STATIC_PREFIX, strlen(STATIC_PREFIX)) == 0) {
        send_asset(req, path + strlen(STATIC_PREFIX));
    } else if (may_read(w, req, path)) {
        route_get(w, req, path);
    }
    return 1;
}

/* The reader thread reads deferd.ini as the daemon did (with its -o overrides), and logs
 * through the daemon's log. */
struct web *web_new(struct deferd *d, const char *const *overrides, size_t noverrides)
{
    struct web *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->d = d;
    /* the daemon's [zookeeper] as it runs: a reload keeps it, so the file's may differ */
    w->zookeeper = calloc(1, sizeof *w->zookeeper);
    struct admin_source src = {d->cfg->path, overrides, noverrides, 1, w->zookeeper};
    if (!w->zookeeper || config_copy_zookeeper(w->zookeeper, d->cfg) != 0 ||
        !(w->worker = web_worker_new(d->base, &src, 32))) {
        web_free(w);
        return NULL;
    }
    if (d->cfg->web_dashboard && !d->cfg->metrics_host)
        log_warn("web: [web] dashboard = on, but [metrics] listen is off: no dashboard is "
                 "served (set listen to serve it)");
    return w;
}

void web_reloaded(struct web *w)
{
    if (!w)
        return;
    web_worker_reload(w->worker);
    web_sessions_clear(w); /* signed in with tokens that may be gone */
}

void web_free(struct web *w)
{
    if (!w)
        return;
    web_worker_free(w->worker);
    if (w->zookeeper)
        config_free(w->zookeeper);
    free(w->zookeeper);
    free(w);
}
