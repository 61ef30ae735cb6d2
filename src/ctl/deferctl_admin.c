/* deferctl's operator commands on pending jobs and queues, read and written in ZooKeeper
 * (admin_jobs.c, admin_pause.c): list, show, cancel, reschedule, pause, resume. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "admin_flow_json.h"
#include "deferctl.h"
#include "errtext.h"
#include "jsonw.h"
#include "units.h"

#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX 10000

/* admin_* results to exit codes (deferctl(1), EXIT STATUS). */
int ctl_admin_exit(int rc, const char *err)
{
    if (rc == 0)
        return EXIT_OK;
    fprintf(stderr, "deferctl: %s\n", err);
    return rc == ADMIN_NOT_FOUND ? EXIT_NOT_FOUND : rc == ADMIN_IN_FLIGHT ? EXIT_IN_FLIGHT
                                                                          : EXIT_FAIL;
}

static struct admin *open_admin(void)
{
    char err[512];
    struct admin *a;
    if (ctl_admin_open(&a, err, sizeof err) != 0) {
        fprintf(stderr, "deferctl: %s\n", err);
        return NULL;
    }
    return a;
}

static const char *job_state(const struct admin_job *j, int64_t now)
{
    if (j->dead)
        return "dead";
    if (j->waiting)
        return "waiting-for-children"; /* a flow's parent (docs/flows.md) */
    if (j->locked)
        return "in-flight";
    if (j->jn.pack[0])
        return "packed"; /* waiting in a pack until its window comes near */
    return (int64_t)j->jn.due_ms <= now ? "due" : "waiting";
}

static void job_json(struct jsonw *w, const struct admin_job *j, int64_t now)
{
    char when[40];
    units_format_time((int64_t)j->jn.due_ms, when, sizeof when);
    jsonw_str(w, "id", j->id);
    jsonw_str(w, "uid", j->jn.uid[0] ? j->jn.uid : NULL);
    jsonw_uint(w, "due_ms", j->jn.due_ms);
    jsonw_str(w, "due", when);
    jsonw_int(w, "due_in_ms", (int64_t)j->jn.due_ms - now);
    jsonw_uint(w, "priority", j->jn.priority);
    jsonw_uint(w, "attempts", j->attempts);
    jsonw_str(w, "state", job_state(j, now));
    jsonw_uint(w, "ttr_ms", j->ttr_ms);
    jsonw_bool(w, "ttr_default", j->ttr_default);
    jsonw_int(w, "bytes", j->bytes);
}

/* ---- list ---- */

void ctl_list_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] list QUEUE [--from TIME] [--until TIME] [--limit N]\n"
          "                                [--after ID] [--json]\n"
          "Page through QUEUE's pending jobs in due order (then priority), as ZooKeeper has\n"
          "them: due time, time left, priority, deliveries so far, state (waiting, due,\n"
          "in-flight), payload size. Only the buckets the page needs are read.\n\n"
          "  -f, --from TIME   jobs due at or after TIME\n"
          "  -u, --until TIME  jobs due at or before TIME\n"
          "                    TIME: " TIME_FORMS "\n"
          "  -n, --limit N     jobs per page, 1.." ERRTEXT_NUM(LIST_LIMIT_MAX) " (default 100)\n"
          "  -A, --after ID    start after this job: the last id of the previous page\n"
          "                    (when more follow, the command to get them goes to stderr)\n"
          "  -j, --json        one JSON object: queue, paused, jobs[], next_after\n", f);
}

struct list_out {
    struct jsonw w;
    int json;
    int64_t now;
    char last[LAYOUT_ID_MAX + 1]; /* the next page's --after */
    struct admin_job *rows;       /* the table's page: its id column is as wide as its ids */
    size_t n, cap;
    int oom;
};

#define ID_WIDTH_MIN 56 /* an unkeyed id */

static void keep_row(struct list_out *lo, const struct admin_job *j)
{
    if (lo->n == lo->cap) {
        size_t cap = lo->cap ? lo->cap * 2 : 64;
        struct admin_job *p = realloc(lo->rows, cap * sizeof *p);
        if (!p) {
            lo->oom = 1;
            return;
        }
        lo->rows = p;
        lo->cap = cap;
    }
    lo->rows[lo->n] = *j;
    lo->rows[lo->n++].payload = NULL; /* list reads no payload */
}

static void on_row(const struct admin_job *j, void *ctx)
{
    struct list_out *lo = ctx;
    if (!lo->json) {
        keep_row(lo, j);
        return;
    }
    jsonw_obj_begin(&lo->w, NULL);
    job_json(&lo->w, j, lo->now);
    jsonw_obj_end(&lo->w);
}

static void print_table(const struct list_out *lo)
{
    int width = ID_WIDTH_MIN;
    for (size_t i = 0; i < lo->n; i++)
        if ((int)strlen(lo->rows[i].id) > width)
            width = (int)strlen(lo->rows[i].id);
    printf("%-*s %-24s %8s %10s %8s %-9s %8s %s\n", width, "ID", "DUE", "IN", "PRIORITY",
           "ATTEMPTS", "STATE", "BYTES", "UID");
    for (size_t i = 0; i < lo->n; i++) {
        const struct admin_job *j = &lo->rows[i];
        char when[40], left[24];
        units_format_time((int64_t)j->jn.due_ms, when, sizeof when);
        units_format_span((int64_t)j->jn.due_ms - lo->now, left, sizeof left);
        printf("%-*s %-24s %8s %10u %8u %-9s %8d %s\n", width, j->id, when, left,
               j->jn.priority, j->attempts, job_state(j, lo->now), j->bytes,
               j->jn.uid[0] ? j->jn.uid : "-");
    }
}

static int parse_list(int argc, char **argv, struct admin_list_opts *o, int *json)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'}, {"until", required_argument, NULL, 'u'},
        {"limit", required_argument, NULL, 'n'}, {"after", required_argument, NULL, 'A'},
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    uint64_t v;
    while ((opt = getopt_long(argc, argv, "f:u:n:A:jh", longopts, NULL)) != -1) {
        if (opt == 'h')
            return ctl_list_usage(stdout), -1;
        if (opt == 'j')
            *json = 1;
        else if (opt == 'A')
            o->after = optarg;
        else if (opt == 'n' && units_parse_u64(optarg, LIST_LIMIT_MAX, &v) == 0 && v > 0)
            o->limit = v;
        else if (opt == 'f' || opt == 'u') {
            if (ctl_parse_time_arg("list ", opt == 'f' ? "--from" : "--until", optarg,
                                   opt == 'f' ? &o->from_ms : &o->until_ms) != 0)
                return EXIT_USAGE;
        } else if (opt == 'n')
            return ctl_usage_error("list ", "invalid --limit '%s' (1..%d)", optarg,
                                   LIST_LIMIT_MAX);
        else
            return ctl_usage_error("list ", NULL);
    }
    if (argc - optind != 1)
        return ctl_usage_error("list ", "expected one QUEUE");
    if (ctl_check_queue_name("list ", argv[optind]) != 0)
        return EXIT_USAGE;
    if (o->from_ms > o->until_ms)
        return ctl_usage_error("list ", "--from is after --until");
    return 0;
}

static void list_begin(struct list_out *lo, struct admin *a, const char *queue)
{
    char info[512], err[512];
    int paused = 0;
    if (admin_paused(a, queue, &paused, info, sizeof info, err, sizeof err) != 0)
        fprintf(stderr, "deferctl: %s\n", err);
    if (lo->json) {
        jsonw_obj_begin(&lo->w, NULL);
        jsonw_str(&lo->w, "queue", queue);
        jsonw_bool(&lo->w, "paused", paused);
        jsonw_str(&lo->w, "paused_info", paused ? info : NULL);
        jsonw_arr_begin(&lo->w, "jobs");
        return;
    }
    if (paused)
        fprintf(stderr, "queue %s is PAUSED (%s)\n", queue, info);
}

/* A shell word: as it is when plain, else single-quoted. */
static void shell_word(FILE *f, const char *w)
{
    static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                "0123456789_./:@%+=,-";
    if (*w && strspn(w, plain) == strlen(w)) {
        fprintf(f, " %s", w);
        return;
    }
    fputs(" '", f);
    for (; *w; w++) {
        if (*w == '\'')
            fputs("'\\''", f); /* end the quote, a quoted ', quote again */
        else
            fputc(*w, f);
    }
    fputc('\'', f);
}

/* The next page's command, complete, so that it runs when pasted; relative times are given
 * as the instants they meant, so the window does not slide between pages. */
static void next_page_hint(const char *queue, const struct admin_list_opts *o,
                           const char *last)
{
    fputs("more jobs follow: deferctl -c", stderr);
    shell_word(stderr, deferctl_config_path);
    fprintf(stderr, " list %s --after %s", queue, last);
    if (o->limit != LIST_LIMIT_DEFAULT)
        fprintf(stderr, " --limit %zu", o->limit);
    if (o->from_ms)
        fprintf(stderr, " --from %llu", (unsigned long long)o->from_ms);
    if (o->until_ms != LAYOUT_DUE_MAX)
        fprintf(stderr, " --until %llu", (unsigned long long)o->until_ms);
    fputc('\n', stderr);
}

int ctl_cmd_list(const char *sock, int argc, char **argv)
{
    (void)sock;
    struct admin_list_opts o = {.until_ms = LAYOUT_DUE_MAX, .limit = LIST_LIMIT_DEFAULT};
    struct list_out lo = {.now = units_wall_ms()};
    int rc = parse_list(argc, argv, &o, &lo.json), more = 0;
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    const char *queue = argv[optind];
    struct admin *a = open_admin();
    if (!a)
        return EXIT_FAIL;
    char err[512];
    jsonw_init(&lo.w, stdout);
    if (!admin_queue(a, queue, err, sizeof err)) {
        admin_close(a);
        return ctl_admin_exit(-1, err);
    }
    list_begin(&lo, a, queue);
    rc = admin_list(a, queue, &o, on_row, &lo, &more, lo.last, sizeof lo.last, err,
                    sizeof err);
    admin_close(a);
    if (rc == 0 && lo.oom) {
        rc = -1;
        snprintf(err, sizeof err, "out of memory");
    }
    if (!lo.json)
        print_table(&lo);
    free(lo.rows);
    if (lo.json) {
        jsonw_arr_end(&lo.w);
        jsonw_str(&lo.w, "next_after", rc == 0 && more ? lo.last : NULL);
        jsonw_obj_end(&lo.w);
        jsonw_finish(&lo.w);
    } else if (rc == 0 && more) {
        next_page_hint(queue, &o, lo.last);
    }
    return ctl_admin_exit(rc, err);
}

/* ---- show ---- */

void ctl_show_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] show ID [--json]\n"
          "Show a job by id (pending or dead): queue, due time, priority, deliveries so far,\n"
          "state, the deferd that holds it in flight (host:pid), then a blank line and its\n"
          "payload. With --json: one object, the payload as text (bytes that are not UTF-8\n"
          "escaped) and exactly as base64.\n", f);
}

static void show_human(const struct admin_job *j, int64_t now)
{
    char when[40], rel[64];
    units_format_time((int64_t)j->jn.due_ms, when, sizeof when);
    units_format_relative((int64_t)j->jn.due_ms - now, rel, sizeof rel);
    printf("id:       %s\nuid:      %s\nstate:    %s\ndue:      %s (%llu, %s)\n"
           "priority: %u\nattempts: %u\n", j->id, j->jn.uid[0] ? j->jn.uid : "-",
           job_state(j, now), when, (unsigned long long)j->jn.due_ms, rel, j->jn.priority,
           j->attempts);
    char ttr[32];
    units_format_duration(j->ttr_ms, ttr, sizeof ttr);
    printf("ttr:      %s%s\n", ttr, j->ttr_default ? " (the queue's default)" : "");
    /* the lock holds the daemon's host:pid; its consumer is not recorded in ZooKeeper */
    if (j->locked)
        printf("held by:  deferd at %s (a consumer of that daemon runs it)\n",
               j->holder[0] ? j->holder : "?");
    if (j->flow_parent[0])
        printf("flow:     a child of %s (which waits for it)\n", j->flow_parent);
    if (j->jn.has_results)
        printf("flow:     released by its children: %u acked, %u dead\n", j->jn.flow_acked,
               j->jn.flow_dead);
    if (j->waiting) {
        printf("flow:     waits until every child is %s: %u pending, %u acked, %u dead\n",
               j->flow.on_complete ? "acked or dead-lettered" : "acked", j->flow.pending,
               j->flow.acked, j->flow.dead);
        for (size_t i = 0; i < j->nchildren; i++)
            printf("child:    %s %s\n", j->children[i].id,
                   j->children[i].held ? "held" : "pending");
    }
    printf("bytes:    %d\n\n", j->len);
    fwrite(j->payload, 1, (size_t)j->len, stdout);
}

static void show_json(const struct admin_job *j, int64_t now)
{
    struct jsonw w;
    jsonw_init(&w, stdout);
    jsonw_obj_begin(&w, NULL);
    job_json(&w, j, now);
    jsonw_str(&w, "holder", j->locked && j->holder[0] ? j->holder : NULL);
    admin_flow_json(&w, j);
    jsonw_strn(&w, "payload", j->payload, (size_t)j->len);
    jsonw_base64(&w, "payload_base64", j->payload, (size_t)j->len);
    jsonw_obj_end(&w);
    jsonw_finish(&w);
}

/* Commands whose only arguments are one word and maybe --json. */
static int parse_one(int argc, char **argv, const char *cmd, void (*usage)(FILE *),
                     int *json, const char **word)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
        if (opt == 'h')
            return usage(stdout), -1;
        if (opt != 'j' || !json)
            return ctl_usage_error(cmd, NULL);
        *json = 1;
    }
    if (argc - optind != 1)
        return ctl_usage_error(cmd, "expected one argument");
    *word = argv[optind];
    return 0;
}

int ctl_cmd_show(const char *sock, int argc, char **argv)
{
    (void)sock;
    int json = 0;
    const char *id = NULL;
    int rc = parse_one(argc, argv, "show ", ctl_show_usage, &json, &id);
    if (rc == 0)
        rc = ctl_check_job_id("show ", id);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    struct admin *a = open_admin();
    if (!a)
        return EXIT_FAIL;
    struct admin_job j;
    char err[512];
    rc = admin_show(a, id, &j, err, sizeof err);
    admin_close(a);
    if (rc == 0) {
        if (json)
            show_json(&j, units_wall_ms());
        else
            show_human(&j, units_wall_ms());
        admin_job_clear(&j);
    }
    return ctl_admin_exit(rc, err);
}

/* ---- cancel, reschedule ---- */

/* --json of cancel and reschedule: {"id": ..., "result": ..., "new_id": ...}. */
static void print_result(const char *id, const char *result, const char *new_id)
{
    struct jsonw w;
    jsonw_init(&w, stdout);
    jsonw_obj_begin(&w, NULL);
    jsonw_str(&w, "id", id);
    jsonw_str(&w, "result", result);
    if (new_id)
        jsonw_str(&w, "new_id", new_id);
    jsonw_obj_end(&w);
    jsonw_finish(&w);
}

void ctl_cancel_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] cancel ID [--force] [--json]\n"
          "       deferctl [-c CONFIG] cancel --key KEY QUEUE [--force] [--json]\n"
          "Delete a pending job for good (and its key), in one ZooKeeper transaction. A job a\n"
          "consumer holds is not cancelled (exit 4): its consumer's ack or nack decides.\n\n"
          "  -k, --key KEY  the job of QUEUE that holds this idempotency key (one read of its\n"
          "                 key node, no listing)\n"
          "  -f, --force    cancel a held job too, deleting its lock in the same transaction:\n"
          "                 the holder's ack or nack then fails with LEASE_LOST\n"
          "  -j, --json     print {\"id\", \"result\": \"cancelled\"}\n", f);
}

/* ID, or QUEUE with --key: the job a cancel or reschedule means. */
static int take_which(int argc, char **argv, const char *cmd, struct admin_which *w)
{
    if (argc - optind != 1)
        return ctl_usage_error(cmd,
                               w->key ? "expected one QUEUE with --key" : "expected one job ID");
    *(w->key ? &w->queue : &w->id) = argv[optind];
    return w->key ? ctl_check_queue_name(cmd, w->queue) : ctl_check_job_id(cmd, w->id);
}

static int parse_cancel(int argc, char **argv, struct admin_which *w, int *force, int *json)
{
    static const struct option longopts[] = {
        {"key", required_argument, NULL, 'k'}, {"force", no_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "k:fjh", longopts, NULL)) != -1) {
        if (opt == 'h')
            return ctl_cancel_usage(stdout), -1;
        if (opt == 'k')
            w->key = optarg;
        else if (opt == 'f')
            *force = 1;
        else if (opt == 'j')
            *json = 1;
        else
            return ctl_usage_error("cancel ", NULL);
    }
    return take_which(argc, argv, "cancel ", w);
}

int ctl_cmd_cancel(const char *sock, int argc, char **argv)
{
    (void)sock;
    struct admin_which w = {0};
    int json = 0, force = 0;
    int rc = parse_cancel(argc, argv, &w, &force, &json);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    struct admin *a = open_admin();
    if (!a)
        return EXIT_FAIL;
    char err[512];
    rc = admin_cancel(a, &w, force, err, sizeof err);
    admin_close(a);
    if (rc == 0 && json)
        print_result(w.found, "cancelled", NULL);
    else if (rc == 0)
        printf("cancelled %s\n", w.found);
    return ctl_admin_exit(rc, err);
}

void ctl_reschedule_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] reschedule ID (--at TIME | --delay DUR) [--json]\n"
          "       deferctl [-c CONFIG] reschedule --key KEY QUEUE (--at TIME | --delay DUR)\n"
          "                                       [--json]\n"
          "Move a pending job to a new due time in one ZooKeeper transaction and print its new\n"
          "id (the id names the due time). Priority, ttr, key, payload and the deliveries made\n"
          "so far stay. A job a consumer holds is not moved (exit 4).\n\n"
          "  -k, --key KEY    the job of QUEUE that holds this idempotency key\n"
          "  -a, --at TIME    " TIME_FORMS "\n"
          "  -d, --delay DUR  due DUR from now: 250ms, 5s, 2m, 1h, 1d\n"
          "  -j, --json       print {\"id\", \"result\": \"rescheduled\", \"new_id\"}\n", f);
}

static int parse_reschedule(int argc, char **argv, struct admin_which *w, uint64_t *due,
                            int *json)
{
    static const struct option longopts[] = {
        {"at", required_argument, NULL, 'a'}, {"delay", required_argument, NULL, 'd'},
        {"key", required_argument, NULL, 'k'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int opt, given = 0;
    uint64_t v;
    int64_t now = units_wall_ms();
    while ((opt = getopt_long(argc, argv, "a:d:k:jh", longopts, NULL)) != -1) {
        if (opt == 'h')
            return ctl_reschedule_usage(stdout), -1;
        if (opt == 'j' || opt == 'k') {
            if (opt == 'j')
                *json = 1;
            else
                w->key = optarg;
            continue;
        }
        if (opt == 'a' && ctl_parse_time_arg("reschedule ", "--at", optarg, due) != 0)
            return EXIT_USAGE;
        else if (opt == 'd' && units_parse_duration_ms(optarg, &v) == 0)
            *due = (uint64_t)now + v;
        else if (opt == 'd')
            return ctl_usage_error("reschedule ", "invalid duration '%s' (e.g. 250ms, 5s, 2m)",
                                   optarg);
        else if (opt != 'a')
            return ctl_usage_error("reschedule ", NULL);
        given++;
    }
    if (given != 1)
        return ctl_usage_error("reschedule ", "give exactly one of --at and --delay");
    return take_which(argc, argv, "reschedule ", w);
}

int ctl_cmd_reschedule(const char *sock, int argc, char **argv)
{
    (void)sock;
    struct admin_which w = {0};
    uint64_t due = 0;
    int json = 0;
    int rc = parse_reschedule(argc, argv, &w, &due, &json);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    struct admin *a = open_admin();
    if (!a)
        return EXIT_FAIL;
    char err[512], id[LAYOUT_ID_MAX + 1];
    rc = admin_reschedule(a, &w, due, id, sizeof id, err, sizeof err);
    admin_close(a);
    if (rc == 0 && json)
        print_result(w.found, "rescheduled", id);
    else if (rc == 0)
        puts(id);
    return ctl_admin_exit(rc, err);
}

/* ---- pause, resume ---- */

void ctl_pause_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] pause QUEUE [--reason TEXT] [--json]\n"
          "       deferctl [-c CONFIG] resume QUEUE [--json]\n"
          "Pause or resume deliveries of QUEUE on every daemon, durably (a flag in ZooKeeper\n"
          "that each daemon watches). A paused queue still accepts puts; jobs consumers hold\n"
          "can still be acked. Pausing a paused queue (or resuming a running one) is fine.\n\n"
          "  -r, --reason TEXT  why, shown by list and stats\n"
          "  -j, --json         print {\"queue\", \"paused\", \"changed\"}\n", f);
}

static void print_pause(const char *queue, int resume, int changed, int json)
{
    if (!json) {
        printf("queue %s %s%s\n", queue, changed ? "" : "was already ",
               resume ? (changed ? "resumed" : "running") : "paused");
        return;
    }
    struct jsonw w;
    jsonw_init(&w, stdout);
    jsonw_obj_begin(&w, NULL);
    jsonw_str(&w, "queue", queue);
    jsonw_bool(&w, "paused", !resume);
    jsonw_bool(&w, "changed", changed);
    jsonw_obj_end(&w);
    jsonw_finish(&w);
}

/* pause QUEUE [--reason TEXT] and resume QUEUE. */
static int pause_or_resume(int resume, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"reason", required_argument, NULL, 'r'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    const char *reason = NULL, *cmd = resume ? "resume " : "pause ";
    int opt, json = 0;
    while ((opt = getopt_long(argc, argv, resume ? "jh" : "r:jh", longopts, NULL)) != -1) {
        if (opt == 'h')
            return ctl_pause_usage(stdout), EXIT_OK;
        if (opt == 'j') {
            json = 1;
            continue;
        }
        if (opt != 'r' || resume)
            return ctl_usage_error(cmd, NULL);
        reason = optarg;
    }
    if (argc - optind != 1)
        return ctl_usage_error(cmd, "expected one QUEUE");
    const char *queue = argv[optind];
    if (ctl_check_queue_name(cmd, queue) != 0)
        return EXIT_USAGE;
    struct admin *a = open_admin();
    if (!a)
        return EXIT_FAIL;
    char err[512];
    int changed = 0;
    int rc = resume ? admin_resume(a, queue, &changed, err, sizeof err)
                    : admin_pause(a, queue, reason, &changed, err, sizeof err);
    admin_close(a);
    if (rc == 0)
        print_pause(queue, resume, changed, json);
    return ctl_admin_exit(rc, err);
}

int ctl_cmd_pause(const char *sock, int argc, char **argv)
{
    (void)sock;
    return pause_or_resume(0, argc, argv);
}

int ctl_cmd_resume(const char *sock, int argc, char **argv)
{
    (void)sock;
    return pause_or_resume(1, argc, argv);
}
