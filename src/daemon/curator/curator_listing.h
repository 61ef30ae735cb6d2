/* Listings of a Curator queue and of its lock directory, with watches (curator_listing.c):
 * what the engine and main.c start and route to it. */
#ifndef DEFERD_CURATOR_LISTING_H
#define DEFERD_CURATOR_LISTING_H

struct dispatcher;
struct dqueue;

/* Lists Q's Curator queue and lock directories (idempotent). 0, or -1. */
int curator_listing_start(struct dispatcher *ds, struct dqueue *q);
/* A watch fired: 1 when PATH is a followed queue or lock directory. */
int curator_listing_on_watch(struct dispatcher *ds, const char *path);

#endif
