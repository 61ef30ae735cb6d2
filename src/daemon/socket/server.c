#include "server.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "access.h"
#include "config.h"
#include "consumers.h"
#include "daemon.h"
#include "dispatcher.h"
#include "log.h"
#include "put.h"
#include "reply.h"
#include "units.h"
#include "zalloc.h"

#define UNANSWERED_MAX 1024  /* stop reading from a client that does not read replies */
/* libevent's listener accepts until the backlog is empty; clients that reconnect as fast as
 * they are accepted (or refused) would keep it there for ever, starving every connection
 * already open. So after this many accepts the listener rests for one loop turn, in which
 * the open connections are served. */
#define ACCEPTS_BEFORE_REST 16

/* A reply in its connection's queue: lines go out in request order. */
struct out_reply {
    struct reply base;          /* what the handler completes */
    struct out_reply *next;
    struct conn *conn;          /* NULL once the connection is gone */
    int done;
    char *line;
};

struct conn {
    struct conn *next, *prev;   /* server->conns */
    struct server *srv;
    struct bufferevent *bev;
    struct event *more;         /* continues decoding after requests_per_turn */
    struct proto_decoder dec;
    struct out_reply *rhead, *rtail;
    size_t nunanswered;
    struct consumer *consumer;  /* set by the first SUB */
    struct out_reply *unsub;    /* UNSUB answered once no push is on its way */
    struct peer peer;           /* who is at the other end (SO_PEERCRED) */
    int denials;                /* refused requests, logged up to DENIALS_LOGGED */
    int closing;                /* stop decoding */
    int eof;                    /* peer finished sending: close once answered */
    /* A PUT or BATCH waiting for its turn (max_open_puts); nothing more is read meanwhile. */
    struct proto_request parked;
    int is_parked;
    struct conn *park_next, *park_prev;
};

struct server {
    struct deferd *d;
    server_handler_fn *handle;  /* the command table's */
    struct evconnlistener *listener;
    char *path;
    struct conn *conns;
    uint64_t nconns;
    struct conn *park_head, *park_tail; /* parked requests, first come first served */
    size_t nparked;
    struct event *unpark;       /* lets parked requests go once puts are answered */
    int64_t parked_logged;      /* when holding puts back was last logged */
    struct event *accept_again; /* re-enables the listener on the next loop turn */
    struct event *lost_sweep;   /* once a second: slots of taken jobs never answered */
    int accepted;               /* since the last rest, up to ACCEPTS_BEFORE_REST */
    int64_t refused_logged;     /* when a refused connection was last logged */
};

/* The peer finished sending and everything it sent is answered: the connection may go. */
static int answered_all(const struct conn *c)
{
    return c->eof && !c->rhead && !c->is_parked;
}

/* Reading stops while replies pile up or a put waits for its turn; this starts it again. */
static void resume_reading(struct conn *c)
{
    if (c->nunanswered >= UNANSWERED_MAX / 2 || c->eof || c->is_parked)
        return;
    bufferevent_enable(c->bev, EV_READ);
    /* Requests already buffered would otherwise wait for the next byte to arrive. */
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        event_active(c->more, 0, 0);
}

static void flush_replies(struct conn *c)
{
    static const char no_memory[] = "ERR INTERNAL out of memory\n";
    struct evbuffer *out = bufferevent_get_output(c->bev);
    while (c->rhead && c->rhead->done) {
        struct out_reply *r = c->rhead;
        if (r->line) {
            size_t len = strlen(r->line);
            r->line[len] = '\n'; /* its own copy, freed below: no printf per reply */
            evbuffer_add(out, r->line, len + 1);
        } else { /* its reply could not be made */
            evbuffer_add(out, no_memory, sizeof no_memory - 1);
        }
        c->rhead = r->next;
        if (!c->rhead)
            c->rtail = NULL;
        c->nunanswered--;
        free(r->line);
        free(r);
    }
    resume_reading(c);
    if (answered_all(c))
        event_active(c->more, 0, 0); /* freed there, never under a caller's feet */
}

static void reply_complete(struct reply *base, char *line)
{
    struct out_reply *r = (struct out_reply *)base;
    if (!r->conn) {
        free(line);
        free(r);
        return;
    }
    r->line = line; /* NULL: out of memory, said as such by flush_replies */
    r->done = 1;
    flush_replies(r->conn);
}

static struct out_reply *reply_new(struct conn *c)
{
    struct out_reply *r = zalloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->base.complete = reply_complete;
    r->conn = c;
    if (c->rtail)
        c->rtail->next = r;
    else
        c->rhead = r;
    c->rtail = r;
    if (++c->nunanswered >= UNANSWERED_MAX)
        bufferevent_disable(c->bev, EV_READ);
    return r;
}

static int push_job(struct conn *conn, const struct proto_job *p)
{
    return proto_append_job(bufferevent_get_output(conn->bev), p,
                            conn->consumer && conn->consumer->push_uid);
}

static int push_deadline(struct conn *conn, const char *id, int64_t ms_left)
{
    return proto_append_deadline(bufferevent_get_output(conn->bev), id, ms_left);
}

void server_broadcast_state(struct server *s, const char *name)
{
    if (!s)
        return;
    for (struct conn *c = s->conns; c; c = c->next)
        if (c->consumer)
            evbuffer_add_printf(bufferevent_get_output(c->bev), "STATE %s\n", name);
}

size_t server_unanswered_replies(const struct server *s)
{
    size_t n = 0;
    for (const struct conn *c = s ? s->conns : NULL; c; c = c->next)
        n += c->nunanswered;
    return n;
}

static int push_expired(struct conn *conn, const char *id)
{
    return proto_append_expired(bufferevent_get_output(conn->bev), id);
}

static int push_cancelled(struct conn *conn, const char *id)
{
    return proto_append_cancelled(bufferevent_get_output(conn->bev), id);
}

static void consumer_quiet(struct conn *conn)
{
    if (conn->unsub && (!conn->consumer || consumer_locking(conn->consumer) == 0)) {
        struct out_reply *r = conn->unsub;
        conn->unsub = NULL;
        reply_ok(&r->base, NULL);
    }
}

static const struct consumer_ops conn_consumer_ops = {
    .job = push_job,
    .deadline = push_deadline,
    .expired = push_expired,
    .cancelled = push_cancelled,
    .quiet = consumer_quiet,
};

static void drop_consumer(struct conn *c);
static void unpark_unlink(struct conn *c);

static void conn_free(struct conn *c)
{
    if (c->unsub) { /* nobody to answer: freed below with the answered ones */
        c->unsub->done = 1;
        c->unsub = NULL;
    }
    drop_consumer(c);
    if (c->is_parked) { /* the connection broke before its turn: never taken on */
        unpark_unlink(c);
        proto_request_clear(&c->parked);
    }
    proto_decoder_clear(&c->dec);
    for (struct out_reply *r = c->rhead, *next; r; r = next) {
        next = r->next;
        if (r->done) {
            free(r->line);
            free(r);
        } else {
            r->conn = NULL; /* its completion frees it */
        }
    }
    c->srv->nconns--;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    event_free(c->more);
    bufferevent_free(c->bev);
    free(c);
}

/* ---- what request handlers may ask of their connection ---- */

struct consumer *server_conn_consumer(struct conn *c, int create)
{
    if (!c->consumer && create)
        c->consumer = consumer_new(c, &conn_consumer_ops);
    return c->consumer;
}

const struct peer *server_conn_peer(const struct conn *c) { return &c->peer; }

int server_conn_denial(struct conn *c) { return c->denials++; }

void server_conn_hold_unsub(struct conn *c, struct reply *r)
{
    if (c->unsub) { /* replies go in order: this one waits for the first anyway */
        reply_ok(r, NULL);
        return;
    }
    c->unsub = (struct out_reply *)r;
    consumer_quiet(c);
}

static void handle_request(struct conn *c, struct proto_request *req)
{
    struct out_reply *r = reply_new(c);
    if (!r) {
        proto_request_clear(req);
        c->closing = 1;
        return;
    }
    c->srv->handle(c->srv->d, c, req, &r->base);
}

/* ---- max_open_puts: puts beyond it wait, each connection in its turn ---- */

static void unpark_unlink(struct conn *c)
{
    struct server *s = c->srv;
    if (c->park_prev)
        c->park_prev->park_next = c->park_next;
    else
        s->park_head = c->park_next;
    if (c->park_next)
        c->park_next->park_prev = c->park_prev;
    else
        s->park_tail = c->park_prev;
    c->park_next = c->park_prev = NULL;
    c->is_parked = 0;
    s->nparked--;
}

/* A put must wait while too many are being stored, or while earlier ones wait: stores
 * stay bounded however many clients send, and each connection gets its turn in order. */
static int must_wait(struct conn *c, const struct proto_request *req)
{
    struct server *s = c->srv;
    if (!proto_stores_jobs(req->cmd))
        return 0;
    return s->park_head || put_open_count(s->d->dispatcher) >= s->d->cfg->max_open_puts;
}

static void park(struct conn *c, struct proto_request *req)
{
    struct server *s = c->srv;
    int64_t now = units_mono_ms();
    c->parked = *req; /* takes its payloads */
    c->is_parked = 1;
    s->nparked++;
    c->park_prev = s->park_tail;
    if (s->park_tail)
        s->park_tail->park_next = c;
    else
        s->park_head = c;
    s->park_tail = c;
    bufferevent_disable(c->bev, EV_READ);
    if (now - s->parked_logged >= 60000 || !s->parked_logged) {
        s->parked_logged = now;
        log_warn("puts wait their turn: %zu being stored (max_open_puts %llu)",
                 put_open_count(s->d->dispatcher),
                 (unsigned long long)s->d->cfg->max_open_puts);
    }
}

static void handle_request(struct conn *c, struct proto_request *req);

static void on_unpark(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct server *s = arg;
    while (s->park_head &&
           put_open_count(s->d->dispatcher) < s->d->cfg->max_open_puts) {
        struct conn *c = s->park_head;
        unpark_unlink(c);
        handle_request(c, &c->parked);
        resume_reading(c);
        if (answered_all(c))
            event_active(c->more, 0, 0);
    }
}

/* A PUT or BATCH was answered: requests held back may go (soon, from the loop, never under
 * the engine's feet). */
static void on_puts_done(void *arg)
{
    struct server *s = arg;
    if (s->park_head)
        event_active(s->unpark, 0, 0);
}

size_t server_puts_waiting(const struct server *s)
{
    return s ? s->nparked : 0;
}

static void decode_some(struct conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct proto_request req;
    struct proto_error err;
    /* A few requests per turn, so that one busy client cannot starve the others. */
    for (uint64_t n = 0; n < c->srv->d->cfg->requests_per_turn && !c->closing; n++) {
        if (c->nunanswered >= UNANSWERED_MAX || c->is_parked)
            return; /* reading resumes when replies drain, or at its turn */
        enum proto_result res = proto_decode(&c->dec, in, &req, &err);
        if (res == PROTO_NEED_MORE) {
            if (c->eof) /* the peer is gone: the rest of a request cut off never comes */
                evbuffer_drain(in, evbuffer_get_length(in));
            return;
        }
        if (res == PROTO_REQUEST && must_wait(c, &req)) {
            park(c, &req);
            return;
        }
        if (res == PROTO_REQUEST) {
            handle_request(c, &req);
            continue;
        }
        struct out_reply *r = reply_new(c);
        if (r)
            reply_refuse(&r->base, err.code, &err.fields, "%s", err.text);
    }
    if (!c->closing && evbuffer_get_length(in) > 0)
        event_active(c->more, 0, 0);
}

static void drop_consumer(struct conn *c)
{
    if (c->consumer) {
        /* Out of the rings first, so that released jobs cannot be handed back to it. */
        consumer_unsubscribe_all(c->consumer, dispatcher_ring);
        dispatcher_consumer_gone(c->srv->d->dispatcher, c->consumer);
        consumer_free(c->consumer);
        c->consumer = NULL;
    }
}

static void on_more(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    decode_some(c);
    if (answered_all(c) && evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
        evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        conn_free(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct conn *c = arg;
    if (answered_all(c))
        event_active(c->more, 0, 0);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    decode_some(arg);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct conn *c = arg;
    if (what & BEV_EVENT_ERROR) {
        log_debug("client connection error: %s", strerror(errno));
        conn_free(c);
    } else if (what & BEV_EVENT_EOF) {
        /* Requests already received still get their answers; held jobs are released now
         * because a consumer that stopped sending cannot ack them. */
        c->eof = 1;
        bufferevent_disable(c->bev, EV_READ);
        drop_consumer(c);
        event_active(c->more, 0, 0);
    }
}

/* Over max_connections: told why, then closed; logged at most once a minute. */
static void refuse_connection(struct server *s, evutil_socket_t fd)
{
    static const struct refusal f = {.stored = RS_NO, .reason = RR_MAX_CONNECTIONS};
    char msg[200];
    int n = proto_format_refusal(msg, sizeof msg - 1, PE_UNAVAILABLE, &f,
                                 "too many connections (max_connections)");
    int64_t now = units_mono_ms();
    n = n > 0 && (size_t)n < sizeof msg - 1 ? n : 0; /* it fits: short and fixed */
    if (n > 0)
        msg[n++] = '\n';
    if (n > 0 && send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        /* nothing to do: the client learns from the close */
    }
    close(fd);
    if (now - s->refused_logged >= 60000 || !s->refused_logged) {
        s->refused_logged = now;
        log_warn("refusing connections: %llu open, max_connections %llu",
                 (unsigned long long)s->nconns, (unsigned long long)s->d->cfg->max_connections);
    }
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                      int socklen, void *arg)
{
    (void)sa;
    (void)socklen;
    struct server *s = arg;
    struct event_base *base = s->d->base;
    if (++s->accepted >= ACCEPTS_BEFORE_REST) {
        evconnlistener_disable(l); /* its accept loop stops after this one */
        struct timeval next_turn = {0, 0};
        evtimer_add(s->accept_again, &next_turn);
    }
    if (s->nconns >= s->d->cfg->max_connections) {
        refuse_connection(s, fd);
        return;
    }
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    c->srv = s;
    c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->more = event_new(base, -1, 0, on_more, c);
    if (!c->bev || !c->more) {
        log_error("out of memory accepting a client");
        if (c->bev)
            bufferevent_free(c->bev);
        else
            close(fd);
        free(c);
        return;
    }
    proto_decoder_init(&c->dec, s->d->cfg->max_payload);
    c->dec.max_line = (size_t)s->d->cfg->max_line;
    s->nconns++;
    if (access_peer_read(fd, &c->peer) != 0)
        log_warn("cannot read the credentials of a client (SO_PEERCRED): %s; it may use only "
                 "queues without producers/consumers rules", strerror(errno));
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    /* Read no further ahead than one whole request: a connection's buffer, and so deferd's
     * memory, stays bounded by max_connections times this however fast clients send. */
    bufferevent_setwatermark(c->bev, EV_READ, 0,
                             (size_t)(s->d->cfg->max_line + s->d->cfg->max_payload + 64));
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void on_accept_again(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct server *s = arg;
    s->accepted = 0;
    evconnlistener_enable(s->listener);
}

/* A socket file nobody answers on is left over from a crash: remove it. A live one means
 * another daemon uses this path: refuse rather than steal it. Says why when it refuses. */
static int clear_stale_socket(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0; /* a missing directory is for bind() to find: log_listen_error() */
        log_error("cannot use socket path %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        log_error("socket path %s exists and is not a socket; not touching it", path);
        return -1;
    }
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    strncpy(sun.sun_path, path, sizeof sun.sun_path - 1);
    /* Non-blocking: a live daemon with a full backlog says EAGAIN instead of hanging us. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int err = fd < 0 ? errno : connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0 ? 0 : errno;
    if (fd >= 0)
        close(fd);
    if (err == 0 || err == EAGAIN) {
        log_error("another process is listening on %s (another deferd?); not taking it over",
                  path);
        return -1;
    }
    if (err != ECONNREFUSED) { /* only a refusal proves nobody listens; EACCES proves nothing */
        log_error("cannot tell whether socket %s is in use (connect: %s); not removing it",
                  path, strerror(err));
        return -1;
    }
    if (unlink(path) != 0) {
        log_error("cannot remove stale socket %s: %s", path, strerror(errno));
        return -1;
    }
    log_info("removed stale socket %s (nobody was listening on it)", path);
    return 0;
}

/* bind() reports a missing directory as a bare "No such file or directory" about the socket:
 * name the directory instead, the usual slip (under systemd, RuntimeDirectory=). */
static void log_listen_error(const char *path, int err)
{
    const char *slash = strrchr(path, '/');
    if (err != ENOENT || !slash) {
        log_error("cannot listen on %s: %s", path, strerror(err));
        return;
    }
    log_error("cannot listen on %s: directory %.*s does not exist; create it first (under "
              "systemd: RuntimeDirectory= in the unit)", path,
              slash == path ? 1 : (int)(slash - path), path);
}

/* A consumer that never answers the jobs taken from it (written before the window rule,
 * or stuck) gets their slots back one ttr later, so it is slowed, never starved. */
static void on_lost_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct server *s = arg;
    int64_t now = units_mono_ms();
    (void)fd;
    (void)what;
    for (struct conn *c = s->conns; c; c = c->next) {
        unsigned n = c->consumer && c->consumer->revoked ? consumer_expire_lost(c->consumer, now)
                                                         : 0;
        if (!n)
            continue;
        log_warn("consumer (pid %ld, uid %ld): %u job%s taken from it (expired, cancelled or "
                 "lost) not answered within their ttr: %s freed; a consumer should ack or nack "
                 "such a job once it stops working on it (docs/protocol.md, SUB)",
                 (long)c->peer.pid, (long)c->peer.uid, n, n == 1 ? "" : "s",
                 n == 1 ? "its slot" : "their slots");
        dispatcher_consumer_changed(s->d->dispatcher, c->consumer);
    }
}

struct server *server_new(struct deferd *d, server_handler_fn *handle)
{
    const struct config *cfg = d->cfg;
    struct server *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(cfg->socket_path))) {
        free(s);
        return NULL;
    }
    s->d = d;
    s->handle = handle;
    static const struct timeval second = {1, 0};
    if (!(s->accept_again = evtimer_new(d->base, on_accept_again, s)) ||
        !(s->unpark = event_new(d->base, -1, 0, on_unpark, s)) ||
        !(s->lost_sweep = event_new(d->base, -1, EV_PERSIST, on_lost_sweep, s)) ||
        event_add(s->lost_sweep, &second) != 0)
        goto fail;
    if (clear_stale_socket(cfg->socket_path) != 0)
        goto fail; /* it said why */
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    strncpy(sun.sun_path, cfg->socket_path, sizeof sun.sun_path - 1);
    mode_t old = umask(0777 & ~cfg->socket_mode); /* no window with a wider mode */
    s->listener = evconnlistener_new_bind(d->base, on_accept, s,
                                          LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 128,
                                          (struct sockaddr *)&sun, sizeof sun);
    umask(old);
    if (!s->listener) {
        log_listen_error(cfg->socket_path, errno);
        goto fail;
    }
    if (chmod(cfg->socket_path, cfg->socket_mode) != 0)
        log_warn("chmod %o %s: %s", cfg->socket_mode, cfg->socket_path, strerror(errno));
    if ((cfg->socket_uid >= 0 || cfg->socket_gid >= 0) &&
        chown(cfg->socket_path, (uid_t)cfg->socket_uid, (gid_t)cfg->socket_gid) != 0) {
        log_error("cannot give %s to socket_owner %ld / socket_group %ld: %s", cfg->socket_path,
                  cfg->socket_uid, cfg->socket_gid, strerror(errno));
        evconnlistener_free(s->listener);
        unlink(cfg->socket_path);
        goto fail;
    }
    log_info("listening on %s", cfg->socket_path);
    put_on_done(d->dispatcher, on_puts_done, s);
    return s;
fail:
    if (s->accept_again)
        event_free(s->accept_again);
    if (s->unpark)
        event_free(s->unpark);
    if (s->lost_sweep)
        event_free(s->lost_sweep);
    free(s->path);
    free(s);
    return NULL;
}

void server_free(struct server *s)
{
    if (!s)
        return;
    put_on_done(s->d->dispatcher, NULL, NULL);
    while (s->conns)
        conn_free(s->conns);
    evconnlistener_free(s->listener);
    event_free(s->accept_again);
    event_free(s->unpark);
    event_free(s->lost_sweep);
    unlink(s->path);
    free(s->path);
    free(s);
}
