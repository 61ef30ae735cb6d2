#include "protocol.h"

#include <event2/buffer.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "curator.h"
#include "deferd/client.h"
#include "names.h"
#include "units.h"

/* The public header's limits are the daemon's: a client must never accept what the daemon
 * refuses, nor refuse what it accepts (names.c ties the limits of names). */
_Static_assert(DEFERD_INFLIGHT_MAX == PROTO_INFLIGHT_MAX, "inflight limit");
_Static_assert(DEFERD_TTR_MIN_MS == PROTO_TTR_MIN && DEFERD_TTR_MAX_MS == PROTO_TTR_MAX,
               "ttr range");
_Static_assert(DEFERD_BATCH_MAX == PROTO_GROUP_MAX, "jobs in one batch");

static const char *const errnames[] = {
    "BAD_REQUEST", "UNKNOWN_QUEUE", "TOO_LARGE", "NOT_FOUND", "UNAVAILABLE", "INTERNAL",
    "LEASE_LOST", "QUEUE_FULL", "IN_FLIGHT", "PARTIAL", "PERMISSION_DENIED",
};

static int bad(struct proto_error *err, enum proto_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct proto_error *err, enum proto_errcode code, const char *fmt, ...)
{
    va_list ap;
    err->code = code;
    memset(&err->fields, 0, sizeof err->fields);
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    return -1;
}

/* Splits the line at single spaces into at most MAX tokens (in place). */
static int tokenize(char *line, char **tok, int max)
{
    int n = 0;
    char *p = line;
    while (*p) {
        if (n == max)
            return -1;
        tok[n++] = p;
        char *sp = strchr(p, ' ');
        if (!sp)
            break;
        *sp = '\0';
        p = sp + 1;
        if (*p == '\0' || *p == ' ')
            return -1; /* trailing or double space */
    }
    return n;
}

static int parse_num(const char *s, uint64_t max, uint64_t *out, struct proto_error *err)
{
    if (units_parse_u64(s, max, out) != 0)
        return bad(err, PE_BAD_REQUEST, "bad number '%.40s'", s);
    return 0;
}

static int parse_option(char *tok, struct proto_request *r, struct proto_error *err)
{
    char *eq = strchr(tok, '=');
    if (!eq)
        return bad(err, PE_BAD_REQUEST, "expected key=value, got '%.40s'", tok);
    *eq = '\0';
    const char *v = eq + 1;
    uint64_t n;
    int moves = r->cmd == CMD_PUT || r->cmd == CMD_RESCHEDULE;
    if (strcmp(tok, "delay") == 0 && (moves || r->cmd == CMD_NACK) && !r->has_delay) {
        r->has_delay = 1;
        return parse_num(v, LAYOUT_DUE_MAX, &r->delay_ms, err);
    }
    if (strcmp(tok, "key") == 0 && (moves || r->cmd == CMD_CANCEL) && !r->key[0]) {
        if (!names_valid_key(v))
            return bad(err, PE_BAD_REQUEST, "bad key '%.70s': 1-%d of [A-Za-z0-9_.:@-], "
                       "starting with a letter or digit", v, NAMES_KEY_MAX);
        strcpy(r->key, v);
        return 0;
    }
    if (strcmp(tok, "idem") == 0 && r->cmd == CMD_PUT && !r->idem[0]) {
        uint64_t ms;
        if (!names_valid_token(v, &ms))
            return bad(err, PE_BAD_REQUEST, "bad idem token '%.60s': <ms>-<8..32 of [0-9a-z]>",
                       v);
        strcpy(r->idem, v);
        return 0;
    }
    if (strcmp(tok, "group") == 0 && r->cmd == CMD_PUT && !r->group[0]) {
        if (!names_valid_group(v))
            return bad(err, PE_BAD_REQUEST, "bad group '%.40s': 1-%d of [A-Za-z0-9_.:@-], "
                       "starting with a letter or digit", v, NAMES_GROUP_MAX);
        strcpy(r->group, v);
        return 0;
    }
    if (strcmp(tok, "then") == 0 && (r->cmd == CMD_ACK || r->cmd == CMD_NACK) && !r->then) {
        if (parse_num(v, PROTO_GROUP_MAX, &n, err) != 0 || n == 0)
            return bad(err, PE_BAD_REQUEST, "then must be 1..%d, got '%.20s'", PROTO_GROUP_MAX,
                       v);
        r->then = (uint32_t)n;
        return 0;
    }
    if (strcmp(tok, "parent") == 0 && r->cmd == CMD_PUT && !r->flow_parent) {
        if (parse_num(v, PROTO_GROUP_MAX, &n, err) != 0 || n == 0)
            return bad(err, PE_BAD_REQUEST, "parent= is a FLOW's item, 1..%d, not '%.20s'",
                       PROTO_GROUP_MAX, v);
        r->flow_parent = (uint32_t)n;
        return 0;
    }
    if (strcmp(tok, "join") == 0 && r->cmd == CMD_ACK && strcmp(v, "1") == 0 && !r->flow_join) {
        r->flow_join = 1;
        return 0;
    }
    if (strcmp(tok, "on") == 0 && r->cmd == CMD_FLOW) {
        if (strcmp(v, "success") != 0 && strcmp(v, "complete") != 0)
            return bad(err, PE_BAD_REQUEST, "FLOW on= is success or complete, not '%.20s'", v);
        r->flow_on = v[0] == 's' ? FLOW_ON_SUCCESS : FLOW_ON_COMPLETE;
        return 0;
    }
    if (strcmp(tok, "force") == 0 && r->cmd == CMD_CANCEL && strcmp(v, "1") == 0) {
        r->force = 1;
        return 0;
    }
    if (strcmp(tok, "unrun") == 0 && r->cmd == CMD_NACK && strcmp(v, "1") == 0) {
        r->unrun = 1;
        return 0;
    }
    if (strcmp(tok, "at") == 0 && moves && !r->has_at) {
        r->has_at = 1;
        return parse_num(v, LAYOUT_DUE_MAX, &r->at_ms, err);
    }
    if (strcmp(tok, "prio") == 0 && r->cmd == CMD_PUT && !r->has_prio) {
        r->has_prio = 1;
        if (parse_num(v, UINT32_MAX, &n, err) != 0)
            return -1;
        r->prio = (uint32_t)n;
        return 0;
    }
    if (strcmp(tok, "ttr") == 0 && r->cmd == CMD_PUT && !r->has_ttr) {
        r->has_ttr = 1;
        if (parse_num(v, PROTO_TTR_MAX, &r->ttr_ms, err) != 0 || r->ttr_ms < PROTO_TTR_MIN)
            return bad(err, PE_BAD_REQUEST, "ttr must be %d..%d ms, got '%.20s'",
                       PROTO_TTR_MIN, PROTO_TTR_MAX, v);
        return 0;
    }
    if (strcmp(tok, "uid") == 0 && r->cmd == CMD_SUB && strcmp(v, "1") == 0 && !r->push_uid) {
        r->push_uid = 1;
        return 0;
    }
    if (strcmp(tok, "inflight") == 0 && r->cmd == CMD_SUB) {
        if (parse_num(v, PROTO_INFLIGHT_MAX, &n, err) != 0 || n == 0)
            return bad(err, PE_BAD_REQUEST, "inflight must be 1..%d, got '%.20s'",
                       (int)PROTO_INFLIGHT_MAX, v);
        r->inflight = (uint32_t)n;
        return 0;
    }
    bad(err, PE_BAD_REQUEST, "unknown or repeated option '%.40s'", tok);
    /* option=<name>: a client learns what this daemon does not take (an older one: idem) */
    snprintf(err->fields.option, sizeof err->fields.option, "%s", tok);
    return -1;
}

static int parse_queue(const char *s, char *dst, struct proto_error *err)
{
    if (!names_valid_queue(s))
        return bad(err, PE_BAD_REQUEST, "bad queue name '%.70s'", s);
    strcpy(dst, s);
    return 0;
}

static int parse_subs(char *list, struct proto_request *r, struct proto_error *err)
{
    char *save = NULL;
    if (list[0] == ',' || list[strlen(list) - 1] == ',' || strstr(list, ",,"))
        return bad(err, PE_BAD_REQUEST, "bad queue list '%.70s'", list);
    for (char *q = strtok_r(list, ",", &save); q; q = strtok_r(NULL, ",", &save)) {
        if (r->nsubs == PROTO_SUB_MAX)
            return bad(err, PE_BAD_REQUEST, "more than %d queues in one request",
                       PROTO_SUB_MAX);
        if (parse_queue(q, r->subs[r->nsubs++], err) != 0)
            return -1;
    }
    return 0;
}

static int parse_id(const char *s, struct proto_request *r, struct proto_error *err)
{
    char queue[QUEUE_NAME_MAX + 1];
    struct job_name jn;
    const char *slash = strchr(s, '/');
    int curator = slash && (size_t)(slash - s) < sizeof queue && strlen(s) <= LAYOUT_ID_MAX &&
                  curator_valid_id_name(slash + 1);
    if (curator) {
        memcpy(queue, s, (size_t)(slash - s));
        queue[slash - s] = '\0';
        curator = names_valid_queue(queue);
    }
    if (!curator && layout_parse_id(s, queue, sizeof queue, &jn) != 0)
        return bad(err, PE_BAD_REQUEST, "bad job id '%.100s'", s);
    strcpy(r->id, s);
    return 0;
}

/* Positional arguments per command: name, count. */
static int parse_command(char **tok, int n, struct proto_request *r, struct proto_error *err,
                         int *first_option)
{
    static const struct { const char *name; enum proto_cmd cmd; int args; } cmds[] = {
        {"PUT", CMD_PUT, 2}, {"SUB", CMD_SUB, 1}, {"ACK", CMD_ACK, 1},
        {"NACK", CMD_NACK, 1}, {"TOUCH", CMD_TOUCH, 1}, {"PING", CMD_PING, 0},
        {"STATS", CMD_STATS, 0}, {"BATCH", CMD_BATCH, 1}, {"CANCEL", CMD_CANCEL, 1},
        {"RESCHEDULE", CMD_RESCHEDULE, 1}, {"UNSUB", CMD_UNSUB, 0}, {"FLOW", CMD_FLOW, 1},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(tok[0], cmds[i].name) != 0)
            continue;
        r->cmd = cmds[i].cmd;
        if (n - 1 < cmds[i].args)
            return bad(err, PE_BAD_REQUEST, "%s: missing arguments", cmds[i].name);
        *first_option = 1 + cmds[i].args;
        switch (r->cmd) {
        case CMD_PUT: {
            uint64_t len;
            if (parse_queue(tok[1], r->queue, err) || parse_num(tok[2], UINT64_MAX / 2, &len, err))
                return -1;
            r->len = (size_t)len;
            return 0;
        }
        case CMD_BATCH: {
            uint64_t k;
            if (parse_num(tok[1], PROTO_GROUP_MAX, &k, err) != 0 || k == 0)
                return bad(err, PE_BAD_REQUEST, "BATCH takes 1..%d jobs, not '%.20s'",
                           PROTO_GROUP_MAX, tok[1]);
            r->then = (uint32_t)k;
            return 0;
        }
        case CMD_FLOW: {
            uint64_t k;
            if (parse_num(tok[1], PROTO_GROUP_MAX, &k, err) != 0 || k < 2)
                return bad(err, PE_BAD_REQUEST, "FLOW takes 2..%d jobs (its parent, then its "
                           "children), not '%.20s'", PROTO_GROUP_MAX, tok[1]);
            r->then = (uint32_t)k;
            return 0;
        }
        case CMD_CANCEL:
        case CMD_RESCHEDULE: /* a job id, or a queue and key= */
            return strchr(tok[1], '/') ? parse_id(tok[1], r, err) : parse_queue(tok[1], r->queue, err);
        case CMD_SUB: return parse_subs(tok[1], r, err);
        case CMD_ACK:
        case CMD_NACK:
        case CMD_TOUCH: return parse_id(tok[1], r, err);
        case CMD_STATS:
            if (n < 2 || strchr(tok[1], '='))
                return 0;
            *first_option = 2; /* STATS QUEUE */
            return parse_queue(tok[1], r->queue, err);
        case CMD_UNSUB: /* UNSUB [QUEUES]: none means every queue */
            if (n < 2)
                return 0;
            *first_option = 2;
            return parse_subs(tok[1], r, err);
        case CMD_PING: return 0;
        }
    }
    return bad(err, PE_BAD_REQUEST, "unknown command '%.20s'", tok[0]);
}

/* CANCEL and RESCHEDULE name a job by id or by queue and key, never both. A job given
 * back unrun goes back as it was: no new due time, no follow-ups. */
static int check_target(const struct proto_request *r, struct proto_error *err)
{
    if (r->unrun && (r->has_delay || r->then))
        return bad(err, PE_BAD_REQUEST, "NACK unrun=1 takes no delay= or then= (the job "
                   "goes back as it %s)", "was");
    if (r->cmd != CMD_CANCEL && r->cmd != CMD_RESCHEDULE)
        return 0;
    if (r->id[0] ? r->key[0] != '\0' : r->key[0] == '\0')
        return bad(err, PE_BAD_REQUEST, "name the job by its id, or by its queue and %s",
                   "key=");
    if (r->cmd == CMD_RESCHEDULE && !r->has_delay && !r->has_at)
        return bad(err, PE_BAD_REQUEST, "RESCHEDULE needs delay= or %s", "at=");
    return 0;
}

int proto_parse_line(const char *line, size_t n, struct proto_request *req,
                     struct proto_error *err)
{
    char buf[PROTO_LINE_MAX + 1];
    char *tok[16];
    memset(req, 0, sizeof *req);
    req->inflight = 1;
    if (n > 0 && line[n - 1] == '\r')
        n--;
    if (n > PROTO_LINE_MAX)
        return bad(err, PE_BAD_REQUEST, "line longer than %d bytes", PROTO_LINE_MAX);
    if (n == 0 || memchr(line, '\0', n))
        return bad(err, PE_BAD_REQUEST, "%s line", n == 0 ? "empty" : "NUL byte in");
    memcpy(buf, line, n);
    buf[n] = '\0';
    int ntok = tokenize(buf, tok, 16);
    if (ntok <= 0)
        return bad(err, PE_BAD_REQUEST, "malformed line (%s)", "too many tokens or stray spaces");
    int first_option;
    if (parse_command(tok, ntok, req, err, &first_option) != 0)
        return -1;
    for (int i = first_option; i < ntok; i++)
        if (parse_option(tok[i], req, err) != 0)
            return -1;
    if (req->has_delay && req->has_at)
        return bad(err, PE_BAD_REQUEST, "give delay= or at=, not %s", "both");
    return check_target(req, err);
}

void proto_decoder_init(struct proto_decoder *d, uint64_t max_payload)
{
    memset(d, 0, sizeof *d);
    d->state = PS_HEADER;
    d->max_payload = max_payload;
    d->max_line = PROTO_LINE_DEFAULT;
}

/* Drops bytes announced by a rejected request; returns 0 when all are gone. */
static int skip_bytes(struct proto_decoder *d, struct evbuffer *in)
{
    size_t avail = evbuffer_get_length(in);
    size_t n = avail < d->skip ? avail : (size_t)d->skip;
    evbuffer_drain(in, n);
    d->skip -= n;
    if (d->skip)
        return -1;
    d->state = PS_HEADER;
    return 0;
}

/* REQ's payload (its len bytes and a newline), which IN holds whole. */
static enum proto_result read_payload(struct evbuffer *in, struct proto_request *req,
                                      struct proto_error *err)
{
    size_t len = req->len;
    unsigned char end;
    struct evbuffer_ptr pos;
    evbuffer_ptr_set(in, &pos, len, EVBUFFER_PTR_SET);
    evbuffer_copyout_from(in, &pos, &end, 1);
    if (end != '\n') {
        evbuffer_drain(in, len); /* the stray byte starts the next header */
        bad(err, PE_BAD_REQUEST, "payload not followed by %s", "newline");
        return PROTO_ERROR;
    }
    req->payload = malloc(len ? len : 1);
    if (!req->payload) {
        evbuffer_drain(in, len + 1);
        bad(err, PE_INTERNAL, "out of %s", "memory");
        return PROTO_ERROR;
    }
    evbuffer_remove(in, req->payload, len);
    evbuffer_drain(in, 1);
    return PROTO_REQUEST;
}

/* A PUT header's payload that had not all arrived with it (d->pending). */
static enum proto_result take_payload(struct proto_decoder *d, struct evbuffer *in,
                                      struct proto_request *req, struct proto_error *err)
{
    if (evbuffer_get_length(in) < d->pending.len + 1)
        return PROTO_NEED_MORE;
    d->state = PS_HEADER;
    *req = d->pending;
    return read_payload(in, req, err);
}

/* A refused line that still announces a group (BATCH <n>, or then=<n>): its jobs must not
 * be taken as jobs of their own. 0 when it announces none. */
static uint32_t group_hint(const char *line, size_t n)
{
    char buf[PROTO_LINE_MAX + 2], *p;
    unsigned long v = 0;
    if (n > PROTO_LINE_MAX + 1)
        return 0;
    memcpy(buf, line, n);
    buf[n] = '\0';
    if (strncmp(buf, "BATCH ", 6) == 0)
        v = strtoul(buf + 6, NULL, 10);
    else if (strncmp(buf, "FLOW ", 5) == 0)
        v = strtoul(buf + 5, NULL, 10);
    else if ((strncmp(buf, "ACK ", 4) == 0 || strncmp(buf, "NACK ", 5) == 0) &&
             (p = strstr(buf, " then=")))
        v = strtoul(p + 6, NULL, 10);
    return v <= PROTO_GROUP_MAX ? (uint32_t)v : 0;
}

/* A refused PUT line whose length is still readable ("PUT <queue> <digits> ..."): the
 * payload bytes and newline it announces, to skip; 0 when it announces none. */
static uint64_t put_length_hint(const char *line, size_t n)
{
    char buf[PROTO_LINE_MAX + 2], *sp, *end;
    if (n < 6 || n > PROTO_LINE_MAX + 1 || strncmp(line, "PUT ", 4) != 0)
        return 0;
    memcpy(buf, line, n);
    buf[n] = '\0';
    if (!(sp = strchr(buf + 4, ' ')) || sp[1] < '0' || sp[1] > '9')
        return 0;
    unsigned long long len = strtoull(sp + 1, &end, 10);
    if ((*end != ' ' && *end != '\0' && *end != '\r') || end - (sp + 1) > 19)
        return 0;
    return (uint64_t)len + 1;
}

static enum proto_result take_header(struct proto_decoder *d, struct evbuffer *in,
                                     struct proto_request *req, struct proto_error *err)
{
    size_t n;
    struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, &n, EVBUFFER_EOL_LF);
    if (eol.pos < 0) {
        if (evbuffer_get_length(in) <= d->max_line + 1)
            return PROTO_NEED_MORE;
        evbuffer_drain(in, evbuffer_get_length(in));
        d->state = PS_SKIP_LINE;
        bad(err, PE_BAD_REQUEST, "line longer than %zu bytes", d->max_line);
        return PROTO_ERROR;
    }
    char line[PROTO_LINE_MAX + 2];
    size_t linelen = (size_t)eol.pos;
    if (linelen > d->max_line + 1 || linelen > PROTO_LINE_MAX + 1) {
        evbuffer_drain(in, linelen + 1);
        bad(err, PE_BAD_REQUEST, "line longer than %zu bytes", d->max_line);
        return PROTO_ERROR;
    }
    evbuffer_remove(in, line, linelen);
    evbuffer_drain(in, 1);
    if (linelen > d->max_line && line[linelen - 1] != '\r') { /* one byte over, no CR */
        bad(err, PE_BAD_REQUEST, "line longer than %zu bytes", d->max_line);
        return PROTO_ERROR;
    }
    if (proto_parse_line(line, linelen, req, err) != 0) {
        d->refused_group = group_hint(line, linelen);
        if ((d->skip = put_length_hint(line, linelen)) > 0)
            d->state = PS_SKIP_BYTES; /* its payload is no request */
        return PROTO_ERROR;
    }
    if (req->cmd != CMD_PUT)
        return PROTO_REQUEST;
    if (req->len > d->max_payload) {
        d->state = PS_SKIP_BYTES;
        d->skip = (uint64_t)req->len + 1;
        bad(err, PE_TOO_LARGE, "payload of %zu bytes is over the limit of %llu", req->len,
            (unsigned long long)d->max_payload);
        return PROTO_ERROR;
    }
    if (evbuffer_get_length(in) > req->len) /* here whole: no copy to wait in d->pending */
        return read_payload(in, req, err);
    d->pending = *req;
    d->state = PS_PAYLOAD;
    return PROTO_NEED_MORE;
}

static enum proto_result decode_one(struct proto_decoder *d, struct evbuffer *in,
                                    struct proto_request *req, struct proto_error *err)
{
    for (;;) {
        switch (d->state) {
        case PS_HEADER:
            return take_header(d, in, req, err);
        case PS_PAYLOAD:
            return take_payload(d, in, req, err);
        case PS_SKIP_BYTES:
            if (skip_bytes(d, in) != 0)
                return PROTO_NEED_MORE;
            break;
        case PS_SKIP_LINE: {
            struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
            if (eol.pos < 0) {
                evbuffer_drain(in, evbuffer_get_length(in));
                return PROTO_NEED_MORE;
            }
            evbuffer_drain(in, (size_t)eol.pos + 1);
            d->state = PS_HEADER;
            break;
        }
        }
    }
}

void proto_request_clear(struct proto_request *req)
{
    free(req->payload);
    req->payload = NULL;
    for (size_t i = 0; i < req->nitems; i++)
        free(req->items[i].payload);
    free(req->items);
    req->items = NULL;
    req->nitems = 0;
}

void proto_decoder_clear(struct proto_decoder *d)
{
    if (d->in_group)
        proto_request_clear(&d->group);
    d->in_group = 0;
}

static int opens_group(const struct proto_request *r)
{
    return r->cmd == CMD_BATCH || r->cmd == CMD_FLOW ||
           ((r->cmd == CMD_ACK || r->cmd == CMD_NACK) && r->then);
}

static void group_fail(struct proto_decoder *d, size_t item, enum proto_errcode code,
                       const char *text)
{
    if (d->group_failed)
        return;
    d->group_failed = 1;
    bad(&d->group_err, code, "item %zu: %.170s", item + 1, text);
}

static void group_too_large(struct proto_decoder *d, size_t item)
{
    char why[64];
    snprintf(why, sizeof why, "the jobs' payloads exceed %u MiB together",
             PROTO_GROUP_BYTES_MAX >> 20);
    group_fail(d, item, PE_TOO_LARGE, why);
}

static void group_add(struct proto_decoder *d, struct proto_request *r)
{
    struct proto_put *p = &d->group.items[d->group.nitems++];
    memcpy(p->queue, r->queue, sizeof p->queue);
    memcpy(p->key, r->key, sizeof p->key);
    memcpy(p->idem, r->idem, sizeof p->idem);
    memcpy(p->group, r->group, sizeof p->group);
    p->flow_parent = d->group.cmd == CMD_FLOW ? r->flow_parent : 0;
    p->has_delay = r->has_delay;
    p->has_at = r->has_at;
    p->has_prio = r->has_prio;
    p->has_ttr = r->has_ttr;
    p->delay_ms = r->delay_ms;
    p->at_ms = r->at_ms;
    p->ttr_ms = r->ttr_ms;
    p->prio = r->prio;
    p->payload = r->payload;
    p->len = r->len;
    d->group_bytes += r->len;
    r->payload = NULL;
}

/* One request read while a group collects its PUTs: 1 when the group is complete (then
 * *RES says what to return), else 0. */
static int group_take(struct proto_decoder *d, enum proto_result *res,
                      struct proto_request *req, struct proto_error *err)
{
    size_t item = d->group_seen++;
    if (*res == PROTO_ERROR && !d->group_failed) {
        group_fail(d, item, err->code, err->text);
        d->group_err.fields = err->fields; /* the item's own (option=) */
    }
    else if (req->cmd != CMD_PUT)
        group_fail(d, item, PE_BAD_REQUEST, "expected a PUT");
    else if (req->flow_parent && d->group.cmd != CMD_FLOW)
        group_fail(d, item, PE_BAD_REQUEST, "parent= is for the jobs of a FLOW");
    else if (d->group_bytes + req->len > PROTO_GROUP_BYTES_MAX)
        group_too_large(d, item);
    else if (d->group.items) /* else out of memory, failed already */
        group_add(d, req);
    if (*res == PROTO_REQUEST)
        proto_request_clear(req);
    if (d->group_seen < d->group.then)
        return 0;
    d->in_group = 0;
    if (d->group_failed) {
        *err = d->group_err;
        proto_request_clear(&d->group);
        *res = PROTO_ERROR;
    } else {
        *req = d->group;
        *res = PROTO_REQUEST;
    }
    return 1;
}

static void open_group(struct proto_decoder *d, struct proto_request *req)
{
    d->group = *req;
    d->group.items = calloc(req->then, sizeof *d->group.items);
    d->group_bytes = d->group_seen = 0;
    d->group_failed = 0;
    d->in_group = 1;
    if (!d->group.items) /* still read the jobs, to stay in sync */
        group_fail(d, 0, PE_INTERNAL, "out of memory");
}

enum proto_result proto_decode(struct proto_decoder *d, struct evbuffer *in,
                               struct proto_request *req, struct proto_error *err)
{
    for (;;) {
        enum proto_result res = decode_one(d, in, req, err);
        if (res == PROTO_NEED_MORE)
            return res;
        if (d->in_group)
            d->refused_group = 0; /* a member's own announcement means nothing */
        if (!d->in_group && res == PROTO_ERROR && d->refused_group) {
            /* Read its jobs and drop them, then answer the header's error once. */
            struct proto_request none = {.then = d->refused_group};
            d->refused_group = 0;
            open_group(d, &none);
            d->group_failed = 1;
            d->group_err = *err;
            continue;
        }
        if (!d->in_group) {
            if (res != PROTO_REQUEST || !opens_group(req))
                return res;
            open_group(d, req);
            continue;
        }
        if (group_take(d, &res, req, err))
            return res;
    }
}

int proto_format_error(char *buf, size_t len, enum proto_errcode code, const char *text)
{
    return proto_format_refusal(buf, len, code, NULL, text);
}

int proto_format_refusal(char *buf, size_t len, enum proto_errcode code,
                         const struct refusal *f, const char *text)
{
    char fields[PROTO_FIELDS_MAX] = "";
    if (f && refusal_format(fields, sizeof fields, f) < 0)
        fields[0] = '\0'; /* cannot happen with the daemon's fields; the text still goes */
    /* Replies are one line: no newline may leak in from a message. */
    int n = snprintf(buf, len, "ERR %s %s%s", errnames[code], fields, text);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return n;
}

int proto_append_job(struct evbuffer *out, const struct proto_job *j, int with_uid)
{
    const char *uid = with_uid && j->uid ? j->uid : NULL;
    if (evbuffer_add_printf(out, "JOB %s %s %u %llu %u %u %zu%s%s\n", j->id, j->queue,
                            j->attempt, (unsigned long long)j->due_ms, j->priority, j->ttr_ms,
                            j->len, uid ? " uid=" : "", uid ? uid : "") < 0 ||
        evbuffer_add(out, j->payload, j->len) != 0 || evbuffer_add(out, "\n", 1) != 0)
        return -1;
    return 0;
}

int proto_append_deadline(struct evbuffer *out, const char *id, int64_t ms_left)
{
    return evbuffer_add_printf(out, "DEADLINE %s %lld\n", id,
                               (long long)(ms_left > 0 ? ms_left : 0)) < 0 ? -1 : 0;
}

int proto_append_expired(struct evbuffer *out, const char *id)
{
    return evbuffer_add_printf(out, "EXPIRED %s\n", id) < 0 ? -1 : 0;
}

int proto_append_cancelled(struct evbuffer *out, const char *id)
{
    return evbuffer_add_printf(out, "CANCELLED %s\n", id) < 0 ? -1 : 0;
}
