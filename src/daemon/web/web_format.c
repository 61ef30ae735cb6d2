/* The dashboard's durations and rates for people (web_format.h). Rounded in integers, half
 * up, from the value times 1000: app.js does the same arithmetic on the same doubles, so
 * a figure reads the same whether the page was served or refreshed. */
#include "web_format.h"

#include <stdio.h>

/* Beyond this the value is not a figure of a queue (and would overflow the integers). */
#define WEB_FORMAT_MAX 1e15

void web_format_duration(double ms, char *buf, size_t len)
{
    double a = ms < 0 ? -ms : ms;
    if (!(a < WEB_FORMAT_MAX)) { /* NaN too */
        snprintf(buf, len, "-");
        return;
    }
    long long us = (long long)(a * 1000 + 0.5);
    const char *sign = ms < 0 ? "-" : "";
    if (us < 50) /* rounds to 0.0: no sign, no tenths */
        snprintf(buf, len, "0 ms");
    else if (us < 9950) /* under 10 ms: tenths, so that 0.4 ms is not 0 */
        snprintf(buf, len, "%s%lld.%lld ms", sign, (us + 50) / 100 / 10, (us + 50) / 100 % 10);
    else if (us < 999500)
        snprintf(buf, len, "%s%lld ms", sign, (us + 500) / 1000);
    else if (us < 59950000) /* under a minute: seconds and tenths */
        snprintf(buf, len, "%s%lld.%lld s", sign, (us + 50000) / 100000 / 10,
                 (us + 50000) / 100000 % 10);
    else {
        long long s = (us + 500000) / 1000000, m = s / 60, h = m / 60;
        if (m < 60)
            snprintf(buf, len, "%s%lld min %02lld s", sign, m, s % 60);
        else if (h < 24)
            snprintf(buf, len, "%s%lld h %02lld min", sign, h, m % 60);
        else
            snprintf(buf, len, "%s%lld d %02lld h", sign, h / 24, h % 24);
    }
}

void web_format_rate(double per_s, char *buf, size_t len)
{
    if (!(per_s >= 0 && per_s < WEB_FORMAT_MAX)) {
        snprintf(buf, len, "-");
        return;
    }
    long long milli = (long long)(per_s * 1000 + 0.5);
    if (per_s == 0) {
        snprintf(buf, len, "0/s");
    } else if (milli < 5) { /* not 0: something happened */
        snprintf(buf, len, "<0.01/s");
    } else if (milli < 9995) { /* under 10: hundredths, trailing zeros dropped */
        long long c = (milli + 5) / 10;
        if (c % 100 == 0)
            snprintf(buf, len, "%lld/s", c / 100);
        else if (c % 10 == 0)
            snprintf(buf, len, "%lld.%lld/s", c / 100, c / 10 % 10);
        else
            snprintf(buf, len, "%lld.%02lld/s", c / 100, c % 100);
    } else if (milli < 99950) { /* under 100: tenths */
        long long t = (milli + 50) / 100;
        if (t % 10 == 0)
            snprintf(buf, len, "%lld/s", t / 10);
        else
            snprintf(buf, len, "%lld.%lld/s", t / 10, t % 10);
    } else {
        snprintf(buf, len, "%lld/s", (milli + 500) / 1000);
    }
}
