/* The dashboard's reader thread: the pages that read jobs from ZooKeeper (a queue's jobs, a
 * job, the dead letters) and the actions run the operator's commands (src/admin, the same
 * code as deferctl) on a thread and a ZooKeeper session of their own, so that the loop
 * never waits on ZooKeeper and the delivery session's requests never queue behind a
 * page's reads. The thread touches no daemon state: a task's WORK gets the admin handle
 * and its own context only; its DONE runs on the loop. One task at a time, in order. */
#ifndef DEFERD_WEB_WORKER_H
#define DEFERD_WEB_WORKER_H

#include <stddef.h>

struct admin;
struct admin_source;
struct event_base;
struct web_worker;

/* On the thread: A is NULL when no session could be opened (ERR says why). */
typedef void (*web_work_fn)(struct admin *a, const char *err, void *ctx);
/* On the loop, exactly once a task: RAN is 0 when the task was dropped (the daemon is
 * stopping) and WORK did not run. */
typedef void (*web_done_fn)(void *ctx, int ran);

/* SRC's strings must outlive the worker. No thread nor session until the first task. */
struct web_worker *web_worker_new(struct event_base *base, const struct admin_source *src,
                                  size_t max_waiting);
/* 0, or -1 when MAX_WAITING tasks already wait (or out of memory): DONE is not called. */
int web_worker_submit(struct web_worker *ww, web_work_fn work, web_done_fn done, void *ctx);
/* 1 once web_worker_free began: a long WORK (a bulk action) stops at its next step. Any
 * thread. */
int web_worker_stopping(struct web_worker *ww);
/* deferd.ini was reloaded: the next task opens a new session with the new file. */
void web_worker_reload(struct web_worker *ww);
/* Waits for the task running, then calls DONE(ctx, 0) for those still waiting. */
void web_worker_free(struct web_worker *ww);

#endif
