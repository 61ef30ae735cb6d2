/* What every deferctl command uses, below them all: messages, argument checks, reading
 * a payload file, the connection to deferd and the ZooKeeper session of the operator
 * commands. */
#include "deferctl_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "config.h"
#include "layout.h"
#include "names.h"
#include "units.h"

static void verrmsg(const char *fmt, va_list ap)
{
    fputs("deferctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void ctl_errmsg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrmsg(fmt, ap);
    va_end(ap);
}

int ctl_usage_error(const char *cmd, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        verrmsg(fmt, ap);
        va_end(ap);
    }
    fprintf(stderr, "Try 'deferctl %s--help'.\n", cmd);
    return EXIT_USAGE;
}

/* Library failures: a bad argument is the user's input, everything else a runtime error. */
int ctl_lib_fail(deferd_client *c, const char *what, int rc)
{
    ctl_errmsg("%s: %s", what, deferd_last_error(c));
    return rc == DEFERD_EARG ? EXIT_USAGE : EXIT_FAIL;
}

int ctl_parse_time_arg(const char *cmd, const char *opt, const char *arg, uint64_t *out)
{
    int rc = units_parse_time_ms(arg, units_wall_ms(), out);
    const char *problem = units_time_problem(rc);
    if (rc == 0)
        return 0;
    if (problem)
        return ctl_usage_error(cmd, "invalid %s '%s': %s", opt, arg, problem);
    return ctl_usage_error(cmd, "invalid %s '%s' (a time: " TIME_FORMS ")", opt, arg);
}

int ctl_check_job_id(const char *cmd, const char *id)
{
    char queue[QUEUE_NAME_MAX + 1];
    struct job_name jn;
    if (layout_parse_id(id, queue, sizeof queue, &jn) == 0)
        return 0;
    return ctl_usage_error(cmd,
                           "'%s' is not a valid job id: QUEUE/DUE_MS-PRIORITY-UID[-...] as "
                           "put printed it (e.g. emails/1763769605123-10-5f1e0c2a9b3d4e01)",
                           id);
}

int ctl_check_queue_name(const char *cmd, const char *queue)
{
    if (names_valid_queue(queue))
        return 0;
    return ctl_usage_error(cmd, "'%s' is not a valid queue name", queue);
}

const char *deferctl_socket_from = "default";

deferd_client *ctl_connect(const char *path)
{
    deferd_client *c = deferd_connect(path, NULL, 0);
    if (c != NULL)
        return c;
    int e = errno; /* nobody listens: the usual cause is a daemon that is not running */
    ctl_errmsg("cannot connect to %s (from %s): %s%s", path, deferctl_socket_from, strerror(e),
               e == ECONNREFUSED || e == ENOENT ? ": is deferd running?" : "");
    return NULL;
}

static int read_all(int fd, char **out, size_t *len)
{
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n == cap) {
            char *p = realloc(buf, cap = cap ? cap * 2 : 65536);
            if (p == NULL) {
                free(buf);
                errno = ENOMEM;
                return -1;
            }
            buf = p;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r > 0)
            n += (size_t)r;
        else if (r == 0)
            break;
        else if (errno != EINTR) {
            int e = errno;
            free(buf);
            errno = e;
            return -1;
        }
    }
    *out = buf;
    *len = n;
    return 0;
}

int ctl_read_path(const char *path, char **out, size_t *len)
{
    if (strcmp(path, "-") == 0)
        return read_all(STDIN_FILENO, out, len);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = read_all(fd, out, len);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int ctl_zk_starting(deferd_client *c, int err, int tries)
{
    if (err != DEFERD_ESERVER || tries >= 50 ||
        strcmp(deferd_last_error_code(c), "UNAVAILABLE") != 0)
        return 0;
    const char *why = deferd_last_error_reason(c);
    if (!*why) /* a daemon older than refusal fields: only its words tell */
        return strstr(deferd_last_error(c), "not connected to ZooKeeper") != NULL;
    return deferd_last_error_stored(c) == DEFERD_STORED_NO &&
           (strcmp(why, "not_connected") == 0 || strcmp(why, "clock_unread") == 0);
}

int ctl_put_one(deferd_client *c, deferd_put_item *it)
{
    int err;
    for (int tries = 0;; tries++) {
        err = deferd_put_one(c, it);
        if (!ctl_zk_starting(c, err, tries))
            return err;
        poll(NULL, 0, 100);
    }
}

/* ---- ZooKeeper sessions of the operator commands (admin.c) ---- */

const char *deferctl_config_path = DEFERCTL_DEFAULT_CONFIG;
int64_t deferctl_timeout_ms = 10000;

static void connecting(const char *hosts)
{
    ctl_errmsg("connecting to ZooKeeper at %s ...", hosts);
}

int ctl_admin_open(struct admin **a, char *err, size_t errlen)
{
    const struct admin_wait w = {deferctl_timeout_ms, 1000, connecting};
    return admin_open(deferctl_config_path, &w, a, err, errlen);
}
