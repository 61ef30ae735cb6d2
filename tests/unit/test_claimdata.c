/* The claim codec (src/common/claimdata.c): the bytes of docs/zookeeper-layout.md "Claims",
 * round trips up to the bounds, and every refusal of the writer and the reader. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "claimdata.h"
#include "pack.h"

static unsigned char buf[CLAIM_BYTES_MAX + 64];

static struct claim_record rec(const char *path, uint32_t deliveries, const char *payload)
{
    return (struct claim_record){.path = path, .path_len = strlen(path), .deliveries = deliveries,
                                 .payload = (const unsigned char *)payload,
                                 .len = payload ? strlen(payload) : 0};
}

/* The example of docs/zookeeper-layout.md: one job, delivered once, payload "hi". */
static void test_doc_example(void)
{
    static const unsigned char want[] = {
        'D', 'F', 'C', 'L', 1, 1, 0, 0, 0,                     /* header: one record */
        9, 0, 'j', 'o', 'b', 's', '/', '1', '/', '2', '3',     /* path "jobs/1/23" */
        1, 0, 0, 0, 2, 0, 0, 0, 'h', 'i',                       /* deliveries 1, "hi" */
    };
    struct claim_record r = rec("jobs/1/23", 1, "hi");
    long n = claimdata_write(buf, sizeof buf, &r, 1);
    CHECK(n == (long)sizeof want + CLAIM_TRAILER_SIZE);
    CHECK(memcmp(buf, want, sizeof want) == 0);
    uint32_t crc = pack_crc32c(want, sizeof want);
    CHECK(buf[sizeof want] == (crc & 0xff) && buf[sizeof want + 3] == crc >> 24);
}

static void test_round_trip(void)
{
    struct claim_record in[3] = {rec("jobs/1/2/3/1763769600000-5-u1", 1, "payload one"),
                                 rec("jobs/1/2/3/s7/1763769600001-5-u2", 9, NULL),
                                 rec("jobs/9/9/9/1763769600002-0-u3-a4", 2, "x")};
    struct claim_record out[CLAIM_JOBS_MAX];
    uint32_t n = 99;
    char err[128];
    long len = claimdata_write(buf, sizeof buf, in, 3);
    CHECK(len == (long)claimdata_size(claimdata_record_size(in[0].path_len, in[0].len) +
                                      claimdata_record_size(in[1].path_len, 0) +
                                      claimdata_record_size(in[2].path_len, 1)));
    CHECK(claimdata_read(buf, (size_t)len, out, CLAIM_JOBS_MAX, &n, err, sizeof err) == CLAIM_OK);
    CHECK(n == 3);
    for (uint32_t i = 0; i < 3 && n == 3; i++) {
        CHECK(out[i].path_len == in[i].path_len &&
              memcmp(out[i].path, in[i].path, in[i].path_len) == 0);
        CHECK(out[i].deliveries == in[i].deliveries && out[i].len == in[i].len);
        CHECK(in[i].len == 0 || memcmp(out[i].payload, in[i].payload, in[i].len) == 0);
    }
    /* no records: the data of a claim whose jobs all went (never written, but read) */
    len = claimdata_write(buf, sizeof buf, in, 0);
    CHECK(len == CLAIM_HEADER_SIZE + CLAIM_TRAILER_SIZE);
    CHECK(claimdata_read(buf, (size_t)len, out, CLAIM_JOBS_MAX, &n, err, sizeof err) == CLAIM_OK &&
          n == 0);
}

/* CLAIM_JOBS_MAX records fit; one more is refused; so is data over CLAIM_BYTES_MAX. */
static void test_bounds(void)
{
    static struct claim_record many[CLAIM_JOBS_MAX + 1], out[CLAIM_JOBS_MAX];
    static char payload[CLAIM_BYTES_MAX];
    uint32_t n;
    for (int i = 0; i <= CLAIM_JOBS_MAX; i++)
        many[i] = rec("jobs/1/2/3/1763769600000-5-u1", 1, "p");
    long len = claimdata_write(buf, sizeof buf, many, CLAIM_JOBS_MAX);
    CHECK(len > 0 && claimdata_read(buf, (size_t)len, out, CLAIM_JOBS_MAX, &n, NULL, 0) == CLAIM_OK &&
          n == CLAIM_JOBS_MAX);
    CHECK(claimdata_read(buf, (size_t)len, out, CLAIM_JOBS_MAX - 1, &n, NULL, 0) == CLAIM_E_COUNT);
    CHECK(claimdata_write(buf, sizeof buf, many, CLAIM_JOBS_MAX + 1) == CLAIM_E_COUNT);
    memset(payload, 'z', sizeof payload - 1);
    struct claim_record big = rec("jobs/1/2/3/1763769600000-5-u1", 1, payload);
    CHECK(claimdata_write(buf, sizeof buf, &big, 1) == CLAIM_E_TOO_BIG);
    big.len = CLAIM_BYTES_MAX - claimdata_size(claimdata_record_size(big.path_len, 0));
    CHECK(claimdata_write(buf, sizeof buf, &big, 1) == CLAIM_BYTES_MAX);
    CHECK(claimdata_write(buf, 100, &big, 1) == CLAIM_E_SPACE);
}

static void test_refusals(void)
{
    struct claim_record r = rec("jobs/1/2/3/1763769600000-5-u1", 3, "abc"), out[4];
    uint32_t n;
    char err[128] = "";
    const char *bad_paths[] = {"jobs/", "queues/x/jobs/1", "jobs/1/../../keys", "jobs//1",
                               "jobs/1/", "dead/1/2"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof *bad_paths; i++) {
        struct claim_record b = rec(bad_paths[i], 1, "x");
        CHECK(claimdata_write(buf, sizeof buf, &b, 1) == CLAIM_E_PATH);
    }
    long len = claimdata_write(buf, sizeof buf, &r, 1);
    CHECK(len > 0);
    CHECK(claimdata_read(buf, 5, out, 4, &n, err, sizeof err) == CLAIM_E_TRUNCATED);
    CHECK_CONTAINS(err, "claim data");
    buf[len - 1] ^= 1; /* the checksum */
    CHECK(claimdata_read(buf, (size_t)len, out, 4, &n, err, sizeof err) == CLAIM_E_CHECKSUM);
    buf[len - 1] ^= 1;
    buf[12] ^= 0x40; /* a byte of the path: caught by the checksum first */
    CHECK(claimdata_read(buf, (size_t)len, out, 4, &n, err, sizeof err) == CLAIM_E_CHECKSUM);
    buf[12] ^= 0x40;
    buf[0] = 'X';
    CHECK(claimdata_read(buf, (size_t)len, out, 4, &n, err, sizeof err) == CLAIM_E_MAGIC);
    buf[0] = 'D';
    buf[4] = 2;
    CHECK(claimdata_read(buf, (size_t)len, out, 4, &n, err, sizeof err) == CLAIM_E_FORMAT);
    buf[4] = CLAIM_FORMAT;
    /* a count that does not match the records, checksum made right */
    buf[5] = 2;
    uint32_t crc = pack_crc32c(buf, (size_t)len - 4);
    memcpy(buf + len - 4, (unsigned char[]){crc, crc >> 8, crc >> 16, crc >> 24}, 4);
    CHECK(claimdata_read(buf, (size_t)len, out, 4, &n, err, sizeof err) == CLAIM_E_TRUNCATED);
    buf[5] = 0;
    crc = pack_crc32c(buf, (size_t)len - 4);
    memcpy(buf + len - 4, (unsigned char[]){crc, crc >> 8, crc >> 16, crc >> 24}, 4);
    CHECK(claimdata_read(buf, (size_t)len, out, 4, &n, err, sizeof err) == CLAIM_E_COUNT);
    /* deliveries 0 is no claimed job: refused by both */
    r.deliveries = 0;
    CHECK(claimdata_write(buf, sizeof buf, &r, 1) == CLAIM_E_PATH);
    r.deliveries = 3;
    len = claimdata_write(buf, sizeof buf, &r, 1);
    memset(buf + CLAIM_HEADER_SIZE + 2 + r.path_len, 0, 4);
    crc = pack_crc32c(buf, (size_t)len - 4);
    memcpy(buf + len - 4, (unsigned char[]){crc, crc >> 8, crc >> 16, crc >> 24}, 4);
    CHECK(claimdata_read(buf, (size_t)len, out, 4, &n, err, sizeof err) == CLAIM_E_PATH);
}

/* A record's job name: its path's last part; none, or too long for the caller, is -1. */
static void test_job_name(void)
{
    char name[16];
    struct claim_record r = {.path = "jobs/1/2/3/0001-7-ab", .path_len = 20};
    CHECK(claimdata_job_name(&r, name, sizeof name) == 0);
    CHECK_STR(name, "0001-7-ab");
    r.path_len = 11; /* "jobs/1/2/3/": nothing after the slash */
    CHECK(claimdata_job_name(&r, name, sizeof name) == -1);
    r = (struct claim_record){.path = "jobs", .path_len = 4};
    CHECK(claimdata_job_name(&r, name, sizeof name) == -1);
    r = (struct claim_record){.path = "jobs/1/0123456789abcdef", .path_len = 23};
    CHECK(claimdata_job_name(&r, name, sizeof name) == -1);
}

/* A record by its path: exact, not a prefix. */
static void test_find(void)
{
    struct claim_record recs[3] = {{.path = "jobs/1/2/3/a", .path_len = 12, .deliveries = 1},
                                   {.path = "jobs/1/2/3/ab", .path_len = 13, .deliveries = 1},
                                   {.path = "jobs/1/2/3/b", .path_len = 12, .deliveries = 1}};
    CHECK(claimdata_find(recs, 3, "jobs/1/2/3/ab") == 1);
    CHECK(claimdata_find(recs, 3, "jobs/1/2/3/b") == 2);
    CHECK(claimdata_find(recs, 3, "jobs/1/2/3/") == -1);
    CHECK(claimdata_find(recs, 2, "jobs/1/2/3/b") == -1);
    CHECK(claimdata_find(recs, 0, "jobs/1/2/3/a") == -1);
    /* dropped: the others keep their order, and the size is what writing them takes */
    uint32_t n = 3;
    size_t size = claimdata_drop(recs, &n, 1);
    unsigned char out[256];
    CHECK(n == 2 && claimdata_find(recs, n, "jobs/1/2/3/b") == 1);
    CHECK(claimdata_write(out, sizeof out, recs, n) == (long)size);
}

/* The name a recovery makes a job again under: its own up to 8 deliveries, past them the
 * deliveries added to its earlier attempts; a foreign name kept; one that no longer fits
 * refused. */
static void test_remade_path(void)
{
    char p[128] = "/r/queues/q/jobs/1/2/3/1700000000000-5-0000000000000001-a2";
    CHECK(claimdata_remade_path(p, sizeof p, 8) == 0);
    CHECK_STR(p, "/r/queues/q/jobs/1/2/3/1700000000000-5-0000000000000001-a2");
    CHECK(claimdata_remade_path(p, sizeof p, 9) == 0);
    CHECK_STR(p, "/r/queues/q/jobs/1/2/3/1700000000000-5-0000000000000001-a11");
    char q[128] = "/r/queues/q/jobs/1/2/3/1700000000000-5-0000000000000002";
    CHECK(claimdata_remade_path(q, sizeof q, 12) == 0);
    CHECK_STR(q, "/r/queues/q/jobs/1/2/3/1700000000000-5-0000000000000002-a12");
    char f[64] = "/r/queues/q/jobs/1/2/3/not-ours";
    CHECK(claimdata_remade_path(f, sizeof f, 20) == 0);
    CHECK_STR(f, "/r/queues/q/jobs/1/2/3/not-ours");
    char t[59] = "/r/queues/q/jobs/1/2/3/1700000000000-5-0000000000000002";
    CHECK(claimdata_remade_path(t, sizeof t, 12) == -1); /* "-a12" would not fit */
}

int main(void)
{
    test_doc_example();
    test_round_trip();
    test_bounds();
    test_refusals();
    test_job_name();
    test_find();
    test_remade_path();
    return check_report("test_claimdata");
}
