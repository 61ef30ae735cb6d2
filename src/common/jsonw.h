/* A small streaming JSON writer for deferctl's --json output: nesting and commas are
 * tracked here so that callers cannot produce invalid JSON by forgetting one. */
#ifndef DEFERD_JSONW_H
#define DEFERD_JSONW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSONW_DEPTH_MAX 16

struct jsonw {
    FILE *f;
    int depth;
    unsigned char first[JSONW_DEPTH_MAX]; /* nothing written yet at this level */
};

void jsonw_init(struct jsonw *w, FILE *f);
/* Length of the UTF-8 sequence starting at S (at most N bytes), or 0 if it is not one. */
size_t jsonw_utf8_len(const unsigned char *s, size_t n);
/* KEY names the value inside an object; pass NULL inside arrays and at the top. */
void jsonw_obj_begin(struct jsonw *w, const char *key);
void jsonw_obj_end(struct jsonw *w);
void jsonw_arr_begin(struct jsonw *w, const char *key);
void jsonw_arr_end(struct jsonw *w);
void jsonw_str(struct jsonw *w, const char *key, const char *v); /* NULL -> null */
/* N bytes of anything: valid UTF-8 stays as it is, other bytes become \u00XX. */
void jsonw_strn(struct jsonw *w, const char *key, const char *v, size_t n);
/* N bytes as base64 (RFC 4648, padded): exact for any payload. */
void jsonw_base64(struct jsonw *w, const char *key, const void *v, size_t n);
void jsonw_int(struct jsonw *w, const char *key, int64_t v);
void jsonw_uint(struct jsonw *w, const char *key, uint64_t v);
void jsonw_double(struct jsonw *w, const char *key, double v);
void jsonw_bool(struct jsonw *w, const char *key, int v);
void jsonw_null(struct jsonw *w, const char *key);
/* TEXT as it is: for numbers the caller has checked to be valid JSON. */
void jsonw_raw(struct jsonw *w, const char *key, const char *text);
/* Ends the document with a newline. */
void jsonw_finish(struct jsonw *w);

#endif
