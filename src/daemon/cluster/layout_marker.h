/* The layout version of the root: <root>/layout holds "2" once every daemon on the root
 * reads packs (docs/zookeeper-layout.md, "Rolling upgrade"). Until then no daemon packs, so
 * that a daemon of version 1 never misses a job; every daemon reads packs either way. Each
 * daemon watches the marker and packs from the moment it reads "2". Loop thread only. */
#ifndef DEFERD_LAYOUT_MARKER_H
#define DEFERD_LAYOUT_MARKER_H

struct deferd;

/* Reads the marker with a watch: after each (re)connection (a new session has no watches). */
void layout_marker_session_up(struct deferd *d);
/* A watch event: 1 if PATH was the marker (read again), else 0. */
int layout_marker_on_watch(struct deferd *d, const char *path);

#endif
