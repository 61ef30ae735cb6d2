/* libdeferd: blocking client for the deferd socket protocol (docs/protocol.md).
 *
 * One deferd_client is one connection. It is not thread-safe: use it from one thread at a
 * time, or give each thread its own connection. Every call that talks to the daemon sends
 * one request and waits for its reply (except the pipelined puts, below); pushes (JOB,
 * DEADLINE, EXPIRED, STATE) that arrive meanwhile are queued inside the client and handed
 * out by deferd_next_event() (all of them) or deferd_next_job() (jobs only) in arrival order.
 *
 * Errors are return values (DEFERD_OK or a negative DEFERD_E* code); the text of the last
 * failure is kept in the client (deferd_last_error). After DEFERD_EIO, DEFERD_EPROTO,
 * DEFERD_ENOMEM or DEFERD_ETIMEDOUT from a request, the reply stream may be out of step, so
 * the connection is marked unusable: every later call returns DEFERD_EIO. Close it and
 * connect again. DEFERD_ESERVER and DEFERD_EARG leave the connection usable (and so does
 * DEFERD_ETIMEDOUT from deferd_put_recv(), which consumes nothing).
 *
 * Producers that want more than one put in flight use the pipelined calls
 * deferd_put_send() / deferd_put_recv() instead of deferd_put(): see "Pipelined puts" below.
 */
#ifndef DEFERD_CLIENT_H
#define DEFERD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DEFERD_DEFAULT_SOCKET "/run/deferd/deferd.sock"
#define DEFERD_QUEUE_MAX 64      /* bytes in a queue name */
#define DEFERD_ID_MAX 200        /* bytes in a job id */
#define DEFERD_ID_SIZE 256       /* buffer big enough for any job id plus its NUL */
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
    char queue[72];
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
    DEFERD_EV_EXPIRED,      /* the lease ran out: the daemon released the job, which will be
                             * delivered again (maybe to this connection, with a higher
                             * attempt); ack/nack/touch of it now fail with LEASE_LOST */
    DEFERD_EV_STATE,        /* the daemon's ZooKeeper connection changed: state holds
                             * CONNECTED, SUSPENDED, RECONNECTED or LOST */
} deferd_event_kind;

typedef struct deferd_event {
    deferd_event_kind kind;
    deferd_job job;         /* JOB: the whole job (owns a payload). DEADLINE, EXPIRED: only
                             * job.id is set, the rest is zero and payload is NULL */
    int64_t ms_left;        /* DEADLINE only: ms until the lease ends (0: any moment now) */
    char state[16];         /* STATE only */
} deferd_event;

/* Fills BUF with the daemon's status line ("key=value ..."); see docs/protocol.md, STATS. */
int deferd_stats(deferd_client *c, char *buf, size_t len);

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
} deferd_put_opts;

/* Connects to the daemon's socket (NULL: DEFERD_DEFAULT_SOCKET). On failure returns NULL
 * and, if err is not NULL, writes a message into err[errlen]. */
deferd_client *deferd_connect(const char *socket_path, char *err, size_t errlen);

/* Closes the connection and frees the client and any queued jobs. NULL is a no-op. The
 * daemon releases jobs that were pushed but not acked or nacked. */
void deferd_close(deferd_client *c);

/* The socket, for poll()/epoll. Readable data may already be buffered in the client, so
 * after the fd turns readable (and after any request, which may queue pushes) call
 * deferd_next_event(c, &ev, 0) (or deferd_next_job) until it returns DEFERD_ETIMEDOUT before
 * polling again. Do not read from or write to the fd yourself. */
int deferd_fd(const deferd_client *c);

/* Timeout for the reply to each request (PUT, SUB, ACK, NACK, TOUCH, PING); -1 (the default)
 * waits forever. A request that times out leaves the connection unusable. */
int deferd_set_timeout(deferd_client *c, int timeout_ms);

/* Schedules a job. opts may be NULL. If id_out is not NULL, id_len must be more than
 * DEFERD_ID_MAX (DEFERD_ID_SIZE will do) and the new job id is stored there. Returns
 * DEFERD_OK once the daemon has stored the job in ZooKeeper; after ERR UNAVAILABLE it is
 * unknown whether the job was stored. */
int deferd_put(deferd_client *c, const char *queue, const void *payload, size_t len,
               const deferd_put_opts *opts, char *id_out, size_t id_len);

/* ---- Pipelined puts ----
 *
 * deferd_put_send() queues a PUT and returns at once; deferd_put_recv() returns the result
 * of the oldest put sent and not yet received. deferd answers the requests of a connection
 * in order, so the n-th deferd_put_recv() answers the n-th deferd_put_send(). Typical use:
 * keep up to DEPTH puts in flight, calling deferd_put_recv() whenever DEPTH are outstanding
 * and at the end until deferd_puts_outstanding() is 0.
 *
 * While puts are outstanding (sent and not yet received), the other request calls
 * (deferd_put, deferd_subscribe, deferd_ack, deferd_nack, deferd_touch, deferd_ping,
 * deferd_stats) refuse with DEFERD_EARG and "N pipelined puts outstanding: call
 * deferd_put_recv first"; nothing is sent and the connection stays usable.
 * deferd_next_event() and deferd_next_job() do work: they write queued puts on the way and
 * set aside the put replies they meet for deferd_put_recv(). Pushes that arrive at any
 * point are queued as for every other call.
 *
 * deferd_close() with puts outstanding drops those not yet written; those written may or
 * may not be stored. */

/* Queues a PUT (arguments as for deferd_put()) and returns without waiting for the reply.
 * Requests are buffered in the client and written once 64 KiB are waiting, or by
 * deferd_put_recv() (and deferd_next_event/next_job); the only wait is for room in the
 * socket's send buffer, during which replies and pushes that arrive are read and kept.
 * Returns DEFERD_OK once queued (deferd_puts_outstanding() grows by one). DEFERD_EARG:
 * nothing was queued and the connection is unchanged; so for DEFERD_ENOMEM if
 * deferd_puts_outstanding() did not grow. Otherwise an error comes from writing the queue
 * (or reading what arrived meanwhile): DEFERD_EIO, DEFERD_EPROTO, DEFERD_ENOMEM, and the
 * connection is unusable. */
int deferd_put_send(deferd_client *c, const char *queue, const void *payload, size_t len,
                    const deferd_put_opts *opts);

/* Writes all queued puts, then waits up to timeout_ms (-1: forever; deferd_set_timeout()
 * does not apply) for the reply to the oldest outstanding put and hands it out:
 * DEFERD_OK and, if id_out is not NULL, the job id in id_out (id_len more than
 * DEFERD_ID_MAX), as from deferd_put(); DEFERD_ESERVER for an ERR reply (after UNAVAILABLE
 * it is unknown whether the job was stored), with deferd_last_error() and
 * deferd_last_error_code() set (e.g. "UNKNOWN_QUEUE"); the connection stays usable and the
 * next call returns the next put's result. Either way that put is no longer outstanding.
 * DEFERD_ETIMEDOUT: nothing was consumed, the put is still outstanding and the connection
 * usable; call again. DEFERD_EARG if no put is outstanding (or id_len is too small).
 * DEFERD_EIO, DEFERD_EPROTO, DEFERD_ENOMEM: the connection is unusable. */
int deferd_put_recv(deferd_client *c, char *id_out, size_t id_len, int timeout_ms);

/* Puts sent with deferd_put_send() whose result deferd_put_recv() has not returned yet. */
int deferd_puts_outstanding(const deferd_client *c);

/* Makes this connection a consumer of the comma separated queues. inflight: how many jobs
 * the daemon may push before one is acked or nacked (1..DEFERD_INFLIGHT_MAX; 0: the
 * daemon's default, 1). Calling it again adds queues and sets the new inflight. */
int deferd_subscribe(deferd_client *c, const char *queues_comma_separated, unsigned inflight);

/* Waits for the next push of any kind (JOB, DEADLINE, EXPIRED), in arrival order, up to
 * timeout_ms (-1: forever, 0: only what has already arrived). On DEFERD_OK *ev is
 * overwritten (not freed: clear it first when reusing); release it with
 * deferd_job_clear(&ev->job), which is right for every kind. DEFERD_ETIMEDOUT and
 * DEFERD_ENOMEM leave the connection usable. Queued pushes are never dropped by a timeout. */
int deferd_next_event(deferd_client *c, deferd_event *ev, int timeout_ms);

/* Like deferd_next_event() but returns only jobs: DEADLINE and EXPIRED pushes that are queued
 * before the next JOB are silently dropped. A program that keeps jobs longer than their ttr
 * should use deferd_next_event() (and deferd_touch()) instead; otherwise it only learns of an
 * expired lease when deferd_ack()/deferd_nack() fails with LEASE_LOST.
 * On DEFERD_OK *job is overwritten (not freed: clear it first when reusing) and owns a
 * payload; release it with deferd_job_clear(). DEFERD_ETIMEDOUT and DEFERD_ENOMEM leave the
 * connection usable; queued jobs are never dropped by a timeout. */
int deferd_next_job(deferd_client *c, deferd_job *job, int timeout_ms);

/* Frees the payload and resets the job; safe to call twice. */
void deferd_job_clear(deferd_job *job);

/* Job done: the daemon deletes it. Only for jobs pushed to this connection. Fails with
 * DEFERD_ESERVER and code "LEASE_LOST" when the job's lease expired (or its lock was lost):
 * the job is then delivered again, so the work may be done twice. */
int deferd_ack(deferd_client *c, const char *job_id);

/* Job failed. delay_ms < 0: deliver again as soon as possible. delay_ms >= 0: reschedule
 * to now + delay_ms (the job then gets a new id). "LEASE_LOST" as for deferd_ack(). */
int deferd_nack(deferd_client *c, const char *job_id, int64_t delay_ms);

/* Renews the lease of a job pushed to this connection: it then ends one full ttr from now.
 * Call it when a DEADLINE event arrives for a job that is still being worked on.
 * "LEASE_LOST" as for deferd_ack() (the lease had already expired). */
int deferd_touch(deferd_client *c, const char *job_id);

/* Round trip to the daemon; DEFERD_OK if it answered PONG. */
int deferd_ping(deferd_client *c);

/* Text of the last failure, e.g. "UNKNOWN_QUEUE no queue 'x'" or "connection closed by
 * deferd"; "" if nothing failed yet. Valid until the next call on c. */
const char *deferd_last_error(const deferd_client *c);

/* The daemon's ERR code word of the last failure (e.g. "TOO_LARGE", "UNAVAILABLE"), or ""
 * if the last failure was not an ERR reply. */
const char *deferd_last_error_code(const deferd_client *c);

/* Short static description of a DEFERD_* return code. */
const char *deferd_strerror(int rc);

#ifdef __cplusplus
}
#endif

#endif
