/* The payload stash: payloads of jobs this daemon just put, due soon, whose bucket the
 * mirror has not listed yet. When the listing shows the job, its payload comes from here
 * instead of a read from ZooKeeper at delivery. Bounded in bytes and in time. */
#ifndef DEFERD_STASH_H
#define DEFERD_STASH_H

#include <stddef.h>
#include <stdint.h>

struct stash;

struct stash *stash_new(size_t max_bytes);
void stash_free(struct stash *s);
/* Takes PAYLOAD (malloc'd) for PATH, kept until UNTIL_MS (wall) at most. Returns 0, or -1
 * when it does not fit (the caller keeps the payload). */
int stash_put(struct stash *s, const char *path, unsigned char *payload, size_t len,
              int64_t until_ms, int64_t now_ms);
/* Hands over the payload stashed for PATH (NULL if none). */
unsigned char *stash_take(struct stash *s, const char *path, size_t *len);

#endif
