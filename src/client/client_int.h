/* What libdeferd's files share: the client's state and the internal calls between
 * client.c (the public API and its errors), wire.c (the text of requests, replies and
 * pushes) and transport.c (the socket, the buffers, the queues of pushes and of pipelined
 * requests). Private to src/client; libdeferd.map keeps these names out of its exports.
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
#ifndef DEFERD_CLIENT_INT_H
#define DEFERD_CLIENT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "deferd/client.h"
#include "refusal.h"

/* protocol.md: a header line, '\n' included, is at most 1024 bytes. */
#define OUT_LINE_MAX 1024

/* What wire_take_message() found at the front of the input buffer. */
enum { MSG_NONE = 0, MSG_OK = 1, MSG_ERR = 2, MSG_PUSH = 3, MSG_SKIPPED = 4 };

/* A push taken from the input, queued until the caller asks for events. */
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
    int put_retry_ms;               /* deferd_set_put_retry(); 0: none */
    int no_tokens;                  /* the daemon refused idem= (older than put tokens) */
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
    struct refusal err_fields;      /* the fields of the last ERR reply (refusal.h) */
};

/* A request line being built. */
struct out_line {
    char buf[OUT_LINE_MAX];
    size_t len;
};

/* client.c: the client's last error. client_fail() sets it and returns rc. */
int client_fail(deferd_client *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Makes an ERR reply the last error; returns DEFERD_ESERVER. */
int client_server_error(deferd_client *c, const char *text, const char *code);
/* No more reply will be read (after an error that may leave the stream out of step). */
void client_set_broken(deferd_client *c);
/* Marks the connection broken after the errors that may do so; returns rc. */
int client_mark_request_error(deferd_client *c, int rc);
/* DEFERD_EIO once the connection is broken, else DEFERD_OK. */
int client_check_usable(deferd_client *c);

/* wire.c: request lines, and replies and pushes parsed from the input buffer. */
int wire_line_add(deferd_client *c, struct out_line *l, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* TOKEN: NULL, or the put token sent as idem= (docs/protocol.md, PUT). */
int wire_put_header(deferd_client *c, struct out_line *l, const char *queue, size_t len,
                    const deferd_put_opts *o, const char *token);
int wire_reply_id(const char *text, char *out, const char **rest);
int wire_parse_put_reply(const char *text, char *id_out, int *dup);
int wire_take_message(deferd_client *c, struct ev_node **push, size_t *want);
int wire_items_reply(deferd_client *c, char *text, deferd_put_item *items, size_t n,
                     unsigned *parts);
int wire_partial(deferd_client *c, deferd_put_item *items, size_t n, size_t *stored);

/* transport.c: the socket, the buffers, blocking requests and pipelined ones. */
int transport_open(const struct sockaddr_un *sa);
void transport_release(deferd_client *c);
void transport_consume(deferd_client *c, size_t n);
int64_t transport_deadline(int timeout_ms);
int transport_transact(deferd_client *c, struct iovec *iov, size_t iovcnt);
int transport_transact_line(deferd_client *c, struct out_line *l);
int transport_queue_request(deferd_client *c, int kind, const char *id,
                            const struct iovec *iov, size_t iovcnt);
int transport_recv_result(deferd_client *c, int kind, char *id_out, size_t id_len,
                          int timeout_ms);
int transport_next_event(deferd_client *c, deferd_event *ev, int64_t deadline);

#endif
