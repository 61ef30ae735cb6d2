/* A job's life cycle as one table (docs/architecture.md, "The life cycle of a job"): its
 * states, the events that move it, which states each event may start from, and what each
 * sends to ZooKeeper. jobs.c's job_transition() is the one way a job changes state and
 * checks every change against this table. Pure logic: no job record, no ZooKeeper. */
#ifndef DEFERD_LIFECYCLE_H
#define DEFERD_LIFECYCLE_H

enum job_state {
    JS_DELAYED,   /* in the delay heap */
    JS_READY,     /* in the ready heap */
    JS_LOCKING,   /* lock transaction and data read in flight */
    JS_INFLIGHT,  /* pushed to its owner, lock held */
    JS_SETTLING,  /* ack/nack/release in flight */
    JS_CHECKING,  /* locked by someone else; exists+watch on the lock in flight */
    JS_HELD,      /* in no heap, no call in flight: locked by someone else and waiting for
                   * the lock watch, or just made (job_new), or left by a lost session */
    JS_ARMED,     /* locked by us ahead of its due time, in the armed heap, no consumer */
    JS_COUNT
};

enum job_event {
    JE_WAIT,    /* due later, or offered again after a failure: into the delay heap */
    JE_DUE,     /* due: into the ready heap */
    JE_LOCK,    /* the lock transaction is sent (or a lock taken ahead is given a consumer) */
    JE_ARM,     /* locked ahead of its due time, no consumer yet: into the armed heap */
    JE_DELIVER, /* pushed to its consumer, or its lease renewed: into the lease heap */
    JE_SETTLE,  /* an ack, nack, release, dead-lettering or its check is sent or held */
    JE_KEEP,    /* a settle held over a disconnection goes back to its consumer first */
    JE_CHECK,   /* locked by someone else: the lock's exists+watch is sent */
    JE_PARK,    /* no heap, no call: waits for a lock watch, a new session, or its end */
    JE_COUNT
};

/* One row of the table: the state an event leads to, the states it may start from (a bit
 * per state), and what the event sends to ZooKeeper. */
struct job_rule {
    enum job_state to;
    unsigned from;
    const char *sends;
};

#define JS_BIT(s) (1u << (s))

const struct job_rule *job_rule(enum job_event ev);
/* The state EV leads to from FROM, or -1 when the table has no such transition. */
int job_next_state(enum job_state from, enum job_event ev);
const char *job_state_name(enum job_state st);
const char *job_event_name(enum job_event ev);

#endif
