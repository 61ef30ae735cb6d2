#include "zklog.h"

#include <stdatomic.h>
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

/* The client's lines read "TIME:PID(0xTHREAD):ZOO_LEVEL@function@line: text"; our prefix
 * has the time and the level already, so the text starts at the function. */
void zklog_line(const char *message)
{
    static const struct { const char *tag; enum log_level level; } tags[] = {
        {"ZOO_ERROR@", LOG_ERROR}, {"ZOO_WARN@", LOG_WARN},
        {"ZOO_INFO@", LOG_DEBUG}, {"ZOO_DEBUG@", LOG_DEBUG},
    };
    enum log_level level = LOG_DEBUG;
    const char *text = message;
    for (size_t i = 0; i < sizeof tags / sizeof *tags; i++) {
        const char *at = strstr(message, tags[i].tag);
        if (at) {
            level = tags[i].level;
            text = at + strlen(tags[i].tag);
            break;
        }
    }
    if (quiet)
        level = LOG_DEBUG;
    if (level > log_get_level())
        return;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        n--; /* some of its messages end in a newline of their own */
    log_msg(level, "zookeeper client: %.*s", (int)n, text);
}
