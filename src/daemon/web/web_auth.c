/* Who asks the dashboard: a token of [web] token_file, sent as "Authorization: Bearer
 * TOKEN" (scripts, the API) or as the cookie the login form sets (a browser). Forms also
 * carry this run's CSRF value, which another site's page cannot read, so that a browser
 * holding the cookie cannot be made to act by a page it visits. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "web_int.h"

#define COOKIE "deferd_token"

int web_secret_eq(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;
    for (size_t i = 0; i < la && i < lb; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

static const char *token_name(const struct config *cfg, const char *secret)
{
    const char *name = NULL;
    for (size_t i = 0; i < cfg->web_ntokens; i++) /* every one: no early exit to time */
        if (web_secret_eq(cfg->web_tokens[i].secret, secret))
            name = cfg->web_tokens[i].name;
    return name;
}

/* The cookie's value in a Cookie header ("a=1; deferd_token=X; b=2") into OUT. */
static int cookie_value(const char *header, char *out, size_t len)
{
    for (const char *p = header; p && *p;) {
        p += strspn(p, " ;");
        size_t n = strcspn(p, ";");
        if (n > strlen(COOKIE) && strncmp(p, COOKIE "=", strlen(COOKIE) + 1) == 0) {
            size_t v = n - strlen(COOKIE) - 1;
            if (v >= len)
                return -1;
            memcpy(out, p + strlen(COOKIE) + 1, v);
            out[v] = '\0';
            return 0;
        }
        p += n;
    }
    return -1;
}

static void peer_of(struct evhttp_request *req, char *out, size_t len)
{
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    char *addr = NULL;
    ev_uint16_t port = 0;
    if (conn)
        evhttp_connection_get_peer(conn, &addr, &port);
    snprintf(out, len, "%s:%u", addr ? addr : "?", (unsigned)port);
}

void web_who(struct web *w, struct evhttp_request *req, struct web_who *who)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *auth = evhttp_find_header(in, "Authorization");
    const char *cookie = evhttp_find_header(in, "Cookie");
    char secret[WEB_TOKEN_MAX + 2];
    memset(who, 0, sizeof *who);
    peer_of(req, who->peer, sizeof who->peer);
    if (auth && strncmp(auth, "Bearer ", 7) == 0 && strlen(auth + 7) <= WEB_TOKEN_MAX) {
        who->by_header = 1;
        who->name = token_name(w->d->cfg, auth + 7);
    } else if (cookie && cookie_value(cookie, secret, sizeof secret) == 0) {
        who->name = token_name(w->d->cfg, secret);
    }
    memset(secret, 0, sizeof secret);
}

int web_can_act(struct web *w, struct evhttp_request *req)
{
    struct web_who who;
    if (!w->d->cfg->web_actions)
        return 0;
    web_who(w, req, &who);
    return who.name != NULL;
}

void web_csrf_input(struct web *w, struct evbuffer *out)
{
    evbuffer_add_printf(out, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">", w->csrf);
}

int web_csrf_ok(struct web *w, struct evkeyvalq *form)
{
    const char *v = evhttp_find_header(form, "csrf");
    return v && web_secret_eq(v, w->csrf);
}

void web_login_form(struct web *w, struct evhttp_request *req, const char *note)
{
    struct evbuffer *page = evbuffer_new();
    if (!page) {
        web_fail(req, 0, 500, "Internal Server Error", "out of memory");
        return;
    }
    web_page_begin(page, w->d, "Sign in");
    evbuffer_add_printf(page, "<h1>Sign in</h1>\n");
    if (note) {
        evbuffer_add_printf(page, "<p class=\"error\">");
        web_escape(page, note);
        evbuffer_add_printf(page, "</p>\n");
    }
    if (!w->d->cfg->web_token_file)
        evbuffer_add_printf(page, "<p>This daemon has no [web] token_file: there is nothing "
                                  "to sign in to.</p>\n");
    evbuffer_add_printf(page, "<form method=\"post\" action=\"/ui/login\" class=\"login\">"
                              "<label>Token <input type=\"password\" name=\"token\" "
                              "autocomplete=\"current-password\" required></label>");
    web_csrf_input(w, page);
    evbuffer_add_printf(page, "<button type=\"submit\">Sign in</button></form>\n<p class=\""
                              "note\">A token of [web] token_file; it is kept as a cookie for "
                              "this site only until the browser closes.</p>\n");
    web_page_end(page);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
    web_reply(req, note ? 401 : 200, note ? "Unauthorized" : "OK", "text/html; charset=utf-8",
              page);
    evbuffer_free(page);
}

static void see_other(struct evhttp_request *req, const char *to)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", to);
    web_reply(req, 303, "See Other", "text/plain; charset=utf-8", NULL);
}

void web_login(struct web *w, struct evhttp_request *req)
{
    struct evkeyvalq form;
    char peer[64];
    peer_of(req, peer, sizeof peer);
    const char *token = web_params(req, &form) == 0 ? evhttp_find_header(&form, "token") : NULL;
    const char *name = token && web_csrf_ok(w, &form) && strlen(token) <= WEB_TOKEN_MAX
                           ? token_name(w->d->cfg, token) : NULL;
    if (!name) {
        log_warn("web: sign-in refused from %s: %s", peer,
                 !token ? "no token" : !web_csrf_ok(w, &form) ? "wrong or missing CSRF value"
                                                              : "unknown token");
        metrics_web_action(w->d->metrics, WA_LOGIN, WR_REFUSED);
        web_login_form(w, req, "That token is not in [web] token_file.");
    } else {
        char cookie[WEB_TOKEN_MAX + 96];
        snprintf(cookie, sizeof cookie, COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict", token);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Set-Cookie", cookie);
        memset(cookie, 0, sizeof cookie);
        log_info("web: %s signed in from %s", name, peer);
        metrics_web_action(w->d->metrics, WA_LOGIN, WR_OK);
        see_other(req, "/ui/");
    }
    evhttp_clear_headers(&form);
}

void web_logout(struct web *w, struct evhttp_request *req)
{
    (void)w;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Set-Cookie",
                      COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    see_other(req, "/ui/");
}
