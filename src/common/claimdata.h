/* The claim codec (layout version 3, issue 43): the data of a claim node, the jobs one
 * daemon took out of their buckets in one transaction and holds for its consumers. Each
 * record is what puts the job back as it was: its path under the queue, the deliveries
 * counted under its name (this one included) and its payload. The byte format is
 * docs/zookeeper-layout.md, "Claims". Pure byte work, no allocation: the writer fills the
 * caller's buffer, the reader points into the caller's bytes. */
#ifndef DEFERD_CLAIMDATA_H
#define DEFERD_CLAIMDATA_H

#include <stddef.h>
#include <stdint.h>

#define CLAIM_MAGIC "DFCL"
#define CLAIM_FORMAT 1
#define CLAIM_HEADER_SIZE 9  /* magic 4, format 1, count 4 */
#define CLAIM_TRAILER_SIZE 4 /* CRC-32C of everything before it */
#define CLAIM_RECORD_FIXED 10 /* path length 2, deliveries 4, payload length 4 */
/* A claim node's bounds: a claim multi deletes up to CLAIM_JOBS_MAX jobs, and its data
 * stays well inside one ZooKeeper request (jute.maxbuffer, 1 MiB by default) next to
 * them. */
#define CLAIM_JOBS_MAX 128
#define CLAIM_BYTES_MAX (256 * 1024)
#define CLAIM_PATH_MAX 400

struct claim_record {
    const char *path;           /* under the queue's node: "jobs/<L1>/<L2>/<L3>[/<shard>]/<name>" */
    size_t path_len;
    uint32_t deliveries;        /* under its name, the claimed one included: at least 1 */
    const unsigned char *payload;
    size_t len;
};

enum claimdata_status {
    CLAIM_OK = 0,
    CLAIM_E_TRUNCATED = -1,
    CLAIM_E_MAGIC = -2,
    CLAIM_E_FORMAT = -3,
    CLAIM_E_CHECKSUM = -4,
    CLAIM_E_COUNT = -5,  /* over CLAIM_JOBS_MAX or the caller's room, or not the records */
    CLAIM_E_PATH = -6,   /* empty, over CLAIM_PATH_MAX, or not under jobs/ */
    CLAIM_E_SPACE = -7,  /* writer: the caller's buffer is too small */
    CLAIM_E_TOO_BIG = -8, /* over CLAIM_BYTES_MAX */
};

/* Bytes a record takes. */
size_t claimdata_record_size(size_t path_len, size_t payload_len);
/* Bytes the data of N records of TOTAL record bytes takes. */
size_t claimdata_size(size_t record_bytes);

/* Writes the N records into BUF (CAP bytes): the length, or a CLAIM_E_* code. */
long claimdata_write(void *buf, size_t cap, const struct claim_record *recs, uint32_t n);

/* The job's name, REC's path's last part, into NAME (CAP bytes): 0, or -1 when there is
 * none or it does not fit. */
int claimdata_job_name(const struct claim_record *rec, char *name, size_t cap);

/* PATH (CAP bytes), a claimed job's znode, made the name a recovery makes it again under
 * after DELIVERIES under its name: the same up to ATTEMPTS_REPLAY_MAX (they are replayed as
 * lock nodes), else with them added to its earlier attempts (a<N>); a name that is not
 * deferd's stays. 0, or -1 when the new name does not fit. */
int claimdata_remade_path(char *path, size_t cap, uint32_t deliveries);

/* The index of the record of RECS (N of them) whose path is REL, or -1. */
int claimdata_find(const struct claim_record *recs, uint32_t n, const char *rel);

/* Takes record AT out of RECS (*N of them, one fewer after): the bytes the data of those
 * left takes (claimdata_write's room). A forced cancel writes a claim without its job. */
size_t claimdata_drop(struct claim_record *recs, uint32_t *n, uint32_t at);

/* Reads DATA (LEN bytes) into RECS (room for MAX), pointing into DATA; *N gets the count.
 * CLAIM_OK or a code, with a one-line text in ERR. */
int claimdata_read(const void *data, size_t len, struct claim_record *recs, uint32_t max,
                   uint32_t *n, char *err, size_t errlen);

#endif
