/* Levelled logging to stderr or syslog; one line per event, with context in the message.
 * Safe on any thread: the ZooKeeper client's threads log through it too (zklog.c). */
#ifndef DEFERD_LOG_H
#define DEFERD_LOG_H

/* <syslog.h> has LOG_INFO and LOG_DEBUG too: only log.c includes it, and keeps these. */
enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };
enum log_target { LOG_TO_STDERR, LOG_TO_SYSLOG };
/* Timestamps on stderr lines: auto drops them when stderr is the systemd journal (it keeps
 * its own), which also gets each line's priority as a "<N>" prefix. */
enum log_stamps { LOG_STAMPS_AUTO, LOG_STAMPS_YES, LOG_STAMPS_NO };

void log_set_level(enum log_level level);
/* Lines that could not be written to stderr (ENOSPC, EPIPE, ...), since the start. */
unsigned long long log_dropped(void);
enum log_level log_get_level(void);
/* Where lines go from now on. IDENT names the program in each line (and to syslog); it must
 * outlive the logger. FACILITY is a value from log_facility_parse(). */
void log_configure(const char *ident, enum log_target target, int facility,
                   enum log_stamps stamps);

/* Parsers for the config words; 0 on success, -1 for an unknown word. */
int log_level_parse(const char *s, enum log_level *out);
int log_target_parse(const char *s, enum log_target *out);
int log_facility_parse(const char *s, int *out); /* daemon, local0 .. local7 */
int log_stamps_parse(const char *s, enum log_stamps *out);
const char *log_facility_name(int facility);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One call site's share of the log: at most LOG_SITE_BURST lines in LOG_SITE_PERIOD_MS; the
 * rest are counted, and the site's next line that is written says how many were left out.
 * A failure that repeats at loop speed costs a few lines, not the disk. */
#define LOG_SITE_BURST 100
#define LOG_SITE_PERIOD_MS 10000
struct log_site {
    long long period_start_ms;
    unsigned lines;
    unsigned long long left_out;
};
void log_site_msg(struct log_site *site, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Lines left out by call sites over their share, since the start. */
unsigned long long log_left_out(void);

#define log_at_site(level, ...) \
    do { static struct log_site log_site_; log_site_msg(&log_site_, level, __VA_ARGS__); } \
    while (0)
#define log_error(...) log_at_site(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_at_site(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_at_site(LOG_INFO, __VA_ARGS__)
#define log_debug(...) \
    do { if (log_get_level() >= LOG_DEBUG) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
