#include "layout.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "units.h"

const uint64_t layout_bucket_width[LAYOUT_DEPTH + 1] = {0, 10000000, 100000, 100};

/* Appending to BUF (LEN bytes, always NUL-terminated) at *N without snprintf: these build
 * every job's path, name and id, several times a put, and snprintf was a third of deferd's
 * instructions per put (issue 43, callgrind). *N becomes -1 once a part does not fit, and
 * every later part leaves it so. */
static void add_str(char *buf, size_t len, int *n, const char *s)
{
    if (*n < 0)
        return;
    size_t k = strlen(s);
    if ((size_t)*n + k >= len) {
        *n = -1;
        return;
    }
    memcpy(buf + *n, s, k + 1);
    *n += (int)k;
}

static void add_u64(char *buf, size_t len, int *n, uint64_t v)
{
    char digits[21];
    int i = (int)sizeof digits - 1;
    digits[i] = '\0';
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    add_str(buf, len, n, digits + i);
}

/* BUF = the strings given, up to a NULL: -1 when they do not fit in LEN. */
static int join(char *buf, size_t len, const char *a, const char *b, const char *c,
                const char *d)
{
    int n = len ? 0 : -1;
    const char *parts[] = {a, b, c, d};
    for (size_t i = 0; i < 4 && parts[i]; i++)
        add_str(buf, len, &n, parts[i]);
    return n;
}

/* Canonical decimal: digits only, no leading zero unless the number is 0. */
static int parse_canonical(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    char tmp[24];
    if (n == 0 || n >= sizeof tmp || (n > 1 && s[0] == '0'))
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    return units_parse_u64(tmp, max, out);
}

int layout_valid_shard(const char *name)
{
    size_t n = strlen(name);
    return n >= 2 && n <= LAYOUT_SHARD_MAX && name[0] == 's' &&
           strspn(name + 1, "0123456789abcdefghijklmnopqrstuvwxyz-") == n - 1;
}

int layout_valid_uid(const char *uid)
{
    size_t n = strlen(uid);
    return n >= 1 && n <= LAYOUT_UID_MAX &&
           strspn(uid, "0123456789abcdefghijklmnopqrstuvwxyz") == n;
}

/* The key field "-k<key>" comes last and may hold dashes: split it off first. */
static const char *split_key(const char *name, struct job_name *out, size_t *base_len)
{
    const char *p = name;
    *base_len = strlen(name);
    for (int field = 0; (p = strchr(p, '-')); field++) {
        p++;
        if (field >= 2 && *p == 'k') {
            size_t n = strlen(p + 1);
            if (n > LAYOUT_KEY_MAX)
                return NULL;
            memcpy(out->key, p + 1, n + 1);
            *base_len = (size_t)(p - 1 - name);
            return names_valid_key(out->key) ? name : NULL;
        }
    }
    return name;
}

/* "g<group>", '~' standing for '-'. */
static int parse_group(const char *f, size_t len, struct job_name *out)
{
    if (len < 2 || len - 1 > LAYOUT_GROUP_MAX)
        return -1;
    for (size_t i = 1; i < len; i++)
        out->group[i - 1] = f[i] == '~' ? '-' : f[i];
    out->group[len - 1] = '\0';
    return names_valid_group(out->group) ? 0 : -1;
}

/* "r<acked>.<dead>": a released on=complete parent's children (names.c has the rule, which
 * libdeferd shares). */
static int parse_results(const char *f, size_t len, struct job_name *out)
{
    if (len < 2 || names_parse_results(f + 1, &out->flow_acked, &out->flow_dead) != f + len)
        return -1;
    out->has_results = 1;
    return 0;
}

/* Optional tagged fields after the uid, in this order: c (short bucket names),
 * a<prior attempts>, t<ttr ms>, g<group>, f<flow>, r<results>. */
static int parse_tags(const char *const *f, const size_t *len, size_t nf, struct job_name *out)
{
    static const char order[] = "catgfr";
    size_t next = 0;
    for (size_t i = 3; i < nf; i++) {
        const char *pos = len[i] ? strchr(order + next, f[i][0]) : NULL;
        uint64_t v;
        if (pos && *pos == 'c') {
            if (len[i] != 1)
                return -1;
            out->short_buckets = 1;
            next = (size_t)(pos - order) + 1;
            continue;
        }
        if (pos && *pos == 'r') {
            if (parse_results(f[i], len[i], out) != 0)
                return -1;
            next = (size_t)(pos - order) + 1;
            continue;
        }
        if (pos && *pos == 'f') { /* the flow it is a child of: its parent's uid */
            if (len[i] < 2 || len[i] - 1 > LAYOUT_UID_MAX)
                return -1;
            memcpy(out->flow, f[i] + 1, len[i] - 1);
            out->flow[len[i] - 1] = '\0';
            if (!layout_valid_uid(out->flow))
                return -1;
            next = (size_t)(pos - order) + 1;
            continue;
        }
        if (pos && *pos == 'g') {
            if (parse_group(f[i], len[i], out) != 0)
                return -1;
            next = (size_t)(pos - order) + 1;
            continue;
        }
        if (!pos || parse_canonical(f[i] + 1, len[i] - 1, UINT32_MAX, &v) != 0 || v == 0)
            return -1;
        if (*pos == 'a')
            out->prior_attempts = (uint32_t)v;
        else
            out->ttr_ms = (uint32_t)v;
        next = (size_t)(pos - order) + 1;
    }
    return 0;
}

/* A name without the c field keeps the limit it had before the field (150 bytes), so
 * that no full-form name is one an older daemon refuses; with it, 2 bytes more. */
static size_t name_limit(const struct job_name *jn)
{
    return LAYOUT_NAME_MAX - (jn->short_buckets ? 0 : 2);
}

int layout_parse_name(const char *name, struct job_name *out)
{
    enum { MAXF = 9 }; /* due, priority, uid, c, a, t, g, f, r: the key is split off first */
    const char *f[MAXF];
    size_t len[MAXF], nf = 0, base_len;
    char base[LAYOUT_NAME_MAX + 1];
    const char *p = base;
    memset(out, 0, sizeof *out);
    if (strlen(name) > LAYOUT_NAME_MAX || !split_key(name, out, &base_len))
        return -1;
    memcpy(base, name, base_len);
    base[base_len] = '\0';
    for (;;) {
        const char *dash = strchr(p, '-');
        if (nf == MAXF)
            return -1;
        f[nf] = p;
        len[nf++] = dash ? (size_t)(dash - p) : strlen(p);
        if (!dash)
            break;
        p = dash + 1;
    }
    uint64_t due, prio;
    if (nf < 3 || parse_canonical(f[0], len[0], LAYOUT_DUE_MAX, &due) != 0 ||
        parse_canonical(f[1], len[1], UINT32_MAX, &prio) != 0 || len[2] > LAYOUT_UID_MAX ||
        parse_tags(f, len, nf, out) != 0)
        return -1;
    memcpy(out->uid, f[2], len[2]);
    out->uid[len[2]] = '\0';
    if (!layout_valid_uid(out->uid))
        return -1;
    out->due_ms = due;
    out->priority = (uint32_t)prio;
    return strlen(name) <= name_limit(out) ? 0 : -1;
}

int layout_format_name(const struct job_name *jn, char *buf, size_t len)
{
    if (jn->due_ms > LAYOUT_DUE_MAX || !layout_valid_uid(jn->uid))
        return -1;
    if ((jn->group[0] && !names_valid_group(jn->group)) ||
        (jn->flow[0] && !layout_valid_uid(jn->flow)) || (jn->key[0] && !names_valid_key(jn->key)))
        return -1;
    int n = len ? 0 : -1;
    add_u64(buf, len, &n, jn->due_ms);
    add_str(buf, len, &n, "-");
    add_u64(buf, len, &n, jn->priority);
    add_str(buf, len, &n, "-");
    add_str(buf, len, &n, jn->uid);
    if (jn->short_buckets)
        add_str(buf, len, &n, "-c");
    if (jn->prior_attempts) {
        add_str(buf, len, &n, "-a");
        add_u64(buf, len, &n, jn->prior_attempts);
    }
    if (jn->ttr_ms) {
        add_str(buf, len, &n, "-t");
        add_u64(buf, len, &n, jn->ttr_ms);
    }
    if (jn->group[0]) {
        add_str(buf, len, &n, "-g");
        size_t at = (size_t)n;
        add_str(buf, len, &n, jn->group);
        for (char *g = n >= 0 ? buf + at : NULL; g && *g; g++)
            *g = *g == '-' ? '~' : *g;
    }
    if (jn->flow[0]) {
        add_str(buf, len, &n, "-f");
        add_str(buf, len, &n, jn->flow);
    }
    if (jn->has_results) {
        add_str(buf, len, &n, "-r");
        add_u64(buf, len, &n, jn->flow_acked);
        add_str(buf, len, &n, ".");
        add_u64(buf, len, &n, jn->flow_dead);
    }
    if (jn->key[0]) {
        add_str(buf, len, &n, "-k");
        add_str(buf, len, &n, jn->key);
    }
    return n > 0 && (size_t)n <= name_limit(jn) ? 0 : -1;
}

uint64_t layout_bucket_of(uint64_t due_ms, int level)
{
    return due_ms / layout_bucket_width[level];
}

/* How many buckets of LEVEL one bucket of the level above holds: 100 or 1000. */
static uint64_t buckets_per_parent(int level)
{
    return layout_bucket_width[level - 1] / layout_bucket_width[level];
}

int layout_parse_bucket(const char *child, int level, uint64_t parent, uint64_t *value)
{
    uint64_t v;
    if (level < 1 || level > LAYOUT_DEPTH ||
        parse_canonical(child, strlen(child), LAYOUT_DUE_MAX / layout_bucket_width[level], &v))
        return -1;
    if (level == 1 || parent == 0) { /* "38" under "0" is the full form's name too */
        if (level > 1 && v >= buckets_per_parent(level))
            return -1;
        *value = v;
        return LAYOUT_FORM_EITHER;
    }
    uint64_t per = buckets_per_parent(level);
    if (v < per) { /* the full form's names under PARENT are PARENT * per and more */
        *value = parent * per + v;
        return LAYOUT_FORM_SHORT;
    }
    if (v / per != parent)
        return -1;
    *value = v;
    return LAYOUT_FORM_FULL;
}

int layout_form_join(int parent, int child)
{
    if (parent == LAYOUT_FORM_EITHER || child == LAYOUT_FORM_EITHER)
        return parent == LAYOUT_FORM_EITHER ? child : parent;
    return parent == child ? parent : -1;
}

int layout_job_in_bucket(const struct job_name *jn, uint64_t leaf, int form)
{
    if (layout_bucket_of(jn->due_ms, LAYOUT_DEPTH) != leaf)
        return 0;
    return form == LAYOUT_FORM_EITHER || (form == LAYOUT_FORM_SHORT) == !!jn->short_buckets;
}

/* "/PART" after the N bytes of BUF already written, if PART; the new length or -1. */
static int add_part(char *buf, size_t len, int n, const char *part)
{
    if (n < 0 || !part)
        return n;
    add_str(buf, len, &n, "/");
    add_str(buf, len, &n, part);
    return n;
}

int layout_root_path(char *buf, size_t len, const char *root, const char *node,
                     const char *child)
{
    int n = join(buf, len, root, NULL, NULL, NULL);
    return add_part(buf, len, add_part(buf, len, n, node), child) < 0 ? -1 : 0;
}

int layout_queue_path(char *buf, size_t len, const char *root, const char *queue,
                      const char *node, const char *child)
{
    int n = layout_root_path(buf, len, root, LAYOUT_QUEUES, queue) == 0 ? (int)strlen(buf) : -1;
    n = queue ? add_part(buf, len, n, node) : n;
    n = queue && node ? add_part(buf, len, n, child) : n;
    return n < 0 ? -1 : 0;
}

/* <root>/queues/<queue>/<node>/<dir>/<name> */
static int node_path(char *buf, size_t len, const char *root, const char *queue,
                     const char *node, const char *dir, const char *name)
{
    int n = layout_queue_path(buf, len, root, queue, node, dir) == 0 ? (int)strlen(buf) : -1;
    return add_part(buf, len, n, name) < 0 ? -1 : 0;
}

/* ...with a numbered directory: a bucket, a minute. */
static int numbered_path(char *buf, size_t len, const char *root, const char *queue,
                         const char *node, uint64_t dir, const char *name)
{
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)dir);
    return node_path(buf, len, root, queue, node, num, name);
}

int layout_queue_of(const char *path, const char *root, const char *node, char *queue,
                    size_t qlen)
{
    static const char mid[] = "/" LAYOUT_QUEUES "/";
    size_t rlen = strlen(root), nlen = strlen(node), plen = strlen(path);
    size_t at = rlen + sizeof mid - 1; /* where the queue's name begins */
    if (plen < at + 2 + nlen || strncmp(path, root, rlen) != 0 ||
        strncmp(path + rlen, mid, sizeof mid - 1) != 0)
        return -1;
    const char *name = path + at, *end = path + plen - nlen - 1; /* the '/' before NODE */
    if (*end != '/' || strcmp(end + 1, node) != 0 || memchr(name, '/', (size_t)(end - name)))
        return -1;
    if ((size_t)(end - name) >= qlen)
        return -2;
    memcpy(queue, name, (size_t)(end - name));
    queue[end - name] = '\0';
    return 0;
}

int layout_lock_path(char *buf, size_t len, const char *job_path)
{
    int n = snprintf(buf, len, "%s/" LAYOUT_LOCK, job_path);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int layout_owner_path(char *buf, size_t len, const char *job_path, uint64_t session,
                      int64_t seq)
{
    int n = snprintf(buf, len, "%s/" LAYOUT_OWNER "%llx-", job_path, (unsigned long long)session);
    if (seq >= 0 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "%010u", (unsigned)seq);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int layout_bucket_path(char *buf, size_t len, const char *root, const char *queue,
                       uint64_t due_ms, int level, int short_form)
{
    if (layout_queue_path(buf, len, root, queue, LAYOUT_JOBS, NULL) != 0)
        return -1;
    int n = (int)strlen(buf);
    for (int l = 1; l <= level && n > 0; l++) {
        uint64_t v = layout_bucket_of(due_ms, l);
        add_str(buf, len, &n, "/");
        add_u64(buf, len, &n, short_form && l > 1 ? v % buckets_per_parent(l) : v);
    }
    return n > 0 ? 0 : -1;
}

int layout_parent_path(char *buf, size_t len, const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n == 0 || n >= len)
        return -1;
    memcpy(buf, path, n);
    buf[n] = '\0';
    return 0;
}

/* The job's path from its name as formatted (NAME). */
static int job_path_named(char *buf, size_t len, const char *root, const char *queue,
                          const struct job_name *jn, const char *name)
{
    if (layout_bucket_path(buf, len, root, queue, jn->due_ms, LAYOUT_DEPTH, jn->short_buckets) != 0)
        return -1;
    if (jn->shard[0] && !layout_valid_shard(jn->shard))
        return -1;
    int n = (int)strlen(buf);
    if (jn->shard[0])
        n = add_part(buf, len, n, jn->shard);
    return add_part(buf, len, n, name) < 0 ? -1 : 0;
}

int layout_job_path(char *buf, size_t len, const char *root, const char *queue,
                    const struct job_name *jn)
{
    char name[LAYOUT_NAME_MAX + 1];
    if (layout_format_name(jn, name, sizeof name) != 0)
        return -1;
    return job_path_named(buf, len, root, queue, jn, name);
}

int layout_format_id(char *buf, size_t len, const char *queue, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", queue, name);
    return n > 0 && (size_t)n < len && (size_t)n <= LAYOUT_ID_MAX ? 0 : -1;
}

/* The job's id from its name as formatted (NAME). */
static int job_id_named(char *buf, size_t len, const char *queue, const struct job_name *jn,
                        const char *name)
{
    const char *dir = jn->pack[0] ? jn->pack : jn->shard;
    int n = dir[0] ? join(buf, len, queue, "/", dir, "/") : join(buf, len, queue, "/", NULL, NULL);
    add_str(buf, len, &n, name);
    return n > 0 && (size_t)n <= LAYOUT_ID_MAX ? 0 : -1;
}

int layout_job_id(char *buf, size_t len, const char *queue, const struct job_name *jn)
{
    char name[LAYOUT_NAME_MAX + 1];
    if (layout_format_name(jn, name, sizeof name) != 0)
        return -1;
    return job_id_named(buf, len, queue, jn, name);
}

int layout_job_path_id(char *path, size_t plen, char *id, size_t idlen, const char *root,
                       const char *queue, const struct job_name *jn)
{
    char name[LAYOUT_NAME_MAX + 1];
    if (layout_format_name(jn, name, sizeof name) != 0 ||
        job_path_named(path, plen, root, queue, jn, name) != 0)
        return -1;
    return job_id_named(id, idlen, queue, jn, name);
}

int layout_parse_id(const char *id, char *queue, size_t qlen, struct job_name *jn)
{
    const char *slash = strchr(id, '/');
    if (!slash || strlen(id) > LAYOUT_ID_MAX || (size_t)(slash - id) >= qlen)
        return -1;
    memcpy(queue, id, (size_t)(slash - id));
    queue[slash - id] = '\0';
    if (!names_valid_queue(queue))
        return -1;
    const char *name = slash + 1, *second = strchr(name, '/');
    char dir[LAYOUT_PACK_MAX + 1] = "";
    struct pack_name pn;
    if (second) {
        size_t n = (size_t)(second - name);
        if (n > LAYOUT_PACK_MAX)
            return -1;
        memcpy(dir, name, n);
        dir[n] = '\0';
        if (!layout_valid_shard(dir) && layout_parse_pack_name(dir, &pn) != 0)
            return -1;
        name = second + 1;
    }
    if (layout_parse_name(name, jn) != 0)
        return -1;
    if (dir[0] == 'p') { /* the job's due time must fall in the pack's window */
        if (jn->due_ms < pn.start_ms || jn->due_ms - pn.start_ms >= pn.width_ms)
            return -1;
        memcpy(jn->pack, dir, sizeof dir);
    } else {
        memcpy(jn->shard, dir, sizeof jn->shard);
    }
    return 0;
}

int layout_dead_path(char *buf, size_t len, const char *root, const char *queue,
                     const struct job_name *jn)
{
    char name[LAYOUT_NAME_MAX + 1];
    if (layout_format_name(jn, name, sizeof name) != 0)
        return -1;
    return numbered_path(buf, len, root, queue, LAYOUT_DEAD, layout_bucket_of(jn->due_ms, 1),
                         name);
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int layout_key_path(char *buf, size_t len, const char *root, const char *queue,
                    const char *key)
{
    if (!names_valid_key(key))
        return -1;
    char dir[8];
    snprintf(dir, sizeof dir, "%03x", fnv1a(key) & 0xfffu);
    return node_path(buf, len, root, queue, LAYOUT_KEYS, dir, key);
}

int layout_token_path(char *buf, size_t len, const char *root, const char *queue,
                      const char *token)
{
    uint64_t ms;
    if (!names_valid_token(token, &ms))
        return -1;
    return numbered_path(buf, len, root, queue, LAYOUT_TOKENS, ms / LAYOUT_TOKEN_MINUTE_MS,
                         token);
}

int layout_key_data(char *buf, size_t len, const struct job_name *jn)
{
    char name[LAYOUT_NAME_MAX + 1];
    if (layout_format_name(jn, name, sizeof name) != 0)
        return -1;
    const char *dir = jn->pack[0] ? jn->pack : jn->shard;
    int n = dir[0] ? join(buf, len, dir, "/", name, NULL) : join(buf, len, name, NULL, NULL, NULL);
    return n > 0 ? 0 : -1;
}

int layout_parse_key_data(const char *data, size_t len, struct job_name *jn)
{
    char id[LAYOUT_ID_MAX + 1], queue[QUEUE_NAME_MAX + 1];
    if (len == 0 || len + 2 >= sizeof id || memchr(data, '\0', len))
        return -1;
    id[0] = 'q'; /* any valid queue name: the data is an id without its queue */
    id[1] = '/';
    memcpy(id + 2, data, len);
    id[len + 2] = '\0';
    return layout_parse_id(id, queue, sizeof queue, jn);
}

int layout_kept_key_data(char *buf, size_t len, int64_t acked_ms, const struct job_name *jn)
{
    char name[LAYOUT_ID_MAX + 1];
    if (acked_ms < 0 || layout_key_data(name, sizeof name, jn) != 0)
        return -1;
    int n = snprintf(buf, len, "done %lld %s", (long long)acked_ms, name);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int layout_parse_kept_key(const char *data, size_t len, int64_t *acked_ms, struct job_name *jn)
{
    char buf[LAYOUT_ID_MAX + 32];
    unsigned long long acked;
    int n = 0;
    if (len < 6 || len >= sizeof buf || memcmp(data, "done ", 5) != 0 || data[5] < '0' ||
        data[5] > '9' || memchr(data, '\0', len)) /* sscanf would take a sign */
        return -1;
    memcpy(buf, data, len);
    buf[len] = '\0';
    if (sscanf(buf, "done %llu %n", &acked, &n) != 1 || n == 0 || !buf[n] ||
        acked > LAYOUT_DUE_MAX || /* no overflow when the retention is added */
        layout_parse_key_data(buf + n, strlen(buf + n), jn) != 0)
        return -1;
    *acked_ms = (int64_t)acked;
    return 0;
}

/* ---- packs ---- */

int layout_parse_pack_name(const char *name, struct pack_name *out)
{
    const char *d1 = strchr(name, '-'), *d2 = d1 ? strchr(d1 + 1, '-') : NULL;
    uint64_t start, width, l1 = layout_bucket_width[1];
    if (name[0] != 'p' || !d2 || strlen(name) > LAYOUT_PACK_MAX ||
        parse_canonical(name + 1, (size_t)(d1 - name - 1), LAYOUT_DUE_MAX, &start) != 0 ||
        parse_canonical(d1 + 1, (size_t)(d2 - d1 - 1), l1, &width) != 0 || width == 0 ||
        strlen(d2 + 1) > LAYOUT_UID_MAX)
        return -1;
    /* the window lies in one L1 bucket, so that its directory follows from its start */
    if (start / l1 != (start + width - 1) / l1)
        return -1;
    memset(out, 0, sizeof *out);
    memcpy(out->uid, d2 + 1, strlen(d2 + 1) + 1);
    out->start_ms = start;
    out->width_ms = width;
    return layout_valid_uid(out->uid) ? 0 : -1;
}

int layout_format_pack_name(const struct pack_name *pn, char *buf, size_t len)
{
    struct pack_name check;
    int n = snprintf(buf, len, "p%llu-%llu-%s", (unsigned long long)pn->start_ms,
                     (unsigned long long)pn->width_ms, pn->uid);
    return n > 0 && (size_t)n < len && layout_parse_pack_name(buf, &check) == 0 ? 0 : -1;
}

void layout_pack_shard(char *buf, size_t len, const char *pack_uid)
{
    snprintf(buf, len, "s%.22s", pack_uid);
}

int layout_packs_path(char *buf, size_t len, const char *root, const char *queue)
{
    return layout_queue_path(buf, len, root, queue, LAYOUT_PACKS, NULL);
}

int layout_pack_path(char *buf, size_t len, const char *root, const char *queue,
                     const char *pack)
{
    struct pack_name pn;
    if (layout_parse_pack_name(pack, &pn) != 0)
        return -1;
    return numbered_path(buf, len, root, queue, LAYOUT_PACKS, layout_bucket_of(pn.start_ms, 1),
                         pack);
}

int layout_parse_marker(const char *data, size_t len)
{
    uint64_t v;
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == ' '))
        len--;
    return parse_canonical(data, len, 1000, &v) == 0 ? (int)v : -1;
}

int layout_key_data_id(char *id, size_t len, const char *queue, const char *data, int dlen)
{
    struct job_name jn;
    if (dlen <= 0 || layout_parse_key_data(data, (size_t)dlen, &jn) != 0)
        return -1;
    return layout_job_id(id, len, queue, &jn);
}

static const char *const slot_prefixes[] = {"c-", "g-", "r-", "gr-"};

static int slot_grouped(enum layout_slot_kind kind)
{
    return kind == LAYOUT_SLOT_GROUP_CONCURRENCY || kind == LAYOUT_SLOT_GROUP_RATE;
}

int layout_slot_name(char *buf, size_t len, enum layout_slot_kind kind, uint32_t i,
                     const char *group)
{
    int grouped = slot_grouped(kind);
    int n = snprintf(buf, len, "%s%u%s%s", slot_prefixes[kind], (unsigned)i, grouped ? "-" : "",
                     grouped ? group : "");
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

long layout_parse_slot(const char *name, enum layout_slot_kind *kind, const char **group)
{
    for (int k = LAYOUT_SLOT_GROUP_RATE; k >= LAYOUT_SLOT_CONCURRENCY; k--) {
        size_t plen = strlen(slot_prefixes[k]);
        if (strncmp(name, slot_prefixes[k], plen) != 0 || name[plen] < '0' || name[plen] > '9')
            continue;
        char *end;
        unsigned long i = strtoul(name + plen, &end, 10);
        int grouped = slot_grouped((enum layout_slot_kind)k);
        if (i > UINT32_MAX || (grouped ? *end != '-' || !end[1] : *end != '\0'))
            return -1;
        *kind = (enum layout_slot_kind)k;
        *group = grouped ? end + 1 : "";
        return (long)i;
    }
    return -1;
}

int layout_flow_data(char *buf, size_t len, const struct layout_flow *f)
{
    int n = snprintf(buf, len, "on=%s pending=%u acked=%u dead=%u parent=%s",
                     f->on_complete ? "complete" : "success", (unsigned)f->pending,
                     (unsigned)f->acked, (unsigned)f->dead, f->parent);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int layout_parse_flow_data(const char *data, size_t len, struct layout_flow *f)
{
    char buf[LAYOUT_ID_MAX + 96], on[16], parent[LAYOUT_ID_MAX + 2];
    unsigned pending, acked, dead;
    int used = 0;
    if (len >= sizeof buf)
        return -1;
    memcpy(buf, data, len);
    buf[len] = '\0';
    memset(f, 0, sizeof *f);
    if (sscanf(buf, "on=%15s pending=%u acked=%u dead=%u parent=%241s%n", on, &pending, &acked,
               &dead, parent, &used) != 5 || (size_t)used != len ||
        strlen(parent) > LAYOUT_ID_MAX || (strcmp(on, "success") && strcmp(on, "complete")))
        return -1;
    struct job_name jn;
    char queue[LAYOUT_ID_MAX + 1];
    if (layout_parse_id(parent, queue, sizeof queue, &jn) != 0)
        return -1;
    f->on_complete = on[0] == 'c';
    f->pending = pending;
    f->acked = acked;
    f->dead = dead;
    memcpy(f->parent, parent, strlen(parent) + 1);
    return 0;
}

int layout_flow_path(char *buf, size_t len, const char *root, const char *flow,
                     const char *child)
{
    int n = layout_root_path(buf, len, root, LAYOUT_FLOWS, flow) == 0 ? (int)strlen(buf) : -1;
    n = flow ? add_part(buf, len, n, child) : n;
    return n < 0 ? -1 : 0;
}

int layout_flow_marker_path(char *buf, size_t len, const char *root, const char *flow,
                            const char *child_uid)
{
    char name[LAYOUT_UID_MAX + 8];
    snprintf(name, sizeof name, "%s%s", LAYOUT_FLOW_CHILD, child_uid);
    return layout_flow_path(buf, len, root, flow, name);
}

int layout_claim_name(char *buf, size_t len, uint64_t session, uint64_t n)
{
    int w = snprintf(buf, len, "%016llx-%llx", (unsigned long long)session, (unsigned long long)n);
    return w > 0 && (size_t)w < len ? 0 : -1;
}

/* Hex digits only, 1 to 16 of them, no sign or space (strtoull would take those). */
static int parse_hex(const char *s, size_t n, uint64_t *v)
{
    char digits[17];
    if (n == 0 || n > 16 || strspn(s, "0123456789abcdef") < n)
        return -1;
    memcpy(digits, s, n);
    digits[n] = '\0';
    *v = strtoull(digits, NULL, 16);
    return 0;
}

int layout_parse_claim_name(const char *name, uint64_t *session, uint64_t *n)
{
    const char *dash = strchr(name, '-');
    if (!dash || dash - name != 16 || parse_hex(name, 16, session) != 0 ||
        parse_hex(dash + 1, strlen(dash + 1), n) != 0)
        return -1;
    char again[LAYOUT_CLAIM_NAME_MAX];
    return layout_claim_name(again, sizeof again, *session, *n) == 0 && strcmp(again, name) == 0
               ? 0 : -1;
}

int layout_session_path(char *buf, size_t len, const char *root, uint64_t session)
{
    char hex[20];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)session);
    return layout_root_path(buf, len, root, LAYOUT_SESSIONS, session ? hex : NULL);
}
