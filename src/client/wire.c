/* libdeferd's wire text (docs/protocol.md): request lines built, and replies and pushes
 * (JOB, DEADLINE, EXPIRED, CANCELLED, STATE) parsed from the input buffer. No I/O here:
 * transport.c reads and writes. */
#include "client_int.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "units.h"

/* Pushes are short; a much longer one means the peer is not a deferd we understand. */
#define PUSH_LINE_MAX 4096
/* A reply to a BATCH or a follow-up ACK/NACK lists up to DEFERD_BATCH_MAX job ids (about
 * 250 KB); nothing deferd sends is longer. */
#define REPLY_LINE_MAX (DEFERD_BATCH_MAX * (DEFERD_ID_MAX + 1) + 4096)
/* Sanity bound on a pushed payload: jobs live in ZooKeeper znodes (about 1 MiB at most). */
#define IN_PAYLOAD_MAX (64u * 1024 * 1024)

/* Refuses to build a line the daemon would reject as too long. */
int wire_line_add(deferd_client *c, struct out_line *l, const char *fmt, ...)
{
    size_t room = sizeof l->buf - l->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room)
        return client_fail(c, DEFERD_EARG, "request line longer than %d bytes", OUT_LINE_MAX);
    l->len += (size_t)n;
    return DEFERD_OK;
}

int wire_put_header(deferd_client *c, struct out_line *l, const char *queue, size_t len,
                    const deferd_put_opts *o, const char *token)
{
    int rc = wire_line_add(c, l, "PUT %s %zu", queue, len);
    if (rc == DEFERD_OK && o && o->has_delay)
        rc = wire_line_add(c, l, " delay=%" PRIu64, o->delay_ms);
    if (rc == DEFERD_OK && o && o->has_at)
        rc = wire_line_add(c, l, " at=%" PRIu64, o->at_ms);
    if (rc == DEFERD_OK && o && o->has_priority)
        rc = wire_line_add(c, l, " prio=%" PRIu32, o->priority);
    if (rc == DEFERD_OK && o && o->has_ttr)
        rc = wire_line_add(c, l, " ttr=%" PRIu64, o->ttr_ms);
    if (rc == DEFERD_OK && o && o->key)
        rc = wire_line_add(c, l, " key=%s", o->key);
    if (rc == DEFERD_OK && o && o->group)
        rc = wire_line_add(c, l, " group=%s", o->group);
    if (rc == DEFERD_OK && token)
        rc = wire_line_add(c, l, " idem=%s", token);
    if (rc == DEFERD_OK)
        rc = wire_line_add(c, l, "\n");
    return rc;
}

/* The job id that starts a reply ("<id>" or "<id> <more words>") into out (NULL: only
 * checked); *rest points after it (at "" or at the space). 0, or -1 if it is no job id. */
int wire_reply_id(const char *text, char *out, const char **rest)
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
int wire_parse_put_reply(const char *text, char *id_out, int *dup)
{
    const char *rest;
    if (wire_reply_id(text, id_out, &rest) != 0)
        return -1;
    if (*rest && strncmp(rest, " duplicate", 10) != 0)
        return -1;
    if (*rest && rest[10] != '\0' && rest[10] != ' ')
        return -1;
    if (dup)
        *dup = *rest != '\0';
    return 0;
}

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
        return client_fail(c, DEFERD_EPROTO, "malformed JOB header from deferd");
    if (!names_valid_job_id(t[1]) || !names_valid_queue(t[2]))
        return client_fail(c, DEFERD_EPROTO,
                           "bad job id or queue in JOB header: '%.80s' '%.80s'", t[1], t[2]);
    if (units_parse_u64(t[3], UINT32_MAX, &attempt) != 0 ||
        units_parse_u64(t[4], INT64_MAX, &due) != 0 ||
        units_parse_u64(t[5], UINT32_MAX, &prio) != 0 ||
        units_parse_u64(t[6], UINT32_MAX, &ttr) != 0)
        return client_fail(c, DEFERD_EPROTO, "bad number in JOB header for %s", t[1]);
    if (units_parse_u64(t[7], IN_PAYLOAD_MAX, len) != 0)
        return client_fail(c, DEFERD_EPROTO, "bad payload length '%.24s' for job %s (limit %u)",
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
        return client_fail(c, DEFERD_EPROTO, "payload of job %s not followed by a newline",
                           hdr.id);
    struct ev_node *node = calloc(1, sizeof *node);
    unsigned char *payload = malloc((size_t)plen + 1);
    if (node == NULL || payload == NULL) {
        free(node);
        free(payload);
        return client_fail(c, DEFERD_ENOMEM, "out of memory for job %s", hdr.id);
    }
    memcpy(payload, p, (size_t)plen);
    payload[plen] = '\0';
    node->ev.kind = DEFERD_EV_JOB;
    node->ev.job = hdr;
    node->ev.job.payload = payload;
    node->ev.job.len = (size_t)plen;
    transport_consume(c, total);
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
        return client_fail(c, DEFERD_EPROTO, "malformed %s push from deferd", what);
    if (!names_valid_job_id(t[1]))
        return client_fail(c, DEFERD_EPROTO, "bad job id in %s push: '%.80s'", what, t[1]);
    if (kind == DEFERD_EV_DEADLINE && units_parse_u64(t[2], INT64_MAX, &left) != 0)
        return client_fail(c, DEFERD_EPROTO, "bad time left '%.24s' in DEADLINE push for %s",
                           t[2], t[1]);
    struct ev_node *node = calloc(1, sizeof *node);
    if (node == NULL)
        return client_fail(c, DEFERD_ENOMEM, "out of memory for a %s push", what);
    node->ev.kind = kind;
    memcpy(node->ev.job.id, t[1], strlen(t[1]) + 1);
    node->ev.ms_left = (int64_t)left;
    transport_consume(c, hlen);
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
        return client_fail(c, DEFERD_EPROTO, "malformed STATE push from deferd");
    size_t n = strlen(t[1]);
    if (n == 0 || n >= sizeof ((deferd_event *)0)->state ||
        strspn(t[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != n)
        return client_fail(c, DEFERD_EPROTO, "bad state '%.20s' in STATE push", t[1]);
    struct ev_node *node = calloc(1, sizeof *node);
    if (node == NULL)
        return client_fail(c, DEFERD_ENOMEM, "out of memory for a STATE push");
    node->ev.kind = DEFERD_EV_STATE;
    memcpy(node->ev.state, t[1], n + 1);
    transport_consume(c, hlen);
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
            return client_fail(c, DEFERD_ENOMEM, "out of memory for a %zu byte reply", n);
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
        return client_fail(c, DEFERD_EPROTO, "ERR reply without a code from deferd");
    int rc = set_reply(c, code, n - 4);
    if (rc != DEFERD_OK)
        return rc;
    if (clen >= sizeof c->reply_code)
        clen = sizeof c->reply_code - 1;
    memcpy(c->reply_code, code, clen);
    c->reply_code[clen] = '\0';
    return MSG_ERR;
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
        return client_fail(c, DEFERD_EPROTO, "line from deferd longer than %d bytes",
                           REPLY_LINE_MAX);
    size_t hlen = n + 1;
    if (n > 0 && start[n - 1] == '\r')
        n--;
    if (memchr(start, '\0', n) != NULL)
        return client_fail(c, DEFERD_EPROTO, "NUL byte in a line from deferd");
    if (is_reply(start, n)) {
        c->reply_hlen = hlen;
        return parse_reply(c, start, n);
    }
    if (n > PUSH_LINE_MAX)
        return client_fail(c, DEFERD_EPROTO, "line from deferd longer than %d bytes",
                           PUSH_LINE_MAX);
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
        transport_consume(c, hlen); /* a one-line push of a newer daemon (docs/protocol.md) */
        return MSG_SKIPPED;
    }
    return client_fail(c, DEFERD_EPROTO, "unexpected line from deferd: '%.80s'", line);
}

int wire_take_message(deferd_client *c, struct ev_node **push, size_t *want)
{
    int kind;
    while ((kind = take_one(c, push, want)) == MSG_SKIPPED)
        ;
    return kind;
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
        if (wire_reply_id(p, items[i].id, &rest) != 0 || *rest)
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
int wire_items_reply(deferd_client *c, char *text, deferd_put_item *items, size_t n,
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
        return client_fail(c, DEFERD_EPROTO, "malformed reply to a %zu job request from deferd",
                           n);
    if (parts)
        *parts = (unsigned)k;
    return DEFERD_OK;
}

/* ERR PARTIAL stored=<k> ids=<ids> <text>: the first k items were stored. The message kept
 * for deferd_last_error() leaves the ids out. */
int wire_partial(deferd_client *c, deferd_put_item *items, size_t n, size_t *stored)
{
    char *p = c->reply + strlen("PARTIAL"), *ids, *text;
    uint64_t k;
    if (strncmp(p, " stored=", 8) != 0 || (ids = strstr(p, " ids=")) == NULL)
        return client_fail(c, DEFERD_EPROTO, "malformed PARTIAL reply from deferd");
    *ids = '\0';
    ids += 5;
    text = ids + strcspn(ids, " ");
    if (*text)
        *text++ = '\0';
    if (units_parse_u64(p + 8, n, &k) != 0 || take_ids(ids, items, (size_t)k) != 0)
        return client_fail(c, DEFERD_EPROTO, "malformed PARTIAL reply from deferd");
    *stored = (size_t)k;
    client_fail(c, DEFERD_ESERVER, "PARTIAL stored=%zu of %zu: %.400s", *stored, n, text);
    snprintf(c->err_code, sizeof c->err_code, "PARTIAL");
    return DEFERD_ESERVER;
}
