/* Known buckets: bucket paths this daemon created or wrote to lately, so that a put into
 * one of them goes straight into a batch without creating its bucket first. A bounded
 * memory (oldest forgotten first); a bucket deleted meanwhile makes the put fail with
 * NoNode, and the put path creates it again. */
#ifndef DEFERD_BUCKETS_H
#define DEFERD_BUCKETS_H

#include <stddef.h>

struct buckets;

struct buckets *buckets_new(size_t capacity);
void buckets_free(struct buckets *b);
int buckets_known(const struct buckets *b, const char *path);
/* Counts one more put into a known bucket; returns the count before it (0 if unknown). */
unsigned buckets_count_put(struct buckets *b, const char *path);
void buckets_add(struct buckets *b, const char *path); /* no-op when out of memory */

#endif
