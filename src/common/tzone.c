#include "tzone.h"

#include "errtext.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* RFC 8536: offsets of local time types are in [-89999, 93599] (-24:59:59 to +25:59:59). */
#define OFF_MIN (-89999)
#define OFF_MAX 93599
#define ABBR_SIZE 16 /* a POSIX TZ name: tzdata's are at most 6 bytes */
#define FOOTER_MAX 255
#define TZ_TYPES_MAX 256 /* local time types of one TZif file (RFC 8536) */

/* ---- calendar ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return q - (a % b != 0 && (a < 0) != (b < 0));
}

static int64_t clamp_t(int64_t t)
{
    return t < TZONE_T_MIN ? TZONE_T_MIN : t > TZONE_T_MAX ? TZONE_T_MAX : t;
}

/* Howard Hinnant's algorithms: eras of 400 years, years starting in March. */
int64_t tzone_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void tzone_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

unsigned tzone_weekday(int64_t days)
{
    return (unsigned)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday */
}

static int is_leap(int64_t y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static unsigned month_days(int64_t y, unsigned m)
{
    static const unsigned char len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return len[m - 1] + (m == 2 && is_leap(y));
}

/* ---- the POSIX TZ rule of the footer ---- */

struct rule_date {
    char kind;          /* 'M' (Mm.w.d), 'J' (Jn, 1-365 without Feb 29), 'D' (n, 0-365) */
    unsigned m, w, d, n;
    int32_t time;       /* local seconds after midnight, -167 h to +167 h (RFC 8536) */
};

struct rule {
    char std[ABBR_SIZE], dst[ABBR_SIZE];
    int32_t std_off, dst_off; /* east positive, unlike the string's */
    int has_dst;
    struct rule_date start, end;
};

static int eat(const char **s, char c)
{
    if (**s != c)
        return 0;
    (*s)++;
    return 1;
}

/* 1 to MAXD decimal digits. */
static int rule_num(const char **s, int maxd, unsigned *out)
{
    unsigned v = 0;
    int n = 0;
    for (; **s >= '0' && **s <= '9'; (*s)++, n++) {
        if (n == maxd)
            return -1;
        v = v * 10 + (unsigned)(**s - '0');
    }
    *out = v;
    return n ? 0 : -1;
}

/* "CET" (letters) or "<+0330>" (letters, digits, signs), 3 to ABBR_SIZE - 1 of them. */
static int rule_name(const char **s, char *out)
{
    const char *p = *s;
    size_t n = 0;
    int quoted = eat(&p, '<');
    for (;; p++) {
        char c = *p;
        int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
        if (!alpha && !(quoted && ((c >= '0' && c <= '9') || c == '+' || c == '-')))
            break;
        if (n == ABBR_SIZE - 1)
            return -1;
        out[n++] = c;
    }
    if ((quoted && !eat(&p, '>')) || n < 3)
        return -1;
    out[n] = '\0';
    *s = p;
    return 0;
}

/* [+-]hh[:mm[:ss]], hh at most MAXH, as signed seconds. */
static int rule_hms(const char **s, unsigned maxh, int32_t *out)
{
    unsigned h, m = 0, sec = 0;
    int neg = **s == '-';
    if (**s == '+' || **s == '-')
        (*s)++;
    if (rule_num(s, 3, &h) < 0 || h > maxh)
        return -1;
    if (eat(s, ':') && (rule_num(s, 2, &m) < 0 || m > 59))
        return -1;
    if (eat(s, ':') && (rule_num(s, 2, &sec) < 0 || sec > 59))
        return -1;
    int32_t v = (int32_t)(h * 3600 + m * 60 + sec);
    *out = neg ? -v : v;
    return 0;
}

static int rule_date(const char **s, struct rule_date *d)
{
    memset(d, 0, sizeof *d);
    d->time = 7200; /* 02:00 when the string gives none */
    if (eat(s, 'M')) {
        d->kind = 'M';
        if (rule_num(s, 2, &d->m) < 0 || d->m < 1 || d->m > 12 || !eat(s, '.') ||
            rule_num(s, 1, &d->w) < 0 || d->w < 1 || d->w > 5 || !eat(s, '.') ||
            rule_num(s, 1, &d->d) < 0 || d->d > 6)
            return -1;
    } else if (eat(s, 'J')) {
        d->kind = 'J';
        if (rule_num(s, 3, &d->n) < 0 || d->n < 1 || d->n > 365)
            return -1;
    } else {
        d->kind = 'D';
        if (rule_num(s, 3, &d->n) < 0 || d->n > 365)
            return -1;
    }
    return eat(s, '/') ? rule_hms(s, 167, &d->time) : 0;
}

/* std offset [dst [offset] [,start[/time],end[/time]]] (POSIX, with RFC 8536's extensions). */
static int rule_parse(const char *s, struct rule *r)
{
    int32_t off;
    memset(r, 0, sizeof *r);
    if (rule_name(&s, r->std) < 0 || rule_hms(&s, 24, &off) < 0)
        return -1;
    r->std_off = -off;
    if (!*s)
        return 0;
    if (rule_name(&s, r->dst) < 0)
        return -1;
    r->has_dst = 1;
    r->dst_off = r->std_off + 3600;
    if (*s && *s != ',') {
        if (rule_hms(&s, 24, &off) < 0)
            return -1;
        r->dst_off = -off;
    }
    if (!*s) { /* no dates: the US rule, as glibc assumes */
        r->start = (struct rule_date){.kind = 'M', .m = 3, .w = 2, .d = 0, .time = 7200};
        r->end = (struct rule_date){.kind = 'M', .m = 11, .w = 1, .d = 0, .time = 7200};
        return 0;
    }
    if (!eat(&s, ',') || rule_date(&s, &r->start) < 0 || !eat(&s, ',') ||
        rule_date(&s, &r->end) < 0 || *s)
        return -1;
    return 0;
}

static int64_t rule_day(int64_t y, const struct rule_date *d)
{
    if (d->kind == 'J')
        return tzone_days_from_civil(y, 1, 1) + d->n - 1 + (is_leap(y) && d->n >= 60);
    if (d->kind == 'D')
        return tzone_days_from_civil(y, 1, 1) + d->n;
    int64_t first = tzone_days_from_civil(y, d->m, 1);
    int64_t day = first + (d->d + 7 - tzone_weekday(first)) % 7 + (d->w - 1) * 7;
    while (day >= first + month_days(y, d->m)) /* week 5 is the last, maybe the fourth */
        day -= 7;
    return day;
}

/* The changes of year Y as instants: the start is given in standard time, the end in
 * daylight time. */
static void rule_changes(const struct rule *r, int64_t y, int64_t *start, int64_t *end)
{
    *start = rule_day(y, &r->start) * 86400 + r->start.time - r->std_off;
    *end = rule_day(y, &r->end) * 86400 + r->end.time - r->dst_off;
}

static int64_t rule_year(const struct rule *r, int64_t t)
{
    int64_t y;
    unsigned m, d;
    tzone_civil_from_days(floor_div(t + r->std_off, 86400), &y, &m, &d);
    return y;
}

/* Daylight time at T: the latest change at or before T among three years' changes, taken
 * in order, so that where one year's end is the next one's start (daylight time all year,
 * RFC 8536 3.3.1) the start wins. Changes may leave their year (extended times), hence three
 * years rather than T's alone. */
static int rule_is_dst(const struct rule *r, int64_t t)
{
    int64_t y = rule_year(r, t), best = INT64_MIN, s, e;
    int dst = 0;
    for (int64_t k = y - 1; k <= y + 1; k++) {
        rule_changes(r, k, &s, &e);
        if (s <= t && s >= best)
            best = s, dst = 1;
        if (e <= t && e >= best)
            best = e, dst = 0;
    }
    return dst;
}

static int64_t rule_next(const struct rule *r, int64_t t)
{
    int64_t y = rule_year(r, t), best = INT64_MAX, s, e;
    for (int64_t k = y - 1; k <= y + 2; k++) {
        rule_changes(r, k, &s, &e);
        if (s > t && s < best)
            best = s;
        if (e > t && e < best)
            best = e;
    }
    return best;
}

/* ---- the zone ---- */

struct tz_type {
    int32_t off;
    uint32_t abbr; /* into chars */
};

struct tzone {
    char *name;
    size_t ntrans, ntypes;
    int64_t *trans;         /* strictly ascending */
    unsigned char *idx;     /* each transition's type, < ntypes */
    struct tz_type *types;
    char *chars;            /* the abbreviations, with a NUL after the last */
    int has_rule;
    struct rule rule;
};

void tzone_free(struct tzone *tz)
{
    if (!tz)
        return;
    free(tz->name);
    free(tz->trans);
    free(tz->idx);
    free(tz->types);
    free(tz->chars);
    free(tz);
}

const char *tzone_name(const struct tzone *tz)
{
    return tz->name;
}

/* The first transition after T (ntrans if none). */
static size_t upper_bound(const struct tzone *tz, int64_t t)
{
    size_t lo = 0, hi = tz->ntrans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tz->trans[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int32_t tzone_offset(const struct tzone *tz, int64_t t, const char **abbr)
{
    size_t n = tz->ntrans, ti = 0; /* before the first transition: type 0 (RFC 8536 3.2) */
    t = clamp_t(t);
    if (n == 0 || t >= tz->trans[n - 1]) {
        if (tz->has_rule) {
            int dst = tz->rule.has_dst && rule_is_dst(&tz->rule, t);
            if (abbr)
                *abbr = dst ? tz->rule.dst : tz->rule.std;
            return dst ? tz->rule.dst_off : tz->rule.std_off;
        }
        ti = n ? tz->idx[n - 1] : 0;
    } else if (t >= tz->trans[0]) {
        ti = tz->idx[upper_bound(tz, t) - 1];
    }
    if (abbr)
        *abbr = tz->chars + tz->types[ti].abbr;
    return tz->types[ti].off;
}

/* The first instant after T where the offset may change; the offset is the same over
 * [T, that). INT64_MAX if it never changes again. */
static int64_t next_change(const struct tzone *tz, int64_t t)
{
    size_t n = tz->ntrans;
    if (n && t < tz->trans[n - 1])
        return tz->trans[upper_bound(tz, t)];
    if (tz->has_rule && tz->rule.has_dst)
        return rule_next(&tz->rule, t);
    return INT64_MAX;
}

/* Walks the stretches of constant offset from a time when the wall clock surely showed less
 * than WALL: in each, the wall clock runs from its start + offset, so WALL is either reached
 * inside (WALL - offset), or was jumped over at the start (a gap), or lies further on. */
int64_t tzone_instant(const struct tzone *tz, int64_t wall)
{
    const int64_t margin = 2 * (OFF_MAX + 1);
    if (wall < TZONE_T_MIN + margin)
        wall = TZONE_T_MIN + margin;
    if (wall > TZONE_T_MAX - margin)
        wall = TZONE_T_MAX - margin;
    int64_t s = wall - (OFF_MAX + 1);
    for (;;) {
        int32_t off = tzone_offset(tz, s, NULL);
        if (s + off >= wall)
            return s;
        int64_t end = next_change(tz, s);
        if (end > TZONE_T_MAX || wall - off < end)
            return wall - off;
        s = end;
    }
}

void tzone_format(const struct tzone *tz, int64_t t, char *buf, size_t len)
{
    const char *abbr;
    t = clamp_t(t);
    int32_t off = tzone_offset(tz, t, &abbr);
    int64_t w = t + off, days = floor_div(w, 86400), sod = w - days * 86400, y;
    unsigned m, d, a = (unsigned)(off < 0 ? -off : off);
    tzone_civil_from_days(days, &y, &m, &d);
    char sign = off < 0 ? '-' : '+', secs[8] = "";
    if (a % 60)
        snprintf(secs, sizeof secs, ":%02u", a % 60);
    snprintf(buf, len, "%04lld-%02u-%02u %02d:%02d:%02d %s (%c%02u:%02u%s)", (long long)y, m, d,
             (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), abbr, sign, a / 3600,
             a / 60 % 60, secs);
}

/* ---- TZif ---- */

/* Bytes of a name or footer for a message: printable ASCII, at most 64 of them. */
static void shown(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && s[i] && k + 4 < cap; i++, k++) {
        if (i == 64) {
            memcpy(out + k, "...", 3);
            k += 3;
            break;
        }
        out[k] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    }
    out[k] = '\0';
}

struct reader {
    const unsigned char *p;
    size_t len, at;
};

static const unsigned char *take(struct reader *r, uint64_t n)
{
    if (n > r->len - r->at)
        return NULL;
    const unsigned char *q = r->p + r->at;
    r->at += (size_t)n;
    return q;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be_time(const unsigned char *p, int size)
{
    if (size == 4)
        return (int32_t)be32(p);
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct counts {
    uint32_t isut, isstd, leap, time, type, chars;
};

/* The header: magic, version ('\0' for 1, else the digit), six counts. */
static int read_header(struct reader *r, int *version, struct counts *c, char *why, size_t wl)
{
    const unsigned char *h = take(r, 44);
    if (!h)
        return errtext_fail(why, wl, "truncated: %zu bytes, shorter than a TZif header",
                            r->len - r->at);
    if (memcmp(h, "TZif", 4) != 0)
        return errtext_fail(why, wl, "not a TZif file (no TZif magic)");
    if (h[4] != 0 && (h[4] < '2' || h[4] > '9'))
        return errtext_fail(why, wl, "unknown TZif version byte 0x%02x", h[4]);
    *version = h[4] ? h[4] - '0' : 1;
    uint32_t *v[6] = {&c->isut, &c->isstd, &c->leap, &c->time, &c->type, &c->chars};
    for (int i = 0; i < 6; i++)
        *v[i] = be32(h + 20 + 4 * i);
    return 0;
}

static uint64_t block_size(const struct counts *c, int tsize)
{
    return (uint64_t)c->time * (uint64_t)(tsize + 1) + (uint64_t)c->type * 6 + c->chars +
           (uint64_t)c->leap * (uint64_t)(tsize + 4) + c->isstd + c->isut;
}

static int check_counts(const struct reader *r, const struct counts *c, int tsize, char *why,
                        size_t wl)
{
    uint64_t need = block_size(c, tsize);
    if (need > r->len - r->at)
        return errtext_fail(why, wl,
                            "truncated: the header announces %llu bytes of data, %zu remain",
                            (unsigned long long)need, r->len - r->at);
    if (c->type == 0 || c->type > TZ_TYPES_MAX)
        return errtext_fail(why, wl, "%u local time types (1 to %d expected)", c->type,
                            TZ_TYPES_MAX);
    if (c->chars == 0)
        return errtext_fail(why, wl, "no time zone abbreviations");
    if ((c->isut && c->isut != c->type) || (c->isstd && c->isstd != c->type))
        return errtext_fail(why, wl,
                            "inconsistent counts of UT/local and standard/wall indicators");
    if (c->leap)
        return errtext_fail(why, wl, "leap-second tables (the right/ zones) are not supported");
    return 0;
}

static int read_transitions(struct reader *r, const struct counts *c, int tsize,
                            struct tzone *tz, char *why, size_t wl)
{
    const unsigned char *t = take(r, (uint64_t)c->time * (uint64_t)tsize);
    const unsigned char *ix = take(r, c->time);
    for (uint32_t i = 0; i < c->time; i++) {
        tz->trans[i] = be_time(t + (size_t)i * (size_t)tsize, tsize);
        if (i && tz->trans[i] <= tz->trans[i - 1])
            return errtext_fail(why, wl, "transition %u is not after the one before it", i);
        if (ix[i] >= c->type)
            return errtext_fail(why, wl, "transition %u has type %u of %u", i, ix[i], c->type);
        tz->idx[i] = ix[i];
    }
    tz->ntrans = c->time;
    return 0;
}

static int read_types(struct reader *r, const struct counts *c, struct tzone *tz, char *why,
                      size_t wl)
{
    const unsigned char *p = take(r, (uint64_t)c->type * 6), *chars = take(r, c->chars);
    for (uint32_t i = 0; i < c->type; i++, p += 6) {
        int32_t off = (int32_t)be32(p);
        if (off < OFF_MIN || off > OFF_MAX)
            return errtext_fail(why, wl, "type %u has offset %d s, beyond +-25 h", i, (int)off);
        if (p[4] > 1)
            return errtext_fail(why, wl, "type %u has a daylight flag of %u", i, p[4]);
        if (p[5] >= c->chars)
            return errtext_fail(why, wl, "type %u's abbreviation is past the %u bytes of them", i,
                                c->chars);
        tz->types[i] = (struct tz_type){.off = off, .abbr = p[5]};
    }
    memcpy(tz->chars, chars, c->chars);
    tz->chars[c->chars] = '\0';
    tz->ntypes = c->type;
    take(r, (uint64_t)c->isstd + c->isut); /* indicators: only for POSIX-style TZ rules */
    return 0;
}

/* One data block (checked by check_counts) into TZ. */
static int read_block(struct reader *r, const struct counts *c, int tsize, struct tzone *tz,
                      char *why, size_t wl)
{
    tz->trans = malloc(c->time ? (size_t)c->time * sizeof *tz->trans : 1);
    tz->idx = malloc(c->time ? c->time : 1);
    tz->types = malloc(c->type * sizeof *tz->types);
    tz->chars = malloc((size_t)c->chars + 1);
    if (!tz->trans || !tz->idx || !tz->types || !tz->chars)
        return errtext_fail(why, wl, "out of memory");
    if (read_transitions(r, c, tsize, tz, why, wl) < 0 || read_types(r, c, tz, why, wl) < 0)
        return -1;
    return 0;
}

/* "\nRULE\n" at the very end of a version 2+ file. */
static int read_footer(struct reader *r, struct tzone *tz, char *why, size_t wl)
{
    const unsigned char *nl = take(r, 1), *start = r->p + r->at, *end;
    if (!nl || *nl != '\n')
        return errtext_fail(why, wl, "truncated: no footer after the data");
    end = memchr(start, '\n', r->len - r->at);
    if (!end)
        return errtext_fail(why, wl, "truncated: the footer has no final newline");
    size_t n = (size_t)(end - start);
    if ((size_t)(end + 1 - r->p) != r->len)
        return errtext_fail(why, wl, "%zu unexpected bytes after the footer",
                            r->len - (size_t)(end + 1 - r->p));
    if (n == 0)
        return 0;
    char text[FOOTER_MAX + 1], show[80];
    shown((const char *)start, n, show, sizeof show);
    if (n > FOOTER_MAX || memchr(start, '\0', n))
        return errtext_fail(why, wl, "bad TZ rule in the footer: '%s'", show);
    memcpy(text, start, n);
    text[n] = '\0';
    if (rule_parse(text, &tz->rule) < 0)
        return errtext_fail(why, wl, "bad TZ rule in the footer: '%s'", show);
    tz->has_rule = 1;
    return 0;
}

static int parse_tzif(const unsigned char *data, size_t len, struct tzone *tz, char *why,
                      size_t wl)
{
    struct reader r = {.p = data, .len = len};
    struct counts c;
    int version;
    if (read_header(&r, &version, &c, why, wl) < 0)
        return -1;
    if (version == 1)
        return check_counts(&r, &c, 4, why, wl) < 0 ? -1 : read_block(&r, &c, 4, tz, why, wl);
    /* Version 2+: the 32-bit block is skipped, the 64-bit one after it is the one to read. */
    uint64_t v1 = block_size(&c, 4);
    if (v1 > r.len - r.at)
        return errtext_fail(why, wl, "truncated: the version 1 data runs past the end");
    take(&r, v1);
    if (read_header(&r, &version, &c, why, wl) < 0 || check_counts(&r, &c, 8, why, wl) < 0 ||
        read_block(&r, &c, 8, tz, why, wl) < 0)
        return -1;
    return read_footer(&r, tz, why, wl);
}

static struct tzone *tzone_new(const char *name)
{
    struct tzone *tz = calloc(1, sizeof *tz);
    if (tz && !(tz->name = strdup(name))) {
        free(tz);
        return NULL;
    }
    return tz;
}

int tzone_parse(const char *name, const void *data, size_t len, struct tzone **out, char *err,
                size_t errlen)
{
    char why[160], show[80];
    struct tzone *tz = tzone_new(name);
    *out = NULL;
    shown(name, TZONE_NAME_MAX, show, sizeof show);
    if (!tz)
        return errtext_fail(err, errlen, "time zone '%s': out of memory", show);
    if (parse_tzif(data, len, tz, why, sizeof why) < 0) {
        tzone_free(tz);
        return errtext_fail(err, errlen, "time zone '%s': %s", show, why);
    }
    *out = tz;
    return 0;
}

/* UTC without a file: one type, no transitions, no rule. */
static int utc_zone(const char *name, struct tzone **out)
{
    struct tzone *tz = tzone_new(name);
    if (!tz)
        return -1;
    tz->types = calloc(1, sizeof *tz->types);
    tz->chars = strdup("UTC");
    if (!tz->types || !tz->chars) {
        tzone_free(tz);
        return -1;
    }
    tz->ntypes = 1;
    *out = tz;
    return 0;
}

/* A name is a path under the database: refuse whatever could leave it or name no file. */
static int check_name(const char *name, char *why, size_t wl)
{
    size_t len = strnlen(name, TZONE_NAME_MAX + 1);
    if (len == 0)
        return errtext_fail(why, wl, "empty name");
    if (len > TZONE_NAME_MAX)
        return errtext_fail(why, wl, "name longer than %d bytes", TZONE_NAME_MAX);
    if (name[0] == '/')
        return errtext_fail(why, wl, "an absolute path, not a name such as Europe/Berlin");
    for (const char *c = name;; c++) {
        const char *e = strchrnul(c, '/');
        if (e == c)
            return errtext_fail(why, wl, "empty path component");
        if ((e - c == 1 && c[0] == '.') || (e - c == 2 && c[0] == '.' && c[1] == '.'))
            return errtext_fail(why, wl, "'.' and '..' are not allowed in a name");
        if (!*e)
            break;
        c = e;
    }
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '+' || *c == '-' || *c == '/'))
            return errtext_fail(why, wl, "character 0x%02x not allowed (only A-Z a-z 0-9 _ + - /)",
                                *c);
    return 0;
}

static int read_file(const char *dir, const char *path, unsigned char **data, size_t *len,
                     char *why, size_t wl)
{
    char ebuf[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block us */
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
        return errtext_fail(why, wl, "not found in %s", dir);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return errtext_fail(why, wl, "cannot read %s: %s", path, strerror_r(e, ebuf, sizeof ebuf));
    }
    if (!S_ISREG(st.st_mode) || st.st_size > TZONE_FILE_MAX) {
        close(fd);
        return errtext_fail(why, wl, "%s is not a time zone file (%s)", path,
                            S_ISREG(st.st_mode) ? "over 1 MiB" : "not a regular file");
    }
    *data = malloc((size_t)st.st_size + 1);
    ssize_t n = *data ? read(fd, *data, (size_t)st.st_size + 1) : -1;
    int e = errno;
    close(fd);
    if (n < 0 || n > st.st_size) { /* a file that grew while read is refused too */
        free(*data);
        return errtext_fail(why, wl, "cannot read %s: %s", path,
                            n < 0 ? strerror_r(e, ebuf, sizeof ebuf) : "it changed while read");
    }
    *len = (size_t)n;
    return 0;
}

int tzone_load(const char *name, struct tzone **out, char *err, size_t errlen)
{
    char why[512], show[80], path[4096];
    *out = NULL;
    shown(name, TZONE_NAME_MAX + 1, show, sizeof show);
    if (check_name(name, why, sizeof why) < 0)
        return errtext_fail(err, errlen, "time zone '%s': %s", show, why);
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0)
        return utc_zone(name, out) < 0
                   ? errtext_fail(err, errlen, "time zone '%s': out of memory", show)
                   : 0;
    const char *dir = getenv("TZDIR");
    if (!dir || !*dir)
        dir = TZONE_DEFAULT_DIR;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return errtext_fail(err, errlen, "time zone '%s': the path under %s is too long", show,
                            dir);
    unsigned char *data = NULL;
    size_t len = 0;
    if (read_file(dir, path, &data, &len, why, sizeof why) < 0)
        return errtext_fail(err, errlen, "time zone '%s': %s", show, why);
    struct tzone *tz = tzone_new(name);
    int rc = tz ? parse_tzif(data, len, tz, why, sizeof why)
                : errtext_fail(why, sizeof why, "out of memory");
    free(data);
    if (rc < 0) {
        tzone_free(tz);
        return errtext_fail(err, errlen, "time zone '%s': %s: %s", show, path, why);
    }
    *out = tz;
    return 0;
}
