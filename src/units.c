#include "units.h"

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

int units_parse_duration_ms(const char *s, uint64_t *out_ms)
{
    static const struct unit units[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}, {NULL, 0},
    };
    if (s == NULL)
        return -1;
    return parse_with_units(s, units, 1, out_ms);
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
