/* The Curator codec against the bytes and names Curator 5.4.0 was seen to write and read
 * (docs/curator-format.md), plus round trips and corrupt frames. */
#include <stdlib.h>

#include "check.h"
#include "curator.h"

static void seen_frames(void)
{
    unsigned char buf[64], want[64];
    const unsigned char *items[] = {(const unsigned char *)"m1", (const unsigned char *)"m2",
                                    (const unsigned char *)""};
    size_t lens[] = {2, 2, 0};
    size_t n = unhex("0001000101000000026d3101000000026d32010000000002", want);
    CHECK(curator_frame_size(lens, 3) == 24 && n == 24);
    CHECK(curator_frame_encode(items, lens, 3, buf, sizeof buf) == 24);
    CHECK(memcmp(buf, want, 24) == 0);
    struct curator_item got[4];
    CHECK(curator_frame_decode(want, n, got, 4) == 3);
    CHECK(got[0].len == 2 && memcmp(want + got[0].offset, "m1", 2) == 0);
    CHECK(got[1].len == 2 && memcmp(want + got[1].offset, "m2", 2) == 0);
    CHECK(got[2].len == 0);

    n = unhex("000100010100000005" "68656c6c6f" "02", want); /* put("hello") */
    const unsigned char *hello[] = {(const unsigned char *)"hello"};
    size_t hlen[] = {5};
    CHECK(curator_frame_encode(hello, hlen, 1, buf, sizeof buf) == n && memcmp(buf, want, n) == 0);
    n = unhex("00010001010000000568656c6c6f024a554e4b", want); /* junk after the end: fine */
    CHECK(curator_frame_decode(want, n, got, 4) == 1 && got[0].len == 5);
    CHECK(curator_frame_encode(hello, hlen, 1, buf, 14) == 0); /* one byte short */
}

static void corrupt_frames(void)
{
    static const char *bad[] = {
        "",                                   /* empty */
        "68656c6c6f",                         /* plain text */
        "0001000201000000016102",             /* wrong version */
        "00010001030000000161",               /* unknown marker */
        "000100010180000000",                 /* negative length */
        "00010001010000000561",               /* truncated payload */
        "00010001010000000161",               /* no end marker */
        "0001000101000000016101",             /* marker without its length */
    };
    unsigned char data[64];
    struct curator_item items[4];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = unhex(bad[i], data);
        long rc = curator_frame_decode(data, n, items, 4);
        CHECK(rc == -1);
        if (rc != -1)
            fprintf(stderr, "  accepted corrupt frame %zu: %s\n", i, bad[i]);
    }
    size_t n = unhex("0001000102", data); /* no items at all: valid */
    CHECK(curator_frame_decode(data, n, items, 4) == 0);
}

static void round_trips(void)
{
    srand(11);
    for (int t = 0; t < 500; t++) {
        enum { MAXN = 6 };
        unsigned char store[MAXN][40], frame[512];
        const unsigned char *items[MAXN];
        size_t lens[MAXN], n = (size_t)(rand() % MAXN);
        for (size_t i = 0; i < n; i++) {
            lens[i] = (size_t)(rand() % 40);
            for (size_t j = 0; j < lens[i]; j++)
                store[i][j] = (unsigned char)rand();
            items[i] = store[i];
        }
        size_t size = curator_frame_encode(items, lens, n, frame, sizeof frame);
        CHECK(size == curator_frame_size(lens, n));
        struct curator_item got[MAXN];
        CHECK(curator_frame_decode(frame, size, got, MAXN) == (long)n);
        for (size_t i = 0; i < n; i++)
            CHECK(got[i].len == lens[i] && memcmp(frame + got[i].offset, store[i], lens[i]) == 0);
        if (size > 5) /* every strict prefix is truncated */
            CHECK(curator_frame_decode(frame, size - 1 - (size_t)rand() % (size - 4), got, MAXN) == -1);
    }
}

static void priority_names(void)
{
    static const struct { int64_t prio; const char *name; } seen[] = {
        {INT32_MIN, "queue-0800000000000000004"}, {-5, "queue-0FFFFFFFB0000000001"},
        {0, "queue-1000000000000000002"},         {10, "queue-10000000A0000000000"},
        {INT32_MAX, "queue-17FFFFFFF0000000003"},
    };
    char prefix[CURATOR_PREFIX_MAX];
    for (size_t i = 0; i < 5; i++) {
        struct curator_name cn;
        CHECK(curator_name_prefix(CURATOR_PRIORITY, seen[i].prio, prefix, sizeof prefix) == 0);
        CHECK(strncmp(prefix, seen[i].name, strlen(prefix)) == 0 && strlen(prefix) == 15);
        CHECK(curator_parse_name(CURATOR_PRIORITY, seen[i].name, &cn) == 0);
        CHECK(cn.has_priority && cn.priority == seen[i].prio);
        if (i > 0) { /* Curator's order is byte order of the names: lower priority first */
            struct curator_name prev;
            curator_parse_name(CURATOR_PRIORITY, seen[i - 1].name, &prev);
            CHECK(curator_name_cmp(CURATOR_PRIORITY, seen[i - 1].name, &prev, seen[i].name, &cn) < 0);
        }
    }
    CHECK(curator_name_prefix(CURATOR_PRIORITY, (int64_t)INT32_MAX + 1, prefix, sizeof prefix) != 0);
    struct curator_name cn;
    /* A requeued item (plain name) is still an item, with no priority of its own. */
    CHECK(curator_parse_name(CURATOR_PRIORITY, "queue-0000000002", &cn) == 0 && !cn.has_priority);
    CHECK(curator_parse_name(CURATOR_PRIORITY, "queue-1FFFFFFFB0000000001", &cn) == 0 &&
          !cn.has_priority); /* sign digit says >= 0, value is negative */
    CHECK(curator_parse_name(CURATOR_PRIORITY, "job-0000000007", &cn) == -1);
}

static void delay_names(void)
{
    char prefix[CURATOR_PREFIX_MAX];
    struct curator_name cn, other;
    CHECK(curator_name_prefix(CURATOR_DELAY, 1795300229486LL, prefix, sizeof prefix) == 0);
    CHECK_STR(prefix, "queue-|1A2003B816E|");
    CHECK(curator_name_prefix(CURATOR_DELAY, 255, prefix, sizeof prefix) == 0);
    CHECK_STR(prefix, "queue-|000000FF|"); /* at least 8 digits */
    CHECK(curator_name_prefix(CURATOR_DELAY, 0, prefix, sizeof prefix) != 0);
    CHECK(curator_parse_name(CURATOR_DELAY, "queue-|1A2003B816E|0000000001", &cn) == 0);
    CHECK(cn.epoch_ms == 1795300229486LL);
    CHECK(curator_parse_name(CURATOR_DELAY, "queue-|1a2003c1c75|0000000003", &cn) == 0);
    CHECK(cn.epoch_ms == 0x1a2003c1c75LL);
    CHECK(curator_parse_name(CURATOR_DELAY, "queue-|zz|0000000004", &cn) == 0 && cn.epoch_ms == 0);
    CHECK(curator_parse_name(CURATOR_DELAY, "queue-0000000002", &cn) == 0 && cn.epoch_ms == 0);
    CHECK(curator_parse_name(CURATOR_DELAY, "queue-|-5|0000000005", &cn) == 0 && cn.epoch_ms == -5);
    CHECK(curator_parse_name(CURATOR_DELAY, "queue-|FFFFFFFFFFFFFFFFF|1", &cn) == 0 &&
          cn.epoch_ms == 0); /* overflows a long: unreadable, due at once */
    CHECK(curator_parse_name(CURATOR_DELAY, "queue-|a|b|C|0000000009", &cn) == 0 &&
          cn.epoch_ms == 12); /* the last two bars */
    CHECK(curator_parse_name(CURATOR_DELAY, "entry-005-0000000001", &cn) == -1); /* kazoo */
    /* Order by epoch, not by name (the field is variable-width). */
    curator_parse_name(CURATOR_DELAY, "queue-|FFFFFFFF|0000000001", &cn);
    curator_parse_name(CURATOR_DELAY, "queue-|1A2003B816E|0000000000", &other);
    CHECK(curator_name_cmp(CURATOR_DELAY, "queue-|FFFFFFFF|0000000001", &cn,
                           "queue-|1A2003B816E|0000000000", &other) < 0);
    CHECK(curator_name_prefix(CURATOR_PLAIN, 7, prefix, sizeof prefix) == 0);
    CHECK_STR(prefix, "queue-");
}

/* deferd's requeue tags: attempts carried where Curator does not look, order kept. */
static void tagged_names(void)
{
    char prefix[CURATOR_PREFIX_MAX], name[80];
    struct curator_name cn, plain;
    CHECK(curator_name_prefix_tagged(CURATOR_DELAY, 0x1A2003B816ELL, 3, prefix,
                                     sizeof prefix) == 0);
    CHECK_STR(prefix, "queue-a3|1A2003B816E|");
    snprintf(name, sizeof name, "%s0000000042", prefix);
    CHECK(curator_parse_name(CURATOR_DELAY, name, &cn) == 0);
    CHECK(cn.epoch_ms == 0x1A2003B816ELL && cn.attempts == 3);
    CHECK(curator_parse_name(CURATOR_DELAY, "queue-|1A2003B816E|0000000001", &plain) == 0 &&
          plain.attempts == 0);
    CHECK(curator_parse_name(CURATOR_DELAY, "queue-ax|1A|0000000001", &cn) == 0 &&
          cn.attempts == 0 && cn.epoch_ms == 0x1A); /* not a tag: read as Curator reads it */

    CHECK(curator_name_prefix_tagged(CURATOR_PRIORITY, -5, 12, prefix, sizeof prefix) == 0);
    CHECK_STR(prefix, "queue-0FFFFFFFBa12-");
    snprintf(name, sizeof name, "%s0000000007", prefix);
    CHECK(curator_parse_name(CURATOR_PRIORITY, name, &cn) == 0);
    CHECK(cn.has_priority && cn.priority == -5 && cn.attempts == 12);
    /* after untagged items of its priority, before the next priority */
    CHECK(strcmp(name, "queue-0FFFFFFFB0000000099") > 0);
    CHECK(strcmp(name, "queue-0FFFFFFFC0000000000") < 0);
    CHECK(curator_name_prefix_tagged(CURATOR_PLAIN, 0, 2, prefix, sizeof prefix) == 0);
    CHECK_STR(prefix, "queue-a2-");
    CHECK(curator_parse_name(CURATOR_PLAIN, "queue-a2-0000000001", &cn) == 0 && cn.attempts == 2);
    CHECK(curator_parse_name(CURATOR_PLAIN, "queue-a99999999999-0000000001", &cn) == 0 &&
          cn.attempts == 0); /* overflow: no tag */
    CHECK(curator_name_prefix_tagged(CURATOR_DELAY, 1, UINT32_MAX, prefix, sizeof prefix) == 0);
    snprintf(name, sizeof name, "%s0000000001", prefix); /* the largest tag still reads */
    CHECK(curator_parse_name(CURATOR_DELAY, name, &cn) == 0 && cn.attempts == UINT32_MAX);
}

int main(void)
{
    tagged_names();
    seen_frames();
    corrupt_frames();
    round_trips();
    priority_names();
    delay_names();
    return check_report("curator");
}
