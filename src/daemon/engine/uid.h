/* Job uids (docs/zookeeper-layout.md): a random prefix drawn once per run and a counter
 * from a random start, so that two runs repeat one only if they draw the same prefix and
 * their counters' ranges overlap. Loop thread only. */
#ifndef DEFERD_UID_H
#define DEFERD_UID_H

#include <stdint.h>

#include "layout.h"

struct uidgen {
    uint64_t prefix;  /* also names this daemon's shards (putset.c) */
    uint64_t counter;
};

/* 0, or -1 when no random bits could be drawn. */
int uid_init(struct uidgen *g);
void uid_next(struct uidgen *g, char uid[LAYOUT_UID_MAX + 1]);

#endif
