/* Service manager notifications (sd_notify): READY=1 once deferd can serve, STATUS= lines,
 * STOPPING=1 on a stop signal, and WATCHDOG=1 from the loop while the service manager asks
 * for it. Without NOTIFY_SOCKET in the environment every call does nothing. Loop thread only. */
#ifndef DEFERD_NOTIFY_H
#define DEFERD_NOTIFY_H

struct event_base;
struct notify;

/* NULL only when memory or the watchdog timer cannot be had. */
struct notify *notify_new(struct event_base *base);
void notify_free(struct notify *n);

/* READY=1 with the first call, and STATUS=... whenever it differs from the last one sent. */
void notify_ready(struct notify *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void notify_status(struct notify *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void notify_stopping(struct notify *n);

#endif
