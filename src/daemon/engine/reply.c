#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void reply_ok(struct reply *r, const char *text)
{
    char *line = NULL;
    if (asprintf(&line, text ? "OK %s" : "OK%s", text ? text : "") < 0)
        line = NULL;
    r->complete(r, line);
}

void reply_err(struct reply *r, enum proto_errcode code, const char *fmt, ...)
{
    char text[512], line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    proto_format_error(line, sizeof line, code, text);
    r->complete(r, strdup(line));
}

void reply_err_text(struct reply *r, enum proto_errcode code, const char *text)
{
    size_t n = strlen(text) + 64;
    char *line = malloc(n);
    if (line)
        proto_format_error(line, n, code, text);
    r->complete(r, line);
}
