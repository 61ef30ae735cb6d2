/* libFuzzer harness: the pack codec (src/common/pack.c) on hostile bytes, as read from a
 * znode, once as they are and once with their checksum made right (so that the fuzzer gets
 * past it to the fields). A pack that is accepted must lie within its bytes, be found by
 * its uids, lose exactly one job to pack_without and encode again to the very same bytes;
 * one that is refused says why. A writer resumed from the bytes and given one more job makes
 * what a writer given all the jobs makes, and refuses what pack_open refuses. The input's
 * first bytes also make a job for the writer: what it accepts reads back the same; its pairs
 * of bytes, job sizes that packs must take one after another (packer_progress). Any
 * difference is a bug: abort(). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "pack.h"

static int same_name(const struct job_name *a, const struct job_name *b)
{
    return a->due_ms == b->due_ms && a->priority == b->priority &&
           a->prior_attempts == b->prior_attempts && a->ttr_ms == b->ttr_ms &&
           strcmp(a->uid, b->uid) == 0 && strcmp(a->key, b->key) == 0 &&
           strcmp(a->shard, b->shard) == 0;
}

/* Every job again through a writer with a buffer of exactly the pack's size. */
static void encode_again(struct pack_reader *r)
{
    unsigned char *buf = malloc(r->len);
    struct pack_writer w;
    struct pack_job job;
    size_t size, end = PACK_HEADER_SIZE;
    CHECK(buf && pack_writer_init(&w, buf, r->len, r->window_start, r->window_width) == 0);
    while (pack_next(r, &job) == 1) {
        CHECK(job.at == end && job.payload >= r->data + job.at);
        CHECK(job.payload + job.payload_len == r->data + job.at + job.size);
        CHECK(pack_job_size(&job.name, r->window_start, job.payload_len) == job.size);
        CHECK(pack_add(&w, &job.name, job.payload, job.payload_len) == 0);
        end += job.size;
    }
    CHECK(end == r->len - PACK_TRAILER_SIZE && w.count == r->count);
    CHECK(pack_finish(&w, &size) == 0 && size == r->len && memcmp(buf, r->data, size) == 0);
    free(buf);
}

/* The first, middle and last job: found (a job of the same uid may come first), removed. */
static void find_and_remove(struct pack_reader *r)
{
    uint32_t picks[3] = {0, r->count / 2, r->count - 1};
    unsigned char *out = malloc(r->len);
    CHECK(out);
    for (int i = 0; i < 3 && r->count; i++) {
        struct pack_job job, found;
        for (uint32_t k = 0; k <= picks[i]; k++)
            CHECK(pack_next(r, &job) == 1);
        while (pack_next(r, &found) == 1) /* back to the start */
            ;
        CHECK(pack_find(r, job.name.uid, &found) == 0 && found.index <= job.index);
        CHECK(strcmp(found.name.uid, job.name.uid) == 0);
        size_t size;
        struct pack_reader rest;
        CHECK(pack_without(r, job.name.uid, out, r->len, &size) == 0);
        CHECK(size == r->len - found.size && pack_open(&rest, out, size) == 0);
        CHECK(rest.count == r->count - 1);
    }
    CHECK(pack_find(r, "", &(struct pack_job){0}) == PACK_E_NOT_FOUND);
    free(out);
}

/* The pack resumed by a writer and given one more job: the bytes of a writer given all its
 * jobs and that one (or the same refusal of it, a full pack). A pack that pack_open
 * refuses (RC) is refused alike, and the writer then writes nothing. */
static void resume_and_add(const uint8_t *data, size_t size, int rc, struct pack_reader *r)
{
    size_t cap = size + 64, len, want;
    unsigned char *buf = malloc(cap), *fresh = malloc(cap);
    struct pack_writer w, f;
    struct pack_job job;
    struct job_name jn = {.due_ms = r->window_start + r->window_width - 1, .priority = 7,
                          .uid = "fz1"};
    CHECK(buf && fresh && pack_writer_resume(&w, buf, cap, data, size) == rc);
    if (rc != 0) {
        CHECK(strncmp(w.err, "pack: ", 6) == 0 && pack_add(&w, &jn, "x", 1) == PACK_E_FINISHED);
        CHECK(pack_finish(&w, &len) == PACK_E_FINISHED);
    } else {
        CHECK(w.count == r->count && w.len == size - PACK_TRAILER_SIZE);
        CHECK(pack_writer_init(&f, fresh, cap, r->window_start, r->window_width) == 0);
        while (pack_next(r, &job) == 1)
            CHECK(pack_add(&f, &job.name, job.payload, job.payload_len) == 0);
        CHECK(pack_add(&w, &jn, "x", 1) == pack_add(&f, &jn, "x", 1));
        CHECK(pack_finish(&w, &len) == 0 && pack_finish(&f, &want) == 0 && len == want);
        CHECK(memcmp(buf, fresh, len) == 0);
    }
    free(buf);
    free(fresh);
}

static void decode(const uint8_t *data, size_t size)
{
    struct pack_reader r;
    int rc = pack_open(&r, data, size);
    resume_and_add(data, size, rc, &r);
    if (rc != 0) {
        CHECK(rc < 0 && strncmp(r.err, "pack: ", 6) == 0 && r.count == 0);
        CHECK(strcmp(pack_strerror(rc), "unknown") != 0);
        return;
    }
    CHECK(size >= PACK_EMPTY_SIZE && size <= PACK_BYTES_MAX && r.count <= PACK_JOBS_MAX);
    encode_again(&r);
    find_and_remove(&r);
}

/* A job made of the input's first 32 bytes (uid and key may be anything) and a payload of
 * the rest: refused with a reason, or read back the same. */
static void write_one(const uint8_t *data, size_t size)
{
    struct job_name jn = {0};
    unsigned char buf[512];
    if (size < 32)
        return;
    uint64_t start = (uint64_t)data[0] << 32 | (uint64_t)data[1] << 16, width = data[2] + 1u;
    jn.due_ms = start + data[3];
    memcpy(&jn.priority, data + 4, 4);
    memcpy(&jn.ttr_ms, data + 8, 4);
    memcpy(&jn.prior_attempts, data + 12, 4);
    memcpy(jn.uid, data + 17, data[16] % 8);
    memcpy(jn.key, data + 25, data[24] % 8);
    struct pack_writer w;
    struct pack_reader r;
    struct pack_job job;
    CHECK(pack_writer_init(&w, buf, sizeof buf, start, width) == 0);
    int rc = pack_add(&w, &jn, data + 32, size - 32);
    CHECK(rc == 0 || rc == PACK_E_DUE || rc == PACK_E_UID || rc == PACK_E_KEY ||
          rc == PACK_E_SPACE);
    size_t len;
    CHECK(pack_finish(&w, &len) == 0 && pack_open(&r, buf, len) == 0);
    CHECK(r.count == (rc == 0) && pack_next(&r, &job) == (rc == 0));
    if (rc == 0)
        CHECK(same_name(&jn, &job.name) && job.payload_len == size - 32 &&
              memcmp(job.payload, data + 32, size - 32) == 0);
}

/* The packer's rule (issue 38): a job is packed only when its payload is at most
 * pack_payload_max(), and then an empty pack takes it, whatever its fields; so filling packs
 * one after another with jobs of the input's sizes (two bytes each, scaled to that bound;
 * 0xffff is one byte over it, refused by the rule) never meets a job that fits no pack. The
 * fields are the longest and largest a job may have. */
static void packer_progress(const uint8_t *data, size_t size)
{
    static unsigned char payload[PACK_BYTES_MAX], buf[PACK_BYTES_MAX];
    size_t max = pack_payload_max(), len;
    struct job_name jn = {.priority = UINT32_MAX, .prior_attempts = UINT32_MAX,
                          .ttr_ms = UINT32_MAX};
    memset(jn.uid, 'z', LAYOUT_UID_MAX);
    memset(jn.key, 'k', LAYOUT_KEY_MAX);
    uint64_t start = LAYOUT_DUE_MAX / 2, width = UINT32_MAX;
    struct pack_writer w;
    CHECK(max > 0 && max < PACK_BYTES_MAX);
    CHECK(pack_writer_init(&w, buf, sizeof buf, start, width) == 0);
    for (size_t at = 0; at + 2 <= size && at < 2 * 64; at += 2) {
        unsigned v = (unsigned)data[at] << 8 | data[at + 1];
        size_t want = v == 0xffff ? max + 1 : (size_t)v * max / 0xfffe;
        if (want > max)
            continue; /* stored as a job znode of its own */
        jn.due_ms = start + width - 1 - v;
        int rc = pack_add(&w, &jn, payload, want);
        if (rc == PACK_E_FULL_BYTES || rc == PACK_E_FULL_JOBS) {
            CHECK(pack_finish(&w, &len) == 0 && len <= PACK_BYTES_MAX);
            CHECK(pack_writer_init(&w, buf, sizeof buf, start, width) == 0);
            rc = pack_add(&w, &jn, payload, want); /* a new pack takes it */
        }
        CHECK(rc == 0);
    }
    CHECK(pack_finish(&w, &len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode(data, size);
    if (size >= PACK_EMPTY_SIZE && size <= PACK_BYTES_MAX) {
        unsigned char *copy = malloc(size);
        CHECK(copy);
        memcpy(copy, data, size);
        uint32_t crc = pack_crc32c(copy, size - PACK_TRAILER_SIZE);
        for (int i = 0; i < 4; i++)
            copy[size - PACK_TRAILER_SIZE + (size_t)i] = (unsigned char)(crc >> (8 * i));
        decode(copy, size);
        free(copy);
    }
    write_one(data, size);
    packer_progress(data, size);
    return 0;
}
