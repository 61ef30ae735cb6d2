/* Time zones from the system tz database (issue 21): a reader of TZif files (RFC 8536,
 * versions 1 to 4) and of the POSIX TZ rule in their footer, which gives the offsets after
 * the file's last transition. Pure logic over the file's bytes; a loaded zone is read-only,
 * so threads may share it. docs/schedules.md, "Time zones and daylight saving".
 *
 * Instants are UTC seconds since 1970 (leap seconds not counted, as time() counts them);
 * wall times are local seconds counted the same way, as if the local clock were UTC. */
#ifndef DEFERD_TZONE_H
#define DEFERD_TZONE_H

#include <stddef.h>
#include <stdint.h>

#define TZONE_NAME_MAX 255
#define TZONE_DEFAULT_DIR "/usr/share/zoneinfo"
/* The largest TZif file read: the biggest of tzdata is under 4 KiB. */
#define TZONE_FILE_MAX (1024 * 1024)
/* Instants beyond these count as these (offsets there are the rule's, so nothing of
 * interest changes), so that no computation on them can overflow. */
#define TZONE_T_MIN (-(INT64_C(1) << 56))
#define TZONE_T_MAX (INT64_C(1) << 56)

struct tzone;

/* Loads NAME (e.g. "Europe/Berlin") from the tz database: $TZDIR if set and not empty,
 * else TZONE_DEFAULT_DIR. "UTC" and "Etc/UTC" are built in (no file needed). A name must be
 * relative, without empty, "." or ".." components, of [A-Za-z0-9_+-/] only, at most
 * TZONE_NAME_MAX bytes. 0 and *OUT, or -1 with "time zone 'NAME': why" in ERR. */
int tzone_load(const char *name, struct tzone **out, char *err, size_t errlen);
/* The same from the bytes of a TZif file (no file read, NAME is not checked): for tests and
 * the fuzzer. */
int tzone_parse(const char *name, const void *data, size_t len, struct tzone **out, char *err,
                size_t errlen);
void tzone_free(struct tzone *tz);
const char *tzone_name(const struct tzone *tz);

/* Offset from UTC in seconds (east positive) at UTC second T; *ABBR (may be NULL) gets the
 * abbreviation then, e.g. "CEST", valid as long as TZ is. */
int32_t tzone_offset(const struct tzone *tz, int64_t t, const char **abbr);
/* The first UTC second whose local wall time is WALL or later: WALL's first instant if it
 * exists (the daylight one when a backward change repeats it), the instant the gap ends if a
 * forward change skips it. Never decreases as WALL grows. */
int64_t tzone_instant(const struct tzone *tz, int64_t wall);
/* Formats UTC second T as local "YYYY-MM-DD HH:MM:SS ABBR (+HH:MM)" into BUF (":SS" after
 * the offset's minutes when it has seconds, as local mean times do). */
void tzone_format(const struct tzone *tz, int64_t t, char *buf, size_t len);

/* Proleptic Gregorian calendar: days since 1970-01-01 of Y-M-D (M 1-12, D 1-31), and back.
 * Valid for any year whose days fit in an int64_t / 400. */
int64_t tzone_days_from_civil(int64_t y, unsigned m, unsigned d);
void tzone_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
/* 0 (Sunday) to 6 (Saturday). */
unsigned tzone_weekday(int64_t days);

#endif
