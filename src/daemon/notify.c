#include "notify.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "log.h"

#define STATUS_MAX 256

struct notify {
    int enabled;               /* NOTIFY_SOCKET is set */
    int ready;                 /* READY=1 was sent */
    int failed;                /* a send failed and was logged: log only once */
    char status[STATUS_MAX];   /* the last STATUS sent */
    struct event *watchdog;    /* persistent, every WATCHDOG_USEC / 2; NULL when not asked */
};

static void send_state(struct notify *n, const char *state)
{
    int rc = sd_notify(0, state);
    if (rc < 0 && !n->failed) {
        n->failed = 1;
        log_warn("sd_notify to the service manager failed: %s", strerror(-rc));
    }
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    send_state(arg, "WATCHDOG=1");
}

/* Pinging from a loop timer means a stuck loop stops the pings and gets us restarted. */
static int start_watchdog(struct notify *n, struct event_base *base)
{
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec < 2)
        return 0;
    uint64_t half = usec / 2;
    struct timeval tv = {.tv_sec = (time_t)(half / 1000000),
                         .tv_usec = (suseconds_t)(half % 1000000)};
    n->watchdog = event_new(base, -1, EV_PERSIST, on_watchdog, n);
    if (!n->watchdog || event_add(n->watchdog, &tv) != 0)
        return -1;
    log_info("systemd watchdog: a ping every %llu ms", (unsigned long long)(half / 1000));
    return 0;
}

struct notify *notify_new(struct event_base *base)
{
    struct notify *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    const char *sock = getenv("NOTIFY_SOCKET");
    n->enabled = sock && *sock;
    if (n->enabled && start_watchdog(n, base) != 0) {
        log_error("cannot start the systemd watchdog timer");
        notify_free(n);
        return NULL;
    }
    return n;
}

void notify_free(struct notify *n)
{
    if (!n)
        return;
    if (n->watchdog)
        event_free(n->watchdog);
    free(n);
}

/* Sends PREFIX (may be "") plus the status when either is new. */
static void vsend_status(struct notify *n, const char *prefix, const char *fmt, va_list ap)
{
    char status[STATUS_MAX];
    vsnprintf(status, sizeof status, fmt, ap);
    if (!*prefix && strcmp(status, n->status) == 0)
        return;
    char msg[STATUS_MAX + 32];
    snprintf(msg, sizeof msg, "%sSTATUS=%s", prefix, status);
    send_state(n, msg);
    memcpy(n->status, status, sizeof status);
}

void notify_ready(struct notify *n, const char *fmt, ...)
{
    if (!n || !n->enabled)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsend_status(n, n->ready ? "" : "READY=1\n", fmt, ap);
    va_end(ap);
    n->ready = 1;
}

void notify_status(struct notify *n, const char *fmt, ...)
{
    if (!n || !n->enabled)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsend_status(n, "", fmt, ap);
    va_end(ap);
}

void notify_stopping(struct notify *n)
{
    if (n && n->enabled)
        send_state(n, "STOPPING=1\nSTATUS=stopping");
}
