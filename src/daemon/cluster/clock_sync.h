/* The cluster clock, kept in step with ZooKeeper's transaction clock (clock_estimate.h):
 * each daemon owns an ephemeral znode <root>/daemons/<host>:<pid>:<run> and writes it every
 * CLOCK_REFRESH_MS; the time ZooKeeper stamps on each write, against our send and answer
 * times, is a sample. The estimate is published as the daemon's time (cluster_time.h). Until
 * the first sample, and while this host's clock is further from ZooKeeper's than
 * [daemon] clock_limit, no job is pushed. Loop thread only. */
#ifndef DEFERD_CLOCK_SYNC_H
#define DEFERD_CLOCK_SYNC_H

#include <stdint.h>

struct deferd;
struct clock_sync;

enum clock_state {
    CLK_UNSYNCED,  /* no sample yet: no pushes */
    CLK_SYNCED,    /* ZooKeeper's clock */
    CLK_LOCAL,     /* [daemon] clock = local */
    CLK_DENIED,    /* ZooKeeper refused our node: the local clock, with an error logged */
    CLK_OVER_LIMIT, /* this host's clock is beyond clock_limit: no pushes */
    CLK_COUNT
};

struct clock_report {
    enum clock_state state;
    int have;              /* an estimate exists (the rest is meaningful) */
    double skew_ms;        /* this host's wall clock minus ZooKeeper's: > 0 when ahead */
    double error_ms;       /* the skew is within +- this */
    uint64_t samples, jumps;
};

struct clock_sync *clock_sync_new(struct deferd *d);
void clock_sync_free(struct clock_sync *cs);
/* FN(CTX) once due times can be made (the first sample, or the fall-back to the host's clock
 * when ZooKeeper refuses our node): the daemon is ready to take puts. */
void clock_sync_on_ready(struct clock_sync *cs, void (*fn)(void *ctx), void *ctx);
/* After each (re)connection: make our node if needed and take samples at once. */
void clock_sync_session_up(struct clock_sync *cs);
void clock_sync_report(const struct clock_sync *cs, struct clock_report *out);
const char *clock_state_name(enum clock_state st);

#endif
