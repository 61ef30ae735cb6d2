/* libdeferd: blocking client for the deferd socket protocol (docs/protocol.md). The public
 * API of include/deferd/client.h: arguments checked, requests built with wire.c and sent
 * with transport.c, results and errors handed back. */
#include "client_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "names.h"
#include "units.h"

int client_fail(deferd_client *c, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->err_code[0] = '\0';
    memset(&c->err_fields, 0, sizeof c->err_fields);
    return rc;
}

/* No more reply will be read: pipelined requests still unanswered stay unknown (their recv
 * calls return DEFERD_EIO); results already read are still handed out. */
void client_set_broken(deferd_client *c)
{
    c->broken = 1;
    c->whead = c->wtail = NULL; /* the reqs stay in (and are owned by) their kind lists */
}

/* After these errors during a request we cannot tell which reply belongs to which request. */
int client_mark_request_error(deferd_client *c, int rc)
{
    if (rc == DEFERD_EIO || rc == DEFERD_EPROTO || rc == DEFERD_ETIMEDOUT ||
        rc == DEFERD_ENOMEM)
        client_set_broken(c);
    return rc;
}

int client_check_usable(deferd_client *c)
{
    if (c->broken)
        return client_fail(c, DEFERD_EIO,
                           "connection unusable after an earlier error; reconnect");
    return DEFERD_OK;
}

/* Makes the last ERR reply the client's last failure. */
int client_server_error(deferd_client *c, const char *text, const char *code)
{
    /* Truncation is fine; using the result tells the compiler so. */
    if (snprintf(c->err, sizeof c->err, "%s", text) < 0)
        c->err[0] = '\0';
    if (snprintf(c->err_code, sizeof c->err_code, "%s", code) < 0)
        c->err_code[0] = '\0';
    size_t n = strlen(code);
    refusal_parse(strncmp(text, code, n) == 0 && text[n] == ' ' ? text + n + 1 : "",
                  &c->err_fields);
    return DEFERD_ESERVER;
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

_Static_assert(DEFERD_STORED_NO == (int)RS_NO && DEFERD_STORED_MAYBE == (int)RS_MAYBE &&
               DEFERD_STORED_YES == (int)RS_YES, "stored= values");

int deferd_last_error_stored(const deferd_client *c)
{
    if (c == NULL || c->err_fields.stored == RS_COUNT) /* PARTIAL: its own count */
        return DEFERD_STORED_UNSAID;
    return (int)c->err_fields.stored;
}

const char *deferd_last_error_reason(const deferd_client *c)
{
    return c ? c->err_fields.reason_word : "";
}

static int check_key(deferd_client *c, const char *key)
{
    if (key == NULL)
        return client_fail(c, DEFERD_EARG, "key is NULL");
    if (!names_valid_key(key))
        return client_fail(c, DEFERD_EARG, "invalid key '%.80s' (1-%d bytes of A-Z a-z 0-9 "
                           "_ . : @ -, starting with a letter or digit)", key, DEFERD_KEY_MAX);
    return DEFERD_OK;
}

static int check_queue(deferd_client *c, const char *q, size_t n)
{
    if (names_valid_queue_n(q, n))
        return DEFERD_OK;
    return client_fail(c, DEFERD_EARG,
                       "invalid queue name '%.*s' (1-%d bytes of A-Z a-z 0-9 _ . -, not "
                       "starting with '.')", (int)(n > 80 ? 80 : n), q, DEFERD_QUEUE_MAX);
}

static int check_job_id(deferd_client *c, const char *id)
{
    if (id == NULL)
        return client_fail(c, DEFERD_EARG, "job id is NULL");
    if (!names_valid_job_id(id))
        return client_fail(c, DEFERD_EARG, "invalid job id '%.80s' (want <queue>/<name>, at "
                           "most %d bytes)", id, DEFERD_ID_MAX);
    return DEFERD_OK;
}

static int check_queue_list(deferd_client *c, const char *list)
{
    if (list == NULL)
        return client_fail(c, DEFERD_EARG, "queue list is NULL");
    for (const char *p = list;; ) {
        size_t n = strcspn(p, ",");
        int rc = check_queue(c, p, n);
        if (rc != DEFERD_OK || p[n] == '\0')
            return rc;
        p += n + 1;
    }
}

static int check_put(deferd_client *c, const char *queue, const void *payload, size_t len,
                     const deferd_put_opts *opts, const char *id_out, size_t id_len)
{
    if (queue == NULL)
        return client_fail(c, DEFERD_EARG, "queue is NULL");
    if (payload == NULL && len > 0)
        return client_fail(c, DEFERD_EARG, "payload is NULL");
    if (opts && opts->has_delay && opts->has_at)
        return client_fail(c, DEFERD_EARG, "delay and at are mutually exclusive");
    if (opts && opts->has_ttr &&
        (opts->ttr_ms < DEFERD_TTR_MIN_MS || opts->ttr_ms > DEFERD_TTR_MAX_MS))
        return client_fail(c, DEFERD_EARG, "ttr %" PRIu64 " ms outside %d..%d", opts->ttr_ms,
                           DEFERD_TTR_MIN_MS, DEFERD_TTR_MAX_MS);
    if (id_out && id_len <= DEFERD_ID_MAX)
        return client_fail(c, DEFERD_EARG, "id buffer smaller than %d bytes",
                           DEFERD_ID_MAX + 1);
    if (opts && opts->key && check_key(c, opts->key) != DEFERD_OK)
        return DEFERD_EARG;
    if (opts && opts->group && !names_valid_group(opts->group))
        return client_fail(c, DEFERD_EARG, "invalid group '%.80s' (1-%d bytes of A-Z a-z 0-9 "
                           "_ . : @ -, starting with a letter or digit)", opts->group,
                           DEFERD_GROUP_MAX);
    return check_queue(c, queue, strlen(queue));
}

static int check_items(deferd_client *c, deferd_put_item *items, size_t n)
{
    if (items == NULL || n == 0 || n > DEFERD_BATCH_MAX)
        return client_fail(c, DEFERD_EARG, "%zu jobs: want 1..%d", items ? n : 0,
                           DEFERD_BATCH_MAX);
    for (size_t i = 0; i < n; i++) {
        items[i].id[0] = '\0';
        items[i].duplicate = 0;
    }
    for (size_t i = 0; i < n; i++) {
        const deferd_put_item *it = &items[i];
        if (check_put(c, it->queue, it->payload, it->len, &it->opts, NULL, 0) != DEFERD_OK) {
            char why[sizeof c->err];
            memcpy(why, c->err, sizeof why);
            return client_fail(c, DEFERD_EARG, "item %zu: %s", i + 1, why);
        }
    }
    return DEFERD_OK;
}

/* One PUT (with TOKEN as idem=, if not NULL) and its reply; dup (if not NULL) tells a
 * duplicate. */
static int put_once(deferd_client *c, const char *queue, const void *payload, size_t len,
                    const deferd_put_opts *opts, const char *token, char *id_out, size_t id_len,
                    int *dup)
{
    struct out_line l = { .len = 0 };
    int rc = check_put(c, queue, payload, len, opts, id_out, id_len);
    if (rc == DEFERD_OK)
        rc = wire_put_header(c, &l, queue, len, opts, token);
    if (rc != DEFERD_OK)
        return rc;
    struct iovec iov[3] = {
        { .iov_base = l.buf, .iov_len = l.len },
        { .iov_base = (void *)payload, .iov_len = len },
        { .iov_base = "\n", .iov_len = 1 },
    };
    rc = transport_transact(c, iov, 3);
    if (rc == DEFERD_OK && wire_parse_put_reply(c->reply, id_out, dup) != 0)
        rc = client_fail(c, DEFERD_EPROTO, "bad job id in PUT reply: '%.80s'", c->reply);
    return rc;
}

/* The fallback for daemons older than refusal fields (their ERR carries none): the words
 * of their text. Sending the put again cannot make a second job: it was not stored
 * (UNAVAILABLE "not stored", not a denial, not a daemon stopping), or its outcome is
 * unknown and it carries a put token or a key; a Curator format queue keeps no tokens. */
static int put_retry_safe_by_text(const deferd_client *c, int keyed, int tokened)
{
    if (strstr(c->err, "permission denied") || strstr(c->err, "stopping"))
        return 0;
    if (strstr(c->err, "may have been stored"))
        return keyed || (tokened && !strstr(c->err, "keeps no put tokens"));
    return strstr(c->err, "not stored") != NULL;
}

/* Whether an UNAVAILABLE put may be sent again: decided by its fields (stored=, reason=,
 * tokens=; docs/protocol.md, Errors), by its text only from an older daemon. */
static int put_retry_safe(const deferd_client *c, const deferd_put_opts *opts,
                          const char *token)
{
    int keyed = opts && opts->key;
    if (strcmp(c->err_code, "UNAVAILABLE") != 0)
        return 0;
    if (c->err_fields.fields > 0)
        return refusal_put_retry_safe(&c->err_fields, keyed, token != NULL);
    return put_retry_safe_by_text(c, keyed, token != NULL);
}

/* A put token: this host's clock in ms, and 64 random bits (docs/protocol.md, PUT idem=). */
static void new_token(char *buf, size_t len)
{
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        rnd = (uint64_t)units_mono_ms() * 2654435761u ^ (uint64_t)getpid() << 32;
    snprintf(buf, len, "%lld-%016llx", (long long)units_wall_ms(), (unsigned long long)rnd);
}

/* A daemon older than put tokens refuses idem= ("unknown or repeated option"): the client
 * sends its puts without one from then on. A daemon with refusal fields names the option
 * (option=idem); one without (older than tokens, too) only in its text. */
static int token_refused(deferd_client *c)
{
    const struct refusal *f = &c->err_fields;
    if (strcmp(c->err_code, "BAD_REQUEST") != 0 ||
        !(f->fields > 0 ? strcmp(f->option, "idem") == 0 : strstr(c->err, "option 'idem'") != NULL))
        return 0;
    c->no_tokens = 1;
    return 1;
}

/* deferd_put() and deferd_put_one(): a put answered UNAVAILABLE is sent again while that is
 * safe, for up to the client's put retry time, waiting 100 ms, then twice as long each time
 * (at most 2 s): a ZooKeeper outage longer than the daemon's hold_writes, or a lost answer,
 * costs the producer a pause instead of an error or a second job. */
static int put_blocking(deferd_client *c, const char *queue, const void *payload, size_t len,
                        const deferd_put_opts *opts, char *id_out, size_t id_len, int *dup)
{
    int64_t until = units_mono_ms() + c->put_retry_ms;
    int pause = 100;
    char token[64];
    const char *tok = NULL;
    if (c->put_retry_ms > 0 && !(opts && opts->key) && !c->no_tokens) {
        new_token(token, sizeof token);
        tok = token;
    }
    for (;;) {
        int rc = put_once(c, queue, payload, len, opts, tok, id_out, id_len, dup);
        if (rc == DEFERD_ESERVER && tok && token_refused(c)) {
            tok = NULL;
            continue;
        }
        if (rc != DEFERD_ESERVER || !put_retry_safe(c, opts, tok) ||
            units_mono_ms() + pause > until)
            return rc;
        struct timespec ts = {.tv_sec = pause / 1000, .tv_nsec = (pause % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        pause = pause < 1000 ? pause * 2 : 2000;
    }
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

int deferd_put_send(deferd_client *c, const char *queue, const void *payload, size_t len,
                    const deferd_put_opts *opts)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = client_check_usable(c);
    if (rc == DEFERD_OK)
        rc = check_put(c, queue, payload, len, opts, NULL, 0);
    if (rc == DEFERD_OK)
        rc = wire_put_header(c, &l, queue, len, opts, NULL);
    if (rc != DEFERD_OK)
        return rc;
    struct iovec iov[3] = {
        { .iov_base = l.buf, .iov_len = l.len },
        { .iov_base = (void *)payload, .iov_len = len },
        { .iov_base = "\n", .iov_len = 1 },
    };
    return transport_queue_request(c, REQ_PUT, NULL, iov, 3);
}

int deferd_ack_send(deferd_client *c, const char *job_id)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = client_check_usable(c);
    if (rc == DEFERD_OK)
        rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, "ACK %s\n", job_id);
    if (rc != DEFERD_OK)
        return rc;
    struct iovec iov = { .iov_base = l.buf, .iov_len = l.len };
    return transport_queue_request(c, REQ_ACK, job_id, &iov, 1);
}

int deferd_put_recv(deferd_client *c, char *id_out, size_t id_len, int timeout_ms)
{
    if (c == NULL)
        return DEFERD_EARG;
    return transport_recv_result(c, REQ_PUT, id_out, id_len, timeout_ms);
}

int deferd_puts_outstanding(const deferd_client *c)
{
    return c ? c->kq[REQ_PUT].n : 0;
}

int deferd_ack_recv(deferd_client *c, char *id_out, size_t id_len, int timeout_ms)
{
    if (c == NULL)
        return DEFERD_EARG;
    return transport_recv_result(c, REQ_ACK, id_out, id_len, timeout_ms);
}

int deferd_acks_outstanding(const deferd_client *c)
{
    return c ? c->kq[REQ_ACK].n : 0;
}

int deferd_subscribe(deferd_client *c, const char *queues, unsigned inflight)
{
    if (c == NULL)
        return DEFERD_EARG;
    if (inflight > DEFERD_INFLIGHT_MAX)
        return client_fail(c, DEFERD_EARG, "inflight %u over %d", inflight,
                           DEFERD_INFLIGHT_MAX);
    struct out_line l = { .len = 0 };
    int rc = check_queue_list(c, queues);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, "SUB %s", queues);
    if (rc == DEFERD_OK && inflight > 0)
        rc = wire_line_add(c, &l, " inflight=%u", inflight);
    return rc == DEFERD_OK ? transport_transact_line(c, &l) : rc;
}

int deferd_ack(deferd_client *c, const char *job_id)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, "ACK %s", job_id);
    return rc == DEFERD_OK ? transport_transact_line(c, &l) : rc;
}

int deferd_nack(deferd_client *c, const char *job_id, int64_t delay_ms)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, "NACK %s", job_id);
    if (rc == DEFERD_OK && delay_ms >= 0)
        rc = wire_line_add(c, &l, " delay=%" PRId64, delay_ms);
    return rc == DEFERD_OK ? transport_transact_line(c, &l) : rc;
}

int deferd_nack_dead(deferd_client *c, const char *job_id, int64_t delay_ms, char *dead_id,
                     size_t id_len)
{
    if (c && dead_id && id_len <= DEFERD_ID_MAX)
        return client_fail(c, DEFERD_EARG, "dead_id needs %d bytes", DEFERD_ID_SIZE);
    int rc = deferd_nack(c, job_id, delay_ms);
    const char *rest;
    char id[DEFERD_ID_SIZE] = "";
    /* "OK dead=<id>": dead-lettered; "OK", "OK <new id>": delivered again */
    if (rc == DEFERD_OK && strncmp(c->reply, "dead=", 5) == 0 &&
        wire_reply_id(c->reply + 5, id, &rest) != 0)
        return client_fail(c, DEFERD_EPROTO, "bad job id in NACK reply: '%.80s'", c->reply);
    if (rc == DEFERD_OK && dead_id)
        memcpy(dead_id, id, strlen(id) + 1);
    return rc;
}

int deferd_unsubscribe(deferd_client *c, const char *queues)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = queues ? check_queue_list(c, queues) : DEFERD_OK;
    if (rc == DEFERD_OK)
        rc = queues ? wire_line_add(c, &l, "UNSUB %s", queues) : wire_line_add(c, &l, "UNSUB");
    return rc == DEFERD_OK ? transport_transact_line(c, &l) : rc;
}

int deferd_touch(deferd_client *c, const char *job_id)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, "TOUCH %s", job_id);
    return rc == DEFERD_OK ? transport_transact_line(c, &l) : rc;
}

/* Sends FIRST (a command line without its '\n') followed by the n items as PUT requests,
 * and waits for the one reply. The payloads are written from the items, not copied. */
static int transact_items(deferd_client *c, struct out_line *first,
                          const deferd_put_item *items, size_t n)
{
    struct out_line *hdr = malloc(n * sizeof *hdr);
    struct iovec *iov = malloc((3 * n + 1) * sizeof *iov);
    int rc = hdr && iov
                 ? wire_line_add(c, first, "\n")
                 : client_fail(c, DEFERD_ENOMEM, "out of memory for a %zu job request", n);
    if (rc == DEFERD_OK)
        iov[0] = (struct iovec){ .iov_base = first->buf, .iov_len = first->len };
    for (size_t i = 0; rc == DEFERD_OK && i < n; i++) {
        const deferd_put_item *it = &items[i];
        hdr[i].len = 0;
        rc = wire_put_header(c, &hdr[i], it->queue, it->len, &it->opts, NULL);
        iov[3 * i + 1] = (struct iovec){ .iov_base = hdr[i].buf, .iov_len = hdr[i].len };
        iov[3 * i + 2] = (struct iovec){ .iov_base = (void *)it->payload, .iov_len = it->len };
        iov[3 * i + 3] = (struct iovec){ .iov_base = "\n", .iov_len = 1 };
    }
    if (rc == DEFERD_OK)
        rc = transport_transact(c, iov, 3 * n + 1);
    free(hdr);
    free(iov);
    return rc;
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
        rc = wire_line_add(c, &l, "BATCH %zu", n);
    if (rc == DEFERD_OK)
        rc = transact_items(c, &l, items, n);
    if (rc == DEFERD_OK)
        rc = wire_items_reply(c, c->reply, items, n, parts);
    else if (rc == DEFERD_ESERVER && strcmp(c->reply_code, "PARTIAL") == 0)
        rc = wire_partial(c, items, n, &kept);
    if (stored)
        *stored = rc == DEFERD_OK ? n : kept;
    return rc;
}

int deferd_put_flow(deferd_client *c, deferd_put_item *items, size_t n, const char *on)
{
    if (c == NULL)
        return DEFERD_EARG;
    if (n < 2)
        return client_fail(c, DEFERD_EARG, "a flow is a parent and at least one child");
    if (on && strcmp(on, "success") != 0 && strcmp(on, "complete") != 0)
        return client_fail(c, DEFERD_EARG, "on is \"success\" or \"complete\", not \"%.20s\"",
                           on);
    for (size_t i = 0; i < n; i++)
        if (items && items[i].opts.key)
            return client_fail(c, DEFERD_EARG, "item %zu: a flow's jobs take no key", i + 1);
    struct out_line l = { .len = 0 };
    int rc = check_items(c, items, n);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, "FLOW %zu%s%s", n, on ? " on=" : "", on ? on : "");
    if (rc == DEFERD_OK)
        rc = transact_items(c, &l, items, n);
    return rc == DEFERD_OK ? wire_items_reply(c, c->reply, items, n, NULL) : rc;
}

static int ack_with(deferd_client *c, const char *job_id, deferd_put_item *items, size_t n,
                    int join)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = check_items(c, items, n);
    for (size_t i = 0; rc == DEFERD_OK && join && i < n; i++)
        if (items[i].opts.key)
            rc = client_fail(c, DEFERD_EARG, "item %zu: a follow-up that joins a flow takes "
                             "no key", i + 1);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, "ACK %s then=%zu%s", job_id, n, join ? " join=1" : "");
    if (rc == DEFERD_OK)
        rc = transact_items(c, &l, items, n);
    return rc == DEFERD_OK ? wire_items_reply(c, c->reply, items, n, NULL) : rc;
}

int deferd_ack_then(deferd_client *c, const char *job_id, deferd_put_item *items, size_t n)
{
    return ack_with(c, job_id, items, n, 0);
}

int deferd_ack_join(deferd_client *c, const char *job_id, deferd_put_item *items, size_t n)
{
    return ack_with(c, job_id, items, n, 1);
}

int deferd_nack_then(deferd_client *c, const char *job_id, int64_t delay_ms,
                     deferd_put_item *items, size_t n, char *new_id, size_t new_id_len)
{
    if (c == NULL)
        return DEFERD_EARG;
    if (new_id && new_id_len <= DEFERD_ID_MAX)
        return client_fail(c, DEFERD_EARG, "id buffer smaller than %d bytes",
                           DEFERD_ID_MAX + 1);
    struct out_line l = { .len = 0 };
    int rc = check_job_id(c, job_id);
    if (rc == DEFERD_OK)
        rc = check_items(c, items, n);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, "NACK %s", job_id);
    if (rc == DEFERD_OK && delay_ms >= 0)
        rc = wire_line_add(c, &l, " delay=%" PRId64, delay_ms);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, " then=%zu", n);
    if (rc == DEFERD_OK)
        rc = transact_items(c, &l, items, n);
    if (rc != DEFERD_OK)
        return rc;
    /* "OK [<new id>] n=...": the new id comes first when the job was moved */
    char moved[DEFERD_ID_SIZE] = "", *text = c->reply;
    const char *rest;
    if (strncmp(text, "n=", 2) != 0 && wire_reply_id(text, moved, &rest) == 0)
        text += rest - text;
    if (new_id)
        memcpy(new_id, moved, strlen(moved) + 1);
    return wire_items_reply(c, text, items, n, NULL);
}

/* "<VERB> <job id>" or "<VERB> <queue> key=<key>": the job a cancel or reschedule means. */
static int target_line(deferd_client *c, struct out_line *l, const char *verb,
                       const char *job_id, const char *queue, const char *key, char *id_out,
                       size_t id_len)
{
    if (id_out && id_len <= DEFERD_ID_MAX)
        return client_fail(c, DEFERD_EARG, "id buffer smaller than %d bytes",
                           DEFERD_ID_MAX + 1);
    if ((job_id == NULL) == (queue == NULL) || (queue == NULL) != (key == NULL))
        return client_fail(c, DEFERD_EARG, "give either a job id or a queue and a key");
    int rc = job_id ? check_job_id(c, job_id) : check_queue(c, queue, strlen(queue));
    if (rc == DEFERD_OK && key)
        rc = check_key(c, key);
    if (rc == DEFERD_OK && job_id)
        rc = wire_line_add(c, l, "%s %s", verb, job_id);
    else if (rc == DEFERD_OK)
        rc = wire_line_add(c, l, "%s %s key=%s", verb, queue, key);
    return rc;
}

/* Sends the line and takes the job id that the reply starts with. */
static int transact_id(deferd_client *c, struct out_line *l, const char *verb, char *id_out)
{
    const char *rest;
    char id[DEFERD_ID_SIZE];
    int rc = transport_transact_line(c, l);
    if (rc == DEFERD_OK && wire_reply_id(c->reply, id, &rest) != 0)
        rc = client_fail(c, DEFERD_EPROTO, "bad job id in %s reply: '%.80s'", verb, c->reply);
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
        rc = client_fail(c, DEFERD_EARG, "next_id needs %d bytes", DEFERD_ID_SIZE);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, &l, "NACK %s unrun=1", job_id);
    if (rc != DEFERD_OK || (rc = transport_transact_line(c, &l)) != DEFERD_OK)
        return rc;
    const char *rest;
    char id[DEFERD_ID_SIZE];
    if (c->reply[0] == '\0') /* "OK": the same id */
        snprintf(id, sizeof id, "%s", job_id);
    else if (wire_reply_id(c->reply, id, &rest) != 0) /* "OK <new id>": attempts in its name */
        return client_fail(c, DEFERD_EPROTO, "bad job id in NACK reply: '%.80s'", c->reply);
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
        rc = wire_line_add(c, &l, " force=1");
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
        rc = has_at ? wire_line_add(c, &l, " at=%" PRIu64, at_ms)
                    : wire_line_add(c, &l, " delay=%" PRIu64, delay_ms);
    return rc == DEFERD_OK ? transact_id(c, &l, "RESCHEDULE", new_id) : rc;
}

int deferd_ping(deferd_client *c)
{
    if (c == NULL)
        return DEFERD_EARG;
    struct out_line l = { .len = 0 };
    int rc = wire_line_add(c, &l, "PING");
    if (rc == DEFERD_OK)
        rc = transport_transact_line(c, &l);
    if (rc == DEFERD_OK && strcmp(c->reply, "PONG") != 0)
        rc = client_fail(c, DEFERD_EPROTO, "unexpected PING reply: 'OK %.80s'", c->reply);
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
        rc = queue ? wire_line_add(c, &l, "STATS %s", queue) : wire_line_add(c, &l, "STATS");
    if (rc == DEFERD_OK)
        rc = transport_transact_line(c, &l);
    if (rc == DEFERD_OK)
        snprintf(buf, len, "%s", c->reply);
    return rc;
}

int deferd_next_event(deferd_client *c, deferd_event *ev, int timeout_ms)
{
    if (c == NULL || ev == NULL)
        return DEFERD_EARG;
    memset(ev, 0, sizeof *ev); /* so that deferd_job_clear() is safe after a failure */
    int rc = client_check_usable(c);
    if (rc != DEFERD_OK)
        return rc;
    return transport_next_event(c, ev, transport_deadline(timeout_ms));
}

/* Lease notices queued before the next job are dropped (documented in client.h). */
int deferd_next_job(deferd_client *c, deferd_job *job, int timeout_ms)
{
    if (c == NULL || job == NULL)
        return DEFERD_EARG;
    memset(job, 0, sizeof *job); /* so that deferd_job_clear() is safe after a failure */
    int rc = client_check_usable(c);
    if (rc != DEFERD_OK)
        return rc;
    int64_t deadline = transport_deadline(timeout_ms);
    for (;;) {
        deferd_event ev;
        rc = transport_next_event(c, &ev, deadline);
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

int deferd_job_group(const char *job_id, char *group, size_t len)
{
    if (job_id == NULL || group == NULL || names_job_group(job_id, group, len) != 0)
        return DEFERD_EARG;
    return DEFERD_OK;
}

int deferd_job_flow_results(const char *job_id, unsigned long *acked, unsigned long *dead)
{
    uint32_t a, d;
    int rc = job_id && acked && dead ? names_job_flow_results(job_id, &a, &d) : -1;
    if (rc < 0)
        return DEFERD_EARG;
    if (rc == 1) {
        *acked = a;
        *dead = d;
    }
    return rc;
}

int deferd_job_uid(const char *job_id, char *uid, size_t len)
{
    if (job_id == NULL || uid == NULL || names_job_uid(job_id, uid, len) != 0)
        return DEFERD_EARG;
    return DEFERD_OK;
}

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

deferd_client *deferd_connect(const char *socket_path, char *err, size_t errlen)
{
    const char *path = socket_path ? socket_path : DEFERD_DEFAULT_SOCKET;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof sa.sun_path) {
        set_err(err, errlen, "socket path '%s' is empty or too long", path);
        errno = n ? ENAMETOOLONG : EINVAL;
        return NULL;
    }
    memcpy(sa.sun_path, path, n + 1);
    deferd_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        set_err(err, errlen, "out of memory");
        errno = ENOMEM;
        return NULL;
    }
    c->timeout_ms = -1;
    c->put_retry_ms = DEFERD_PUT_RETRY_DEFAULT_MS;
    c->fd = transport_open(&sa);
    if (c->fd < 0) {
        int e = errno; /* the caller decides by it (ECONNREFUSED: nobody listens) */
        set_err(err, errlen, "cannot connect to %s: %s", path, strerror(e));
        free(c);
        errno = e;
        return NULL;
    }
    return c;
}

void deferd_close(deferd_client *c)
{
    if (c == NULL)
        return;
    transport_release(c);
    free(c->reply);
    free(c);
}

int deferd_fd(const deferd_client *c)
{
    return c ? c->fd : -1;
}

int deferd_set_put_retry(deferd_client *c, int retry_ms)
{
    if (c == NULL || retry_ms < 0)
        return DEFERD_EARG;
    c->put_retry_ms = retry_ms;
    return DEFERD_OK;
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
