/* Who asks the dashboard, and may they (web_auth.c): tokens, browsers' sessions, CSRF
 * values, the Host a request is addressed to. */
#ifndef DEFERD_WEB_AUTH_H
#define DEFERD_WEB_AUTH_H

struct evbuffer;
struct evhttp_request;
struct evkeyvalq;
struct web;

struct web_who {
    const char *name;           /* the token's name; NULL: none, or a wrong one. Valid for
                                 * the handler's turn of the loop only */
    int by_header;              /* Authorization: Bearer (no form: no CSRF check) */
    char peer[64];              /* address:port */
};
void web_who(struct web *w, struct evhttp_request *req, struct web_who *who);
/* POST /ui/login, /ui/logout: a session of the token (its id as a cookie), or the
 * session ended. */
void web_login(struct web *w, struct evhttp_request *req);
void web_logout(struct web *w, struct evhttp_request *req);
void web_login_form(struct web *w, struct evhttp_request *req, const char *note);
/* A hidden input with the CSRF value of REQ's session, for a form of a page shown to it. */
void web_csrf_input(struct web *w, struct evhttp_request *req, struct evbuffer *out);
/* A form posted by a browser: the csrf field is its session's, and the request comes from
 * a page of this origin (Sec-Fetch-Site, Origin, when the browser sends them). */
int web_csrf_ok(struct web *w, struct evhttp_request *req, struct evkeyvalq *form);
/* The action forms a page offers a token holder (none without actions, or a token). */
int web_can_act(struct web *w, struct evhttp_request *req);
/* DNS rebinding: only requests addressed (Host) to localhost, an IP address, or a name of
 * [web] allowed_hosts are answered; 1 when REQ may be. */
int web_host_ok(struct web *w, struct evhttp_request *req);
/* Sessions end: a reload (the tokens may have changed). */
void web_sessions_clear(struct web *w);

#endif
