/* Schedules' occurrences as a consumer sees them (docs/schedules.md): each job's key is
 * "<schedule>:<instant ms>[:<suffix>]", the last field of its id ("-k<key>"). */
#ifndef DEFERD_TEST_HARNESS_SCHED_H
#define DEFERD_TEST_HARNESS_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include <deferd/client.h>

#define OCC_MAX 512

struct occ {
    char sched[48];
    int64_t instant;        /* the ms in its key */
    char suffix[16];        /* "" for an occurrence, "m<count>" for a catch-up */
    int64_t due, recv;      /* its due time; when the consumer got it (wall ms) */
    uint32_t attempt;
};

struct occs {
    struct occ v[OCC_MAX];
    size_t n;
};

/* The occurrence a job's id names; 0, or -1 when it has no schedule's key. */
int occ_parse(const char *id, struct occ *o);
/* Takes every job pushed to C until wall time UNTIL (acking each after HOLD_MS, during
 * which a second push counts in *OVERLAPS if not NULL) into OUT. */
void occ_collect(deferd_client *c, struct occs *out, int64_t until, int hold_ms, int *overlaps);
/* Occurrences of SCHED in OUT with instants in [FROM, TO] (suffix "" only unless ANY). */
size_t occ_count(const struct occs *out, const char *sched, int64_t from, int64_t to, int any);
/* The first of SCHED with this suffix prefix (e.g. "m"), or NULL. */
const struct occ *occ_find(const struct occs *out, const char *sched, const char *suffix);

#endif
