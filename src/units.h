/* Strict readers for the numbers people type: integers, durations, sizes. */
#ifndef DEFERD_UNITS_H
#define DEFERD_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Whole string must be an unsigned decimal in [0, max]; no sign, no spaces. 0 on success. */
int units_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* "250ms", "5s", "2m", "1h", "1d" (a bare "0" is allowed) -> milliseconds. 0 on success. */
int units_parse_duration_ms(const char *s, uint64_t *out_ms);

/* "4096", "512KiB", "1MiB" (also "k"/"K"/"KB" = 1024) -> bytes. 0 on success. */
int units_parse_size(const char *s, uint64_t *out_bytes);

/* Milliseconds since the Unix epoch (CLOCK_REALTIME) and on CLOCK_MONOTONIC. */
int64_t units_wall_ms(void);
int64_t units_mono_ms(void);

#endif
