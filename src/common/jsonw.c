#include "jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void jsonw_init(struct jsonw *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    w->first[0] = 1;
}

size_t jsonw_utf8_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (len == 0 || s[0] > 0xf4 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

static void put_string(FILE *f, const char *v, size_t n)
{
    const unsigned char *s = (const unsigned char *)v;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t u = c >= 0x80 ? jsonw_utf8_len(s + i, n - i) : 0;
        if (u) {
            fwrite(s + i, 1, u, f);
            i += u;
            continue;
        }
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
        i++;
    }
    fputc('"', f);
}

/* The comma and the key before a value. */
static void prefix(struct jsonw *w, const char *key)
{
    if (!w->first[w->depth])
        fputc(',', w->f);
    w->first[w->depth] = 0;
    if (key) {
        put_string(w->f, key, strlen(key));
        fputc(':', w->f);
    }
}

static void open_level(struct jsonw *w, const char *key, char c)
{
    prefix(w, key);
    fputc(c, w->f);
    if (w->depth + 1 < JSONW_DEPTH_MAX)
        w->depth++;
    w->first[w->depth] = 1;
}

static void close_level(struct jsonw *w, char c)
{
    fputc(c, w->f);
    if (w->depth > 0)
        w->depth--;
}

void jsonw_obj_begin(struct jsonw *w, const char *key) { open_level(w, key, '{'); }
void jsonw_obj_end(struct jsonw *w) { close_level(w, '}'); }
void jsonw_arr_begin(struct jsonw *w, const char *key) { open_level(w, key, '['); }
void jsonw_arr_end(struct jsonw *w) { close_level(w, ']'); }

void jsonw_strn(struct jsonw *w, const char *key, const char *v, size_t n)
{
    prefix(w, key);
    put_string(w->f, v, n);
}

void jsonw_str(struct jsonw *w, const char *key, const char *v)
{
    if (!v) {
        jsonw_null(w, key);
        return;
    }
    jsonw_strn(w, key, v, strlen(v));
}

void jsonw_base64(struct jsonw *w, const char *key, const void *v, size_t n)
{
    static const char abc[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = v;
    prefix(w, key);
    fputc('"', w->f);
    for (size_t i = 0; i < n; i += 3) {
        unsigned b = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? s[i + 2] : 0);
        fputc(abc[b >> 18 & 63], w->f);
        fputc(abc[b >> 12 & 63], w->f);
        fputc(i + 1 < n ? abc[b >> 6 & 63] : '=', w->f);
        fputc(i + 2 < n ? abc[b & 63] : '=', w->f);
    }
    fputc('"', w->f);
}

void jsonw_int(struct jsonw *w, const char *key, int64_t v)
{
    prefix(w, key);
    fprintf(w->f, "%" PRId64, v);
}

void jsonw_uint(struct jsonw *w, const char *key, uint64_t v)
{
    prefix(w, key);
    fprintf(w->f, "%" PRIu64, v);
}

void jsonw_double(struct jsonw *w, const char *key, double v)
{
    prefix(w, key);
    if (isfinite(v))
        fprintf(w->f, "%.17g", v);
    else
        fputs("null", w->f); /* JSON has no NaN or infinity */
}

void jsonw_bool(struct jsonw *w, const char *key, int v)
{
    prefix(w, key);
    fputs(v ? "true" : "false", w->f);
}

void jsonw_null(struct jsonw *w, const char *key)
{
    prefix(w, key);
    fputs("null", w->f);
}

void jsonw_raw(struct jsonw *w, const char *key, const char *text)
{
    prefix(w, key);
    fputs(text, w->f);
}

void jsonw_finish(struct jsonw *w) { fputc('\n', w->f); }
