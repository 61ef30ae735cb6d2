/* libdeferd: blocking client for the deferd socket protocol (docs/protocol.md).
 *
 * One deferd_client is one connection. It is not thread-safe: use it from one thread at a
 * time, or give each thread its own connection. Every call that talks to the daemon sends
 * one request and waits for its reply (except the pipelined puts and acks, below);
 * pushes (JOB, DEADLINE, EXPIRED, CANCELLED, STATE) that arrive meanwhile are queued inside
 * the client and handed out by deferd_next_event() (all of them) or deferd_next_job() (jobs
 * only) in arrival order.
 *
 * Errors are return values (DEFERD_OK or a negative DEFERD_E* code); the text of the last
 * failure is kept in the client (deferd_last_error). After DEFERD_EIO, DEFERD_EPROTO,
 * DEFERD_ENOMEM or DEFERD_ETIMEDOUT from a request, the reply stream may be out of step, so
 * the connection is marked unusable: every later call returns DEFERD_EIO (results of
 * pipelined requests that had already arrived are still handed out, below). Close it and
 * connect again. DEFERD_ESERVER and DEFERD_EARG leave the connection usable (and so does
 * DEFERD_ETIMEDOUT from deferd_put_recv() and deferd_ack_recv(), which consume nothing).
 *
 * Producers that want more than one put in flight use the pipelined calls
 * deferd_put_send() / deferd_put_recv() instead of deferd_put(), and consumers that want to
 * ack without waiting for each ack's ZooKeeper round trip use deferd_ack_send() /
 * deferd_ack_recv() instead of deferd_ack(): see "Pipelined puts" and "Pipelined acks" below.
 */
#ifndef DEFERD_CLIENT_H
#define DEFERD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* This header's version; CMake reads the project's version from these three lines. */
#define DEFERD_VERSION_MAJOR 0
#define DEFERD_VERSION_MINOR 3
#define DEFERD_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if */
#define DEFERD_VERSION_NUMBER \
    (DEFERD_VERSION_MAJOR * 10000 + DEFERD_VERSION_MINOR * 100 + DEFERD_VERSION_PATCH)

/* The version of the libdeferd actually linked ("0.3.0"), which may be newer than the
 * header a program was built with. */
const char *deferd_version(void);

#define DEFERD_DEFAULT_SOCKET "/run/deferd/deferd.sock"
#define DEFERD_QUEUE_MAX 64      /* bytes in a queue name */
#define DEFERD_QUEUE_SIZE 72     /* buffer big enough for any queue name plus its NUL */
#define DEFERD_ID_MAX 240        /* bytes in a job id */
#define DEFERD_ID_SIZE 256       /* buffer big enough for any job id plus its NUL */
#define DEFERD_UID_SIZE 33       /* buffer big enough for any job uid plus its NUL */
#define DEFERD_INFLIGHT_MAX 10000
#define DEFERD_TTR_MIN_MS 1000        /* time-to-run lease: 1 s .. */
#define DEFERD_TTR_MAX_MS 604800000   /* .. 7 days */

enum {
    DEFERD_OK = 0,
    DEFERD_EIO = -1,       /* socket error, connection closed, or connection unusable */
    DEFERD_ESERVER = -2,   /* the daemon answered ERR; see deferd_last_error_code() */
    DEFERD_ETIMEDOUT = -3, /* no (complete) message within the timeout */
    DEFERD_EPROTO = -4,    /* the daemon sent data that does not follow the protocol */
    DEFERD_EARG = -5,      /* invalid argument; nothing was sent */
    DEFERD_ENOMEM = -6,
};

typedef struct deferd_client deferd_client;

/* A job pushed by the daemon. payload is malloc'd, always non-NULL and followed by a NUL
 * byte that len does not count (so text payloads can be used as C strings). */
typedef struct deferd_job {
    char id[DEFERD_ID_SIZE];
    char queue[DEFERD_QUEUE_SIZE];
    uint32_t attempt;       /* 1 on first delivery; > 1: an earlier consumer may have run it */
    int64_t due_ms;         /* due time, ms since the Unix epoch */
    uint32_t priority;      /* lower is more urgent */
    uint32_t ttr_ms;        /* time to run: the lease on this delivery lasts this long from the
                             * push (or from the last deferd_touch()); then it expires */
    unsigned char *payload;
    size_t len;
} deferd_job;

/* A push from the daemon, as returned by deferd_next_event(). */
typedef enum {
    DEFERD_EV_JOB = 1,      /* a job was delivered to this connection */
    DEFERD_EV_DEADLINE,     /* the lease of a held job ends in ms_left ms (once per lease) */
    DEFERD_EV_EXPIRED,      /* the lease ran out (or the lock was lost): the daemon released
                             * the job, which will be delivered again with a higher attempt,
                             * to another connection first; ack/nack/touch of it now fail
                             * with LEASE_LOST. Answer it (ack or nack, refused with
                             * LEASE_LOST) once you stop working on it: until then it keeps
                             * its inflight slot (for one ttr at most) */
    DEFERD_EV_STATE,        /* the daemon's state changed: state holds CONNECTED,
                             * SUSPENDED, RECONNECTED or LOST (its ZooKeeper connection),
                             * or DRAINING (shutting down: no new jobs, settle what you
                             * hold); later daemons may send other upper-case words */
    DEFERD_EV_CANCELLED,    /* the job was cancelled while this connection held it (CANCEL
                             * force=1, deferctl cancel --force): it is gone and will not be
                             * delivered again; stop working on it if you can, and ack or
                             * nack it (LEASE_LOST) to free its inflight slot */
} deferd_event_kind;

typedef struct deferd_event {
    deferd_event_kind kind;
    deferd_job job;         /* JOB: the whole job (owns a payload). DEADLINE, EXPIRED,
                             * CANCELLED: only
                             * job.id is set, the rest is zero and payload is NULL */
    int64_t ms_left;        /* DEADLINE only: ms until the lease ends (0: any moment now) */
    char state[16];         /* STATE only */
} deferd_event;

/* Fills BUF with the daemon's status line ("key=value ..."); see docs/protocol.md, STATS. */
int deferd_stats(deferd_client *c, char *buf, size_t len);
/* The same for one queue (STATS QUEUE): its counters, jobs, consumers, delivery lateness and
 * rates. An unconfigured queue fails with DEFERD_ESERVER, code UNKNOWN_QUEUE. */
int deferd_stats_queue(deferd_client *c, const char *queue, char *buf, size_t len);

/* Options for deferd_put(); zero-initialise, then set the has_* flags you need.
 * has_delay and has_at are mutually exclusive; neither means "due now". */
typedef struct deferd_put_opts {
    int has_delay;
    uint64_t delay_ms;
    int has_at;
    uint64_t at_ms;         /* ms since the Unix epoch */
    int has_priority;
    uint32_t priority;      /* default: the queue's configured priority */
    int has_ttr;
    uint64_t ttr_ms;        /* lease length, DEFERD_TTR_MIN_MS .. DEFERD_TTR_MAX_MS;
                             * default: the queue's configured ttr */
    const char *key;        /* NULL or an idempotency key (DEFERD_KEY_MAX bytes of
                             * [A-Za-z0-9_.:@-], first a letter or digit): while a job with
                             * this key exists in the queue, a put with it creates nothing
                             * and returns the existing job's id as a duplicate */
    const char *group;      /* NULL or the job's group (DEFERD_GROUP_MAX bytes, the key's
                             * characters): a queue's groups take turns at delivery, and
                             * per-group limits count by it (docs/limits.md) */
} deferd_put_opts;

#define DEFERD_KEY_MAX 64
#define DEFERD_GROUP_MAX 32
#define DEFERD_BATCH_MAX 1000   /* jobs in one batch or one ack/nack with follow-ups */

/* One job of deferd_put_one(), deferd_put_batch(), deferd_ack_then(), deferd_nack_then().
 * In: queue, payload, len, opts. Out: id (the new job's, or for a duplicate the existing
 * job's) and duplicate (1 if the key was taken and nothing was created). */
typedef struct deferd_put_item {
    const char *queue;
    const void *payload;
    size_t len;
    deferd_put_opts opts;
    char id[DEFERD_ID_SIZE];
    int duplicate;
} deferd_put_item;

/* Connects to the daemon's socket (NULL: DEFERD_DEFAULT_SOCKET). On failure returns NULL
 * with errno set (ECONNREFUSED or ENOENT: no daemon listens there; ENAMETOOLONG, EINVAL:
 * an unusable path) and, if err is not NULL, writes a message into err[errlen]. */
deferd_client *deferd_connect(const char *socket_path, char *err, size_t errlen);

/* Closes the connection and frees the client and any queued jobs. NULL is a no-op. The
 * daemon releases jobs that were pushed but not acked or nacked. */
void deferd_close(deferd_client *c);

/* The socket, for poll()/epoll. Readable data may already be buffered in the client, so
 * after the fd turns readable (and after any request, which may queue pushes) call
 * deferd_next_event(c, &ev, 0) (or deferd_next_job) until it returns DEFERD_ETIMEDOUT before
 * polling again. Do not read from or write to the fd yourself. */
int deferd_fd(const deferd_client *c);

/* How long deferd_put() and deferd_put_one() go on sending a put again after deferd
 * answered UNAVAILABLE, when sending it again cannot make a second job: the answer said
 * stored=no (e.g. ZooKeeper stayed away longer than the daemon's hold_writes), or
 * stored=maybe (the connection to ZooKeeper broke before its answer) and the put carries a
 * put token (in a queue that keeps them: not tokens=no) or a key (a stored first try then
 * answers the retry with its job's id); not after reason=draining, max_connections or
 * permission (docs/protocol.md, Errors; from a daemon older than these fields, by the
 * words of its text). A put without a key carries a token of its own (idem=, docs/protocol.md),
 * made by the library, unless the retry is 0. Waits 100 ms, then twice as long each time,
 * at most 2 s. Default DEFERD_PUT_RETRY_DEFAULT_MS; 0: never (and no token). Batches,
 * pipelined puts and a put whose connection broke (DEFERD_EIO) are not sent again: see
 * docs/guarantees.md, "Writes while ZooKeeper is away". */
#define DEFERD_PUT_RETRY_DEFAULT_MS 10000
int deferd_set_put_retry(deferd_client *c, int retry_ms);

/* Timeout for the reply to each blocking request (PUT, BATCH, SUB, ACK, NACK, TOUCH, CANCEL,
 * RESCHEDULE, PING, STATS); -1 (the default) waits forever. A request that times out leaves the connection unusable. */
int deferd_set_timeout(deferd_client *c, int timeout_ms);

/* Schedules a job. opts may be NULL. If id_out is not NULL, id_len must be more than
 * DEFERD_ID_MAX (DEFERD_ID_SIZE will do) and the new job id is stored there. Returns
 * DEFERD_OK once the daemon has stored the job in ZooKeeper. An UNAVAILABLE answer is
 * retried when that is safe (deferd_set_put_retry()); DEFERD_ESERVER with the code
 * UNAVAILABLE then says whether the job may have been stored: deferd_last_error_stored().
 * With opts->key, a put whose key is taken also returns DEFERD_OK, with the existing job's
 * id (deferd_put_one() tells the two apart). An invalid key is DEFERD_EARG. */
int deferd_put(deferd_client *c, const char *queue, const void *payload, size_t len,
               const deferd_put_opts *opts, char *id_out, size_t id_len);

/* ---- Pipelined puts ----
 *
 * deferd_put_send() queues a PUT and returns at once; deferd_put_recv() returns the result
 * of the oldest put sent and not yet received. deferd answers the requests of a connection
 * in order, so the n-th deferd_put_recv() answers the n-th deferd_put_send(). Typical use:
 * keep up to DEPTH puts in flight, calling deferd_put_recv() whenever DEPTH are outstanding
 * and at the end until deferd_puts_outstanding() is 0. deferd_put_recv() hands out a reply
 * that has arrived without writing the queue, and writes it before it would wait: such a
 * producer writes the puts it sent after each reply at once, not a put a write.
 *
 * Pipelined puts and pipelined acks (below) can be outstanding at the same time on one
 * connection; each recv call returns the oldest result of its own kind, and replies of the
 * other kind that arrive first are set aside for their own recv call.
 *
 * While puts or acks are outstanding (sent and not yet received), the blocking request
 * calls (deferd_put, deferd_subscribe, deferd_ack, deferd_nack, deferd_touch, deferd_ping,
 * deferd_stats) refuse with DEFERD_EARG and "N pipelined puts outstanding: call
 * deferd_put_recv first" (or acks and deferd_ack_recv, or both); nothing is sent and the
 * connection stays usable. deferd_next_event() and deferd_next_job() do work: they write
 * queued requests on the way and set aside the replies they meet for deferd_put_recv() and
 * deferd_ack_recv(). Pushes that arrive at any point are queued as for every other call.
 *
 * If the connection becomes unusable (DEFERD_EIO, DEFERD_EPROTO, DEFERD_ENOMEM) with puts or
 * acks outstanding, results that had already arrived are still handed out in order; every
 * other outstanding request is unknown (it may or may not have been applied), and its recv
 * call returns the error (DEFERD_EIO after the first) and takes it off the outstanding
 * count, so that receiving until nothing is outstanding ends.
 *
 * deferd_close() with puts outstanding drops those not yet written; those written may or
 * may not be stored. */

/* Queues a PUT (arguments as for deferd_put(), key included: a duplicate's result is
 * DEFERD_OK and the existing job's id) and returns without waiting for the reply.
 * Requests are buffered in the client and written once 64 KiB are waiting, or by
 * deferd_put_recv() and deferd_ack_recv() (before they wait: not when the reply they hand
 * out has arrived already), deferd_next_event() and deferd_next_job() (these
 * two write only what the socket takes at once when they have a push to hand out
 * already); the only wait is for room in the socket's send buffer, during which replies
 * and pushes that arrive are read and kept.
 * Returns DEFERD_OK once queued (deferd_puts_outstanding() grows by one). DEFERD_EARG:
 * nothing was queued and the connection is unchanged; so for DEFERD_ENOMEM if
 * deferd_puts_outstanding() did not grow. Otherwise an error comes from writing the queue
 * (or reading what arrived meanwhile): DEFERD_EIO, DEFERD_EPROTO, DEFERD_ENOMEM, and the
 * connection is unusable. */
int deferd_put_send(deferd_client *c, const char *queue, const void *payload, size_t len,
                    const deferd_put_opts *opts);

/* Hands out the reply to the oldest outstanding put; when it has not arrived, writes all
 * queued requests first, then waits up to timeout_ms for it (-1: forever;
 * deferd_set_timeout() does not apply):
 * DEFERD_OK and, if id_out is not NULL, the job id in id_out (id_len more than
 * DEFERD_ID_MAX), as from deferd_put(); DEFERD_ESERVER for an ERR reply (after UNAVAILABLE
 * it is unknown whether the job was stored), with deferd_last_error() and
 * deferd_last_error_code() set (e.g. "UNKNOWN_QUEUE"); the connection stays usable and the
 * next call returns the next put's result. Either way that put is no longer outstanding.
 * DEFERD_ETIMEDOUT: nothing was consumed, the put is still outstanding and the connection
 * usable; call again. DEFERD_EARG if no put is outstanding (or id_len is too small).
 * DEFERD_EIO, DEFERD_EPROTO, DEFERD_ENOMEM: the connection is unusable, and this put, not
 * answered, is no longer outstanding: it is unknown whether the job was stored. */
int deferd_put_recv(deferd_client *c, char *id_out, size_t id_len, int timeout_ms);

/* Puts sent with deferd_put_send() whose result deferd_put_recv() has not returned yet. */
int deferd_puts_outstanding(const deferd_client *c);

/* ---- Pipelined acks ----
 *
 * deferd_ack_send() queues an ACK and returns at once; deferd_ack_recv() returns the result
 * of the oldest ack sent and not yet received, in order, as for pipelined puts (above,
 * which also says what other calls do meanwhile). deferd sends acks that arrive together
 * to ZooKeeper as few transactions, so a consumer that does not wait for each ack's round
 * trip handles many more jobs. Typical use with inflight N: after each job, deferd_ack_send()
 * it and go on with deferd_next_job(), which writes the queued acks and sets their replies
 * aside; call deferd_ack_recv(c, id, sizeof id, 0) whenever more than about N acks are
 * outstanding (DEFERD_ETIMEDOUT: not answered yet, try later), and at the end until
 * deferd_acks_outstanding() is 0.
 *
 * An ack is done once deferd_ack_recv() returned DEFERD_OK for it. A queued ack is written
 * by the next deferd_next_job(), deferd_next_event(), deferd_ack_recv() or deferd_put_recv()
 * (or by deferd_ack_send() once 64 KiB are queued). Until deferd has it, the job's lease
 * runs on, and until deferd has applied it, the job counts against the inflight limit: so
 * do not start long work with acks queued (deferd_ack_recv(c, NULL, 0, 0) writes them).
 * deferd_close() with acks outstanding drops those not yet written; those written may or
 * may not be applied (jobs not acked are released and delivered again). */

/* Queues an ACK of job_id (a job pushed to this connection, as for deferd_ack()) and returns
 * without waiting for the reply; buffered and written as pipelined puts are (they share
 * the buffer). Returns DEFERD_OK once queued (deferd_acks_outstanding() grows by one).
 * DEFERD_EARG: nothing was queued and the connection is unchanged; so for DEFERD_ENOMEM if
 * deferd_acks_outstanding() did not grow. Otherwise an error comes from writing the queue:
 * DEFERD_EIO, DEFERD_EPROTO, DEFERD_ENOMEM, and the connection is unusable. */
int deferd_ack_send(deferd_client *c, const char *job_id);

/* Hands out the reply to the oldest outstanding ack; when it has not arrived, writes all queued
 * requests first, then waits up to timeout_ms for it (-1: forever, 0: only what has arrived;
 * deferd_set_timeout() does not apply): DEFERD_OK once the daemon has deleted the job in
 * ZooKeeper; DEFERD_ESERVER for an ERR reply, with deferd_last_error() and
 * deferd_last_error_code() set ("LEASE_LOST", "NOT_FOUND", "UNAVAILABLE", as for deferd_ack());
 * the connection stays usable and the next call returns the next ack's result. Either way that
 * ack is no longer outstanding, and if id_out is not NULL (id_len more than DEFERD_ID_MAX) the
 * job id that ack was for is stored there. DEFERD_ETIMEDOUT: nothing was consumed, the ack is
 * still outstanding and the connection usable; call again. DEFERD_EARG if no ack is outstanding
 * (or id_len is too small). DEFERD_EIO, DEFERD_EPROTO, DEFERD_ENOMEM: the connection is
 * unusable, and this ack, not answered, is no longer outstanding (id_out is set): it is unknown
 * whether it was applied; if not, the job is delivered again. */
int deferd_ack_recv(deferd_client *c, char *id_out, size_t id_len, int timeout_ms);

/* Acks sent with deferd_ack_send() whose result deferd_ack_recv() has not returned yet. */
int deferd_acks_outstanding(const deferd_client *c);

/* Makes this connection a consumer of the comma separated queues. inflight: how many jobs
 * the daemon may push before one is acked or nacked (1..DEFERD_INFLIGHT_MAX; 0: the
 * daemon's default, 1). Calling it again adds queues and sets the new inflight. */
int deferd_subscribe(deferd_client *c, const char *queues_comma_separated, unsigned inflight);

/* Waits for the next push of any kind (JOB, DEADLINE, EXPIRED, CANCELLED, STATE), in
 * arrival order, up to timeout_ms (-1: forever, 0: only what has already arrived). On
 * DEFERD_OK *ev is
 * overwritten (not freed: clear it first when reusing); release it with
 * deferd_job_clear(&ev->job), which is right for every kind. Whatever the result, *ev is
 * zeroed first, so deferd_job_clear() is also safe after a failure. DEFERD_ETIMEDOUT and
 * DEFERD_ENOMEM leave the connection usable. Queued pushes are never dropped by a timeout. */
int deferd_next_event(deferd_client *c, deferd_event *ev, int timeout_ms);

/* Like deferd_next_event() but returns only jobs: DEADLINE, EXPIRED, CANCELLED and STATE
 * pushes that are queued before the next JOB are silently dropped. A program that keeps
 * jobs longer than their ttr should use deferd_next_event() (and deferd_touch()) instead;
 * otherwise it only learns of an expired lease when deferd_ack()/deferd_nack() fails with
 * LEASE_LOST (which also frees the inflight slot the taken job kept).
 * On DEFERD_OK *job is overwritten (not freed: clear it first when reusing) and owns a
 * payload; release it with deferd_job_clear(), which is also safe after a failure (*job
 * is zeroed first). DEFERD_ETIMEDOUT and DEFERD_ENOMEM leave the
 * connection usable; queued jobs are never dropped by a timeout. */
int deferd_next_job(deferd_client *c, deferd_job *job, int timeout_ms);

/* Frees the payload and resets the job; safe to call twice. */
void deferd_job_clear(deferd_job *job);

/* The job's stable uid (1-32 characters of [0-9a-z]) into uid (DEFERD_UID_SIZE will do):
 * unlike its id, which names its due time and attempts, the uid stays the same across
 * nacks, reschedules, redeliveries and a dead letter's kick, so logs and dedupe tables
 * should use it (with the queue: uids are unique per queue). Works on any job id, e.g. one
 * kept from an earlier delivery. DEFERD_EARG for an id without one (a Curator format
 * queue's item) or a buffer too small. */
int deferd_job_uid(const char *job_id, char *uid, size_t len);

/* The group the job was put with (deferd_put_opts.group) into group (DEFERD_GROUP_MAX + 1
 * bytes will do), "" for a job put without one; it is part of the job's id. DEFERD_EARG for
 * a malformed id or a buffer too small. */
int deferd_job_group(const char *job_id, char *group, size_t len);

/* How the children of a flow's parent ended (a FLOW with on=complete, docs/flows.md): the
 * parent's id, as delivered, carries how many were acked and how many dead-lettered.
 * 1 with both set; 0 (DEFERD_OK) for an id without them (any other job, or a parent still
 * waiting); DEFERD_EARG for a malformed id. */
int deferd_job_flow_results(const char *job_id, unsigned long *acked, unsigned long *dead);

/* Job done: the daemon deletes it. Only for jobs pushed to this connection. Fails with
 * DEFERD_ESERVER and code "LEASE_LOST" when the job's lease expired (or its lock was lost):
 * the job is then delivered again, so the work may be done twice. To ack without waiting
 * for each reply, see deferd_ack_send(). */
int deferd_ack(deferd_client *c, const char *job_id);

/* Job failed. delay_ms < 0: deliver again as soon as possible. delay_ms >= 0: reschedule
 * to now + delay_ms (the job then gets a new id). "LEASE_LOST" as for deferd_ack(). */
int deferd_nack(deferd_client *c, const char *job_id, int64_t delay_ms);
/* The same, and tells where the job went: DEAD_ID (DEFERD_ID_SIZE bytes) gets the id of
 * its dead letter when this was the queue's max_attempts-th attempt (deferctl dead show ID),
 * else "" (it is delivered again; an older daemon never tells, so always ""). */
int deferd_nack_dead(deferd_client *c, const char *job_id, int64_t delay_ms, char *dead_id,
                     size_t id_len);

/* Gives back a job pushed to this connection that was never started (a consumer that is
 * leaving, or that took more than it will run): it is delivered again, to any consumer,
 * with the same attempt number: this delivery does not count as an attempt (NACK
 * unrun=1). next_id (if not NULL; id_len more than DEFERD_ID_MAX) gets its id from now on:
 * the same, unless attempts were carried in its name (it had been moved after a failure).
 * A job taken from this connection meanwhile (EXPIRED, CANCELLED) gives DEFERD_ESERVER
 * with code "LEASE_LOST", which also frees the inflight slot deferd kept for it. */
int deferd_nack_unrun(deferd_client *c, const char *job_id, char *next_id, size_t id_len);

/* Stops pushes of the comma separated queues to this connection (NULL: of every queue;
 * UNSUB). Jobs it holds stay held: ack, nack or give them back. Jobs whose push was
 * already on its way may still arrive after it returns: give them back with
 * deferd_nack_unrun(). */
int deferd_unsubscribe(deferd_client *c, const char *queues_comma_separated);

/* Renews the lease of a job pushed to this connection: it then ends one full ttr from now.
 * Call it when a DEADLINE event arrives for a job that is still being worked on.
 * "LEASE_LOST" as for deferd_ack() (the lease had already expired). */
int deferd_touch(deferd_client *c, const char *job_id);

/* ---- Keys, batches, follow-up jobs, cancel and reschedule (docs/protocol.md) ---- */

/* A put that reports duplicates: item->id and item->duplicate are set on DEFERD_OK. */
int deferd_put_one(deferd_client *c, deferd_put_item *item);

/* Puts n (1 .. DEFERD_BATCH_MAX) jobs, all or none (BATCH). On DEFERD_OK every item's id and
 * duplicate are set, *stored (if not NULL) is n and *parts (if not NULL) the number of
 * ZooKeeper transactions used (above 1 only for batches larger than one ZooKeeper packet).
 * On an "ERR PARTIAL" reply (DEFERD_ESERVER, code "PARTIAL") the first *stored items have
 * their ids set and are stored, the rest are not (their duplicate flags are not reported);
 * deferd_last_error() then says "PARTIAL stored=<k> of <n>: <why>". On other errors
 * nothing was stored and *stored is 0; an invalid item is DEFERD_EARG naming it
 * ("item <i>: ...", from 1) with nothing sent. */
int deferd_put_batch(deferd_client *c, deferd_put_item *items, size_t n, unsigned *parts,
                     size_t *stored);

/* Puts a flow (FLOW, docs/flows.md): items[0] is the parent, items[1..n-1] its children
 * (n 2 .. DEFERD_BATCH_MAX), all stored or none, in one ZooKeeper transaction. The parent
 * waits until its children are settled: every child acked (ON "success", or NULL), or every
 * child acked or dead-lettered ("complete"); with "success" a dead child sends the parent
 * to its queue's dead letters instead. Then it is due at its own due time (at once if that
 * passed). On DEFERD_OK every item's id is set, the parent's first. Items take no key and
 * no put token, and a flow is never sent again by the library: after a lost answer
 * (deferd_last_error_stored() "maybe") look for the parent's children before putting it
 * again. Errors as for deferd_put_batch(), nothing stored. */
int deferd_put_flow(deferd_client *c, deferd_put_item *items, size_t n, const char *on);

/* Acks a held job and creates n follow-up jobs (1 .. DEFERD_BATCH_MAX) in one ZooKeeper
 * transaction: either all of it happens or none. On DEFERD_OK every item's id and duplicate
 * are set (a duplicate follow-up was not created). Errors as for deferd_ack(), or an item
 * error as for deferd_put_batch() ("TOO_LARGE" when it all does not fit one ZooKeeper
 * transaction); then nothing was created and the job is still held. */
int deferd_ack_then(deferd_client *c, const char *job_id, deferd_put_item *items, size_t n);
/* The same for a flow's child (docs/flows.md): the n follow-ups join the job's flow, in the
 * same transaction as its ack, so its parent also waits for them (a crawler that grows its
 * flow). Items take no key. "NOT_FOUND" when the flow is gone (released or cancelled);
 * "BAD_REQUEST" when the job is no flow's child. Nothing changed on an error. */
int deferd_ack_join(deferd_client *c, const char *job_id, deferd_put_item *items, size_t n);

/* Nacks a held job (delay_ms as for deferd_nack()) and creates n follow-up jobs in one
 * transaction. new_id (if not NULL) gets the job's new id when it was moved, else "". */
int deferd_nack_then(deferd_client *c, const char *job_id, int64_t delay_ms,
                     deferd_put_item *items, size_t n, char *new_id, size_t new_id_len);

/* Cancels a pending job by id (queue and key NULL) or by key (queue and key; job_id NULL;
 * cancelled_id tells which job that was). force:
 * also if a consumer holds it (whose ack then fails with LEASE_LOST); without it a held job
 * gives DEFERD_ESERVER with code "IN_FLIGHT". "NOT_FOUND": no such job. cancelled_id (if
 * not NULL) gets the id of the job cancelled. */
int deferd_cancel(deferd_client *c, const char *job_id, const char *queue, const char *key,
                  int force, char *cancelled_id, size_t id_len);

/* Moves a pending job (by id, or by queue and key) to due time at_ms (has_at) or now +
 * delay_ms. new_id (if not NULL; id_len more than DEFERD_ID_MAX) gets its new id.
 * "IN_FLIGHT", "NOT_FOUND" as for deferd_cancel(). */
int deferd_reschedule(deferd_client *c, const char *job_id, const char *queue,
                      const char *key, int has_at, uint64_t at_ms, uint64_t delay_ms,
                      char *new_id, size_t id_len);

/* Round trip to the daemon; DEFERD_OK if it answered PONG. */
int deferd_ping(deferd_client *c);

/* Text of the last failure, e.g. "UNKNOWN_QUEUE no queue 'x'" or "connection closed by
 * deferd"; "" if nothing failed yet. Valid until the next call on c. */
const char *deferd_last_error(const deferd_client *c);

/* The daemon's ERR code word of the last failure (e.g. "TOO_LARGE", "UNAVAILABLE"), or ""
 * if the last failure was not an ERR reply. */
const char *deferd_last_error_code(const deferd_client *c);

/* What the last ERR reply said became of the job(s) of the put or batch it refused, by
 * its stored= field (docs/protocol.md, Errors): nothing stored, perhaps stored (the answer
 * was lost: send it again only with the same key or put token), or stored. UNSAID when
 * the reply had no such field (not a put's refusal, PARTIAL, or a daemon older than these
 * fields: then only its text tells), or the last failure was not an ERR reply. */
enum {
    DEFERD_STORED_UNSAID = 0,
    DEFERD_STORED_NO = 1,
    DEFERD_STORED_MAYBE = 2,
    DEFERD_STORED_YES = 3,
};
int deferd_last_error_stored(const deferd_client *c);

/* The reason= field of the last ERR reply ("not_connected", "draining", "permission", ...;
 * docs/protocol.md, Errors), or "" when it had none. Later daemons may add reasons. */
const char *deferd_last_error_reason(const deferd_client *c);

/* Short static description of a DEFERD_* return code. */
const char *deferd_strerror(int rc);

#ifdef __cplusplus
}
#endif

#endif
