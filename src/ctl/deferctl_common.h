/* What every deferctl command uses (deferctl_common.c), below them all: exit statuses,
 * messages, argument checks, the connection to deferd, the operator commands' ZooKeeper
 * session. */
#ifndef DEFERD_DEFERCTL_COMMON_H
#define DEFERD_DEFERCTL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "deferd/client.h"

#define DEFERCTL_DEFAULT_CONFIG "/etc/deferd/deferd.ini"

/* Exit status of every command (deferctl(1), EXIT STATUS). */
enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,       /* deferd or ZooKeeper failed or could not be reached */
    EXIT_USAGE = 2,      /* bad arguments */
    EXIT_NOT_FOUND = 3,  /* no such job */
    EXIT_IN_FLIGHT = 4,  /* the job is held by a consumer: not cancelled or moved */
};

/* deferd.ini for commands that read ZooKeeper (-c, $DEFERD_CONFIG). */
extern const char *deferctl_config_path;

/* Prints "deferctl: <message>" (if FMT) and the --help hint; returns EXIT_USAGE. */
int ctl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "deferctl: <message>" to standard error. */
void ctl_errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Where the socket commands' socket path came from, for messages: "--socket",
 * "DEFERD_SOCKET", the config's path, or "default". */
extern const char *deferctl_socket_from;
/* The socket commands' connection to deferd; a failure is reported with the socket, where
 * it came from and, when nobody listens, whether deferd runs. */
deferd_client *ctl_connect(const char *path);
/* Reports a libdeferd failure; EXIT_USAGE for DEFERD_EARG, else EXIT_FAIL. */
int ctl_lib_fail(deferd_client *c, const char *what, int rc);
/* The contents of PATH ('-': standard input), malloc'd; -1 with errno. */
int ctl_read_path(const char *path, char **out, size_t *len);
/* Worth trying again: the daemon is still opening its ZooKeeper session or reading its
 * clock (stored=no reason=not_connected or clock_unread). Other UNAVAILABLE answers may
 * mean the job was stored: never retried. */
int ctl_zk_starting(deferd_client *c, int err, int tries);
/* deferd_put_one(), tried again while ctl_zk_starting() says so. */
int ctl_put_one(deferd_client *c, deferd_put_item *it);

/* The one time syntax of --at, --from, --until and put --batch's at= (units_parse_time_ms). */
#define TIME_FORMS "epoch ms, 2026-11-23T10:00:05Z, now, now+5m, now-1h"
/* ARG of option OPT as a time; 0, or a usage error naming the forms (EXIT_USAGE). */
int ctl_parse_time_arg(const char *cmd, const char *opt, const char *arg, uint64_t *out);
/* A job id as put printed it (QUEUE/NAME, docs/zookeeper-layout.md); 0, or EXIT_USAGE. */
int ctl_check_job_id(const char *cmd, const char *id);
/* A well-formed queue name; 0, or EXIT_USAGE. Whether it is configured is admin_queue's. */
int ctl_check_queue_name(const char *cmd, const char *queue);

/* How long the ZooKeeper commands wait for a session (--timeout). */
extern int64_t deferctl_timeout_ms;
/* admin_open() with deferctl's config and --timeout; says "connecting to ZooKeeper at ..."
 * on stderr when the session is slow to come. 0, or -1 with a message in err. */
struct admin;
int ctl_admin_open(struct admin **a, char *err, size_t errlen);

#endif
