#include "zklog.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

static _Atomic int quiet;

void zklog_set_level(enum log_level level)
{
    static const ZooLogLevel theirs[] = {ZOO_LOG_LEVEL_ERROR, ZOO_LOG_LEVEL_WARN,
                                         ZOO_LOG_LEVEL_WARN, ZOO_LOG_LEVEL_INFO};
    zoo_set_debug_level(theirs[level]);
}

void zklog_set_quiet(int on) { quiet = on; }

/* The client's errors that only say a connection broke or could not be made. Each comes
 * from its handle_socket_error_msg(), "Socket [HOST:PORT] zk retcode=R, errno=E(TEXT): WHAT",
 * and both E and WHAT must be known: anything else stays an error. A server that closes the
 * connection (a restart) is reported as EHOSTDOWN by the client's recv_buffer(). */
static int connection_error(const char *text)
{
    static const int errnos[] = {ECONNREFUSED, ECONNRESET, EHOSTDOWN,    EHOSTUNREACH,
                                 ENETUNREACH,  ETIMEDOUT,  ECONNABORTED, EPIPE};
    static const char *const whats[] = {
        "failed while receiving a server response", "failed while flushing send queue",
        "server refused to accept the client",      "connect() call failed",
        "failed to send a handshake packet",        "timed out (exceeded timeout by",
    };
    char tag[32];
    int known = 0;
    if (!strstr(text, " zk retcode="))
        return 0;
    for (size_t i = 0; i < sizeof errnos / sizeof *errnos && !known; i++) {
        snprintf(tag, sizeof tag, ", errno=%d(", errnos[i]);
        known = strstr(text, tag) != NULL;
    }
    for (size_t i = 0; i < sizeof whats / sizeof *whats && known; i++)
        if (strstr(text, whats[i]))
            return 1;
    return 0;
}

/* The client's lines read "TIME:PID(0xTHREAD):ZOO_LEVEL@function@line: text"; our prefix
 * has the time and the level already, so the text starts at the function. */
enum log_level zklog_classify(const char *message, const char **text)
{
    static const struct { const char *tag; enum log_level level; } tags[] = {
        {"ZOO_ERROR@", LOG_ERROR}, {"ZOO_WARN@", LOG_WARN},
        {"ZOO_INFO@", LOG_DEBUG}, {"ZOO_DEBUG@", LOG_DEBUG},
    };
    *text = message;
    for (size_t i = 0; i < sizeof tags / sizeof *tags; i++) {
        const char *at = strstr(message, tags[i].tag);
        if (at) {
            *text = at + strlen(tags[i].tag);
            /* deferd hears of the broken connection from the session watcher and logs
             * the state change itself: the cause is worth a warning, not an error */
            if (tags[i].level == LOG_ERROR && connection_error(*text))
                return LOG_WARN;
            return tags[i].level;
        }
    }
    return LOG_DEBUG;
}

void zklog_line(const char *message)
{
    const char *text;
    enum log_level level = zklog_classify(message, &text);
    if (quiet)
        level = LOG_DEBUG;
    if (level > log_get_level())
        return;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        n--; /* some of its messages end in a newline of their own */
    if (level <= LOG_WARN) /* the client's complaints repeat while a server is away */
        log_at_site(level, "zookeeper client: %.*s", (int)n, text);
    else
        log_msg(level, "zookeeper client: %.*s", (int)n, text);
}
