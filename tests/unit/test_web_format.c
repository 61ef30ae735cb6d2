/* The dashboard's durations and rates for people (src/daemon/web/web_format.c): the unit
 * each range gets and where rounding moves a figure into the next one. app.js mirrors these
 * rules; integration.web_actions compares the two on the same figures in chromium. */
#include "check.h"
#include "web_format.h"

/* FORMAT(V) is WANT. */
static void formats(void (*format)(double, char *, size_t), double v, const char *want)
{
    char buf[48];
    format(v, buf, sizeof buf);
    if (strcmp(buf, want) != 0)
        fprintf(stderr, "%s %.6f: ", format == web_format_rate ? "rate" : "duration", v);
    CHECK_STR(buf, want);
}

#define duration_is(ms, want) formats(web_format_duration, ms, want)
#define rate_is(per_s, want) formats(web_format_rate, per_s, want)

int main(void)
{
    duration_is(0, "0 ms");
    duration_is(0.0004, "0 ms");
    duration_is(0.049, "0 ms"); /* not "0.0 ms" */
    duration_is(0.4, "0.4 ms");
    duration_is(0.05, "0.1 ms"); /* half up */
    duration_is(3.25, "3.3 ms");
    duration_is(9.949, "9.9 ms");
    duration_is(9.95, "10 ms"); /* tenths end below 10 ms */
    duration_is(850, "850 ms");
    duration_is(999.499, "999 ms");
    duration_is(999.5, "1.0 s");
    duration_is(19525.899, "19.5 s"); /* issue 38's figure */
    duration_is(59949, "59.9 s");
    duration_is(59950, "1 min 00 s");
    duration_is(303500, "5 min 04 s");
    duration_is(3599499, "59 min 59 s");
    duration_is(3599500, "1 h 00 min");
    duration_is(11100000, "3 h 05 min");
    duration_is(86400000, "1 d 00 h");
    duration_is(187200000, "2 d 04 h");
    duration_is(-1500, "-1.5 s");
    duration_is(-0.0001, "0 ms"); /* no "-0" */
    duration_is(1e300, "-");
    duration_is(0.0 / 0.0, "-");

    rate_is(0, "0/s");
    rate_is(0.004, "<0.01/s");
    rate_is(0.005, "0.01/s");
    rate_is(1.0 / 60, "0.02/s"); /* one a minute */
    rate_is(0.35, "0.35/s");     /* issue 38's figure, "0.350" before */
    rate_is(0.3, "0.3/s");
    rate_is(2, "2/s");
    rate_is(9.994, "9.99/s");
    rate_is(9.995, "10/s");
    rate_is(12.5, "12.5/s");
    rate_is(99.94, "99.9/s");
    rate_is(99.95, "100/s");
    rate_is(1234.567, "1235/s");
    rate_is(-1, "-");
    return check_report("test_web_format");
}
