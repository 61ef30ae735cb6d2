/* libFuzzer harness: the protocol decoder (src/common/protocol.c) on hostile input. The input is
 * the byte stream of one connection. It is decoded twice, all at once and in chunks of
 * sizes derived from the input; the two runs must give the same results (decoding may not
 * depend on how reads split the stream), and every request must be as the daemon expects
 * it. Every line is also given to proto_parse_line on its own. Any difference is a bug:
 * abort(). */
#include <event2/buffer.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "layout.h"
#include "names.h"
#include "protocol.h"
#include "fuzz.h"

#define MAX_PAYLOAD 100 /* small, so that TOO_LARGE and the skipping after it are reached */

static int terminated(const char *s, size_t size) { return memchr(s, '\0', size) != NULL; }

static uint64_t fnv(const unsigned char *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static void check_put(const char *queue, const char *key, const unsigned char *payload,
                      size_t len)
{
    CHECK(terminated(queue, QUEUE_NAME_MAX + 1) && names_valid_queue(queue));
    CHECK(terminated(key, LAYOUT_KEY_MAX + 1) && (!key[0] || names_valid_key(key)));
    CHECK(payload != NULL && len <= MAX_PAYLOAD);
}

/* What the daemon relies on in a request (DECODED: from proto_decode, groups complete); a
 * digest of it for the comparison. */
static uint64_t check_request(const struct proto_request *r, int decoded)
{
    uint64_t h = fnv((const unsigned char *)&r->cmd, sizeof r->cmd, 1469598103934665603ULL);
    CHECK(terminated(r->id, sizeof r->id) && terminated(r->key, sizeof r->key) &&
          terminated(r->queue, sizeof r->queue));
    switch (r->cmd) {
    case CMD_PUT:
        check_put(r->queue, r->key, r->payload, r->len);
        CHECK(!(r->has_delay && r->has_at));
        CHECK(!r->has_ttr || (r->ttr_ms >= PROTO_TTR_MIN && r->ttr_ms <= PROTO_TTR_MAX));
        h = fnv(r->payload, r->len, h);
        break;
    case CMD_SUB:
        CHECK(r->nsubs >= 1 && r->nsubs <= PROTO_SUB_MAX);
        CHECK(r->inflight >= 1 && r->inflight <= PROTO_INFLIGHT_MAX);
        for (size_t i = 0; i < r->nsubs; i++)
            CHECK(terminated(r->subs[i], sizeof r->subs[i]) && names_valid_queue(r->subs[i]));
        break;
    case CMD_UNSUB: /* no queue named: every queue */
        CHECK(r->nsubs <= PROTO_SUB_MAX);
        for (size_t i = 0; i < r->nsubs; i++)
            CHECK(terminated(r->subs[i], sizeof r->subs[i]) && names_valid_queue(r->subs[i]));
        break;
    case CMD_ACK:
    case CMD_NACK:
    case CMD_TOUCH:
        CHECK(r->id[0] && strchr(r->id, '/') && strlen(r->id) <= LAYOUT_ID_MAX);
        CHECK(r->cmd != CMD_TOUCH || !r->then);
        break;
    case CMD_CANCEL:
    case CMD_RESCHEDULE:
        CHECK(!r->id[0] != !r->key[0]);
        CHECK(r->id[0] || names_valid_queue(r->queue));
        CHECK(r->cmd == CMD_CANCEL || r->has_delay != r->has_at);
        CHECK(!r->force || r->cmd == CMD_CANCEL);
        break;
    case CMD_BATCH:
        CHECK(r->then >= 1 && r->then <= PROTO_GROUP_MAX);
        break;
    case CMD_FLOW: /* a parent and at least one child */
        CHECK(r->then >= 2 && r->then <= PROTO_GROUP_MAX);
        CHECK(r->flow_on == FLOW_ON_SUCCESS || r->flow_on == FLOW_ON_COMPLETE);
        break;
    case CMD_PING:
    case CMD_STATS:
        break;
    default:
        CHECK(!"unknown command");
    }
    CHECK(!r->unrun || (r->cmd == CMD_NACK && !r->has_delay && !r->then));
    CHECK(!r->flow_join || r->cmd == CMD_ACK);
    if (r->cmd == CMD_PUT || r->cmd == CMD_STATS || r->cmd == CMD_CANCEL ||
        r->cmd == CMD_RESCHEDULE)
        h = fnv((const unsigned char *)r->queue, strlen(r->queue), h);
    h = fnv((const unsigned char *)r->id, strlen(r->id), h);
    h = fnv((const unsigned char *)r->key, strlen(r->key), h);
    /* A group comes out whole: as many jobs as it announced, and only then. */
    if (!decoded) {
        CHECK(!r->items && !r->nitems);
    } else if (r->items || r->nitems) {
        CHECK(r->cmd == CMD_BATCH || r->cmd == CMD_FLOW || r->cmd == CMD_ACK ||
              r->cmd == CMD_NACK);
        CHECK(r->items && r->then && r->nitems == r->then);
        size_t bytes = 0;
        for (size_t i = 0; i < r->nitems; i++) {
            const struct proto_put *p = &r->items[i];
            check_put(p->queue, p->key, p->payload, p->len);
            CHECK(!(p->has_delay && p->has_at));
            CHECK(!p->flow_parent || r->cmd == CMD_FLOW); /* parent= only inside a FLOW */
            bytes += p->len;
            h = fnv(p->payload, p->len, h);
            h = fnv((const unsigned char *)p->queue, strlen(p->queue), h);
        }
        CHECK(bytes <= PROTO_GROUP_BYTES_MAX);
    } else {
        CHECK(r->cmd != CMD_BATCH && r->cmd != CMD_FLOW);
        CHECK((r->cmd != CMD_ACK && r->cmd != CMD_NACK) || !r->then);
    }
    return h;
}

static uint64_t check_error(const struct proto_error *e)
{
    char line[300];
    CHECK(e->code >= PE_BAD_REQUEST && e->code <= PE_PARTIAL);
    CHECK(terminated(e->text, sizeof e->text));
    proto_format_error(line, sizeof line, e->code, e->text);
    CHECK(!strchr(line, '\n') && !strchr(line, '\r'));
    return fnv((const unsigned char *)e->text, strlen(e->text),
               fnv((const unsigned char *)&e->code, sizeof e->code, 7));
}

struct outcome {
    uint64_t digest;
    size_t nreq, nerr, left;
};

/* Decodes DATA fed in chunks: all at once when SEED is 0, else of pseudo-random sizes. */
static void run(const uint8_t *data, size_t size, uint64_t seed, struct outcome *o)
{
    struct proto_decoder d;
    struct evbuffer *in = evbuffer_new();
    CHECK(in);
    memset(o, 0, sizeof *o);
    proto_decoder_init(&d, MAX_PAYLOAD);
    size_t off = 0;
    while (off < size) {
        size_t n = size - off;
        if (seed) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t pick = (size_t)(seed >> 33);
            n = 1 + pick % ((pick >> 16) % 4 == 0 ? 300 : 8); /* mostly tiny, some larger */
            if (n > size - off)
                n = size - off;
        }
        CHECK(evbuffer_add(in, data + off, n) == 0);
        off += n;
        for (;;) {
            struct proto_request req;
            struct proto_error err;
            enum proto_result res = proto_decode(&d, in, &req, &err);
            if (res == PROTO_NEED_MORE)
                break;
            CHECK(res == PROTO_REQUEST || res == PROTO_ERROR);
            if (res == PROTO_REQUEST) {
                o->digest = fnv((const unsigned char *)"R", 1, o->digest) ^ check_request(&req, 1);
                o->nreq++;
                proto_request_clear(&req);
                CHECK(!req.payload && !req.items && !req.nitems);
                proto_request_clear(&req); /* twice is harmless */
            } else {
                o->digest = fnv((const unsigned char *)"E", 1, o->digest) ^ check_error(&err);
                o->nerr++;
            }
        }
    }
    o->left = evbuffer_get_length(in);
    proto_decoder_clear(&d);
    proto_decoder_clear(&d);
    evbuffer_free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct outcome whole, chunked;
    run(data, size, 0, &whole);
    run(data, size, fnv(data, size, 1469598103934665603ULL) | 1, &chunked);
    CHECK(whole.nreq == chunked.nreq && whole.nerr == chunked.nerr);
    CHECK(whole.digest == chunked.digest);

    /* Each line alone, as proto_parse_line sees a header. */
    const uint8_t *p = data, *end = data + size;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct proto_request req;
        struct proto_error err;
        memset(&err, 0, sizeof err);
        if (proto_parse_line((const char *)p, n, &req, &err) == 0) {
            CHECK(!req.payload && !req.items);
            if (req.cmd != CMD_PUT)
                check_request(&req, 0);
            else
                CHECK(names_valid_queue(req.queue));
        } else {
            check_error(&err);
        }
        p += n + 1;
    }
    return 0;
}
