/* A schedule's occurrences, keys and state node (schedule.h). */
#include <string.h>

#include "check.h"
#include "schedule.h"
#include "tzone.h"

static void every(void)
{
    struct schedule_config s = {.name = "t", .queue = "q", .every_ms = 1000, .anchor_ms = 500};
    int64_t t;
    CHECK(schedule_next(&s, 0, &t) == 0 && t == 500);
    CHECK(schedule_next(&s, 500, &t) == 0 && t == 1500);
    CHECK(schedule_next(&s, 1499, &t) == 0 && t == 1500);
    CHECK(schedule_next(&s, 1763769600123, &t) == 0 && t == 1763769600500);
    CHECK(schedule_jitter(&s, 1500) == 0);
    s.jitter_ms = 300;
    int spread = 0;
    for (int64_t i = 0; i < 200; i++) {
        uint64_t j = schedule_jitter(&s, i * 1000);
        CHECK(j <= 300 && j == schedule_jitter(&s, i * 1000)); /* same on every daemon */
        spread |= 1 << (j / 100);
    }
    CHECK(spread == 0xf); /* all four hundreds of 0..300 are hit */
}

/* The rule as deferd.ini has it (issue 38): "every = 10s", the anchor as a time. */
static void described(void)
{
    struct schedule_config s = {.name = "t", .queue = "q", .every_ms = 10000};
    char text[200];
    schedule_describe(&s, text, sizeof text);
    CHECK_STR(text, "every 10s from 1970-01-01T00:00:00.000Z");
    s.every_ms = 90000;
    s.anchor_ms = 1767225600000;
    schedule_describe(&s, text, sizeof text);
    CHECK_STR(text, "every 90s from 2026-01-01T00:00:00.000Z");
}

static void cron_in_zone(void)
{
    struct schedule_config s = {.name = "n", .queue = "q", .cron = "30 2 * * *"};
    char err[200];
    int64_t t;
    CHECK(cron_parse(s.cron, &s.cron_expr, err, sizeof err) == 0);
    CHECK(tzone_load("Europe/Berlin", &s.tz, err, sizeof err) == 0);
    /* 2026-03-29 02:30 does not exist in Berlin: 01:00Z, the end of the gap */
    CHECK(schedule_next(&s, 1774663200000, &t) == 0 && t == 1774746000000);
    CHECK(schedule_next(&s, 1774746000000, &t) == 0 && t == 1774830600000); /* 00:30Z */
    tzone_free(s.tz);
}

static void keys_and_state(void)
{
    struct schedule_config s = {.name = "nightly-report", .queue = "q", .every_ms = 1000};
    char key[NAMES_KEY_MAX + 1], fp1[SCHEDULE_FP_LEN + 1], fp2[SCHEDULE_FP_LEN + 1];
    schedule_key(&s, 1763769600000, key, sizeof key);
    CHECK(strcmp(key, "nightly-report:1763769600000") == 0 && names_valid_key(key));
    schedule_catchup_key(&s, 1763769600000, 12, key, sizeof key);
    CHECK(strcmp(key, "nightly-report:1763769600000:m12") == 0 && names_valid_key(key));
    schedule_fingerprint(&s, fp1);
    s.every_ms = 2000;
    schedule_fingerprint(&s, fp2);
    CHECK(strlen(fp1) == 16 && strcmp(fp1, fp2) != 0);
    struct schedule_state st = {.last_ms = 1763769600000}, back;
    memcpy(st.fp, fp1, sizeof st.fp);
    char data[SCHEDULE_STATE_MAX];
    int n = schedule_state_format(&st, data, sizeof data);
    CHECK(n > 0 && strcmp(data, "v1 last=1763769600000 fp=") > 0);
    CHECK(schedule_state_parse(data, (size_t)n, &back) == 0 && back.last_ms == st.last_ms &&
          back.key[0] == '\0' && strcmp(back.fp, fp1) == 0);
    strcpy(st.key, "nightly-report:1763769600000");
    n = schedule_state_format(&st, data, sizeof data);
    CHECK(schedule_state_parse(data, (size_t)n, &back) == 0 && strcmp(back.key, st.key) == 0);
    static const char *const bad[] = {"", "v2 last=1 fp=0123456789abcdef key=-",
        "v1 last=-5 fp=0123456789abcdef key=-", "v1 last=1 fp=0123 key=-",
        "v1 last=1 fp=0123456789abcdef key=bad/key", "v1 last=1 fp=0123456789abcdef key=- x",
        "garbage"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(schedule_state_parse(bad[i], strlen(bad[i]), &back) != 0);
}

int main(void)
{
    every();
    described();
    cron_in_zone();
    keys_and_state();
    return check_report("test_schedule");
}
