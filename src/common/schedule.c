#include "schedule.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cron.h"
#include "names.h"
#include "tzone.h"
#include "units.h"

int schedule_next(const struct schedule_config *s, int64_t after_ms, int64_t *next_ms)
{
    if (s->every_ms) {
        int64_t anchor = (int64_t)s->anchor_ms, every = (int64_t)s->every_ms;
        if (after_ms < anchor) {
            *next_ms = anchor;
            return 0;
        }
        *next_ms = anchor + ((after_ms - anchor) / every + 1) * every;
        return 0;
    }
    int64_t after_s = after_ms >= 0 ? after_ms / 1000 : -((-after_ms + 999) / 1000), next_s;
    if (cron_next(&s->cron_expr, s->tz, after_s, &next_s) != 0)
        return -1;
    *next_ms = next_s * 1000;
    return 0;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

uint64_t schedule_jitter(const struct schedule_config *s, int64_t occ_ms)
{
    if (!s->jitter_ms)
        return 0;
    char buf[SCHEDULE_NAME_MAX + 32];
    int n = snprintf(buf, sizeof buf, "%s:%" PRId64, s->name, occ_ms);
    uint64_t h = fnv1a(FNV_BASIS, buf, (size_t)n);
    h ^= h >> 29; /* FNV's low bits mix poorly: fold the high ones in */
    return h % (s->jitter_ms + 1);
}

void schedule_fingerprint(const struct schedule_config *s, char out[SCHEDULE_FP_LEN + 1])
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s\n%s\n%s\n%" PRIu64 "\n%" PRIu64 "\n%s\n%" PRIu64,
                     s->name, s->queue, s->cron, s->every_ms, s->anchor_ms,
                     s->every_ms ? "" : s->timezone, s->jitter_ms);
    snprintf(out, SCHEDULE_FP_LEN + 1, "%016" PRIx64,
             fnv1a(FNV_BASIS, buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1));
}

void schedule_describe(const struct schedule_config *s, char *buf, size_t len)
{
    char every[32], anchor[40];
    if (s->cron[0]) {
        snprintf(buf, len, "cron \"%s\" in %s", s->cron, s->timezone);
        return;
    }
    /* as deferd.ini reads them: every = 10s, anchor = a UTC time */
    units_format_duration(s->every_ms, every, sizeof every);
    units_format_time((int64_t)s->anchor_ms, anchor, sizeof anchor);
    snprintf(buf, len, "every %s from %s", every, anchor);
}

void schedule_format_instant(const struct schedule_config *s, int64_t ms, char *buf,
                             size_t len)
{
    char local[96], utc[40];
    tzone_format(s->tz, ms / 1000, local, sizeof local);
    units_format_time(ms, utc, sizeof utc);
    snprintf(buf, len, "%s  %s", local, utc);
}

void schedule_key(const struct schedule_config *s, int64_t occ_ms, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%" PRId64, s->name, occ_ms);
}

void schedule_catchup_key(const struct schedule_config *s, int64_t occ_ms, uint64_t count,
                          char *buf, size_t len)
{
    snprintf(buf, len, "%s:%" PRId64 ":m%" PRIu64, s->name, occ_ms,
             count > 99999999 ? (uint64_t)99999999 : count);
}

void schedule_run_key(const struct schedule_config *s, int64_t now_ms, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%" PRId64 ":run", s->name, now_ms);
}

int schedule_state_format(const struct schedule_state *st, char *buf, size_t len)
{
    int n = snprintf(buf, len, "v1 last=%" PRId64 " fp=%s key=%s", st->last_ms, st->fp,
                     st->key[0] ? st->key : "-");
    return n > 0 && (size_t)n < len ? n : -1;
}

int schedule_state_parse(const char *data, size_t len, struct schedule_state *st)
{
    char buf[SCHEDULE_STATE_MAX], fp[SCHEDULE_FP_LEN + 2], key[NAMES_KEY_MAX + 2];
    long long last;
    int end = 0;
    if (!data || len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, data, len);
    buf[len] = '\0';
    if (sscanf(buf, "v1 last=%lld fp=%17[0-9a-f] key=%65s%n", &last, fp, key, &end) != 3 ||
        (size_t)end != len || last < 0 || strlen(fp) != SCHEDULE_FP_LEN)
        return -1;
    int none = strcmp(key, "-") == 0;
    if (!none && (strlen(key) > NAMES_KEY_MAX || !names_valid_key(key)))
        return -1;
    st->last_ms = last;
    memcpy(st->fp, fp, sizeof st->fp);
    memcpy(st->key, none ? "" : key, none ? 1 : strlen(key) + 1);
    return 0;
}
