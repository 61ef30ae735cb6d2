/* HTML for the dashboard's pages (web_html.h). */
#include "web_html.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_time.h"
#include "config.h"
#include "daemon.h"
#include "jsonw.h"
#include "session.h"
#include "units.h"

#ifndef DEFERD_VERSION
#define DEFERD_VERSION "unknown"
#endif

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
    evbuffer_add_printf(out, " · deferd</title><link rel=\"stylesheet\" href=\"" WEB_STATIC_PREFIX
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
    evbuffer_add_printf(out, "</main>\n<script src=\"" WEB_STATIC_PREFIX "app.js\"></script>"
                             "</body></html>\n");
}
