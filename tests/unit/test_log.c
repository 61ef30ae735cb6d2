/* Each call site's share of the log (log_site_msg): a failure repeated at loop speed writes
 * LOG_SITE_BURST lines per period, the rest are counted, and the site's next line written
 * says how many it left out; other sites are not held back by a noisy one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static FILE *capture;

/* Lines written to stderr since the last call, and the last of them in LAST. */
static int lines_since(char *last, size_t len)
{
    static long at;
    char line[4096];
    int n = 0;
    fflush(stderr);
    fseek(capture, at, SEEK_SET);
    while (fgets(line, sizeof line, capture)) {
        n++;
        snprintf(last, len, "%s", line);
    }
    at = ftell(capture);
    return n;
}

static struct log_site site;

static void noisy(int i)
{
    log_site_msg(&site, LOG_WARN, "queue q: pack write %d failed: out of memory", i);
}

static void quiet(void) { log_warn("another place"); }
static void macro_site(void) { log_info("every log_info is a site of its own"); }

int main(void)
{
    char last[4096] = "";
    capture = tmpfile();
    if (!capture || dup2(fileno(capture), STDERR_FILENO) < 0)
        return 1;
    log_configure("deferd", LOG_TO_STDERR, 0, LOG_STAMPS_NO);
    for (int i = 0; i < 100000; i++)
        noisy(i);
    CHECK(lines_since(last, sizeof last) == LOG_SITE_BURST);
    CHECK(log_left_out() == 100000 - LOG_SITE_BURST);
    quiet(); /* another site writes at once */
    CHECK(lines_since(last, sizeof last) == 1);
    CHECK_CONTAINS(last, "another place");

    /* the period ends (its start moved back, as a test clock would): the next line comes,
     * saying how many were left out */
    site.period_start_ms -= LOG_SITE_PERIOD_MS;
    noisy(-1);
    CHECK(lines_since(last, sizeof last) == 1);
    CHECK_CONTAINS(last, "pack write -1 failed");
    CHECK_CONTAINS(last, "(99900 more lines from here left out before this one: over 100 in 10 s)");
    noisy(-2); /* and the one after that says nothing more */
    CHECK(lines_since(last, sizeof last) == 1);
    CHECK(strstr(last, "left out") == NULL);

    /* the macros give each call site its own share */
    for (int i = 0; i < 1000; i++)
        macro_site();
    CHECK(lines_since(last, sizeof last) == LOG_SITE_BURST);
    /* a level that is off costs no share */
    log_set_level(LOG_WARN);
    for (int i = 0; i < 1000; i++)
        macro_site();
    CHECK(lines_since(last, sizeof last) == 0);
    CHECK(log_left_out() == 100000 - LOG_SITE_BURST + 1000 - LOG_SITE_BURST);
    return check_report("unit.log");
}
