/* Who asks the dashboard: a token of [web] token_file, sent as "Authorization: Bearer
 * TOKEN" (scripts, the API), or a browser's session begun by signing in with one. The
 * cookie holds the session's random id, never the token: browsers send a host's cookies
 * to every port of it, and a session ends at sign-out, at a reload and after 12 hours.
 * Forms also carry the session's CSRF value, which another site's page cannot read, and
 * must come from a page of this origin, so that a browser holding the cookie cannot be
 * made to act by a page it visits. */
#include "web_auth.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "units.h"
#include "web_html.h"
#include "web_params.h"
#include "web_reply.h"
#include "web_state.h"

#define COOKIE "deferd_session"
#define SESSION_TTL_MS (12 * 3600 * 1000LL)

/* Constant time: a secret's length leaks, its bytes do not. */
static int secret_eq(const char *a, const char *b)
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
        if (secret_eq(cfg->web_tokens[i].secret, secret))
            name = cfg->web_tokens[i].name;
    return name;
}

/* ---- sessions ---- */

static int random_hex(char out[33])
{
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return -1;
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(out + 2 * i, 3, "%02x", rnd[i]);
    return 0;
}

static void drop_session(struct web *w, size_t i)
{
    w->sessions[i] = w->sessions[--w->nsessions];
    memset(&w->sessions[w->nsessions], 0, sizeof w->sessions[0]);
}

/* The session whose id the cookie of REQ holds, or NULL (none, unknown, expired). */
static struct web_session *session_of(struct web *w, struct evhttp_request *req)
{
    const char *cookie = evhttp_find_header(evhttp_request_get_input_headers(req), "Cookie");
    char id[40] = "";
    for (const char *p = cookie; p && *p;) { /* "a=1; deferd_session=ID; b=2" */
        p += strspn(p, " ;");
        size_t n = strcspn(p, ";");
        if (n > strlen(COOKIE) + 1 && n - strlen(COOKIE) - 1 < sizeof id &&
            strncmp(p, COOKIE "=", strlen(COOKIE) + 1) == 0)
            snprintf(id, sizeof id, "%.*s", (int)(n - strlen(COOKIE) - 1),
                     p + strlen(COOKIE) + 1);
        p += n;
    }
    struct web_session *found = NULL;
    int64_t now = units_mono_ms();
    for (size_t i = 0; id[0] && i < w->nsessions; i++) {
        if (w->sessions[i].expires_ms <= now)
            drop_session(w, i--);
        else if (secret_eq(w->sessions[i].id, id))
            found = &w->sessions[i];
    }
    return found;
}

#define SESSIONS_A_TOKEN 32

/* A token's sessions are at most SESSIONS_A_TOKEN: its oldest makes room for its next, so
 * that one token holder cannot end everyone else's sessions. */
static struct web_session *session_new(struct web *w, const char *name)
{
    size_t mine = 0, oldest = WEB_SESSIONS_MAX;
    for (size_t i = 0; i < w->nsessions; i++)
        if (strcmp(w->sessions[i].name, name) == 0 && ++mine &&
            (oldest == WEB_SESSIONS_MAX ||
             w->sessions[i].expires_ms < w->sessions[oldest].expires_ms))
            oldest = i;
    if (mine >= SESSIONS_A_TOKEN)
        drop_session(w, oldest);
    else if (w->nsessions == WEB_SESSIONS_MAX)
        return NULL;
    struct web_session *s = &w->sessions[w->nsessions];
    if (random_hex(s->id) != 0 || random_hex(s->csrf) != 0)
        return NULL;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->expires_ms = units_mono_ms() + SESSION_TTL_MS;
    w->nsessions++;
    return s;
}

void web_sessions_clear(struct web *w)
{
    memset(w->sessions, 0, sizeof w->sessions);
    w->nsessions = 0;
}

/* ---- who ---- */

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
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req),
                                          "Authorization");
    memset(who, 0, sizeof *who);
    peer_of(req, who->peer, sizeof who->peer);
    if (auth && strncmp(auth, "Bearer ", 7) == 0 && strlen(auth + 7) <= WEB_TOKEN_MAX) {
        who->by_header = 1;
        who->name = token_name(w->d->cfg, auth + 7);
    } else {
        struct web_session *s = session_of(w, req);
        who->name = s ? s->name : NULL;
    }
}

int web_can_act(struct web *w, struct evhttp_request *req)
{
    struct web_who who;
    if (!w->d->cfg->web_actions)
        return 0;
    web_who(w, req, &who);
    return who.name != NULL;
}

/* ---- where from: this origin, this host ---- */

/* The browser says where a POST comes from: Sec-Fetch-Site (a page of another port of
 * this host is "same-site", not "same-origin"), or Origin. Absent both (not a browser, or
 * an old one): the CSRF value alone decides. */
static int same_origin(struct evhttp_request *req)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *site = evhttp_find_header(in, "Sec-Fetch-Site");
    const char *origin = evhttp_find_header(in, "Origin"), *host = evhttp_find_header(in, "Host");
    if (site)
        return strcmp(site, "same-origin") == 0;
    if (!origin)
        return 1;
    return host && strncmp(origin, "http://", 7) == 0 && strcmp(origin + 7, host) == 0;
}

/* HOST's name part (N bytes): an IP literal (v4 dotted, or v6 in brackets) or localhost,
 * which no one else's DNS name can be. */
static int literal_or_local(const char *host, size_t n)
{
    if (n == 9 && strncasecmp(host, "localhost", 9) == 0)
        return 1;
    if (n > 2 && host[0] == '[' && host[n - 1] == ']')
        return strspn(host + 1, "0123456789abcdefABCDEF:.") == n - 2;
    return n > 0 && strspn(host, "0123456789.") == n;
}

/* One of [web] allowed_hosts (comma-separated names), in any case. */
static int allowed(const char *list, const char *host, size_t n)
{
    for (const char *p = list; p && *p;) {
        p += strspn(p, " ,");
        size_t len = strcspn(p, " ,");
        if (len == n && len > 0 && strncasecmp(p, host, n) == 0)
            return 1;
        p += len;
    }
    return 0;
}

int web_host_ok(struct web *w, struct evhttp_request *req)
{
    const char *host = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
    if (!host)
        return 1; /* HTTP/1.0 without Host: not a browser that a DNS name could lead here */
    size_t n = host[0] == '[' ? strcspn(host, "]") + 1 : strcspn(host, ":");
    if (n > strlen(host))
        return 0;
    return literal_or_local(host, n) || allowed(w->d->cfg->web_allowed_hosts, host, n);
}

void web_csrf_input(struct web *w, struct evhttp_request *req, struct evbuffer *out)
{
    struct web_session *s = session_of(w, req);
    evbuffer_add_printf(out, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">",
                        s ? s->csrf : "");
}

int web_csrf_ok(struct web *w, struct evhttp_request *req, struct evkeyvalq *form)
{
    struct web_session *s = session_of(w, req);
    const char *v = evhttp_find_header(form, "csrf");
    return s && v && secret_eq(v, s->csrf) && same_origin(req);
}

/* ---- sign-in ---- */

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
                              "autocomplete=\"current-password\" required></label>"
                              "<button type=\"submit\">Sign in</button></form>\n<p class=\""
                              "note\">A token of [web] token_file. Signing in starts a session "
                              "of this browser (a cookie with its random id, never the token) "
                              "that ends at sign-out, when deferd is reloaded or restarted, "
                              "or after 12 hours.</p>\n");
    web_page_end(page);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
    web_reply(req, note ? 401 : 200, note ? "Unauthorized" : "OK", "text/html; charset=utf-8",
              page);
    evbuffer_free(page);
}

static void set_cookie(struct evhttp_request *req, const char *value, const char *extra)
{
    char cookie[128];
    snprintf(cookie, sizeof cookie, COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict%s", value,
             extra);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Set-Cookie", cookie);
}

/* A browser's sign-in form says where it was posted from; anything that does not (an old
 * browser, a script: scripts send Authorization instead) cannot sign in. */
static int posted_here(struct evhttp_request *req)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    return (evhttp_find_header(in, "Sec-Fetch-Site") || evhttp_find_header(in, "Origin")) &&
           same_origin(req);
}

void web_login(struct web *w, struct evhttp_request *req)
{
    struct evkeyvalq form;
    char peer[64];
    peer_of(req, peer, sizeof peer);
    const char *token = web_params(req, &form) == 0 ? evhttp_find_header(&form, "token") : NULL;
    const char *name = token && strlen(token) <= WEB_TOKEN_MAX
                           ? token_name(w->d->cfg, token) : NULL;
    const char *why = !posted_here(req) ? "not posted by this dashboard's own sign-in form"
                      : !token          ? "no token"
                      : !name           ? "a token that is not in [web] token_file"
                                        : NULL;
    struct web_session *old = session_of(w, req);
    if (!why && old) /* a new session, never the one the browser came with */
        drop_session(w, (size_t)(old - w->sessions));
    struct web_session *s = why ? NULL : session_new(w, name);
    if (!why && !s)
        why = "too many sessions (256 at most, 32 a token)";
    if (why) {
        log_warn("web: sign-in refused from %s: %s", peer, why);
        metrics_web_action(w->d->metrics, WA_LOGIN, WR_REFUSED);
        web_login_form(w, req, why);
    } else {
        set_cookie(req, s->id, "");
        log_info("web: %s signed in from %s", name, peer);
        metrics_web_action(w->d->metrics, WA_LOGIN, WR_OK);
        web_see_other(req, "/ui/");
    }
    evhttp_clear_headers(&form);
}

void web_logout(struct web *w, struct evhttp_request *req)
{
    struct web_session *s = posted_here(req) ? session_of(w, req) : NULL;
    if (s)
        drop_session(w, (size_t)(s - w->sessions));
    set_cookie(req, "", "; Max-Age=0");
    web_see_other(req, "/ui/");
}
