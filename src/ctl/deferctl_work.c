/* deferctl work: runs a command once per job pushed by deferd, acks on exit status 0 and
 * nacks otherwise, answering DEADLINE/EXPIRED while the command runs. See docs/deferctl.md. */

#include "deferd/client.h"
#include "deferctl.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Set by the SIGINT/SIGTERM handler; a handler can only talk through a global. */
static volatile sig_atomic_t stop_signal;

void ctl_work_usage(FILE *f)
{
    fputs("Usage: deferctl work --queue Q[,Q2...] [--inflight N] [--max-jobs N]\n"
          "                     [--nack-delay DUR] [--touch] -- CMD [ARGS...]\n"
          "Run CMD once per job, one job at a time, with the payload on its standard input\n"
          "and DEFERD_JOB_ID, DEFERD_QUEUE, DEFERD_ATTEMPT, DEFERD_DUE_MS, DEFERD_PRIORITY,\n"
          "DEFERD_TTR_MS in its environment. Exit status 0 acks the job; anything else\n"
          "nacks it: it is delivered again after the queue's backoff (backoff_min doubled\n"
          "per attempt, up to backoff_max), under a new id, with attempt + 1; at once and\n"
          "under the same id if the queue's backoff_min is 0; after max_attempts it goes\n"
          "to the dead letters. If the job's lease (ttr) expires, or it is cancelled, while\n"
          "CMD runs, CMD runs to its end and its exit status is ignored.\n\n"
          "  -q, --queue LIST     comma separated queues to consume (required)\n"
          "  -n, --inflight N     jobs deferd may push ahead, 1..10000 (default 1)\n"
          "  -m, --max-jobs N     exit after N jobs were handled\n"
          "  -r, --nack-delay DUR retry a failed job after DUR instead of the backoff\n"
          "  -t, --touch          renew the lease while CMD runs, however long it takes\n"
          "  -h, --help           show this help\n"
          "SIGINT/SIGTERM: finish the current job, then exit 0. On leaving (a signal or\n"
          "--max-jobs) work takes no new job, and jobs pushed ahead but not started go back\n"
          "uncounted: their next delivery has the same attempt.\n", f);
}

struct work_args {
    const char *queues;
    unsigned inflight;
    uint64_t max_jobs;            /* 0: no limit */
    int64_t nack_delay_ms;        /* -1: nack without delay */
    int touch;                    /* renew the running job's lease on DEADLINE */
    char **cmd;
};

static int parse_work_opt(int opt, const char *arg, struct work_args *a)
{
    uint64_t v;
    switch (opt) {
    case 'q': a->queues = arg; return 0;
    case 'n':
        if (units_parse_u64(arg, DEFERD_INFLIGHT_MAX, &v) != 0 || v == 0)
            return ctl_usage_error("work ", "invalid --inflight '%s' (1..%d)", arg,
                                   DEFERD_INFLIGHT_MAX);
        a->inflight = (unsigned)v;
        return 0;
    case 'm':
        if (units_parse_u64(arg, UINT64_MAX, &a->max_jobs) != 0 || a->max_jobs == 0)
            return ctl_usage_error("work ", "invalid --max-jobs '%s' (a number >= 1)", arg);
        return 0;
    case 'r':
        if (units_parse_duration_ms(arg, &v) != 0 || v > INT64_MAX)
            return ctl_usage_error("work ", "invalid duration '%s' (e.g. 250ms, 5s, 2m)", arg);
        a->nack_delay_ms = (int64_t)v;
        return 0;
    case 't': a->touch = 1; return 0;
    default:
        return ctl_usage_error("work ", NULL);
    }
}

/* '+': stop at the first non-option, so CMD's own options are left alone. */
static int parse_work(int argc, char **argv, struct work_args *a)
{
    static const struct option longopts[] = {
        { "queue", required_argument, NULL, 'q' }, { "inflight", required_argument, NULL, 'n' },
        { "max-jobs", required_argument, NULL, 'm' },
        { "nack-delay", required_argument, NULL, 'r' }, { "touch", no_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    int opt, rc;
    while ((opt = getopt_long(argc, argv, "+q:n:m:r:th", longopts, NULL)) != -1) {
        if (opt == 'h') {
            ctl_work_usage(stdout);
            return -1;
        }
        if ((rc = parse_work_opt(opt, optarg, a)) != 0)
            return rc;
    }
    if (a->queues == NULL)
        return ctl_usage_error("work ", "--queue is required");
    if (optind >= argc)
        return ctl_usage_error("work ", "missing command to run (after --)");
    a->cmd = argv + optind;
    return 0;
}

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

/* Only there to end the ppoll() sleep when a command exits: SIG_DFL would not interrupt it,
 * and SIG_IGN would make the kernel reap the child before we see its status. */
static void on_child_exit(int sig)
{
    (void)sig;
}

/* A job pushed while a command ran (prefetched with --inflight above 1). */
struct pending {
    struct pending *next;
    deferd_job job;
};

/* State of `work`. While a command runs we keep reading the daemon's pushes (to answer
 * DEADLINE and EXPIRED), so jobs pushed meanwhile wait in our own queue. */
struct worker {
    deferd_client *c;
    const struct work_args *a;
    sigset_t child_mask;          /* the original mask, for the commands we run */
    sigset_t wait_mask;           /* the mask to sleep in ppoll() with */
    struct pending *head, *tail;
    const deferd_job *cur;        /* the job whose command runs; NULL between jobs */
    enum { CUR_HELD, CUR_EXPIRED, CUR_CANCELLED } cur_lost; /* taken from us meanwhile */
    int leaving;                  /* UNSUB sent: no more jobs come */
    int failed;                   /* connection unusable (reported): exit once the command ends */
};

/* SIGINT/SIGTERM/SIGCHLD stay blocked except while sleeping in ppoll(), so neither a stop
 * request nor a command's exit can slip in between checking for it and going to sleep. */
static void setup_signals(struct worker *w)
{
    struct sigaction sa = { .sa_handler = on_stop_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction chld = { .sa_handler = on_child_exit, .sa_flags = SA_NOCLDSTOP };
    sigemptyset(&chld.sa_mask);
    sigaction(SIGCHLD, &chld, NULL);
    signal(SIGPIPE, SIG_IGN); /* a command that doesn't read all its stdin gives EPIPE */
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGCHLD);
    sigprocmask(SIG_BLOCK, &blocked, &w->child_mask);
    w->wait_mask = w->child_mask;
    sigdelset(&w->wait_mask, SIGINT);
    sigdelset(&w->wait_mask, SIGTERM);
    sigdelset(&w->wait_mask, SIGCHLD);
}

/* Also sees a signal that arrived while blocked (e.g. Ctrl-C during the last command). */
static int stop_requested(void)
{
    sigset_t pending;
    if (stop_signal)
        return 1;
    return sigpending(&pending) == 0 &&
           (sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1);
}

static void conn_failed(struct worker *w, int rc)
{
    ctl_errmsg("%s: %s", rc == DEFERD_EIO ? "lost connection to deferd" : "reading from deferd",
               deferd_last_error(w->c));
    w->failed = 1;
}

/* ---- work: jobs waiting for their turn ---- */

/* Takes ownership of *job. */
static void prefetched_push(struct worker *w, deferd_job *job)
{
    struct pending *p = malloc(sizeof *p);
    if (p == NULL) {
        ctl_errmsg("out of memory for job %s", job->id);
        deferd_job_clear(job);
        w->failed = 1; /* exiting releases the job */
        return;
    }
    p->next = NULL;
    p->job = *job;
    if (w->tail)
        w->tail->next = p;
    else
        w->head = p;
    w->tail = p;
}

static int prefetched_pop(struct worker *w, deferd_job *job)
{
    struct pending *p = w->head;
    if (p == NULL)
        return 0;
    w->head = p->next;
    if (w->head == NULL)
        w->tail = NULL;
    *job = p->job;
    free(p);
    return 1;
}

/* Removes the first waiting job with this id; 1 if there was one. */
static int prefetched_drop(struct worker *w, const char *id)
{
    struct pending *prev = NULL;
    for (struct pending *p = w->head; p; prev = p, p = p->next) {
        if (strcmp(p->job.id, id) != 0)
            continue;
        if (prev)
            prev->next = p->next;
        else
            w->head = p->next;
        if (w->tail == p)
            w->tail = prev;
        deferd_job_clear(&p->job);
        free(p);
        return 1;
    }
    return 0;
}

static void prefetched_free(struct worker *w)
{
    deferd_job job;
    while (prefetched_pop(w, &job))
        deferd_job_clear(&job);
}

/* ---- work: pushes ---- */

static int is_current(const struct worker *w, const char *id)
{
    return w->cur && w->cur_lost == CUR_HELD && strcmp(w->cur->id, id) == 0;
}

static int lease_lost(const struct worker *w, int rc)
{
    return rc == DEFERD_ESERVER && strcmp(deferd_last_error_code(w->c), "LEASE_LOST") == 0;
}

static void touch_current(struct worker *w)
{
    const char *id = w->cur->id;
    int rc = deferd_touch(w->c, id);
    if (rc == DEFERD_OK)
        return;
    if (lease_lost(w, rc)) {
        w->cur_lost = CUR_EXPIRED;
        ctl_errmsg("%s", deferd_last_error(w->c)); /* deferd says why */
    } else if (rc == DEFERD_ESERVER) {
        ctl_errmsg("touch of %s failed: %s", id, deferd_last_error(w->c));
    } else {
        conn_failed(w, rc);
    }
}

/* Answers a job deferd took from us (expired, cancelled), so that deferd frees the slot
 * it kept for it while we might still run it: the answer is LEASE_LOST, as expected. */
static void answer_taken(struct worker *w, const char *id)
{
    int rc = deferd_nack_unrun(w->c, id, NULL, 0);
    if (rc == DEFERD_OK || lease_lost(w, rc))
        return;
    if (rc == DEFERD_ESERVER)
        ctl_errmsg("answering %s: %s", id, deferd_last_error(w->c));
    else
        conn_failed(w, rc);
}

/* EXPIRED or CANCELLED: the running command's job goes on to its end and is then answered;
 * a job still waiting in our queue is dropped and answered at once. */
static void job_taken(struct worker *w, const char *id, int cancelled)
{
    if (is_current(w, id)) {
        w->cur_lost = cancelled ? CUR_CANCELLED : CUR_EXPIRED;
        if (cancelled)
            ctl_errmsg("%s: cancelled while its command runs (cancel --force): it will not be "
                       "delivered again; the command runs to its end, its exit status is ignored",
                       id);
        else
            ctl_errmsg("%s: lease expired while its command runs; the job will be delivered "
                       "again (to another worker first)",
                       id);
    } else if (prefetched_drop(w, id)) {
        if (cancelled)
            ctl_errmsg("%s: cancelled before its turn; it will not be delivered again", id);
        else
            ctl_errmsg("%s: lease expired before the job's turn; it will be delivered again", id);
        answer_taken(w, id);
    }
}

/* DEADLINE, EXPIRED and CANCELLED count for the running job if it is theirs; EXPIRED and
 * CANCELLED also for a job still waiting in our queue. Anything else is about a job we
 * already acked or nacked, and is ignored. */
static void on_event(struct worker *w, deferd_event *ev)
{
    const char *id = ev->job.id;
    if (ev->kind == DEFERD_EV_JOB) {
        prefetched_push(w, &ev->job);
        return;
    }
    if (ev->kind == DEFERD_EV_STATE && strcmp(ev->state, "DRAINING") == 0)
        ctl_errmsg("deferd is shutting down: no new jobs; the current one may still be acked");
    else if (ev->kind == DEFERD_EV_STATE)
        ctl_errmsg("deferd's ZooKeeper connection: %s", ev->state);
    if (ev->kind == DEFERD_EV_DEADLINE && is_current(w, id)) {
        if (w->a->touch)
            touch_current(w);
        else
            ctl_errmsg("%s: lease ends in %" PRId64 " ms", id, ev->ms_left);
    } else if (ev->kind == DEFERD_EV_EXPIRED || ev->kind == DEFERD_EV_CANCELLED) {
        job_taken(w, id, ev->kind == DEFERD_EV_CANCELLED);
    }
    deferd_job_clear(&ev->job);
}

/* Handles every push that has already arrived, without waiting. */
static void drain_events(struct worker *w)
{
    while (!w->failed) {
        deferd_event ev;
        int rc = deferd_next_event(w->c, &ev, 0);
        if (rc == DEFERD_ETIMEDOUT)
            return;
        if (rc != DEFERD_OK) {
            conn_failed(w, rc);
            return;
        }
        on_event(w, &ev);
    }
}

/* Takes no more jobs (UNSUB); once deferd answers, no JOB push is on its way. */
static void leave(struct worker *w)
{
    if (w->leaving || w->failed)
        return;
    w->leaving = 1;
    int rc = deferd_unsubscribe(w->c, NULL);
    if (rc == DEFERD_ESERVER)
        ctl_errmsg("unsubscribing: %s (jobs pushed meanwhile are given back)",
                   deferd_last_error(w->c));
    else if (rc != DEFERD_OK)
        conn_failed(w, rc);
}

/* A clean leave: jobs taken ahead and never started go back uncounted (NACK unrun=1), so
 * their next delivery has the same attempt. */
static int give_back(struct worker *w)
{
    deferd_job job;
    unsigned n = 0;
    leave(w);
    drain_events(w);
    while (!w->failed && prefetched_pop(w, &job)) {
        int rc = deferd_nack_unrun(w->c, job.id, NULL, 0);
        if (rc == DEFERD_OK)
            n++;
        else if (rc == DEFERD_ESERVER && !lease_lost(w, rc))
            ctl_errmsg("giving back %s: %s", job.id, deferd_last_error(w->c));
        else if (rc != DEFERD_ESERVER)
            conn_failed(w, rc);
        deferd_job_clear(&job);
    }
    if (n)
        ctl_errmsg("gave back %u job%s it had not started (the same attempt next time)", n,
                   n == 1 ? "" : "s");
    return w->failed ? EXIT_FAIL : EXIT_OK;
}

enum { WAIT_JOB, WAIT_STOP, WAIT_ERROR };

static int wait_job(struct worker *w, deferd_job *job)
{
    for (;;) {
        if (stop_requested())
            return WAIT_STOP;
        if (prefetched_pop(w, job))
            return WAIT_JOB;
        drain_events(w);
        if (w->failed)
            return WAIT_ERROR;
        if (w->head)
            continue;
        struct pollfd pfd = { .fd = deferd_fd(w->c), .events = POLLIN };
        if (ppoll(&pfd, 1, NULL, &w->wait_mask) < 0 && errno != EINTR) {
            ctl_errmsg("ppoll: %s", strerror(errno));
            return WAIT_ERROR;
        }
    }
}

/* ---- work: running a command ---- */

static int set_job_env(const deferd_job *job)
{
    char attempt[16], due[24], prio[16], ttr[16];
    snprintf(attempt, sizeof attempt, "%" PRIu32, job->attempt);
    snprintf(due, sizeof due, "%" PRId64, job->due_ms);
    snprintf(prio, sizeof prio, "%" PRIu32, job->priority);
    snprintf(ttr, sizeof ttr, "%" PRIu32, job->ttr_ms);
    if (setenv("DEFERD_JOB_ID", job->id, 1) != 0 || setenv("DEFERD_QUEUE", job->queue, 1) != 0 ||
        setenv("DEFERD_ATTEMPT", attempt, 1) != 0 || setenv("DEFERD_DUE_MS", due, 1) != 0 ||
        setenv("DEFERD_PRIORITY", prio, 1) != 0 || setenv("DEFERD_TTR_MS", ttr, 1) != 0)
        return -1;
    return 0;
}

/* In the child: the parent learns of a failed exec through err_fd (closed by a good exec). */
static void child_exec(char **cmd, const deferd_job *job, int in_fd, int err_fd,
                       const sigset_t *mask)
{
    /* Ignored signals stay ignored across exec; the command gets normal SIGPIPE. */
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, mask, NULL);
    int ok = in_fd == STDIN_FILENO ? fcntl(in_fd, F_SETFD, 0) == 0
                                   : dup2(in_fd, STDIN_FILENO) == STDIN_FILENO;
    if (ok && set_job_env(job) == 0)
        execvp(cmd[0], cmd);
    int e = errno;
    ssize_t w = write(err_fd, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* Writes what the pipe takes. 1 once the payload is all written or the command will not read
 * more (EPIPE: a command need not read its stdin), 0 when the pipe is full. */
static int feed_some(int fd, const deferd_job *job, size_t *off)
{
    while (*off < job->len) {
        ssize_t n = write(fd, job->payload + *off, job->len - *off);
        if (n > 0)
            *off += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        else
            return 1;
    }
    return 1;
}

/* 0 if exec succeeded, else the child's errno. */
static int read_exec_error(int fd)
{
    int e = 0;
    ssize_t n;
    while ((n = read(fd, &e, sizeof e)) < 0 && errno == EINTR)
        ;
    return n == (ssize_t)sizeof e ? e : 0;
}

static int wait_child(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR) {
            ctl_errmsg("waitpid: %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Feeds the payload to the command's stdin and waits for it to end, meanwhile handling the
 * daemon's pushes. One ppoll() sleeps on the pipe, the socket and SIGCHLD. 0 and the wait
 * status, or -1 (reported). */
static int supervise(struct worker *w, pid_t pid, const deferd_job *job, int in_fd,
                     int *status)
{
    size_t off = 0;
    if (fcntl(in_fd, F_SETFL, O_NONBLOCK) != 0)
        ctl_errmsg("fcntl: %s", strerror(errno)); /* still works, with blocking writes */
    if (feed_some(in_fd, job, &off)) {
        close(in_fd);
        in_fd = -1;
    }
    int rc = 0;
    for (;;) {
        if (stop_requested())
            leave(w); /* no job after this one: it would only be given back */
        drain_events(w);
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            ctl_errmsg("waitpid: %s", strerror(errno));
            rc = -1;
            break;
        }
        struct pollfd pfd[2];
        nfds_t n = 0;
        if (in_fd >= 0)
            pfd[n++] = (struct pollfd){ .fd = in_fd, .events = POLLOUT };
        if (!w->failed)
            pfd[n++] = (struct pollfd){ .fd = deferd_fd(w->c), .events = POLLIN };
        if (ppoll(pfd, n, NULL, &w->wait_mask) < 0) {
            if (errno == EINTR)
                continue;
            ctl_errmsg("ppoll: %s", strerror(errno));
            rc = wait_child(pid, status); /* at least do not leave the command behind */
            break;
        }
        if (in_fd >= 0 && pfd[0].revents != 0 && feed_some(in_fd, job, &off)) {
            close(in_fd);
            in_fd = -1;
        }
    }
    if (in_fd >= 0)
        close(in_fd);
    return rc;
}

/* Runs the command for one job; 0 and its wait status, or -1 (reported) if it could not run. */
static int run_command(struct worker *w, const deferd_job *job, int *status)
{
    int in[2], ep[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
        ctl_errmsg("pipe: %s", strerror(errno));
        return -1; /* we exit right away; leaked fds don't matter */
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        ctl_errmsg("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0)
        child_exec(w->a->cmd, job, in[0], ep[1], &w->child_mask);
    close(in[0]);
    close(ep[1]);
    int exec_err = read_exec_error(ep[0]);
    close(ep[0]);
    if (exec_err == 0)
        return supervise(w, pid, job, in[1], status);
    close(in[1]);
    if (wait_child(pid, status) == 0)
        ctl_errmsg("cannot run '%s': %s", w->a->cmd[0], strerror(exec_err));
    return -1;
}

static void report_job(const deferd_job *job, const char *verdict, int status)
{
    const char *what = WIFSIGNALED(status) ? "signal" : "exit";
    int code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
    fprintf(stderr, "deferctl: %s attempt %" PRIu32 " -> %s (%s %d)\n", job->id, job->attempt,
            verdict, what, code);
}

/* On any failure we exit: closing the connection makes deferd release the held jobs. A job
 * deferd took from us while it ran (expired, cancelled) is only answered, and counts as
 * handled. */
static int handle_job(struct worker *w, const deferd_job *job)
{
    int status;
    w->cur = job;
    w->cur_lost = CUR_HELD;
    int ran = run_command(w, job, &status);
    w->cur = NULL;
    if (ran != 0)
        return EXIT_FAIL;
    if (w->failed) {
        report_job(job, "neither (connection lost)", status);
        return EXIT_FAIL;
    }
    if (w->cur_lost != CUR_HELD) {
        answer_taken(w, job->id);
        report_job(job, w->cur_lost == CUR_CANCELLED ? "cancelled" : "lease expired", status);
        return w->failed ? EXIT_FAIL : EXIT_OK;
    }
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    int rc = ok ? deferd_ack(w->c, job->id) : deferd_nack(w->c, job->id, w->a->nack_delay_ms);
    if (lease_lost(w, rc)) {
        /* The EXPIRED or CANCELLED push was still on its way: deferd's reply says which. */
        ctl_errmsg("%s", deferd_last_error(w->c));
        report_job(job, "lease lost", status);
        return EXIT_OK;
    }
    if (rc != DEFERD_OK) {
        ctl_errmsg("%s of %s failed: %s", ok ? "ack" : "nack", job->id, deferd_last_error(w->c));
        return EXIT_FAIL;
    }
    report_job(job, ok ? "ack" : "nack", status);
    return EXIT_OK;
}

static int work_loop(struct worker *w)
{
    setup_signals(w);
    for (uint64_t done = 0; w->a->max_jobs == 0 || done < w->a->max_jobs; done++) {
        deferd_job job;
        int r = wait_job(w, &job);
        if (r == WAIT_STOP) {
            ctl_errmsg("stopping on signal");
            return give_back(w);
        }
        if (r == WAIT_ERROR)
            return EXIT_FAIL;
        if (done + 1 == w->a->max_jobs)
            leave(w); /* the last one: its ack must not bring another */
        int rc = handle_job(w, &job);
        deferd_job_clear(&job);
        if (rc != EXIT_OK)
            return rc;
    }
    return give_back(w);
}

int ctl_cmd_work(const char *sock, int argc, char **argv)
{
    struct work_args a = { .inflight = 1, .nack_delay_ms = -1 };
    int rc = parse_work(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    struct worker w = { .a = &a };
    w.c = ctl_connect(sock);
    if (w.c == NULL)
        return EXIT_FAIL;
    rc = deferd_subscribe(w.c, a.queues, a.inflight);
    rc = rc == DEFERD_OK ? work_loop(&w) : ctl_lib_fail(w.c, "subscribe", rc);
    prefetched_free(&w);
    deferd_close(w.c);
    return rc;
}
