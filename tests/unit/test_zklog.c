/* The ZooKeeper client's log lines at our levels: connection errors deferd handles are
 * warnings, every other error stays an error. */
#include <errno.h>

#include "check.h"
#include "zklog.h"

#define PREFIX "2025-01-31 12:00:00,123:4242(0x7f00deadbeef):"

/* The level of the client's line PREFIX + LINE, and its text from the function on. */
static void expect(const char *line, enum log_level level)
{
    char message[600];
    const char *text = NULL;
    snprintf(message, sizeof message, PREFIX "%s", line);
    enum log_level got = zklog_classify(message, &text);
    CHECK(got == level);
    if (got != level)
        fprintf(stderr, "  level %d for: %s\n", (int)got, line);
    CHECK(text && strchr(line, '@') && strcmp(text, strchr(line, '@') + 1) == 0);
}

/* "ZOO_ERROR@FUNC@1: Socket [127.0.0.1:2181] zk retcode=-4, errno=E(TEXT): WHAT" */
static void expect_socket(int err, const char *what, enum log_level level)
{
    char line[400];
    snprintf(line, sizeof line, "ZOO_ERROR@check_events@3011: Socket [127.0.0.1:2181] zk "
             "retcode=-4, errno=%d(%s): %s", err, strerror(err), what);
    expect(line, level);
}

int main(void)
{
    /* what a ZooKeeper restart or a server that is down makes the client say */
    expect_socket(EHOSTDOWN, "failed while receiving a server response", LOG_WARN);
    expect_socket(ECONNREFUSED, "server refused to accept the client", LOG_WARN);
    expect_socket(ECONNRESET, "failed while flushing send queue", LOG_WARN);
    expect_socket(ETIMEDOUT, "connection to [127.0.0.1:2181] timed out (exceeded timeout by "
                  "12ms)", LOG_WARN);
    expect_socket(EHOSTUNREACH, "connect() call failed", LOG_WARN);
    expect_socket(EPIPE, "failed to send a handshake packet: Broken pipe", LOG_WARN);
    /* an errno or a text that is not a plain connection failure stays an error */
    expect_socket(ENOMEM, "failed while receiving a server response", LOG_ERROR);
    expect_socket(EHOSTDOWN, "something new", LOG_ERROR);
    expect_socket(0, "failed while receiving a server response", LOG_ERROR);
    expect("ZOO_ERROR@getaddrs@1: getaddrinfo: Name or service not known", LOG_ERROR);
    expect("ZOO_ERROR@handle_error@1: Authentication scheme digest failed. Connection closed.",
           LOG_ERROR);
    expect("ZOO_ERROR@x@1: Host is down, errno=112(Host is down): connect() call failed",
           LOG_ERROR); /* not the client's socket error format */
    /* other levels as they were */
    expect("ZOO_WARN@zookeeper_interest@1: Delaying connection after exhaustively trying all "
           "servers [127.0.0.1:2181]", LOG_WARN);
    expect("ZOO_INFO@check_events@1: initiated connection to server [127.0.0.1:2181]",
           LOG_DEBUG);
    expect("ZOO_DEBUG@x@1: packet", LOG_DEBUG);
    const char *text;
    CHECK(zklog_classify("no tag at all", &text) == LOG_DEBUG && strcmp(text, "no tag at all") == 0);
    return check_report("zklog");
}
