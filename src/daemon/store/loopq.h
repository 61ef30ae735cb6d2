/* Hand-off from other threads to the libevent loop: a locked list plus an eventfd wakeup.
 * Anything pushed here is handled later on the loop thread, in push order. */
#ifndef DEFERD_LOOPQ_H
#define DEFERD_LOOPQ_H

struct event_base;

struct loopq_item {
    struct loopq_item *next;
};

typedef void (*loopq_fn)(struct loopq_item *item, void *ctx);

struct loopq;

struct loopq *loopq_new(struct event_base *base, loopq_fn handler, void *ctx);
void loopq_push(struct loopq *q, struct loopq_item *item); /* any thread */
void loopq_drain(struct loopq *q);                          /* loop thread: handle all now */
void loopq_free(struct loopq *q);                           /* items left are handed over */

#endif
