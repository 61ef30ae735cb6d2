#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level current = LOG_INFO;
static const char *const names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level level) { current = level; }
enum log_level log_get_level(void) { return current; }

int log_level_parse(const char *s, enum log_level *out)
{
    for (int i = 0; i <= LOG_DEBUG; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > current)
        return;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ deferd %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per line keeps lines whole when several threads log. */
    size_t len = strlen(line);
    if (len < sizeof line - 1) {
        line[len] = '\n';
        line[len + 1] = '\0';
    }
    fputs(line, stderr);
}
