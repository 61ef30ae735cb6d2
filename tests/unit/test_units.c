#include <stdint.h>

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
    return check_report("units");
}
