/* Protocol decoding: split reads, binary payloads, oversized input, garbage; the decoder
 * always resynchronises. */
#include <event2/buffer.h>
#include <stdlib.h>

#include "check.h"
#include "protocol.h"

struct outcome {
    int nreq, nerr;
    struct proto_request last;
    struct proto_error lasterr;
    char payload[256];
};

/* Feeds DATA in random chunks and decodes after each one. */
static void feed(struct proto_decoder *d, const char *data, size_t len, struct outcome *o)
{
    struct evbuffer *in = evbuffer_new();
    size_t off = 0;
    memset(o, 0, sizeof *o);
    while (off < len) {
        size_t n = 1 + (size_t)rand() % 7;
        if (n > len - off)
            n = len - off;
        evbuffer_add(in, data + off, n);
        off += n;
        for (;;) {
            struct proto_request req;
            struct proto_error err;
            enum proto_result r = proto_decode(d, in, &req, &err);
            if (r == PROTO_NEED_MORE)
                break;
            if (r == PROTO_REQUEST) {
                o->nreq++;
                o->last = req;
                if (req.payload && req.len < sizeof o->payload)
                    memcpy(o->payload, req.payload, req.len);
                proto_request_clear(&req);
                o->last.payload = NULL;
                o->last.items = NULL;
            } else {
                o->nerr++;
                o->lasterr = err;
            }
        }
    }
    evbuffer_free(in);
}

static void valid_requests(void)
{
    struct proto_decoder d;
    struct outcome o;
    proto_decoder_init(&d, 64);
    static const char put[] = "PUT emails 7 delay=100 prio=3\nhe\nl\0o!\n";
    feed(&d, put, sizeof put - 1, &o);
    CHECK(o.nreq == 1 && o.nerr == 0);
    CHECK(o.last.cmd == CMD_PUT && o.last.len == 7 && o.last.has_delay && o.last.delay_ms == 100);
    CHECK(o.last.has_prio && o.last.prio == 3 && memcmp(o.payload, "he\nl\0o!", 7) == 0);
    const char *many = "SUB a,b.c inflight=5\r\nACK a/1-2-abc\nNACK a/1-2-abc delay=5\nPING\n"
                       "TOUCH a/1-2-abc-a2-t5000\nPUT q 0 at=1763769605123 ttr=5000\n\n";
    feed(&d, many, strlen(many), &o);
    CHECK(o.nreq == 6 && o.nerr == 0);
    CHECK(o.last.has_ttr && o.last.ttr_ms == 5000);
    CHECK(o.last.cmd == CMD_PUT && o.last.len == 0 && o.last.has_at);
    struct proto_request req;
    struct proto_error err;
    CHECK(proto_parse_line("SUB a,b.c inflight=5", 20, &req, &err) == 0);
    CHECK(req.nsubs == 2 && req.inflight == 5 && !req.push_uid);
    CHECK_STR(req.subs[1], "b.c");
    CHECK(proto_parse_line("SUB a uid=1 inflight=2", 22, &req, &err) == 0);
    CHECK(req.push_uid && req.inflight == 2);
    /* Curator queue items: "<queue>/queue-...", "#<part>" for one item of several */
    static const char *curator_ids[] = {"ACK r/queue-|1A2003B816E|0000000001",
                                        "NACK r/queue-1000000000000000002#3 delay=5",
                                        "ACK r/queue-a2|1A2003B816E|0000000001"};
    for (size_t i = 0; i < 3; i++)
        CHECK(proto_parse_line(curator_ids[i], strlen(curator_ids[i]), &req, &err) == 0);
    CHECK_STR(req.id, "r/queue-a2|1A2003B816E|0000000001");
    /* STATS with and without a queue; a bad name or a stray option is refused */
    CHECK(proto_parse_line("STATS", 5, &req, &err) == 0 && req.cmd == CMD_STATS);
    CHECK(req.queue[0] == '\0');
    CHECK(proto_parse_line("STATS emails", 12, &req, &err) == 0 && req.cmd == CMD_STATS);
    CHECK_STR(req.queue, "emails");
    CHECK(proto_parse_line("STATS .bad", 10, &req, &err) != 0);
    CHECK(proto_parse_line("STATS x=1", 9, &req, &err) != 0);
    CHECK(proto_parse_line("STATS a b", 9, &req, &err) != 0);
}

/* PUTs whose payloads came with their headers (the decoder takes them without waiting in
 * d->pending) and one whose payload came later decode alike; a payload without its newline
 * is refused in both ways, and the next request still decodes. */
static void whole_puts(void)
{
    struct proto_decoder d;
    proto_decoder_init(&d, 64);
    struct evbuffer *in = evbuffer_new();
    struct proto_request req;
    struct proto_error err;
    static const char two[] = "PUT a 3\nabc\nPUT b 2 prio=4\nxy\nPUT c 2\nxyzPING\n";
    evbuffer_add(in, two, sizeof two - 1);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_REQUEST && req.len == 3);
    CHECK_STR(req.queue, "a");
    CHECK(memcmp(req.payload, "abc", 3) == 0);
    proto_request_clear(&req);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_REQUEST && req.len == 2 && req.prio == 4);
    CHECK_STR(req.queue, "b");
    CHECK(memcmp(req.payload, "xy", 2) == 0);
    proto_request_clear(&req);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_ERROR && err.code == PE_BAD_REQUEST);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_ERROR); /* "zPING": one stray line */
    evbuffer_add(in, "PUT d 2\n", 8);                        /* the payload comes later */
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_NEED_MORE);
    evbuffer_add(in, "pqPING\n", 7);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_ERROR && err.code == PE_BAD_REQUEST);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_REQUEST && req.cmd == CMD_PING);
    evbuffer_add(in, "PUT e 1\n", 8);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_NEED_MORE);
    evbuffer_add(in, "z\nPING\n", 7);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_REQUEST && req.len == 1);
    CHECK_STR(req.queue, "e");
    CHECK(req.payload && req.payload[0] == 'z');
    proto_request_clear(&req);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_REQUEST && req.cmd == CMD_PING);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_NEED_MORE);
    evbuffer_free(in);
    proto_decoder_clear(&d);
}

static void errors_resync(void)
{
    struct proto_decoder d;
    struct outcome o;
    proto_decoder_init(&d, 16);
    static const char *bad[] = {
        /* A refused PUT whose length is readable: its payload is skipped too. */
        "HELLO\n", "PUT emails\n", "PUT emails x\n", "PUT bad/queue 1\nx\n", "SUB a,,b\n",
        "SUB \n", "ACK nothing\n", "PUT q 1 delay=1 at=2\nP\n", "PUT q 0 foo=1\n\n",
        "PING \n", "PUT q 0 prio=4294967296\n\n", "SUB a inflight=0\n",
        "NACK q/1-2-abc prio=1\n", "\n", "PUT  q 0\n", "PUT q 0 ttr=999\n\n",
        "PUT q 0 ttr=604800001\n\n", "TOUCH\n",
        "SUB q ttr=5000\n", "ACK q/job-0000000001\n", "ACK q/queue-x/y\n",
        "SUB q uid=0\n", "SUB q uid=1 uid=1\n", "ACK q/1-2-abc uid=1\n",
        "PUT q 0 idem=abc\n\n", "PUT q 0 idem=1-abcdefgh idem=1-abcdefgh\n\n",
        "CANCEL q/1-2-abc idem=1-abcdefgh\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char buf[128];
        snprintf(buf, sizeof buf, "%sPING\n", bad[i]);
        feed(&d, buf, strlen(buf), &o);
        CHECK(o.nerr == 1 && o.nreq == 1 && o.last.cmd == CMD_PING);
        CHECK(o.lasterr.code == PE_BAD_REQUEST);
        if (o.nerr != 1)
            fprintf(stderr, "  input '%s' gave %d errors\n", bad[i], o.nerr);
    }
    static const char nul[] = "PI\0NG\nPING\n";
    feed(&d, nul, sizeof nul - 1, &o);
    CHECK(o.nerr == 1 && o.nreq == 1);
}

static void oversized(void)
{
    struct proto_decoder d;
    struct outcome o;
    proto_decoder_init(&d, 16);
    char big[300];
    int n = snprintf(big, sizeof big, "PUT q 100\n");
    memset(big + n, 'x', 100);
    memcpy(big + n + 100, "\nPING\n", 6);
    feed(&d, big, (size_t)n + 106, &o);
    CHECK(o.nerr == 1 && o.lasterr.code == PE_TOO_LARGE && o.nreq == 1 && o.last.cmd == CMD_PING);
    /* payload not followed by a newline: the stray byte starts the next line */
    const char *stray = "PUT q 3\nabcPING\n";
    feed(&d, stray, strlen(stray), &o);
    CHECK(o.nerr == 1 && o.nreq == 1 && o.last.cmd == CMD_PING);
    const char *stray2 = "PUT q 3\nabc\nPUT q 2\nxyZPING\n";
    feed(&d, stray2, strlen(stray2), &o);
    CHECK(o.nreq == 1 && o.nerr == 2); /* the PUT of "abc", then 'Z' + "PING" is no command */
    /* a header line longer than 1024 bytes, with and without its newline in sight */
    char longline[3000];
    memset(longline, 'A', sizeof longline);
    memcpy(longline + 2000, "\nPING\n", 6);
    feed(&d, longline, 2006, &o);
    CHECK(o.nerr == 1 && o.nreq == 1 && o.last.cmd == CMD_PING);
}

static void garbage(void)
{
    struct proto_decoder d;
    proto_decoder_init(&d, 1000);
    srand(1234);
    char buf[4096];
    for (int round = 0; round < 300; round++) {
        for (size_t i = 0; i < sizeof buf; i++) {
            static const char alphabet[] = "PUTSBACKNIG q0123456789=,/-\n\r \xff";
            buf[i] = (rand() % 4) ? alphabet[rand() % (sizeof alphabet - 1)] : (char)rand();
        }
        struct outcome o;
        feed(&d, buf, sizeof buf, &o);
        CHECK(o.nreq + o.nerr >= 0); /* reaching here without a crash is the point */
    }
    /* after any garbage, a clean newline and PING are understood */
    struct outcome o;
    proto_decoder_init(&d, 1000);
    feed(&d, "\x01\x02garbage\nPING\n", 16, &o);
    CHECK(o.nreq == 1 && o.last.cmd == CMD_PING);
}

static void formatting(void)
{
    char line[128];
    proto_format_error(line, sizeof line, PE_TOO_LARGE, "two\nlines");
    CHECK_STR(line, "ERR TOO_LARGE two lines");
    struct evbuffer *out = evbuffer_new();
    struct proto_job j = {.id = "q/1-2-a", .queue = "q", .uid = "a", .attempt = 3, .due_ms = 1,
                          .priority = 2, .ttr_ms = 5000, .payload = "x\ny", .len = 3};
    CHECK(proto_append_job(out, &j, 0) == 0);
    CHECK(proto_append_deadline(out, "q/1-2-a", 900) == 0);
    CHECK(proto_append_expired(out, "q/1-2-a") == 0);
    CHECK(proto_append_job(out, &j, 1) == 0);
    j.uid = NULL; /* a Curator item: no uid even when asked */
    CHECK(proto_append_job(out, &j, 1) == 0);
    char got[256] = "";
    evbuffer_remove(out, got, sizeof got - 1);
    CHECK_STR(got, "JOB q/1-2-a q 3 1 2 5000 3\nx\ny\nDEADLINE q/1-2-a 900\nEXPIRED q/1-2-a\n"
                   "JOB q/1-2-a q 3 1 2 5000 3 uid=a\nx\ny\nJOB q/1-2-a q 3 1 2 5000 3\nx\ny\n");
    evbuffer_free(out);
}

/* BATCH and ACK/NACK then=: the PUTs after the header belong to it; any bad one fails the
 * whole group, reported once all of them were read, and the next request is in sync. */
/* ERR fields (refusal.h): written after the code, read back by the clients' parser, the
 * put-retry rule from them alone; an option refused is named in option=. */
static void refusal_fields(void)
{
    char line[256];
    struct refusal f = {.stored = RS_NO, .reason = RR_DRAINING};
    proto_format_refusal(line, sizeof line, PE_UNAVAILABLE, &f, "deferd is stopping");
    CHECK_STR(line, "ERR UNAVAILABLE stored=no reason=draining deferd is stopping");
    f = (struct refusal){.stored = RS_MAYBE, .reason = RR_CONNECTION_LOST, .no_tokens = 1};
    proto_format_refusal(line, sizeof line, PE_UNAVAILABLE, &f, "x=y the job");
    CHECK_STR(line, "ERR UNAVAILABLE stored=maybe reason=connection_lost tokens=no x=y the job");
    f = (struct refusal){.stored = RS_COUNT, .count = 2};
    proto_format_refusal(line, sizeof line, PE_PARTIAL, &f, "ids=q/1,q/2 dup=-; the rest");
    CHECK_STR(line, "ERR PARTIAL stored=2 ids=q/1,q/2 dup=-; the rest");
    f = (struct refusal){.reason = RR_NONE};
    snprintf(f.option, sizeof f.option, "a b"); /* not a value: left out */
    proto_format_refusal(line, sizeof line, PE_BAD_REQUEST, &f, "t");
    CHECK_STR(line, "ERR BAD_REQUEST t");

    struct refusal g;
    const char *text = refusal_parse("stored=maybe reason=connection_lost tokens=no "
                                     "future=1 the job may", &g);
    CHECK_STR(text, "the job may");
    CHECK(g.fields == 4 && g.stored == RS_MAYBE && g.reason == RR_CONNECTION_LOST);
    CHECK(g.no_tokens && refusal_put_retry_safe(&g, 1, 1) && !refusal_put_retry_safe(&g, 0, 1));
    text = refusal_parse("stored=no reason=later_reason x", &g);
    CHECK(g.reason == RR_OTHER && strcmp(g.reason_word, "later_reason") == 0);
    CHECK_STR(text, "x");
    CHECK(refusal_put_retry_safe(&g, 0, 0)); /* nothing stored: safe whatever the reason */
    refusal_parse("stored=no reason=permission x", &g);
    CHECK(!refusal_put_retry_safe(&g, 1, 1));
    refusal_parse("stored=maybe reason=no_session", &g);
    CHECK(g.reason == RR_NO_SESSION && !refusal_put_retry_safe(&g, 0, 0));
    CHECK(refusal_put_retry_safe(&g, 0, 1));
    text = refusal_parse("not stored: stored=no later", &g); /* an older daemon: no fields */
    CHECK(g.fields == 0 && g.stored == RS_UNSAID && !refusal_put_retry_safe(&g, 1, 1));
    CHECK_STR(text, "not stored: stored=no later");
    refusal_parse("stored=12 ids=q/1", &g);
    CHECK(g.fields == 1 && g.stored == RS_COUNT && g.count == 12);
    refusal_parse("stored=no; x", &g); /* ';' is no value character */
    CHECK(g.fields == 0);

    struct proto_decoder d;
    struct outcome o;
    proto_decoder_init(&d, 100);
    feed(&d, "PUT q 0 idem2=1\n\n", 17, &o);
    CHECK(o.nerr == 1 && strcmp(o.lasterr.fields.option, "idem2") == 0);
    feed(&d, "BATCH 2\nPUT q 0\n\nPUT q 0 zz=1\n\n", 31, &o);
    CHECK(o.nerr == 1 && strcmp(o.lasterr.fields.option, "zz") == 0);
    proto_format_refusal(line, sizeof line, o.lasterr.code, &o.lasterr.fields, o.lasterr.text);
    CHECK_STR(line, "ERR BAD_REQUEST option=zz item 2: unknown or repeated option 'zz'");
}

static void groups(void)
{
    struct proto_decoder d;
    struct outcome o;
    proto_decoder_init(&d, 100);
    const char ok[] = "BATCH 2\nPUT a 3 key=k-1 delay=5\nabc\nPUT b 0 idem=5-abcdefgh\n\nPING\n";
    feed(&d, ok, sizeof ok - 1, &o);
    CHECK(o.nreq == 2 && o.nerr == 0);
    CHECK(o.last.cmd == CMD_PING);

    struct evbuffer *in = evbuffer_new();
    struct proto_request req;
    struct proto_error err;
    evbuffer_add(in, ok, sizeof ok - 1);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_REQUEST);
    CHECK(req.cmd == CMD_BATCH && req.nitems == 2);
    if (req.nitems == 2) {
        CHECK_STR(req.items[0].queue, "a");
        CHECK_STR(req.items[0].key, "k-1");
        CHECK(req.items[0].has_delay && req.items[0].delay_ms == 5 && req.items[0].len == 3);
        CHECK(memcmp(req.items[0].payload, "abc", 3) == 0);
        CHECK_STR(req.items[1].queue, "b");
        CHECK_STR(req.items[1].idem, "5-abcdefgh");
        CHECK_STR(req.items[0].idem, "");
        CHECK(req.items[1].len == 0);
    }
    proto_request_clear(&req);
    CHECK(req.items == NULL && req.nitems == 0);
    evbuffer_drain(in, evbuffer_get_length(in));

    const char ack[] = "ACK a/1-2-u then=1\nPUT c 1 key=z\nx\n";
    evbuffer_add(in, ack, sizeof ack - 1);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_REQUEST);
    CHECK(req.cmd == CMD_ACK && req.then == 1 && req.nitems == 1);
    proto_request_clear(&req);
    evbuffer_free(in);

    /* The second of three is bad, its length still readable: its payload skipped, one
     * error naming it, the third read, then in sync. */
    const char bad2[] = "BATCH 3\nPUT a 1\nx\nPUT a 1 key=-no\ny\nPUT a 1\nz\nPING\n";
    feed(&d, bad2, sizeof bad2 - 1, &o);
    CHECK(o.nerr == 1 && o.nreq == 1 && o.last.cmd == CMD_PING);
    CHECK_CONTAINS(o.lasterr.text, "item 2");
    /* Too large inside a group: its bytes skipped, the group fails, sync kept. */
    char big[400];
    int n = snprintf(big, sizeof big, "NACK a/1-2-u then=2\nPUT a 200\n");
    memset(big + n, 'p', 200);
    n += 200;
    n += snprintf(big + n, sizeof big - (size_t)n, "\nPUT a 1\nq\nPING\n");
    feed(&d, big, (size_t)n, &o);
    CHECK(o.nerr == 1 && o.nreq == 1 && o.lasterr.code == PE_TOO_LARGE);
    CHECK_CONTAINS(o.lasterr.text, "item 1");
    /* A refused group header: its jobs are read and dropped, never stored on their own. */
    const char badhdr[] = "ACK nonsense then=2\nPUT a 1\nx\nPUT a 1\ny\nPING\n";
    feed(&d, badhdr, sizeof badhdr - 1, &o);
    CHECK(o.nerr == 1 && o.nreq == 1 && o.last.cmd == CMD_PING);
    const char badbatch[] = "BATCH 2 x=1\nPUT a 1\nx\nPUT a 1\ny\nPING\n";
    feed(&d, badbatch, sizeof badbatch - 1, &o);
    CHECK(o.nerr == 1 && o.nreq == 1 && o.last.cmd == CMD_PING);
    /* A group member that is not a PUT. */
    const char notput[] = "BATCH 1\nPING\nPING\n";
    feed(&d, notput, sizeof notput - 1, &o);
    CHECK(o.nerr == 1 && o.nreq == 1);
    proto_decoder_clear(&d);
}

/* FLOW <n> [on=]: a parent and its children, read as a group; a refused header's jobs are
 * read and dropped. */
static void flows(void)
{
    struct proto_decoder d;
    struct outcome o;
    proto_decoder_init(&d, 100);
    struct evbuffer *in = evbuffer_new();
    struct proto_request req;
    struct proto_error err;
    const char ok[] = "FLOW 3 on=complete\nPUT a 1\np\nPUT b 1 delay=5\nx\nPUT b 1\ny\n";
    evbuffer_add(in, ok, sizeof ok - 1);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_REQUEST);
    CHECK(req.cmd == CMD_FLOW && req.nitems == 3 && req.flow_on == FLOW_ON_COMPLETE);
    CHECK(proto_stores_jobs(req.cmd));
    proto_request_clear(&req);
    const char dflt[] = "FLOW 2\nPUT a 0\n\nPUT a 0\n\n";
    evbuffer_add(in, dflt, sizeof dflt - 1);
    CHECK(proto_decode(&d, in, &req, &err) == PROTO_REQUEST);
    CHECK(req.cmd == CMD_FLOW && req.nitems == 2 && req.flow_on == FLOW_ON_SUCCESS);
    proto_request_clear(&req);
    evbuffer_free(in);
    const char one[] = "FLOW 1\nPUT a 1\nx\nPING\n";
    feed(&d, one, sizeof one - 1, &o);
    CHECK(o.nerr == 1 && o.nreq == 1 && o.last.cmd == CMD_PING);
    CHECK_CONTAINS(o.lasterr.text, "FLOW takes 2..1000 jobs");
    const char badon[] = "FLOW 2 on=maybe\nPUT a 1\nx\nPUT a 1\ny\nPING\n";
    feed(&d, badon, sizeof badon - 1, &o);
    CHECK(o.nerr == 1 && o.nreq == 1 && o.last.cmd == CMD_PING);
    CHECK_CONTAINS(o.lasterr.text, "on= is success or complete");
    proto_decoder_clear(&d);
}

/* CANCEL and RESCHEDULE take an id, or a queue and key=, never both. */
static void targets(void)
{
    struct proto_request r;
    struct proto_error e;
    const char *good[] = {"CANCEL a/1-2-u", "CANCEL a key=k1 force=1", "RESCHEDULE a key=k at=5",
                          "RESCHEDULE a/1-2-u-kk delay=10", "PUT a 1 key=A.b:c@d-e"};
    const char *badl[] = {"CANCEL a", "CANCEL a/1-2-u key=k", "RESCHEDULE a key=k",
                          "CANCEL a key=k delay=1", "PUT a 1 key=.x", "BATCH 0", "BATCH 1001",
                          "ACK a/1-2-u then=0", "TOUCH a/1-2-u then=1", "CANCEL a key=k force=2"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(proto_parse_line(good[i], strlen(good[i]), &r, &e) == 0);
    for (size_t i = 0; i < sizeof badl / sizeof badl[0]; i++)
        CHECK(proto_parse_line(badl[i], strlen(badl[i]), &r, &e) != 0);
}

/* UNSUB with or without queues; NACK unrun=1 alone (no delay, no follow-ups). */
static void leaving(void)
{
    struct proto_request r;
    struct proto_error e;
    CHECK(proto_parse_line("UNSUB", 5, &r, &e) == 0 && r.cmd == CMD_UNSUB && r.nsubs == 0);
    CHECK(proto_parse_line("UNSUB a,b.c", 11, &r, &e) == 0 && r.cmd == CMD_UNSUB);
    CHECK(r.nsubs == 2 && strcmp(r.subs[1], "b.c") == 0);
    CHECK(proto_parse_line("NACK a/1-2-u unrun=1", 20, &r, &e) == 0 && r.unrun == 1);
    CHECK(proto_parse_line("NACK a/1-2-u", 12, &r, &e) == 0 && r.unrun == 0);
    const char *badl[] = {"UNSUB ,a", "UNSUB a x", "UNSUB x=1", "NACK a/1-2-u unrun=0",
                          "NACK a/1-2-u unrun=1 delay=5", "NACK a/1-2-u then=1 unrun=1",
                          "ACK a/1-2-u unrun=1", "TOUCH a/1-2-u unrun=1"};
    for (size_t i = 0; i < sizeof badl / sizeof badl[0]; i++)
        CHECK(proto_parse_line(badl[i], strlen(badl[i]), &r, &e) != 0);
    CHECK(proto_parse_line(badl[4], strlen(badl[4]), &r, &e) != 0);
    CHECK_CONTAINS(e.text, "unrun=1 takes no delay=");
}

int main(void)
{
    flows();
    srand(99);
    leaving();
    valid_requests();
    whole_puts();
    errors_resync();
    oversized();
    garbage();
    formatting();
    refusal_fields();
    groups();
    targets();
    return check_report("protocol");
}
