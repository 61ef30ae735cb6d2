#include "cron.h"

#include "errtext.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* CRON_HORIZON_YEARS in seconds, counting a leap day every four years and one more. */
#define HORIZON_SECONDS ((int64_t)(CRON_HORIZON_YEARS * 365 + CRON_HORIZON_YEARS / 4 + 1) * 86400)

/* ---- parsing ---- */

struct field {
    const char *name;
    unsigned min, max;         /* as written: the weekday's 7 is Sunday again */
    unsigned max_step;         /* the number of distinct values */
    const char *const *names;  /* three-letter names of min, min + 1, ... (or none) */
    unsigned nnames;
    const char *names_hint;
};

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

enum { F_MINUTE, F_HOUR, F_DOM, F_MONTH, F_DOW, F_COUNT };

static const struct field fields[F_COUNT] = {
    {"minute", 0, 59, 60, NULL, 0, NULL},
    {"hour", 0, 23, 24, NULL, 0, NULL},
    {"day-of-month", 1, 31, 31, NULL, 0, NULL},
    {"month", 1, 12, 12, month_names, 12, "a month name (jan-dec)"},
    {"day-of-week", 0, 7, 7, dow_names, 7, "a weekday name (sun-sat)"},
};

static const struct {
    const char *name, *fields;
} shorthands[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* A token for a message: printable ASCII, at most 32 bytes of it. */
struct tok {
    char s[40];
};

static struct tok tok(const char *s, size_t n)
{
    struct tok t;
    size_t k = 0;
    for (; k < n && k < 32; k++)
        t.s[k] = s[k] >= 0x20 && s[k] < 0x7f ? s[k] : '?';
    if (n > 32)
        memcpy(t.s + k, "...", 3), k += 3;
    t.s[k] = '\0';
    return t;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* A number or, in the month and weekday fields, a name: S, N bytes. */
static int parse_value(const struct field *f, const char *s, size_t n, unsigned *v, char *err,
                       size_t errlen)
{
    size_t digits = 0;
    unsigned x = 0;
    while (digits < n && s[digits] >= '0' && s[digits] <= '9') {
        if (x < 100000)
            x = x * 10 + (unsigned)(s[digits] - '0');
        digits++;
    }
    if (n && digits == n) {
        if (x < f->min || x > f->max)
            return errtext_fail(err, errlen, "%s: %s is out of %u-%u", f->name, tok(s, n).s, f->min,
                                f->max);
        *v = x;
        return 0;
    }
    for (unsigned i = 0; n == 3 && i < f->nnames; i++)
        if (lower(s[0]) == f->names[i][0] && lower(s[1]) == f->names[i][1] &&
            lower(s[2]) == f->names[i][2]) {
            *v = f->min + i;
            return 0;
        }
    if (n == 0)
        return errtext_fail(err, errlen, "%s: a value is missing", f->name);
    if (f->names)
        return errtext_fail(err, errlen, "%s: '%s' is not a number or %s", f->name, tok(s, n).s,
                            f->names_hint);
    return errtext_fail(err, errlen, "%s: '%s' is not a number", f->name, tok(s, n).s);
}

/* One item of a list: *, a, a-b, each with an optional /step; a/step is a-max/step. */
static int parse_item(const struct field *f, const char *s, size_t n, uint64_t *mask, char *err,
                      size_t errlen)
{
    const char *slash = memchr(s, '/', n);
    size_t base = slash ? (size_t)(slash - s) : n;
    unsigned lo, hi, step = 1;
    if (base == 1 && s[0] == '*') {
        lo = f->min;
        hi = f->max;
    } else {
        const char *dash = memchr(s, '-', base);
        size_t first = dash ? (size_t)(dash - s) : base;
        if (parse_value(f, s, first, &lo, err, errlen) < 0)
            return -1;
        hi = slash ? f->max : lo;
        if (dash && parse_value(f, dash + 1, base - first - 1, &hi, err, errlen) < 0)
            return -1;
        if (dash && hi < lo)
            return errtext_fail(err, errlen, "%s: range %s goes backwards", f->name,
                                tok(s, base).s);
    }
    if (slash) {
        const char *st = slash + 1;
        size_t sn = n - base - 1, k = 0;
        for (step = 0; k < sn && st[k] >= '0' && st[k] <= '9'; k++)
            step = step < 100000 ? step * 10 + (unsigned)(st[k] - '0') : step;
        if (sn == 0 || k != sn)
            return errtext_fail(err, errlen, "%s: step '%s' is not a number", f->name,
                                tok(st, sn).s);
        if (step < 1 || step > f->max_step)
            return errtext_fail(err, errlen, "%s: step %s is out of 1-%u", f->name, tok(st, sn).s,
                                f->max_step);
    }
    for (unsigned v = lo; v <= hi; v += step)
        *mask |= UINT64_C(1) << v;
    return 0;
}

static int parse_field(const struct field *f, const char *s, size_t n, uint64_t *mask,
                       char *err, size_t errlen)
{
    *mask = 0;
    for (size_t at = 0;;) {
        const char *comma = memchr(s + at, ',', n - at);
        size_t end = comma ? (size_t)(comma - s) : n;
        if (end == at)
            return errtext_fail(err, errlen, "%s: empty list item in '%s'", f->name, tok(s, n).s);
        if (parse_item(f, s + at, end - at, mask, err, errlen) < 0)
            return -1;
        if (!comma)
            return 0;
        at = end + 1;
    }
}

static const char *skip_blanks(const char *s)
{
    while (is_blank(*s))
        s++;
    return s;
}

static int parse_shorthand(const char *text, struct cron_expr *out, char *err, size_t errlen)
{
    size_t n = 0;
    while (text[n] && !is_blank(text[n]))
        n++;
    if (n == 7 && strncasecmp(text, "@reboot", 7) == 0)
        return errtext_fail(err, errlen,
                            "@reboot is not supported: a schedule needs times to run at");
    for (size_t i = 0; i < sizeof shorthands / sizeof shorthands[0]; i++) {
        if (strlen(shorthands[i].name) != n || strncasecmp(text, shorthands[i].name, n) != 0)
            continue;
        if (*skip_blanks(text + n))
            return errtext_fail(err, errlen, "%s: nothing may follow a shorthand",
                                shorthands[i].name);
        return cron_parse(shorthands[i].fields, out, err, errlen);
    }
    return errtext_fail(err, errlen,
                        "unknown shorthand '%s' (known: @yearly, @annually, @monthly, "
                        "@weekly, @daily, @midnight, @hourly)",
                        tok(text, n).s);
}

/* Under the AND rule a restricted day-of-month must exist in a chosen month (the 29th of
 * February does, in leap years); under the OR rule every chosen weekday occurs. */
static int check_fires(const struct cron_expr *e, const char *dom, size_t domn,
                       const char *mon, size_t monn, char *err, size_t errlen)
{
    static const unsigned char longest[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (!e->dom_star && !e->dow_star)
        return 0;
    for (unsigned m = 1; m <= 12; m++)
        if (e->months >> m & 1 && e->doms & ((UINT64_C(2) << longest[m]) - 2))
            return 0;
    return errtext_fail(err, errlen, "never runs: day-of-month '%s' does not occur in month '%s'",
                        tok(dom, domn).s, tok(mon, monn).s);
}

int cron_parse(const char *text, struct cron_expr *out, char *err, size_t errlen)
{
    const char *at[F_COUNT];
    size_t len[F_COUNT], nf = 0;
    memset(out, 0, sizeof *out);
    const char *s = skip_blanks(text);
    if (*s == '@')
        return parse_shorthand(s, out, err, errlen);
    while (*s) {
        const char *start = s;
        while (*s && !is_blank(*s))
            s++;
        if (nf < F_COUNT)
            at[nf] = start, len[nf] = (size_t)(s - start);
        nf++;
        s = skip_blanks(s);
    }
    if (nf == 0)
        return errtext_fail(err, errlen, "empty expression");
    if (nf != F_COUNT)
        return errtext_fail(err, errlen,
                            "%zu fields, expected 5: minute hour day-of-month month "
                            "day-of-week (or a shorthand such as @daily)",
                            nf);
    uint64_t m[F_COUNT];
    for (int i = 0; i < F_COUNT; i++)
        if (parse_field(&fields[i], at[i], len[i], &m[i], err, errlen) < 0)
            return -1;
    out->minutes = m[F_MINUTE];
    out->hours = (uint32_t)m[F_HOUR];
    out->doms = (uint32_t)m[F_DOM];
    out->months = (uint16_t)m[F_MONTH];
    out->dows = (uint8_t)((m[F_DOW] | m[F_DOW] >> 7) & 0x7f); /* 7 is Sunday, 0 */
    out->dom_star = at[F_DOM][0] == '*';
    out->dow_star = at[F_DOW][0] == '*';
    if (check_fires(out, at[F_DOM], len[F_DOM], at[F_MONTH], len[F_MONTH], err, errlen) < 0) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}

/* ---- the next run ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return q - (a % b != 0 && (a < 0) != (b < 0));
}

/* The lowest bit of MASK at or above FROM and below LIMIT (at most 64), or -1. */
static int next_bit(uint64_t mask, unsigned from, unsigned limit)
{
    if (from >= limit)
        return -1;
    mask >>= from;
    if (limit - from < 64)
        mask &= (UINT64_C(1) << (limit - from)) - 1;
    return mask ? (int)from + __builtin_ctzll(mask) : -1;
}

static int day_matches(const struct cron_expr *e, int64_t days, unsigned dom)
{
    int by_dom = e->doms >> dom & 1, by_dow = e->dows >> tzone_weekday(days) & 1;
    return e->dom_star || e->dow_star ? by_dom && by_dow : by_dom || by_dow;
}

/* The first matching wall time at or after *W (a whole minute) and not after LIMIT: 0 and
 * *W, or -1. Skips whole months, days and hours that do not match; every step moves on. */
static int next_wall(const struct cron_expr *e, int64_t *w, int64_t limit)
{
    for (int64_t t = *w; t <= limit;) {
        int64_t days = floor_div(t, 86400), y;
        unsigned m, d, sod = (unsigned)(t - days * 86400), h = sod / 3600, mi = sod / 60 % 60;
        tzone_civil_from_days(days, &y, &m, &d);
        if (!(e->months >> m & 1)) {
            t = tzone_days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * 86400;
            continue;
        }
        if (!day_matches(e, days, d)) {
            t = (days + 1) * 86400;
            continue;
        }
        int nh = next_bit(e->hours, h, 24), nm = next_bit(e->minutes, mi, 60);
        if (nh != (int)h)
            t = nh < 0 ? (days + 1) * 86400 : days * 86400 + nh * 3600;
        else if (nm != (int)mi)
            t = days * 86400 + h * 3600 + (nm < 0 ? 3600 : (unsigned)nm * 60);
        else {
            *w = t;
            return 0;
        }
    }
    return -1;
}

/* Wall times up to wall(AFTER) all map to instants at or before AFTER (the clock showed
 * them by then), so the search starts at the next minute. Later wall times may still map
 * back to or before AFTER, when AFTER is in a repeated stretch: those are passed over. */
int cron_next(const struct cron_expr *e, const struct tzone *tz, int64_t after, int64_t *next)
{
    if (after < CRON_T_MIN || after > CRON_T_MAX)
        return -1;
    int64_t wall = after + tzone_offset(tz, after, NULL);
    int64_t limit = wall + HORIZON_SECONDS, w = floor_div(wall, 60) * 60 + 60;
    while (next_wall(e, &w, limit) == 0) {
        int64_t t = tzone_instant(tz, w);
        if (t > after) {
            *next = t;
            return 0;
        }
        w += 60;
    }
    return -1;
}
