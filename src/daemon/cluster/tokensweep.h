/* The sweep of put tokens (PUT idem=, zookeeper-layout.md "Put tokens"): a token is only
 * needed while its put may be retried, so whole minute directories under a queue's
 * tokens/ are deleted once their minute ended LAYOUT_TOKEN_KEEP_MS ago by ZooKeeper's
 * clock. Every daemon sweeps every native queue: a pass lists tokens/, then, one old
 * directory at a time, lists it, deletes its nodes (a few hundred calls on their way at
 * most) and then the directory; NoNode (another daemon's sweep was first) is fine. A pass
 * starts a few seconds after the daemon's start and then every minute. Loop thread only. */
#ifndef DEFERD_TOKENSWEEP_H
#define DEFERD_TOKENSWEEP_H

#include <stdint.h>

struct deferd;
struct tokensweep;

struct tokensweep_counts {
    uint64_t passes, dirs, tokens; /* done; directories and tokens this daemon deleted */
};

struct tokensweep *tokensweep_new(struct deferd *d);
/* After zkstore_free(): the calls in flight have been completed by then. */
void tokensweep_free(struct tokensweep *ts);
/* Its counts so far (zeros without a sweep): STATS and /metrics show them. */
void tokensweep_report(const struct tokensweep *ts, struct tokensweep_counts *out);

#endif
