#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int units_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (s == NULL || *s == '\0')
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

/* Splits "123abc" into number and unit; the unit is looked up in the caller's table. */
struct unit { const char *name; uint64_t factor; };

static int parse_with_units(const char *s, const struct unit *units, int unit_required,
                            uint64_t *out)
{
    char num[32];
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    if (n == 0 || n >= sizeof num)
        return -1;
    memcpy(num, s, n);
    num[n] = '\0';
    uint64_t v;
    if (units_parse_u64(num, UINT64_MAX, &v) != 0)
        return -1;
    const char *u = s + n;
    if (*u == '\0') {
        if (unit_required && v != 0)
            return -1;
        *out = v;
        return 0;
    }
    for (const struct unit *e = units; e->name; e++) {
        if (strcmp(u, e->name) == 0) {
            if (v > UINT64_MAX / e->factor)
                return -1;
            *out = v * e->factor;
            return 0;
        }
    }
    return -1;
}

/* Durations' units, smallest first: read by units_parse_duration_ms, written by
 * units_format_duration. */
static const struct unit duration_units[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}, {NULL, 0},
};
#define NDURATION_UNITS (sizeof duration_units / sizeof duration_units[0] - 1)

int units_parse_duration_ms(const char *s, uint64_t *out_ms)
{
    if (s == NULL)
        return -1;
    return parse_with_units(s, duration_units, 1, out_ms);
}

int units_parse_size(const char *s, uint64_t *out_bytes)
{
    static const struct unit units[] = {
        {"B", 1}, {"k", 1024}, {"K", 1024}, {"KB", 1024}, {"KiB", 1024},
        {"M", 1048576}, {"MB", 1048576}, {"MiB", 1048576}, {NULL, 0},
    };
    if (s == NULL)
        return -1;
    return parse_with_units(s, units, 0, out_bytes);
}

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t units_wall_ms(void) { return clock_ms(CLOCK_REALTIME); }
int64_t units_mono_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

static int parse_relative(const char *s, int64_t now_ms, uint64_t *out_ms)
{
    uint64_t d = 0;
    if (s[3] == '\0') {
        *out_ms = (uint64_t)now_ms;
        return 0;
    }
    if ((s[3] != '+' && s[3] != '-') || units_parse_duration_ms(s + 4, &d) != 0)
        return -1;
    if (s[3] == '-' && d > (uint64_t)now_ms)
        return -1;
    *out_ms = s[3] == '+' ? (uint64_t)now_ms + d : (uint64_t)now_ms - d;
    return 0;
}

/* YYYY-MM-DDTHH:MM[:SS[.mmm]]Z, UTC only: a zone-less time would mean different instants
 * on different hosts. */
static int parse_iso(const char *s, uint64_t *out_ms)
{
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M", &tm);
    unsigned ms = 0;
    if (!p)
        return -1;
    if (*p == ':') {
        if (p[1] < '0' || p[1] > '9' || p[2] < '0' || p[2] > '9')
            return -1;
        tm.tm_sec = (p[1] - '0') * 10 + (p[2] - '0');
        p += 3;
        if (*p == '.') {
            int digits = 0;
            for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                if (digits < 3)
                    ms = ms * 10 + (unsigned)(*p - '0');
            if (digits == 0)
                return -1;
            for (; digits < 3; digits++)
                ms *= 10;
        }
    }
    if (*p == '\0')
        return UNITS_E_NO_ZONE;
    if ((*p == '+' || *p == '-') && p[1] >= '0' && p[1] <= '9')
        return UNITS_E_OFFSET;
    if (strcmp(p, "Z") != 0 || tm.tm_sec > 60)
        return -1;
    time_t t = timegm(&tm);
    if (t < 0)
        return -1;
    *out_ms = (uint64_t)t * 1000 + ms;
    return 0;
}

int units_parse_time_ms(const char *s, int64_t now_ms, uint64_t *out_ms)
{
    if (s == NULL || *s == '\0')
        return -1;
    if (strncmp(s, "now", 3) == 0)
        return parse_relative(s, now_ms, out_ms);
    if (strchr(s, 'T'))
        return parse_iso(s, out_ms);
    return units_parse_u64(s, UINT64_MAX / 2, out_ms);
}

const char *units_time_problem(int rc)
{
    if (rc == UNITS_E_NO_ZONE)
        return "it has no time zone: add Z for UTC (a zone-less time would mean different "
               "instants on different hosts)";
    if (rc == UNITS_E_OFFSET)
        return "only UTC times are read: give it in UTC with a Z instead of the offset";
    return NULL;
}

void units_format_duration(uint64_t ms, char *buf, size_t len)
{
    const struct unit *u = &duration_units[NDURATION_UNITS - 1];
    while (ms && u > duration_units && ms % u->factor != 0)
        u--;
    if (ms == 0)
        snprintf(buf, len, "0");
    else
        snprintf(buf, len, "%llu%s", (unsigned long long)(ms / u->factor), u->name);
}

void units_format_time(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char day[24];
    gmtime_r(&t, &tm);
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", day, (int)(ms % 1000));
}

/* A magnitude as one or two units, compact ("4m12s") or spaced ("4 min 12 s"). */
static void span_words(uint64_t a, int spaced, char *buf, size_t len)
{
    static const char *const names[2][5] = {
        {"ms", "s", "m", "h", "d"}, {" ms", " s", " min", " h", " d"},
    };
    const char *const *n = names[spaced != 0];
    const char *sp = spaced ? " " : "";
    unsigned long long s = a / 1000, m = s / 60, h = m / 60, d = h / 24;
    if (a < 1000)
        snprintf(buf, len, "%llu%s", (unsigned long long)a, n[0]);
    else if (s < 60)
        snprintf(buf, len, "%llu%s", s, n[1]);
    else if (m < 60)
        snprintf(buf, len, "%llu%s%s%02llu%s", m, n[2], sp, s % 60, n[1]);
    else if (h < 24)
        snprintf(buf, len, "%llu%s%s%02llu%s", h, n[3], sp, m % 60, n[2]);
    else
        snprintf(buf, len, "%llu%s%s%02llu%s", d, n[4], sp, h % 24, n[3]);
}

static uint64_t magnitude(int64_t ms)
{
    return ms < 0 ? (uint64_t)(-(ms + 1)) + 1 : (uint64_t)ms;
}

void units_format_span(int64_t ms, char *buf, size_t len)
{
    char words[48];
    span_words(magnitude(ms), 0, words, sizeof words);
    snprintf(buf, len, "%s%s", ms < 0 ? "-" : "", words);
}

void units_format_relative(int64_t ms, char *buf, size_t len)
{
    char words[48];
    span_words(magnitude(ms), 1, words, sizeof words);
    snprintf(buf, len, ms < 0 ? "%s ago" : "in %s", words);
}

struct timeval units_ms_timeval(int64_t ms)
{
    ms = ms > 0 ? ms : 0;
    return (struct timeval){.tv_sec = (time_t)(ms / 1000),
                            .tv_usec = (suseconds_t)(ms % 1000) * 1000};
}
