/* deferctl stats [QUEUE] [--json]: the daemon's STATS (or STATS QUEUE) as a table or as
 * JSON; for a queue also its dead letters, counted in ZooKeeper through deferd.ini. */
#ifndef DEFERD_DEFERCTL_STATS_H
#define DEFERD_DEFERCTL_STATS_H

#include <stdio.h>

void deferctl_stats_usage(FILE *f);
/* ZooKeeper (dead letters, pause reasons) through deferctl's config. Returns deferctl's
 * exit status. */
int deferctl_stats(const char *sock, int argc, char **argv);

#endif
