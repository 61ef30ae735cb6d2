/* Durable, cluster-wide pause flags: <root>/queues/<queue>/paused exists while the queue is
 * paused (deferctl pause/resume). Every daemon watches the flag of each of its queues and
 * stops or resumes dispatch when it changes. Loop thread only. */
#ifndef DEFERD_PAUSE_H
#define DEFERD_PAUSE_H

struct deferd;

/* (Re)reads every queue's flag with a watch: after each (re)connection, since a new
 * session has no watches and changes while away fired none. */
void pause_session_up(struct deferd *d);
/* Starts watching one queue's flag (a queue added by a reload). */
void pause_follow(struct deferd *d, const char *queue);
/* A watch event: returns 1 if PATH was a pause flag (handled), else 0. */
int pause_on_watch(struct deferd *d, const char *path);

#endif
