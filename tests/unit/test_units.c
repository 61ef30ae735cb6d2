#include <stdint.h>
#include <string.h>

#include "check.h"
#include "units.h"

int main(void)
{
    uint64_t v;
    CHECK(units_parse_u64("0", 10, &v) == 0 && v == 0);
    CHECK(units_parse_u64("18446744073709551615", UINT64_MAX, &v) == 0 && v == UINT64_MAX);
    CHECK(units_parse_u64("18446744073709551616", UINT64_MAX, &v) != 0);
    CHECK(units_parse_u64("11", 10, &v) != 0);
    CHECK(units_parse_u64("-1", 10, &v) != 0);
    CHECK(units_parse_u64("1 ", 10, &v) != 0);
    CHECK(units_parse_u64("", 10, &v) != 0);
    CHECK(units_parse_duration_ms("5s", &v) == 0 && v == 5000);
    CHECK(units_parse_duration_ms("250ms", &v) == 0 && v == 250);
    CHECK(units_parse_duration_ms("2m", &v) == 0 && v == 120000);
    CHECK(units_parse_duration_ms("1h", &v) == 0 && v == 3600000);
    CHECK(units_parse_duration_ms("1d", &v) == 0 && v == 86400000);
    CHECK(units_parse_duration_ms("0", &v) == 0 && v == 0);
    CHECK(units_parse_duration_ms("5", &v) != 0);   /* a unit is required */
    CHECK(units_parse_duration_ms("5x", &v) != 0);
    CHECK(units_parse_duration_ms("s", &v) != 0);
    CHECK(units_parse_duration_ms("1.5s", &v) != 0);
    CHECK(units_parse_duration_ms("99999999999999999999d", &v) != 0);
    CHECK(units_parse_size("512KiB", &v) == 0 && v == 524288);
    CHECK(units_parse_size("1MiB", &v) == 0 && v == 1048576);
    CHECK(units_parse_size("4096", &v) == 0 && v == 4096);
    CHECK(units_parse_size("4096 ", &v) != 0);
    CHECK(units_parse_size("1GiB", &v) != 0);
    CHECK(units_wall_ms() > 1700000000000LL);
    CHECK(units_parse_time_ms("1763769605123", 0, &v) == 0 && v == 1763769605123ULL);
    CHECK(units_parse_time_ms("2025-11-22T00:00:05.123Z", 0, &v) == 0 && v == 1763769605123ULL);
    CHECK(units_parse_time_ms("2025-11-22T00:00:05.1Z", 0, &v) == 0 && v == 1763769605100ULL);
    CHECK(units_parse_time_ms("2025-11-22T00:00:05Z", 0, &v) == 0 && v == 1763769605000ULL);
    CHECK(units_parse_time_ms("2025-11-22T00:01Z", 0, &v) == 0 && v == 1763769660000ULL);
    CHECK(units_parse_time_ms("2025-11-22T00:00:05", 0, &v) != 0);     /* no zone */
    CHECK(units_parse_time_ms("2025-11-22T00:00:05+01:00", 0, &v) != 0);
    CHECK(units_parse_time_ms("2025-11-22T00:00:5Z", 0, &v) != 0);
    CHECK(units_parse_time_ms("2025-11-22T00:00:05.Z", 0, &v) != 0);
    CHECK(units_parse_time_ms("now", 5000, &v) == 0 && v == 5000);
    CHECK(units_parse_time_ms("now+2s", 5000, &v) == 0 && v == 7000);
    CHECK(units_parse_time_ms("now-2s", 5000, &v) == 0 && v == 3000);
    CHECK(units_parse_time_ms("now-9s", 5000, &v) != 0);
    CHECK(units_parse_time_ms("now+", 5000, &v) != 0);
    CHECK(units_parse_time_ms("soon", 5000, &v) != 0);
    CHECK(units_parse_time_ms("", 5000, &v) != 0);
    char buf[40];
    units_format_time(1763769605123LL, buf, sizeof buf);
    CHECK(strcmp(buf, "2025-11-22T00:00:05.123Z") == 0);
    const struct { uint64_t ms; const char *text; } durations[] = {
        {90000, "90s"}, {10000, "10s"}, {300000, "5m"}, {1500, "1500ms"}, {0, "0"},
        {7200000, "2h"}, {86400000, "1d"}, {90000000, "25h"}, {1, "1ms"},
    };
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        units_format_duration(durations[i].ms, buf, sizeof buf);
        CHECK_STR(buf, durations[i].text);
        CHECK(units_parse_duration_ms(buf, &v) == 0 && v == durations[i].ms); /* round trip */
    }
    CHECK(units_parse_time_ms("2026-12-01T09:00", 0, &v) == UNITS_E_NO_ZONE);
    CHECK(units_parse_time_ms("2026-12-01T09:00:05", 0, &v) == UNITS_E_NO_ZONE);
    CHECK(units_parse_time_ms("2026-12-01T09:00+01:00", 0, &v) == UNITS_E_OFFSET);
    CHECK(units_parse_time_ms("soon", 0, &v) == -1 && units_time_problem(-1) == NULL);
    CHECK(strstr(units_time_problem(UNITS_E_NO_ZONE), "add Z") != NULL);
    units_format_span(850, buf, sizeof buf);
    CHECK(strcmp(buf, "850ms") == 0);
    units_format_span(252000, buf, sizeof buf);
    CHECK(strcmp(buf, "4m12s") == 0);
    units_format_span(-3 * 3600000 - 5 * 60000, buf, sizeof buf);
    CHECK(strcmp(buf, "-3h05m") == 0);
    units_format_span(52 * 3600000LL, buf, sizeof buf);
    CHECK(strcmp(buf, "2d04h") == 0);
    struct timeval tv = units_ms_timeval(2500);
    CHECK(tv.tv_sec == 2 && tv.tv_usec == 500000);
    tv = units_ms_timeval(20);
    CHECK(tv.tv_sec == 0 && tv.tv_usec == 20000);
    tv = units_ms_timeval(-5); /* a deadline already past: at once */
    CHECK(tv.tv_sec == 0 && tv.tv_usec == 0);
    return check_report("units");
}
