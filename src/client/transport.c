/* libdeferd's transport: the socket, the input and output buffers, waiting with a
 * deadline, the queue of pushes that arrive early and the lists of pipelined requests
 * with their replies (client_int.h tells how they fit together). */
#include "client_int.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "units.h"

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

void transport_consume(deferd_client *c, size_t n)
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
        return client_fail(c, DEFERD_ENOMEM, "out of memory for a %zu byte message", need);
    c->in = p;
    c->cap = need;
    return DEFERD_OK;
}

int64_t transport_deadline(int timeout_ms)
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
            return client_fail(c, DEFERD_ETIMEDOUT, "timed out waiting for deferd");
        if (errno != EINTR)
            return client_fail(c, DEFERD_EIO, "poll: %s", strerror(errno));
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
            return client_fail(c, DEFERD_EIO, "connection closed by deferd");
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            return client_fail(c, DEFERD_EIO, "read from deferd: %s", strerror(errno));
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
            return client_fail(c, DEFERD_EIO, "connection closed by deferd");
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return DEFERD_OK;
        if (errno != EINTR)
            return client_fail(c, DEFERD_EIO, "read from deferd: %s", strerror(errno));
    }
    return rc;
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
            return client_fail(c, DEFERD_EIO, "connection closed by deferd");
        } else if (errno != EINTR) {
            return client_fail(c, DEFERD_EIO, "write to deferd: %s", strerror(errno));
        }
    }
    return DEFERD_OK;
}

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

static const char *const req_names[REQ_KINDS] = {"put", "ack"};
static const char *const req_recv_calls[REQ_KINDS] = {"deferd_put_recv", "deferd_ack_recv"};

/* A new request of the given kind (ack: for job id), not linked anywhere yet. */
static struct req *req_new(deferd_client *c, int kind, const char *id)
{
    size_t n = id ? strlen(id) : 0;
    struct req *r = calloc(1, sizeof *r + n + 1);
    if (r == NULL) {
        client_fail(c, DEFERD_ENOMEM, "out of memory queueing a pipelined %s", req_names[kind]);
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
        return client_fail(c, DEFERD_EPROTO, "reply from deferd without a request: '%s%.80s'",
                           kind == MSG_OK ? "OK " : "ERR ", c->reply);
    if (kind == MSG_OK && r->kind == REQ_PUT && wire_parse_put_reply(c->reply, NULL, NULL) != 0)
        return client_fail(c, DEFERD_EPROTO, "bad job id in PUT reply: '%.80s'", c->reply);
    char *text = NULL;
    if (kind == MSG_ERR || r->kind == REQ_PUT) {
        /* PUT: just the id; a duplicate is an OK like any other for deferd_put_recv() */
        size_t n = kind == MSG_OK ? strcspn(c->reply, " ") : strlen(c->reply);
        text = malloc(n + 1);
        if (text == NULL)
            return client_fail(c, DEFERD_ENOMEM, "out of memory for a %s reply",
                               r->kind == REQ_PUT ? "PUT" : "ACK");
        memcpy(text, c->reply, n);
        text[n] = '\0';
    }
    r->text = text;
    r->is_err = kind == MSG_ERR;
    memcpy(r->code, c->reply_code, sizeof r->code);
    r->answered = 1;
    transport_consume(c, c->reply_hlen);
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
        int kind = wire_take_message(c, &node, &c->in_want);
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
        return client_fail(c, DEFERD_ENOMEM, "request of %zu bytes too large to queue", n);
    size_t cap = c->ocap ? c->ocap : 16384;
    while (cap - c->olen < n)
        cap *= 2;
    char *p = realloc(c->out, cap);
    if (p == NULL)
        return client_fail(c, DEFERD_ENOMEM, "out of memory queueing a %zu byte request", n);
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
            return client_fail(c, DEFERD_EIO, "connection closed by deferd");
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return client_fail(c, DEFERD_EIO, "write to deferd: %s", strerror(errno));
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

static int await_reply(deferd_client *c)
{
    int64_t deadline = transport_deadline(c->timeout_ms);
    for (;;) {
        struct ev_node *node = NULL;
        size_t want;
        int kind = wire_take_message(c, &node, &want);
        if (kind == MSG_PUSH) {
            fifo_push(c, node);
            continue;
        }
        if (kind == MSG_OK || kind == MSG_ERR) {
            int rc = kind == MSG_OK ? DEFERD_OK
                                    : client_server_error(c, c->reply, c->reply_code);
            transport_consume(c, c->reply_hlen);
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
        return client_fail(c, DEFERD_EARG, "%d pipelined put%s and %d pipelined ack%s "
                           "outstanding: call deferd_put_recv and deferd_ack_recv first", np,
                           np == 1 ? "" : "s", na, na == 1 ? "" : "s");
    if (np > 0 || na > 0) {
        int kind = np > 0 ? REQ_PUT : REQ_ACK, n = np + na;
        return client_fail(c, DEFERD_EARG, "%d pipelined %s%s outstanding: call %s first", n,
                           req_names[kind], n == 1 ? "" : "s", req_recv_calls[kind]);
    }
    return DEFERD_OK;
}

/* Sends one request and waits for its reply, queueing pushes that come first. */
int transport_transact(deferd_client *c, struct iovec *iov, size_t iovcnt)
{
    int rc = client_check_usable(c);
    if (rc == DEFERD_OK)
        rc = check_no_pipelined(c);
    if (rc == DEFERD_OK)
        rc = send_all(c, iov, iovcnt);
    if (rc == DEFERD_OK)
        rc = await_reply(c);
    return client_mark_request_error(c, rc);
}

int transport_transact_line(deferd_client *c, struct out_line *l)
{
    int rc = wire_line_add(c, l, "\n");
    if (rc != DEFERD_OK)
        return rc;
    struct iovec iov = { .iov_base = l->buf, .iov_len = l->len };
    return transport_transact(c, &iov, 1);
}

/* Appends a request (bytes already formatted in parts) to the output buffer and the lists;
 * writes the buffer once it is large. */
int transport_queue_request(deferd_client *c, int kind, const char *id,
                            const struct iovec *iov, size_t iovcnt)
{
    if (c->kq[kind].n == INT_MAX)
        return client_fail(c, DEFERD_EARG, "%d pipelined %ss outstanding", INT_MAX,
                           req_names[kind]);
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
    return client_mark_request_error(c, flush_out(c, -1));
}

/* One message taken (a push queued, a pipelined reply kept), or more read (until
 * DEADLINE) when none is complete. */
static int take_one(deferd_client *c, int64_t deadline)
{
    struct ev_node *node = NULL;
    size_t want;
    int kind = wire_take_message(c, &node, &want);
    if (kind == MSG_PUSH) {
        fifo_push(c, node);
        return DEFERD_OK;
    }
    if (kind == MSG_OK || kind == MSG_ERR)
        return keep_reply(c, kind);
    return kind < 0 ? kind : fill(c, want, deadline);
}

/* Reads (until DEADLINE) until R is answered, setting aside pushes and other replies. */
static int take_until_answered(deferd_client *c, const struct req *r, int64_t deadline)
{
    int rc = DEFERD_OK;
    while (rc == DEFERD_OK && !r->answered)
        rc = take_one(c, deadline);
    return rc;
}

/* The result of the oldest outstanding request of a kind: writes what is queued unless its
 * reply has arrived already, reads until that request is answered (setting aside pushes
 * and replies to other requests), and takes it out. A timeout consumes nothing. Once the
 * connection is unusable, results read before are still handed out and each request never
 * answered returns the error (DEFERD_EIO after the first). */
int transport_recv_result(deferd_client *c, int kind, char *id_out, size_t id_len,
                          int timeout_ms)
{
    if (c->kq[kind].n == 0) {
        if (c->broken)
            return client_check_usable(c);
        return client_fail(c, DEFERD_EARG, "no pipelined %s outstanding", req_names[kind]);
    }
    if (id_out && id_len <= DEFERD_ID_MAX)
        return client_fail(c, DEFERD_EARG, "id buffer smaller than %d bytes",
                           DEFERD_ID_MAX + 1);
    struct req *r = c->kq[kind].head;
    int rc = client_check_usable(c);
    if (rc == DEFERD_OK) {
        int64_t deadline = transport_deadline(timeout_ms);
        /* A reply that has arrived is handed out before the queue is written: a producer
         * that sends a put after each reply then writes them when it would wait, at once,
         * not a put a write. The queue goes out before any wait. */
        rc = take_until_answered(c, r, units_mono_ms());
        if (rc == DEFERD_ETIMEDOUT && !r->answered) {
            rc = flush_out(c, deadline);
            if (rc == DEFERD_OK)
                rc = take_until_answered(c, r, deadline);
        }
        /* A timeout consumed nothing: the reply is still owed and comes with a later call
         * (or was read meanwhile: then it is handed out now). */
        if (rc == DEFERD_ETIMEDOUT && !r->answered)
            return rc;
        if (rc != DEFERD_OK && rc != DEFERD_ETIMEDOUT)
            client_set_broken(c);
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
            client_fail(c, rc, "ACK %s not answered (%s): the job may or may not have been "
                        "acked", r->id, cause);
        else
            client_fail(c, rc, "PUT not answered (%s): the job may or may not have been "
                        "stored", cause);
    } else if (r->is_err) {
        rc = client_server_error(c, r->text, r->code);
    } else {
        rc = DEFERD_OK;
        if (kind == REQ_PUT && id_out)
            memcpy(id_out, r->text, strlen(r->text) + 1);
    }
    req_free(r);
    return rc;
}

/* deadline: CLOCK_MONOTONIC ms, -1 = wait forever. Queued pipelined requests are written on
 * the way; their replies are kept for deferd_put_recv() and deferd_ack_recv(). */
int transport_next_event(deferd_client *c, deferd_event *ev, int64_t deadline)
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
        if (rc == DEFERD_OK)
            rc = take_one(c, deadline);
        /* Nothing was consumed on these two, so the stream is still in step. */
        if (rc == DEFERD_ETIMEDOUT || rc == DEFERD_ENOMEM)
            return rc;
        if (rc != DEFERD_OK) {
            client_set_broken(c);
            return rc;
        }
    }
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

/* A socket connected to sa, or -1 with errno set. */
int transport_open(const struct sockaddr_un *sa)
{
    /* CLOEXEC: commands run by a consumer must not inherit (and keep open) the socket. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect_retry(fd, sa) == 0)
        return fd;
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

/* Closes the socket and frees what the transport holds: pushes not taken, pipelined
 * requests not received, the buffers. */
void transport_release(deferd_client *c)
{
    while (c->head) {
        deferd_event ev;
        fifo_pop(c, &ev);
        free(ev.job.payload);
    }
    for (int k = 0; k < REQ_KINDS; k++)
        while (c->kq[k].head)
            req_free(req_take(c, k));
    close(c->fd);
    free(c->out);
    free(c->in);
}
