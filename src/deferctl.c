/* deferctl: command line client for deferd (put, work, ping). See docs/deferctl.md. */
#define _GNU_SOURCE /* ppoll, pipe2 */

#include "deferd/client.h"
#include "admin.h"
#include "deferctl.h"
#include "deferctl_stats.h"
#include "jsonw.h"
#include "units.h"

#define DEFAULT_CONFIG "/etc/deferd/deferd.ini"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Set by the SIGINT/SIGTERM handler of `work`; a handler can only talk through a global. */
static volatile sig_atomic_t stop_signal;

static void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void errmsg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("deferctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs("deferctl: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    fprintf(stderr, "Try 'deferctl %s--help'.\n", cmd);
    return EXIT_USAGE;
}

/* Library failures: a bad argument is the user's input, everything else a runtime error. */
int lib_fail(deferd_client *c, const char *what, int rc)
{
    errmsg("%s: %s", what, deferd_last_error(c));
    return rc == DEFERD_EARG ? EXIT_USAGE : EXIT_FAIL;
}

deferd_client *connect_or_complain(const char *path)
{
    char err[256];
    deferd_client *c = deferd_connect(path, err, sizeof err);
    if (c == NULL)
        errmsg("%s", err);
    return c;
}

/* ---- usage ---- */

static void main_usage(FILE *f)
{
    fputs("Usage: deferctl [-s PATH] COMMAND [ARGS...]\n"
          "Talk to the deferd job scheduler.\n\n"
          "Commands:\n"
          "  put    schedule a job (or a file of jobs, all or none)\n"
          "  work   run a command for each job of some queues\n"
          "  ping   check that deferd answers\n"
          "  stats  show the daemon's counters, or one queue's (add --json for JSON)\n"
          "  help   show help for a command\n"
          "Operator commands (read and write ZooKeeper, configured by -c):\n"
          "  list        page through a queue's pending jobs in due order\n"
          "  show        show one job (pending or dead) and its payload\n"
          "  cancel      delete a pending job (by id or by key)\n"
          "  reschedule  move a pending job to a new due time (by id or by key)\n"
          "  pause       stop deliveries of a queue on every daemon (puts still work)\n"
          "  resume      let a paused queue deliver again\n"
          "  dead        list, show, kick or delete dead-lettered jobs\n\n"
          "Options:\n"
          "  -s, --socket PATH  deferd socket (default: $DEFERD_SOCKET, else "
          DEFERD_DEFAULT_SOCKET ")\n"
          "  -c, --config PATH  deferd.ini, for commands that read ZooKeeper (default:\n"
          "                     $DEFERD_CONFIG, else " DEFAULT_CONFIG ")\n"
          "  -h, --help         show this help\n"
          "  -V, --version      print the version and exit\n\n"
          "Exit status: 0 ok, 1 error, 2 usage error, 3 no such job, 4 job in flight.\n", f);
}

static void put_usage(FILE *f)
{
    fputs("Usage: deferctl put --queue Q [--delay DUR | --at EPOCH_MS] [--priority N]\n"
          "                    [--ttr DUR] [--key KEY] [--json] [--file PATH | PAYLOAD | -]\n"
          "       deferctl put --batch FILE [--json]\n"
          "Schedule a job and print its id. The payload is PAYLOAD, the contents of --file,\n"
          "or standard input (PAYLOAD '-', or neither given).\n\n"
          "  -q, --queue Q        queue to put the job in (required)\n"
          "  -d, --delay DUR      due after DUR: 250ms, 5s, 2m, 1h, 1d\n"
          "  -a, --at EPOCH_MS    due at this time, milliseconds since the Unix epoch\n"
          "  -p, --priority N     0..4294967295, lower is more urgent (default: the queue's)\n"
          "  -t, --ttr DUR        time to run: lease of each delivery, 1s..7d\n"
          "                       (default: the queue's)\n"
          "  -f, --file PATH      read the payload from PATH ('-': standard input)\n"
          "  -k, --key KEY        idempotency key: while a job with KEY exists in the queue,\n"
          "                       nothing is created and its id is printed (a note on stderr)\n"
          "  -b, --batch FILE     put every job of FILE ('-': standard input), all or none; one\n"
          "                       a line: queue=Q [delay=DUR] [at=TIME] [prio=N] [ttr=DUR]\n"
          "                       [key=K] payload=REST OF LINE (or payload64=BASE64); blank\n"
          "                       lines and lines starting with # are skipped. Prints one id a\n"
          "                       line, \"ID duplicate\" for a key that was taken\n"
          "  -j, --json           print {\"id\", \"duplicate\"} ({\"jobs\": [...]} for --batch)\n"
          "  -h, --help           show this help\n", f);
}

static void work_usage(FILE *f)
{
    fputs("Usage: deferctl work --queue Q[,Q2...] [--inflight N] [--max-jobs N]\n"
          "                     [--nack-delay DUR] [--touch] -- CMD [ARGS...]\n"
          "Run CMD once per job, one job at a time, with the payload on its standard input\n"
          "and DEFERD_JOB_ID, DEFERD_QUEUE, DEFERD_ATTEMPT, DEFERD_DUE_MS, DEFERD_PRIORITY,\n"
          "DEFERD_TTR_MS in its environment. Exit status 0 acks the job; anything else\n"
          "nacks it. If the job's lease (ttr) expires first, it is neither acked nor nacked:\n"
          "deferd delivers it again.\n\n"
          "  -q, --queue LIST     comma separated queues to consume (required)\n"
          "  -n, --inflight N     jobs deferd may push ahead, 1..10000 (default 1)\n"
          "  -m, --max-jobs N     exit after N jobs were handled\n"
          "  -r, --nack-delay DUR retry a failed job after DUR instead of at once\n"
          "  -t, --touch          renew the lease while CMD runs, however long it takes\n"
          "  -h, --help           show this help\n"
          "SIGINT/SIGTERM: finish the current job, then exit 0.\n", f);
}

static void ping_usage(FILE *f)
{
    fputs("Usage: deferctl ping\n"
          "Check that deferd answers; prints PONG.\n", f);
}

/* ---- put ---- */

struct put_args {
    const char *queue;
    const char *file;
    const char *payload;          /* positional argument, "-" = stdin */
    const char *batch;            /* --batch FILE */
    int json;
    deferd_put_opts opts;
};

static int parse_put_opt(int opt, const char *arg, struct put_args *a)
{
    uint64_t v;
    switch (opt) {
    case 'q': a->queue = arg; return 0;
    case 'f': a->file = arg; return 0;
    case 'k': a->opts.key = arg; return 0;
    case 'b': a->batch = arg; return 0;
    case 'j': a->json = 1; return 0;
    case 'd':
        if (units_parse_duration_ms(arg, &a->opts.delay_ms) != 0)
            return usage_error("put ", "invalid duration '%s' (e.g. 250ms, 5s, 2m)", arg);
        a->opts.has_delay = 1;
        return 0;
    case 'a':
        if (units_parse_u64(arg, UINT64_MAX, &a->opts.at_ms) != 0)
            return usage_error("put ", "invalid time '%s' (milliseconds since the epoch)", arg);
        a->opts.has_at = 1;
        return 0;
    case 'p':
        if (units_parse_u64(arg, UINT32_MAX, &v) != 0)
            return usage_error("put ", "invalid priority '%s' (0..4294967295)", arg);
        a->opts.priority = (uint32_t)v;
        a->opts.has_priority = 1;
        return 0;
    case 't':
        if (units_parse_duration_ms(arg, &a->opts.ttr_ms) != 0 ||
            a->opts.ttr_ms < DEFERD_TTR_MIN_MS || a->opts.ttr_ms > DEFERD_TTR_MAX_MS)
            return usage_error("put ", "invalid --ttr '%s' (1s..7d, e.g. 30s, 5m, 2h)", arg);
        a->opts.has_ttr = 1;
        return 0;
    default:
        return usage_error("put ", NULL);
    }
}

/* Returns -1 after --help, 0 when *a is complete, else an exit status. */
static int parse_put(int argc, char **argv, struct put_args *a)
{
    static const struct option longopts[] = {
        { "queue", required_argument, NULL, 'q' }, { "delay", required_argument, NULL, 'd' },
        { "at", required_argument, NULL, 'a' }, { "priority", required_argument, NULL, 'p' },
        { "ttr", required_argument, NULL, 't' }, { "file", required_argument, NULL, 'f' },
        { "key", required_argument, NULL, 'k' }, { "batch", required_argument, NULL, 'b' },
        { "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int opt, rc;
    while ((opt = getopt_long(argc, argv, "q:d:a:p:t:f:k:b:jh", longopts, NULL)) != -1) {
        if (opt == 'h') {
            put_usage(stdout);
            return -1;
        }
        if ((rc = parse_put_opt(opt, optarg, a)) != 0)
            return rc;
    }
    const deferd_put_opts *o = &a->opts;
    if (a->batch && (a->queue || a->file || optind < argc || o->has_delay || o->has_at ||
                     o->has_priority || o->has_ttr || o->key))
        return usage_error("put ", "--batch takes the jobs and their options from its file "
                           "only");
    if (a->batch)
        return 0;
    if (a->queue == NULL)
        return usage_error("put ", "--queue is required");
    if (a->opts.has_delay && a->opts.has_at)
        return usage_error("put ", "--delay and --at are mutually exclusive");
    if (argc - optind > 1)
        return usage_error("put ", "only one PAYLOAD argument is allowed (quote it)");
    a->payload = optind < argc ? argv[optind] : NULL;
    if (a->payload && a->file)
        return usage_error("put ", "give either PAYLOAD or --file, not both");
    return 0;
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

int read_path(const char *path, char **out, size_t *len)
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

/* The payload from the argument, --file, or stdin; *owned is set when it must be freed. */
static int load_payload(const struct put_args *a, char **data, size_t *len, char **owned)
{
    *owned = NULL;
    if (a->file == NULL && a->payload && strcmp(a->payload, "-") != 0) {
        *data = (char *)a->payload;
        *len = strlen(a->payload);
        return 0;
    }
    const char *path = a->file ? a->file : "-";
    if (read_path(path, owned, len) != 0) {
        errmsg("cannot read %s: %s", strcmp(path, "-") ? path : "standard input",
               strerror(errno));
        return -1;
    }
    *data = *owned;
    return 0;
}

int zk_starting(deferd_client *c, int err, int tries)
{
    return err == DEFERD_ESERVER && tries < 50 &&
           strcmp(deferd_last_error_code(c), "UNAVAILABLE") == 0 &&
           strstr(deferd_last_error(c), "not connected to ZooKeeper") != NULL;
}

static void put_done(const deferd_put_item *it, int json)
{
    if (json) {
        struct jsonw w;
        jsonw_init(&w, stdout);
        jsonw_obj_begin(&w, NULL);
        jsonw_str(&w, "id", it->id);
        jsonw_bool(&w, "duplicate", it->duplicate);
        jsonw_obj_end(&w);
        jsonw_finish(&w);
    } else {
        printf("%s\n", it->id);
    }
    if (it->duplicate)
        errmsg("key %s is taken in queue %s: nothing was created; %s is the job that holds "
               "it", it->opts.key, it->queue, it->id);
}

static int cmd_put(const char *sock, int argc, char **argv)
{
    struct put_args a = { 0 };
    int rc = parse_put(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    if (a.batch)
        return put_batch(sock, a.batch, a.json);
    char *data, *owned;
    size_t len;
    if (load_payload(&a, &data, &len, &owned) != 0)
        return EXIT_FAIL;
    deferd_client *c = connect_or_complain(sock);
    rc = EXIT_FAIL;
    if (c) {
        deferd_put_item it = { .queue = a.queue, .payload = data, .len = len, .opts = a.opts };
        int err;
        for (int tries = 0;; tries++) {
            err = deferd_put_one(c, &it);
            if (!zk_starting(c, err, tries))
                break;
            poll(NULL, 0, 100);
        }
        rc = err == DEFERD_OK ? EXIT_OK : lib_fail(c, "put", err);
        if (err == DEFERD_OK)
            put_done(&it, a.json);
        deferd_close(c);
    }
    free(owned);
    return rc;
}

/* ---- work ---- */

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
            return usage_error("work ", "invalid --inflight '%s' (1..%d)", arg,
                               DEFERD_INFLIGHT_MAX);
        a->inflight = (unsigned)v;
        return 0;
    case 'm':
        if (units_parse_u64(arg, UINT64_MAX, &a->max_jobs) != 0 || a->max_jobs == 0)
            return usage_error("work ", "invalid --max-jobs '%s' (a number >= 1)", arg);
        return 0;
    case 'r':
        if (units_parse_duration_ms(arg, &v) != 0 || v > INT64_MAX)
            return usage_error("work ", "invalid duration '%s' (e.g. 250ms, 5s, 2m)", arg);
        a->nack_delay_ms = (int64_t)v;
        return 0;
    case 't': a->touch = 1; return 0;
    default:
        return usage_error("work ", NULL);
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
            work_usage(stdout);
            return -1;
        }
        if ((rc = parse_work_opt(opt, optarg, a)) != 0)
            return rc;
    }
    if (a->queues == NULL)
        return usage_error("work ", "--queue is required");
    if (optind >= argc)
        return usage_error("work ", "missing command to run (after --)");
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
    int cur_expired;              /* its lease expired or was lost: neither ack nor nack */
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
    errmsg("%s: %s", rc == DEFERD_EIO ? "lost connection to deferd" : "reading from deferd",
           deferd_last_error(w->c));
    w->failed = 1;
}

/* ---- work: jobs waiting for their turn ---- */

/* Takes ownership of *job. */
static void pending_push(struct worker *w, deferd_job *job)
{
    struct pending *p = malloc(sizeof *p);
    if (p == NULL) {
        errmsg("out of memory for job %s", job->id);
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

static int pending_pop(struct worker *w, deferd_job *job)
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
static int pending_drop(struct worker *w, const char *id)
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

static void pending_free(struct worker *w)
{
    deferd_job job;
    while (pending_pop(w, &job))
        deferd_job_clear(&job);
}

/* ---- work: pushes ---- */

static int is_current(const struct worker *w, const char *id)
{
    return w->cur && !w->cur_expired && strcmp(w->cur->id, id) == 0;
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
        w->cur_expired = 1;
        errmsg("%s: lease lost; the job will be delivered again", id);
    } else if (rc == DEFERD_ESERVER) {
        errmsg("touch of %s failed: %s", id, deferd_last_error(w->c));
    } else {
        conn_failed(w, rc);
    }
}

/* DEADLINE and EXPIRED count for the running job if it is theirs; EXPIRED also for a job
 * still waiting in our queue (it is dropped: the daemon will deliver it again). Anything else
 * is about a job we already acked or nacked, and is ignored. */
static void on_event(struct worker *w, deferd_event *ev)
{
    const char *id = ev->job.id;
    if (ev->kind == DEFERD_EV_JOB) {
        pending_push(w, &ev->job);
        return;
    }
    if (ev->kind == DEFERD_EV_STATE && strcmp(ev->state, "DRAINING") == 0)
        errmsg("deferd is shutting down: no new jobs; the current one may still be acked");
    else if (ev->kind == DEFERD_EV_STATE)
        errmsg("deferd's ZooKeeper connection: %s", ev->state);
    if (ev->kind == DEFERD_EV_DEADLINE && is_current(w, id)) {
        if (w->a->touch)
            touch_current(w);
        else
            errmsg("%s: lease ends in %" PRId64 " ms", id, ev->ms_left);
    } else if (ev->kind == DEFERD_EV_EXPIRED && is_current(w, id)) {
        w->cur_expired = 1;
        errmsg("%s: lease expired; the job will be delivered again", id);
    } else if (ev->kind == DEFERD_EV_EXPIRED && pending_drop(w, id)) {
        errmsg("%s: lease expired before the job's turn; it will be delivered again", id);
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

enum { WAIT_JOB, WAIT_STOP, WAIT_ERROR };

static int wait_job(struct worker *w, deferd_job *job)
{
    for (;;) {
        if (stop_requested())
            return WAIT_STOP;
        if (pending_pop(w, job))
            return WAIT_JOB;
        drain_events(w);
        if (w->failed)
            return WAIT_ERROR;
        if (w->head)
            continue;
        struct pollfd pfd = { .fd = deferd_fd(w->c), .events = POLLIN };
        if (ppoll(&pfd, 1, NULL, &w->wait_mask) < 0 && errno != EINTR) {
            errmsg("ppoll: %s", strerror(errno));
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
            errmsg("waitpid: %s", strerror(errno));
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
        errmsg("fcntl: %s", strerror(errno)); /* still works, with blocking writes */
    if (feed_some(in_fd, job, &off)) {
        close(in_fd);
        in_fd = -1;
    }
    int rc = 0;
    for (;;) {
        drain_events(w);
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            errmsg("waitpid: %s", strerror(errno));
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
            errmsg("ppoll: %s", strerror(errno));
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
        errmsg("pipe: %s", strerror(errno));
        return -1; /* we exit right away; leaked fds don't matter */
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        errmsg("fork: %s", strerror(errno));
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
        errmsg("cannot run '%s': %s", w->a->cmd[0], strerror(exec_err));
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
 * whose lease expired is neither acked nor nacked (deferd already released it) but counts
 * as handled. */
static int handle_job(struct worker *w, const deferd_job *job)
{
    int status;
    w->cur = job;
    w->cur_expired = 0;
    int ran = run_command(w, job, &status);
    w->cur = NULL;
    if (ran != 0)
        return EXIT_FAIL;
    if (w->failed) {
        report_job(job, "neither (connection lost)", status);
        return EXIT_FAIL;
    }
    if (w->cur_expired) {
        report_job(job, "lease expired", status);
        return EXIT_OK;
    }
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    int rc = ok ? deferd_ack(w->c, job->id) : deferd_nack(w->c, job->id, w->a->nack_delay_ms);
    if (lease_lost(w, rc)) {
        /* The EXPIRED push was still on its way when the command ended. */
        errmsg("%s: lease expired; the job will be delivered again", job->id);
        report_job(job, "lease expired", status);
        return EXIT_OK;
    }
    if (rc != DEFERD_OK) {
        errmsg("%s of %s failed: %s", ok ? "ack" : "nack", job->id, deferd_last_error(w->c));
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
            errmsg("stopping on signal");
            return EXIT_OK;
        }
        if (r == WAIT_ERROR)
            return EXIT_FAIL;
        int rc = handle_job(w, &job);
        deferd_job_clear(&job);
        if (rc != EXIT_OK)
            return rc;
    }
    return EXIT_OK;
}

static int cmd_work(const char *sock, int argc, char **argv)
{
    struct work_args a = { .inflight = 1, .nack_delay_ms = -1 };
    int rc = parse_work(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    struct worker w = { .a = &a };
    w.c = connect_or_complain(sock);
    if (w.c == NULL)
        return EXIT_FAIL;
    rc = deferd_subscribe(w.c, a.queues, a.inflight);
    rc = rc == DEFERD_OK ? work_loop(&w) : lib_fail(w.c, "subscribe", rc);
    pending_free(&w);
    deferd_close(w.c);
    return rc;
}

/* ---- ping ---- */

static int cmd_ping(const char *sock, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt != 'h')
            return usage_error("ping ", NULL);
        ping_usage(stdout);
        return EXIT_OK;
    }
    if (optind < argc)
        return usage_error("ping ", "unexpected argument '%s'", argv[optind]);
    deferd_client *c = connect_or_complain(sock);
    if (c == NULL)
        return EXIT_FAIL;
    int rc = deferd_ping(c);
    rc = rc == DEFERD_OK ? (puts("PONG"), EXIT_OK) : lib_fail(c, "ping", rc);
    deferd_close(c);
    return rc;
}

/* ---- dead letters (ZooKeeper, through admin.c) ---- */

const char *deferctl_config_path = DEFAULT_CONFIG;

static void dead_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] dead list QUEUE\n"
          "       deferctl [-c CONFIG] dead show|kick|delete JOB_ID\n"
          "Jobs whose attempts reached their queue's max_attempts wait in its dead letters.\n\n"
          "  list QUEUE    one line per dead job: id, attempts, priority, due time, bytes\n"
          "  show ID       its metadata, a blank line, then its payload\n"
          "  kick ID       put it back in the queue, due now, attempts from zero; prints the\n"
          "                new job id (a keyed job takes its key back, or goes without it if\n"
          "                another job took the key meanwhile)\n"
          "  delete ID     remove it for good\n", f);
}

static int cmd_dead(const char *sock, int argc, char **argv)
{
    (void)sock;
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        dead_usage(stdout);
        return EXIT_OK;
    }
    if (argc != 3 || (strcmp(argv[1], "list") && strcmp(argv[1], "show") &&
                      strcmp(argv[1], "kick") && strcmp(argv[1], "delete"))) {
        dead_usage(stderr);
        return EXIT_USAGE;
    }
    char err[512], id[DEFERD_ID_SIZE];
    struct admin *a;
    if (admin_open(deferctl_config_path, &a, err, sizeof err) != 0) {
        fprintf(stderr, "deferctl: %s\n", err);
        return EXIT_FAIL;
    }
    int rc, unkeyed = 0;
    if (strcmp(argv[1], "list") == 0)
        rc = admin_dead_list(a, argv[2], stdout, err, sizeof err);
    else if (strcmp(argv[1], "show") == 0)
        rc = admin_dead_show(a, argv[2], stdout, err, sizeof err);
    else if (strcmp(argv[1], "kick") == 0 &&
             (rc = admin_dead_kick(a, argv[2], id, sizeof id, &unkeyed, err, sizeof err)) == 0)
        puts(id);
    else if (strcmp(argv[1], "delete") == 0)
        rc = admin_dead_delete(a, argv[2], err, sizeof err);
    admin_close(a);
    if (rc != 0)
        fprintf(stderr, "deferctl: %s\n", err);
    else if (unkeyed)
        errmsg("its key was taken by another job meanwhile: %s went back without its key",
               id);
    return rc == 0 ? EXIT_OK : EXIT_FAIL;
}

/* ---- stats (deferctl_stats.c) ---- */

static int cmd_stats(const char *sock, int argc, char **argv)
{
    return deferctl_stats(sock, deferctl_config_path, argc, argv);
}

/* ---- main ---- */

struct command {
    const char *name;
    int (*run)(const char *sock, int argc, char **argv);
    void (*usage)(FILE *f);
    const char *prog; /* argv[0] for getopt's messages */
};

static const struct command commands[] = {
    { "put", cmd_put, put_usage, "deferctl put" },
    { "work", cmd_work, work_usage, "deferctl work" },
    { "ping", cmd_ping, ping_usage, "deferctl ping" },
    { "dead", cmd_dead, dead_usage, "deferctl dead" },
    { "stats", cmd_stats, deferctl_stats_usage, "deferctl stats" },
    { "list", cmd_list, list_usage, "deferctl list" },
    { "show", cmd_show, show_usage, "deferctl show" },
    { "cancel", cmd_cancel, cancel_usage, "deferctl cancel" },
    { "reschedule", cmd_reschedule, reschedule_usage, "deferctl reschedule" },
    { "pause", cmd_pause, pause_usage, "deferctl pause" },
    { "resume", cmd_pause, pause_usage, "deferctl resume" },
    { NULL, NULL, NULL, NULL },
};

static const struct command *find_command(const char *name)
{
    for (const struct command *cmd = commands; cmd->name; cmd++)
        if (strcmp(cmd->name, name) == 0)
            return cmd;
    return NULL;
}

static int cmd_help(int argc, char **argv)
{
    const struct command *cmd = argc > 1 ? find_command(argv[1]) : NULL;
    if (argc > 1 && cmd == NULL)
        return usage_error("", "unknown command '%s'", argv[1]);
    if (cmd)
        cmd->usage(stdout);
    else
        main_usage(stdout);
    return EXIT_OK;
}

/* Returns the index of the command word, -1 after --help, or -2 on a usage error. */
static int parse_global(int argc, char **argv, const char **sock)
{
    static const struct option longopts[] = {
        { "socket", required_argument, NULL, 's' }, { "help", no_argument, NULL, 'h' },
        { "config", required_argument, NULL, 'c' }, { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "+s:c:hV", longopts, NULL)) != -1) {
        if (opt == 's') {
            *sock = optarg;
        } else if (opt == 'c') {
            deferctl_config_path = optarg;
        } else if (opt == 'h') {
            main_usage(stdout);
            return -1;
        } else if (opt == 'V') {
            printf("deferctl %s\n", DEFERD_VERSION);
            return -1;
        } else {
            return -2;
        }
    }
    return optind;
}

int main(int argc, char **argv)
{
    const char *env = getenv("DEFERD_SOCKET");
    const char *sock = env && *env ? env : DEFERD_DEFAULT_SOCKET;
    const char *cenv = getenv("DEFERD_CONFIG");
    if (cenv && *cenv)
        deferctl_config_path = cenv;
    int first = parse_global(argc, argv, &sock);
    if (first == -1)
        return EXIT_OK;
    if (first == -2)
        return usage_error("", NULL);
    if (first >= argc)
        return usage_error("", "missing command");
    if (strcmp(argv[first], "help") == 0)
        return cmd_help(argc - first, argv + first);
    const struct command *cmd = find_command(argv[first]);
    if (cmd == NULL)
        return usage_error("", "unknown command '%s'", argv[first]);
    argv[first] = (char *)cmd->prog;
    optind = 0; /* glibc: start a fresh scan of the subcommand's arguments */
    return cmd->run(sock, argc - first, argv + first);
}
