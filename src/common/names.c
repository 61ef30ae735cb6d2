#include "names.h"

#include <string.h>

#include "deferd/client.h"

/* The public header's limits are these rules' limits: a client must never accept what the
 * daemon refuses, nor refuse what it accepts (protocol.c ties the request limits). */
_Static_assert(DEFERD_QUEUE_MAX == QUEUE_NAME_MAX, "queue name limit");
_Static_assert(DEFERD_QUEUE_SIZE > DEFERD_QUEUE_MAX, "a queue name's buffer");
_Static_assert(DEFERD_ID_MAX == NAMES_ID_MAX, "job id limit");
_Static_assert(DEFERD_ID_SIZE > NAMES_ID_MAX, "job id buffer");
_Static_assert(DEFERD_KEY_MAX == NAMES_KEY_MAX, "key limit");
_Static_assert(DEFERD_GROUP_MAX == NAMES_GROUP_MAX, "group limit");

static int queue_byte_ok(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '.' || ch == '-';
}

int names_valid_queue_n(const char *s, size_t n)
{
    if (n == 0 || n > QUEUE_NAME_MAX || s[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!queue_byte_ok(s[i]))
            return 0;
    return 1;
}

int names_valid_queue(const char *name)
{
    return names_valid_queue_n(name, strnlen(name, QUEUE_NAME_MAX + 1));
}

static int valid_key_n(const char *key, size_t max)
{
    size_t n = strnlen(key, max + 1);
    if (n == 0 || n > max || !queue_byte_ok(key[0]) || strchr("_.-", key[0]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!queue_byte_ok(key[i]) && key[i] != ':' && key[i] != '@')
            return 0;
    return 1;
}

int names_valid_key(const char *key) { return valid_key_n(key, NAMES_KEY_MAX); }

int names_valid_group(const char *group) { return valid_key_n(group, NAMES_GROUP_MAX); }

int names_valid_token(const char *token, uint64_t *ms)
{
    size_t digits = strspn(token, "0123456789");
    if (digits == 0 || digits > 15 || token[digits] != '-')
        return 0; /* before looking past the '-': "123" ends there */
    const char *rnd = token + digits + 1;
    size_t n = strspn(rnd, "0123456789abcdefghijklmnopqrstuvwxyz");
    if (n < 8 || n > 32 || rnd[n])
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < digits; i++)
        v = v * 10 + (uint64_t)(token[i] - '0');
    *ms = v;
    return 1;
}

int names_valid_job_id_n(const char *id, size_t n)
{
    const char *slash = memchr(id, '/', n);
    if (n > NAMES_ID_MAX || slash == NULL || slash + 1 == id + n)
        return 0;
    if (!names_valid_queue_n(id, (size_t)(slash - id)))
        return 0;
    int slashes = 0;
    for (const char *p = slash + 1; p < id + n; p++) {
        if (*p <= ' ' || *p > '~')
            return 0;
        if (*p == '/' && (p == slash + 1 || p + 1 == id + n || ++slashes > 1))
            return 0;
    }
    return 1;
}

int names_valid_job_id(const char *id)
{
    return names_valid_job_id_n(id, strnlen(id, NAMES_ID_MAX + 1));
}

static size_t digits(const char *s)
{
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    return n;
}

/* The uid field of a native job id: where it starts, and its length in *n; NULL if none. */
static const char *uid_field(const char *id, size_t *n)
{
    if (!names_valid_job_id(id))
        return NULL;
    const char *p = strrchr(id, '/') + 1; /* the name, after the queue and any shard */
    for (int field = 0; field < 2; field++) { /* due time, priority */
        size_t d = digits(p);
        if (d == 0 || p[d] != '-')
            return NULL;
        p += d + 1;
    }
    *n = 0;
    while ((p[*n] >= '0' && p[*n] <= '9') || (p[*n] >= 'a' && p[*n] <= 'z'))
        ++*n;
    return *n == 0 || *n > NAMES_UID_MAX || (p[*n] != '\0' && p[*n] != '-') ? NULL : p;
}

int names_job_uid(const char *id, char *uid, size_t len)
{
    size_t n;
    const char *p = uid_field(id, &n);
    if (!p || n >= len)
        return -1;
    memcpy(uid, p, n);
    uid[n] = '\0';
    return 0;
}

int names_job_group(const char *id, char *group, size_t len)
{
    size_t n;
    const char *p = len ? uid_field(id, &n) : NULL;
    if (!p)
        return -1;
    group[0] = '\0';
    p += n;
    while (*p == '-' && p[1] != 'k') { /* tagged fields in order: a, t, g; the key is last */
        n = strcspn(p + 1, "-");
        if (p[1] == 'g') {
            if (n - 1 >= len || n - 1 > NAMES_GROUP_MAX)
                return -1;
            for (size_t i = 0; i + 1 < n; i++)
                group[i] = p[2 + i] == '~' ? '-' : p[2 + i];
            group[n - 1] = '\0';
            return names_valid_group(group) ? 0 : -1;
        }
        p += 1 + n;
    }
    return 0;
}

/* One decimal of a results field: canonical, at most UINT32_MAX; the end in *end. */
static int results_number(const char *p, const char **end, uint32_t *v)
{
    size_t d = digits(p);
    unsigned long long x = 0;
    if (d == 0 || d > 10 || (d > 1 && p[0] == '0'))
        return -1;
    for (size_t i = 0; i < d; i++)
        x = x * 10 + (unsigned)(p[i] - '0');
    *end = p + d;
    *v = (uint32_t)x;
    return x > UINT32_MAX ? -1 : 0;
}

const char *names_parse_results(const char *p, uint32_t *acked, uint32_t *dead)
{
    const char *end;
    if (results_number(p, &end, acked) != 0 || *end != '.' ||
        results_number(end + 1, &end, dead) != 0)
        return NULL;
    return end;
}

int names_job_flow_results(const char *id, uint32_t *acked, uint32_t *dead)
{
    size_t n;
    const char *p = uid_field(id, &n);
    if (!p)
        return -1;
    for (p += n; *p == '-' && p[1] != 'k'; p += 1 + strcspn(p + 1, "-")) {
        if (p[1] != 'r')
            continue;
        const char *end = names_parse_results(p + 2, acked, dead);
        return end && (*end == '\0' || *end == '-') ? 1 : -1;
    }
    return 0;
}
