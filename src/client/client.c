/* libdeferd: blocking client for the deferd socket protocol (docs/protocol.md).
 *
 * Input is read into one buffer and parsed from there; a message is consumed only once it
 * has fully arrived, so a timeout in deferd_next_event() never loses or splits a push.
 *
 * Pipelined requests (deferd_put_send, deferd_ack_send) are appended to an output buffer
 * and written when it is large or by deferd_put_recv()/deferd_ack_recv() (or while waiting
 * for a push). Each one also gets a struct req, linked twice: into the list of requests not
 * yet answered, in request order (the daemon answers in request order, so a reply belongs
 * to the head of that list), and into the list of its kind, in order, from which the recv
 * call of that kind takes its oldest. A reply that arrives while the client is busy with
 * something else (writing a full socket buffer, waiting for a push or for a reply of the
 * other kind) is stored in its req, which stays in its kind's list until handed out. */
#include "deferd/client.h"
#include "names.h"
#include "units.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

/* Pushes are short; a much longer one means the peer is not a deferd we understand. */
#define PUSH_LINE_MAX 4096
/* A reply to a BATCH or a follow-up ACK/NACK lists up to DEFERD_BATCH_MAX job ids (about
 * 250 KB); nothing deferd sends is longer. */
#define REPLY_LINE_MAX (DEFERD_BATCH_MAX * (DEFERD_ID_MAX + 1) + 4096)
/* Sanity bound on a pushed payload: jobs live in ZooKeeper znodes (about 1 MiB at most). */
#define IN_PAYLOAD_MAX (64u * 1024 * 1024)
/* protocol.md: a header line, '\n' included, is at most 1024 bytes. */
#define OUT_LINE_MAX 1024
#define INBUF_MIN 8192
/* A buffer grown for a big payload is given back once it is empty again. */
#define INBUF_KEEP (1024 * 1024)
/* deferd_put_send() writes the queued puts once this many bytes are waiting. */
#define OUT_FLUSH (64 * 1024)
#define OUTBUF_KEEP (1024 * 1024)
/* iovecs one sendmsg() takes (Linux: 1024; POSIX guarantees 16). */
#if defined(IOV_MAX)
#define SEND_IOV_MAX IOV_MAX
#elif defined(UIO_MAXIOV)
#define SEND_IOV_MAX UIO_MAXIOV
#else
#define SEND_IOV_MAX 16
#endif

enum { MSG_NONE = 0, MSG_OK = 1, MSG_ERR = 2, MSG_PUSH = 3, MSG_SKIPPED = 4 };

struct ev_node {
    struct ev_node *next;
    deferd_event ev;
};

/* Kinds of pipelined request. */
enum { REQ_PUT = 0, REQ_ACK = 1, REQ_KINDS };

/* A pipelined request queued or sent, whose result its recv call has not returned yet. */
struct req {
    struct req *next;               /* in the list of unanswered requests (request order) */
    struct req *knext;              /* in the list of its kind (request order) */
    int kind;                       /* REQ_* */
    int answered;                   /* the reply was read: is_err, code and text hold it */
    int is_err;
    char code[32];                  /* ERR code word */
    char *text;                     /* job id (PUT OK), the ERR text (code included), or
                                     * NULL (ACK OK, or no reply yet) */
    char id[];                      /* ACK: the job id acked; PUT: "" */
};

struct req_list {
    struct req *head, *tail;        /* linked through knext */
    int n;
};

struct deferd_client {
    int fd;
    int broken;                     /* reply stream may be out of step: refuse further use */
    int timeout_ms;                 /* reply timeout for requests; -1: none */
    char *in;                       /* unconsumed input is in[pos, len) */
    size_t pos, len, cap;
    size_t in_want;                 /* bytes the message at in[pos] needs; 0: unknown */
    struct ev_node *head, *tail;    /* pushes that arrived while waiting for a reply */
    char *out;                      /* queued pipelined requests not yet written:
                                     * out[opos, olen) */
    size_t opos, olen, ocap;
    struct req *whead, *wtail;      /* pipelined requests not answered yet, in request order;
                                     * emptied (not freed) once the connection is unusable */
    struct req_list kq[REQ_KINDS];  /* outstanding pipelined requests (answered or not) by
                                     * kind; these lists own the reqs */
    char *reply;                    /* text after "OK " or "ERR " of the last reply */
    size_t reply_cap;
    char reply_code[32];            /* ERR code word of the last reply */
    size_t reply_hlen;              /* bytes of the last reply line, not consumed yet */
    char err[512];
    char err_code[32];
};

struct out_line {
    char buf[OUT_LINE_MAX];
    size_t len;
};

/* ---- errors ---- */

static int fail(deferd_client *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(deferd_client *c, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->err_code[0] = '\0';
    return rc;
}

/* No more reply will be read: pipelined requests still unanswered stay unknown (their recv
 * calls return DEFERD_EIO); results already read are still handed out. */
static void set_broken(deferd_client *c)
{
    c->broken = 1;
    c->whead = c->wtail = NULL; /* the reqs stay in (and are owned by) their kind lists */
}

/* After these errors during a request we cannot tell which reply belongs to which request. */
static int mark_request_error(deferd_client *c, int rc)
{
    if (rc == DEFERD_EIO || rc == DEFERD_EPROTO || rc == DEFERD_ETIMEDOUT ||
        rc == DEFERD_ENOMEM)
        set_broken(c);
    return rc;
}

static int check_usable(deferd_client *c)
{
    if (c->broken)
        return fail(c, DEFERD_EIO, "connection unusable after an earlier error; reconnect");
    return DEFERD_OK;
}

const char *deferd_strerror(int rc)
{
    switch (rc) {
    case DEFERD_OK: return "success";
    case DEFERD_EIO: return "connection error";
    case DEFERD_ESERVER: return "error reported by deferd";
    case DEFERD_ETIMEDOUT: return "timed out";
    case DEFERD_EPROTO: return "protocol error";
    case DEFERD_EARG: return "invalid argument";
    case DEFERD_ENOMEM: return "out of memory";
    default: return "unknown error";
    }
}

const char *deferd_last_error(const deferd_client *c)
{
    return c ? c->err : "no client";
}

const char *deferd_last_error_code(const deferd_client *c)
{
    return c ? c->err_code : "";
}

/* ---- names ---- */

static int check_key(deferd_client *c, const char *key)
{
    if (key == NULL)
        return fail(c, DEFERD_EARG, "key is NULL");
    if (!names_valid_key(key))
        return fail(c, DEFERD_EARG, "invalid key '%.80s' (1-%d bytes of A-Z a-z 0-9 _ . : @ -, "
                    "starting with a letter or digit)", key, DEFERD_KEY_MAX);
    return DEFERD_OK;
}

/* The job id that starts a reply ("<id>" or "<id> <more words>") into out (NULL: only
 * checked); *rest points after it (at "" or at the space). 0, or -1 if it is no job id. */
static int reply_id(const char *text, char *out, const char **rest)
{
    size_t n = strcspn(text, " ");
    if (n > DEFERD_ID_MAX || !names_valid_job_id_n(text, n))
        return -1;
    if (out) {
        memcpy(out, text, n);
        out[n] = '\0';
    }
    *rest = text + n;
    return 0;
}

/* A PUT's reply: "<id>", or "<id> duplicate" when the key was taken (later words, e.g. for
 * a kept key, are accepted). *dup is set when dup is not NULL. */
static int parse_put_reply(const char *text, char *id_out, int *dup)
{
    const char *rest;
    if (reply_id(text, id_out, &rest) != 0)
        return -1;
    if (*rest && strncmp(rest, " duplicate", 10) != 0)
        return -1;
    if (*rest && rest[10] != '\0' && rest[10] != ' ')
        return -1;
    if (dup)
        *dup = *rest != '\0';
    return 0;
}

static int check_queue(deferd_client *c, const char *q, size_t n)
{
    if (names_valid_queue_n(q, n))
        return DEFERD_OK;
    return fail(c, DEFERD_EARG,
                "invalid queue name '%.*s' (1-%d bytes of A-Z a-z 0-9 _ . -, not starting "
                "with '.')", (int)(n > 80 ? 80 : n), q, DEFERD_QUEUE_MAX);
}

static int check_job_id(deferd_client *c, const char *id)
{
    if (id == NULL)
        return fail(c, DEFERD_EARG, "job id is NULL");
    if (!names_valid_job_id(id))
        return fail(c, DEFERD_EARG, "invalid job id '%.80s' (want <queue>/<name>, at most %d "
                    "bytes)", id, DEFERD_ID_MAX);
    return DEFERD_OK;
}

/* ---- input buffer ---- */

static void consume(deferd_client *c, size_t n)
{
    c->pos += n;
    if (c->pos < c->len)
        return;
    c->pos = c->len = 0;
    if (c->cap > INBUF_KEEP) {
        free(c->in);
        c->in = NULL;
        c->cap = 0;
    }
}

/* Moves unconsumed bytes to the front and makes room for a message of want bytes
 * (0: unknown) plus at least one more byte to read. */
static int inbuf_room(deferd_client *c, size_t want)
{
    size_t avail = c->len - c->pos;
    if (c->pos > 0) {
        memmove(c->in, c->in + c->pos, avail);
        c->pos = 0;
        c->len = avail;
    }
    size_t need = want > avail ? want : avail + 1;
    if (need < INBUF_MIN)
        need = INBUF_MIN;
    if (need <= c->cap)
        return DEFERD_OK;
    if (want == 0 && need < 2 * c->cap)
        need = 2 * c->cap; /* a long reply line arrives in pieces: grow by doubling */
    char *p = realloc(c->in, need);
    if (p == NULL)
        return fail(c, DEFERD_ENOMEM, "out of memory for a %zu byte message", need);
    c->in = p;
    c->cap = need;
    return DEFERD_OK;
}

static int64_t deadline_after(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : units_mono_ms() + timeout_ms;
}

/* deadline: CLOCK_MONOTONIC ms, -1 = wait forever. If revents is not NULL, the events
 * that happened are stored there. */
static int poll_fd(deferd_client *c, short events, int64_t deadline, short *revents)
{
    struct pollfd pfd = { .fd = c->fd, .events = events };
    for (;;) {
        int ms = -1;
        if (deadline >= 0) {
            int64_t left = deadline - units_mono_ms();
            ms = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
        }
        int n = poll(&pfd, 1, ms);
        if (n > 0) {
            if (revents)
                *revents = pfd.revents;
            return DEFERD_OK;
        }
        if (n == 0)
            return fail(c, DEFERD_ETIMEDOUT, "timed out waiting for deferd");
        if (errno != EINTR)
            return fail(c, DEFERD_EIO, "poll: %s", strerror(errno));
    }
}

static int wait_fd(deferd_client *c, short events, int64_t deadline)
{
    return poll_fd(c, events, deadline, NULL);
}

/* Reads what is available (at least one byte) into the buffer. */
static int fill(deferd_client *c, size_t want, int64_t deadline)
{
    int rc = inbuf_room(c, want);
    while (rc == DEFERD_OK && (rc = wait_fd(c, POLLIN, deadline)) == DEFERD_OK) {
        ssize_t n = recv(c->fd, c->in + c->len, c->cap - c->len, 0);
        if (n > 0) {
            c->len += (size_t)n;
            return DEFERD_OK;
        }
        if (n == 0 || errno == ECONNRESET)
            return fail(c, DEFERD_EIO, "connection closed by deferd");
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            return fail(c, DEFERD_EIO, "read from deferd: %s", strerror(errno));
    }
    return rc;
}

/* Reads what is available without waiting (nothing is fine). */
static int read_available(deferd_client *c)
{
    int rc = inbuf_room(c, c->in_want);
    while (rc == DEFERD_OK) {
        ssize_t n = recv(c->fd, c->in + c->len, c->cap - c->len, MSG_DONTWAIT);
        if (n > 0) {
            c->len += (size_t)n;
            return DEFERD_OK;
        }
        if (n == 0 || errno == ECONNRESET)
            return fail(c, DEFERD_EIO, "connection closed by deferd");
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return DEFERD_OK;
        if (errno != EINTR)
            return fail(c, DEFERD_EIO, "read from deferd: %s", strerror(errno));
    }
    return rc;
}

/* ---- output ---- */

static int line_add(deferd_client *c, struct out_line *l, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Refuses to build a line the daemon would reject as too long. */
static int line_add(deferd_client *c, struct out_line *l, const char *fmt, ...)
{
    size_t room = sizeof l->buf - l->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room)
        return fail(c, DEFERD_EARG, "request line longer than %d bytes", OUT_LINE_MAX);
    l->len += (size_t)n;
    return DEFERD_OK;
}

static void iov_advance(struct msghdr *mh, size_t n)
{
    while (mh->msg_iovlen > 0 && n >= mh->msg_iov->iov_len) {
        n -= mh->msg_iov->iov_len;
        mh->msg_iov++;
        mh->msg_iovlen--;
    }
    if (mh->msg_iovlen > 0) {
        mh->msg_iov->iov_base = (char *)mh->msg_iov->iov_base + n;
        mh->msg_iov->iov_len -= n;
    }
}

/* MSG_NOSIGNAL: a closed socket must give EPIPE, not kill the caller with SIGPIPE. */
static int send_all(deferd_client *c, struct iovec *iov, size_t iovcnt)
{
    struct msghdr mh = { .msg_iov = iov, .msg_iovlen = iovcnt };
    iov_advance(&mh, 0);
    while (mh.msg_iovlen > 0) {
        struct msghdr part = mh; /* a batch has more pieces than one sendmsg() takes */
        if (part.msg_iovlen > SEND_IOV_MAX)
            part.msg_iovlen = SEND_IOV_MAX;
        ssize_t n = sendmsg(c->fd, &part, MSG_NOSIGNAL);
        if (n >= 0) {
            iov_advance(&mh, (size_t)n);
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(c, POLLOUT, -1);
            if (rc != DEFERD_OK)
                return rc;
        } else if (errno == EPIPE || errno == ECONNRESET) {
            return fail(c, DEFERD_EIO, "connection closed by deferd");
        } else if (errno != EINTR) {
            return fail(c, DEFERD_EIO, "write to deferd: %s", strerror(errno));
        }
    }
    return DEFERD_OK;
}

/* ---- parsing ---- */

/* Splits at single spaces into at most max tokens; returns the count, -1 on empty tokens. */
static int split_tokens(char *line, char **tok, int max)
{
    int n = 0;
    for (char *p = line;; ) {
        if (n == max || *p == '\0')
            return -1;
        tok[n++] = p;
        char *sp = strchr(p, ' ');
        if (sp == NULL)
            return n;
        *sp = '\0';
        p = sp + 1;
    }
}

/* JOB <id> <queue> <attempt> <due epoch ms> <prio> <ttr ms> <length> */
static int parse_job_header(deferd_client *c, char *line, deferd_job *job, uint64_t *len)
{
    char *t[9];
    uint64_t attempt, due, prio, ttr;
    if (split_tokens(line, t, 9) != 8)
        return fail(c, DEFERD_EPROTO, "malformed JOB header from deferd");
    if (!names_valid_job_id(t[1]) || !names_valid_queue(t[2]))
        return fail(c, DEFERD_EPROTO, "bad job id or queue in JOB header: '%.80s' '%.80s'",
                    t[1], t[2]);
    if (units_parse_u64(t[3], UINT32_MAX, &attempt) != 0 ||
        units_parse_u64(t[4], INT64_MAX, &due) != 0 ||
        units_parse_u64(t[5], UINT32_MAX, &prio) != 0 ||
        units_parse_u64(t[6], UINT32_MAX, &ttr) != 0)
        return fail(c, DEFERD_EPROTO, "bad number in JOB header for %s", t[1]);
    if (units_parse_u64(t[7], IN_PAYLOAD_MAX, len) != 0)
        return fail(c, DEFERD_EPROTO, "bad payload length '%.24s' for job %s (limit %u)",
                    t[7], t[1], IN_PAYLOAD_MAX);
    memset(job, 0, sizeof *job);
    memcpy(job->id, t[1], strlen(t[1]) + 1);
    memcpy(job->queue, t[2], strlen(t[2]) + 1);
    job->attempt = (uint32_t)attempt;
    job->due_ms = (int64_t)due;
    job->priority = (uint32_t)prio;
    job->ttr_ms = (uint32_t)ttr;
    return DEFERD_OK;
}

/* Takes a JOB push whose header line (hlen bytes with '\n') is at the buffer front, but only
 * once the payload has fully arrived; otherwise *want says how many bytes are needed. */
static int take_job(deferd_client *c, char *line, size_t hlen, struct ev_node **out,
                    size_t *want)
{
    deferd_job hdr;
    uint64_t plen;
    int rc = parse_job_header(c, line, &hdr, &plen);
    if (rc != DEFERD_OK)
        return rc;
    size_t total = hlen + (size_t)plen + 1;
    if (c->len - c->pos < total) {
        *want = total;
        return MSG_NONE;
    }
    const char *p = c->in + c->pos + hlen;
    if (p[plen] != '\n')
        return fail(c, DEFERD_EPROTO, "payload of job %s not followed by a newline", hdr.id);
    struct ev_node *node = calloc(1, sizeof *node);
    unsigned char *payload = malloc((size_t)plen + 1);
    if (node == NULL || payload == NULL) {
        free(node);
        free(payload);
        return fail(c, DEFERD_ENOMEM, "out of memory for job %s", hdr.id);
    }
    memcpy(payload, p, (size_t)plen);
    payload[plen] = '\0';
    node->ev.kind = DEFERD_EV_JOB;
    node->ev.job = hdr;
    node->ev.job.payload = payload;
    node->ev.job.len = (size_t)plen;
    consume(c, total);
    *out = node;
    return MSG_PUSH;
}

/* DEADLINE <id> <ms left> | EXPIRED <id> | CANCELLED <id>: a single line, consumed once
 * parsed. */
static int take_lease_push(deferd_client *c, char *line, size_t hlen, deferd_event_kind kind,
                           struct ev_node **out)
{
    const char *what = kind == DEFERD_EV_DEADLINE ? "DEADLINE"
                       : kind == DEFERD_EV_EXPIRED ? "EXPIRED" : "CANCELLED";
    int ntok = kind == DEFERD_EV_DEADLINE ? 3 : 2;
    char *t[4];
    uint64_t left = 0;
    if (split_tokens(line, t, ntok + 1) != ntok)
        return fail(c, DEFERD_EPROTO, "malformed %s push from deferd", what);
    if (!names_valid_job_id(t[1]))
        return fail(c, DEFERD_EPROTO, "bad job id in %s push: '%.80s'", what, t[1]);
    if (kind == DEFERD_EV_DEADLINE && units_parse_u64(t[2], INT64_MAX, &left) != 0)
        return fail(c, DEFERD_EPROTO, "bad time left '%.24s' in DEADLINE push for %s", t[2],
                    t[1]);
    struct ev_node *node = calloc(1, sizeof *node);
    if (node == NULL)
        return fail(c, DEFERD_ENOMEM, "out of memory for a %s push", what);
    node->ev.kind = kind;
    memcpy(node->ev.job.id, t[1], strlen(t[1]) + 1);
    node->ev.ms_left = (int64_t)left;
    consume(c, hlen);
    *out = node;
    return MSG_PUSH;
}

/* STATE <name>: the daemon's ZooKeeper connection state changed. */
static int take_state_push(deferd_client *c, char *line, size_t hlen, struct ev_node **out)
{
    char *t[3];
    /* Known: CONNECTED SUSPENDED RECONNECTED LOST DRAINING; newer daemons may add more,
     * so any upper-case word that fits is passed on. */
    if (split_tokens(line, t, 3) != 2)
        return fail(c, DEFERD_EPROTO, "malformed STATE push from deferd");
    size_t n = strlen(t[1]);
    if (n == 0 || n >= sizeof ((deferd_event *)0)->state ||
        strspn(t[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != n)
        return fail(c, DEFERD_EPROTO, "bad state '%.20s' in STATE push", t[1]);
    struct ev_node *node = calloc(1, sizeof *node);
    if (node == NULL)
        return fail(c, DEFERD_ENOMEM, "out of memory for a STATE push");
    node->ev.kind = DEFERD_EV_STATE;
    memcpy(node->ev.state, t[1], n + 1);
    consume(c, hlen);
    *out = node;
    return MSG_PUSH;
}

/* The reply's text (n bytes at text) into c->reply, which grows for long replies. */
static int set_reply(deferd_client *c, const char *text, size_t n)
{
    if (n >= c->reply_cap) {
        size_t cap = n + 1 < 512 ? 512 : n + 1;
        char *p = realloc(c->reply, cap);
        if (p == NULL)
            return fail(c, DEFERD_ENOMEM, "out of memory for a %zu byte reply", n);
        c->reply = p;
        c->reply_cap = cap;
    }
    memcpy(c->reply, text, n);
    c->reply[n] = '\0';
    return DEFERD_OK;
}

/* Is the line (n bytes, no NUL) a reply rather than a push? */
static int is_reply(const char *line, size_t n)
{
    return (n == 2 && memcmp(line, "OK", 2) == 0) || (n >= 3 && memcmp(line, "OK ", 3) == 0) ||
           (n >= 4 && memcmp(line, "ERR ", 4) == 0);
}

/* Fills c->reply (and c->reply_code for ERR) from a line that is_reply(); the caller
 * consumes c->reply_hlen bytes. */
static int parse_reply(deferd_client *c, const char *line, size_t n)
{
    if (line[0] == 'O') {
        c->reply_code[0] = '\0';
        int rc = n > 2 ? set_reply(c, line + 3, n - 3) : set_reply(c, "", 0);
        return rc == DEFERD_OK ? MSG_OK : rc;
    }
    const char *code = line + 4;
    size_t clen = 0;
    while (4 + clen < n && code[clen] != ' ')
        clen++;
    if (clen == 0)
        return fail(c, DEFERD_EPROTO, "ERR reply without a code from deferd");
    int rc = set_reply(c, code, n - 4);
    if (rc != DEFERD_OK)
        return rc;
    if (clen >= sizeof c->reply_code)
        clen = sizeof c->reply_code - 1;
    memcpy(c->reply_code, code, clen);
    c->reply_code[clen] = '\0';
    return MSG_ERR;
}

/* Makes the last ERR reply the client's last failure. */
static int server_error(deferd_client *c, const char *text, const char *code)
{
    /* Truncation is fine; using the result tells the compiler so. */
    if (snprintf(c->err, sizeof c->err, "%s", text) < 0)
        c->err[0] = '\0';
    if (snprintf(c->err_code, sizeof c->err_code, "%s", code) < 0)
        c->err_code[0] = '\0';
    return DEFERD_ESERVER;
}

/* Returns MSG_* for one complete message at the buffer front, MSG_NONE if more input is
 * needed (*want: bytes needed, 0 if unknown), or a negative DEFERD_E* code. A push is
 * consumed; a reply (MSG_OK, MSG_ERR) is left in c->reply and the caller consumes its
 * c->reply_hlen bytes once it has kept what it needs, so that running out of memory on
 * the way never loses a reply. */
static int take_one(deferd_client *c, struct ev_node **push, size_t *want)
{
    const char *start = c->in + c->pos;
    size_t avail = c->len - c->pos;
    const char *nl = avail ? memchr(start, '\n', avail) : NULL;
    *want = 0;
    if (nl == NULL && avail <= REPLY_LINE_MAX)
        return MSG_NONE;
    size_t n = nl ? (size_t)(nl - start) : avail;
    if (n > REPLY_LINE_MAX)
        return fail(c, DEFERD_EPROTO, "line from deferd longer than %d bytes", REPLY_LINE_MAX);
    size_t hlen = n + 1;
    if (n > 0 && start[n - 1] == '\r')
        n--;
    if (memchr(start, '\0', n) != NULL)
        return fail(c, DEFERD_EPROTO, "NUL byte in a line from deferd");
    if (is_reply(start, n)) {
        c->reply_hlen = hlen;
        return parse_reply(c, start, n);
    }
    if (n > PUSH_LINE_MAX)
        return fail(c, DEFERD_EPROTO, "line from deferd longer than %d bytes", PUSH_LINE_MAX);
    char line[PUSH_LINE_MAX + 1];
    memcpy(line, start, n);
    line[n] = '\0';
    if (strncmp(line, "JOB ", 4) == 0)
        return take_job(c, line, hlen, push, want);
    if (strncmp(line, "DEADLINE ", 9) == 0)
        return take_lease_push(c, line, hlen, DEFERD_EV_DEADLINE, push);
    if (strncmp(line, "EXPIRED ", 8) == 0)
        return take_lease_push(c, line, hlen, DEFERD_EV_EXPIRED, push);
    if (strncmp(line, "CANCELLED ", 10) == 0)
        return take_lease_push(c, line, hlen, DEFERD_EV_CANCELLED, push);
    if (strncmp(line, "STATE ", 6) == 0)
        return take_state_push(c, line, hlen, push);
    size_t word = strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
    if (word > 0 && (line[word] == ' ' || line[word] == '\0')) {
        consume(c, hlen); /* a one-line push of a newer daemon (docs/protocol.md) */
        return MSG_SKIPPED;
    }
    return fail(c, DEFERD_EPROTO, "unexpected line from deferd: '%.80s'", line);
}

static int take_message(deferd_client *c, struct ev_node **push, size_t *want)
{
    int kind;
    while ((kind = take_one(c, push, want)) == MSG_SKIPPED)
        ;
    return kind;
}

/* ---- queue of early pushes ---- */

static void fifo_push(deferd_client *c, struct ev_node *node)
{
    if (c->tail)
        c->tail->next = node;
    else
        c->head = node;
    c->tail = node;
}

static void fifo_pop(deferd_client *c, deferd_event *ev)
{
    struct ev_node *node = c->head;
    c->head = node->next;
    if (c->head == NULL)
        c->tail = NULL;
    *ev = node->ev;
    free(node);
}

/* ---- pipelined requests and their replies ---- */

static const char *const req_names[REQ_KINDS] = {"put", "ack"};
static const char *const req_recv_calls[REQ_KINDS] = {"deferd_put_recv", "deferd_ack_recv"};

/* A new request of the given kind (ack: for job id), not linked anywhere yet. */
static struct req *req_new(deferd_client *c, int kind, const char *id)
{
    size_t n = id ? strlen(id) : 0;
    struct req *r = calloc(1, sizeof *r + n + 1);
    if (r == NULL) {
        fail(c, DEFERD_ENOMEM, "out of memory queueing a pipelined %s", req_names[kind]);
        return NULL;
    }
    r->kind = kind;
    if (n)
        memcpy(r->id, id, n);
    return r;
}

/* Links a request that was just queued into both lists. */
static void req_link(deferd_client *c, struct req *r)
{
    if (c->wtail)
        c->wtail->next = r;
    else
        c->whead = r;
    c->wtail = r;
    struct req_list *k = &c->kq[r->kind];
    if (k->tail)
        k->tail->knext = r;
    else
        k->head = r;
    k->tail = r;
    k->n++;
}

static void req_free(struct req *r)
{
    free(r->text);
    free(r);
}

/* Takes the oldest request of a kind out of its list (it is answered, or the connection is
 * unusable, so it is no longer in the list of unanswered requests). */
static struct req *req_take(deferd_client *c, int kind)
{
    struct req_list *k = &c->kq[kind];
    struct req *r = k->head;
    k->head = r->knext;
    if (k->head == NULL)
        k->tail = NULL;
    k->n--;
    return r;
}

/* Stores the reply (kind MSG_OK or MSG_ERR) at the buffer front in the oldest unanswered
 * request, for its recv call, then consumes it. A reply nobody asked for is a protocol
 * error. Running out of memory consumes nothing. */
static int keep_reply(deferd_client *c, int kind)
{
    struct req *r = c->whead;
    if (r == NULL)
        return fail(c, DEFERD_EPROTO, "reply from deferd without a request: '%s%.80s'",
                    kind == MSG_OK ? "OK " : "ERR ", c->reply);
    if (kind == MSG_OK && r->kind == REQ_PUT && parse_put_reply(c->reply, NULL, NULL) != 0)
        return fail(c, DEFERD_EPROTO, "bad job id in PUT reply: '%.80s'", c->reply);
    char *text = NULL;
    if (kind == MSG_ERR || r->kind == REQ_PUT) {
        /* PUT: just the id; a duplicate is an OK like any other for deferd_put_recv() */
        size_t n = kind == MSG_OK ? strcspn(c->reply, " ") : strlen(c->reply);
        text = malloc(n + 1);
        if (text == NULL)
            return fail(c, DEFERD_ENOMEM, "out of memory for a %s reply",
                        r->kind == REQ_PUT ? "PUT" : "ACK");
        memcpy(text, c->reply, n);
        text[n] = '\0';
    }
    r->text = text;
    r->is_err = kind == MSG_ERR;
    memcpy(r->code, c->reply_code, sizeof r->code);
    r->answered = 1;
    consume(c, c->reply_hlen);
    c->whead = r->next;
    if (c->whead == NULL)
        c->wtail = NULL;
    r->next = NULL;
    return DEFERD_OK;
}

/* Takes every complete message already buffered: pushes into the event queue, replies
 * into the queue of put results. Leaves c->in_want set for the message still incomplete. */
static int take_buffered(deferd_client *c)
{
    for (;;) {
        struct ev_node *node = NULL;
        int kind = take_message(c, &node, &c->in_want);
        if (kind == MSG_PUSH) {
            fifo_push(c, node);
            continue;
        }
        if (kind == MSG_OK || kind == MSG_ERR) {
            int rc = keep_reply(c, kind);
            if (rc != DEFERD_OK)
                return rc;
            continue;
        }
        return kind; /* MSG_NONE (DEFERD_OK) or an error */
    }
}

/* ---- output buffer of pipelined requests ---- */

static int out_reserve(deferd_client *c, size_t n)
{
    if (c->opos > 0) {
        memmove(c->out, c->out + c->opos, c->olen - c->opos);
        c->olen -= c->opos;
        c->opos = 0;
    }
    if (n <= c->ocap - c->olen)
        return DEFERD_OK;
    if (n > SIZE_MAX / 2 - c->olen)
        return fail(c, DEFERD_ENOMEM, "request of %zu bytes too large to queue", n);
    size_t cap = c->ocap ? c->ocap : 16384;
    while (cap - c->olen < n)
        cap *= 2;
    char *p = realloc(c->out, cap);
    if (p == NULL)
        return fail(c, DEFERD_ENOMEM, "out of memory queueing a %zu byte request", n);
    c->out = p;
    c->ocap = cap;
    return DEFERD_OK;
}

/* Writes the queued requests. While the socket buffer is full it waits, and meanwhile reads
 * whatever deferd sends (replies into their requests, pushes into the event queue), so
 * that neither side can stall the other however many requests are in flight.
 * deadline: CLOCK_MONOTONIC ms, -1: none. A timeout leaves the rest queued, in step. */
static int flush_out(deferd_client *c, int64_t deadline)
{
    while (c->opos < c->olen) {
        ssize_t n = send(c->fd, c->out + c->opos, c->olen - c->opos,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) {
            c->opos += (size_t)n;
            continue;
        }
        if (errno == EPIPE || errno == ECONNRESET)
            return fail(c, DEFERD_EIO, "connection closed by deferd");
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return fail(c, DEFERD_EIO, "write to deferd: %s", strerror(errno));
        short rev = 0;
        int rc = poll_fd(c, POLLIN | POLLOUT, deadline, &rev);
        if (rc == DEFERD_OK && (rev & (POLLIN | POLLHUP | POLLERR))) {
            rc = take_buffered(c); /* also sizes the room needed for the next read */
            if (rc == DEFERD_OK)
                rc = read_available(c);
            if (rc == DEFERD_OK)
                rc = take_buffered(c);
        }
        if (rc != DEFERD_OK)
            return rc;
    }
    c->opos = c->olen = 0;
    if (c->ocap > OUTBUF_KEEP) {
        free(c->out);
        c->out = NULL;
        c->ocap = 0;
    }
    return DEFERD_OK;
}

/* ---- requests ---- */

static int await_reply(deferd_client *c)
{
    int64_t deadline = deadline_after(c->timeout_ms);
    for (;;) {
        struct ev_node *node = NULL;
        size_t want;
        int kind = take_message(c, &node, &want);
        if (kind == MSG_PUSH) {
            fifo_push(c, node);
            continue;
        }
        if (kind == MSG_OK || kind == MSG_ERR) {
            int rc = kind == MSG_OK ? DEFERD_OK : server_error(c, c->reply, c->reply_code);
            consume(c, c->reply_hlen);
            return rc;
        }
        int rc = kind < 0 ? kind : fill(c, want, deadline);
        if (rc != DEFERD_OK)
            return rc;
    }
}

/* Blocking requests need the reply stream to themselves. */
static int check_no_pipelined(deferd_client *c)
{
    int np = c->kq[REQ_PUT].n, na = c->kq[REQ_ACK].n;
    if (np > 0 && na > 0)
        return fail(c, DEFERD_EARG, "%d pipelined put%s and %d pipelined ack%s outstanding: "
                    "call deferd_put_recv and deferd_ack_recv first", np, np == 1 ? "" : "s",
                    na, na == 1 ? "" : "s");
    if (np > 0 || na > 0) {
        int kind = np > 0 ? REQ_PUT : REQ_ACK, n = np + na;
        return fail(c, DEFERD_EARG, "%d pipelined %s%s outstanding: call %s first", n,
                    req_names[kind], n == 1 ? "" : "s", req_recv_calls[kind]);
    }
    return DEFERD_OK;
}

/* Sends one request and waits for its reply, queueing pushes that come first. */
static int transact(deferd_client *c, struct iovec *iov, size_t iovcnt)
{
    int rc = check_usable(c);
    if (rc == DEFERD_OK)
        rc = check_no_pipelined(c);
    if (rc == DEFERD_OK)
        rc = send_all(c, iov, iovcnt);
    if (rc == DEFERD_OK)
        rc = await_reply(c);
    return mark_request_error(c, rc);
}

static int transact_line(deferd_client *c, struct out_line *l)
{
    int rc = line_add(c, l, "\n");
    if (rc != DEFERD_OK)
        return rc;
    struct iovec iov = { .iov_base = l->buf, .iov_len = l->len };
    return transact(c, &iov, 1);
}

static int check_put(deferd_client *c, const char *queue, const void *payload, size_t len,
                     const deferd_put_opts *opts, const char *id_out, size_t id_len)
{
    if (queue == NULL)
        return fail(c, DEFERD_EARG, "queue is NULL");
    if (payload == NULL && len > 0)
        return fail(c, DEFERD_EARG, "payload is NULL");
    if (opts && opts->has_delay && opts->has_at)
        return fail(c, DEFERD_EARG, "delay and at are mutually exclusive");
    if (opts && opts->has_ttr &&
        (opts->ttr_ms < DEFERD_TTR_MIN_MS || opts->ttr_ms > DEFERD_TTR_MAX_MS))
        return fail(c, DEFERD_EARG, "ttr %" PRIu64 " ms outside %d..%d", opts->ttr_ms,
                    DEFERD_TTR_MIN_MS, DEFERD_TTR_MAX_MS);
    if (id_out && id_len <= DEFERD_ID_MAX)
        return fail(c, DEFERD_EARG, "id buffer smaller than %d bytes", DEFERD_ID_MAX + 1);
    if (opts && opts->key && check_key(c, opts->key) != DEFERD_OK)
        return DEFERD_EARG;
    return check_queue(c, queue, strlen(queue));
}

static int put_header(deferd_client *c, struct out_line *l, const char *queue, size_t len,
                      const deferd_put_opts *o)
{
    int rc = line_add(c, l, "PUT %s %zu", queue, len);
    if (rc == DEFERD_OK && o && o->has_delay)
        rc = line_add(c, l, " delay=%" PRIu64, o->delay_ms);
    if (rc == DEFERD_OK && o && o->has_at)
        rc = line_add(c, l, " at=%" PRIu64, o->at_ms);
    if (rc == DEFERD_OK && o && o->has_priority)
        rc = line_add(c, l, " prio=%" PRIu32, o->priority);
    if (rc == DEFERD_OK && o && o->has_ttr)
        rc = line_add(c, l, " ttr=%" PRIu64, o->ttr_ms);
    if (rc == DEFERD_OK && o && o->key)
        rc = line_add(c, l, " key=%s", o->key);
    if (rc == DEFERD_OK)
        rc = line_add(c, l, "\n");
    return rc;
}

/* deferd_put() and deferd_put_one(): dup (if not NULL) tells a duplicate. */
static int put_blocking(deferd_client *c, const char *queue, const void *payload, size_t len,
                        const deferd_put_opts *opts, char *id_out, size_t id_len, int *dup)
{
    struct out_line l = { .len = 0 };
    int rc = check_put(c, queue, payload, len, opts, id_out, id_len);
    if (rc == DEFERD_OK)
        rc = put_header(c, &l, queue, len, opts);
    if (rc != DEFERD_OK)
        return rc;
    struct iovec iov[3] = {
        { .iov_base = l.buf, .iov_len = l.len },
        { .iov_base = (void *)payload, .iov_len = len },
        { .iov_base = "\n", .iov_len = 1 },
    };
    rc = transact(c, iov, 3);
    if (rc == DEFERD_OK && parse_put_reply(c->reply, id_out, dup) != 0)
        rc = fail(c, DEFERD_EPROTO, "bad job id in PUT reply: '%.80s'", c->reply);
    return rc;
}

int deferd_put(deferd_client *c, const char *queue, const void *payload, size_t len,
               const deferd_put_opts *opts, char *id_out, size_t id_len)
{
    if (c == NULL)
        return DEFERD_EARG;
    return put_blocking(c, queue, payload, len, opts, id_out, id_len, NULL);
}

int deferd_put_one(deferd_client *c, deferd_put_item *item)
{
    if (c == NULL || item == NULL)
        return DEFERD_EARG;
    item->id[0] = '\0';
    item->duplicate = 0;
    return put_blocking(c, item->queue, item->payload, item->len, &item->opts, item->id,
                        sizeof item->id, &item->duplicate);
}

/* Appends a request (bytes already formatted in parts) to the output buffer and the lists;
 * writes the buffer once it is large. */
static int queue_request(deferd_client *c, int kind, const char *id, const struct iovec *iov,
                         size_t iovcnt)
{
    if (c->kq[kind].n == INT_MAX)
        return fail(c, DEFERD_EARG, "%d pipelined %ss outstanding", INT_MAX, req_names[kind]);
    size_t total = 0;
    for (size_t i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    struct req *r = req_new(c, kind, id);
    if (r == NULL)
        return DEFERD_ENOMEM;
    int rc = out_reserve(c, total);
    if (rc != DEFERD_OK) {
        free(r);
        return rc; /* nothing was queued: the connection is as it was */
    }
    for (size_t i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > 0)
            memcpy(c->out + c->olen, iov[i].iov_base, iov[i].iov_len);
        c->olen += iov[i].iov_len;
    }
    req_link(c, r);
    if (c->olen - c->opos < OUT_FLUSH)
        return DEFERD_OK;
    return mark_request_error(c, flush_out(c, -1));
}

int deferd_put_send(deferd_client *c, const char *queue, const void *payload, size_t len,
                    const deferd_put_opts *opts)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_usable(c);
    if (rc == DEFERD_OK)
        rc = check_put(c, queue, payload, len, opts, NULL, 0);
    if (rc == DEFERD_OK)
        rc = put_header(c, &l, queue, len, opts);
    if (rc != DEFERD_OK)
        return rc;
    struct iovec iov[3] = {
        { .iov_base = l.buf, .iov_len = l.len },
        { .iov_base = (void *)payload, .iov_len = len },
        { .iov_base = "\n", .iov_len = 1 },
    };
    return queue_request(c, REQ_PUT, NULL, iov, 3);
}

int deferd_ack_send(deferd_client *c, const char *job_id)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_usable(c);
    if (rc == DEFERD_OK)
        rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, "ACK %s\n", job_id);
    if (rc != DEFERD_OK)
        return rc;
    struct iovec iov = { .iov_base = l.buf, .iov_len = l.len };
    return queue_request(c, REQ_ACK, job_id, &iov, 1);
}

/* The result of the oldest outstanding request of a kind: writes what is queued, reads
 * until that request is answered (setting aside pushes and replies to other requests),
 * and takes it out. A timeout consumes nothing. Once the connection is unusable, results
 * read before are still handed out and each request never answered returns the error
 * (DEFERD_EIO after the first). */
static int recv_result(deferd_client *c, int kind, char *id_out, size_t id_len,
                       int timeout_ms)
{
    if (c->kq[kind].n == 0) {
        if (c->broken)
            return check_usable(c);
        return fail(c, DEFERD_EARG, "no pipelined %s outstanding", req_names[kind]);
    }
    if (id_out && id_len <= DEFERD_ID_MAX)
        return fail(c, DEFERD_EARG, "id buffer smaller than %d bytes", DEFERD_ID_MAX + 1);
    struct req *r = c->kq[kind].head;
    int rc = check_usable(c);
    if (rc == DEFERD_OK) {
        int64_t deadline = deadline_after(timeout_ms);
        rc = flush_out(c, deadline);
        while (rc == DEFERD_OK && !r->answered) {
            struct ev_node *node = NULL;
            size_t want;
            int mkind = take_message(c, &node, &want);
            if (mkind == MSG_PUSH)
                fifo_push(c, node);
            else if (mkind == MSG_OK || mkind == MSG_ERR)
                rc = keep_reply(c, mkind);
            else
                rc = mkind < 0 ? mkind : fill(c, want, deadline);
        }
        /* A timeout consumed nothing: the reply is still owed and comes with a later call
         * (or was read meanwhile: then it is handed out now). */
        if (rc == DEFERD_ETIMEDOUT && !r->answered)
            return rc;
        if (rc != DEFERD_OK && rc != DEFERD_ETIMEDOUT)
            set_broken(c);
    }
    r = req_take(c, kind);
    if (kind == REQ_ACK && id_out)
        memcpy(id_out, r->id, strlen(r->id) + 1);
    if (!r->answered) {
        char cause[sizeof c->err];
        memcpy(cause, c->err, sizeof cause);
        if (rc == DEFERD_OK || rc == DEFERD_ETIMEDOUT)
            rc = DEFERD_EIO;
        if (kind == REQ_ACK)
            fail(c, rc, "ACK %s not answered (%s): the job may or may not have been acked",
                 r->id, cause);
        else
            fail(c, rc, "PUT not answered (%s): the job may or may not have been stored",
                 cause);
    } else if (r->is_err) {
        rc = server_error(c, r->text, r->code);
    } else {
        rc = DEFERD_OK;
        if (kind == REQ_PUT && id_out)
            memcpy(id_out, r->text, strlen(r->text) + 1);
    }
    req_free(r);
    return rc;
}

int deferd_put_recv(deferd_client *c, char *id_out, size_t id_len, int timeout_ms)
{
    if (c == NULL)
        return DEFERD_EARG;
    return recv_result(c, REQ_PUT, id_out, id_len, timeout_ms);
}

int deferd_puts_outstanding(const deferd_client *c)
{
    return c ? c->kq[REQ_PUT].n : 0;
}

int deferd_ack_recv(deferd_client *c, char *id_out, size_t id_len, int timeout_ms)
{
    if (c == NULL)
        return DEFERD_EARG;
    return recv_result(c, REQ_ACK, id_out, id_len, timeout_ms);
}

int deferd_acks_outstanding(const deferd_client *c)
{
    return c ? c->kq[REQ_ACK].n : 0;
}

static int check_queue_list(deferd_client *c, const char *list)
{
    if (list == NULL)
        return fail(c, DEFERD_EARG, "queue list is NULL");
    for (const char *p = list;; ) {
        size_t n = strcspn(p, ",");
        int rc = check_queue(c, p, n);
        if (rc != DEFERD_OK || p[n] == '\0')
            return rc;
        p += n + 1;
    }
}

int deferd_subscribe(deferd_client *c, const char *queues, unsigned inflight)
{
    if (c == NULL)
        return DEFERD_EARG;
    if (inflight > DEFERD_INFLIGHT_MAX)
        return fail(c, DEFERD_EARG, "inflight %u over %d", inflight, DEFERD_INFLIGHT_MAX);
    struct out_line l = { .len = 0 };
    int rc = check_queue_list(c, queues);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, "SUB %s", queues);
    if (rc == DEFERD_OK && inflight > 0)
        rc = line_add(c, &l, " inflight=%u", inflight);
    return rc == DEFERD_OK ? transact_line(c, &l) : rc;
}

int deferd_ack(deferd_client *c, const char *job_id)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, "ACK %s", job_id);
    return rc == DEFERD_OK ? transact_line(c, &l) : rc;
}

int deferd_nack(deferd_client *c, const char *job_id, int64_t delay_ms)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, "NACK %s", job_id);
    if (rc == DEFERD_OK && delay_ms >= 0)
        rc = line_add(c, &l, " delay=%" PRId64, delay_ms);
    return rc == DEFERD_OK ? transact_line(c, &l) : rc;
}


int deferd_unsubscribe(deferd_client *c, const char *queues)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = queues ? check_queue_list(c, queues) : DEFERD_OK;
    if (rc == DEFERD_OK)
        rc = queues ? line_add(c, &l, "UNSUB %s", queues) : line_add(c, &l, "UNSUB");
    return rc == DEFERD_OK ? transact_line(c, &l) : rc;
}

int deferd_touch(deferd_client *c, const char *job_id)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, "TOUCH %s", job_id);
    return rc == DEFERD_OK ? transact_line(c, &l) : rc;
}

/* ---- batches, follow-up jobs, cancel, reschedule ---- */

static int check_items(deferd_client *c, deferd_put_item *items, size_t n)
{
    if (items == NULL || n == 0 || n > DEFERD_BATCH_MAX)
        return fail(c, DEFERD_EARG, "%zu jobs: want 1..%d", items ? n : 0, DEFERD_BATCH_MAX);
    for (size_t i = 0; i < n; i++) {
        items[i].id[0] = '\0';
        items[i].duplicate = 0;
    }
    for (size_t i = 0; i < n; i++) {
        const deferd_put_item *it = &items[i];
        if (check_put(c, it->queue, it->payload, it->len, &it->opts, NULL, 0) != DEFERD_OK) {
            char why[sizeof c->err];
            memcpy(why, c->err, sizeof why);
            return fail(c, DEFERD_EARG, "item %zu: %s", i + 1, why);
        }
    }
    return DEFERD_OK;
}

/* Sends FIRST (a command line without its '\n') followed by the n items as PUT requests,
 * and waits for the one reply. The payloads are written from the items, not copied. */
static int transact_items(deferd_client *c, struct out_line *first,
                          const deferd_put_item *items, size_t n)
{
    struct out_line *hdr = malloc(n * sizeof *hdr);
    struct iovec *iov = malloc((3 * n + 1) * sizeof *iov);
    int rc = hdr && iov ? line_add(c, first, "\n")
                        : fail(c, DEFERD_ENOMEM, "out of memory for a %zu job request", n);
    if (rc == DEFERD_OK)
        iov[0] = (struct iovec){ .iov_base = first->buf, .iov_len = first->len };
    for (size_t i = 0; rc == DEFERD_OK && i < n; i++) {
        const deferd_put_item *it = &items[i];
        hdr[i].len = 0;
        rc = put_header(c, &hdr[i], it->queue, it->len, &it->opts);
        iov[3 * i + 1] = (struct iovec){ .iov_base = hdr[i].buf, .iov_len = hdr[i].len };
        iov[3 * i + 2] = (struct iovec){ .iov_base = (void *)it->payload, .iov_len = it->len };
        iov[3 * i + 3] = (struct iovec){ .iov_base = "\n", .iov_len = 1 };
    }
    if (rc == DEFERD_OK)
        rc = transact(c, iov, 3 * n + 1);
    free(hdr);
    free(iov);
    return rc;
}

/* Comma separated job ids, one per item from the first, into the items' id. */
static int take_ids(char *list, deferd_put_item *items, size_t n)
{
    size_t i = 0;
    if (n == 0)
        return *list == '\0' || strcmp(list, "-") == 0 ? 0 : -1;
    for (char *p = list; i < n; i++) {
        const char *rest;
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (reply_id(p, items[i].id, &rest) != 0 || *rest)
            return -1;
        if (!comma)
            break;
        p = comma + 1;
    }
    return i + 1 == n ? 0 : -1;
}

/* dup=<i>,<j>,... (positions from 1) or dup=-. */
static int take_dups(const char *list, deferd_put_item *items, size_t n)
{
    if (strcmp(list, "-") == 0)
        return 0;
    for (const char *p = list;; p++) {
        char num[24];
        size_t len = strcspn(p, ",");
        uint64_t pos;
        if (len == 0 || len >= sizeof num)
            return -1;
        memcpy(num, p, len);
        num[len] = '\0';
        if (units_parse_u64(num, n, &pos) != 0 || pos == 0)
            return -1;
        items[pos - 1].duplicate = 1;
        p += len;
        if (*p == '\0')
            return 0;
    }
}

/* "n=<n> [parts=<k>] ids=<ids> dup=<positions|->" into the items; fields are found by
 * name and unknown ones skipped, as for STATS. */
static int take_items_reply(deferd_client *c, char *text, deferd_put_item *items, size_t n,
                            unsigned *parts)
{
    char *ids = NULL, *dups = NULL;
    uint64_t got = UINT64_MAX, k = 1;
    char *save = NULL;
    for (char *tok = strtok_r(text, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (strncmp(tok, "n=", 2) == 0 && units_parse_u64(tok + 2, DEFERD_BATCH_MAX, &got) != 0)
            got = UINT64_MAX;
        else if (strncmp(tok, "parts=", 6) == 0 && units_parse_u64(tok + 6, UINT_MAX, &k) != 0)
            k = 0;
        else if (strncmp(tok, "ids=", 4) == 0)
            ids = tok + 4;
        else if (strncmp(tok, "dup=", 4) == 0)
            dups = tok + 4;
    }
    if (got != n || k == 0 || !ids || !dups || take_ids(ids, items, n) != 0 ||
        take_dups(dups, items, n) != 0)
        return fail(c, DEFERD_EPROTO, "malformed reply to a %zu job request from deferd", n);
    if (parts)
        *parts = (unsigned)k;
    return DEFERD_OK;
}

/* ERR PARTIAL stored=<k> ids=<ids> <text>: the first k items were stored. The message kept
 * for deferd_last_error() leaves the ids out. */
static int take_partial(deferd_client *c, deferd_put_item *items, size_t n, size_t *stored)
{
    char *p = c->reply + strlen("PARTIAL"), *ids, *text;
    uint64_t k;
    if (strncmp(p, " stored=", 8) != 0 || (ids = strstr(p, " ids=")) == NULL)
        return fail(c, DEFERD_EPROTO, "malformed PARTIAL reply from deferd");
    *ids = '\0';
    ids += 5;
    text = ids + strcspn(ids, " ");
    if (*text)
        *text++ = '\0';
    if (units_parse_u64(p + 8, n, &k) != 0 || take_ids(ids, items, (size_t)k) != 0)
        return fail(c, DEFERD_EPROTO, "malformed PARTIAL reply from deferd");
    *stored = (size_t)k;
    fail(c, DEFERD_ESERVER, "PARTIAL stored=%zu of %zu: %.400s", *stored, n, text);
    snprintf(c->err_code, sizeof c->err_code, "PARTIAL");
    return DEFERD_ESERVER;
}

int deferd_put_batch(deferd_client *c, deferd_put_item *items, size_t n, unsigned *parts,
                     size_t *stored)
{
    if (c == NULL)
        return DEFERD_EARG;
    if (stored)
        *stored = 0;
    if (parts)
        *parts = 0;
    struct out_line l = { .len = 0 };
    size_t kept = 0;
    int rc = check_items(c, items, n);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, "BATCH %zu", n);
    if (rc == DEFERD_OK)
        rc = transact_items(c, &l, items, n);
    if (rc == DEFERD_OK)
        rc = take_items_reply(c, c->reply, items, n, parts);
    else if (rc == DEFERD_ESERVER && strcmp(c->reply_code, "PARTIAL") == 0)
        rc = take_partial(c, items, n, &kept);
    if (stored)
        *stored = rc == DEFERD_OK ? n : kept;
    return rc;
}

int deferd_ack_then(deferd_client *c, const char *job_id, deferd_put_item *items, size_t n)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = check_items(c, items, n);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, "ACK %s then=%zu", job_id, n);
    if (rc == DEFERD_OK)
        rc = transact_items(c, &l, items, n);
    return rc == DEFERD_OK ? take_items_reply(c, c->reply, items, n, NULL) : rc;
}

int deferd_nack_then(deferd_client *c, const char *job_id, int64_t delay_ms,
                     deferd_put_item *items, size_t n, char *new_id, size_t new_id_len)
{
    if (c == NULL)
        return DEFERD_EARG;
    if (new_id && new_id_len <= DEFERD_ID_MAX)
        return fail(c, DEFERD_EARG, "id buffer smaller than %d bytes", DEFERD_ID_MAX + 1);
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = check_items(c, items, n);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, "NACK %s", job_id);
    if (rc == DEFERD_OK && delay_ms >= 0)
        rc = line_add(c, &l, " delay=%" PRId64, delay_ms);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, " then=%zu", n);
    if (rc == DEFERD_OK)
        rc = transact_items(c, &l, items, n);
    if (rc != DEFERD_OK)
        return rc;
    /* "OK [<new id>] n=...": the new id comes first when the job was moved */
    char moved[DEFERD_ID_SIZE] = "", *text = c->reply;
    const char *rest;
    if (strncmp(text, "n=", 2) != 0 && reply_id(text, moved, &rest) == 0)
        text += rest - text;
    if (new_id)
        memcpy(new_id, moved, strlen(moved) + 1);
    return take_items_reply(c, text, items, n, NULL);
}

/* "<VERB> <job id>" or "<VERB> <queue> key=<key>": the job a cancel or reschedule means. */
static int target_line(deferd_client *c, struct out_line *l, const char *verb,
                       const char *job_id, const char *queue, const char *key, char *id_out,
                       size_t id_len)
{
    if (id_out && id_len <= DEFERD_ID_MAX)
        return fail(c, DEFERD_EARG, "id buffer smaller than %d bytes", DEFERD_ID_MAX + 1);
    if ((job_id == NULL) == (queue == NULL) || (queue == NULL) != (key == NULL))
        return fail(c, DEFERD_EARG, "give either a job id or a queue and a key");
    int rc = job_id ? check_job_id(c, job_id) : check_queue(c, queue, strlen(queue));
    if (rc == DEFERD_OK && key)
        rc = check_key(c, key);
    if (rc == DEFERD_OK && job_id)
        rc = line_add(c, l, "%s %s", verb, job_id);
    else if (rc == DEFERD_OK)
        rc = line_add(c, l, "%s %s key=%s", verb, queue, key);
    return rc;
}

/* Sends the line and takes the job id that the reply starts with. */
static int transact_id(deferd_client *c, struct out_line *l, const char *verb, char *id_out)
{
    const char *rest;
    char id[DEFERD_ID_SIZE];
    int rc = transact_line(c, l);
    if (rc == DEFERD_OK && reply_id(c->reply, id, &rest) != 0)
        rc = fail(c, DEFERD_EPROTO, "bad job id in %s reply: '%.80s'", verb, c->reply);
    if (rc == DEFERD_OK && id_out)
        memcpy(id_out, id, strlen(id) + 1);
    return rc;
}

int deferd_nack_unrun(deferd_client *c, const char *job_id, char *next_id, size_t id_len)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK && next_id && id_len <= DEFERD_ID_MAX)
        rc = fail(c, DEFERD_EARG, "next_id needs %d bytes", DEFERD_ID_SIZE);
    if (rc == DEFERD_OK)
        rc = line_add(c, &l, "NACK %s unrun=1", job_id);
    if (rc != DEFERD_OK || (rc = transact_line(c, &l)) != DEFERD_OK)
        return rc;
    const char *rest;
    char id[DEFERD_ID_SIZE];
    if (c->reply[0] == '\0') /* "OK": the same id */
        snprintf(id, sizeof id, "%s", job_id);
    else if (reply_id(c->reply, id, &rest) != 0) /* "OK <new id>": attempts in its name */
        return fail(c, DEFERD_EPROTO, "bad job id in NACK reply: '%.80s'", c->reply);
    if (next_id)
        memcpy(next_id, id, strlen(id) + 1);
    return DEFERD_OK;
}

int deferd_cancel(deferd_client *c, const char *job_id, const char *queue, const char *key,
                  int force, char *cancelled_id, size_t id_len)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = target_line(c, &l, "CANCEL", job_id, queue, key, cancelled_id, id_len);
    if (rc == DEFERD_OK && force)
        rc = line_add(c, &l, " force=1");
    return rc == DEFERD_OK ? transact_id(c, &l, "CANCEL", cancelled_id) : rc;
}

int deferd_reschedule(deferd_client *c, const char *job_id, const char *queue,
                      const char *key, int has_at, uint64_t at_ms, uint64_t delay_ms,
                      char *new_id, size_t id_len)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = target_line(c, &l, "RESCHEDULE", job_id, queue, key, new_id, id_len);
    if (rc == DEFERD_OK)
        rc = has_at ? line_add(c, &l, " at=%" PRIu64, at_ms)
                    : line_add(c, &l, " delay=%" PRIu64, delay_ms);
    return rc == DEFERD_OK ? transact_id(c, &l, "RESCHEDULE", new_id) : rc;
}

int deferd_ping(deferd_client *c)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = line_add(c, &l, "PING");
    if (rc == DEFERD_OK)
        rc = transact_line(c, &l);
    if (rc == DEFERD_OK && strcmp(c->reply, "PONG") != 0)
        rc = fail(c, DEFERD_EPROTO, "unexpected PING reply: 'OK %.80s'", c->reply);
    return rc;
}

int deferd_stats(deferd_client *c, char *buf, size_t len)
{
    return deferd_stats_queue(c, NULL, buf, len);
}

int deferd_stats_queue(deferd_client *c, const char *queue, char *buf, size_t len)
{
    if (c == NULL || buf == NULL || len == 0)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = queue ? check_queue(c, queue, strlen(queue)) : DEFERD_OK;
    if (rc == DEFERD_OK)
        rc = queue ? line_add(c, &l, "STATS %s", queue) : line_add(c, &l, "STATS");
    if (rc == DEFERD_OK)
        rc = transact_line(c, &l);
    if (rc == DEFERD_OK)
        snprintf(buf, len, "%s", c->reply);
    return rc;
}

/* ---- consuming ---- */

/* deadline: CLOCK_MONOTONIC ms, -1 = wait forever. Queued pipelined requests are written on
 * the way; their replies are kept for deferd_put_recv() and deferd_ack_recv(). */
static int next_event(deferd_client *c, deferd_event *ev, int64_t deadline)
{
    for (;;) {
        int rc = DEFERD_OK;
        /* Queued requests go out first, also when a push is already at hand (then only what
         * the socket takes at once): a pipelined ack must not wait, holding its job and its
         * lease, until the caller has worked through every queued job. */
        if (c->opos < c->olen) {
            rc = flush_out(c, c->head ? units_mono_ms() : deadline);
            if (rc == DEFERD_ETIMEDOUT && c->head)
                rc = DEFERD_OK;
        }
        if (rc == DEFERD_OK && c->head) {
            fifo_pop(c, ev);
            return DEFERD_OK;
        }
        if (rc == DEFERD_OK) {
            struct ev_node *node = NULL;
            size_t want;
            int kind = take_message(c, &node, &want);
            if (kind == MSG_PUSH)
                fifo_push(c, node);
            else if (kind == MSG_OK || kind == MSG_ERR)
                rc = keep_reply(c, kind);
            else
                rc = kind < 0 ? kind : fill(c, want, deadline);
        }
        /* Nothing was consumed on these two, so the stream is still in step. */
        if (rc == DEFERD_ETIMEDOUT || rc == DEFERD_ENOMEM)
            return rc;
        if (rc != DEFERD_OK) {
            set_broken(c);
            return rc;
        }
    }
}

int deferd_next_event(deferd_client *c, deferd_event *ev, int timeout_ms)
{
    if (c == NULL || ev == NULL)
        return DEFERD_EARG;
    int rc = check_usable(c);
    if (rc != DEFERD_OK)
        return rc;
    return next_event(c, ev, deadline_after(timeout_ms));
}

/* Lease notices queued before the next job are dropped (documented in client.h). */
int deferd_next_job(deferd_client *c, deferd_job *job, int timeout_ms)
{
    if (c == NULL || job == NULL)
        return DEFERD_EARG;
    int rc = check_usable(c);
    if (rc != DEFERD_OK)
        return rc;
    int64_t deadline = deadline_after(timeout_ms);
    for (;;) {
        deferd_event ev;
        rc = next_event(c, &ev, deadline);
        if (rc != DEFERD_OK)
            return rc;
        if (ev.kind == DEFERD_EV_JOB) {
            *job = ev.job;
            return DEFERD_OK;
        }
        deferd_job_clear(&ev.job);
    }
}

void deferd_job_clear(deferd_job *job)
{
    if (job == NULL)
        return;
    free(job->payload);
    memset(job, 0, sizeof *job);
}

/* ---- connection ---- */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* An AF_UNIX connect interrupted by a signal has not connected; just try again. */
static int connect_retry(int fd, const struct sockaddr_un *sa)
{
    for (;;) {
        if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0)
            return 0;
        if (errno == EISCONN)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

deferd_client *deferd_connect(const char *socket_path, char *err, size_t errlen)
{
    const char *path = socket_path ? socket_path : DEFERD_DEFAULT_SOCKET;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof sa.sun_path) {
        set_err(err, errlen, "socket path '%s' is empty or too long", path);
        return NULL;
    }
    memcpy(sa.sun_path, path, n + 1);
    deferd_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    c->timeout_ms = -1;
    /* CLOEXEC: commands run by a consumer must not inherit (and keep open) the socket. */
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect_retry(c->fd, &sa) != 0) {
        set_err(err, errlen, "cannot connect to %s: %s", path, strerror(errno));
        if (c->fd >= 0)
            close(c->fd);
        free(c);
        return NULL;
    }
    return c;
}

void deferd_close(deferd_client *c)
{
    if (c == NULL)
        return;
    while (c->head) {
        deferd_event ev;
        fifo_pop(c, &ev);
        free(ev.job.payload);
    }
    for (int k = 0; k < REQ_KINDS; k++)
        while (c->kq[k].head)
            req_free(req_take(c, k));
    close(c->fd);
    free(c->reply);
    free(c->out);
    free(c->in);
    free(c);
}

int deferd_fd(const deferd_client *c)
{
    return c ? c->fd : -1;
}

int deferd_set_timeout(deferd_client *c, int timeout_ms)
{
    if (c == NULL)
        return DEFERD_EARG;
    c->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
    return DEFERD_OK;
}

const char *deferd_version(void)
{
#define DEFERD_STR2(x) #x
#define DEFERD_STR(x) DEFERD_STR2(x)
    return DEFERD_STR(DEFERD_VERSION_MAJOR) "." DEFERD_STR(DEFERD_VERSION_MINOR) "."
           DEFERD_STR(DEFERD_VERSION_PATCH);
}
