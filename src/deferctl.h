/* What deferctl.c (main, put, ping, stats, dead) shares with its other command files
 * (deferctl_work.c: work; deferctl_admin.c: list, show, cancel, reschedule, pause,
 * resume). */
#ifndef DEFERD_DEFERCTL_H
#define DEFERD_DEFERCTL_H

#include <stdio.h>

#include "deferd/client.h"

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
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "deferctl: <message>" to standard error. */
void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* deferctl.c's helpers for the socket commands. */
deferd_client *connect_or_complain(const char *path);
/* Reports a libdeferd failure; EXIT_USAGE for DEFERD_EARG, else EXIT_FAIL. */
int lib_fail(deferd_client *c, const char *what, int rc);
/* The contents of PATH ('-': standard input), malloc'd; -1 with errno. */
int read_path(const char *path, char **out, size_t *len);
/* Worth trying again: the daemon is still opening its ZooKeeper session (nothing was
 * stored). Other UNAVAILABLE answers may mean the job was stored: never retried. */
int zk_starting(deferd_client *c, int err, int tries);

/* put --batch FILE (deferctl_batch.c). */
int put_batch(const char *sock, const char *file, int json);

/* work (deferctl_work.c). */
int cmd_work(const char *sock, int argc, char **argv);
void work_usage(FILE *f);

int cmd_list(const char *sock, int argc, char **argv);
int cmd_show(const char *sock, int argc, char **argv);
int cmd_cancel(const char *sock, int argc, char **argv);
int cmd_reschedule(const char *sock, int argc, char **argv);
int cmd_pause(const char *sock, int argc, char **argv); /* and resume */
void list_usage(FILE *f);
void show_usage(FILE *f);
void cancel_usage(FILE *f);
void reschedule_usage(FILE *f);
void pause_usage(FILE *f);

#endif
