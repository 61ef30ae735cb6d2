/* Recurring schedules ([schedule NAME], docs/schedules.md): every daemon with a section
 * keeps its next occurrences put ahead of time, each once across all daemons. The guard
 * is the schedule's state node: a pass reads it, and its puts go in one transaction with
 * a write of the node at the version read, so of two daemons that read the same state one
 * puts and the other finds the node moved on. Missed occurrences (every daemon down, or
 * ZooKeeper away) follow the section's misfire rule. */
#ifndef DEFERD_SCHEDULER_H
#define DEFERD_SCHEDULER_H

struct deferd;
struct scheduler;

struct scheduler *scheduler_new(struct deferd *d);
void scheduler_free(struct scheduler *s);
/* The config's schedules changed (SIGHUP): new sections start, changed ones put their
 * next occurrences by the new rules, removed ones stop. Call after the config's schedule
 * objects were replaced and before the old ones are freed. */
void scheduler_reload(struct scheduler *s);
/* ZooKeeper is connected (again): every schedule passes now rather than at its next retry,
 * so that what fell due while it was away is put at once. */
void scheduler_session_up(struct scheduler *s);

#endif
