/* An error's text written into the caller's buffer: the way pure-logic parsers (cron, tzone)
 * return why they refused an input without logging it themselves. */
#ifndef DEFERD_ERRTEXT_H
#define DEFERD_ERRTEXT_H

#include <stddef.h>

/* A limit's macro (a plain number) as text, for fixed messages that name it: "at most "
 * ERRTEXT_NUM(LIMIT_MAX), so that the message follows the limit. */
#define ERRTEXT_NUM(x) ERRTEXT_NUM_(x)
#define ERRTEXT_NUM_(x) #x

/* Formats into err (when err and len are set) and returns -1, so that a parser can write
 * `return errtext_fail(err, len, "...", ...);`. */
__attribute__((format(printf, 3, 4))) int errtext_fail(char *err, size_t len, const char *fmt,
                                                       ...);

#endif
