/* Five-field cron expressions and their next run in a time zone (issue 21; the syntax is
 * docs/schedules.md, "Cron expressions"). Pure logic, no allocation, no global state.
 *
 *   minute hour day-of-month month day-of-week, separated by blanks (spaces, tabs)
 *   each field: *, n, a-b, each of these with a step /s (a/s = a-max/s), comma lists;
 *   months jan-dec, weekdays sun-sat (any case, also in ranges); weekday 7 = Sunday;
 *   @yearly @annually @monthly @weekly @daily @midnight @hourly (@reboot is refused).
 *
 * Day-of-month and day-of-week (Vixie cron): when both are restricted (neither field starts
 * with '*'), a day matches if either does; otherwise both must.
 *
 * Daylight saving, the contract of cron_next (docs/schedules.md, "Time zones and daylight
 * saving"):
 *  - A matching wall time that does not exist, skipped by a forward change (02:30 on the
 *    day Europe/Berlin springs forward), runs once at the first instant after the gap
 *    (03:00 local, 01:00Z). All the matching wall times inside one gap, and the wall time
 *    the gap ends at if it matches too, are that one occurrence.
 *  - A wall time that exists twice (a backward change) matches once, at its first instant
 *    (the daylight one): "30 2 * * *" runs once that day, and "0/15 * * * *" does not run
 *    in the repeated hour's second pass.
 * So each wall time W maps to instant(W) (tzone_instant), which never decreases as W grows,
 * and the runs of an expression are strictly increasing instants. */
#ifndef DEFERD_CRON_H
#define DEFERD_CRON_H

#include <stddef.h>
#include <stdint.h>

#include "tzone.h"

/* How far cron_next looks: no run within this many years of AFTER is "never". */
#define CRON_HORIZON_YEARS 50
/* AFTER must be within years 1 to 9999 (UTC); beyond, cron_next finds nothing. */
#define CRON_T_MIN INT64_C(-62135596800)
#define CRON_T_MAX INT64_C(253402300799)

/* Bit i set = value i matches: minutes 0-59, hours 0-23, days of the month 1-31, months
 * 1-12, weekdays 0-6 (Sunday 0; a 7 in the text sets bit 0). DOM_STAR and DOW_STAR: that
 * field's text starts with '*' (the OR rule above). */
struct cron_expr {
    uint64_t minutes;
    uint32_t hours;
    uint32_t doms;
    uint16_t months;
    uint8_t dows;
    unsigned char dom_star, dow_star;
};

#define CRON_ERR_MAX 160

/* 0 and *OUT, or -1 with the reason in ERR (e.g. "day-of-month: 32 is out of 1-31"): the
 * field, the token, the range. An expression that can never run is refused too. */
int cron_parse(const char *text, struct cron_expr *out, char *err, size_t errlen);
/* The first instant (UTC second) strictly after AFTER whose local wall time in TZ matches
 * E, in *NEXT, and 0; -1 if there is none within CRON_HORIZON_YEARS (or AFTER is out of
 * range). */
int cron_next(const struct cron_expr *e, const struct tzone *tz, int64_t after, int64_t *next);

#endif
