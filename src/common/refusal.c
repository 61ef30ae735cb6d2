#include "refusal.h"

#include <stdio.h>
#include <string.h>

static const char *const reasons[] = {
    [RR_NONE] = "",
    [RR_DRAINING] = "draining",
    [RR_MAX_CONNECTIONS] = "max_connections",
    [RR_NOT_CONNECTED] = "not_connected",
    [RR_CLOCK_UNREAD] = "clock_unread",
    [RR_NO_SESSION] = "no_session",
    [RR_HOLD_EXPIRED] = "hold_expired",
    [RR_OUT_OF_MEMORY] = "out_of_memory",
    [RR_PERMISSION] = "permission",
    [RR_CONNECTION_LOST] = "connection_lost",
    [RR_ZOOKEEPER] = "zookeeper",
    [RR_OTHER] = "",
};

static const char *const stored_words[] = {
    [RS_UNSAID] = "", [RS_NO] = "no", [RS_MAYBE] = "maybe", [RS_YES] = "yes", [RS_COUNT] = "",
};

const char *refusal_reason_name(enum refusal_reason reason)
{
    return (size_t)reason < sizeof reasons / sizeof *reasons ? reasons[reason] : "";
}

/* A key: [a-z_]+ */
static int key_char(char ch) { return (ch >= 'a' && ch <= 'z') || ch == '_'; }

/* A value: [A-Za-z0-9_.,-]+ */
static int value_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("_.,-", ch));
}

static int valid_value(const char *s)
{
    size_t n = 0;
    while (value_char(s[n]))
        n++;
    return n > 0 && s[n] == '\0';
}

/* Appends "KEY=VALUE " at *AT; -1 when it does not fit. */
static int put_field(char *buf, size_t len, size_t *at, const char *key, const char *value)
{
    int n = snprintf(buf + *at, len - *at, "%s=%s ", key, value);
    if (n < 0 || (size_t)n >= len - *at)
        return -1;
    *at += (size_t)n;
    return 0;
}

int refusal_format(char *buf, size_t len, const struct refusal *f)
{
    char count[24];
    size_t at = 0;
    if (len == 0)
        return -1;
    buf[0] = '\0';
    snprintf(count, sizeof count, "%zu", f->count);
    const char *stored = f->stored == RS_COUNT ? count : stored_words[f->stored];
    if ((*stored && put_field(buf, len, &at, "stored", stored) != 0) ||
        (f->reason != RR_NONE && f->reason != RR_OTHER &&
         put_field(buf, len, &at, "reason", refusal_reason_name(f->reason)) != 0) ||
        (f->no_tokens && put_field(buf, len, &at, "tokens", "no") != 0) ||
        (valid_value(f->option) && put_field(buf, len, &at, "option", f->option) != 0))
        return -1;
    return (int)at;
}

/* The length of the field at S ("key=value" up to a space or the end), or 0 if S does not
 * start with one. */
static size_t field_len(const char *s, size_t *keylen)
{
    size_t k = 0, v;
    while (key_char(s[k]))
        k++;
    if (k == 0 || s[k] != '=')
        return 0;
    for (v = k + 1; value_char(s[v]); v++)
        ;
    if (v == k + 1 || (s[v] != ' ' && s[v] != '\0'))
        return 0;
    *keylen = k;
    return v;
}

static void copy_word(char *out, size_t size, const char *s, size_t n)
{
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), s);
}

static void take_stored(struct refusal *f, const char *v, size_t n)
{
    f->stored = RS_UNSAID;
    for (size_t i = RS_NO; i <= RS_YES; i++)
        if (strlen(stored_words[i]) == n && memcmp(v, stored_words[i], n) == 0)
            f->stored = (enum refusal_stored)i;
    if (f->stored == RS_UNSAID && strspn(v, "0123456789") >= n) {
        f->stored = RS_COUNT;
        f->count = 0;
        for (size_t i = 0; i < n && i < 18; i++)
            f->count = f->count * 10 + (size_t)(v[i] - '0');
    }
}

static void take_reason(struct refusal *f, const char *v, size_t n)
{
    copy_word(f->reason_word, sizeof f->reason_word, v, n);
    f->reason = RR_OTHER;
    for (size_t i = RR_NONE + 1; i < RR_OTHER; i++)
        if (strcmp(f->reason_word, reasons[i]) == 0)
            f->reason = (enum refusal_reason)i;
}

/* One field: KEY (KLEN bytes) and its value V (N bytes). Unknown keys are skipped. */
static void take_field(struct refusal *f, const char *key, size_t klen, const char *v,
                       size_t n)
{
    if (klen == 6 && memcmp(key, "stored", 6) == 0)
        take_stored(f, v, n);
    else if (klen == 6 && memcmp(key, "reason", 6) == 0)
        take_reason(f, v, n);
    else if (klen == 6 && memcmp(key, "tokens", 6) == 0)
        f->no_tokens = n == 2 && memcmp(v, "no", 2) == 0;
    else if (klen == 6 && memcmp(key, "option", 6) == 0)
        copy_word(f->option, sizeof f->option, v, n);
}

const char *refusal_parse(const char *text, struct refusal *f)
{
    size_t n, klen;
    memset(f, 0, sizeof *f);
    while ((n = field_len(text, &klen)) > 0) {
        take_field(f, text, klen, text + klen + 1, n - klen - 1);
        f->fields++;
        text += n;
        if (*text == ' ')
            text++;
    }
    return text;
}

int refusal_put_retry_safe(const struct refusal *f, int keyed, int tokened)
{
    if (f->reason == RR_DRAINING || f->reason == RR_MAX_CONNECTIONS ||
        f->reason == RR_PERMISSION)
        return 0;
    if (f->stored == RS_MAYBE)
        return keyed || (tokened && !f->no_tokens);
    return f->stored == RS_NO;
}
