/* The pack codec (src/common/pack.c): the bytes of docs/zookeeper-layout.md "Packs", round
 * trips up to the limits, every refusal of the writer and the reader, find and remove.
 * "test_pack --write-corpus DIR" writes the fuzzer's seed packs (tests/fuzz/corpus/pack). */
#include <stdlib.h>

#include "check.h"
#include "pack.h"

#define START 1763769600000ULL /* 2025-11-22 00:00 UTC */
#define HOUR 3600000ULL

static unsigned char big[PACK_BYTES_MAX + 64], other[PACK_BYTES_MAX + 64];
/* The longest key, every byte a key may hold. */
static const char max_key[] = "K.-_:@0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV";

/* The example of docs/zookeeper-layout.md: two jobs in a one-hour window. */
static const char doc_pack[] =
    "4446504b01" "0048dca89a010000" "80ee360000000000" "02000000"
    "83280a02b0ea01" "10" "35663165306332613962336434653031" "08" "6f726465722d3137"
    "05" "68656c6c6f"
    "ffdcdb01000000" "01" "7a" "00" "00"
    "1426dd82";

static struct job_name job(uint64_t due, uint32_t prio, const char *uid, const char *key)
{
    struct job_name jn = {.due_ms = due, .priority = prio};
    snprintf(jn.uid, sizeof jn.uid, "%s", uid);
    snprintf(jn.key, sizeof jn.key, "%s", key);
    return jn;
}

static int same(const struct job_name *a, const struct job_name *b)
{
    return a->due_ms == b->due_ms && a->priority == b->priority &&
           a->prior_attempts == b->prior_attempts && a->ttr_ms == b->ttr_ms &&
           strcmp(a->uid, b->uid) == 0 && strcmp(a->key, b->key) == 0 && !b->shard[0];
}

/* A pack's checksum made right again after a test changed its bytes. */
static void refix(unsigned char *p, size_t len)
{
    uint32_t crc = pack_crc32c(p, len - 4);
    for (int i = 0; i < 4; i++)
        p[len - 4 + (size_t)i] = (unsigned char)(crc >> (8 * i));
}

static int open_rc(const unsigned char *p, size_t len)
{
    struct pack_reader r;
    return pack_open(&r, p, len);
}

static void documented_bytes(void)
{
    unsigned char want[128];
    size_t n = unhex(doc_pack, want), size;
    CHECK(pack_crc32c("123456789", 9) == 0xe3069283u && pack_crc32c("", 0) == 0);
    struct pack_writer w;
    CHECK(pack_writer_init(&w, big, sizeof big, START, HOUR) == 0);
    struct job_name a = job(1763769605123ULL, 10, "5f1e0c2a9b3d4e01", "order-17");
    a.prior_attempts = 2;
    a.ttr_ms = 30000;
    struct job_name z = job(START + HOUR - 1, 0, "z", "");
    CHECK(pack_add(&w, &a, "hello", 5) == 0 && pack_add(&w, &z, NULL, 0) == 0);
    CHECK(pack_finish(&w, &size) == 0 && size == n && n == 79);
    CHECK(memcmp(big, want, n) == 0);
    struct pack_reader r;
    struct pack_job j;
    CHECK(pack_open(&r, want, n) == 0 && r.count == 2 && r.window_start == START);
    CHECK(pack_next(&r, &j) == 1 && same(&a, &j.name) && j.index == 0 && j.at == 25);
    CHECK(j.payload == want + 59 && j.payload_len == 5); /* into the pack, not a copy */
    CHECK(pack_next(&r, &j) == 1 && same(&z, &j.name) && j.payload_len == 0);
    CHECK(pack_next(&r, &j) == 0 && pack_next(&r, &j) == 1 && j.index == 0); /* again */
}

/* The checksum as it was first written, a nibble at a time: what every pack written so far
 * carries, so the faster ones must give the very same. */
static uint32_t crc_nibbles(const unsigned char *p, size_t len)
{
    static const uint32_t t[16] = {
        0x00000000, 0x105ec76f, 0x20bd8ede, 0x30e349b1, 0x417b1dbc, 0x5125dad3,
        0x61c69362, 0x7198540d, 0x82f63b78, 0x92a8fc17, 0xa24bb5a6, 0xb21572c9,
        0xc38d26c4, 0xd3d3e1ab, 0xe330a81a, 0xf36e6f75};
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        crc = (crc >> 4) ^ t[(crc ^ p[i]) & 0xf];
        crc = (crc >> 4) ^ t[(crc ^ (p[i] >> 4)) & 0xf];
    }
    return crc ^ 0xffffffffu;
}

/* Known vectors (RFC 3720 B.4, iSCSI), then random bytes at every alignment and length
 * around the 8-byte steps, and a whole pack's worth: both ways against the nibbles. */
static void checksum(void)
{
    unsigned char b[32];
    static const struct { int fill; uint32_t crc; } rfc[] = {
        {0x00, 0x8a9136aau}, {0xff, 0x62a8ab43u}, {-1, 0x46dd794eu}, {-2, 0x113fdb5cu}};
    for (size_t v = 0; v < sizeof rfc / sizeof rfc[0]; v++) {
        for (int i = 0; i < 32; i++)
            b[i] = (unsigned char)(rfc[v].fill == -1 ? i : rfc[v].fill == -2 ? 31 - i
                                                                              : rfc[v].fill);
        CHECK(pack_crc32c(b, 32) == rfc[v].crc && pack_crc32c_portable(b, 32) == rfc[v].crc);
    }
    CHECK(pack_crc32c_portable("123456789", 9) == 0xe3069283u);
    CHECK(pack_crc32c_portable("", 0) == 0 && pack_crc32c(NULL, 0) == 0);
    srand(20);
    for (size_t i = 0; i < sizeof other; i++)
        other[i] = (unsigned char)rand();
    for (size_t align = 0; align < 16; align++)
        for (size_t len = 0; len < 80; len++) {
            uint32_t want = crc_nibbles(other + align, len);
            CHECK(pack_crc32c(other + align, len) == want);
            CHECK(pack_crc32c_portable(other + align, len) == want);
        }
    for (int k = 0; k < 50; k++) {
        size_t at = (size_t)rand() % 64, len = (size_t)rand() % PACK_BYTES_MAX;
        uint32_t want = crc_nibbles(other + at, len);
        CHECK(pack_crc32c(other + at, len) == want);
        CHECK(pack_crc32c_portable(other + at, len) == want);
    }
}

/* N jobs with every kind of field: binary and empty payloads, longest uid and key, the
 * window's first and last ms, 32-bit maxima. */
static struct job_name nth_job(int i, unsigned char payload[300], size_t *len)
{
    char uid[40];
    snprintf(uid, sizeof uid, i == 3 ? "%032d" : "u%x", i);
    struct job_name jn = job(START + (uint64_t)i * 7919 % HOUR, (uint32_t)i * 1000, uid,
                             i % 3 ? "" : max_key);
    jn.due_ms = i == 1 ? START + HOUR - 1 : jn.due_ms;
    jn.prior_attempts = i == 2 ? UINT32_MAX : (uint32_t)i;
    jn.ttr_ms = i == 2 ? UINT32_MAX : 0;
    jn.priority = i == 2 ? UINT32_MAX : jn.priority;
    for (size_t b = 0; b < 300; b++)
        payload[b] = (unsigned char)(b * 31 + (size_t)i);
    *len = (size_t)(i * 37) % 300;
    return jn;
}

/* Jobs FROM .. N - 1 (but SKIP) of nth_job, and the pack finished. */
static size_t add_jobs(struct pack_writer *w, int from, int n, struct job_name *jobs, int skip)
{
    size_t size;
    for (int i = from; i < n; i++) {
        unsigned char payload[300];
        size_t len;
        struct job_name jn = nth_job(i, payload, &len);
        if (jobs)
            jobs[i] = jn;
        if (i != skip)
            CHECK(pack_add(w, &jn, payload, len) == 0);
    }
    CHECK(pack_finish(w, &size) == 0 && size == w->len);
    return size;
}

static size_t build(unsigned char *buf, int n, struct job_name *jobs, int skip)
{
    struct pack_writer w;
    CHECK(pack_writer_init(&w, buf, PACK_BYTES_MAX, START, HOUR) == 0);
    return add_jobs(&w, 0, n, jobs, skip);
}

static void round_trips(void)
{
    static const int counts[] = {0, 1, 2, 5, 100};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        struct job_name jobs[100];
        size_t size = build(big, n, jobs, -1);
        CHECK(n || size == PACK_EMPTY_SIZE);
        struct pack_reader r;
        struct pack_job j;
        CHECK(pack_open(&r, big, size) == 0 && r.count == (uint32_t)n);
        for (int i = 0; i < n; i++) {
            CHECK(pack_next(&r, &j) == 1 && same(&jobs[i], &j.name));
            CHECK(j.payload_len == (size_t)(i * 37) % 300 && j.payload > big &&
                  j.payload + j.payload_len < big + size);
            CHECK(j.payload_len == 0 || j.payload[j.payload_len - 1] ==
                                            (unsigned char)((j.payload_len - 1) * 31 + (size_t)i));
        }
        CHECK(pack_next(&r, &j) == 0);
    }
    CHECK(strlen(max_key) == LAYOUT_KEY_MAX);
}

static void limits(void)
{
    struct pack_writer w;
    size_t size;
    CHECK(pack_writer_init(&w, big, sizeof big, START, HOUR) == 0);
    for (uint32_t i = 0; i <= PACK_JOBS_MAX; i++) {
        char uid[16];
        snprintf(uid, sizeof uid, "u%u", i);
        struct job_name jn = job(START + i, 0, uid, "");
        CHECK(pack_add(&w, &jn, "x", 1) == (i < PACK_JOBS_MAX ? 0 : PACK_E_FULL_JOBS));
    }
    size_t len = w.len;
    CHECK(pack_finish(&w, &size) == 0 && size == len + 4 && open_rc(big, size) == 0);
    CHECK(w.count == PACK_JOBS_MAX);
    CHECK(pack_add(&w, &(struct job_name){0}, "", 0) == PACK_E_FINISHED);

    /* One job that fills the pack to the byte: a 3-byte payload length, 7 bytes of fields. */
    size_t fill = PACK_BYTES_MAX - PACK_EMPTY_SIZE - 7 - 3;
    struct job_name jn = job(START, 0, "a", "");
    CHECK(pack_job_size(&jn, START, fill) == PACK_BYTES_MAX - PACK_EMPTY_SIZE);
    memset(other, 0xa5, fill + 1);
    CHECK(pack_writer_init(&w, big, sizeof big, START, HOUR) == 0);
    CHECK(pack_add(&w, &jn, other, fill + 1) == PACK_E_FULL_BYTES && w.len == 25 && w.count == 0);
    CHECK(pack_add(&w, &jn, other, SIZE_MAX) == PACK_E_FULL_BYTES);
    CHECK(pack_add(&w, &jn, other, fill) == 0 && pack_finish(&w, &size) == 0);
    CHECK(size == PACK_BYTES_MAX && open_rc(big, size) == 0);
    big[size] = 0;
    CHECK(open_rc(big, size + 1) == PACK_E_TOO_BIG);

    /* The caller's buffer is smaller than a pack may be. */
    CHECK(pack_writer_init(&w, big, PACK_EMPTY_SIZE - 1, START, HOUR) == PACK_E_SPACE);
    CHECK(pack_writer_init(&w, big, 100, START, HOUR) == 0);
    CHECK(pack_add(&w, &jn, other, 64) == PACK_E_SPACE && w.len == 25);
    CHECK(pack_add(&w, &jn, other, 63) == 0 && w.len == 96 && pack_finish(&w, &size) == 0);
    CHECK(size == 100 && open_rc(big, size) == 0);
}

/* A pack of the first K jobs, resumed and given the rest: the bytes of all N at once. Again
 * from that, and from packs that are refused or do not fit. */
static void resume(void)
{
    unsigned char *fresh = malloc(PACK_BYTES_MAX), *first = malloc(PACK_BYTES_MAX);
    struct pack_writer w;
    size_t size, want, n1;
    CHECK(fresh && first);
    for (int k = 0; fresh && first && k <= 20; k += k < 3 ? 1 : 6) {
        want = build(fresh, 20, NULL, -1);
        n1 = build(first, k, NULL, -1);
        memset(big, 0xee, sizeof big);
        CHECK(pack_writer_resume(&w, big, n1, first, n1) == 0 && w.count == (uint32_t)k);
        CHECK(pack_finish(&w, &size) == 0 && size == n1 && memcmp(big, first, n1) == 0);
        CHECK(pack_writer_resume(&w, big, sizeof big, first, n1) == 0);
        CHECK(add_jobs(&w, k, 20, NULL, -1) == want && memcmp(big, fresh, want) == 0);
        CHECK(pack_writer_resume(&w, other, sizeof other, big, want) == 0); /* and on */
        CHECK(add_jobs(&w, 20, 23, NULL, -1) == build(fresh, 23, NULL, -1));
        CHECK(memcmp(other, fresh, w.len) == 0);
    }
    n1 = build(first, 5, NULL, -1);
    CHECK(pack_writer_resume(&w, big, n1 - 1, first, n1) == PACK_E_SPACE);
    CHECK_STR(w.err, "pack: 626 bytes do not fit the buffer of 625");
    CHECK(pack_add(&w, &(struct job_name){0}, "", 0) == PACK_E_FINISHED);
    CHECK(pack_writer_resume(&w, big, sizeof big, first, n1 - 1) == PACK_E_CHECKSUM);
    first[40] ^= 1;
    CHECK(pack_writer_resume(&w, big, sizeof big, first, n1) == PACK_E_CHECKSUM);
    CHECK_CONTAINS(w.err, "pack: checksum ");
    CHECK(pack_finish(&w, &size) == PACK_E_FINISHED);
    first[29] = 0; /* the first uid's length: a good checksum around a record that is not */
    refix(first, n1);
    CHECK(pack_writer_resume(&w, big, sizeof big, first, n1) == PACK_E_UID);
    CHECK_STR(w.err, "pack: job 1 of 5: uid length 0 not 1-32");
    CHECK(pack_writer_resume(&w, big, sizeof big, "DFPK", 4) == PACK_E_TRUNCATED);
    free(fresh);
    free(first);
}

static void writer_refusals(void)
{
    struct pack_writer w;
    CHECK(pack_writer_init(&w, big, sizeof big, START, 0) == PACK_E_WINDOW);
    CHECK(pack_writer_init(&w, big, sizeof big, LAYOUT_DUE_MAX + 1, 1) == PACK_E_WINDOW);
    CHECK(pack_writer_init(&w, big, sizeof big, LAYOUT_DUE_MAX, 2) == PACK_E_WINDOW);
    CHECK(pack_writer_init(&w, big, sizeof big, 0, UINT64_MAX) == PACK_E_WINDOW);
    CHECK(pack_writer_init(&w, big, sizeof big, LAYOUT_DUE_MAX, 1) == 0);
    CHECK(pack_writer_init(&w, big, sizeof big, START, HOUR) == 0);
    struct job_name bad[9] = {job(START - 1, 0, "a", ""), job(START + HOUR, 0, "a", ""),
                              job(START, 0, "", ""),      job(START, 0, "aBc", ""),
                              job(START, 0, "a", "-x"),   job(START, 0, "a", "a b"),
                              job(START, 0, "a", "")};
    memset(bad[6].uid, 'a', sizeof bad[6].uid); /* 33 bytes, no NUL */
    bad[7] = job(START, 0, "a", "");
    memset(bad[7].key, 'k', sizeof bad[7].key);
    bad[8] = job(START, 0, "a", "");
    strcpy(bad[8].shard, "s1");
    static const int want[9] = {PACK_E_DUE, PACK_E_DUE, PACK_E_UID, PACK_E_UID, PACK_E_KEY,
                                PACK_E_KEY, PACK_E_UID, PACK_E_KEY, PACK_E_SHARD};
    for (int i = 0; i < 9; i++) {
        CHECK(pack_add(&w, &bad[i], "p", 1) == want[i] && w.len == 25 && w.count == 0);
        CHECK(strncmp(w.err, "pack: job 1: ", 13) == 0);
    }
    struct job_name ok = job(START, 0, "a", "");
    CHECK(pack_add(&w, &ok, "p", 1) == 0 && pack_add(&w, &bad[0], "p", 1) == PACK_E_DUE);
    CHECK_STR(w.err, "pack: job 2: due 1763769599999 outside the window [1763769600000, +3600000)");
    size_t size;
    CHECK(pack_finish(&w, &size) == 0 && pack_finish(&w, &size) == PACK_E_FINISHED);
}

/* Every prefix is refused: as read, and with a checksum made right for it. */
static void truncated(void)
{
    size_t size = build(big, 20, NULL, -1);
    for (size_t cut = 0; cut < size; cut++) {
        CHECK(open_rc(big, cut) != 0);
        if (cut + 4 >= size)
            continue;
        memcpy(other, big, cut);
        refix(other, cut + 4);
        int rc = open_rc(other, cut + 4);
        /* (the checksum's bytes land on the magic and the version of the shortest) */
        CHECK(cut < 5 ? rc != 0 : rc == PACK_E_TRUNCATED || rc == PACK_E_COUNT);
    }
}

static void flipped(void)
{
    size_t size = build(big, 20, NULL, -1);
    static const unsigned char masks[] = {0x01, 0x80, 0xff};
    for (size_t at = 0; at < size; at++)
        for (size_t m = 0; m < sizeof masks; m++) {
            big[at] ^= masks[m];
            int rc = open_rc(big, size);
            CHECK(rc == (at < 4 ? PACK_E_MAGIC : at == 4 ? PACK_E_VERSION : PACK_E_CHECKSUM));
            big[at] ^= masks[m];
        }
    CHECK(open_rc(big, size) == 0);
}

/* A pack with a good checksum around the given header fields and records (hex). */
static size_t raw(unsigned char *p, uint64_t start, uint64_t width, uint32_t count,
                  const char *records)
{
    memcpy(p, "DFPK\1", 5);
    for (int i = 0; i < 8; i++) {
        p[5 + i] = (unsigned char)(start >> (8 * i));
        p[13 + i] = (unsigned char)(width >> (8 * i));
    }
    for (int i = 0; i < 4; i++)
        p[21 + i] = (unsigned char)(count >> (8 * i));
    size_t n = 25 + unhex(records, p + 25) + 4;
    refix(p, n);
    return n;
}

#define REC "00000000" "0161" "00" "00" /* due offset 0, prio, attempts, ttr 0, uid a, no key */

static void field_refusals(void)
{
    static const struct {
        uint64_t start, width;
        uint32_t count;
        const char *records;
        int rc;
        const char *text;
    } cases[] = {
        {START, HOUR, 1, REC, 0, ""},
        {LAYOUT_DUE_MAX, 1, 1, REC, 0, ""},
        {START, 0, 1, REC, PACK_E_WINDOW, "pack: window of 0 ms from 1763769600000"},
        {LAYOUT_DUE_MAX + 1, 1, 1, REC, PACK_E_WINDOW, "not valid"},
        {LAYOUT_DUE_MAX, 2, 1, REC, PACK_E_WINDOW, "not valid"},
        {START, HOUR, 1025, REC, PACK_E_COUNT, "pack: count 1025 over 1024"},
        {START, HOUR, 2, REC, PACK_E_COUNT, "pack: count 2, but the records end after 1"},
        {START, HOUR, 0, REC, PACK_E_COUNT, "pack: count 0, but 8 bytes follow the last"},
        {START, 100, 1, "64000000" "0161" "0000", PACK_E_DUE, "job 1 of 1: due offset 100 over 99"},
        {START, HOUR, 1, "00800000" "00" "0161" "0000", PACK_E_VARINT, "priority not a shortest"},
        {START, HOUR, 1, "00" "8080808010" "0000" "0161" "0000", PACK_E_VARINT,
         "priority 4294967296 over 4294967295"},
        {START, HOUR, 1, "0000" "ffffffffffffffffff01" "00" "0161" "0000", PACK_E_VARINT,
         "attempts 18446744073709551615 over"},
        {START, HOUR, 1, "000000" "ffffffffffffffffff02" "0161" "0000", PACK_E_VARINT,
         "ttr not a shortest varint"},
        {START, HOUR, 1, "00000000" "00" "0000", PACK_E_UID, "uid length 0 not 1-32"},
        {START, HOUR, 1, "00000000" "21", PACK_E_UID, "uid length 33 not 1-32"},
        {START, HOUR, 1, "00000000" "0141" "0000", PACK_E_UID, "uid \"A\" not [0-9a-z]"},
        {START, HOUR, 1, "00000000" "026100" "0000", PACK_E_UID, "uid holds a NUL byte"},
        {START, HOUR, 2, REC "00000000" "0161" "46", PACK_E_KEY,
         "pack: job 2 of 2: key length 70 not 0-64"},
        {START, HOUR, 1, "00000000" "0161" "022d78" "00", PACK_E_KEY, "key \"-x\" not a valid"},
        {START, HOUR, 1, "00000000" "0161" "03612062" "00", PACK_E_KEY, "not a valid key"},
        {START, HOUR, 1, "00000000" "0161" "026100" "00", PACK_E_KEY, "key holds a NUL byte"},
        {START, HOUR, 1, "00000000" "0161" "00" "056869", PACK_E_TRUNCATED,
         "payload length 5 over the 2 bytes left"},
        {START, HOUR, 1, "00000000" "0161" "00" "8001", PACK_E_TRUNCATED,
         "payload length 128 over the 0 bytes left"},
        {START, HOUR, 1, "00000000" "0161" "00" "80", PACK_E_TRUNCATED, "payload length runs past"},
        {START, HOUR, 1, "00000000" "056162", PACK_E_TRUNCATED, "uid runs past the end"},
        {START, HOUR, 1, "000000", PACK_E_TRUNCATED, "job 1 of 1: ttr runs past the end"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pack_reader r;
        struct pack_job j;
        size_t n = raw(big, cases[i].start, cases[i].width, cases[i].count, cases[i].records);
        int rc = pack_open(&r, big, n);
        CHECK(rc == cases[i].rc);
        if (rc != cases[i].rc)
            fprintf(stderr, "  case %zu: %d %s\n", i, rc, r.err);
        CHECK_CONTAINS(r.err, cases[i].text);
        CHECK(rc == 0 || (pack_next(&r, &j) == 0 && pack_find(&r, "a", &j) == PACK_E_NOT_FOUND));
    }
}

static void foreign(void)
{
    struct pack_reader r;
    unsigned char buf[64];
    size_t n = unhex("0001000102", buf); /* an empty Curator frame */
    CHECK(pack_open(&r, buf, n) == PACK_E_MAGIC);
    CHECK_STR(r.err, "pack: starts 00 01 00 01, not \"DFPK\": not a pack");
    CHECK(pack_open(&r, "hello world", 11) == PACK_E_MAGIC);
    CHECK(pack_open(&r, "D", 1) == PACK_E_TRUNCATED && pack_open(&r, "", 0) == PACK_E_TRUNCATED);
    CHECK(pack_open(&r, "DX", 2) == PACK_E_MAGIC);
    n = raw(buf, START, HOUR, 0, "");
    buf[4] = 2;
    CHECK(pack_open(&r, buf, n) == PACK_E_VERSION);
    CHECK_STR(r.err, "pack: format version 2, this reader knows 1");
    CHECK(pack_open(&r, buf, 5) == PACK_E_VERSION);
    buf[4] = 1;
    CHECK(pack_open(&r, buf, n) == 0 && n == PACK_EMPTY_SIZE);
    buf[n - 1] ^= 1;
    CHECK(pack_open(&r, buf, n) == PACK_E_CHECKSUM);
    CHECK_CONTAINS(r.err, "pack: checksum ");
    CHECK_STR(pack_strerror(PACK_E_CHECKSUM), "checksum");
    CHECK_STR(pack_strerror(PACK_E_NOT_FOUND), "not found");
    CHECK_STR(pack_strerror(1), "unknown");
    CHECK_STR(pack_strerror(-99), "unknown");
}

static void find_and_remove(void)
{
    enum { N = 20 };
    struct job_name jobs[N];
    size_t size = build(big, N, jobs, -1), got, want_size;
    unsigned char *want = malloc(PACK_BYTES_MAX);
    struct pack_reader r;
    struct pack_job j;
    CHECK(want && pack_open(&r, big, size) == 0);
    for (int i = 0; i < N && want; i++) {
        CHECK(pack_find(&r, jobs[i].uid, &j) == 0 && same(&jobs[i], &j.name));
        CHECK(j.index == (uint32_t)i);
        /* Without job i: the bytes a writer makes of the other jobs. */
        want_size = build(want, N, NULL, i);
        CHECK(pack_without(&r, jobs[i].uid, other, size - j.size - 1, &got) == PACK_E_SPACE);
        CHECK(pack_without(&r, jobs[i].uid, other, size - j.size, &got) == 0);
        CHECK(got == want_size && memcmp(other, want, got) == 0);
    }
    CHECK(pack_find(&r, "nope", &j) == PACK_E_NOT_FOUND);
    CHECK_STR(r.err, "pack: no job with uid nope");
    CHECK(pack_without(&r, "nope", other, sizeof other, &got) == PACK_E_NOT_FOUND);
    free(want);

    /* The last job out leaves an empty pack; of two with one uid, the first is the one. */
    struct pack_writer w;
    struct job_name a = job(START + 5, 1, "dup", ""), b = job(START + 9, 2, "dup", "");
    CHECK(pack_writer_init(&w, big, sizeof big, START, HOUR) == 0);
    CHECK(pack_add(&w, &a, "A", 1) == 0 && pack_add(&w, &b, "B", 1) == 0);
    CHECK(pack_finish(&w, &size) == 0 && pack_open(&r, big, size) == 0);
    CHECK(pack_find(&r, "dup", &j) == 0 && j.index == 0 && j.payload[0] == 'A');
    CHECK(pack_without(&r, "dup", other, sizeof other, &got) == 0);
    CHECK(pack_open(&r, other, got) == 0 && r.count == 1 && pack_find(&r, "dup", &j) == 0);
    CHECK(same(&b, &j.name) && j.payload[0] == 'B');
    CHECK(pack_without(&r, "dup", big, sizeof big, &got) == 0 && got == PACK_EMPTY_SIZE);
    CHECK(pack_open(&r, big, got) == 0 && r.count == 0 && pack_next(&r, &j) == 0);
}

/* Issue 20's case: N jobs of 100-byte payloads, deferd's 16-hex-digit uids, no key, the
 * default priority 1024, due times spread evenly over a window of WIDTH. */
static size_t typical_pack(uint32_t n, uint64_t width)
{
    unsigned char payload[100];
    struct pack_writer w;
    size_t size = 0;
    memset(payload, 'p', sizeof payload);
    CHECK(pack_writer_init(&w, big, sizeof big, START, width) == 0);
    for (uint32_t i = 0; i < n; i++) {
        char uid[17];
        snprintf(uid, sizeof uid, "%016llx", (i + 1) * 0x9e3779b97f4a7c15ULL);
        struct job_name jn = job(START + width * (2 * i + 1) / (2 * n), 1024, uid, "");
        CHECK(pack_add(&w, &jn, payload, sizeof payload) == 0);
    }
    CHECK(pack_finish(&w, &size) == 0);
    return size;
}

/* A figure for the test's output, not a bound. */
static void overhead(void)
{
    static const uint32_t counts[] = {1, 100, PACK_JOBS_MAX};
    static const uint64_t widths[] = {HOUR, 24 * HOUR};
    for (size_t wi = 0; wi < 2; wi++)
        for (size_t ci = 0; ci < 3; ci++) {
            size_t size = typical_pack(counts[ci], widths[wi]);
            double each = (double)size / counts[ci];
            printf("pack overhead, %u jobs (100 B payload, 16-char uid, no key), %llu h window: "
                   "%zu B, %.1f B a job, %.1f B a job over its payload\n", counts[ci],
                   (unsigned long long)(widths[wi] / HOUR), size, each, each - 100);
        }
}

/* The fuzzer's seeds: packs of 0, 1 and 5 jobs and the documented one. */
static int write_corpus(const char *dir)
{
    static const struct { const char *name; int jobs; } seeds[] = {
        {"empty", 0}, {"one", 1}, {"five", 5}, {"documented", -1}};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        int jobs = seeds[i].jobs;
        size_t size = jobs < 0 ? unhex(doc_pack, big) : build(big, jobs, NULL, -1);
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(big, 1, size, f) != size || fclose(f) != 0) {
            perror(path);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
        return write_corpus(argv[2]);
    documented_bytes();
    checksum();
    round_trips();
    limits();
    resume();
    writer_refusals();
    truncated();
    flipped();
    field_refusals();
    foreign();
    find_and_remove();
    overhead();
    return check_report("pack");
}
