/* A request's parameters (web_params.h). */
#include "web_params.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

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

void web_bad_param(char *err, size_t len, const char *name, const char *value,
                   const char *why)
{
    /* the value told back, cut: a long one would only bury the reason */
    snprintf(err, len, "%s=%.60s%s %s", name, value, strlen(value) > 60 ? "..." : "", why);
}

int web_limit(struct evkeyvalq *q, size_t def, size_t max, size_t *out, char *err,
              size_t len)
{
    const char *limit = evhttp_find_header(q, "limit");
    char *end, why[96];
    *out = def;
    if (!limit)
        return 0;
    errno = 0;
    unsigned long n = strtoul(limit, &end, 10);
    int number = limit[0] >= '0' && limit[0] <= '9' && !*end && errno == 0;
    if (number && n >= 1 && n <= max) {
        *out = n;
        return 0;
    }
    snprintf(why, sizeof why, "is %s: limit= is how many rows a page shows, 1 to %zu",
             number ? "out of range" : "not a number", max);
    web_bad_param(err, len, "limit", limit, why);
    return -1;
}
