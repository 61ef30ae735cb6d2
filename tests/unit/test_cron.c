/* Cron expressions (src/common/cron.c): the next runs of a table of expressions, worked out
 * by hand (UTC, lists, ranges, steps, names, the day-of-month/day-of-week OR rule, leap days,
 * the 31st, daylight saving in Europe/Berlin, America/New_York, Australia/Lord_Howe and
 * Pacific/Apia), the parser's refusals word for word, strictly increasing runs over a year,
 * and the runs around real transitions against an oracle built on glibc's localtime_r. */
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "cron.h"

/* "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DD" as UTC seconds, by glibc. */
static int64_t utc(const char *s)
{
    struct tm tm = {0};
    const char *end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
    if (!end) {
        memset(&tm, 0, sizeof tm);
        end = strptime(s, "%Y-%m-%d", &tm);
    }
    if (!end || *end) {
        fprintf(stderr, "bad date in test: %s\n", s);
        exit(2);
    }
    return (int64_t)timegm(&tm);
}

static void show_utc(int64_t t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static struct tzone *zone(const char *name)
{
    static struct {
        const char *name;
        struct tzone *tz;
    } cache[16];
    for (int i = 0; i < 16; i++) {
        if (cache[i].name && strcmp(cache[i].name, name) == 0)
            return cache[i].tz;
        if (!cache[i].name) {
            char err[256];
            if (tzone_load(name, &cache[i].tz, err, sizeof err) < 0) {
                fprintf(stderr, "%s\n", err);
                exit(2);
            }
            cache[i].name = name;
            return cache[i].tz;
        }
    }
    exit(2);
}

struct run_case {
    const char *expr, *zone, *after; /* after: UTC */
    const char *next[10];             /* UTC, in order */
};

/* Local times in the comments. */
static const struct run_case cases[] = {
    {"* * * * *", "UTC", "2026-01-01 00:00:00", {"2026-01-01 00:01:00", "2026-01-01 00:02:00"}},
    {"* * * * *", "UTC", "2026-01-01 00:00:30", {"2026-01-01 00:01:00"}},
    {"* * * * *", "UTC", "2026-12-31 23:59:59", {"2027-01-01 00:00:00"}},
    {"0 0 1 1 *", "UTC", "2026-06-15 12:00:00", {"2027-01-01", "2028-01-01"}},
    {"59 23 31 12 *", "UTC", "2026-01-01", {"2026-12-31 23:59:00", "2027-12-31 23:59:00"}},
    /* 2026-01-02 is a Friday, the 5th a Monday */
    {"*/15 9-17 * * mon-fri", "UTC", "2026-01-02 17:44:59",
     {"2026-01-02 17:45:00", "2026-01-05 09:00:00", "2026-01-05 09:15:00"}},
    {"5,10-12,50-59/3 * * * *", "UTC", "2026-01-01",
     {"2026-01-01 00:05:00", "2026-01-01 00:10:00", "2026-01-01 00:11:00", "2026-01-01 00:12:00",
      "2026-01-01 00:50:00", "2026-01-01 00:53:00", "2026-01-01 00:56:00", "2026-01-01 00:59:00",
      "2026-01-01 01:05:00"}},
    {"10/20 * * * *", "UTC", "2026-01-01",
     {"2026-01-01 00:10:00", "2026-01-01 00:30:00", "2026-01-01 00:50:00", "2026-01-01 01:10:00"}},
    {"0 22 * * 1/2", "UTC", "2026-01-01", /* Mon, Wed, Fri and (7) Sun */
     {"2026-01-02 22:00:00", "2026-01-04 22:00:00", "2026-01-05 22:00:00",
      "2026-01-07 22:00:00"}},
    {"30 4 1,15 * *", "UTC", "2026-02-01 04:30:00", {"2026-02-15 04:30:00", "2026-03-01 04:30:00"}},
    {"0 12 * jan,jul sun", "UTC", "2026-01-25 12:00:00",
     {"2026-07-05 12:00:00", "2026-07-12 12:00:00"}},
    {"0 0 1 JAN-Mar *", "UTC", "2026-01-01", {"2026-02-01", "2026-03-01", "2027-01-01"}},
    {"0 0 * * Sat,SUN", "UTC", "2026-01-01", {"2026-01-03", "2026-01-04", "2026-01-10"}},
    /* both restricted: the 13th or a Friday; one of them '*': both */
    {"0 0 13 * fri", "UTC", "2026-01-01", {"2026-01-02", "2026-01-09", "2026-01-13", "2026-01-16"}},
    {"0 0 13 * *", "UTC", "2026-01-01", {"2026-01-13", "2026-02-13"}},
    {"0 0 */10 * 1", "UTC", "2026-01-01", {"2026-05-11", "2026-06-01"}}, /* 1,11,21,31 and Monday */
    /* the 1st if a Sunday, Wednesday or Saturday */
    {"0 0 1 * */3", "UTC", "2026-01-01", {"2026-02-01", "2026-03-01", "2026-04-01"}},
    {"0 0 * * 7", "UTC", "2026-01-01", {"2026-01-04", "2026-01-11"}},
    {"0 0 * * 5-7", "UTC", "2026-01-01", {"2026-01-02", "2026-01-03", "2026-01-04", "2026-01-09"}},
    {"0 0 29 2 *", "UTC", "2026-01-01", {"2028-02-29", "2032-02-29", "2036-02-29"}},
    {"0 0 29 2 *", "UTC", "2096-03-01", {"2104-02-29"}}, /* 2100 is no leap year */
    {"0 0 31 * *", "UTC", "2026-01-31",
     {"2026-03-31", "2026-05-31", "2026-07-31", "2026-08-31", "2026-10-31", "2026-12-31",
      "2027-01-31"}},
    {"0 0 30 * *", "UTC", "2026-01-30", {"2026-03-30", "2026-04-30"}},
    {"  0\t12   * *  *  ", "UTC", "2026-01-01", {"2026-01-01 12:00:00"}},
    {"@yearly", "UTC", "2026-03-01", {"2027-01-01", "2028-01-01"}},
    {"@annually", "UTC", "2026-03-01", {"2027-01-01"}},
    {"@monthly", "UTC", "2026-01-15", {"2026-02-01", "2026-03-01"}},
    {"@weekly", "UTC", "2026-01-01", {"2026-01-04", "2026-01-11"}},
    {"@daily", "UTC", "2026-01-01", {"2026-01-02", "2026-01-03"}},
    {"@MIDNIGHT", "UTC", "2026-01-01 12:00:00", {"2026-01-02"}},
    {"@hourly", "UTC", "2026-01-01 00:59:59", {"2026-01-01 01:00:00", "2026-01-01 02:00:00"}},

    /* Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z); 2026-10-25 03:00 CEST ->
     * 02:00 CET (01:00Z). 02:30 on 03-29 does not exist: 03:00 CEST, once. */
    {"30 2 * * *", "Europe/Berlin", "2026-03-27 12:00:00",
     {"2026-03-28 01:30:00", "2026-03-29 01:00:00", "2026-03-30 00:30:00"}},
    /* 02:30 twice on 10-25: the CEST one only */
    {"30 2 * * *", "Europe/Berlin", "2026-10-24 12:00:00",
     {"2026-10-25 00:30:00", "2026-10-26 01:30:00"}},
    {"30 2 * * *", "Europe/Berlin", "2026-10-25 00:30:00", {"2026-10-26 01:30:00"}},
    {"0 3 * * *", "Europe/Berlin", "2026-03-27 12:00:00",
     {"2026-03-28 02:00:00", "2026-03-29 01:00:00", "2026-03-30 01:00:00"}},
    {"0 3 * * *", "Europe/Berlin", "2026-10-24 00:00:00",
     {"2026-10-24 01:00:00", "2026-10-25 02:00:00", "2026-10-26 02:00:00"}},
    /* 01:45 CET, then 02:00-02:45 and 03:00 are one run at 03:00 CEST */
    {"*/15 * * * *", "Europe/Berlin", "2026-03-29 00:30:00",
     {"2026-03-29 00:45:00", "2026-03-29 01:00:00", "2026-03-29 01:15:00", "2026-03-29 01:30:00"}},
    /* 02:45 CEST, then no second 02:xx: 03:00 CET */
    {"*/15 * * * *", "Europe/Berlin", "2026-10-25 00:30:00",
     {"2026-10-25 00:45:00", "2026-10-25 02:00:00", "2026-10-25 02:15:00"}},
    {"*/15 * * * *", "Europe/Berlin", "2026-10-25 01:10:00", {"2026-10-25 02:00:00"}},
    {"0 * * * *", "Europe/Berlin", "2026-03-29 00:00:00",
     {"2026-03-29 01:00:00", "2026-03-29 02:00:00"}},
    {"0 * * * *", "Europe/Berlin", "2026-10-24 23:30:00",
     {"2026-10-25 00:00:00", "2026-10-25 02:00:00", "2026-10-25 03:00:00"}},
    {"@hourly", "Europe/Berlin", "2026-10-24 23:30:00",
     {"2026-10-25 00:00:00", "2026-10-25 02:00:00", "2026-10-25 03:00:00"}},
    {"@daily", "Europe/Berlin", "2026-03-28 12:00:00",
     {"2026-03-28 23:00:00", "2026-03-29 22:00:00"}},
    {"@weekly", "Europe/Berlin", "2026-10-20", {"2026-10-24 22:00:00", "2026-10-31 23:00:00"}},
    {"@monthly", "Europe/Berlin", "2026-03-15", {"2026-03-31 22:00:00", "2026-04-30 22:00:00"}},
    {"@yearly", "Europe/Berlin", "2026-06-01", {"2026-12-31 23:00:00"}},

    /* America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT
     * -> 01:00 EST (06:00Z), 01:00-01:59 twice. */
    {"30 2 * * *", "America/New_York", "2026-03-06 12:00:00",
     {"2026-03-07 07:30:00", "2026-03-08 07:00:00", "2026-03-09 06:30:00"}},
    {"30 2 * * *", "America/New_York", "2026-10-31",
     {"2026-10-31 06:30:00", "2026-11-01 07:30:00", "2026-11-02 07:30:00"}},
    {"0 3 * * *", "America/New_York", "2026-03-06 12:00:00",
     {"2026-03-07 08:00:00", "2026-03-08 07:00:00", "2026-03-09 07:00:00"}},
    {"0 3 * * *", "America/New_York", "2026-10-31", {"2026-10-31 07:00:00", "2026-11-01 08:00:00"}},
    {"*/15 * * * *", "America/New_York", "2026-03-08 06:30:00",
     {"2026-03-08 06:45:00", "2026-03-08 07:00:00", "2026-03-08 07:15:00"}},
    {"*/15 * * * *", "America/New_York", "2026-11-01 05:30:00",
     {"2026-11-01 05:45:00", "2026-11-01 07:00:00", "2026-11-01 07:15:00"}},
    {"0 1 * * *", "America/New_York", "2026-10-31 12:00:00",
     {"2026-11-01 05:00:00", "2026-11-02 06:00:00"}},
    {"0 * * * *", "America/New_York", "2026-11-01 04:30:00",
     {"2026-11-01 05:00:00", "2026-11-01 07:00:00", "2026-11-01 08:00:00"}},
    {"0 * * * *", "America/New_York", "2026-03-08 06:30:00",
     {"2026-03-08 07:00:00", "2026-03-08 08:00:00"}},
    {"@daily", "America/New_York", "2026-03-07 12:00:00",
     {"2026-03-08 05:00:00", "2026-03-09 04:00:00"}},

    /* Australia/Lord_Howe, half-hour DST: 2026-10-04 02:00 +1030 -> 02:30 +11 (10-03
     * 15:30Z); 2026-04-05 02:00 +11 -> 01:30 +1030 (04-04 15:00Z). */
    {"15 2 * * *", "Australia/Lord_Howe", "2026-10-02 12:00:00",
     {"2026-10-02 15:45:00", "2026-10-03 15:30:00", "2026-10-04 15:15:00"}},
    {"45 1 * * *", "Australia/Lord_Howe", "2026-04-04 12:00:00",
     {"2026-04-04 14:45:00", "2026-04-05 15:15:00"}},
    /* Pacific/Apia skipped 2011-12-30: -10 until 12-30 10:00Z, then +14 */
    {"0 12 * * *", "Pacific/Apia", "2011-12-29 12:00:00",
     {"2011-12-29 22:00:00", "2011-12-30 10:00:00", "2011-12-30 22:00:00"}},
};

static void run_cases(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct run_case *c = &cases[i];
        struct cron_expr e;
        char err[CRON_ERR_MAX];
        if (cron_parse(c->expr, &e, err, sizeof err) < 0) {
            CHECK(!"parse");
            fprintf(stderr, "'%s': %s\n", c->expr, err);
            continue;
        }
        int64_t t = utc(c->after), n;
        for (int k = 0; k < 10 && c->next[k]; k++) {
            int rc = cron_next(&e, zone(c->zone), t, &n);
            int64_t want = utc(c->next[k]);
            check_count++;
            if (rc != 0 || n != want) {
                char got[32], from[32];
                show_utc(rc ? 0 : n, got, sizeof got);
                show_utc(t, from, sizeof from);
                fprintf(stderr, "'%s' in %s after %sZ: got %s (rc %d), expected %s\n", c->expr,
                        c->zone, from, rc ? "none" : got, rc, c->next[k]);
                check_failures++;
                break;
            }
            t = n;
        }
    }
}

static const struct {
    const char *text, *err;
} refusals[] = {
    {"", "empty expression"},
    {" \t ", "empty expression"},
    {"* * * *", "4 fields, expected 5: minute hour day-of-month month day-of-week (or a "
                "shorthand such as @daily)"},
    {"* * * * * *", "6 fields, expected 5: minute hour day-of-month month day-of-week (or a "
                    "shorthand such as @daily)"},
    {"60 * * * *", "minute: 60 is out of 0-59"},
    {"* 24 * * *", "hour: 24 is out of 0-23"},
    {"0 0 32 * *", "day-of-month: 32 is out of 1-31"},
    {"0 0 0 * *", "day-of-month: 0 is out of 1-31"},
    {"0 0 * 13 *", "month: 13 is out of 1-12"},
    {"0 0 * 0 *", "month: 0 is out of 1-12"},
    {"0 0 * * 8", "day-of-week: 8 is out of 0-7"},
    {"0 0 1-32 * *", "day-of-month: 32 is out of 1-31"},
    {"99999999999999999999 * * * *", "minute: 99999999999999999999 is out of 0-59"},
    {"0 0 * foo *", "month: 'foo' is not a number or a month name (jan-dec)"},
    {"0 0 * * xyz", "day-of-week: 'xyz' is not a number or a weekday name (sun-sat)"},
    {"0 0 * * monday", "day-of-week: 'monday' is not a number or a weekday name (sun-sat)"},
    {"0 0 * * jan", "day-of-week: 'jan' is not a number or a weekday name (sun-sat)"},
    {"0 jan * * *", "hour: 'jan' is not a number"},
    {"x * * * *", "minute: 'x' is not a number"},
    {"1.5 * * * *", "minute: '1.5' is not a number"},
    {"\x01 * * * *", "minute: '?' is not a number"},
    {"*-5 * * * *", "minute: '*' is not a number"},
    {"? * * * *", "minute: '?' is not a number"},
    {"30-10 * * * *", "minute: range 30-10 goes backwards"},
    {"0 0 * * fri-mon", "day-of-week: range fri-mon goes backwards"},
    {"5- * * * *", "minute: a value is missing"},
    {"-5 * * * *", "minute: a value is missing"},
    {"1-2-3 * * * *", "minute: '2-3' is not a number"},
    {"*/0 * * * *", "minute: step 0 is out of 1-60"},
    {"*/61 * * * *", "minute: step 61 is out of 1-60"},
    {"0 0 * * */8", "day-of-week: step 8 is out of 1-7"},
    {"*/x * * * *", "minute: step 'x' is not a number"},
    {"*/ * * * *", "minute: step '' is not a number"},
    {"*/2/3 * * * *", "minute: step '2/3' is not a number"},
    {"1,,2 * * * *", "minute: empty list item in '1,,2'"},
    {"1, * * * *", "minute: empty list item in '1,'"},
    {", * * * *", "minute: empty list item in ','"},
    {"@reboot", "@reboot is not supported: a schedule needs times to run at"},
    {"@every 5m", "unknown shorthand '@every' (known: @yearly, @annually, @monthly, @weekly, "
                  "@daily, @midnight, @hourly)"},
    {"@", "unknown shorthand '@' (known: @yearly, @annually, @monthly, @weekly, @daily, "
          "@midnight, @hourly)"},
    {"@daily 5", "@daily: nothing may follow a shorthand"},
    {"0 0 30 2 *", "never runs: day-of-month '30' does not occur in month '2'"},
    {"0 0 31 4,6 *", "never runs: day-of-month '31' does not occur in month '4,6'"},
    {"0 0 30-31 feb *", "never runs: day-of-month '30-31' does not occur in month 'feb'"},
    {"0 0 31 apr,jun,sep,nov */2", "never runs: day-of-month '31' does not occur in month "
                                   "'apr,jun,sep,nov'"},
};

static void parse_errors(void)
{
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        struct cron_expr e;
        char err[CRON_ERR_MAX] = "";
        CHECK(cron_parse(refusals[i].text, &e, err, sizeof err) == -1);
        CHECK_STR(err, refusals[i].err);
    }
    /* a long token is cut in the message; a short buffer truncates, no buffer is fine */
    struct cron_expr e;
    char err[CRON_ERR_MAX], small[8];
    CHECK(cron_parse("0 0 * * abcdefghijklmnopqrstuvwxyzabcdefghijklmnop", &e, err,
                     sizeof err) == -1);
    CHECK_STR(err, "day-of-week: 'abcdefghijklmnopqrstuvwxyzabcdef...' is not a number or a "
                   "weekday name (sun-sat)");
    CHECK(cron_parse("60 * * * *", &e, small, sizeof small) == -1);
    CHECK_STR(small, "minute:");
    CHECK(cron_parse("60 * * * *", &e, NULL, 0) == -1);
}

static void parsed_fields(void)
{
    struct cron_expr e;
    char err[CRON_ERR_MAX];
    CHECK(cron_parse("* * * * *", &e, err, sizeof err) == 0);
    CHECK(e.minutes == (UINT64_C(1) << 60) - 1 && e.hours == 0xffffff && e.doms == 0xfffffffe);
    CHECK(e.months == 0x1ffe && e.dows == 0x7f && e.dom_star && e.dow_star);
    CHECK(cron_parse("0 0 * * 7", &e, err, sizeof err) == 0 && e.dows == 1);
    CHECK(cron_parse("0 0 * * 0-7", &e, err, sizeof err) == 0 && e.dows == 0x7f);
    CHECK(cron_parse("0 0 * * 1/2", &e, err, sizeof err) == 0 && e.dows == 0x2b);
    CHECK(cron_parse("0 0 * * MON-fri", &e, err, sizeof err) == 0 && e.dows == 0x3e);
    CHECK(cron_parse("0 0 */2 * 1", &e, err, sizeof err) == 0 && e.dom_star && !e.dow_star);
    CHECK(cron_parse("0 0 1 * 1", &e, err, sizeof err) == 0 && !e.dom_star && !e.dow_star);
    CHECK(cron_parse("0 0 1 * *,1", &e, err, sizeof err) == 0 && e.dow_star);
    CHECK(cron_parse("7 8-10/2 1,31 dec *", &e, err, sizeof err) == 0);
    CHECK(e.minutes == 1u << 7 && e.hours == (1u << 8 | 1u << 10) && e.months == 1u << 12);
    CHECK(e.doms == (1u << 1 | 1u << 31));
    CHECK(cron_parse("0 0 31 2 mon", &e, err, sizeof err) == 0); /* Mondays in February */
    CHECK(cron_parse("0 0 29 2 *", &e, err, sizeof err) == 0);
    CHECK(cron_parse("0 0 31 1-12 *", &e, err, sizeof err) == 0);
    CHECK(cron_parse("@DAILY", &e, err, sizeof err) == 0 && e.minutes == 1 && e.hours == 1);
    CHECK(cron_parse("  @weekly  ", &e, err, sizeof err) == 0 && e.dows == 1 && e.dom_star &&
          !e.dow_star);
}

/* No run: an expression made by hand that matches nothing, AFTER out of range. */
static void never(void)
{
    struct cron_expr e;
    int64_t n = 42;
    char err[CRON_ERR_MAX];
    CHECK(cron_parse("* * * * *", &e, err, sizeof err) == 0);
    CHECK(cron_next(&e, zone("UTC"), CRON_T_MAX + 1, &n) == -1 && n == 42);
    CHECK(cron_next(&e, zone("UTC"), INT64_MIN, &n) == -1 && n == 42);
    CHECK(cron_next(&e, zone("UTC"), CRON_T_MAX - 60, &n) == 0 && n == CRON_T_MAX - 59);
    CHECK(cron_next(&e, zone("Europe/Berlin"), CRON_T_MIN, &n) == 0);
    struct cron_expr none = e;
    none.months = 0;
    CHECK(cron_next(&none, zone("Europe/Berlin"), utc("2026-01-01"), &n) == -1);
    none = e;
    none.doms = 1u << 31, none.months = 1u << 2, none.dow_star = 1; /* 31 February */
    CHECK(cron_next(&none, zone("UTC"), utc("2026-01-01"), &n) == -1);
    none = (struct cron_expr){0};
    CHECK(cron_next(&none, zone("UTC"), utc("2026-01-01"), &n) == -1);
    none = (struct cron_expr){.minutes = ~UINT64_C(0) << 60, .hours = ~0u, .doms = ~0u,
                              .months = 0xffff, .dows = 0xff};
    CHECK(cron_next(&none, zone("UTC"), utc("2026-01-01"), &n) == -1);
    /* the 29th of February on a Monday, both restricted (the OR rule) and ANDed ('*' in
     * day-of-month is not the case here: "29" and "*" for weekdays) */
    CHECK(cron_parse("0 0 29 2 *", &e, err, sizeof err) == 0);
    CHECK(cron_next(&e, zone("UTC"), utc("2097-01-01"), &n) == 0 && n == utc("2104-02-29"));
}

/* A year of every seventh minute in Berlin: strictly increasing, all on matching wall
 * minutes, 9 a hour, except the spring hour that does not exist (its runs are the one at
 * 03:00 CEST) and the autumn hour that runs once: 365 * 24 * 9 - 9 = 78831. */
static void year_of_sevens(void)
{
    struct cron_expr e;
    char err[CRON_ERR_MAX];
    const struct tzone *tz = zone("Europe/Berlin");
    CHECK(cron_parse("*/7 * * * *", &e, err, sizeof err) == 0);
    int64_t t = utc("2025-12-31 22:59:59"), end = utc("2026-12-31 23:00:00"), n;
    int runs = 0, ok = 1, long_gaps = 0;
    while (cron_next(&e, tz, t, &n) == 0 && n < end) {
        int64_t wall = n + tzone_offset(tz, n, NULL);
        ok &= n > t && wall % 60 == 0 && wall / 60 % 60 % 7 == 0;
        if (runs && n - t > 7 * 60) {
            long_gaps++;
            ok &= n - t == 64 * 60 && n == utc("2026-10-25 02:00:00");
        }
        runs++;
        t = n;
    }
    CHECK(ok && long_gaps == 1);
    CHECK(runs == 78831);
    if (runs != 78831)
        fprintf(stderr, "*/7 in Berlin, 2026: %d runs\n", runs);
}

/* ---- an oracle: runs found by walking every UTC minute with glibc's localtime_r ---- */

static int matches(const struct cron_expr *e, int64_t wall)
{
    time_t tt = (time_t)wall;
    struct tm tm;
    gmtime_r(&tt, &tm);
    int dom = e->doms >> tm.tm_mday & 1, dow = e->dows >> tm.tm_wday & 1;
    int day = e->dom_star || e->dow_star ? dom && dow : dom || dow;
    return day && (e->minutes >> tm.tm_min & 1) && (e->hours >> tm.tm_hour & 1) &&
           (e->months >> (tm.tm_mon + 1) & 1);
}

static int64_t glibc_wall(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    localtime_r(&tt, &tm);
    return t + tm.tm_gmtoff;
}

/* From FROM to TO (UTC minutes; the zone's offsets whole minutes): minute T is a run if a
 * matching wall minute lies above every wall time shown before T and at or below T's. */
static void oracle(const char *expr, const char *zname, const char *from, const char *to)
{
    struct cron_expr e;
    char err[CRON_ERR_MAX], env[64];
    CHECK(cron_parse(expr, &e, err, sizeof err) == 0);
    snprintf(env, sizeof env, ":%s", zname);
    setenv("TZ", env, 1);
    tzset();
    const struct tzone *tz = zone(zname);
    int64_t t0 = utc(from), t1 = utc(to), high = glibc_wall(t0), at = t0, n;
    int ok = 1, runs = 0;
    for (int64_t t = t0 + 60; t <= t1 && ok; t += 60) {
        int64_t wall = glibc_wall(t), w = (high + 60) / 60 * 60; /* the first minute above */
        int run = 0;
        for (; w <= wall && !run; w += 60)
            run = matches(&e, w);
        if (wall > high)
            high = wall;
        if (!run)
            continue;
        runs++;
        ok = cron_next(&e, tz, at, &n) == 0 && n == t;
        if (!ok) {
            char a[32], b[32];
            show_utc(t, a, sizeof a);
            show_utc(n, b, sizeof b);
            fprintf(stderr, "'%s' in %s: the oracle runs at %sZ, cron_next gives %sZ\n", expr,
                    zname, a, b);
        }
        at = t;
    }
    CHECK(ok && runs > 0);
}

static void against_oracle(void)
{
    static const char *const exprs[] = {"*/15 * * * *", "30 2 * * *", "0 3 * * *",
                                        "0 * * * *", "5 0-3 * * *", "* 1-3 * * *",
                                        "0 0 * * *", "50 23 * * *"};
    static const struct {
        const char *zone, *from, *to;
    } windows[] = {
        {"Europe/Berlin", "2026-03-28", "2026-03-30"},
        {"Europe/Berlin", "2026-10-24", "2026-10-26"},
        {"America/New_York", "2026-03-07", "2026-03-09"},
        {"America/New_York", "2026-10-31", "2026-11-02"},
        {"Australia/Lord_Howe", "2026-04-03", "2026-04-06"},
        {"Australia/Lord_Howe", "2026-10-02", "2026-10-05"},
        {"Pacific/Apia", "2011-12-28", "2012-01-01"},
        {"Pacific/Chatham", "2026-04-03", "2026-04-06"},
        {"America/St_Johns", "2026-11-01", "2026-11-02"},
        {"Europe/Dublin", "2026-10-24", "2026-10-26"},
        {"Africa/Casablanca", "2026-02-14", "2026-02-16"},
        {"Africa/Casablanca", "2026-03-21", "2026-03-23"},
        {"America/Sao_Paulo", "2019-02-16", "2019-02-18"},
    };
    for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
        for (size_t x = 0; x < sizeof exprs / sizeof exprs[0]; x++)
            oracle(exprs[x], windows[w].zone, windows[w].from, windows[w].to);
    unsetenv("TZ");
}

/* What must stay quick: a leap-day schedule, and every minute. */
static void quick(void)
{
    struct cron_expr e;
    char err[CRON_ERR_MAX];
    int64_t n, t = utc("2026-01-01");
    int ok = 1;
    CHECK(cron_parse("0 0 29 2 *", &e, err, sizeof err) == 0);
    for (int i = 0; i < 2000; i++)
        ok &= cron_next(&e, zone("Europe/Berlin"), t + i * 86400, &n) == 0 && n > t;
    CHECK(cron_parse("* * * * *", &e, err, sizeof err) == 0);
    for (int i = 0; i < 100000; i++, t = n)
        ok &= cron_next(&e, zone("America/New_York"), t, &n) == 0 && n == t / 60 * 60 + 60;
    CHECK(ok);
}

int main(void)
{
    run_cases();
    parse_errors();
    parsed_fields();
    never();
    year_of_sevens();
    against_oracle();
    quick();
    return check_report("test_cron");
}
