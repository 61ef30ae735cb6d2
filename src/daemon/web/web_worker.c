#include "web_worker.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "admin.h"
#include "log.h"
#include "loopq.h"

/* A page waits this long for a session before it says ZooKeeper cannot be reached. */
#define OPEN_TIMEOUT_MS 5000

struct task {
    struct loopq_item item; /* first: handed back to the loop as it is */
    struct task *next;      /* waiting */
    web_work_fn work;
    web_done_fn done;
    void *ctx;
    int ran;
};

struct web_worker {
    struct admin_source src;
    size_t max_waiting, waiting;
    struct loopq *back;
    pthread_t thread;
    int started;
    _Atomic int stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct task *head, *tail;
    _Atomic int reload;
    struct admin *admin;    /* the thread's */
};

static void on_back(struct loopq_item *item, void *ctx)
{
    (void)ctx;
    struct task *t = (struct task *)item;
    t->done(t->ctx, t->ran);
    free(t);
}

/* The thread's session: opened on first use, again after a reload or an expiry. */
static struct admin *session_for(struct web_worker *ww, char *err, size_t errlen)
{
    if (ww->admin && (atomic_exchange(&ww->reload, 0) || admin_expired(ww->admin))) {
        admin_close(ww->admin);
        ww->admin = NULL;
    }
    if (ww->admin)
        return ww->admin;
    struct admin_wait wait = {OPEN_TIMEOUT_MS, 0, NULL};
    if (admin_open_from(&ww->src, &wait, &ww->admin, err, errlen) != 0) {
        log_warn("web: cannot open the dashboard's ZooKeeper session: %s", err);
        ww->admin = NULL;
    }
    return ww->admin;
}

static void *run(void *arg)
{
    struct web_worker *ww = arg;
    char err[512];
    pthread_mutex_lock(&ww->mu);
    for (;;) {
        while (!ww->head && !ww->stopping)
            pthread_cond_wait(&ww->cv, &ww->mu);
        if (ww->stopping)
            break;
        struct task *t = ww->head;
        ww->head = t->next;
        if (!ww->head)
            ww->tail = NULL;
        ww->waiting--;
        pthread_mutex_unlock(&ww->mu);
        err[0] = '\0';
        struct admin *a = session_for(ww, err, sizeof err);
        t->work(a, err, t->ctx);
        t->ran = 1;
        loopq_push(ww->back, &t->item);
        pthread_mutex_lock(&ww->mu);
    }
    pthread_mutex_unlock(&ww->mu);
    admin_close(ww->admin);
    return NULL;
}

struct web_worker *web_worker_new(struct event_base *base, const struct admin_source *src,
                                  size_t max_waiting)
{
    struct web_worker *ww = calloc(1, sizeof *ww);
    if (!ww)
        return NULL;
    ww->src = *src;
    ww->max_waiting = max_waiting;
    pthread_mutex_init(&ww->mu, NULL);
    pthread_cond_init(&ww->cv, NULL);
    ww->back = loopq_new(base, on_back, ww);
    if (!ww->back) {
        web_worker_free(ww);
        return NULL;
    }
    return ww;
}

int web_worker_submit(struct web_worker *ww, web_work_fn work, web_done_fn done, void *ctx)
{
    struct task *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    *t = (struct task){.work = work, .done = done, .ctx = ctx};
    pthread_mutex_lock(&ww->mu);
    int rc = ww->waiting >= ww->max_waiting ? -1 : 0;
    if (rc == 0 && !ww->started) {
        rc = pthread_create(&ww->thread, NULL, run, ww) == 0 ? 0 : -1;
        ww->started = rc == 0;
    }
    if (rc == 0) {
        if (ww->tail)
            ww->tail->next = t;
        else
            ww->head = t;
        ww->tail = t;
        ww->waiting++;
        pthread_cond_signal(&ww->cv);
    }
    pthread_mutex_unlock(&ww->mu);
    if (rc != 0)
        free(t);
    return rc;
}

int web_worker_stopping(struct web_worker *ww) { return atomic_load(&ww->stopping); }

void web_worker_reload(struct web_worker *ww)
{
    if (ww)
        atomic_store(&ww->reload, 1);
}

void web_worker_free(struct web_worker *ww)
{
    if (!ww)
        return;
    pthread_mutex_lock(&ww->mu);
    ww->stopping = 1;
    pthread_cond_signal(&ww->cv);
    pthread_mutex_unlock(&ww->mu);
    if (ww->started)
        pthread_join(ww->thread, NULL);
    if (ww->back)
        loopq_drain(ww->back); /* the tasks done: their answers go out */
    for (struct task *t = ww->head, *next; t; t = next) {
        next = t->next;
        t->done(t->ctx, 0);
        free(t);
    }
    loopq_free(ww->back);
    pthread_mutex_destroy(&ww->mu);
    pthread_cond_destroy(&ww->cv);
    free(ww);
}
