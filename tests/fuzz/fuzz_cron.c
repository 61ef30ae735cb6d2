/* libFuzzer harness: cron expressions (src/common/cron.c) from arbitrary bytes. A refused
 * text says why on one line and leaves the expression zeroed; an accepted one parses again
 * to the same fields, and its next runs in UTC and Europe/Berlin (from an instant the input
 * picks, and from just before Berlin's 2026 changes) exist, strictly increase and fall on
 * wall times it matches, or on the end of a gap that skipped one. Any difference: abort(). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "fuzz.h"

#define YEAR_MAX (366 * 86400LL)

/* Loaded once for the whole run; still reachable at exit, so not a leak. */
static struct tzone *zones[2];

static void load_zones(void)
{
    char err[256];
    if (zones[0])
        return;
    if (tzone_load("UTC", &zones[0], err, sizeof err) < 0 ||
        tzone_load("Europe/Berlin", &zones[1], err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
}

/* E at local wall time WALL, from the calendar of tzone.h rather than cron.c's walk. */
static int wall_matches(const struct cron_expr *e, int64_t wall)
{
    int64_t days = wall / 86400 - (wall % 86400 < 0), sod = wall - days * 86400, y;
    unsigned m, d;
    tzone_civil_from_days(days, &y, &m, &d);
    int dom = e->doms >> d & 1, dow = e->dows >> tzone_weekday(days) & 1;
    int day = e->dom_star || e->dow_star ? dom && dow : dom || dow;
    return sod % 60 == 0 && day && (e->months >> m & 1) && (e->hours >> (sod / 3600) & 1) &&
           (e->minutes >> (sod / 60 % 60) & 1);
}

static void runs(const struct cron_expr *e, const struct tzone *tz, int64_t after)
{
    for (int i = 0; i < 4; i++) {
        int64_t n;
        CHECK(cron_next(e, tz, after, &n) == 0);
        CHECK(n > after && n - after <= CRON_HORIZON_YEARS * YEAR_MAX);
        int32_t off = tzone_offset(tz, n, NULL);
        CHECK(wall_matches(e, n + off) || tzone_offset(tz, n - 1, NULL) < off);
        after = n;
    }
}

static void refused(const struct cron_expr *e, const char *err)
{
    static const struct cron_expr zero;
    CHECK(err[0] && !strchr(err, '\n') && memcmp(e, &zero, sizeof zero) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), err[CRON_ERR_MAX] = "";
    struct cron_expr e, again;
    CHECK(text);
    memcpy(text, data, size);
    text[size] = '\0';
    load_zones();
    if (cron_parse(text, &e, err, sizeof err) < 0) {
        refused(&e, err);
        free(text);
        return 0;
    }
    CHECK(cron_parse(text, &again, err, sizeof err) == 0 && memcmp(&e, &again, sizeof e) == 0);
    CHECK(e.minutes && e.minutes >> 60 == 0 && e.hours && e.hours >> 24 == 0);
    CHECK(e.doms && (e.doms & 1) == 0 && e.months && (e.months & 0xe001) == 0);
    CHECK(e.dows && e.dows >> 7 == 0);
    uint64_t h = 1469598103934665603ULL; /* FNV-1a of the input picks the first start */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    int64_t start = (int64_t)(h % (130 * 365 * 86400ULL)); /* 1970 to 2100 */
    for (int z = 0; z < 2; z++) {
        runs(&e, zones[z], start);
        runs(&e, zones[z], 1774738800); /* 2026-03-28 23:00Z */
        runs(&e, zones[z], 1792882800); /* 2026-10-24 23:00Z */
    }
    free(text);
    return 0;
}
