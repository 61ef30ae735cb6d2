/* The tz database reader (src/common/tzone.c): offsets and abbreviations against glibc's
 * localtime_r over 1970-2100 (every ~3 hours, and each side of every transition), the first
 * instant of a wall time around each transition, names refused, files refused (written
 * under a temporary TZDIR), POSIX TZ rules of the footer, the civil-date helpers. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tzone.h"

#define HOUR 3600

static const char *const zones[] = {
    "UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia",
    "Asia/Kolkata", "America/Sao_Paulo", "Europe/Dublin", "Africa/Casablanca",
    "America/Nuuk", "Asia/Tehran", "America/St_Johns", "Pacific/Chatham",
};

/* "YYYY-MM-DD HH:MM:SS" as UTC seconds, by glibc. */
static int64_t utc(const char *s)
{
    struct tm tm = {0};
    if (!strptime(s, "%Y-%m-%d %H:%M:%S", &tm)) {
        fprintf(stderr, "bad date in test: %s\n", s);
        exit(2);
    }
    return (int64_t)timegm(&tm);
}

struct ref {
    long off;
    char abbr[16];
};

/* glibc's view at T, for the zone of TZ (set by the caller). */
static struct ref glibc_at(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    struct ref r;
    localtime_r(&tt, &tm);
    r.off = tm.tm_gmtoff;
    snprintf(r.abbr, sizeof r.abbr, "%s", tm.tm_zone);
    return r;
}

static int same_as_glibc(const struct tzone *tz, int64_t t, int *shown)
{
    const char *abbr;
    int32_t off = tzone_offset(tz, t, &abbr);
    struct ref r = glibc_at(t);
    if (off == r.off && strcmp(abbr, r.abbr) == 0)
        return 1;
    if ((*shown)++ < 5)
        fprintf(stderr, "%s at %lld: %d %s, glibc %ld %s\n", tzone_name(tz), (long long)t,
                (int)off, abbr, r.off, r.abbr);
    return 0;
}

/* The first instant of wall time W near a transition at T from offset O1 to O2, derived
 * from the two offsets alone: W - O1 if that is before T, else W - O2 if that is at or after
 * T, else (W in the gap) T. */
static int64_t expected_instant(int64_t w, int64_t t, long o1, long o2)
{
    if (w - o1 < t)
        return w - o1;
    if (w - o2 >= t)
        return w - o2;
    return t;
}

/* Wall times from 2 h before to 2 h after the change at T, every 5 minutes and at the edges
 * of the gap or overlap. */
static int instants_ok(const struct tzone *tz, int64_t t, long o1, long o2)
{
    int64_t edges[] = {t + o1 - 1, t + o1, t + o1 + 1, t + o2 - 1, t + o2, t + o2 + 1};
    int ok = 1;
    for (int64_t w = t + o1 - 2 * HOUR; w <= t + o2 + 2 * HOUR; w += 300)
        ok &= tzone_instant(tz, w) == expected_instant(w, t, o1, o2);
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        ok &= tzone_instant(tz, edges[i]) == expected_instant(edges[i], t, o1, o2);
    if (!ok)
        fprintf(stderr, "%s: tzone_instant wrong near %lld (%ld -> %ld)\n", tzone_name(tz),
                (long long)t, o1, o2);
    return ok;
}

/* The change glibc sees in (LO, HI]: its first second. */
static int64_t find_change(int64_t lo, int64_t hi)
{
    struct ref a = glibc_at(lo);
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        struct ref m = glibc_at(mid);
        if (m.off == a.off && strcmp(m.abbr, a.abbr) == 0)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

static void against_glibc(const char *name)
{
    struct tzone *tz;
    char err[256], tzenv[300];
    if (tzone_load(name, &tz, err, sizeof err) < 0) {
        CHECK(!"load");
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK_STR(tzone_name(tz), name);
    snprintf(tzenv, sizeof tzenv, ":%s", name);
    setenv("TZ", tzenv, 1);
    tzset();
    int shown = 0, bad = 0, changes = 0, instants_bad = 0;
    const int64_t end = utc("2100-01-01 00:00:00"), step = 3 * HOUR - 7;
    struct ref prev = glibc_at(0);
    for (int64_t t = 0; t <= end; t += step) {
        bad += !same_as_glibc(tz, t, &shown);
        struct ref now = glibc_at(t);
        if (t && (now.off != prev.off || strcmp(now.abbr, prev.abbr) != 0)) {
            int64_t c = find_change(t - step, t);
            for (int64_t d = -1; d <= 1; d++)
                bad += !same_as_glibc(tz, c + d, &shown);
            instants_bad += !instants_ok(tz, c, prev.off, now.off);
            changes++;
        }
        prev = now;
    }
    printf("%-20s %4d changes 1970-2100, %d differences from glibc\n", name, changes, bad);
    CHECK(bad == 0 && instants_bad == 0);
    CHECK(strcmp(name, "UTC") == 0 || strcmp(name, "Asia/Kolkata") == 0 || changes > 0);
    tzone_free(tz);
}

static void expect_offset(const struct tzone *tz, const char *when, int32_t off,
                          const char *abbr)
{
    const char *a;
    int32_t got = tzone_offset(tz, utc(when), &a);
    if (got != off || strcmp(a, abbr) != 0)
        fprintf(stderr, "%s at %s: %d %s, expected %d %s\n", tzone_name(tz), when, (int)got, a,
                (int)off, abbr);
    CHECK(got == off && strcmp(a, abbr) == 0);
}

static void known_offsets(void)
{
    struct tzone *tz;
    char err[256], buf[64];
    CHECK(tzone_load("Europe/Berlin", &tz, err, sizeof err) == 0);
    expect_offset(tz, "2026-03-29 00:59:59", 3600, "CET");
    expect_offset(tz, "2026-03-29 01:00:00", 7200, "CEST");
    expect_offset(tz, "2026-10-25 00:59:59", 7200, "CEST");
    expect_offset(tz, "2026-10-25 01:00:00", 3600, "CET");
    expect_offset(tz, "2099-07-01 00:00:00", 7200, "CEST"); /* from the footer's rule */
    expect_offset(tz, "1800-01-01 00:00:00", 3208, "LMT");  /* before the first change */
    tzone_format(tz, utc("2026-03-29 01:00:00"), buf, sizeof buf);
    CHECK_STR(buf, "2026-03-29 03:00:00 CEST (+02:00)");
    tzone_format(tz, utc("2026-12-31 23:00:00"), buf, sizeof buf);
    CHECK_STR(buf, "2027-01-01 00:00:00 CET (+01:00)");
    tzone_format(tz, utc("1800-01-01 00:00:00"), buf, sizeof buf);
    CHECK_STR(buf, "1800-01-01 00:53:28 LMT (+00:53:28)");
    /* a wall time skipped in spring, one repeated in autumn */
    CHECK(tzone_instant(tz, utc("2026-03-29 02:30:00")) == utc("2026-03-29 01:00:00"));
    CHECK(tzone_instant(tz, utc("2026-03-29 03:00:00")) == utc("2026-03-29 01:00:00"));
    CHECK(tzone_instant(tz, utc("2026-03-29 01:59:59")) == utc("2026-03-29 00:59:59"));
    CHECK(tzone_instant(tz, utc("2026-10-25 02:30:00")) == utc("2026-10-25 00:30:00"));
    CHECK(tzone_instant(tz, utc("2026-10-25 03:00:00")) == utc("2026-10-25 02:00:00"));
    /* instants far out are clamped, not overflowed */
    CHECK(tzone_offset(tz, INT64_MAX, NULL) == 3600 || tzone_offset(tz, INT64_MAX, NULL) == 7200);
    CHECK(tzone_instant(tz, INT64_MIN) < 0 && tzone_instant(tz, INT64_MAX) > 0);
    tzone_format(tz, INT64_MIN, buf, sizeof buf);
    tzone_free(tz);
    CHECK(tzone_load("Pacific/Apia", &tz, err, sizeof err) == 0);
    /* 2011-12-30 did not happen: from -10 (DST) straight to +14 */
    expect_offset(tz, "2011-12-30 09:59:59", -36000, "-10");
    expect_offset(tz, "2011-12-30 10:00:00", 50400, "+14");
    CHECK(tzone_instant(tz, utc("2011-12-30 12:00:00")) == utc("2011-12-30 10:00:00"));
    tzone_free(tz);
    CHECK(tzone_load("Australia/Lord_Howe", &tz, err, sizeof err) == 0);
    expect_offset(tz, "2026-10-03 15:30:00", 39600, "+11"); /* 30-minute DST */
    expect_offset(tz, "2026-10-03 15:29:59", 37800, "+1030");
    tzone_format(tz, utc("2026-10-03 15:30:00"), buf, sizeof buf);
    CHECK_STR(buf, "2026-10-04 02:30:00 +11 (+11:00)");
    tzone_free(tz);
    CHECK(tzone_load("America/New_York", &tz, err, sizeof err) == 0);
    tzone_format(tz, utc("2026-11-01 06:00:00"), buf, sizeof buf);
    CHECK_STR(buf, "2026-11-01 01:00:00 EST (-05:00)");
    tzone_free(tz);
}

static void civil(void)
{
    int64_t y;
    unsigned m, d;
    CHECK(tzone_days_from_civil(1970, 1, 1) == 0);
    CHECK(tzone_days_from_civil(2000, 3, 1) == 11017);
    CHECK(tzone_days_from_civil(1969, 12, 31) == -1);
    CHECK(tzone_days_from_civil(1, 1, 1) == -719162);
    CHECK(tzone_weekday(0) == 4 && tzone_weekday(-1) == 3 && tzone_weekday(-7) == 4);
    CHECK(tzone_weekday(tzone_days_from_civil(2026, 3, 29)) == 0);
    for (int64_t days = -800000; days < 800000; days += 13) {
        tzone_civil_from_days(days, &y, &m, &d);
        if (tzone_days_from_civil(y, m, d) != days) {
            CHECK(!"civil round trip");
            break;
        }
    }
    tzone_civil_from_days(tzone_days_from_civil(2100, 2, 28) + 1, &y, &m, &d);
    CHECK(y == 2100 && m == 3 && d == 1);
    tzone_civil_from_days(tzone_days_from_civil(2000, 2, 28) + 1, &y, &m, &d);
    CHECK(y == 2000 && m == 2 && d == 29);
}

static void expect_refused(const char *name, const char *why)
{
    struct tzone *tz = (struct tzone *)&tz;
    char err[400] = "";
    CHECK(tzone_load(name, &tz, err, sizeof err) == -1 && tz == NULL);
    CHECK(strncmp(err, "time zone '", 11) == 0);
    CHECK_CONTAINS(err, why);
}

static void names(void)
{
    char longname[300];
    memset(longname, 'A', 256);
    longname[256] = '\0';
    expect_refused("", "empty name");
    expect_refused("/etc/localtime", "absolute path");
    expect_refused("../etc/passwd", "'..' are not allowed");
    expect_refused("Europe/../Europe/Berlin", "'..' are not allowed");
    expect_refused("./UTC", "'.' and '..' are not allowed");
    expect_refused("Europe//Berlin", "empty path component");
    expect_refused("Europe/Berlin/", "empty path component");
    expect_refused("Europe/Ber lin", "character 0x20 not allowed");
    expect_refused("Europe/Berlin\n", "character 0x0a not allowed");
    expect_refused("Europe/Berlin.bak", "character 0x2e not allowed");
    expect_refused("Europe\\Berlin", "character 0x5c not allowed");
    expect_refused("Europe/Berlin\x80", "character 0x80 not allowed");
    expect_refused(longname, "name longer than 255 bytes");
    longname[255] = '\0'; /* the longest name allowed: looked up, not found */
    expect_refused(longname, "not found in");
    expect_refused("Mars/Olympus_Mons", "time zone 'Mars/Olympus_Mons': not found in ");
    expect_refused("Europe", "not a regular file");
    const char *good[] = {"UTC", "Etc/UTC", "Etc/GMT+5", "America/Argentina/Buenos_Aires",
                          "America/Port-au-Prince", "Asia/Kolkata"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct tzone *tz;
        char err[256];
        CHECK(tzone_load(good[i], &tz, err, sizeof err) == 0);
        if (tz)
            CHECK_STR(tzone_name(tz), good[i]);
        tzone_free(tz);
    }
    struct tzone *tz;
    char err[256];
    CHECK(tzone_load("Etc/GMT+5", &tz, err, sizeof err) == 0);
    expect_offset(tz, "2026-01-01 00:00:00", -5 * HOUR, "-05");
    tzone_free(tz);
}

/* ---- TZif files made here ---- */

struct tzif {
    char version;           /* 0, '2', '3', '4' */
    int ntrans, ntypes;
    int64_t trans[4];
    unsigned char idx[4];
    int32_t off[4];
    unsigned char dst[4], ai[4];
    const char *chars;
    size_t nchars;
    const char *footer;     /* without its newlines; NULL: none (version 1) */
};

static unsigned char *put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        *p++ = (unsigned char)(v >> (24 - 8 * i));
    return p;
}

static unsigned char *put_block(unsigned char *p, const struct tzif *z, int tsize, char version)
{
    memcpy(p, "TZif", 4);
    p[4] = (unsigned char)version;
    memset(p + 5, 0, 15);
    p += 20;
    uint32_t counts[6] = {0, 0, 0, (uint32_t)z->ntrans, (uint32_t)z->ntypes,
                          (uint32_t)z->nchars};
    for (int i = 0; i < 6; i++)
        p = put32(p, counts[i]);
    for (int i = 0; i < z->ntrans; i++) {
        if (tsize == 8)
            p = put32(p, (uint32_t)((uint64_t)z->trans[i] >> 32));
        p = put32(p, (uint32_t)z->trans[i]);
    }
    for (int i = 0; i < z->ntrans; i++)
        *p++ = z->idx[i];
    for (int i = 0; i < z->ntypes; i++) {
        p = put32(p, (uint32_t)z->off[i]);
        *p++ = z->dst[i];
        *p++ = z->ai[i];
    }
    memcpy(p, z->chars, z->nchars);
    return p + z->nchars;
}

/* The file's bytes into OUT; *V2 (may be NULL) gets where the 64-bit header starts. */
static size_t build(const struct tzif *z, unsigned char *out, size_t *v2)
{
    unsigned char *p = put_block(out, z, 4, z->version);
    if (v2)
        *v2 = (size_t)(p - out);
    if (!z->version)
        return (size_t)(p - out);
    p = put_block(p, z, 8, z->version);
    p += sprintf((char *)p, "\n%s\n", z->footer ? z->footer : "");
    return (size_t)(p - out);
}

/* CET/CEST with the changes of 2020 and the EU rule after them. */
static struct tzif cet(void)
{
    return (struct tzif){.version = '2', .ntrans = 2, .ntypes = 2,
                         .trans = {1585443600, 1603587600}, .idx = {1, 0},
                         .off = {3600, 7200}, .dst = {0, 1}, .ai = {0, 4},
                         .chars = "CET\0CEST", .nchars = 9,
                         .footer = "CET-1CEST,M3.5.0,M10.5.0/3"};
}

static char tzdir[64];

static void write_zone(const char *name, const void *data, size_t len)
{
    char path[256], dir[256];
    snprintf(path, sizeof path, "%s/%s", tzdir, name);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdir(dir, 0700);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, len, f) == len);
    if (f)
        fclose(f);
}

static void load_refused(const char *name, const void *data, size_t len, const char *why)
{
    char want[300];
    write_zone(name, data, len);
    snprintf(want, sizeof want, "time zone '%s': %s/%s: ", name, tzdir, name);
    struct tzone *tz;
    char err[400] = "";
    CHECK(tzone_load(name, &tz, err, sizeof err) == -1 && !tz);
    CHECK(strncmp(err, want, strlen(want)) == 0);
    CHECK_CONTAINS(err, why);
}

static struct tzone *load_built(const char *name, const struct tzif *z)
{
    unsigned char buf[1024];
    size_t n = build(z, buf, NULL);
    write_zone(name, buf, n);
    struct tzone *tz = NULL;
    char err[400];
    if (tzone_load(name, &tz, err, sizeof err) < 0)
        fprintf(stderr, "%s\n", err);
    CHECK(tz != NULL);
    return tz;
}

static void built_zones(void)
{
    struct tzif z = cet();
    struct tzone *tz = load_built("Test/Cet", &z);
    if (tz) {
        expect_offset(tz, "2020-01-01 00:00:00", 3600, "CET");
        expect_offset(tz, "2020-07-01 00:00:00", 7200, "CEST");
        expect_offset(tz, "2020-12-01 00:00:00", 3600, "CET");
        expect_offset(tz, "2030-03-31 01:00:00", 7200, "CEST");
        expect_offset(tz, "2030-10-27 00:59:59", 7200, "CEST");
        expect_offset(tz, "2030-10-27 01:00:00", 3600, "CET");
        expect_offset(tz, "1900-01-01 00:00:00", 3600, "CET");
        tzone_free(tz);
    }
    z.version = 0; /* version 1: no rule, the last type stays */
    if ((tz = load_built("Test/V1", &z))) {
        expect_offset(tz, "2020-07-01 00:00:00", 7200, "CEST");
        expect_offset(tz, "2030-07-01 00:00:00", 3600, "CET");
        tzone_free(tz);
    }
    struct {
        const char *footer, *when;
        int32_t off;
        const char *abbr;
    } rules[] = {
        /* daylight time all year (RFC 8536 3.3.1), at both ends of a year */
        {"EST5EDT,0/0,J365/25", "2030-01-01 04:59:59", -4 * HOUR, "EDT"},
        {"EST5EDT,0/0,J365/25", "2030-01-01 05:00:00", -4 * HOUR, "EDT"},
        {"EST5EDT,0/0,J365/25", "2030-06-01 00:00:00", -4 * HOUR, "EDT"},
        {"EST5EDT,0/0,J365/25", "2032-12-31 23:00:00", -4 * HOUR, "EDT"},
        /* no dates: the US rule */
        {"EST5EDT", "2030-07-01 00:00:00", -4 * HOUR, "EDT"},
        {"EST5EDT", "2030-03-10 06:59:59", -5 * HOUR, "EST"},
        {"EST5EDT", "2030-03-10 07:00:00", -4 * HOUR, "EDT"},
        /* minutes, quoted names, explicit DST offset, Jn and n dates, negative times */
        {"<+0545>-5:45", "2030-07-01 00:00:00", 20700, "+0545"},
        {"<-0330>3:30<-0230>2:30,J60/2,J300/2", "2032-03-01 05:29:59", -12600, "-0330"},
        {"<-0330>3:30<-0230>2:30,J60/2,J300/2", "2032-03-01 05:30:00", -9000, "-0230"},
        {"AAA3BBB,59/2,300/2", "2032-02-29 04:59:59", -3 * HOUR, "AAA"},
        {"AAA3BBB,59/2,300/2", "2032-02-29 05:00:00", -2 * HOUR, "BBB"},
        {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2030-03-31 00:59:59", -2 * HOUR, "-02"},
        {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2030-03-31 01:00:00", -1 * HOUR, "-01"},
        /* a change at 26:00 the day before (RFC 8536's hours beyond 24) */
        {"XST-1XDT,M3.5.0/-22,M10.5.0/26", "2030-10-27 23:59:59", 2 * HOUR, "XDT"},
        {"XST-1XDT,M3.5.0/-22,M10.5.0/26", "2030-10-28 00:00:00", 1 * HOUR, "XST"},
        /* southern hemisphere: daylight time across the new year */
        {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2030-01-01 00:00:00", 11 * HOUR, "+11"},
        {"IST-1GMT0,M10.5.0,M3.5.0/1", "2030-01-15 00:00:00", 0, "GMT"},
        {"IST-1GMT0,M10.5.0,M3.5.0/1", "2030-07-15 00:00:00", HOUR, "IST"},
    };
    z = (struct tzif){.version = '3', .ntypes = 1, .chars = "X", .nchars = 2};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        z.footer = rules[i].footer;
        if ((tz = load_built("Test/Rule", &z))) {
            expect_offset(tz, rules[i].when, rules[i].off, rules[i].abbr);
            tzone_free(tz);
        }
    }
}

static void patch32(unsigned char *p, uint32_t v)
{
    put32(p, v);
}

static void corrupt_files(void)
{
    unsigned char good[1024], b[1100];
    struct tzif z = cet();
    size_t v2, n = build(&z, good, &v2), data = v2 + 44;
    load_refused("Bad/Empty", good, 0, "truncated: 0 bytes, shorter than a TZif header");
    load_refused("Bad/Short", good, 30, "shorter than a TZif header");
    memcpy(b, good, n), b[3] = 'g';
    load_refused("Bad/Magic", b, n, "not a TZif file (no TZif magic)");
    memcpy(b, good, n), b[4] = '1';
    load_refused("Bad/Version", b, n, "unknown TZif version byte 0x31");
    load_refused("Bad/NoFooter", good, n - 28, "truncated: no footer after the data");
    load_refused("Bad/NoNewline", good, n - 1, "the footer has no final newline");
    load_refused("Bad/InData", good, n - 40, "truncated: the header announces");
    load_refused("Bad/InV1", good, v2 - 3, "truncated: the version 1 data runs past the end");
    memcpy(b, good, n), memcpy(b + n, "junk", 4);
    load_refused("Bad/Trailing", b, n + 4, "4 unexpected bytes after the footer");
    memcpy(b, good, n), patch32(b + v2 + 32, 0xffffffffu); /* timecnt */
    load_refused("Bad/Counts", b, n, "truncated: the header announces");
    memcpy(b, good, n), patch32(b + v2 + 36, 0); /* typecnt */
    load_refused("Bad/NoTypes", b, n, "0 local time types (1 to 256 expected)");
    memcpy(b, good, n), patch32(b + v2 + 40, 0); /* charcnt */
    load_refused("Bad/NoChars", b, n, "no time zone abbreviations");
    memcpy(b, good, n), patch32(b + v2 + 20, 1); /* isutcnt 1 of 2 types */
    load_refused("Bad/Isut", b, n, "inconsistent counts");
    memcpy(b, good, n), patch32(b + v2 + 28, 1); /* leapcnt */
    load_refused("Bad/Leap", b, n, "leap-second tables (the right/ zones) are not supported");
    memcpy(b, good, n), b[data + 16] = 2; /* the first transition's type */
    load_refused("Bad/TypeIndex", b, n, "transition 0 has type 2 of 2");
    memcpy(b, good, n), memcpy(b + data + 8, b + data, 8); /* two equal transitions */
    load_refused("Bad/Order", b, n, "transition 1 is not after the one before it");
    memcpy(b, good, n), patch32(b + data + 18, 100000); /* type 0's offset */
    load_refused("Bad/Offset", b, n, "type 0 has offset 100000 s, beyond +-25 h");
    memcpy(b, good, n), b[data + 18 + 4] = 2;
    load_refused("Bad/Isdst", b, n, "type 0 has a daylight flag of 2");
    memcpy(b, good, n), b[data + 18 + 11] = 9;
    load_refused("Bad/Abbr", b, n, "type 1's abbreviation is past the 9 bytes of them");
    z.footer = "CET-1CEST,M13.5.0,M10.5.0";
    n = build(&z, b, NULL);
    load_refused("Bad/Rule", b, n, "bad TZ rule in the footer: 'CET-1CEST,M13.5.0,M10.5.0'");
    const char *bad_rules[] = {"CE", "CET", "CET-1CEST,M3.5.0", "CET-25", "<+01-1",
                               "CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,M3.5.7,M10.5.0",
                               "CET-1CEST,J0,J365", "CET-1CEST,366,1", "CET-1CEST,1/168,2",
                               "CET-1:60", "CET-1CEST,M3.5.0,M10.5.0x", "CET-1\tX",
                               "VERYLONGNAMEXXXX-1"};
    for (size_t i = 0; i < sizeof bad_rules / sizeof bad_rules[0]; i++) {
        z.footer = bad_rules[i];
        n = build(&z, b, NULL);
        load_refused("Bad/Rule", b, n, "bad TZ rule in the footer: '");
    }
}

/* Every prefix of a real file, and every byte of it changed: refused with a reason or
 * accepted, never a crash (ASan watches). */
static void mangled(void)
{
    FILE *f = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb");
    unsigned char buf[4096], b[4096];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    CHECK(n > 1000);
    int prefixes_refused = 1, accepted = 0;
    for (size_t len = 0; len < n; len++) {
        struct tzone *tz;
        char err[300] = "";
        prefixes_refused &= tzone_parse("Europe/Berlin", buf, len, &tz, err, sizeof err) == -1 &&
                            !tz && strncmp(err, "time zone 'Europe/Berlin': ", 27) == 0;
    }
    CHECK(prefixes_refused);
    for (size_t i = 0; i < n; i++) {
        const unsigned char vals[] = {0x00, 0xff, 0x80, (unsigned char)(buf[i] ^ 1)};
        for (size_t k = 0; k < sizeof vals; k++) {
            struct tzone *tz;
            char err[300];
            memcpy(b, buf, n);
            b[i] = vals[k];
            if (tzone_parse("X", b, n, &tz, err, sizeof err) == 0) {
                accepted++;
                tzone_offset(tz, 0, NULL);
                tzone_instant(tz, 1700000000);
                tzone_free(tz);
            }
        }
    }
    CHECK(accepted > 0);
}

static void utc_without_files(void)
{
    struct tzone *tz;
    char err[256];
    const char *abbr;
    /* TZDIR is the empty temporary directory's subfolder: nothing there */
    CHECK(tzone_load("UTC", &tz, err, sizeof err) == 0);
    CHECK(tzone_offset(tz, 1700000000, &abbr) == 0);
    CHECK_STR(abbr, "UTC");
    CHECK(tzone_instant(tz, 1700000000) == 1700000000);
    char buf[64];
    tzone_format(tz, 0, buf, sizeof buf);
    CHECK_STR(buf, "1970-01-01 00:00:00 UTC (+00:00)");
    tzone_free(tz);
    CHECK(tzone_load("Etc/UTC", &tz, err, sizeof err) == 0);
    tzone_free(tz);
    expect_refused("Europe/Berlin", "not found in ");
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char sub[512];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (unlink(sub) < 0)
            remove_tree(sub);
    }
    if (d)
        closedir(d);
    rmdir(path);
}

int main(void)
{
    civil();
    known_offsets();
    names();
    for (size_t i = 0; i < sizeof zones / sizeof zones[0]; i++)
        against_glibc(zones[i]);
    mangled();
    snprintf(tzdir, sizeof tzdir, "/tmp/test_tzone.XXXXXX");
    CHECK(mkdtemp(tzdir) != NULL);
    setenv("TZDIR", tzdir, 1);
    built_zones();
    corrupt_files();
    char empty[128];
    snprintf(empty, sizeof empty, "%s/empty", tzdir);
    mkdir(empty, 0700);
    setenv("TZDIR", empty, 1);
    utc_without_files();
    unsetenv("TZDIR");
    remove_tree(tzdir);
    return check_report("test_tzone");
}
