/* deferctl work: runs a command once per job pushed by deferd, up to --concurrency at once,
 * acks on exit status 0 and nacks otherwise, answering DEADLINE/EXPIRED while commands run.
 * See docs/deferctl.md. */

#include "deferd/client.h"
#include "deferctl.h"
#include "errtext.h"
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
#include <time.h>
#include <unistd.h>

/* Set by the SIGINT/SIGTERM handler; a handler can only talk through a global. */
static volatile sig_atomic_t stop_signal;

#define WORK_CONCURRENCY_MAX 1000
#define KILL_GRACE_MS 5000 /* --kill-on-expiry: SIGTERM, then SIGKILL this much later */

void ctl_work_usage(FILE *f)
{
    fputs("Usage: deferctl work --queue Q[,Q2...] [--concurrency N] [--inflight N]\n"
          "                     [--max-jobs N] [--nack-delay DUR] [--touch] [--quiet]\n"
          "                     [--kill-on-expiry] -- CMD [ARGS...]\n"
          "Run CMD once per job, up to N at once, with the payload on its standard input\n"
          "and DEFERD_JOB_ID, DEFERD_JOB_UID, DEFERD_QUEUE, DEFERD_ATTEMPT, DEFERD_DUE_MS,\n"
          "DEFERD_PRIORITY, DEFERD_TTR_MS, DEFERD_GROUP in its environment (DEFERD_JOB_UID:\n"
          "the job's identity, the same on every delivery; DEFERD_GROUP: its group, \"\" for\n"
          "none). Exit status 0 acks the job; anything else\n"
          "nacks it: it is delivered again after the queue's backoff (backoff_min doubled\n"
          "per attempt, up to backoff_max), under a new id, with attempt + 1; at once and\n"
          "under the same id if the queue's backoff_min is 0; after max_attempts it goes\n"
          "to the dead letters. If the job's lease (ttr) expires, or it is cancelled, while\n"
          "CMD runs, CMD runs to its end (unless --kill-on-expiry) and its exit status is\n"
          "ignored.\n\n"
          "  -q, --queue LIST     comma separated queues to consume (required)\n"
          "  -c, --concurrency N  run up to N commands at once, 1.."
          ERRTEXT_NUM(WORK_CONCURRENCY_MAX) " (default 1)\n"
          "  -n, --inflight N     jobs deferd may push before one is answered, 1.."
          ERRTEXT_NUM(DEFERD_INFLIGHT_MAX) "\n"
          "                       (default and minimum: the concurrency)\n"
          "  -m, --max-jobs N     exit after N jobs were handled\n"
          "  -r, --nack-delay DUR retry a failed job after DUR instead of the backoff\n"
          "  -t, --touch          renew a running job's lease, however long CMD takes\n"
          "      --quiet          no line per acked job (failures are still reported)\n"
          "      --kill-on-expiry SIGTERM a command whose lease expired or whose deferd\n"
          "                       connection was lost, SIGKILL 5 s later\n"
          "  -h, --help           show this help\n"
          "SIGINT/SIGTERM: let the running commands finish, then exit 0. On leaving (a\n"
          "signal or --max-jobs) work takes no new job, and jobs pushed ahead but not\n"
          "started go back uncounted: their next delivery has the same attempt.\n", f);
}

struct work_args {
    const char *queues;
    unsigned concurrency;
    unsigned inflight;            /* 0: as many as the concurrency */
    uint64_t max_jobs;            /* 0: no limit */
    int64_t nack_delay_ms;        /* -1: nack without delay */
    int touch;                    /* renew running jobs' leases on DEADLINE */
    int quiet;                    /* no line per acked job */
    int kill_on_expiry;
    char **cmd;
};

enum { OPT_QUIET = 256, OPT_KILL };

/* A number option in 1..max; 0 or -1 (reported as invalid NAME). */
static int parse_count(const char *name, const char *arg, uint64_t max, uint64_t *v)
{
    if (units_parse_u64(arg, max, v) == 0 && *v > 0)
        return 0;
    if (max == UINT64_MAX)
        return ctl_usage_error("work ", "invalid --%s '%s' (a number >= 1)", name, arg);
    return ctl_usage_error("work ", "invalid --%s '%s' (1..%" PRIu64 ")", name, arg, max);
}

static int parse_work_opt(int opt, const char *arg, struct work_args *a)
{
    uint64_t v;
    int rc;
    switch (opt) {
    case 'q': a->queues = arg; return 0;
    case 'c':
        if ((rc = parse_count("concurrency", arg, WORK_CONCURRENCY_MAX, &v)) == 0)
            a->concurrency = (unsigned)v;
        return rc;
    case 'n':
        if ((rc = parse_count("inflight", arg, DEFERD_INFLIGHT_MAX, &v)) == 0)
            a->inflight = (unsigned)v;
        return rc;
    case 'm': return parse_count("max-jobs", arg, UINT64_MAX, &a->max_jobs);
    case 'r':
        if (units_parse_duration_ms(arg, &v) != 0 || v > INT64_MAX)
            return ctl_usage_error("work ", "invalid duration '%s' (e.g. 250ms, 5s, 2m)", arg);
        a->nack_delay_ms = (int64_t)v;
        return 0;
    case 't': a->touch = 1; return 0;
    case OPT_QUIET: a->quiet = 1; return 0;
    case OPT_KILL: a->kill_on_expiry = 1; return 0;
    default:
        return ctl_usage_error("work ", NULL);
    }
}

/* '+': stop at the first non-option, so CMD's own options are left alone. */
static int parse_work(int argc, char **argv, struct work_args *a)
{
    static const struct option longopts[] = {
        { "queue", required_argument, NULL, 'q' }, { "inflight", required_argument, NULL, 'n' },
        { "concurrency", required_argument, NULL, 'c' },
        { "max-jobs", required_argument, NULL, 'm' },
        { "nack-delay", required_argument, NULL, 'r' }, { "touch", no_argument, NULL, 't' },
        { "quiet", no_argument, NULL, OPT_QUIET },
        { "kill-on-expiry", no_argument, NULL, OPT_KILL },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    int opt, rc;
    while ((opt = getopt_long(argc, argv, "+q:c:n:m:r:th", longopts, NULL)) != -1) {
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
    /* Fewer jobs in flight than commands would leave commands idle: raise it. */
    if (a->inflight < a->concurrency)
        a->inflight = a->concurrency;
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

/* A job pushed ahead, waiting for a free command slot. */
struct pending {
    struct pending *next;
    deferd_job job;
};

/* One command slot: a running command and its job (pid 0: free). */
struct run {
    deferd_job job;
    pid_t pid;
    int in_fd;                    /* the command's stdin until the payload is written; -1 */
    size_t off;                   /* payload bytes written */
    enum { CUR_HELD, CUR_EXPIRED, CUR_CANCELLED } lost; /* taken from us meanwhile */
    int64_t kill_at_ms;           /* --kill-on-expiry: when SIGKILL follows SIGTERM; 0 */
};

/* An ack sent with deferd_ack_send() whose reply is still to come: replies come in order,
 * so a FIFO pairs each with its job's per-job line. */
struct acked {
    struct acked *next;
    char id[DEFERD_ID_SIZE];
    uint32_t attempt;
    int status;
};

/* State of `work`. One ppoll() sleeps on the daemon's socket, the stdin pipes still being
 * fed and SIGCHLD, so pushes (DEADLINE, EXPIRED) are answered while commands run. */
struct worker {
    deferd_client *c;
    const struct work_args *a;
    sigset_t child_mask;          /* the original mask, for the commands we run */
    sigset_t wait_mask;           /* the mask to sleep in ppoll() with */
    struct pending *head, *tail;  /* pushed, not started */
    struct run *runs;             /* a->concurrency slots */
    unsigned running;             /* slots in use */
    struct acked *ack_head, *ack_tail;
    struct pollfd *pfd;           /* a->concurrency + 1 */
    uint64_t started;             /* commands started, for --max-jobs */
    int stopping;                 /* start nothing more; exit once every command ended */
    int leaving;                  /* UNSUB sent: no more jobs come */
    int failed;                   /* connection unusable (reported) */
    int rc;                       /* exit status */
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

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void kill_expired(struct run *r, const char *why);

/* The daemon that holds our jobs' locks is gone (or unreadable): with --kill-on-expiry the
 * running commands stop, as for an expired lease, since their locks end with its session
 * and another daemon may deliver their jobs again (a queue's concurrency counts on it). */
static void conn_failed(struct worker *w, int rc)
{
    if (w->failed)
        return; /* said once */
    ctl_errmsg("%s: %s", rc == DEFERD_EIO ? "lost connection to deferd" : "reading from deferd",
               deferd_last_error(w->c));
    w->failed = 1;
    w->stopping = 1;
    w->rc = EXIT_FAIL;
    for (unsigned i = 0; w->a->kill_on_expiry && i < w->a->concurrency; i++) {
        struct run *r = &w->runs[i];
        if (r->pid != 0 && r->lost == CUR_HELD && !r->kill_at_ms) {
            r->lost = CUR_EXPIRED;
            kill_expired(r, "connection to deferd lost (its lease cannot be kept)");
        }
    }
}

/* A failure that leaves the connection usable: start nothing more, let the running commands
 * end and be answered, give back the rest, exit 1. */
static void fail_soft(struct worker *w)
{
    w->stopping = 1;
    w->rc = EXIT_FAIL;
}

static void report_job(const char *id, uint32_t attempt, const char *verdict, int status)
{
    const char *what = WIFSIGNALED(status) ? "signal" : "exit";
    int code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
    fprintf(stderr, "deferctl: %s attempt %" PRIu32 " -> %s (%s %d)\n", id, attempt, verdict,
            what, code);
}

static int lease_lost(const struct worker *w, int rc)
{
    return rc == DEFERD_ESERVER && strcmp(deferd_last_error_code(w->c), "LEASE_LOST") == 0;
}

/* ---- work: jobs waiting for a free slot ---- */

/* Takes ownership of *job. */
static void prefetched_push(struct worker *w, deferd_job *job)
{
    struct pending *p = malloc(sizeof *p);
    if (p == NULL) {
        ctl_errmsg("out of memory for job %s", job->id);
        deferd_job_clear(job);
        fail_soft(w); /* the job stays held until we exit, which releases it */
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

/* ---- work: pipelined acks ---- */

/* The oldest ack's reply has been received: its per-job line, or what went wrong. */
static void ack_answered(struct worker *w, int rc, const char *id)
{
    struct acked *a = w->ack_head;
    if (a == NULL)
        return; /* cannot happen: every ack sent has its record */
    w->ack_head = a->next;
    if (w->ack_head == NULL)
        w->ack_tail = NULL;
    if (strcmp(a->id, id) != 0) /* cannot happen: libdeferd answers acks in order */
        ctl_errmsg("ack reply for %s, expected %s", id, a->id);
    if (rc == DEFERD_OK) {
        if (!w->a->quiet)
            report_job(a->id, a->attempt, "ack", a->status);
    } else if (lease_lost(w, rc)) {
        /* The EXPIRED or CANCELLED push was still on its way: deferd's reply says which. */
        ctl_errmsg("%s", deferd_last_error(w->c));
        report_job(a->id, a->attempt, "lease lost", a->status);
    } else if (rc == DEFERD_ESERVER) {
        ctl_errmsg("ack of %s failed: %s", a->id, deferd_last_error(w->c));
        fail_soft(w);
    } else {
        conn_failed(w, rc);
        report_job(a->id, a->attempt, "ack unknown (connection lost)", a->status);
    }
    free(a);
}

/* Hands out ack replies that arrived (timeout_ms 0), or waits for all (-1). Also writes the
 * acks still queued in libdeferd. The number of replies handled. */
static int collect_acks(struct worker *w, int timeout_ms)
{
    int n = 0;
    while (deferd_acks_outstanding(w->c) > 0) {
        char id[DEFERD_ID_SIZE];
        int rc = deferd_ack_recv(w->c, id, sizeof id, timeout_ms);
        if (rc == DEFERD_ETIMEDOUT)
            break;
        ack_answered(w, rc, id);
        n++;
    }
    return n;
}

/* The blocking requests (NACK, TOUCH, UNSUB) are refused while acks are outstanding. */
static void flush_acks(struct worker *w)
{
    collect_acks(w, -1);
}

static void ack_job(struct worker *w, const deferd_job *job, int status)
{
    struct acked *a = calloc(1, sizeof *a);
    if (a == NULL) {
        ctl_errmsg("out of memory for the ack of %s", job->id);
        fail_soft(w);
        return;
    }
    snprintf(a->id, sizeof a->id, "%s", job->id);
    a->attempt = job->attempt;
    a->status = status;
    int rc = deferd_ack_send(w->c, job->id);
    if (rc != DEFERD_OK) {
        free(a);
        if (rc == DEFERD_EARG || rc == DEFERD_ENOMEM) {
            ctl_errmsg("ack of %s failed: %s", job->id, deferd_last_error(w->c));
            fail_soft(w);
        } else {
            conn_failed(w, rc);
            report_job(job->id, job->attempt, "neither (connection lost)", status);
        }
        return;
    }
    if (w->ack_tail)
        w->ack_tail->next = a;
    else
        w->ack_head = a;
    w->ack_tail = a;
}

/* ---- work: pushes ---- */

/* The slot running job ID whose lease we still hold, or NULL. */
static struct run *held_run(struct worker *w, const char *id)
{
    for (unsigned i = 0; i < w->a->concurrency; i++) {
        struct run *r = &w->runs[i];
        if (r->pid != 0 && r->lost == CUR_HELD && strcmp(r->job.id, id) == 0)
            return r;
    }
    return NULL;
}

static void touch_job(struct worker *w, struct run *r)
{
    flush_acks(w);
    if (w->failed)
        return;
    int rc = deferd_touch(w->c, r->job.id);
    if (rc == DEFERD_OK)
        return;
    if (lease_lost(w, rc)) {
        r->lost = CUR_EXPIRED;
        ctl_errmsg("%s", deferd_last_error(w->c)); /* deferd says why */
    } else if (rc == DEFERD_ESERVER) {
        ctl_errmsg("touch of %s failed: %s", r->job.id, deferd_last_error(w->c));
    } else {
        conn_failed(w, rc);
    }
}

/* Answers a job deferd took from us (expired, cancelled), so that deferd frees the slot
 * it kept for it while we might still run it: the answer is LEASE_LOST, as expected. */
static void answer_taken(struct worker *w, const char *id)
{
    flush_acks(w);
    if (w->failed)
        return;
    int rc = deferd_nack_unrun(w->c, id, NULL, 0);
    if (rc == DEFERD_OK || lease_lost(w, rc))
        return;
    if (rc == DEFERD_ESERVER)
        ctl_errmsg("answering %s: %s", id, deferd_last_error(w->c));
    else
        conn_failed(w, rc);
}

/* --kill-on-expiry: the job will run elsewhere, so this run is stopped, gently first. */
static void kill_expired(struct run *r, const char *why)
{
    ctl_errmsg("%s: %s while its command runs; the job will be delivered again "
               "(to another worker first); sending SIGTERM to the command (pid %ld), "
               "SIGKILL in %d s",
               r->job.id, why, (long)r->pid, KILL_GRACE_MS / 1000);
    kill(r->pid, SIGTERM);
    r->kill_at_ms = mono_ms() + KILL_GRACE_MS;
}

/* EXPIRED or CANCELLED: a running command goes on to its end and its job is then answered;
 * a job still waiting for a slot is dropped and answered at once. */
static void job_taken(struct worker *w, const char *id, int cancelled)
{
    struct run *r = held_run(w, id);
    if (r) {
        r->lost = cancelled ? CUR_CANCELLED : CUR_EXPIRED;
        if (cancelled)
            ctl_errmsg("%s: cancelled while its command runs (cancel --force): it will not be "
                       "delivered again; the command runs to its end, its exit status is ignored",
                       id);
        else if (w->a->kill_on_expiry)
            kill_expired(r, "lease expired");
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

static void on_deadline(struct worker *w, const deferd_event *ev)
{
    struct run *r = held_run(w, ev->job.id);
    if (r == NULL)
        return;
    if (w->a->touch)
        touch_job(w, r);
    else
        ctl_errmsg("%s: lease ends in %" PRId64 " ms", ev->job.id, ev->ms_left);
}

/* DEADLINE, EXPIRED and CANCELLED count for a running job if it is theirs; EXPIRED and
 * CANCELLED also for a job still waiting for a slot. Anything else is about a job we
 * already acked or nacked, and is ignored. */
static void on_event(struct worker *w, deferd_event *ev)
{
    if (ev->kind == DEFERD_EV_JOB) {
        prefetched_push(w, &ev->job);
        return;
    }
    if (ev->kind == DEFERD_EV_STATE && strcmp(ev->state, "DRAINING") == 0)
        ctl_errmsg("deferd is shutting down: no new jobs; running ones may still be acked");
    else if (ev->kind == DEFERD_EV_STATE)
        ctl_errmsg("deferd's ZooKeeper connection: %s", ev->state);
    if (ev->kind == DEFERD_EV_DEADLINE)
        on_deadline(w, ev);
    else if (ev->kind == DEFERD_EV_EXPIRED || ev->kind == DEFERD_EV_CANCELLED)
        job_taken(w, ev->job.id, ev->kind == DEFERD_EV_CANCELLED);
    deferd_job_clear(&ev->job);
}

/* Handles every push that has already arrived, without waiting; how many. */
static int drain_events(struct worker *w)
{
    int n = 0;
    while (!w->failed) {
        deferd_event ev;
        int rc = deferd_next_event(w->c, &ev, 0);
        if (rc == DEFERD_ETIMEDOUT)
            break;
        if (rc != DEFERD_OK) {
            conn_failed(w, rc);
            break;
        }
        on_event(w, &ev);
        n++;
    }
    return n;
}

/* Until nothing more has arrived: handling pushes may read ack replies, and receiving ack
 * replies may read pushes, which must all be handed out before sleeping on the socket. */
static void take_in(struct worker *w)
{
    while (!w->failed && (collect_acks(w, 0) + drain_events(w)) > 0)
        ;
    if (w->failed)
        collect_acks(w, 0); /* those that did arrive, and the unknown ones */
}

/* Takes no more jobs (UNSUB); once deferd answers, no JOB push is on its way. */
static void leave(struct worker *w)
{
    if (w->leaving || w->failed)
        return;
    w->leaving = 1;
    flush_acks(w);
    if (w->failed)
        return;
    int rc = deferd_unsubscribe(w->c, NULL);
    if (rc == DEFERD_ESERVER)
        ctl_errmsg("unsubscribing: %s (jobs pushed meanwhile are given back)",
                   deferd_last_error(w->c));
    else if (rc != DEFERD_OK)
        conn_failed(w, rc);
}

/* Gives back a job never started (NACK unrun=1): its next delivery has the same attempt.
 * 1 if deferd took it back. */
static int give_back_one(struct worker *w, const char *id)
{
    flush_acks(w);
    if (w->failed)
        return 0;
    int rc = deferd_nack_unrun(w->c, id, NULL, 0);
    if (rc == DEFERD_OK)
        return 1;
    if (rc == DEFERD_ESERVER && !lease_lost(w, rc))
        ctl_errmsg("giving back %s: %s", id, deferd_last_error(w->c));
    else if (rc != DEFERD_ESERVER)
        conn_failed(w, rc);
    return 0;
}

/* Leaving: jobs taken ahead and never started go back uncounted at once, not once the
 * running commands end, so that other workers can run them meanwhile. */
static void give_back(struct worker *w)
{
    deferd_job job;
    unsigned n = 0;
    leave(w);
    take_in(w);
    while (!w->failed && prefetched_pop(w, &job)) {
        n += (unsigned)give_back_one(w, job.id);
        deferd_job_clear(&job);
    }
    if (n)
        ctl_errmsg("gave back %u job%s it had not started (the same attempt next time)", n,
                   n == 1 ? "" : "s");
}

/* ---- work: running commands ---- */

static int set_job_env(const deferd_job *job)
{
    char attempt[16], due[24], prio[16], ttr[16], uid[DEFERD_UID_SIZE];
    char group[DEFERD_GROUP_MAX + 1];
    /* a Curator queue's item has no stable uid: none, rather than one from the caller */
    if (deferd_job_uid(job->id, uid, sizeof uid) == DEFERD_OK ? setenv("DEFERD_JOB_UID", uid, 1)
                                                               : unsetenv("DEFERD_JOB_UID"))
        return -1;
    snprintf(attempt, sizeof attempt, "%" PRIu32, job->attempt);
    snprintf(due, sizeof due, "%" PRId64, job->due_ms);
    snprintf(prio, sizeof prio, "%" PRIu32, job->priority);
    snprintf(ttr, sizeof ttr, "%" PRIu32, job->ttr_ms);
    if (setenv("DEFERD_JOB_ID", job->id, 1) != 0 || setenv("DEFERD_QUEUE", job->queue, 1) != 0 ||
        setenv("DEFERD_ATTEMPT", attempt, 1) != 0 || setenv("DEFERD_DUE_MS", due, 1) != 0 ||
        setenv("DEFERD_PRIORITY", prio, 1) != 0 || setenv("DEFERD_TTR_MS", ttr, 1) != 0)
        return -1;
    if (deferd_job_group(job->id, group, sizeof group) != DEFERD_OK)
        group[0] = '\0'; /* a Curator queue's item */
    return setenv("DEFERD_GROUP", group, 1);
}

/* In the child: the parent learns of a failed exec through err_fd (closed by a good exec).
 * The other commands' pipes and the socket are close-on-exec. */
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

static void feed_run(struct run *r)
{
    if (r->in_fd >= 0 && feed_some(r->in_fd, &r->job, &r->off)) {
        close(r->in_fd);
        r->in_fd = -1;
    }
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

/* Forks and execs the command for R's job, whose stdin is then fed as the pipe takes it.
 * 0, or -1 (reported) if it could not run. */
static int spawn(struct worker *w, struct run *r)
{
    int in[2], ep[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
        ctl_errmsg("pipe: %s", strerror(errno));
        return -1; /* we stop right away; leaked fds don't matter */
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        ctl_errmsg("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0)
        child_exec(w->a->cmd, &r->job, in[0], ep[1], &w->child_mask);
    close(in[0]);
    close(ep[1]);
    int exec_err = read_exec_error(ep[0]);
    close(ep[0]);
    if (exec_err != 0) {
        int status;
        close(in[1]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        ctl_errmsg("cannot run '%s': %s", w->a->cmd[0], strerror(exec_err));
        return -1;
    }
    r->pid = pid;
    r->in_fd = in[1];
    r->off = 0;
    r->lost = CUR_HELD;
    r->kill_at_ms = 0;
    if (fcntl(r->in_fd, F_SETFL, O_NONBLOCK) != 0)
        ctl_errmsg("fcntl: %s", strerror(errno)); /* still works, with blocking writes */
    feed_run(r);
    return 0;
}

static struct run *free_run(struct worker *w)
{
    for (unsigned i = 0; i < w->a->concurrency; i++)
        if (w->runs[i].pid == 0)
            return &w->runs[i];
    return NULL;
}

/* Starts commands for waiting jobs while slots are free; how many started. A job whose
 * command cannot run is given back (nothing ran it) and work stops with status 1. */
static int start_commands(struct worker *w)
{
    int n = 0;
    struct run *r;
    while (!w->stopping && (r = free_run(w)) != NULL && prefetched_pop(w, &r->job)) {
        if (spawn(w, r) != 0) {
            give_back_one(w, r->job.id);
            deferd_job_clear(&r->job);
            fail_soft(w);
            break;
        }
        w->running++;
        n++;
        if (w->a->max_jobs && ++w->started == w->a->max_jobs) {
            w->stopping = 1; /* the last one: its ack must not bring another */
            leave(w);
        }
    }
    return n;
}

static void nack_job(struct worker *w, const deferd_job *job, int status)
{
    flush_acks(w);
    if (w->failed) {
        report_job(job->id, job->attempt, "neither (connection lost)", status);
        return;
    }
    char dead[DEFERD_ID_SIZE], verdict[2 * DEFERD_ID_SIZE + 80];
    int rc = deferd_nack_dead(w->c, job->id, w->a->nack_delay_ms, dead, sizeof dead);
    if (rc == DEFERD_OK && dead[0]) {
        snprintf(verdict, sizeof verdict, "nack: dead-lettered as %s (max_attempts reached; "
                 "deferctl dead show %s)", dead, dead);
        report_job(job->id, job->attempt, verdict, status);
    } else if (rc == DEFERD_OK) {
        report_job(job->id, job->attempt, "nack", status);
    } else if (lease_lost(w, rc)) {
        ctl_errmsg("%s", deferd_last_error(w->c)); /* EXPIRED or CANCELLED was on its way */
        report_job(job->id, job->attempt, "lease lost", status);
    } else if (rc == DEFERD_ESERVER) {
        ctl_errmsg("nack of %s failed: %s", job->id, deferd_last_error(w->c));
        fail_soft(w);
    } else {
        conn_failed(w, rc);
        report_job(job->id, job->attempt, "neither (connection lost)", status);
    }
}

/* A command ended: its job is acked (pipelined) or nacked; a job deferd took from us while it
 * ran (expired, cancelled) is only answered. */
static void settle(struct worker *w, struct run *r, int status)
{
    const deferd_job *job = &r->job;
    if (w->failed) {
        report_job(job->id, job->attempt, "neither (connection lost)", status);
    } else if (r->lost != CUR_HELD) {
        answer_taken(w, job->id);
        report_job(job->id, job->attempt,
                   r->lost == CUR_CANCELLED ? "cancelled" : "lease expired", status);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        ack_job(w, job, status);
    } else {
        nack_job(w, job, status);
    }
}

static struct run *run_of(struct worker *w, pid_t pid)
{
    for (unsigned i = 0; i < w->a->concurrency; i++)
        if (w->runs[i].pid == pid)
            return &w->runs[i];
    return NULL;
}

/* Collects every command that ended (SIGCHLD only wakes us up). */
static void reap_commands(struct worker *w)
{
    int status;
    pid_t pid;
    while (w->running > 0 && (pid = waitpid(-1, &status, WNOHANG)) > 0) {
        struct run *r = run_of(w, pid);
        if (r == NULL)
            continue;
        if (r->in_fd >= 0)
            close(r->in_fd);
        settle(w, r, status);
        deferd_job_clear(&r->job);
        r->pid = 0;
        w->running--;
    }
}

/* --kill-on-expiry: SIGKILL for the commands SIGTERM did not end; ms until the next one is
 * due (-1: none). */
static int kill_overdue(struct worker *w)
{
    int64_t now = mono_ms(), next = -1;
    for (unsigned i = 0; i < w->a->concurrency; i++) {
        struct run *r = &w->runs[i];
        if (r->pid == 0 || r->kill_at_ms == 0)
            continue;
        if (r->kill_at_ms <= now) {
            ctl_errmsg("%s: the command (pid %ld) outlived SIGTERM by %d s: SIGKILL", r->job.id,
                       (long)r->pid, KILL_GRACE_MS / 1000);
            kill(r->pid, SIGKILL);
            r->kill_at_ms = 0;
        } else if (next < 0 || r->kill_at_ms - now < next) {
            next = r->kill_at_ms - now;
        }
    }
    return (int)next;
}

/* Sleeps until a push, a reply, room in a stdin pipe, a signal or TIMEOUT_MS; 0, or -1 if
 * ppoll() failed (reported). */
static int sleep_once(struct worker *w, int timeout_ms)
{
    nfds_t n = 0;
    struct run *fed[WORK_CONCURRENCY_MAX];
    if (!w->failed)
        w->pfd[n++] = (struct pollfd){ .fd = deferd_fd(w->c), .events = POLLIN };
    unsigned k = 0;
    for (unsigned i = 0; i < w->a->concurrency; i++)
        if (w->runs[i].pid != 0 && w->runs[i].in_fd >= 0) {
            fed[k++] = &w->runs[i];
            w->pfd[n++] = (struct pollfd){ .fd = w->runs[i].in_fd, .events = POLLOUT };
        }
    struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
    if (ppoll(w->pfd, n, timeout_ms < 0 ? NULL : &ts, &w->wait_mask) < 0) {
        if (errno == EINTR)
            return 0;
        ctl_errmsg("ppoll: %s", strerror(errno));
        return -1;
    }
    for (unsigned i = 0; i < k; i++)
        if (w->pfd[n - k + i].revents != 0)
            feed_run(fed[i]);
    return 0;
}

enum { STEP_AGAIN, STEP_SLEEP, STEP_DONE };

/* One pass over everything that may have happened. */
static int step(struct worker *w)
{
    if (!w->stopping && stop_requested()) {
        ctl_errmsg("stopping on signal");
        w->stopping = 1;
    }
    if (w->stopping && !w->failed)
        give_back(w); /* UNSUB first: no job after the running ones */
    reap_commands(w);
    take_in(w);
    if (start_commands(w) > 0)
        return STEP_AGAIN; /* their exec took time: look again before sleeping */
    return w->stopping && w->running == 0 ? STEP_DONE : STEP_SLEEP;
}

static int work_loop(struct worker *w)
{
    int s;
    setup_signals(w);
    while ((s = step(w)) != STEP_DONE) {
        if (s == STEP_SLEEP && sleep_once(w, kill_overdue(w)) != 0) {
            fail_soft(w);
            break; /* the running commands are left behind; their jobs are released */
        }
    }
    if (w->running == 0) {
        flush_acks(w);
        if (!w->failed)
            give_back(w);
    }
    return w->rc;
}

int ctl_cmd_work(const char *sock, int argc, char **argv)
{
    struct work_args a = { .concurrency = 1, .nack_delay_ms = -1 };
    int rc = parse_work(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    struct worker w = { .a = &a, .rc = EXIT_OK };
    w.runs = calloc(a.concurrency, sizeof *w.runs);
    w.pfd = calloc(a.concurrency + 1, sizeof *w.pfd);
    if (w.runs == NULL || w.pfd == NULL) {
        ctl_errmsg("out of memory");
        rc = EXIT_FAIL;
    } else if ((w.c = ctl_connect(sock)) == NULL) {
        rc = EXIT_FAIL;
    } else {
        rc = deferd_subscribe(w.c, a.queues, a.inflight);
        rc = rc == DEFERD_OK ? work_loop(&w) : ctl_lib_fail(w.c, "subscribe", rc);
    }
    prefetched_free(&w);
    deferd_close(w.c);
    free(w.runs);
    free(w.pfd);
    return rc;
}
