/* The commands deferctl.c (main, put, ping, stats, dead) runs from its other command files
 * (deferctl_work.c: work; deferctl_admin.c: list, show, cancel, reschedule, pause,
 * resume; deferctl_batch.c: put --batch). What they all use is in deferctl_common.h. */
#ifndef DEFERD_DEFERCTL_H
#define DEFERD_DEFERCTL_H

#include <stdio.h>

#include "deferctl_common.h"

/* put --batch FILE (deferctl_batch.c). */
int ctl_put_batch(const char *sock, const char *file, int json);
/* put --flow FILE [--on ON]: FILE's first job the parent, the rest its children. */
int ctl_put_flow(const char *sock, const char *file, const char *on, int json);

/* work (deferctl_work.c). */
int ctl_cmd_work(const char *sock, int argc, char **argv);
void ctl_work_usage(FILE *f);

int ctl_cmd_list(const char *sock, int argc, char **argv);
int ctl_cmd_show(const char *sock, int argc, char **argv);
int ctl_cmd_cancel(const char *sock, int argc, char **argv);
int ctl_cmd_reschedule(const char *sock, int argc, char **argv);
int ctl_cmd_pause(const char *sock, int argc, char **argv); /* and resume */
void ctl_list_usage(FILE *f);
void ctl_show_usage(FILE *f);
void ctl_cancel_usage(FILE *f);
void ctl_reschedule_usage(FILE *f);
void ctl_pause_usage(FILE *f);

int ctl_cmd_layout(const char *sock, int argc, char **argv); /* deferctl_layout.c */
void ctl_layout_usage(FILE *f);

int ctl_cmd_schedules(const char *sock, int argc, char **argv); /* deferctl_schedules.c */
int ctl_cmd_schedule(const char *sock, int argc, char **argv);
void ctl_schedules_usage(FILE *f);

int ctl_cmd_resume(const char *sock, int argc, char **argv);

/* deferctl_bulk.c: dead kick|delete --all (ARGV[0] "kick" or "delete") and purge. */
int ctl_dead_all(int argc, char **argv);
int ctl_cmd_purge(const char *sock, int argc, char **argv);
void ctl_bulk_usage(FILE *f);

/* An admin_* result as an exit status, its message printed (deferctl_admin.c). */
int ctl_admin_exit(int rc, const char *err);

#endif
