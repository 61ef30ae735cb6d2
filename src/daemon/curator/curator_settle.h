/* Settling the parts of a locked Curator item (curator_settle.c): what the engine asks of
 * it through the format's table (foreign_format.h). */
#ifndef DEFERD_CURATOR_SETTLE_H
#define DEFERD_CURATOR_SETTLE_H

#include <stdint.h>

struct dispatcher;
struct job;
struct reply;

/* A part goes back to the ready heap (the item stays locked); DELIVERED counts an attempt. */
void curator_settle_release(struct dispatcher *ds, struct job *job, int delivered);
/* Ack (ACK set) or nack of a held part; the reply is completed now or later. */
void curator_settle_part(struct dispatcher *ds, struct job *job, int ack, int has_delay,
                         uint64_t delay_ms, struct reply *r);
void curator_settle_job_freed(struct job *job);

#endif
