/* Strict readers for the numbers people type: integers, durations, sizes. */
#ifndef DEFERD_UNITS_H
#define DEFERD_UNITS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

/* Whole string must be an unsigned decimal in [0, max]; no sign, no spaces. 0 on success. */
int units_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* "250ms", "5s", "2m", "1h", "1d" (a bare "0" is allowed) -> milliseconds. 0 on success. */
int units_parse_duration_ms(const char *s, uint64_t *out_ms);

/* "4096", "512KiB", "1MiB" (also "k"/"K"/"KB" = 1024) -> bytes. 0 on success. */
int units_parse_size(const char *s, uint64_t *out_bytes);

/* A point in time for people: epoch milliseconds ("1763769605123"), UTC ISO 8601
 * ("2026-11-23T10:00:05Z", "2026-11-23T10:00:05.250Z", "2026-11-23T10:00Z"), or relative to
 * NOW_MS: "now", "now+5m", "now-1h". -> epoch ms. 0 on success. */
int units_parse_time_ms(const char *s, int64_t now_ms, uint64_t *out_ms);
/* Its failures besides -1 (not a time): an ISO time without a zone, or with an offset. */
enum { UNITS_E_NO_ZONE = -2, UNITS_E_OFFSET = -3 };
/* What is wrong with a time units_parse_time_ms refused with RC, in words; NULL for -1. */
const char *units_time_problem(int rc);
/* A duration as units_parse_duration_ms reads it, in the largest unit that holds it
 * exactly: "90s", "5m", "1500ms", "0". */
void units_format_duration(uint64_t ms, char *buf, size_t len);
/* Epoch ms as "2026-11-23T10:00:05.123Z" (buf of at least 32 bytes). */
void units_format_time(int64_t ms, char *buf, size_t len);
/* A signed span for people, to the unit that matters: "850ms", "12s", "4m12s", "-3h05m",
 * "2d04h". */
void units_format_span(int64_t ms, char *buf, size_t len);
/* The same for a time relative to now, in words: "in 5 s", "64 ms ago", "in 4 min 12 s". */
void units_format_relative(int64_t ms, char *buf, size_t len);

/* MS (a negative one as 0) as the struct timeval a libevent timer takes. */
struct timeval units_ms_timeval(int64_t ms);

/* Milliseconds since the Unix epoch (CLOCK_REALTIME) and on CLOCK_MONOTONIC. */
int64_t units_wall_ms(void);
int64_t units_mono_ms(void);

#endif
