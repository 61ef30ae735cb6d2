#include "pack.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#include "names.h"

enum { OFF_VERSION = 4, OFF_START = 5, OFF_WIDTH = 13, OFF_COUNT = 21 };

/* ---- bytes ---- */

/* CRC-32C: the CPU's crc32 instruction where there is one (x86-64 with SSE4.2), else
 * slicing-by-8 (eight bytes a step through eight tables). A whole pack is checked on every
 * read and write, so a slow checksum shows in the daemon's profile. */
static uint32_t crc_table[8][256];
static uint32_t (*crc_update)(uint32_t crc, const unsigned char *p, size_t len);

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t crc_sliced(uint32_t crc, const unsigned char *p, size_t len)
{
    const uint32_t(*t)[256] = (const uint32_t(*)[256])crc_table;
    for (; len >= 8; p += 8, len -= 8) {
        uint32_t lo = crc ^ le32(p), hi = le32(p + 4);
        crc = t[7][lo & 0xff] ^ t[6][lo >> 8 & 0xff] ^ t[5][lo >> 16 & 0xff] ^ t[4][lo >> 24] ^
              t[3][hi & 0xff] ^ t[2][hi >> 8 & 0xff] ^ t[1][hi >> 16 & 0xff] ^ t[0][hi >> 24];
    }
    while (len--)
        crc = crc >> 8 ^ t[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const unsigned char *p,
                                                            size_t len)
{
    uint64_t c = crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v;
        memcpy(&v, p, 8); /* unaligned is fine for crc32; little-endian, as the CRC reads */
        c = _mm_crc32_u64(c, v);
    }
    crc = (uint32_t)c;
    while (len--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
#endif

/* At load, before any thread: the tables are written once and only read after. */
__attribute__((constructor)) static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c >> 1 ^ (0x82f63b78u & -(c & 1));
        crc_table[0][i] = c;
    }
    for (int s = 1; s < 8; s++)
        for (int i = 0; i < 256; i++)
            crc_table[s][i] = crc_table[s - 1][i] >> 8 ^ crc_table[0][crc_table[s - 1][i] & 0xff];
    crc_update = crc_sliced;
#if defined(__x86_64__)
    __builtin_cpu_init(); /* a constructor runs before the CPU model is known otherwise */
    if (__builtin_cpu_supports("sse4.2"))
        crc_update = crc_sse42;
#endif
}

uint32_t pack_crc32c(const void *data, size_t len)
{
    return crc_update(0xffffffffu, data, len) ^ 0xffffffffu;
}

uint32_t pack_crc32c_portable(const void *data, size_t len)
{
    return crc_sliced(0xffffffffu, data, len) ^ 0xffffffffu;
}

void pack_put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t pack_get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Unsigned LEB128: 7 bits a byte, least significant first, high bit = more follow. */
static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
    for (; v >= 0x80; v >>= 7)
        *p++ = (unsigned char)(v | 0x80);
    *p++ = (unsigned char)v;
    return p;
}

struct cursor {
    const unsigned char *p;
    size_t at, end;
};

/* Only the shortest form is accepted, so that one job has exactly one encoding. */
static int get_varint(struct cursor *c, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0;; shift += 7) {
        if (c->at == c->end)
            return PACK_E_TRUNCATED;
        unsigned char b = c->p[c->at++];
        if (shift == 63 && b > 1)
            return PACK_E_VARINT; /* more than 64 bits */
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (b == 0 && shift > 0)
                return PACK_E_VARINT; /* a longer form than needed */
            *v = x;
            return 0;
        }
    }
}

/* ---- errors ---- */

const char *pack_strerror(int code)
{
    static const char *const names[] = {
        "ok", "truncated", "magic", "version", "too big", "checksum", "window", "count",
        "varint", "due", "uid", "key", "shard", "full (jobs)", "full (bytes)", "space",
        "finished", "not found"};
    return code <= 0 && -code < (int)(sizeof names / sizeof names[0]) ? names[-code]
                                                                       : "unknown";
}

static int fail(char *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int job_fail(char *err, uint32_t index, uint32_t of, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(char *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, PACK_ERR_MAX, fmt, ap);
    va_end(ap);
    return code;
}

/* "pack: job N of M: ..." (N from 1; M = 0 leaves "of M" out, for the writer). */
static int job_fail(char *err, uint32_t index, uint32_t of, int code, const char *fmt, ...)
{
    int n = of ? snprintf(err, PACK_ERR_MAX, "pack: job %u of %u: ", index + 1, of)
               : snprintf(err, PACK_ERR_MAX, "pack: job %u: ", index + 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, PACK_ERR_MAX - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}

/* ---- writer ---- */

size_t pack_job_size(const struct job_name *jn, uint64_t window_start, size_t payload_len)
{
    return varint_len(jn->due_ms - window_start) + varint_len(jn->priority) +
           varint_len(jn->prior_attempts) + varint_len(jn->ttr_ms) + 1 +
           strnlen(jn->uid, sizeof jn->uid) + 1 + strnlen(jn->key, sizeof jn->key) +
           varint_len(payload_len) + payload_len;
}

size_t pack_payload_max(void)
{
    /* the longest varints of the four numbers, the longest uid and key with their length
     * bytes, and the payload's length as a varint of the largest pack */
    size_t fixed = varint_len(UINT64_MAX) + 3 * varint_len(UINT32_MAX) + 1 + LAYOUT_UID_MAX +
                   1 + LAYOUT_KEY_MAX + varint_len(PACK_BYTES_MAX);
    return PACK_BYTES_MAX - PACK_EMPTY_SIZE - fixed;
}

static int window_valid(uint64_t start, uint64_t width)
{
    return width > 0 && start <= LAYOUT_DUE_MAX && width - 1 <= LAYOUT_DUE_MAX - start;
}

int pack_writer_init(struct pack_writer *w, void *buf, size_t cap, uint64_t start,
                     uint64_t width)
{
    memset(w, 0, sizeof *w);
    if (!window_valid(start, width))
        return fail(w->err, PACK_E_WINDOW, "pack: window of %llu ms from %llu is not valid",
                    (unsigned long long)width, (unsigned long long)start);
    if (cap < PACK_EMPTY_SIZE)
        return fail(w->err, PACK_E_SPACE, "pack: a buffer of %zu bytes holds no pack", cap);
    w->buf = buf;
    w->cap = cap < PACK_BYTES_MAX ? cap : PACK_BYTES_MAX;
    w->window_start = start;
    w->window_width = width;
    memcpy(w->buf, PACK_MAGIC, 4);
    w->buf[OFF_VERSION] = PACK_VERSION;
    pack_put_le(w->buf + OFF_START, start, 8);
    pack_put_le(w->buf + OFF_WIDTH, width, 8);
    pack_put_le(w->buf + OFF_COUNT, 0, 4);
    w->len = PACK_HEADER_SIZE;
    return 0;
}

int pack_writer_resume(struct pack_writer *w, void *buf, size_t cap, const void *data,
                       size_t len)
{
    struct pack_reader r;
    memset(w, 0, sizeof *w);
    w->finished = 1; /* until it holds the pack: pack_add and pack_finish refuse */
    int rc = pack_open(&r, data, len);
    if (rc)
        return fail(w->err, rc, "%s", r.err);
    if (cap < len)
        return fail(w->err, PACK_E_SPACE, "pack: %zu bytes do not fit the buffer of %zu", len,
                    cap);
    if ((rc = pack_writer_init(w, buf, cap, r.window_start, r.window_width)))
        return rc;
    w->len = len - PACK_TRAILER_SIZE;
    w->count = r.count;
    memcpy(w->buf, data, w->len);
    return 0;
}

/* The rules of a job name (layout.h), the window's, and no shard. */
static int check_job(struct pack_writer *w, const struct job_name *jn)
{
    uint32_t i = w->count;
    if (jn->due_ms < w->window_start || jn->due_ms - w->window_start >= w->window_width)
        return job_fail(w->err, i, 0, PACK_E_DUE, "due %llu outside the window [%llu, +%llu)",
                        (unsigned long long)jn->due_ms, (unsigned long long)w->window_start,
                        (unsigned long long)w->window_width);
    if (strnlen(jn->uid, sizeof jn->uid) > LAYOUT_UID_MAX || !layout_valid_uid(jn->uid))
        return job_fail(w->err, i, 0, PACK_E_UID, "uid not 1-32 of [0-9a-z]");
    if (strnlen(jn->key, sizeof jn->key) > LAYOUT_KEY_MAX ||
        (jn->key[0] && !names_valid_key(jn->key)))
        return job_fail(w->err, i, 0, PACK_E_KEY, "key not a valid key");
    if (jn->shard[0])
        return job_fail(w->err, i, 0, PACK_E_SHARD, "a packed job has no shard");
    return 0;
}

static void write_record(struct pack_writer *w, const struct job_name *jn,
                         const void *payload, size_t payload_len)
{
    unsigned char *p = w->buf + w->len;
    size_t ulen = strlen(jn->uid), klen = strlen(jn->key);
    p = put_varint(p, jn->due_ms - w->window_start);
    p = put_varint(p, jn->priority);
    p = put_varint(p, jn->prior_attempts);
    p = put_varint(p, jn->ttr_ms);
    *p++ = (unsigned char)ulen;
    memcpy(p, jn->uid, ulen);
    p += ulen;
    *p++ = (unsigned char)klen;
    memcpy(p, jn->key, klen);
    p += klen;
    p = put_varint(p, payload_len);
    if (payload_len)
        memcpy(p, payload, payload_len);
    w->len = (size_t)(p + payload_len - w->buf);
    w->count++;
}

int pack_add(struct pack_writer *w, const struct job_name *jn, const void *payload,
             size_t payload_len)
{
    if (w->finished)
        return fail(w->err, PACK_E_FINISHED, "pack: already finished");
    int rc = check_job(w, jn);
    if (rc)
        return rc;
    if (w->count == PACK_JOBS_MAX)
        return job_fail(w->err, w->count, 0, PACK_E_FULL_JOBS, "the pack holds %u jobs already",
                        PACK_JOBS_MAX);
    size_t size = payload_len <= PACK_BYTES_MAX
                      ? pack_job_size(jn, w->window_start, payload_len) : PACK_BYTES_MAX;
    if (size > PACK_BYTES_MAX - PACK_TRAILER_SIZE - w->len)
        return job_fail(w->err, w->count, 0, PACK_E_FULL_BYTES,
                        "%zu more bytes take the pack of %zu past %d", size, w->len,
                        PACK_BYTES_MAX);
    if (size > w->cap - PACK_TRAILER_SIZE - w->len)
        return job_fail(w->err, w->count, 0, PACK_E_SPACE,
                        "%zu more bytes do not fit the buffer of %zu", size, w->cap);
    write_record(w, jn, payload, payload_len);
    return 0;
}

int pack_finish(struct pack_writer *w, size_t *size)
{
    if (w->finished)
        return fail(w->err, PACK_E_FINISHED, "pack: already finished");
    pack_put_le(w->buf + OFF_COUNT, w->count, 4);
    pack_put_le(w->buf + w->len, pack_crc32c(w->buf, w->len), 4);
    w->len += PACK_TRAILER_SIZE;
    w->finished = 1;
    *size = w->len;
    return 0;
}

/* ---- reader ---- */

/* Magic, version, size and checksum: what says whose bytes these are, before any field. */
static int read_frame(struct pack_reader *r)
{
    const unsigned char *d = r->data;
    size_t n = r->len < 4 ? r->len : 4;
    if (memcmp(d, PACK_MAGIC, n) != 0)
        return fail(r->err, PACK_E_MAGIC, "pack: starts %02x %02x %02x %02x, not \"" PACK_MAGIC
                    "\": not a pack", d[0], n > 1 ? d[1] : 0, n > 2 ? d[2] : 0, n > 3 ? d[3] : 0);
    if (r->len > OFF_VERSION && d[OFF_VERSION] != PACK_VERSION)
        return fail(r->err, PACK_E_VERSION, "pack: format version %u, this reader knows %d",
                    d[OFF_VERSION], PACK_VERSION);
    if (r->len < PACK_EMPTY_SIZE)
        return fail(r->err, PACK_E_TRUNCATED, "pack: %zu bytes, shorter than an empty pack (%d)",
                    r->len, PACK_EMPTY_SIZE);
    if (r->len > PACK_BYTES_MAX)
        return fail(r->err, PACK_E_TOO_BIG, "pack: %zu bytes, over %d", r->len, PACK_BYTES_MAX);
    size_t body = r->len - PACK_TRAILER_SIZE;
    uint32_t want = (uint32_t)pack_get_le(d + body, 4), got = pack_crc32c(d, body);
    if (want != got)
        return fail(r->err, PACK_E_CHECKSUM, "pack: checksum %08x, the bytes give %08x", want,
                    got);
    return 0;
}

static int read_header(struct pack_reader *r)
{
    int rc = read_frame(r);
    if (rc)
        return rc;
    r->window_start = pack_get_le(r->data + OFF_START, 8);
    r->window_width = pack_get_le(r->data + OFF_WIDTH, 8);
    r->count = (uint32_t)pack_get_le(r->data + OFF_COUNT, 4);
    if (!window_valid(r->window_start, r->window_width))
        return fail(r->err, PACK_E_WINDOW, "pack: window of %llu ms from %llu is not valid",
                    (unsigned long long)r->window_width, (unsigned long long)r->window_start);
    if (r->count > PACK_JOBS_MAX)
        return fail(r->err, PACK_E_COUNT, "pack: count %u over %d", r->count, PACK_JOBS_MAX);
    return 0;
}

/* A varint field of job INDEX no larger than MAX (else the error OVER). */
static int read_num(struct pack_reader *r, struct cursor *c, uint32_t index, const char *field,
                    uint64_t max, int over, uint64_t *v)
{
    int rc = get_varint(c, v);
    if (rc == PACK_E_TRUNCATED)
        return job_fail(r->err, index, r->count, rc, "%s runs past the end", field);
    if (rc)
        return job_fail(r->err, index, r->count, rc, "%s not a shortest varint of 64 bits", field);
    if (*v > max)
        return job_fail(r->err, index, r->count, over, "%s %llu over %llu", field,
                        (unsigned long long)*v, (unsigned long long)max);
    return 0;
}

/* A length byte (MIN..MAX, else the error BAD) and that many bytes, NUL-terminated in OUT. */
static int read_text(struct pack_reader *r, struct cursor *c, uint32_t index, const char *field,
                     size_t min, size_t max, int bad, char *out)
{
    if (c->at == c->end)
        return job_fail(r->err, index, r->count, PACK_E_TRUNCATED, "%s runs past the end", field);
    size_t n = c->p[c->at++];
    if (n < min || n > max)
        return job_fail(r->err, index, r->count, bad, "%s length %zu not %zu-%zu", field, n, min,
                        max);
    if (n > c->end - c->at)
        return job_fail(r->err, index, r->count, PACK_E_TRUNCATED, "%s runs past the end", field);
    if (memchr(c->p + c->at, '\0', n)) /* the checks below stop at a NUL */
        return job_fail(r->err, index, r->count, bad, "%s holds a NUL byte", field);
    memcpy(out, c->p + c->at, n);
    out[n] = '\0';
    c->at += n;
    return 0;
}

static int read_names(struct pack_reader *r, struct cursor *c, uint32_t index,
                      struct job_name *jn)
{
    int rc = read_text(r, c, index, "uid", 1, LAYOUT_UID_MAX, PACK_E_UID, jn->uid);
    if (rc)
        return rc;
    if (!layout_valid_uid(jn->uid))
        return job_fail(r->err, index, r->count, PACK_E_UID, "uid \"%s\" not [0-9a-z]", jn->uid);
    if ((rc = read_text(r, c, index, "key", 0, LAYOUT_KEY_MAX, PACK_E_KEY, jn->key)))
        return rc;
    if (jn->key[0] && !names_valid_key(jn->key))
        return job_fail(r->err, index, r->count, PACK_E_KEY, "key \"%s\" not a valid key",
                        jn->key);
    return 0;
}

/* Job INDEX's record at AT, every field checked. */
static int read_record(struct pack_reader *r, size_t at, uint32_t index, struct pack_job *job)
{
    struct cursor c = {r->data, at, r->len - PACK_TRAILER_SIZE};
    uint64_t due, prio, attempts, ttr, plen;
    int rc;
    memset(job, 0, sizeof *job);
    if ((rc = read_num(r, &c, index, "due offset", r->window_width - 1, PACK_E_DUE, &due)) ||
        (rc = read_num(r, &c, index, "priority", UINT32_MAX, PACK_E_VARINT, &prio)) ||
        (rc = read_num(r, &c, index, "attempts", UINT32_MAX, PACK_E_VARINT, &attempts)) ||
        (rc = read_num(r, &c, index, "ttr", UINT32_MAX, PACK_E_VARINT, &ttr)) ||
        (rc = read_names(r, &c, index, &job->name)) ||
        (rc = read_num(r, &c, index, "payload length", UINT64_MAX, 0, &plen)))
        return rc;
    if (plen > c.end - c.at)
        return job_fail(r->err, index, r->count, PACK_E_TRUNCATED,
                        "payload length %llu over the %zu bytes left", (unsigned long long)plen,
                        c.end - c.at);
    job->name.due_ms = r->window_start + due;
    job->name.priority = (uint32_t)prio;
    job->name.prior_attempts = (uint32_t)attempts;
    job->name.ttr_ms = (uint32_t)ttr;
    job->payload = r->data + c.at;
    job->payload_len = (size_t)plen;
    job->index = index;
    job->at = at;
    job->size = c.at + (size_t)plen - at;
    return 0;
}

static int walk(struct pack_reader *r)
{
    size_t at = PACK_HEADER_SIZE, end = r->len - PACK_TRAILER_SIZE;
    for (uint32_t i = 0; i < r->count; i++) {
        struct pack_job job;
        if (at == end)
            return fail(r->err, PACK_E_COUNT, "pack: count %u, but the records end after %u",
                        r->count, i);
        int rc = read_record(r, at, i, &job);
        if (rc)
            return rc;
        at += job.size;
    }
    if (at != end)
        return fail(r->err, PACK_E_COUNT, "pack: count %u, but %zu bytes follow the last",
                    r->count, end - at);
    return 0;
}

int pack_open(struct pack_reader *r, const void *data, size_t len)
{
    memset(r, 0, sizeof *r);
    r->data = data;
    r->len = len;
    int rc = read_header(r);
    if (rc == 0)
        rc = walk(r);
    r->next_at = PACK_HEADER_SIZE;
    if (rc)
        r->count = 0; /* pack_next, pack_find yield nothing of a pack refused */
    return rc;
}

int pack_next(struct pack_reader *r, struct pack_job *job)
{
    if (r->next_index == r->count) {
        r->next_index = 0;
        r->next_at = PACK_HEADER_SIZE;
        return 0;
    }
    int rc = read_record(r, r->next_at, r->next_index, job);
    if (rc)
        return rc; /* not for a pack pack_open accepted */
    r->next_at += job->size;
    r->next_index++;
    return 1;
}

int pack_find(struct pack_reader *r, const char *uid, struct pack_job *job)
{
    size_t at = PACK_HEADER_SIZE;
    for (uint32_t i = 0; i < r->count; i++) {
        int rc = read_record(r, at, i, job);
        if (rc)
            return rc;
        if (strcmp(job->name.uid, uid) == 0)
            return 0;
        at += job->size;
    }
    return fail(r->err, PACK_E_NOT_FOUND, "pack: no job with uid %.*s", LAYOUT_UID_MAX, uid);
}

/* Records do not depend on their place (due times are relative to the window, which stays):
 * the rest is copied as it is. */
int pack_without(struct pack_reader *r, const char *uid, void *out, size_t cap, size_t *size)
{
    struct pack_job job;
    int rc = pack_find(r, uid, &job);
    if (rc)
        return rc;
    size_t n = r->len - job.size, after = job.at + job.size;
    if (cap < n)
        return fail(r->err, PACK_E_SPACE, "pack: %zu bytes do not fit the buffer of %zu", n, cap);
    unsigned char *o = out;
    memcpy(o, r->data, job.at);
    memcpy(o + job.at, r->data + after, r->len - PACK_TRAILER_SIZE - after);
    pack_put_le(o + OFF_COUNT, r->count - 1, 4);
    pack_put_le(o + n - PACK_TRAILER_SIZE, pack_crc32c(o, n - PACK_TRAILER_SIZE), 4);
    *size = n;
    return 0;
}
