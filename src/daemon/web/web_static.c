/* The dashboard's static files (app.css, app.js), built into the binary (embed.cmake). */
#include <event2/buffer.h>
#include <event2/http.h>
#include <string.h>

#include "web_assets.h"
#include "web_pages.h"
#include "web_reply.h"

static const char *asset_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && strcmp(dot, ".css") == 0  ? "text/css; charset=utf-8"
           : dot && strcmp(dot, ".js") == 0 ? "text/javascript; charset=utf-8"
                                            : "application/octet-stream";
}

/* Only names in the embedded table: no path is ever opened, so none can escape. */
void web_static_page(struct evhttp_request *req, const char *name)
{
    for (const struct web_asset *a = web_assets; a->name; a++) {
        if (strcmp(a->name, name) != 0)
            continue;
        struct evbuffer *body = evbuffer_new();
        if (!body) {
            web_send_text(req, 500, "Internal Server Error", "out of memory");
            return;
        }
        evbuffer_add_reference(body, a->data, a->len, NULL, NULL);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control",
                          "max-age=300");
        web_reply(req, 200, "OK", asset_type(a->name), body);
        evbuffer_free(body);
        return;
    }
    web_send_text(req, 404, "Not Found", "no such file");
}
