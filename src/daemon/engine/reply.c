#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void reply_ok(struct reply *r, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    char *line = malloc(n + 4); /* "OK", ' ', the text, NUL: once a put, so no asprintf */
    if (line) {
        memcpy(line, "OK ", 3);
        if (text)
            memcpy(line + 3, text, n + 1);
        else
            line[2] = '\0';
    }
    r->complete(r, line);
}

void reply_refuse_text(struct reply *r, enum proto_errcode code, const struct refusal *f,
                       const char *text)
{
    size_t n = strlen(text) + 64 + PROTO_FIELDS_MAX;
    char *line = malloc(n);
    if (line)
        proto_format_refusal(line, n, code, f, text);
    r->complete(r, line);
}

static void reply_verr(struct reply *r, enum proto_errcode code, const struct refusal *f,
                       const char *fmt, va_list ap)
{
    char text[512];
    vsnprintf(text, sizeof text, fmt, ap);
    reply_refuse_text(r, code, f, text);
}

void reply_refuse(struct reply *r, enum proto_errcode code, const struct refusal *f,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_verr(r, code, f, fmt, ap);
    va_end(ap);
}

void reply_err(struct reply *r, enum proto_errcode code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_verr(r, code, NULL, fmt, ap);
    va_end(ap);
}

void reply_err_text(struct reply *r, enum proto_errcode code, const char *text)
{
    reply_refuse_text(r, code, NULL, text);
}
