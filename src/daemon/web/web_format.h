/* Durations and rates as the dashboard's pages show them to people: a unit a reader knows
 * and no more digits than say something ("19.5 s", "0.35/s"). app.js formats the figures
 * it refreshes with the same rules (its duration() and rate()); the JSON API keeps the raw
 * numbers. No I/O, no daemon state: unit.web_format tests it alone. */
#ifndef DEFERD_WEB_FORMAT_H
#define DEFERD_WEB_FORMAT_H

#include <stddef.h>

/* MS milliseconds (fractions too) as "0 ms", "0.4 ms", "850 ms", "19.5 s", "4 min 12 s",
 * "3 h 05 min", "2 d 04 h"; "-" when MS is no finite number. */
void web_format_duration(double ms, char *buf, size_t len);
/* PER_S a second as "0/s", "<0.01/s", "0.35/s", "12.5/s", "1234/s"; "-" when no finite
 * number. */
void web_format_rate(double per_s, char *buf, size_t len);

#endif
