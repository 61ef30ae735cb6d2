#include "harness_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int occ_parse(const char *id, struct occ *o)
{
    const char *k = strstr(id, "-k");
    memset(o, 0, sizeof *o);
    if (!k)
        return -1;
    k += 2;
    const char *colon = strchr(k, ':');
    if (!colon || (size_t)(colon - k) >= sizeof o->sched)
        return -1;
    memcpy(o->sched, k, (size_t)(colon - k));
    char *end;
    o->instant = strtoll(colon + 1, &end, 10);
    if (end == colon + 1)
        return -1;
    if (*end == ':')
        snprintf(o->suffix, sizeof o->suffix, "%s", end + 1);
    else if (*end)
        return -1;
    return 0;
}

void occ_collect(deferd_client *c, struct occs *out, int64_t until, int hold_ms, int *overlaps)
{
    deferd_job job, extra;
    while (now_ms() < until) {
        int64_t left = until - now_ms();
        if (next_job_push(c, &job, (int)(left < 200 ? left : 200)) != 0)
            continue;
        struct occ o;
        if (occ_parse(job.id, &o) == 0 && out->n < OCC_MAX) {
            o.due = job.due_ms;
            o.recv = now_ms();
            o.attempt = job.attempt;
            out->v[out->n++] = o;
        } else {
            fprintf(stderr, "unexpected job %s\n", job.id);
            CHECK(!"a job that is no schedule's occurrence");
        }
        for (int64_t end = now_ms() + hold_ms; hold_ms > 0 && now_ms() < end;) {
            if (next_job_push(c, &extra, (int)(end - now_ms())) != 0)
                continue;
            if (overlaps)
                (*overlaps)++;
            fprintf(stderr, "pushed while %s was held: %s\n", job.id, extra.id);
            CHECK(deferd_ack(c, extra.id) == DEFERD_OK);
            deferd_job_clear(&extra);
        }
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
}

size_t occ_count(const struct occs *out, const char *sched, int64_t from, int64_t to, int any)
{
    size_t n = 0;
    for (size_t i = 0; i < out->n; i++) {
        const struct occ *o = &out->v[i];
        n += strcmp(o->sched, sched) == 0 && o->instant >= from && o->instant <= to &&
             (any || !o->suffix[0]);
    }
    return n;
}

const struct occ *occ_find(const struct occs *out, const char *sched, const char *suffix)
{
    for (size_t i = 0; i < out->n; i++)
        if (strcmp(out->v[i].sched, sched) == 0 &&
            strncmp(out->v[i].suffix, suffix, strlen(suffix)) == 0 && out->v[i].suffix[0])
            return &out->v[i];
    return NULL;
}
