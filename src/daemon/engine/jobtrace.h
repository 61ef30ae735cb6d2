/* Issue 43's optional per-job trace (deferd run with DEFERD_TXN_TRACE=1), on the consumer
 * slot a job holds: held (consumer chosen; for a job locked ahead, after its lock) ->
 * pushed -> ack received -> released (settle answered). Profiling only: STATS' trace.jobs
 * is no stable field. */
#ifndef DEFERD_JOBTRACE_H
#define DEFERD_JOBTRACE_H

#include <stddef.h>

struct job;

void jobtrace_hold(struct job *job);    /* consumers.c: a consumer slot taken */
void jobtrace_push(struct job *job);    /* dispatcher.c: pushed */
void jobtrace_ack(struct job *job);     /* settle.c: its ack received */
void jobtrace_release(struct job *job); /* consumers.c: the slot given back */
/* Appends " trace.jobs=..." (raw sums, see jobtrace.c) to BUF; 0 when the trace is off. */
int jobtrace_format(char *buf, size_t len);

#endif
