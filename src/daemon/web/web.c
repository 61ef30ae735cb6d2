/* The dashboard's router: its state made and freed, and each request sent to the page,
 * action or sign-in that answers it. It calls down into them; none calls back up here. */
#include "web.h"

#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "daemon.h"
#include "log.h"
#include "web_actions.h"
#include "web_auth.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_reply.h"
#include "web_state.h"
#include "web_worker.h"

static void redirect(struct evhttp_request *req, const char *to)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", to);
    web_send_text(req, 302, "Found", to);
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
        web_overview_page(w, req, 0);
    else if (strcmp(path, "/api/v1/overview") == 0)
        web_overview_page(w, req, 1);
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
        strncmp(path, WEB_STATIC_PREFIX, strlen(WEB_STATIC_PREFIX)) == 0)
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
    } else if (strncmp(path, WEB_STATIC_PREFIX, strlen(WEB_STATIC_PREFIX)) == 0) {
        web_static_page(req, path + strlen(WEB_STATIC_PREFIX));
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
