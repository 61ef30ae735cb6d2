/* The sweep of kept keys: a queue with key_retention keeps an acked job's key node as
 * "done <ack ms> <name>" (settle.c); once older than the retention it is deleted here, so
 * that keys/ does not grow for ever. Every daemon sweeps every native queue with a retention,
 * each queue on its own: a pass lists the queue's keys/ directory, then reads the key nodes
 * of a few hash directories each second and deletes the expired ones with the version it
 * read, so a put that took the key over meanwhile, or another daemon's sweep, wins. A
 * queue's next pass starts a quarter of its retention (5 s .. 1 day) after the last one
 * began, and is spread over that time. Loop thread only. */
#ifndef DEFERD_KEYSWEEP_H
#define DEFERD_KEYSWEEP_H

struct deferd;
struct keysweep;

struct keysweep *keysweep_new(struct deferd *d);
/* After zkstore_free(): the calls in flight have been completed by then. */
void keysweep_free(struct keysweep *ks);

#endif
