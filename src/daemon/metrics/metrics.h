/* The metrics registry: per-queue counters, delivery lateness, ZooKeeper request times.
 * Every layer counts here (the ZooKeeper store too); it reads nothing of theirs, and
 * metrics_expose.c turns it into text. Loop thread only; every function accepts a NULL
 * registry and then does nothing. */
#ifndef DEFERD_METRICS_H
#define DEFERD_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct deferd;
struct evbuffer;
struct metrics;
struct queue_config;

enum metrics_event { ME_PUT, ME_ACKED, ME_NACKED, ME_EXPIRED, ME_DEAD_LETTERED, ME_COUNT };
/* Why a put to a configured queue was refused. */
enum metrics_refusal { MR_QUEUE_FULL, MR_UNAVAILABLE, MR_FAILED, MR_COUNT };
/* What a schedule's pass did (scheduler.c), counted once its transaction is applied. */
enum metrics_sched_event { MS_PUT, MS_MISFIRED, MS_OVERLAP_SKIPPED, MS_COUNT };
/* The dashboard's actions (docs/web.md), by what was asked and how it ended: done, refused
 * (no token, a wrong one, a bad CSRF value or input), or failed (ZooKeeper said no). */
enum metrics_web_action { WA_PAUSE, WA_RESUME, WA_CANCEL, WA_RESCHEDULE, WA_KICK, WA_DELETE,
                          WA_KICK_ALL, WA_DELETE_ALL, WA_LOGIN, WA_COUNT };
enum metrics_web_result { WR_OK, WR_REFUSED, WR_FAILED, WR_COUNT };
extern const char *const metrics_web_action_names[WA_COUNT];
extern const char *const metrics_web_result_names[WR_COUNT];
enum metrics_zk_op { ZOP_MULTI, ZOP_CREATE, ZOP_GET, ZOP_CHILDREN, ZOP_EXISTS, ZOP_SET,
                     ZOP_DELETE, ZOP_COUNT };

struct metrics *metrics_new(struct deferd *d);
void metrics_free(struct metrics *m);

void metrics_event(struct metrics *m, const struct queue_config *qc, enum metrics_event ev);
void metrics_refused(struct metrics *m, const struct queue_config *qc, enum metrics_refusal why);
/* ZooKeeper refused a request for one of the queue's znodes with NoAuth (its ACL). */
void metrics_denied(struct metrics *m, const struct queue_config *qc);
/* A kept key older than the queue's key_retention deleted by this daemon (keysweep.c). */
void metrics_key_expired(struct metrics *m, const struct queue_config *qc);
/* A job was pushed to a consumer. Its lateness is observed only on the first delivery at
 * this due time (attempt == prior_attempts + 1; due_ms 0 = no due time): a job released and
 * delivered again keeps its old due time, which would count the earlier holder's time. */
void metrics_delivered(struct metrics *m, const struct queue_config *qc, uint32_t attempt,
                       uint32_t prior_attempts, uint64_t due_ms);
/* A due job of a queue with a concurrency limit waited MS for a slot (limit.h). */
void metrics_limit_wait(struct metrics *m, const struct queue_config *qc, int64_t ms);
/* N occurrences of schedule NAME were put, missed, or passed over by overlap = skip. A
 * schedule removed from the config keeps its counters (counters never go back). */
void metrics_schedule(struct metrics *m, const char *name, enum metrics_sched_event ev,
                      uint64_t n);
void metrics_web_action(struct metrics *m, enum metrics_web_action a,
                        enum metrics_web_result r);
/* A ZooKeeper request took NS nanoseconds from the call to its completion. */
void metrics_zk_request(struct metrics *m, enum metrics_zk_op op, int64_t ns);

#endif
