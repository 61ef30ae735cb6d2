#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <ini.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deferd/client.h" /* DEFERD_DEFAULT_SOCKET: where deferctl and libdeferd look */
#include "config_int.h"
#include "names.h"
#include "units.h"

static void vfail(struct load *ld, int line, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void vfail(struct load *ld, int line, const char *fmt, va_list ap)
{
    if (ld->failed)
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (line > 0)
        snprintf(ld->err, ld->errlen, "%s:%d: %s", ld->file, line, msg);
    else /* a check of the whole file, or an -o override (its text is ld->file) */
        snprintf(ld->err, ld->errlen, "%s: %s", ld->file, msg);
    ld->failed = 1;
}

int cfg_fail(struct load *ld, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(ld, ld->line, fmt, ap);
    va_end(ap);
    return 0;
}

int cfg_fail_at(struct load *ld, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(ld, line, fmt, ap);
    va_end(ap);
    return -1;
}

static int valid_root(const char *p)
{
    size_t n = strlen(p);
    if (n < 2 || p[0] != '/' || p[n - 1] == '/' || strstr(p, "//") || n > 200)
        return 0;
    return strspn(p, "/ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* Every key of each section, for the hint at an unknown one. */
static const struct {
    const char *name;
    const char *const *keys;
} known_keys[SEC_COUNT] = {
    [SEC_DAEMON] = {"daemon", (const char *const[]){"socket", "socket_mode", "socket_owner",
        "socket_group", "log_level", "log_target", "log_facility", "log_timestamps",
        "max_payload", "max_line", "max_connections", "max_inflight", "max_open_puts",
        "requests_per_turn", "lookahead", "drain_grace", "clock", "clock_warn", "clock_limit",
        "hold_writes", NULL}},
    [SEC_ZOOKEEPER] = {"zookeeper", (const char *const[]){"hosts", "root", "session_timeout",
        "auth", "auth_file", "acl", NULL}},
    [SEC_METRICS] = {"metrics", (const char *const[]){"listen", "depth_interval",
        "depth_max_reads", "census_rate", NULL}},
    [SEC_WEB] = {"web", (const char *const[]){"dashboard", "actions", "token_file",
        "read_token", "allowed_hosts", NULL}},
    [SEC_QUEUE] = {"queue NAME", (const char *const[]){"priority", "ttr", "max_attempts",
        "max_pending", "format", "curator_path", "curator_lock_path", "curator_corrupt",
        "backoff_min", "backoff_max", "backoff_jitter", "producers", "consumers",
        "key_retention", "pack_after", "pack_window", "concurrency", "group_concurrency", "group_weights", "rate", "group_rate", NULL}},
    [SEC_SCHEDULE] = {"schedule NAME", (const char *const[]){"queue", "payload",
        "payload_file", "priority", "ttr", "cron", "every", "anchor", "timezone", "jitter",
        "misfire", "misfire_grace", "overlap", "ahead", NULL}},
};

/* Levenshtein distance of two short strings (keys); longer ones count as far apart. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[64];
    if (la >= 64 || lb >= 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The one key of KEYS a typo away from KEY (at most 2 edits and a third of its length);
 * NULL when none is, or when two are equally near. */
static const char *nearest_key(const char *key, const char *const *keys)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    int tie = 0;
    for (; *keys; keys++) {
        size_t d = edit_distance(key, *keys), third = strlen(*keys) / 3;
        if (d > 2 || d > (third ? third : 1) || d > best_d)
            continue;
        tie = d == best_d;
        best = *keys;
        best_d = d;
    }
    return tie ? NULL : best;
}

/* An unknown key in section [SHOWN] (of kind KIND): what it may have been meant to be. */
int cfg_unknown_key(struct load *ld, enum section_kind kind, const char *shown,
                       const char *key)
{
    const char *near = nearest_key(key, known_keys[kind].keys);
    if (near)
        return cfg_fail(ld, "unknown key '%s' in section [%s]; did you mean '%s'?", key, shown, near);
    for (int k = 0; k < SEC_COUNT; k++)
        for (const char *const *p = known_keys[k].keys; k != (int)kind && *p; p++)
            if (strcmp(*p, key) == 0)
                return cfg_fail(ld, "unknown key '%s' in section [%s]; it belongs in [%s]", key,
                            shown, known_keys[k].name);
    return cfg_fail(ld, "unknown key '%s' in section [%s]", key, shown);
}

static int cfg_set_string(struct load *ld, char **dst, const char *key, const char *value)
{
    if (*value == '\0')
        return cfg_fail(ld, "'%s' must not be empty", key);
    free(*dst);
    *dst = strdup(value);
    return *dst != NULL;
}

/* A limit in the largest unit it is a whole number of, as durations are written: "7d". */
void cfg_format_ms(uint64_t ms, char *buf, size_t len)
{
    static const struct { const char *unit; uint64_t ms; } units[] = {
        {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000},
    };
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (ms > 0 && ms % units[i].ms == 0) {
            snprintf(buf, len, "%llu%s", (unsigned long long)(ms / units[i].ms), units[i].unit);
            return;
        }
    }
    snprintf(buf, len, ms ? "%llums" : "%llu", (unsigned long long)ms);
}

int cfg_set_duration(struct load *ld, uint64_t *dst, const char *key, const char *value,
                        uint64_t min, uint64_t max)
{
    uint64_t v;
    char lo[32], hi[32];
    if (units_parse_duration_ms(value, &v) != 0)
        return cfg_fail(ld, "'%s': malformed duration '%s' (use e.g. 250ms, 5s, 2m, 1h)", key, value);
    cfg_format_ms(min, lo, sizeof lo);
    cfg_format_ms(max, hi, sizeof hi);
    if (v < min || v > max)
        return cfg_fail(ld, "'%s': duration '%s' is out of range (%s .. %s)", key, value, lo, hi);
    *dst = v;
    return 1;
}

/* A whole number MIN .. MAX into *OUT; 0 (inih's stop) with the range when it is not. */
static int cfg_get_number(struct load *ld, const char *key, const char *value, uint64_t min,
                      uint64_t max, uint64_t *out)
{
    uint64_t v;
    if (units_parse_u64(value, max, &v) != 0 || v < min)
        return cfg_fail(ld, "'%s': '%s' is not a number from %llu to %llu", key, value,
                    (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return 1;
}

int cfg_set_u32(struct load *ld, uint32_t *dst, const char *key, const char *value,
                   uint64_t min, uint64_t max)
{
    uint64_t v = 0;
    if (!cfg_get_number(ld, key, value, min, max, &v))
        return 0;
    *dst = (uint32_t)v;
    return 1;
}

static int daemon_key(struct load *ld, const char *key, const char *value)
{
    struct config *c = ld->cfg;
    if (strcmp(key, "socket") == 0) {
        if (strlen(value) > CONFIG_SOCKET_PATH_MAX)
            return cfg_fail(ld, "'socket': path of %zu bytes is longer than the %d a Unix socket "
                        "address holds", strlen(value), CONFIG_SOCKET_PATH_MAX);
        return cfg_set_string(ld, &c->socket_path, key, value);
    }
    if (strcmp(key, "socket_mode") == 0) {
        char *end;
        errno = 0;
        unsigned long m = strtoul(value, &end, 8);
        if (*value == '\0' || *end != '\0' || errno || m > 0777)
            return cfg_fail(ld, "'socket_mode': '%s' is not an octal mode like 0660", value);
        c->socket_mode = (unsigned)m;
        return 1;
    }
    int owner = strcmp(key, "socket_owner") == 0;
    if (owner || strcmp(key, "socket_group") == 0) {
        long id = owner ? access_user_id(value) : access_group_id(value);
        if (id < 0)
            return cfg_fail(ld, "'%s': no such %s '%s'", key, owner ? "user" : "group", value);
        *(owner ? &c->socket_uid : &c->socket_gid) = id;
        return 1;
    }
    if (strcmp(key, "log_level") == 0) {
        if (log_level_parse(value, &c->log_level) != 0)
            return cfg_fail(ld, "'log_level': '%s' is not one of error, warn, info, debug", value);
        return 1;
    }
    if (strcmp(key, "log_target") == 0) {
        if (log_target_parse(value, &c->log_target) != 0)
            return cfg_fail(ld, "'log_target': '%s' is not stderr or syslog", value);
        return 1;
    }
    if (strcmp(key, "log_facility") == 0) {
        if (log_facility_parse(value, &c->log_facility) != 0)
            return cfg_fail(ld, "'log_facility': '%s' is not daemon or local0 .. local7", value);
        return 1;
    }
    if (strcmp(key, "log_timestamps") == 0) {
        if (log_stamps_parse(value, &c->log_timestamps) != 0)
            return cfg_fail(ld, "'log_timestamps': '%s' is not auto, yes or no", value);
        return 1;
    }
    static const struct { const char *key; size_t off; uint64_t min, max; } limits[] = {
        {"max_line", offsetof(struct config, max_line), 256, CONFIG_MAX_LINE_LIMIT},
        {"max_connections", offsetof(struct config, max_connections), 1, 100000},
        {"max_inflight", offsetof(struct config, max_inflight), 1, CONFIG_MAX_INFLIGHT_LIMIT},
        {"requests_per_turn", offsetof(struct config, requests_per_turn), 1, 10000},
        {"max_open_puts", offsetof(struct config, max_open_puts), 1, 1000000},
    };
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        if (strcmp(key, limits[i].key) == 0)
            return cfg_get_number(ld, key, value, limits[i].min, limits[i].max,
                              (uint64_t *)((char *)c + limits[i].off));
    }
    if (strcmp(key, "max_payload") == 0) {
        if (units_parse_size(value, &c->max_payload) != 0 || c->max_payload == 0 ||
            c->max_payload > CONFIG_MAX_PAYLOAD_LIMIT)
            return cfg_fail(ld, "'max_payload': '%s' is not a size between 1 and %d bytes",
                        value, CONFIG_MAX_PAYLOAD_LIMIT);
        return 1;
    }
    if (strcmp(key, "lookahead") == 0)
        return cfg_set_duration(ld, &c->lookahead_ms, key, value, 100, 3600000);
    if (strcmp(key, "drain_grace") == 0)
        return cfg_set_duration(ld, &c->drain_grace_ms, key, value, 0, 3600000);
    if (strcmp(key, "clock") == 0) {
        if (strcmp(value, "zookeeper") != 0 && strcmp(value, "local") != 0)
            return cfg_fail(ld, "'clock': '%s' is not zookeeper or local", value);
        c->clock_local = strcmp(value, "local") == 0;
        return 1;
    }
    if (strcmp(key, "clock_warn") == 0)
        return cfg_set_duration(ld, &c->clock_warn_ms, key, value, 1, 86400000);
    if (strcmp(key, "clock_limit") == 0)
        return cfg_set_duration(ld, &c->clock_limit_ms, key, value, 0, 86400000);
    if (strcmp(key, "hold_writes") == 0) {
        ld->hold_writes_set = 1;
        return cfg_set_duration(ld, &c->hold_writes_ms, key, value, 0, 600000);
    }
    return cfg_unknown_key(ld, SEC_DAEMON, "daemon", key);
}

static int valid_auth(const char *value)
{
    const char *colon = strchr(value, ':');
    return colon && colon != value && colon[1] != '\0';
}

/* One "scheme:id:perms" of an acl list, in E; 0 or a message in ERR. The id may hold
 * colons (digest's user:hash, IPv6): the scheme ends at the first, perms start after the
 * last. */
static int parse_acl_entry(const char *s, size_t n, struct config_acl_entry *e, char *err,
                           size_t errlen)
{
    static const char letters[] = "rwcda"; /* ZooKeeper's bits 1, 2, 4, 8, 16 */
    const char *end = s + n, *c1 = memchr(s, ':', n), *c2 = end;
    while (c2 > s && c2[-1] != ':')
        c2--;
    if (!c1 || c2 - 1 == c1 || c1 == s || c2 == end) {
        snprintf(err, errlen, "'%.*s' is not SCHEME:ID:PERMS, e.g. world:anyone:r", (int)n, s);
        return -1;
    }
    size_t ns = (size_t)(c1 - s), ni = (size_t)(c2 - 1 - (c1 + 1));
    if (ns >= sizeof e->scheme || ni == 0 || ni >= sizeof e->id ||
        strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789") < ns) {
        snprintf(err, errlen, "'%.*s': bad scheme or id (empty or too long, or a scheme not in a-z 0-9)",
                 (int)n, s);
        return -1;
    }
    memcpy(e->scheme, s, ns);
    e->scheme[ns] = '\0';
    memcpy(e->id, c1 + 1, ni);
    e->id[ni] = '\0';
    e->perms = 0;
    for (const char *p = c2; p < end; p++) {
        const char *l = strchr(letters, *p);
        unsigned bit = l && *p ? 1u << (l - letters) : 0;
        if (!bit || (e->perms & bit)) {
            snprintf(err, errlen, "'%.*s': permissions '%.*s' are not distinct letters of cdrwa",
                     (int)n, s, (int)(end - c2), c2);
            return -1;
        }
        e->perms |= bit;
    }
    const char *colon = strchr(e->id, ':');
    if (strcmp(e->scheme, "world") == 0 && strcmp(e->id, "anyone") != 0) {
        snprintf(err, errlen, "'%.*s': the world scheme's only id is anyone", (int)n, s);
        return -1;
    }
    /* digest ids are USER:base64(sha1(USER:PASSWORD)), 28 characters: a password here
     * would lock everyone out */
    if (strcmp(e->scheme, "digest") == 0 &&
        (!colon || colon == e->id || strlen(colon + 1) != 28 || colon[28] != '=' ||
         strspn(colon + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != 27)) {
        snprintf(err, errlen, "'%.*s': a digest id is USER:HASH with the 28-character base64 "
                 "SHA-1 hash of USER:PASSWORD, not the password", (int)n, s);
        return -1;
    }
    return 0;
}

int config_parse_acl(const char *value, enum zk_acl_mode *mode, struct config_acl_entry **out,
                     size_t *nout, char *err, size_t errlen)
{
    *out = NULL;
    *nout = 0;
    if (strcmp(value, "open") == 0 || strcmp(value, "creator") == 0) {
        *mode = strcmp(value, "open") == 0 ? ZK_ACL_OPEN : ZK_ACL_CREATOR;
        return 0;
    }
    struct config_acl_entry *e = calloc(CONFIG_ACL_MAX, sizeof *e);
    size_t n = 0;
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (const char *p = value;; p++) {
        p += strspn(p, " \t");
        size_t len = strcspn(p, ",");
        size_t trimmed = len;
        while (trimmed > 0 && (p[trimmed - 1] == ' ' || p[trimmed - 1] == '\t'))
            trimmed--;
        if (n == CONFIG_ACL_MAX) {
            snprintf(err, errlen, "more than %d entries", CONFIG_ACL_MAX);
            goto bad;
        }
        if (parse_acl_entry(p, trimmed, &e[n++], err, errlen) != 0)
            goto bad;
        p += len;
        if (*p == '\0')
            break;
    }
    *mode = ZK_ACL_LIST;
    *out = e;
    *nout = n;
    return 0;
bad:
    free(e);
    return -1;
}

static int set_acl(struct load *ld, const char *value)
{
    struct config *c = ld->cfg;
    char msg[400];
    struct config_acl_entry *e;
    size_t n;
    enum zk_acl_mode mode;
    if (config_parse_acl(value, &mode, &e, &n, msg, sizeof msg) != 0)
        return cfg_fail(ld, "'acl': %s (expected open, creator or SCHEME:ID:PERMS,...)", msg);
    free(c->zk_acl);
    c->zk_acl = e;
    c->nzk_acl = n;
    c->zk_acl_mode = mode;
    return cfg_set_string(ld, &c->zk_acl_text, "acl", value);
}

/* Decimal 1 .. 65535 without a leading 0: the client reads ports with strtol(s, NULL, 0),
 * which takes "02181" for octal and refuses it. */
static int valid_port(const char *s, size_t n)
{
    unsigned long v = 0;
    if (n == 0 || n > 5 || s[0] == '0')
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    return v <= 65535;
}

/* A host as getaddrinfo will get it: a name or IPv4 address, or an IPv6 address (with a
 * %scope) unbracketed, since the client passes "[::1]" on as it is and cannot resolve it.
 * NULL if good, else what is wrong. */
static const char *host_problem(const char *h, size_t n)
{
    static const char name_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789-._";
    if (n == 0)
        return "no host before the port";
    if (h[0] == '[')
        return "the ZooKeeper C client takes IPv6 addresses without brackets (::1:2181)";
    if (!memchr(h, ':', n)) {
        for (size_t i = 0; i < n; i++)
            if (!strchr(name_chars, h[i]) || h[i] == '\0')
                return "bad host name (letters, digits, '-', '.', '_')";
        return h[0] == '-' || h[0] == '.' ? "bad host name (starts with '-' or '.')" : NULL;
    }
    char addr[INET6_ADDRSTRLEN];
    struct in6_addr a6;
    const char *pct = memchr(h, '%', n);
    size_t an = pct ? (size_t)(pct - h) : n;
    if (an >= sizeof addr)
        return "not an IPv6 address";
    memcpy(addr, h, an);
    addr[an] = '\0';
    if (inet_pton(AF_INET6, addr, &a6) != 1 || (pct && (pct + 1 == h + n ||
        strspn(pct + 1, name_chars) < (size_t)(h + n - pct - 1))))
        return "not an IPv6 address";
    return NULL;
}

/* [zookeeper] hosts as zookeeper_init reads it: HOST:PORT pairs split at ',', each port
 * after its pair's last ':', a chroot from the first '/' on. Blanks before a pair are
 * skipped, as the client does. Whether names resolve is left to the start (DNS may be down
 * now). 0, or -1 with why in WHY. */
static int check_connect_string(const char *s, char *why, size_t len)
{
    const char *chroot = strchr(s, '/');
    const char *end = chroot ? chroot : s + strlen(s);
    for (const char *p = s; p <= end; p++) {
        p += strspn(p, " \t");
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end, *colon = stop;
        while (colon > p && colon[-1] != ':')
            colon--;
        size_t n = (size_t)(stop - p);
        const char *bad = n == 0 ? "empty pair" : colon == p ? "no :PORT"
                          : !valid_port(colon, (size_t)(stop - colon)) ? "port not 1 .. 65535"
                          : host_problem(p, (size_t)(colon - 1 - p));
        if (bad) {
            snprintf(why, len, "'%.*s': %s", (int)n, p, bad);
            return -1;
        }
        p = stop;
    }
    if (chroot && !valid_root(chroot)) {
        snprintf(why, len, "chroot '%s' is not an absolute znode path like /deferd", chroot);
        return -1;
    }
    return 0;
}

static int set_hosts(struct load *ld, const char *value)
{
    char why[300];
    if (*value == '\0')
        return cfg_fail(ld, "'hosts' must not be empty (expected HOST:PORT[,HOST:PORT...])");
    if (check_connect_string(value, why, sizeof why) != 0)
        return cfg_fail(ld, "'hosts': %s (expected HOST:PORT[,HOST:PORT...][/CHROOT], e.g. "
                    "zk1:2181,zk2:2181)", why);
    return cfg_set_string(ld, &ld->cfg->zk_hosts, "hosts", value);
}

static int zookeeper_key(struct load *ld, const char *key, const char *value)
{
    struct config *c = ld->cfg;
    if (strcmp(key, "hosts") == 0)
        return set_hosts(ld, value);
    if (strcmp(key, "root") == 0) {
        if (!valid_root(value))
            return cfg_fail(ld, "'root': '%s' is not an absolute znode path like /deferd", value);
        return cfg_set_string(ld, &c->zk_root, key, value);
    }
    if (strcmp(key, "session_timeout") == 0)
        return cfg_set_duration(ld, &c->session_timeout_ms, key, value, 2000, 600000);
    if (strcmp(key, "auth") == 0) {
        if (!valid_auth(value))
            return cfg_fail(ld, "'auth': expected SCHEME:CREDENTIALS, e.g. digest:user:secret");
        return cfg_set_string(ld, &c->zk_auth, key, value);
    }
    if (strcmp(key, "auth_file") == 0)
        return cfg_set_string(ld, &c->zk_auth_file, key, value);
    if (strcmp(key, "acl") == 0)
        return set_acl(ld, value);
    return cfg_unknown_key(ld, SEC_ZOOKEEPER, "zookeeper", key);
}

/* [metrics]: the depth refresh's limits, and listen: "HOST:PORT" or "[IPV6]:PORT"; "" or
 * "off" disables. The host is resolved at bind time. */
static int metrics_key(struct load *ld, const char *key, const char *value)
{
    struct config *c = ld->cfg;
    if (strcmp(key, "depth_interval") == 0)
        return cfg_set_duration(ld, &c->depth_interval_ms, key, value, 0, 3600000);
    if (strcmp(key, "depth_max_reads") == 0)
        return cfg_set_u32(ld, &c->depth_max_reads, key, value, 1, 1000000);
    if (strcmp(key, "census_rate") == 0)
        return cfg_set_u32(ld, &c->census_rate, key, value, 0, 100000);
    if (strcmp(key, "listen") != 0)
        return cfg_unknown_key(ld, SEC_METRICS, "metrics", key);
    free(c->metrics_host);
    c->metrics_host = NULL;
    if (*value == '\0' || strcmp(value, "off") == 0)
        return 1;
    const char *colon = strrchr(value, ':'), *host = value;
    size_t n = colon ? (size_t)(colon - value) : 0;
    if (n >= 2 && value[0] == '[' && value[n - 1] == ']') {
        host++;
        n -= 2;
    }
    uint64_t port;
    char buf[128];
    if (!colon || n == 0 || n >= sizeof buf || units_parse_u64(colon + 1, 65535, &port) != 0)
        return cfg_fail(ld, "'listen': '%s' is not HOST:PORT, e.g. 127.0.0.1:9464 (or off)", value);
    memcpy(buf, host, n);
    buf[n] = '\0';
    int v6 = host != value;
    if (strspn(buf, v6 ? "0123456789abcdefABCDEF:." : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                         "qrstuvwxyz0123456789.-") != n)
        return cfg_fail(ld, "'listen': bad host '%s' (IPv6 goes in brackets: [::1]:9464)", buf);
    c->metrics_port = (unsigned)port;
    return cfg_set_string(ld, &c->metrics_host, key, buf);
}

static struct queue_config *find_queue(struct config *c, const char *name)
{
    return (struct queue_config *)config_queue(c, name);
}

static struct queue_config *add_queue(struct load *ld, const char *name)
{
    struct config *c = ld->cfg;
    if (!names_valid_queue(name)) {
        cfg_fail(ld, "bad queue name '%s' (1-%d of A-Z a-z 0-9 _ . -, not starting with .)", name,
                 QUEUE_NAME_MAX);
        return NULL;
    }
    struct queue_config **grown = realloc(c->queues, (c->nqueues + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    c->queues = grown;
    struct queue_config *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->index = c->nqueues;
    c->queues[c->nqueues++] = q;
    strcpy(q->name, name);
    q->line = ld->line;
    q->priority = 1024;
    q->ttr_ms = 60000;
    q->max_attempts = 10;
    q->backoff_min_ms = 1000;
    q->backoff_max_ms = 600000;
    q->backoff_jitter = 20;
    q->pack_after_ms = 3600000;
    q->pack_window_ms = 10000000;
    return q;
}

/* rate = N/s, N/m or N/h (N 1..QUEUE_CONCURRENCY_MAX), or 0 for none; group_rate too. */
static int parse_rate(struct load *ld, struct queue_config *q, const char *key,
                      const char *value)
{
    int group = key[0] == 'g';
    uint32_t *rate_n = group ? &q->group_rate_n : &q->rate_n;
    uint64_t *window_ms = group ? &q->group_rate_window_ms : &q->rate_window_ms;
    static const struct { const char *unit; uint64_t ms; } units[] = {
        {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    char num[24];
    const char *slash = strchr(value, '/');
    uint64_t n;
    q->limit_line = ld->line;
    if (strcmp(value, "0") == 0) {
        *rate_n = 0;
        return 1;
    }
    if (slash && (size_t)(slash - value) < sizeof num) {
        memcpy(num, value, (size_t)(slash - value));
        num[slash - value] = '\0';
        for (size_t i = 0; i < sizeof units / sizeof *units; i++)
            if (strcmp(slash + 1, units[i].unit) == 0 &&
                units_parse_u64(num, QUEUE_CONCURRENCY_MAX, &n) == 0 && n > 0) {
                *rate_n = (uint32_t)n;
                *window_ms = units[i].ms;
                return 1;
            }
    }
    return cfg_fail(ld, "'%s': '%s' is not N/s, N/m or N/h with N from 1 to %d (or 0: none)",
                    key, value, QUEUE_CONCURRENCY_MAX);
}

/* group_weights = vip:4 gold:2 (blanks or commas between): the turns each group takes in
 * a row; groups not named take 1. */
static int parse_weights(struct load *ld, struct queue_config *q, const char *value)
{
    char buf[4096], *save = NULL;
    snprintf(buf, sizeof buf, "%s", value);
    q->nweights = 0;
    for (char *tok = strtok_r(buf, " ,\t", &save); tok; tok = strtok_r(NULL, " ,\t", &save)) {
        char *colon = strrchr(tok, ':');
        uint64_t w;
        if (!colon)
            return cfg_fail(ld, "'group_weights': '%s' is not GROUP:WEIGHT", tok);
        *colon = '\0';
        if (!names_valid_group(tok))
            return cfg_fail(ld, "'group_weights': bad group '%s' (1-%d of A-Z a-z 0-9 _ . : @ -)",
                            tok, NAMES_GROUP_MAX);
        if (units_parse_u64(colon + 1, QUEUE_WEIGHT_MAX, &w) != 0 || w == 0)
            return cfg_fail(ld, "'group_weights': weight of %s must be 1..%d, not '%s'", tok,
                            QUEUE_WEIGHT_MAX, colon + 1);
        for (size_t i = 0; i < q->nweights; i++)
            if (strcmp(q->weights[i].group, tok) == 0)
                return cfg_fail(ld, "'group_weights': group %s given twice", tok);
        if (q->nweights == QUEUE_WEIGHTS_MAX)
            return cfg_fail(ld, "'group_weights': more than %d groups", QUEUE_WEIGHTS_MAX);
        snprintf(q->weights[q->nweights].group, sizeof q->weights[0].group, "%s", tok);
        q->weights[q->nweights++].weight = (uint32_t)w;
    }
    return 1;
}

static int queue_key(struct load *ld, const char *qname, const char *key, const char *value)
{
    struct queue_config *q = find_queue(ld->cfg, qname);
    if (!q && !(q = add_queue(ld, qname)))
        return 0;
    if (strcmp(key, "priority") == 0)
        return cfg_set_u32(ld, &q->priority, key, value, 0, UINT32_MAX);
    if (strcmp(key, "ttr") == 0)
        return cfg_set_duration(ld, &q->ttr_ms, key, value, 1000, 86400000ULL * 7);
    if (strcmp(key, "max_attempts") == 0)
        return cfg_set_u32(ld, &q->max_attempts, key, value, 1, UINT32_MAX);
    if (strcmp(key, "max_pending") == 0)
        return cfg_get_number(ld, key, value, 0, 1000000000000ULL, &q->max_pending);
    if (strcmp(key, "backoff_min") == 0 || strcmp(key, "backoff_max") == 0) {
        int min = strcmp(key, "backoff_min") == 0;
        q->backoff_line = ld->line; /* compared once both are known: validate_backoff() */
        return cfg_set_duration(ld, min ? &q->backoff_min_ms : &q->backoff_max_ms, key, value, 0,
                            min ? 86400000 : 86400000ULL * 30);
    }
    int producers = strcmp(key, "producers") == 0;
    if (producers || strcmp(key, "consumers") == 0) {
        char err[200];
        if (access_parse(value, producers ? &q->producers : &q->consumers, err,
                         sizeof err) != 0)
            return cfg_fail(ld, "'%s': %s", key, err);
        return 1;
    }
    if (strcmp(key, "key_retention") == 0)
        return cfg_set_duration(ld, &q->key_retention_ms, key, value, 0, 86400000ULL * 3650);
    if (strcmp(key, "group_weights") == 0)
        return parse_weights(ld, q, value);
    if (strcmp(key, "rate") == 0 || strcmp(key, "group_rate") == 0)
        return parse_rate(ld, q, key, value);
    if (strcmp(key, "concurrency") == 0 || strcmp(key, "group_concurrency") == 0) {
        q->limit_line = ld->line;
        return cfg_set_u32(ld, key[0] == 'c' ? &q->concurrency : &q->group_concurrency, key,
                           value, 0, QUEUE_CONCURRENCY_MAX);
    }
    if (strcmp(key, "pack_after") == 0 || strcmp(key, "pack_window") == 0) {
        int after = key[5] == 'a';
        q->pack_line = ld->line; /* checked against lookahead: validate_packs() */
        return cfg_set_duration(ld, after ? &q->pack_after_ms : &q->pack_window_ms, key, value,
                            after ? 0 : 1000, after ? 86400000ULL * 365 : 10000000);
    }
    if (strcmp(key, "format") == 0) {
        if (strcmp(value, "native") == 0)
            q->format = QF_NATIVE;
        else if (strcmp(value, "curator-delay") == 0)
            q->format = QF_CURATOR_DELAY;
        else if (strcmp(value, "curator-priority") == 0)
            q->format = QF_CURATOR_PRIORITY;
        else
            return cfg_fail(ld, "'format': '%s' is not native, curator-delay or curator-priority",
                        value);
        return 1;
    }
    int queue_path = strcmp(key, "curator_path") == 0;
    if (queue_path || strcmp(key, "curator_lock_path") == 0) {
        char *dst = queue_path ? q->curator_path : q->curator_lock_path;
        if (!valid_root(value) || strlen(value) >= CURATOR_PATH_MAX)
            return cfg_fail(ld, "'%s': '%s' is not an absolute znode path like /jobs/delay", key,
                        value);
        snprintf(dst, CURATOR_PATH_MAX, "%s", value);
        return 1;
    }
    if (strcmp(key, "curator_corrupt") == 0) {
        int del = strcmp(value, "delete") == 0;
        if (del || strcmp(value, "skip") == 0) {
            q->curator_delete_corrupt = del;
            return 1;
        }
        return cfg_fail(ld, "'curator_corrupt': '%s' is not skip or delete", value);
    }
    if (strcmp(key, "backoff_jitter") == 0) /* percent */
        return cfg_set_u32(ld, &q->backoff_jitter, key, value, 0, 100);
    char shown[QUEUE_NAME_MAX + 8];
    snprintf(shown, sizeof shown, "queue %s", qname);
    return cfg_unknown_key(ld, SEC_QUEUE, shown, key);
}

/* inih does not report empty sections, so the line reader sees headers itself. */
static void on_section(struct load *ld, const char *section)
{
    if (strcmp(section, "zookeeper") == 0)
        ld->zk_line = ld->line;
    else if (strncmp(section, "queue ", 6) == 0) {
        if (find_queue(ld->cfg, section + 6))
            cfg_fail(ld, "duplicate section [%s]", section);
        else
            add_queue(ld, section + 6);
    } else if (strncmp(section, "schedule ", 9) == 0) {
        cfg_schedule_section(ld, section + 9);
    } else if (strcmp(section, "daemon") != 0 && strcmp(section, "metrics") != 0 &&
               strcmp(section, "web") != 0)
        cfg_fail(ld, "unknown section [%s]", section);
}

/* Keys already seen, as "section\nkey", to reject duplicates. */
static int seen_before(struct load *ld, const char *section, const char *key)
{
    char k[256];
    snprintf(k, sizeof k, "%s\n%s", section, key);
    for (size_t i = 0; i < ld->nseen; i++)
        if (strcmp(ld->seen[i], k) == 0)
            return 1;
    char **grown = realloc(ld->seen, (ld->nseen + 1) * sizeof *grown);
    if (grown) {
        ld->seen = grown;
        if ((ld->seen[ld->nseen] = strdup(k)))
            ld->nseen++;
    }
    return 0;
}

static int on_entry(void *user, const char *section, const char *key, const char *value)
{
    struct load *ld = user;
    if (ld->failed)
        return 0;
    if (!ld->overriding && *section && strncmp(section, ld->section, strlen(section)) == 0)
        section = ld->section; /* "[queue <a long name>]": not the name inih cut short */
    if (*section == '\0')
        return cfg_fail(ld, "key '%s' outside of any section", key);
    if (!ld->overriding && seen_before(ld, section, key))
        return cfg_fail(ld, "duplicate key '%s' in section [%s]", key, section);
    if (strcmp(section, "daemon") == 0)
        return daemon_key(ld, key, value);
    if (strcmp(section, "zookeeper") == 0)
        return zookeeper_key(ld, key, value);
    if (strcmp(section, "metrics") == 0)
        return metrics_key(ld, key, value);
    if (strcmp(section, "web") == 0)
        return cfg_web_key(ld, key, value);
    if (strncmp(section, "queue ", 6) == 0)
        return queue_key(ld, section + 6, key, value);
    if (strncmp(section, "schedule ", 9) == 0)
        return cfg_schedule_key(ld, section + 9, key, value);
    return 0; /* unknown section: reported at its header */
}

static void check_header(struct load *ld, const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line != '[')
        return;
    const char *end = strchr(line, ']');
    if (!end) {
        cfg_fail(ld, "section header without ']'");
        return;
    }
    char name[128];
    size_t n = (size_t)(end - line - 1);
    if (n >= sizeof name) {
        cfg_fail(ld, "section name too long");
        return;
    }
    memcpy(name, line + 1, n);
    name[n] = '\0';
    memcpy(ld->section, name, n + 1);
    on_section(ld, name);
}

/* "key = value # note": a '#' after a blank starts a comment, as ';' does in inih as Debian
 * builds it (inline comments for ';' only). Cut here, before inih sees the line, so that it
 * holds for every key and for section headers alike. */
static void cut_hash_comment(char *s)
{
    for (char *p = strchr(s, '#'); p; p = strchr(p + 1, '#')) {
        if (p > s && (p[-1] == ' ' || p[-1] == '\t')) {
            p[0] = '\n';
            p[1] = '\0';
            return;
        }
    }
}

static char *read_line(char *buf, int size, void *stream)
{
    struct load *ld = stream;
    char *s = fgets(buf, size, ld->fp);
    /* NULL is also a read error: a directory (EISDIR) or EIO is not an empty file. */
    if (!s && ferror(ld->fp))
        cfg_fail(ld, "cannot read: %s", strerror(errno));
    if (s) {
        ld->line++;
        size_t n = strlen(s);
        if (n > 0 && s[n - 1] != '\n' && !feof(ld->fp)) {
            cfg_fail(ld, "line too long (at most %d bytes)", INI_MAX_LINE - 1);
            return NULL;
        }
        cut_hash_comment(s);
        if (!ld->failed)
            check_header(ld, s);
    }
    return s;
}

static int defaults(struct config *c, const char *path)
{
    memset(c, 0, sizeof *c);
    c->path = strdup(path);
    c->socket_path = strdup(DEFERD_DEFAULT_SOCKET);
    c->socket_mode = 0660;
    c->socket_uid = c->socket_gid = -1;
    c->log_level = LOG_INFO;
    c->log_target = LOG_TO_STDERR;
    log_facility_parse("daemon", &c->log_facility);
    c->log_timestamps = LOG_STAMPS_AUTO;
    c->max_payload = 512 * 1024;
    c->max_line = CONFIG_MAX_LINE_DEFAULT;
    c->max_connections = 1024;
    c->max_inflight = CONFIG_MAX_INFLIGHT_LIMIT;
    c->requests_per_turn = 64;
    c->max_open_puts = 1024;
    c->lookahead_ms = 5000;
    c->drain_grace_ms = 30000;
    c->clock_warn_ms = 1000;
    c->clock_limit_ms = 60000;
    c->zk_root = strdup("/deferd");
    c->session_timeout_ms = 10000;
    c->metrics_host = strdup("127.0.0.1");
    c->metrics_port = 9464;
    c->depth_interval_ms = 10000;
    c->depth_max_reads = 5000;
    c->census_rate = 200;
    return c->path && c->socket_path && c->zk_root && c->metrics_host ? 0 : -1;
}

#define OVERRIDE_FORMS "daemon.KEY=VALUE, zookeeper.KEY=VALUE, metrics.KEY=VALUE, web.KEY=VALUE, " \
                       "queue.NAME.KEY=VALUE or \"queue NAME.KEY=VALUE\", schedule.NAME.KEY=VALUE"

/* "section.key=value", the key after the last dot. A queue's section is "queue.NAME" or,
 * as in the file, "queue NAME"; its name may hold dots itself (queue.a.b.ttr=5s). */
static int apply_override(struct load *ld, const char *o)
{
    char label[600], buf[512];
    snprintf(label, sizeof label, "override '%s'", o);
    ld->file = label;
    ld->line = 0;
    const char *eq = strchr(o, '=');
    char *dot = NULL;
    if (eq && (size_t)(eq - o) < sizeof buf) {
        memcpy(buf, o, (size_t)(eq - o));
        buf[eq - o] = '\0';
        dot = strrchr(buf, '.');
    }
    if (!dot || dot == buf || dot[1] == '\0')
        return cfg_fail(ld, "expected SECTION.KEY=VALUE: " OVERRIDE_FORMS), -1;
    *dot = '\0';
    if (strncmp(buf, "queue.", 6) == 0)
        buf[5] = ' ';
    if (strncmp(buf, "schedule.", 9) == 0)
        buf[8] = ' ';
    int queue = strncmp(buf, "queue ", 6) == 0, sched = strncmp(buf, "schedule ", 9) == 0;
    if (!queue && !sched && strcmp(buf, "daemon") && strcmp(buf, "zookeeper") &&
        strcmp(buf, "metrics") && strcmp(buf, "web"))
        return cfg_fail(ld, "unknown section [%s]; -o takes " OVERRIDE_FORMS, buf), -1;
    if ((queue && !find_queue(ld->cfg, buf + 6)) ||
        (sched && !config_schedule(ld->cfg, buf + 9)))
        on_section(ld, buf); /* -o may define a queue or schedule the file lacks */
    ld->overriding = 1;
    if (!ld->failed)
        on_entry(ld, buf, dot + 1, eq + 1);
    ld->overriding = 0;
    ld->file = ld->cfg->path;
    return ld->failed ? -1 : 0;
}

/* Curator's lock names equal item names: a lockPath inside the queuePath would be taken
 * for items (docs/curator-compat.md). */
static int validate_curator(struct load *ld, const struct queue_config *q)
{
    const char *p = q->curator_path, *l = q->curator_lock_path;
    size_t n = strlen(p);
    if (q->format != QF_NATIVE && (q->concurrency || q->group_concurrency || q->rate_n ||
                                   q->group_rate_n))
        return cfg_fail_at(ld, q->limit_line, "[queue %s]: concurrency and rate apply to deferd's "
                           "own queues only, not to format = curator-* (Curator's consumers "
                           "take items without slots)", q->name);
    if (q->format == QF_NATIVE) {
        if (!*p && !*l)
            return 0;
        return cfg_fail_at(ld, q->line, "[queue %s]: curator_path and curator_lock_path need "
                       "format = curator-delay or curator-priority", q->name);
    }
    if (!*p)
        return cfg_fail_at(ld, q->line, "missing required key 'curator_path' for a Curator queue");
    if (*l && (strcmp(l, p) == 0 || (strncmp(l, p, n) == 0 && l[n] == '/'))) {
        return cfg_fail_at(ld, q->line, "[queue %s]: curator_lock_path must not be curator_path "
                       "or inside it", q->name);
    }
    return 0;
}

/* The first retry delay above its cap would be cut to the cap at once: surely a mistake. */
static int validate_backoff(struct load *ld, const struct queue_config *q)
{
    char lo[32], hi[32];
    if (q->backoff_min_ms <= q->backoff_max_ms)
        return 0;
    cfg_format_ms(q->backoff_min_ms, lo, sizeof lo);
    cfg_format_ms(q->backoff_max_ms, hi, sizeof hi);
    return cfg_fail_at(ld, q->backoff_line ? q->backoff_line : q->line, "[queue %s]: backoff_min "
                   "%s is above backoff_max %s (the first retry delay cannot exceed its cap: "
                   "raise backoff_max or lower backoff_min)", q->name, lo, hi);
}

/* Unpacking starts at pack_after before a window: the jobs must be in their buckets well
 * before the mirror reads them (lookahead), and a window must lie in one L1 bucket. */
static int validate_packs(struct load *ld, struct queue_config *q)
{
    char after[32], look[32];
    int line = q->pack_line ? q->pack_line : q->line;
    if (10000000 % q->pack_window_ms != 0)
        return cfg_fail_at(ld, line, "[queue %s]: pack_window must divide 10000s (e.g. 10s, "
                       "100s, 1000s, 2000s, 5000s or 10000s)", q->name);
    if (q->pack_after_ms == 0 || q->pack_after_ms >= 2 * ld->cfg->lookahead_ms + 2000)
        return 0;
    if (!q->pack_line) { /* the default, with a long lookahead: as far as it must be */
        q->pack_after_ms = 2 * ld->cfg->lookahead_ms + 2000;
        return 0;
    }
    cfg_format_ms(q->pack_after_ms, after, sizeof after);
    cfg_format_ms(2 * ld->cfg->lookahead_ms + 2000, look, sizeof look);
    return cfg_fail_at(ld, line, "[queue %s]: pack_after %s is too close: it must be at least %s "
                   "(twice [daemon] lookahead plus 2s), or 0 to never pack", q->name, after,
                   look);
}

/* auth_file: "scheme:credentials" on the first line of a regular file that only the
 * running user owns and can read or write. */
int cfg_read_secret_file(struct load *ld, int line, const char *what, const char *f,
                         char *buf, size_t size, int whole)
{
    struct stat st;
    int fd = open(f, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return cfg_fail_at(ld, line, "%s %s: cannot open: %s", what, f, strerror(e));
    }
    const char *why = !S_ISREG(st.st_mode)         ? "is not a regular file"
                      : st.st_uid != geteuid()     ? "is not owned by the user deferd runs as"
                      : (st.st_mode & 077) != 0    ? "is accessible by group or others "
                                                     "(chmod 600 it)"
                      : whole && (size_t)st.st_size >= size ? "is too long"
                                                   : NULL;
    ssize_t n = why ? 0 : read(fd, buf, size - 1);
    close(fd);
    if (!why && n < 0)
        why = "cannot be read";
    buf[n > 0 ? n : 0] = '\0';
    return why ? cfg_fail_at(ld, line, "%s %s %s", what, f, why) : 0;
}

static int read_auth_file(struct load *ld, int line)
{
    struct config *c = ld->cfg;
    char buf[1024];
    if (cfg_read_secret_file(ld, line, "auth_file", c->zk_auth_file, buf, sizeof buf, 0) != 0)
        return -1;
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!valid_auth(buf))
        return cfg_fail_at(ld, line, "auth_file %s does not start with a line "
                           "SCHEME:CREDENTIALS, e.g. digest:user:secret", c->zk_auth_file);
    c->zk_auth = strdup(buf);
    memset(buf, 0, sizeof buf);
    return c->zk_auth ? 0 : cfg_fail_at(ld, 0, "out of memory");
}

static int validate_zookeeper(struct load *ld)
{
    struct config *c = ld->cfg;
    int line = ld->zk_line;
    if (c->zk_auth && c->zk_auth_file)
        return cfg_fail_at(ld, line, "[zookeeper]: auth and auth_file are mutually exclusive");
    if (c->zk_auth_file && read_auth_file(ld, line) != 0)
        return -1;
    if (c->zk_acl_mode == ZK_ACL_CREATOR && !c->zk_auth)
        return cfg_fail_at(ld, line, "[zookeeper]: acl = creator needs auth or auth_file (the "
                       "creator is the authenticated identity)");
    return 0;
}

/* Writes are held while the session may still survive, never longer: the default is
 * HOLD_WRITES_DEFAULT_MS or the session timeout if that is shorter. */
static int validate_hold_writes(struct load *ld)
{
    struct config *c = ld->cfg;
    if (!ld->hold_writes_set) {
        c->hold_writes_ms = c->session_timeout_ms < HOLD_WRITES_DEFAULT_MS ? c->session_timeout_ms
                                                                          : HOLD_WRITES_DEFAULT_MS;
        return 0;
    }
    if (c->hold_writes_ms > c->session_timeout_ms)
        return cfg_fail_at(ld, 0, "[daemon]: hold_writes (%llu ms) is longer than [zookeeper] "
                           "session_timeout (%llu ms): a write cannot wait for a session that "
                           "is already lost", (unsigned long long)c->hold_writes_ms,
                           (unsigned long long)c->session_timeout_ms);
    return 0;
}

static int validate(struct load *ld)
{
    struct config *c = ld->cfg;
    if (!c->zk_hosts && !ld->zk_line)
        return cfg_fail_at(ld, 0, "missing section [zookeeper] (it needs hosts = HOST:PORT,...)");
    if (!c->zk_hosts)
        return cfg_fail_at(ld, ld->zk_line, "missing required key 'hosts' in [zookeeper] "
                       "(hosts = HOST:PORT,...)");
    if (c->nqueues == 0)
        return cfg_fail_at(ld, 0, "missing section [queue NAME]: at least one queue is needed, "
                       "e.g. [queue emails]");
    if (validate_zookeeper(ld) != 0)
        return -1;
    if (validate_hold_writes(ld) != 0)
        return -1;
    if (c->clock_limit_ms && c->clock_limit_ms < c->clock_warn_ms)
        return cfg_fail_at(ld, 0, "[daemon]: clock_limit (%llu ms) is below clock_warn (%llu ms); "
                       "set it to 0 (no limit) or at least clock_warn",
                       (unsigned long long)c->clock_limit_ms, (unsigned long long)c->clock_warn_ms);
    for (size_t i = 0; i < c->nqueues; i++) {
        const struct queue_config *q = c->queues[i];
        if (validate_curator(ld, q) != 0 || validate_backoff(ld, q) != 0 ||
            validate_packs(ld, c->queues[i]) != 0)
            return -1;
        for (size_t j = 0; j < i && q->curator_path[0]; j++) {
            if (strcmp(q->curator_path, c->queues[j]->curator_path) == 0)
                return cfg_fail_at(ld, q->line, "[queue %s]: curator_path %s is already the path of "
                               "queue %s", q->name, q->curator_path, c->queues[j]->name);
        }
    }
    return cfg_validate_web(ld) != 0 ? -1 : cfg_validate_schedules(ld);
}

int config_load(const char *path, const char *const *overrides, size_t noverrides,
                struct config *cfg, char *err, size_t errlen)
{
    struct load ld = {.cfg = cfg, .file = path, .err = err, .errlen = errlen};
    int rc = -1;
    if (defaults(cfg, path) != 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    ld.fp = fopen(path, "r");
    if (!ld.fp) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        goto out;
    }
    int irc = ini_parse_stream(read_line, &ld, on_entry, &ld);
    fclose(ld.fp);
    if (ld.failed)
        goto out;
    if (irc != 0) {
        snprintf(err, errlen, "%s:%d: syntax error (expected [section] or key = value)", path,
                 irc > 0 ? irc : ld.line);
        goto out;
    }
    for (size_t i = 0; i < noverrides; i++)
        if (apply_override(&ld, overrides[i]) != 0)
            goto out;
    rc = validate(&ld);
out:
    for (size_t i = 0; i < ld.nseen; i++)
        free(ld.seen[i]);
    free(ld.seen);
    if (rc != 0)
        config_free(cfg);
    return rc;
}

void config_free(struct config *cfg)
{
    free(cfg->path);
    free(cfg->socket_path);
    free(cfg->zk_hosts);
    free(cfg->zk_root);
    free(cfg->zk_auth);
    free(cfg->zk_auth_file);
    free(cfg->zk_acl_text);
    free(cfg->zk_acl);
    free(cfg->metrics_host);
    cfg_free_web(cfg);
    for (size_t i = 0; i < cfg->nqueues; i++) {
        if (!cfg->queues[i])
            continue; /* moved into the running config by a reload */
        access_free(&cfg->queues[i]->producers);
        access_free(&cfg->queues[i]->consumers);
        free(cfg->queues[i]);
    }
    free(cfg->queues);
    cfg_free_schedules(cfg);
    memset(cfg, 0, sizeof *cfg);
}

static int dup_or_null(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? strdup(src) : NULL;
    return src && !*dst ? -1 : 0;
}

int config_copy_zookeeper(struct config *dst, const struct config *src)
{
    int rc = dup_or_null(&dst->zk_hosts, src->zk_hosts) | dup_or_null(&dst->zk_root, src->zk_root) |
             dup_or_null(&dst->zk_auth, src->zk_auth) |
             dup_or_null(&dst->zk_auth_file, src->zk_auth_file) |
             dup_or_null(&dst->zk_acl_text, src->zk_acl_text);
    dst->session_timeout_ms = src->session_timeout_ms;
    dst->zk_acl_mode = src->zk_acl_mode;
    free(dst->zk_acl);
    dst->zk_acl = NULL;
    dst->nzk_acl = 0;
    if (src->nzk_acl && (dst->zk_acl = calloc(src->nzk_acl, sizeof *dst->zk_acl)) != NULL) {
        memcpy(dst->zk_acl, src->zk_acl, src->nzk_acl * sizeof *dst->zk_acl);
        dst->nzk_acl = src->nzk_acl;
    }
    return rc != 0 || dst->nzk_acl != src->nzk_acl ? -1 : 0;
}

const struct queue_config *config_queue(const struct config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->nqueues; i++)
        if (cfg->queues[i] && strcmp(cfg->queues[i]->name, name) == 0)
            return cfg->queues[i];
    return NULL;
}

const char *config_auth(const struct config *cfg, char *scheme, size_t len)
{
    const char *colon = cfg->zk_auth ? strchr(cfg->zk_auth, ':') : NULL;
    if (!colon)
        return NULL; /* validation makes "scheme:credentials" of any value it accepts */
    snprintf(scheme, len, "%.*s", (int)(colon - cfg->zk_auth), cfg->zk_auth);
    return colon + 1;
}
