/* The job life cycle's table (src/daemon/engine/lifecycle.c) against the one in
 * docs/architecture.md, cell by cell: a transition added, dropped or redirected in either
 * fails here. Then every row: each listed state moves to the row's state, every other is
 * refused. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lifecycle.h"

static int state_of(const char *name)
{
    for (int s = 0; s < JS_COUNT; s++)
        if (strcmp(job_state_name((enum job_state)s), name) == 0)
            return s;
    return -1;
}

static int event_of(const char *name)
{
    for (int e = 0; e < JE_COUNT; e++)
        if (strcmp(job_event_name((enum job_event)e), name) == 0)
            return e;
    return -1;
}

/* "A, B, C" into a bit per state; -1 when a name is no state. */
static long states_of(char *list)
{
    long bits = 0;
    for (char *tok = strtok(list, ", "); tok; tok = strtok(NULL, ", ")) {
        int s = state_of(tok);
        if (s < 0)
            return -1;
        bits |= (long)JS_BIT(s);
    }
    return bits;
}

/* One row of the page's table, "| `event` | from | to | sends |": checks it against the
 * code's; returns the event, or -1 for a line that is no row. */
static int check_doc_row(char *line)
{
    char ev[32], from[256], to[32];
    if (sscanf(line, "| `%31[a-z]` | %255[A-Z, ] | %31[A-Z] |", ev, from, to) != 3)
        return -1;
    int e = event_of(ev);
    CHECK(e >= 0);
    if (e < 0)
        return -1;
    const struct job_rule *r = job_rule((enum job_event)e);
    CHECK_STR(job_state_name(r->to), to);
    long bits = states_of(from);
    if (bits != (long)r->from)
        fprintf(stderr, "event %s: the page says from %s\n", ev, from);
    CHECK(bits == (long)r->from);
    return e;
}

static void table_matches_docs(void)
{
    FILE *f = fopen(ARCHITECTURE_MD, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    char line[1024];
    int rows[JE_COUNT] = {0}, in_section = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "## ", 3) == 0)
            in_section = strncmp(line, "## The life cycle of a job", 26) == 0;
        int e = in_section ? check_doc_row(line) : -1;
        if (e >= 0)
            rows[e]++;
    }
    fclose(f);
    for (int e = 0; e < JE_COUNT; e++) {
        if (rows[e] != 1)
            fprintf(stderr, "event %s: %d rows on the page\n", job_event_name(e), rows[e]);
        CHECK(rows[e] == 1);
    }
}

/* Each row: its states lead to its state, all others are refused. */
static void every_row(void)
{
    for (int e = 0; e < JE_COUNT; e++) {
        const struct job_rule *r = job_rule((enum job_event)e);
        CHECK(r->from != 0 && r->sends && *r->sends);
        for (int s = 0; s < JS_COUNT; s++) {
            int want = r->from & JS_BIT(s) ? (int)r->to : -1;
            CHECK(job_next_state((enum job_state)s, (enum job_event)e) == want);
        }
    }
    CHECK(job_next_state(JS_COUNT, JE_DUE) == -1);
    CHECK(job_next_state(JS_READY, JE_COUNT) == -1);
    CHECK_STR(job_state_name(JS_COUNT), "?");
    CHECK_STR(job_event_name(JE_COUNT), "?");
}

/* Rules of the life cycle that matter beyond any one row. */
static void invariants(void)
{
    /* a consumer's job leaves INFLIGHT only by its settle, the session's end (due, park)
     * or a lock check, never straight to a heap of waiting jobs */
    CHECK(job_next_state(JS_INFLIGHT, JE_WAIT) == -1);
    CHECK(job_next_state(JS_INFLIGHT, JE_ARM) == -1);
    CHECK(job_next_state(JS_INFLIGHT, JE_LOCK) == -1);
    /* a job is pushed only with its lock: INFLIGHT is reached from LOCKING (or from itself
     * and a settle that kept the lock), never from a heap */
    for (int s = 0; s < JS_COUNT; s++)
        if (s != JS_LOCKING && s != JS_INFLIGHT && s != JS_SETTLING) {
            CHECK(job_next_state((enum job_state)s, JE_DELIVER) == -1);
            CHECK(job_next_state((enum job_state)s, JE_KEEP) == -1);
        }
    /* only a lock of ours is armed */
    CHECK(job_next_state(JS_READY, JE_ARM) == -1);
    CHECK(job_next_state(JS_DELAYED, JE_ARM) == -1);
    /* a lock is taken only from a heap of waiting jobs */
    CHECK(job_next_state(JS_HELD, JE_LOCK) == -1);
    CHECK(job_next_state(JS_SETTLING, JE_LOCK) == -1);
}

int main(void)
{
    table_matches_docs();
    every_row();
    invariants();
    printf("test_lifecycle: %d checks, %d failed\n", check_count, check_failures);
    return check_failures != 0;
}
