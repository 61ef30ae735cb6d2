/* <syslog.h> defines LOG_INFO and LOG_DEBUG as priorities, which log.h's levels are also
 * called: take what we need from it first, then drop its two names so log.h's stand. */
#include <syslog.h>

static const int syslog_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
static const struct { const char *name; int value; } facilities[] = {
    {"daemon", LOG_DAEMON}, {"local0", LOG_LOCAL0}, {"local1", LOG_LOCAL1},
    {"local2", LOG_LOCAL2}, {"local3", LOG_LOCAL3}, {"local4", LOG_LOCAL4},
    {"local5", LOG_LOCAL5}, {"local6", LOG_LOCAL6}, {"local7", LOG_LOCAL7},
};
#undef LOG_INFO
#undef LOG_DEBUG

#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Read on the ZooKeeper client's threads, set on the loop: atomics. */
static _Atomic int current = LOG_INFO;
static _Atomic int target = LOG_TO_STDERR;
static _Atomic int stamped = 1;  /* timestamp prefix on stderr lines */
static _Atomic int journal;      /* stderr is the journal: "<N>" priority prefix */
static _Atomic int syslog_facility = LOG_DAEMON;
static _Atomic unsigned long long dropped; /* stderr lines that could not be written */
static const char *ident = "deferd";
static const char *const names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level level) { current = level; }
unsigned long long log_dropped(void) { return dropped; }
enum log_level log_get_level(void) { return (enum log_level)current; }

static int parse_word(const char *s, const char *const *words, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, words[i]) == 0)
            return i;
    return -1;
}

int log_level_parse(const char *s, enum log_level *out)
{
    int i = parse_word(s, names, 4);
    if (i >= 0)
        *out = (enum log_level)i;
    return i >= 0 ? 0 : -1;
}

int log_target_parse(const char *s, enum log_target *out)
{
    static const char *const words[] = {"stderr", "syslog"};
    int i = parse_word(s, words, 2);
    if (i >= 0)
        *out = (enum log_target)i;
    return i >= 0 ? 0 : -1;
}

int log_stamps_parse(const char *s, enum log_stamps *out)
{
    static const char *const words[] = {"auto", "yes", "no"};
    int i = parse_word(s, words, 3);
    if (i >= 0)
        *out = (enum log_stamps)i;
    return i >= 0 ? 0 : -1;
}

int log_facility_parse(const char *s, int *out)
{
    for (size_t i = 0; i < sizeof facilities / sizeof *facilities; i++) {
        if (strcmp(s, facilities[i].name) == 0) {
            *out = facilities[i].value;
            return 0;
        }
    }
    return -1;
}

const char *log_facility_name(int facility)
{
    for (size_t i = 0; i < sizeof facilities / sizeof *facilities; i++)
        if (facilities[i].value == facility)
            return facilities[i].name;
    return "?";
}

/* systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected; the variable is
 * inherited, so it counts only while stderr is still that very stream. */
static int stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) != 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_configure(const char *name, enum log_target to, int facility, enum log_stamps stamps)
{
    if (ident != name)
        ident = name; /* only before the client's threads exist: a reload passes the same */
    journal = stderr_is_journal();
    stamped = stamps == LOG_STAMPS_YES || (stamps == LOG_STAMPS_AUTO && !journal);
    if (to == LOG_TO_SYSLOG) {
        struct stat st;
        if (stat("/dev/log", &st) != 0)
            log_warn("log_target = syslog, but /dev/log does not exist: no syslog daemon is "
                     "listening and log lines will be lost");
        closelog();
        openlog(ident, LOG_PID, facility); /* glibc's syslog() locks: safe on any thread */
    } else if (target == LOG_TO_SYSLOG) {
        closelog();
    }
    syslog_facility = facility;
    target = to;
}

/* The journal keeps its own timestamps and the program's name; it reads "<N>" as the
 * line's priority. */
static size_t prefix(char *line, size_t size, enum log_level level)
{
    char pri[8] = "";
    if (journal)
        snprintf(pri, sizeof pri, "<%d>", syslog_prio[level]);
    if (!stamped)
        return (size_t)snprintf(line, size, "%s%s%s%s: ", pri, journal ? "" : ident,
                                journal ? "" : " ", names[level]);
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    return (size_t)snprintf(line, size, "%s%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ", pri,
                            tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                            tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, ident, names[level]);
}

/* A full disk or a pipe whose reader left: the line is lost, and so would be any complaint
 * written where it went. Counted (deferd_log_dropped_total); the first is said to syslog,
 * the one other place that may be listening. Never retried: logging must not stall work. */
static void stderr_failed(int err)
{
    clearerr(stderr);
    if (atomic_fetch_add(&dropped, 1) != 0)
        return;
    openlog(ident, LOG_PID, syslog_facility); /* as log_target = syslog would */
    syslog(LOG_WARNING, "cannot write log lines to stderr (%s); dropping them, counted in "
           "deferd_log_dropped_total", strerror(err));
}

static void emit(enum log_level level, const char *msg);

void log_msg(enum log_level level, const char *fmt, ...)
{
    if ((int)level > current)
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(level, msg);
}

static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned long long left_out_total;

unsigned long long log_left_out(void) { return left_out_total; }

/* Whether SITE may write a line now; *BEFORE is what it left out since its last line. */
static int site_admits(struct log_site *site, unsigned long long *before)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int ok;
    pthread_mutex_lock(&sites_lock);
    if (site->lines == 0 || now - site->period_start_ms >= LOG_SITE_PERIOD_MS) {
        site->period_start_ms = now;
        site->lines = 0;
    }
    if ((ok = site->lines < LOG_SITE_BURST)) {
        site->lines++;
        *before = site->left_out;
        site->left_out = 0;
    } else {
        site->left_out++;
        left_out_total++;
    }
    pthread_mutex_unlock(&sites_lock);
    return ok;
}

void log_site_msg(struct log_site *site, enum log_level level, const char *fmt, ...)
{
    unsigned long long before;
    if ((int)level > current || !site_admits(site, &before))
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (before && n >= 0 && (size_t)n < sizeof msg)
        snprintf(msg + n, sizeof msg - (size_t)n, " (%llu more lines from here left out before "
                 "this one: over %d in %d s)", before, LOG_SITE_BURST, LOG_SITE_PERIOD_MS / 1000);
    emit(level, msg);
}

static void emit(enum log_level level, const char *msg)
{
    char line[2200];
    if (target == LOG_TO_SYSLOG) {
        syslog(syslog_prio[level], "%s: %s", names[level], msg);
        return;
    }
    size_t n = prefix(line, sizeof line, level);
    snprintf(line + n, sizeof line - n, "%s\n", msg);
    /* One fputs per line keeps lines whole when several threads log. */
    if (fputs(line, stderr) == EOF)
        stderr_failed(errno);
}
