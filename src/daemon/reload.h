/* SIGHUP: the configuration file read again (with the same -o overrides) and applied to the
 * running daemon where that is safe; connections are not touched. */
#ifndef DEFERD_RELOAD_H
#define DEFERD_RELOAD_H

#include <stddef.h>

struct config;
struct deferd;

/* LIVE is the daemon's configuration (d->cfg): its queue_config objects stay where they are
 * and take the new values; new queues are added to it. An invalid file changes nothing.
 * Returns 0 when the file was applied, -1 when it was refused (logged either way). */
int reload_config(struct deferd *d, struct config *live, const char *const *overrides,
                  size_t noverrides);

#endif
