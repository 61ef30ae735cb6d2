#include "claimdata.h"

#include <stdio.h>
#include <string.h>

#include "attempts.h"
#include "layout.h"
#include "pack.h" /* pack_crc32c, pack_put_le, pack_get_le */


size_t claimdata_record_size(size_t path_len, size_t payload_len)
{
    return CLAIM_RECORD_FIXED + path_len + payload_len;
}

size_t claimdata_size(size_t record_bytes)
{
    return CLAIM_HEADER_SIZE + record_bytes + CLAIM_TRAILER_SIZE;
}

/* A record's path names a job under the queue's jobs/ directory, nothing above it. */
static int path_valid(const char *path, size_t len)
{
    if (len <= 5 || len > CLAIM_PATH_MAX || memcmp(path, "jobs/", 5) != 0 ||
        path[len - 1] == '/' || memchr(path, '\0', len))
        return 0;
    for (size_t i = 0; i + 1 < len; i++)
        if (path[i] == '/' && (path[i + 1] == '/' || path[i + 1] == '.'))
            return 0;
    return 1;
}

long claimdata_write(void *buf, size_t cap, const struct claim_record *recs, uint32_t n)
{
    size_t bytes = 0;
    if (n > CLAIM_JOBS_MAX)
        return CLAIM_E_COUNT;
    for (uint32_t i = 0; i < n; i++) {
        if (!path_valid(recs[i].path, recs[i].path_len) || recs[i].deliveries == 0)
            return CLAIM_E_PATH;
        bytes += claimdata_record_size(recs[i].path_len, recs[i].len);
    }
    size_t total = claimdata_size(bytes);
    if (total > CLAIM_BYTES_MAX)
        return CLAIM_E_TOO_BIG;
    if (total > cap)
        return CLAIM_E_SPACE;
    unsigned char *p = buf;
    memcpy(p, CLAIM_MAGIC, 4);
    p[4] = CLAIM_FORMAT;
    pack_put_le(p + 5, n, 4);
    p += CLAIM_HEADER_SIZE;
    for (uint32_t i = 0; i < n; i++) {
        pack_put_le(p, (uint32_t)recs[i].path_len, 2);
        memcpy(p + 2, recs[i].path, recs[i].path_len);
        p += 2 + recs[i].path_len;
        pack_put_le(p, recs[i].deliveries, 4);
        pack_put_le(p + 4, (uint32_t)recs[i].len, 4);
        if (recs[i].len)
            memcpy(p + 8, recs[i].payload, recs[i].len);
        p += 8 + recs[i].len;
    }
    pack_put_le(p, pack_crc32c(buf, (size_t)(p - (unsigned char *)buf)), 4);
    return (long)total;
}

static int fail(char *err, size_t errlen, int code, const char *what)
{
    if (err && errlen)
        snprintf(err, errlen, "claim data: %s", what);
    return code;
}

/* One record at *AT (LEFT bytes before the trailer); moves past it. */
static int read_record(const unsigned char **at, size_t *left, struct claim_record *r)
{
    const unsigned char *p = *at;
    if (*left < 2)
        return CLAIM_E_TRUNCATED;
    size_t plen = (uint32_t)pack_get_le(p, 2);
    if (*left < CLAIM_RECORD_FIXED + plen)
        return CLAIM_E_TRUNCATED;
    r->path = (const char *)p + 2;
    r->path_len = plen;
    r->deliveries = (uint32_t)pack_get_le(p + 2 + plen, 4);
    r->len = (uint32_t)pack_get_le(p + 6 + plen, 4);
    if (*left - CLAIM_RECORD_FIXED - plen < r->len)
        return CLAIM_E_TRUNCATED;
    r->payload = p + CLAIM_RECORD_FIXED + plen;
    if (!path_valid(r->path, plen) || r->deliveries == 0)
        return CLAIM_E_PATH;
    size_t used = CLAIM_RECORD_FIXED + plen + r->len;
    *at += used;
    *left -= used;
    return CLAIM_OK;
}

int claimdata_read(const void *data, size_t len, struct claim_record *recs, uint32_t max,
                   uint32_t *n, char *err, size_t errlen)
{
    const unsigned char *p = data;
    *n = 0;
    if (len < CLAIM_HEADER_SIZE + CLAIM_TRAILER_SIZE)
        return fail(err, errlen, CLAIM_E_TRUNCATED, "shorter than a header");
    if (memcmp(p, CLAIM_MAGIC, 4) != 0)
        return fail(err, errlen, CLAIM_E_MAGIC, "not a claim (no DFCL magic)");
    if (p[4] != CLAIM_FORMAT)
        return fail(err, errlen, CLAIM_E_FORMAT, "a format this reader does not know");
    if (len > CLAIM_BYTES_MAX)
        return fail(err, errlen, CLAIM_E_TOO_BIG, "over its size bound");
    size_t body = len - CLAIM_TRAILER_SIZE;
    if (pack_get_le(p + body, 4) != pack_crc32c(p, body))
        return fail(err, errlen, CLAIM_E_CHECKSUM, "checksum mismatch");
    uint32_t count = (uint32_t)pack_get_le(p + 5, 4);
    if (count > CLAIM_JOBS_MAX || count > max)
        return fail(err, errlen, CLAIM_E_COUNT, "more records than a claim holds");
    const unsigned char *at = p + CLAIM_HEADER_SIZE;
    size_t left = len - CLAIM_HEADER_SIZE - CLAIM_TRAILER_SIZE;
    for (uint32_t i = 0; i < count; i++) {
        int rc = read_record(&at, &left, &recs[i]);
        if (rc != CLAIM_OK)
            return fail(err, errlen, rc, rc == CLAIM_E_PATH ? "a record's path or count is "
                        "invalid" : "a record runs past the end");
    }
    if (left)
        return fail(err, errlen, CLAIM_E_COUNT, "bytes after the last record");
    *n = count;
    return CLAIM_OK;
}

int claimdata_job_name(const struct claim_record *rec, char *name, size_t cap)
{
    const char *slash = memrchr(rec->path, '/', rec->path_len);
    size_t len = slash ? rec->path_len - (size_t)(slash + 1 - rec->path) : 0;
    if (!len || len >= cap)
        return -1;
    memcpy(name, slash + 1, len);
    name[len] = '\0';
    return 0;
}

int claimdata_remade_path(char *path, size_t cap, uint32_t deliveries)
{
    if (deliveries <= ATTEMPTS_REPLAY_MAX)
        return 0;
    char *slash = strrchr(path, '/'), name[LAYOUT_NAME_MAX + 1];
    struct job_name jn;
    if (!slash || strlen(slash + 1) >= sizeof name)
        return 0; /* not a name of ours: made again as it was */
    strcpy(name, slash + 1);
    if (layout_parse_name(name, &jn) != 0)
        return 0;
    jn.prior_attempts += deliveries;
    if (layout_format_name(&jn, name, sizeof name) != 0 ||
        (size_t)(slash + 1 - path) + strlen(name) >= cap)
        return -1;
    strcpy(slash + 1, name);
    return 0;
}

int claimdata_find(const struct claim_record *recs, uint32_t n, const char *rel)
{
    size_t len = strlen(rel);
    for (uint32_t i = 0; i < n; i++)
        if (recs[i].path_len == len && memcmp(recs[i].path, rel, len) == 0)
            return (int)i;
    return -1;
}

size_t claimdata_drop(struct claim_record *recs, uint32_t *n, uint32_t at)
{
    size_t bytes = 0;
    memmove(&recs[at], &recs[at + 1], (*n - at - 1) * sizeof recs[0]);
    (*n)--;
    for (uint32_t i = 0; i < *n; i++)
        bytes += claimdata_record_size(recs[i].path_len, recs[i].len);
    return claimdata_size(bytes);
}
