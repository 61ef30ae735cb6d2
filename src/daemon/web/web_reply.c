/* The dashboard's answers (web_reply.h). */
#include "web_reply.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>

#include "jsonw.h"
#include "web_html.h"

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

void web_send_text(struct evhttp_request *req, int code, const char *reason,
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
        web_send_text(req, 500, "Internal Server Error", "out of memory");
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
        web_send_text(req, 500, "Internal Server Error", "out of memory");
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

void web_see_other(struct evhttp_request *req, const char *to)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", to);
    web_reply(req, 303, "See Other", "text/plain; charset=utf-8", NULL);
}
