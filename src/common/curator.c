#include "curator.h"

#include <stdio.h>
#include <string.h>

int curator_name_prefix(enum curator_kind kind, int64_t value, char *buf, size_t len)
{
    int n;
    if (kind == CURATOR_PRIORITY) {
        /* Sign digit then the 32-bit two's complement in upper-case hex: byte order of the
         * whole name is the numeric order of the priority. */
        int32_t p = (int32_t)value;
        if (value < INT32_MIN || value > INT32_MAX)
            return -1;
        n = snprintf(buf, len, CURATOR_PREFIX "%c%08X", p < 0 ? '0' : '1', (uint32_t)p);
    } else if (kind == CURATOR_DELAY) {
        if (value <= 0)
            return -1;
        n = snprintf(buf, len, CURATOR_PREFIX "|%08llX|", (unsigned long long)value);
    } else {
        n = snprintf(buf, len, CURATOR_PREFIX);
    }
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int curator_name_prefix_tagged(enum curator_kind kind, int64_t value, uint32_t attempts,
                               char *buf, size_t len)
{
    char plain[CURATOR_PREFIX_MAX];
    if (curator_name_prefix(kind, value, plain, sizeof plain) != 0)
        return -1;
    const char *rest = plain + strlen(CURATOR_PREFIX);
    int n;
    if (kind == CURATOR_DELAY)
        n = snprintf(buf, len, CURATOR_PREFIX "a%u%s", attempts, rest);
    else if (kind == CURATOR_PRIORITY)
        n = snprintf(buf, len, "%sa%u-", plain, attempts);
    else
        n = snprintf(buf, len, CURATOR_PREFIX "a%u-", attempts);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* "a<digits>" followed by END: the attempts of a tagged name, else 0. */
static uint32_t tag_attempts(const char *s, char end)
{
    uint32_t v = 0;
    if (*s++ != 'a' || *s < '0' || *s > '9')
        return 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint32_t d = (uint32_t)(*s - '0');
        if (v > (UINT32_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    return *s == end ? v : 0;
}

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Java's Long.parseLong(s, 16): optional sign, 1+ hex digits, no overflow. */
static int parse_hex_long(const char *s, size_t n, int64_t *out)
{
    int neg = 0;
    size_t i = 0;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return -1;
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        int d = hex_digit((unsigned char)s[i]);
        if (d < 0 || v > (limit - (uint64_t)d) / 16)
            return -1;
        v = v * 16 + (uint64_t)d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* The text between the last two '|' as a signed hex long; 0 when absent or unreadable. */
static int64_t delay_epoch(const char *name)
{
    const char *last = strrchr(name, '|'), *first = NULL;
    for (const char *p = name; last && p < last; p++)
        if (*p == '|')
            first = p;
    int64_t v;
    if (!first || parse_hex_long(first + 1, (size_t)(last - first - 1), &v) != 0)
        return 0;
    return v;
}

static int priority_of(const char *rest, int32_t *out)
{
    if ((rest[0] != '0' && rest[0] != '1') || strlen(rest) < 9)
        return -1;
    uint32_t v = 0;
    for (int i = 1; i <= 8; i++) {
        int d = hex_digit((unsigned char)rest[i]);
        if (d < 0)
            return -1;
        v = v * 16 + (uint32_t)d;
    }
    int32_t p = (int32_t)v;
    if ((p < 0) != (rest[0] == '0'))
        return -1;
    *out = p;
    return 0;
}

int curator_parse_name(enum curator_kind kind, const char *name, struct curator_name *out)
{
    memset(out, 0, sizeof *out);
    if (strncmp(name, CURATOR_PREFIX, strlen(CURATOR_PREFIX)) != 0)
        return -1;
    const char *rest = name + strlen(CURATOR_PREFIX);
    if (kind == CURATOR_DELAY) {
        out->epoch_ms = delay_epoch(name);
        out->attempts = tag_attempts(rest, '|');
    } else if (kind == CURATOR_PRIORITY) {
        out->has_priority = priority_of(rest, &out->priority) == 0;
        out->attempts = out->has_priority ? tag_attempts(rest + 9, '-') : tag_attempts(rest, '-');
    } else {
        out->attempts = tag_attempts(rest, '-');
    }
    return 0;
}

int curator_valid_id_name(const char *name)
{
    size_t n = strlen(name);
    if (strncmp(name, CURATOR_PREFIX, strlen(CURATOR_PREFIX)) != 0 || n > 255)
        return 0;
    for (const char *p = name; *p; p++)
        if (*p <= ' ' || *p > '~' || *p == '/')
            return 0;
    return 1;
}

int curator_name_cmp(enum curator_kind kind, const char *a, const struct curator_name *na,
                     const char *b, const struct curator_name *nb)
{
    if (kind == CURATOR_DELAY && na->epoch_ms != nb->epoch_ms)
        return na->epoch_ms < nb->epoch_ms ? -1 : 1;
    int c = strcmp(a, b); /* unsigned byte order, as Java's String order for ASCII */
    return c < 0 ? -1 : c > 0;
}

size_t curator_frame_size(const size_t *lens, size_t n)
{
    size_t size = 4 + 1;
    for (size_t i = 0; i < n; i++)
        size += 5 + lens[i];
    return size;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

size_t curator_frame_encode(const unsigned char *const *items, const size_t *lens, size_t n,
                            unsigned char *buf, size_t len)
{
    size_t size = curator_frame_size(lens, n), at = 4;
    if (size > len)
        return 0;
    put_be32(buf, CURATOR_FRAME_VERSION);
    for (size_t i = 0; i < n; i++) {
        if (lens[i] > INT32_MAX)
            return 0;
        buf[at] = 0x01;
        put_be32(buf + at + 1, (uint32_t)lens[i]);
        if (lens[i])
            memcpy(buf + at + 5, items[i], lens[i]);
        at += 5 + lens[i];
    }
    buf[at] = 0x02;
    return size;
}

long curator_frame_decode(const unsigned char *data, size_t len, struct curator_item *items,
                          size_t max)
{
    if (len < 4 || get_be32(data) != CURATOR_FRAME_VERSION)
        return -1;
    size_t at = 4;
    long n = 0;
    for (;;) {
        if (at >= len)
            return -1; /* no end marker */
        if (data[at] == 0x02)
            return n;
        if (data[at] != 0x01 || len - at < 5)
            return -1;
        uint32_t l = get_be32(data + at + 1);
        if (l > INT32_MAX || l > len - at - 5)
            return -1; /* negative (Java int) or truncated */
        if ((size_t)n < max)
            items[n] = (struct curator_item){.offset = at + 5, .len = l};
        n++;
        at += 5 + (size_t)l;
    }
}
