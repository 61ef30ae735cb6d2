/* The "key=value key=value" lines of STATS (docs/protocol.md): split, and turned into JSON
 * members the way deferctl stats --json and the dashboard's API both show them, so that
 * the two agree by construction. */
#ifndef DEFERD_KVLINE_H
#define DEFERD_KVLINE_H

#include <stddef.h>

struct jsonw;

struct kv {
    const char *key, *value;
};

/* Splits TEXT in place at spaces and '='; at most MAX fields; how many. */
size_t kvline_split(char *text, struct kv *f, size_t max);
/* The value of KEY among F, or NULL. */
const char *kvline_get(const struct kv *f, size_t n, const char *key);
/* Is S a number as the daemon writes them: -?(0|[1-9][0-9]*)(.[0-9]+)? */
int kvline_number(const char *s);
/* The "txn.*" counters are "items/multis": two numbers. */
int kvline_txn_pair(const struct kv *f, unsigned long long *items, unsigned long long *multis);
/* One field as a JSON member: "-" is null, "items/multis" of txn.* an object, a number a
 * number, anything else a string. */
void kvline_json(struct jsonw *w, const struct kv *f);

#endif
