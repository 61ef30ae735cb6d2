/* An error's text written into the caller's buffer: the way pure-logic parsers (cron, tzone)
 * return why they refused an input without logging it themselves. */
#ifndef DEFERD_ERRTEXT_H
#define DEFERD_ERRTEXT_H

#include <stddef.h>

/* Formats into err (when err and len are set) and returns -1, so that a parser can write
 * `return errtext_fail(err, len, "...", ...);`. */
__attribute__((format(printf, 3, 4))) int errtext_fail(char *err, size_t len, const char *fmt,
                                                       ...);

#endif
