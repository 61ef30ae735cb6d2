/* [schedule NAME] sections of deferd.ini: a recurring job (docs/schedules.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_int.h"
#include "names.h"
#include "tzone.h"
#include "units.h"

#define EVERY_MIN_MS 1000ULL
#define EVERY_MAX_MS (86400000ULL * 366)
#define AHEAD_ALLOW_MS 10000 /* overlap = allow: besides the next occurrence, always put */
#define AHEAD_SKIP_MS 250    /* overlap = skip: the previous one is looked at this late */

/* Schedule names become keys ("<name>:<ms>"), which start with a letter or a digit. */
static int valid_name(const char *name)
{
    size_t n = strlen(name);
    char c = name[0];
    int alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return n > 0 && n <= SCHEDULE_NAME_MAX && alnum && names_valid_queue(name);
}

static struct schedule_config *find(struct config *c, const char *name)
{
    return (struct schedule_config *)config_schedule(c, name);
}

void cfg_schedule_section(struct load *ld, const char *name)
{
    struct config *c = ld->cfg;
    if (find(c, name)) {
        cfg_fail(ld, "duplicate section [schedule %s]", name);
        return;
    }
    if (!valid_name(name)) {
        cfg_fail(ld, "bad schedule name '%s' (1-%d of A-Z a-z 0-9 _ . -, starting with a "
                 "letter or a digit)", name, SCHEDULE_NAME_MAX);
        return;
    }
    struct schedule_config **grown = realloc(c->schedules, (c->nschedules + 1) * sizeof *grown);
    struct schedule_config *s = calloc(1, sizeof *s);
    if (grown)
        c->schedules = grown;
    if (!grown || !s) {
        free(s);
        cfg_fail(ld, "out of memory");
        return;
    }
    c->schedules[c->nschedules++] = s;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->line = ld->line;
    snprintf(s->timezone, sizeof s->timezone, "UTC");
    s->misfire = MISFIRE_ONCE;
    s->misfire_grace_ms = 86400000;
}

/* The file's bytes, at most MAX of them, into S's payload; 1, or 0 with the error. */
static int read_payload_file(struct load *ld, struct schedule_config *s, const char *path,
                             uint64_t max)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
    int e = fd < 0 || fstat(fd, &st) != 0 ? errno : 0;
    if (e || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return cfg_fail(ld, "'payload_file': %s: %s", path, e ? strerror(e)
                                                             : "not a regular file");
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return cfg_fail(ld, "'payload_file': %s holds %lld bytes, more than %llu", path,
                        (long long)st.st_size, (unsigned long long)max);
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (n != (ssize_t)st.st_size) {
        free(buf);
        return cfg_fail(ld, "'payload_file': %s: cannot read it whole", path);
    }
    free(s->payload);
    s->payload = buf;
    s->len = (size_t)n;
    free(s->payload_file);
    s->payload_file = strdup(path);
    return s->payload_file != NULL;
}

static int set_payload(struct load *ld, struct schedule_config *s, const char *value)
{
    free(s->payload);
    s->len = strlen(value);
    s->payload = (unsigned char *)strdup(value);
    return s->payload ? 1 : cfg_fail(ld, "out of memory");
}

static int set_choice(struct load *ld, int *dst, const char *key, const char *value,
                      const char *const *names, const char *shown)
{
    for (int i = 0; names[i]; i++) {
        if (strcmp(value, names[i]) == 0) {
            *dst = i;
            return 1;
        }
    }
    return cfg_fail(ld, "'%s': '%s' is not %s", key, value, shown);
}

/* When: cron, every, anchor, timezone. */
static int when_key(struct load *ld, struct schedule_config *s, const char *key,
                    const char *value)
{
    char err[256];
    if (strcmp(key, "cron") == 0) {
        if (strlen(value) >= sizeof s->cron)
            return cfg_fail(ld, "'cron': expression longer than %zu bytes", sizeof s->cron - 1);
        if (cron_parse(value, &s->cron_expr, err, sizeof err) != 0)
            return cfg_fail(ld, "'cron': %s", err);
        snprintf(s->cron, sizeof s->cron, "%s", value);
        return 1;
    }
    if (strcmp(key, "every") == 0)
        return cfg_set_duration(ld, &s->every_ms, key, value, EVERY_MIN_MS, EVERY_MAX_MS);
    if (strcmp(key, "anchor") == 0) {
        if (units_parse_time_ms(value, 0, &s->anchor_ms) != 0 || strncmp(value, "now", 3) == 0)
            return cfg_fail(ld, "'anchor': '%s' is not epoch milliseconds or a UTC time like "
                            "2026-01-01T00:00Z", value);
        return 1;
    }
    struct tzone *tz = NULL;
    if (strlen(value) >= sizeof s->timezone || tzone_load(value, &tz, err, sizeof err) != 0)
        return cfg_fail(ld, "'timezone': %s", strlen(value) >= sizeof s->timezone ?
                        "name too long" : err);
    tzone_free(s->tz);
    s->tz = tz;
    snprintf(s->timezone, sizeof s->timezone, "%s", value);
    return 1;
}

const char *const schedule_misfire_names[] = {"skip", "once", "all", NULL};
const char *const schedule_overlap_names[] = {"allow", "skip", NULL};

int cfg_schedule_key(struct load *ld, const char *name, const char *key, const char *value)
{
    struct schedule_config *s = find(ld->cfg, name);
    if (!s)
        return 0; /* its header was refused */
    if (strcmp(key, "queue") == 0) {
        if (!names_valid_queue(value))
            return cfg_fail(ld, "'queue': bad queue name '%s'", value);
        snprintf(s->queue, sizeof s->queue, "%s", value);
        return 1;
    }
    if (strcmp(key, "payload") == 0)
        return set_payload(ld, s, value);
    if (strcmp(key, "payload_file") == 0)
        return read_payload_file(ld, s, value, CONFIG_MAX_PAYLOAD_LIMIT);
    if (strcmp(key, "priority") == 0)
        return (s->has_prio = 1), cfg_set_u32(ld, &s->priority, key, value, 0, UINT32_MAX);
    if (strcmp(key, "ttr") == 0)
        return (s->has_ttr = 1), cfg_set_duration(ld, &s->ttr_ms, key, value, 1000,
                                                  86400000ULL * 7);
    if (!strcmp(key, "cron") || !strcmp(key, "every") || !strcmp(key, "anchor") ||
        !strcmp(key, "timezone"))
        return when_key(ld, s, key, value);
    if (strcmp(key, "jitter") == 0)
        return cfg_set_duration(ld, &s->jitter_ms, key, value, 0, 3600000);
    if (strcmp(key, "misfire") == 0)
        return set_choice(ld, (int *)&s->misfire, key, value, schedule_misfire_names, "skip, once or all");
    if (strcmp(key, "misfire_grace") == 0)
        return cfg_set_duration(ld, &s->misfire_grace_ms, key, value, 1000, 86400000ULL * 366);
    if (strcmp(key, "overlap") == 0)
        return set_choice(ld, (int *)&s->overlap, key, value, schedule_overlap_names, "allow or skip");
    if (strcmp(key, "ahead") == 0)
        return (s->has_ahead = 1), cfg_set_duration(ld, &s->ahead_ms, key, value, 100,
                                                    86400000);
    char shown[SCHEDULE_NAME_MAX + 16];
    snprintf(shown, sizeof shown, "schedule %s", name);
    return cfg_unknown_key(ld, SEC_SCHEDULE, shown, key);
}

/* What the section says about when it fires, checked as a whole. */
static int validate_when(struct load *ld, struct schedule_config *s)
{
    if (!s->cron[0] == !s->every_ms)
        return cfg_fail_at(ld, s->line, "[schedule %s]: give exactly one of cron (e.g. cron = "
                           "0 3 * * *) and every (e.g. every = 5m)", s->name);
    if (s->every_ms && s->tz)
        return cfg_fail_at(ld, s->line, "[schedule %s]: timezone applies to cron only (every "
                           "counts absolute time from its anchor)", s->name);
    if (s->cron[0] && s->anchor_ms)
        return cfg_fail_at(ld, s->line, "[schedule %s]: anchor applies to every only",
                           s->name);
    uint64_t period = s->every_ms ? s->every_ms : 60000; /* cron: at most once a minute */
    if (!s->has_ahead)
        s->ahead_ms = s->overlap == OVERLAP_SKIP ? AHEAD_SKIP_MS : AHEAD_ALLOW_MS;
    if (s->overlap == OVERLAP_SKIP && s->ahead_ms * 2 > period)
        return cfg_fail_at(ld, s->line, "[schedule %s]: with overlap = skip, ahead must be at "
                           "most half the interval (the previous occurrence is looked at "
                           "then)", s->name);
    if (s->jitter_ms >= period)
        return cfg_fail_at(ld, s->line, "[schedule %s]: jitter must be shorter than the "
                           "interval", s->name);
    if (!s->tz && tzone_load("UTC", &s->tz, ld->err, ld->errlen) != 0)
        return cfg_fail_at(ld, s->line, "out of memory");
    return 0;
}

static int validate_schedule(struct load *ld, struct schedule_config *s)
{
    if (!s->queue[0])
        return cfg_fail_at(ld, s->line, "[schedule %s]: missing required key 'queue'", s->name);
    const struct queue_config *q = config_queue(ld->cfg, s->queue);
    if (!q)
        return cfg_fail_at(ld, s->line, "[schedule %s]: no [queue %s] is configured", s->name,
                           s->queue);
    if (q->format != QF_NATIVE)
        return cfg_fail_at(ld, s->line, "[schedule %s]: queue %s is in a Curator format; "
                           "schedules need deferd's own (their occurrences are keyed)",
                           s->name, s->queue);
    if (s->len > ld->cfg->max_payload) /* checked here: [daemon] may come later */
        return cfg_fail_at(ld, s->line, "[schedule %s]: payload of %zu bytes is longer than "
                           "[daemon] max_payload %llu", s->name, s->len,
                           (unsigned long long)ld->cfg->max_payload);
    return validate_when(ld, s);
}

int cfg_validate_schedules(struct load *ld)
{
    for (size_t i = 0; i < ld->cfg->nschedules; i++)
        if (validate_schedule(ld, ld->cfg->schedules[i]) != 0)
            return -1;
    return 0;
}

void cfg_free_schedules(struct config *cfg)
{
    for (size_t i = 0; i < cfg->nschedules; i++) {
        struct schedule_config *s = cfg->schedules[i];
        if (!s)
            continue; /* moved into the running config by a reload */
        free(s->payload);
        free(s->payload_file);
        tzone_free(s->tz);
        free(s);
    }
    free(cfg->schedules);
    cfg->schedules = NULL;
    cfg->nschedules = 0;
}

const struct schedule_config *config_schedule(const struct config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->nschedules; i++)
        if (cfg->schedules[i] && strcmp(cfg->schedules[i]->name, name) == 0)
            return cfg->schedules[i];
    return NULL;
}
