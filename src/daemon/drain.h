/* Graceful shutdown (SIGTERM, SIGINT): no new dispatches or puts, consumers get
 * `[daemon] drain_grace` to settle what they hold, then the rest is released so that
 * another daemon delivers it, and the loop ends. A second signal ends it at once. */
#ifndef DEFERD_DRAIN_H
#define DEFERD_DRAIN_H

struct deferd;
struct drain;

/* Starts draining (the first signal), or stops the loop at once (any later one). */
void drain_signal(struct deferd *d, int sig);
void drain_free(struct drain *dr);

#endif
