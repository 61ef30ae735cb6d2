#include "failpoint.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "units.h"

#define NAME_MAX_LEN 63

static struct {
    int read;                   /* the environment was read */
    char name[NAME_MAX_LEN + 1]; /* "" when none is armed (or the variable is malformed) */
    uint64_t nth;               /* 0: every hit */
    uint64_t hits;
} fp;

/* A malformed value arms nothing: a test that misspells it sees its failpoint not fire. */
static void read_env(void)
{
    const char *v = getenv("DEFERD_FAILPOINT");
    const char *colon = v ? strchr(v, ':') : NULL;
    size_t len = v ? (colon ? (size_t)(colon - v) : strlen(v)) : 0;
    fp.read = 1;
    if (!v || len == 0 || len > NAME_MAX_LEN)
        return;
    if (colon && (units_parse_u64(colon + 1, UINT64_MAX, &fp.nth) != 0 || fp.nth == 0))
        return;
    memcpy(fp.name, v, len);
    fp.name[len] = '\0';
}

int failpoint_hit(const char *name)
{
    if (!fp.read)
        read_env();
    if (!fp.name[0] || strcmp(name, fp.name) != 0)
        return 0;
    fp.hits++;
    if (fp.nth != 0 && fp.hits != fp.nth)
        return 0;
    /* the line a test's log shows before the process dies */
    log_warn("failpoint %s fires (hit %llu; DEFERD_FAILPOINT, for tests only)", name,
             (unsigned long long)fp.hits);
    return 1;
}
