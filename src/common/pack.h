/* The pack codec: many far-future jobs in the data of one znode (issue 20; the byte format
 * is docs/zookeeper-layout.md, "Packs"). Pure byte work, no ZooKeeper calls, no allocation:
 * the writer appends to the caller's buffer, the reader points into the caller's bytes.
 * Errors are negative PACK_E_* codes with a one-line text in the reader's or writer's err. */
#ifndef DEFERD_PACK_H
#define DEFERD_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#define PACK_MAGIC "DFPK"
#define PACK_VERSION 1
#define PACK_HEADER_SIZE 25 /* magic 4, version 1, window start 8, width 8, count 4 */
#define PACK_TRAILER_SIZE 4 /* CRC-32C of everything before it */
#define PACK_EMPTY_SIZE (PACK_HEADER_SIZE + PACK_TRAILER_SIZE)
/* A bound on what one znode write or read costs, and half of ZooKeeper's default
 * jute.maxbuffer (1 MiB), so the request around it always fits. */
#define PACK_JOBS_MAX 1024
#define PACK_BYTES_MAX (512 * 1024)
#define PACK_ERR_MAX 128

enum pack_status {
    PACK_OK = 0,
    PACK_E_TRUNCATED = -1, /* shorter than a header, or a field runs past the jobs' end */
    PACK_E_MAGIC = -2,     /* not a pack at all: foreign data */
    PACK_E_VERSION = -3,   /* a pack of a format this reader does not know */
    PACK_E_TOO_BIG = -4,   /* over PACK_BYTES_MAX */
    PACK_E_CHECKSUM = -5,
    PACK_E_WINDOW = -6,    /* width 0, or the window reaches past LAYOUT_DUE_MAX */
    PACK_E_COUNT = -7,     /* count over PACK_JOBS_MAX, or not the number of records */
    PACK_E_VARINT = -8,    /* not the shortest encoding, or over the field's range */
    PACK_E_DUE = -9,       /* outside the window */
    PACK_E_UID = -10,
    PACK_E_KEY = -11,
    PACK_E_SHARD = -12,    /* writer: a job with a shard (packed jobs have none) */
    PACK_E_FULL_JOBS = -13, /* writer: PACK_JOBS_MAX jobs already */
    PACK_E_FULL_BYTES = -14, /* writer: the job would take the pack past PACK_BYTES_MAX */
    PACK_E_SPACE = -15,    /* writer: the caller's buffer is too small */
    PACK_E_FINISHED = -16, /* writer: pack_finish was called */
    PACK_E_NOT_FOUND = -17,
};

/* The short name of a code ("checksum", "key", ...), for metrics and tests. */
const char *pack_strerror(int code);

/* CRC-32C (Castagnoli, reflected, init and final xor 0xffffffff): "123456789" -> e3069283. */
uint32_t pack_crc32c(const void *data, size_t len);
/* The same without the CPU's crc32 instruction (pack_crc32c uses it where there is one): for
 * the tests, which compare the two on any CPU. */
uint32_t pack_crc32c_portable(const void *data, size_t len);
/* N bytes (1..8) of V little-endian at P, as the pack's and the claim's formats store
 * numbers; and back. */
void pack_put_le(unsigned char *p, uint64_t v, int n);
uint64_t pack_get_le(const unsigned char *p, int n);

/* Bytes a job's record takes in a pack whose window starts at WINDOW_START (the job's due
 * time must not be before it). */
size_t pack_job_size(const struct job_name *jn, uint64_t window_start, size_t payload_len);
/* The largest payload that every job's record can carry in an empty pack, whatever its
 * due time, priority, attempts, ttr, uid and key. A payload over it must be stored some
 * other way (as a job znode of its own): it may fit no pack at all. Derived from the
 * record format, so the two cannot drift apart. */
size_t pack_payload_max(void);

struct pack_writer {
    unsigned char *buf;
    size_t cap, len;
    uint64_t window_start, window_width;
    uint32_t count;
    int finished;
    char err[PACK_ERR_MAX];
};

/* A pack of jobs due in [START, START + WIDTH) into BUF (CAP bytes, at least
 * PACK_EMPTY_SIZE). PACK_E_WINDOW or PACK_E_SPACE. */
int pack_writer_init(struct pack_writer *w, void *buf, size_t cap, uint64_t start,
                     uint64_t width);
/* A writer that goes on from a finished pack (DATA, LEN bytes, as read or written): checked
 * as pack_open checks it, copied into BUF (CAP bytes, at least LEN) without its trailer, so
 * that pack_add appends to its jobs without decoding them again. pack_finish then gives the
 * bytes a writer makes of all the jobs at once. DATA and BUF must not overlap. A pack
 * refused returns its pack_open code; PACK_E_SPACE. */
int pack_writer_resume(struct pack_writer *w, void *buf, size_t cap, const void *data,
                       size_t len);
/* Appends one job (JN's shard must be ""). On any error the pack is as it was: the caller
 * may finish it and put the job into the next. */
int pack_add(struct pack_writer *w, const struct job_name *jn, const void *payload,
             size_t payload_len);
/* Writes the count and the checksum; *SIZE is the pack's length in w->buf. */
int pack_finish(struct pack_writer *w, size_t *size);

struct pack_job {
    struct job_name name; /* shard "" */
    const unsigned char *payload; /* into the pack's bytes; not NUL-terminated */
    size_t payload_len;
    uint32_t index;       /* from 0, in the pack's order */
    size_t at, size;      /* the job's record within the pack */
};

struct pack_reader {
    const unsigned char *data;
    size_t len;
    uint64_t window_start, window_width;
    uint32_t count;
    size_t next_at; /* pack_next's place */
    uint32_t next_index;
    char err[PACK_ERR_MAX];
};

/* Checks the whole pack (header, size, checksum, every record, the count) before anything
 * is yielded: a pack is accepted whole or not at all. DATA must stay as it is while R and
 * the jobs it yields are used. */
int pack_open(struct pack_reader *r, const void *data, size_t len);
/* 1 and the next job, 0 after the last (then again from the first). */
int pack_next(struct pack_reader *r, struct pack_job *job);
/* The first job with UID: 0, or PACK_E_NOT_FOUND. */
int pack_find(struct pack_reader *r, const char *uid, struct pack_job *job);
/* The pack without the first job with UID, into OUT (CAP bytes; R's length is enough):
 * 0 and *SIZE, PACK_E_NOT_FOUND or PACK_E_SPACE. OUT must not overlap R's data. */
int pack_without(struct pack_reader *r, const char *uid, void *out, size_t cap, size_t *size);

#endif
