/* deferctl: command line client for deferd (put, ping, dead, stats; work is in
 * deferctl_work.c, the ZooKeeper commands in deferctl_admin.c). See docs/deferctl.md. */

#include "deferd/client.h"
#include "admin.h"
#include "config.h"
#include "deferctl.h"
#include "deferctl_stats.h"
#include "jsonw.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sys/un.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- usage ---- */

static void main_usage(FILE *f)
{
    fputs("Usage: deferctl [-s PATH] [-c CONFIG] [--timeout DUR] COMMAND [ARGS...]\n"
          "Talk to the deferd job scheduler.\n\n"
          "Commands:\n"
          "  put    schedule a job (or a file of jobs, all or none)\n"
          "  work   run a command for each job of some queues\n"
          "  ping   check that deferd answers\n"
          "  stats  each queue's pending, due, in-flight and dead jobs and lateness (--all:\n"
          "         the daemon's internals too; stats QUEUE: one queue's counters)\n"
          "  help   show help for a command (deferctl help COMMAND)\n"
          "Operator commands (read and write ZooKeeper, configured by -c):\n"
          "  list        page through a queue's pending jobs in due order\n"
          "  show        show one job (pending or dead) and its payload\n"
          "  cancel      delete a pending job (by id or by key)\n"
          "  reschedule  move a pending job to a new due time (by id or by key)\n"
          "  pause       stop deliveries of a queue on every daemon (puts still work)\n"
          "  resume      let a paused queue deliver again\n"
          "  dead        list, show, kick or delete dead-lettered jobs (one, or --all)\n"
          "  purge       cancel every pending job of a queue due by a time (--dry-run, --yes)\n"
          "  layout      show the root's ZooKeeper layout version, or --upgrade it to packs\n"
          "  schedules   list the config's schedules, their next occurrences and last put\n"
          "  schedule run NAME  put one extra occurrence of a schedule now\n\n"
          "Options:\n"
          "  -s, --socket PATH  deferd socket (default: $DEFERD_SOCKET, else "
          DEFERD_DEFAULT_SOCKET ")\n"
          "  -c, --config PATH  deferd.ini, for commands that read ZooKeeper (default:\n"
          "                     $DEFERD_CONFIG, else " DEFERCTL_DEFAULT_CONFIG ")\n"
          "  --timeout DUR      how long commands that read ZooKeeper wait for a session\n"
          "                     before they give up (default 10s)\n"
          "  -h, --help         show this help\n"
          "  -V, --version      print the version and exit\n\n"
          "Exit status: 0 ok, 1 error, 2 usage error, 3 no such job, 4 job in flight.\n", f);
}

static void put_usage(FILE *f)
{
    fputs("Usage: deferctl put --queue Q [--delay DUR | --at TIME] [--priority N]\n"
          "                    [--ttr DUR] [--key KEY] [--group G] [--json]\n"
          "                    [--file PATH | PAYLOAD | -]\n"
          "       deferctl put --batch FILE [--json]\n"
          "       deferctl put --flow FILE [--on success|complete] [--json]\n"
          "Schedule a job and print its id. The payload is PAYLOAD, the contents of --file,\n"
          "or standard input (PAYLOAD '-', or neither given).\n\n"
          "  -q, --queue Q        queue to put the job in (required)\n"
          "  -d, --delay DUR      due after DUR: 250ms, 5s, 2m, 1h, 1d\n"
          "  -a, --at TIME        due at this time\n"
          "                       (TIME: " TIME_FORMS ")\n"
          "  -p, --priority N     0..4294967295, lower is more urgent (default: the queue's)\n"
          "  -t, --ttr DUR        time to run: lease of each delivery, 1s..7d\n"
          "                       (default: the queue's)\n"
          "  -f, --file PATH      read the payload from PATH ('-': standard input)\n"
          "  -k, --key KEY        idempotency key: while a job with KEY exists in the queue,\n"
          "                       nothing is created and its id is printed (a note on stderr)\n"
          "  -g, --group G        the job's group: a queue's groups take turns at delivery\n"
          "                       (1-32 of A-Z a-z 0-9 _ . : @ -; docs/limits.md)\n"
          "  -b, --batch FILE     put every job of FILE ('-': standard input), all or none; one\n"
          "                       a line: queue=Q [delay=DUR] [at=TIME] [prio=N] [ttr=DUR]\n"
          "                       [key=K] [group=G] payload=REST OF LINE (or payload64=BASE64); blank\n"
          "                       lines and lines starting with # are skipped. Prints one id a\n"
          "                       line, \"ID duplicate\" for a key that was taken\n"
          "      --flow FILE      a flow (docs/flows.md): FILE's first job (lines as for --batch,\n"
          "                       no key=) is the parent, the others its children, all or\n"
          "                       none; the parent waits until every child is acked. Prints\n"
          "                       the parent's id, then the children's, one a line\n"
          "      --on complete    the parent waits until every child is acked or dead-lettered\n"
          "                       (default success: a dead child sends it to the dead letters)\n"
          "  -j, --json           print {\"id\", \"duplicate\"} ({\"jobs\": [...]} for --batch)\n"
          "  -h, --help           show this help\n", f);
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
    const char *flow;             /* --flow FILE */
    const char *on;               /* --on success|complete */
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
    case 'g': a->opts.group = arg; return 0;
    case 'b': a->batch = arg; return 0;
    case 'F': a->flow = arg; return 0;
    case 'O':
        if (strcmp(arg, "success") != 0 && strcmp(arg, "complete") != 0)
            return ctl_usage_error("put ", "--on is success or complete, not '%s'", arg);
        a->on = arg;
        return 0;
    case 'j': a->json = 1; return 0;
    case 'd':
        if (units_parse_duration_ms(arg, &a->opts.delay_ms) != 0)
            return ctl_usage_error("put ", "invalid duration '%s' (e.g. 250ms, 5s, 2m)", arg);
        a->opts.has_delay = 1;
        return 0;
    case 'a':
        if (ctl_parse_time_arg("put ", "--at", arg, &a->opts.at_ms) != 0)
            return EXIT_USAGE;
        a->opts.has_at = 1;
        return 0;
    case 'p':
        if (units_parse_u64(arg, UINT32_MAX, &v) != 0)
            return ctl_usage_error("put ", "invalid priority '%s' (0..4294967295)", arg);
        a->opts.priority = (uint32_t)v;
        a->opts.has_priority = 1;
        return 0;
    case 't':
        if (units_parse_duration_ms(arg, &a->opts.ttr_ms) != 0 ||
            a->opts.ttr_ms < DEFERD_TTR_MIN_MS || a->opts.ttr_ms > DEFERD_TTR_MAX_MS)
            return ctl_usage_error("put ", "invalid --ttr '%s' (1s..7d, e.g. 30s, 5m, 2h)", arg);
        a->opts.has_ttr = 1;
        return 0;
    default:
        return ctl_usage_error("put ", NULL);
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
        { "group", required_argument, NULL, 'g' }, { "json", no_argument, NULL, 'j' },
        { "flow", required_argument, NULL, 'F' }, { "on", required_argument, NULL, 'O' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    int opt, rc;
    while ((opt = getopt_long(argc, argv, "q:d:a:p:t:f:k:g:b:jh", longopts, NULL)) != -1) {
        if (opt == 'h') {
            put_usage(stdout);
            return -1;
        }
        if ((rc = parse_put_opt(opt, optarg, a)) != 0)
            return rc;
    }
    const deferd_put_opts *o = &a->opts;
    if (a->on && !a->flow)
        return ctl_usage_error("put ", "--on goes with --flow");
    if (a->flow && a->batch)
        return ctl_usage_error("put ", "give --batch or --flow, not both");
    if (a->flow && (a->queue || a->file || optind < argc || o->has_delay || o->has_at ||
                    o->has_priority || o->has_ttr || o->key || o->group))
        return ctl_usage_error("put ", "--flow takes the jobs and their options from its file "
                                       "only");
    if (a->flow)
        return 0;
    if (a->batch && (a->queue || a->file || optind < argc || o->has_delay || o->has_at ||
                     o->has_priority || o->has_ttr || o->key))
        return ctl_usage_error("put ", "--batch takes the jobs and their options from its file "
                                       "only");
    if (a->batch)
        return 0;
    if (a->queue == NULL)
        return ctl_usage_error("put ", "--queue is required");
    if (a->opts.has_delay && a->opts.has_at)
        return ctl_usage_error("put ", "--delay and --at are mutually exclusive");
    if (argc - optind > 1)
        return ctl_usage_error("put ", "only one PAYLOAD argument is allowed (quote it)");
    a->payload = optind < argc ? argv[optind] : NULL;
    if (a->payload && a->file)
        return ctl_usage_error("put ", "give either PAYLOAD or --file, not both");
    return 0;
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
    if (ctl_read_path(path, owned, len) != 0) {
        ctl_errmsg("cannot read %s: %s", strcmp(path, "-") ? path : "standard input",
                   strerror(errno));
        return -1;
    }
    *data = *owned;
    return 0;
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
        ctl_errmsg("key %s is taken in queue %s: nothing was created; %s is the job that holds "
                   "it",
                   it->opts.key, it->queue, it->id);
}

static int cmd_put(const char *sock, int argc, char **argv)
{
    struct put_args a = { 0 };
    int rc = parse_put(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    if (a.batch)
        return ctl_put_batch(sock, a.batch, a.json);
    if (a.flow)
        return ctl_put_flow(sock, a.flow, a.on, a.json);
    char *data, *owned;
    size_t len;
    if (load_payload(&a, &data, &len, &owned) != 0)
        return EXIT_FAIL;
    deferd_client *c = ctl_connect(sock);
    rc = EXIT_FAIL;
    if (c) {
        deferd_put_item it = { .queue = a.queue, .payload = data, .len = len, .opts = a.opts };
        int err = ctl_put_one(c, &it);
        rc = err == DEFERD_OK ? EXIT_OK : ctl_lib_fail(c, "put", err);
        if (err == DEFERD_OK)
            put_done(&it, a.json);
        deferd_close(c);
    }
    free(owned);
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
            return ctl_usage_error("ping ", NULL);
        ping_usage(stdout);
        return EXIT_OK;
    }
    if (optind < argc)
        return ctl_usage_error("ping ", "unexpected argument '%s'", argv[optind]);
    deferd_client *c = ctl_connect(sock);
    if (c == NULL)
        return EXIT_FAIL;
    int rc = deferd_ping(c);
    rc = rc == DEFERD_OK ? (puts("PONG"), EXIT_OK) : ctl_lib_fail(c, "ping", rc);
    deferd_close(c);
    return rc;
}
/* ---- dead letters ---- */

static void dead_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] dead list QUEUE\n"
          "       deferctl [-c CONFIG] dead show|kick|delete JOB_ID\n"
          "       deferctl [-c CONFIG] dead kick|delete --all QUEUE [--dry-run | --yes]\n"
          "Jobs whose attempts reached their queue's max_attempts wait in its dead letters.\n\n"
          "  list QUEUE    a header, then one line per dead job: id, attempts, priority, due\n"
          "                time, bytes\n"
          "  show ID       its metadata, a blank line, then its payload\n"
          "  kick ID       put it back in the queue, due now, attempts from zero; prints the\n"
          "                new job id (a keyed job takes its key back, or goes without it if\n"
          "                another job took the key meanwhile)\n"
          "  delete ID     remove it for good\n"
          "  kick|delete --all QUEUE\n"
          "                every dead letter of QUEUE, one at a time; nothing without --yes\n"
          "                (deferctl purge --help says more)\n"
          "Exit status 3 when there is no such dead job.\n", f);
}

static int is_dead_sub(const char *s)
{
    return !strcmp(s, "list") || !strcmp(s, "show") || !strcmp(s, "kick") ||
           !strcmp(s, "delete");
}

/* "dead SUB [--help] ARG": SUB's own arguments go through getopt, so --help anywhere
 * prints help and a bad option reads like every other command's. -1 after --help. */
static int parse_dead(int argc, char **argv, const char **sub, const char **arg)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    static char prog[32];
    if (argc < 2)
        return ctl_usage_error("dead ", "expected list, show, kick or delete");
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
        return dead_usage(stdout), -1;
    if (!is_dead_sub(argv[1]))
        return ctl_usage_error("dead ", "unknown dead command '%s' (list, show, kick or delete)",
                               argv[1]);
    *sub = argv[1];
    snprintf(prog, sizeof prog, "deferctl: dead %s", *sub);
    argv[1] = prog; /* getopt's messages name it */
    int opt;
    while ((opt = getopt_long(argc - 1, argv + 1, "h", longopts, NULL)) != -1) {
        if (opt != 'h')
            return ctl_usage_error("dead ", NULL);
        return dead_usage(stdout), -1;
    }
    if (argc - 1 - optind != 1)
        return ctl_usage_error("dead ", "dead %s takes one %s", *sub,
                               strcmp(*sub, "list") ? "JOB_ID" : "QUEUE");
    *arg = argv[1 + optind];
    return strcmp(*sub, "list") ? ctl_check_job_id("dead ", *arg)
                                : ctl_check_queue_name("dead ", *arg);
}

static int dead_run(struct admin *a, const char *sub, const char *arg, char *err,
                    size_t errlen)
{
    char id[DEFERD_ID_SIZE];
    int rc, unkeyed = 0;
    if (!strcmp(sub, "list"))
        return admin_dead_list(a, arg, stdout, err, errlen);
    if (!strcmp(sub, "show"))
        return admin_dead_show(a, arg, stdout, err, errlen);
    if (!strcmp(sub, "delete")) {
        if ((rc = admin_dead_delete(a, arg, err, errlen)) == 0)
            printf("deleted %s\n", arg); /* as cancel says what it did */
        return rc;
    }
    if ((rc = admin_dead_kick(a, arg, id, sizeof id, &unkeyed, err, errlen)) != 0)
        return rc;
    puts(id);
    if (unkeyed)
        ctl_errmsg("its key was taken by another job meanwhile: %s went back without its key", id);
    return 0;
}

static int cmd_dead(const char *sock, int argc, char **argv)
{
    (void)sock;
    const char *sub = NULL, *arg = NULL;
    for (int i = 2; argc > 1 && (!strcmp(argv[1], "kick") || !strcmp(argv[1], "delete")) &&
                    i < argc; i++)
        if (!strcmp(argv[i], "--all")) /* every dead letter of a queue: deferctl_bulk.c */
            return ctl_dead_all(argc - 1, argv + 1);
    int rc = parse_dead(argc, argv, &sub, &arg);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    char err[512];
    struct admin *a;
    if (ctl_admin_open(&a, err, sizeof err) != 0)
        return ctl_admin_exit(-1, err);
    rc = dead_run(a, sub, arg, err, sizeof err);
    admin_close(a);
    return ctl_admin_exit(rc, err);
}

/* ---- stats (deferctl_stats.c) ---- */

static int cmd_stats(const char *sock, int argc, char **argv)
{
    return deferctl_stats(sock, argc, argv);
}

/* ---- main ---- */

struct command {
    const char *name;
    int (*run)(const char *sock, int argc, char **argv);
    void (*usage)(FILE *f);
    const char *prog; /* argv[0] for getopt's messages: they start "deferctl: " too */
    int socket;       /* talks to a daemon over its socket: SOCKET_ONLY, or needs the config too */
};

enum { SOCKET_ONLY = 1, SOCKET_AND_CONFIG = 2 };

static const struct command commands[] = {
    { "put", cmd_put, put_usage, "deferctl: put", SOCKET_ONLY },
    { "work", ctl_cmd_work, ctl_work_usage, "deferctl: work", SOCKET_ONLY },
    { "ping", cmd_ping, ping_usage, "deferctl: ping", SOCKET_ONLY },
    { "dead", cmd_dead, dead_usage, "deferctl: dead", 0 },
    { "purge", ctl_cmd_purge, ctl_bulk_usage, "deferctl: purge", 0 },
    { "stats", cmd_stats, deferctl_stats_usage, "deferctl: stats", SOCKET_ONLY },
    { "list", ctl_cmd_list, ctl_list_usage, "deferctl: list", 0 },
    { "show", ctl_cmd_show, ctl_show_usage, "deferctl: show", 0 },
    { "cancel", ctl_cmd_cancel, ctl_cancel_usage, "deferctl: cancel", 0 },
    { "reschedule", ctl_cmd_reschedule, ctl_reschedule_usage, "deferctl: reschedule", 0 },
    { "pause", ctl_cmd_pause, ctl_pause_usage, "deferctl: pause", 0 },
    { "resume", ctl_cmd_resume, ctl_pause_usage, "deferctl: resume", 0 },
    { "layout", ctl_cmd_layout, ctl_layout_usage, "deferctl: layout", 0 },
    { "schedules", ctl_cmd_schedules, ctl_schedules_usage, "deferctl: schedules", 0 },
    { "schedule", ctl_cmd_schedule, ctl_schedules_usage, "deferctl: schedule",
      SOCKET_AND_CONFIG },
    { NULL, NULL, NULL, NULL, 0 },
};

static const struct command *find_command(const char *name)
{
    for (const struct command *cmd = commands; cmd->name; cmd++)
        if (strcmp(cmd->name, name) == 0)
            return cmd;
    return NULL;
}

static void help_usage(FILE *f)
{
    fputs("Usage: deferctl help [COMMAND]\n"
          "Show the list of commands, or COMMAND's help (the same as COMMAND --help).\n", f);
}

static int cmd_help(int argc, char **argv)
{
    if (argc > 2)
        return ctl_usage_error("help ", "expected at most one COMMAND");
    if (argc == 2 && (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
                      !strcmp(argv[1], "--help")))
        return help_usage(stdout), EXIT_OK;
    const struct command *cmd = argc > 1 ? find_command(argv[1]) : NULL;
    if (argc > 1 && cmd == NULL)
        return ctl_usage_error("", "unknown command '%s'", argv[1]);
    if (cmd)
        cmd->usage(stdout);
    else
        main_usage(stdout);
    return EXIT_OK;
}

static int parse_timeout(const char *arg)
{
    uint64_t ms;
    if (units_parse_duration_ms(arg, &ms) != 0 || ms == 0 || ms > 86400000)
        return ctl_usage_error("", "invalid --timeout '%s' (a duration: 500ms, 5s, 1m; at most 1d)",
                               arg);
    deferctl_timeout_ms = (int64_t)ms;
    return 0;
}

/* Returns the index of the command word, -1 after --help, or -2 on a usage error. */
static int config_given; /* -c CONFIG */

static int parse_global(int argc, char **argv, const char **sock)
{
    static const struct option longopts[] = {
        { "socket", required_argument, NULL, 's' }, { "help", no_argument, NULL, 'h' },
        { "config", required_argument, NULL, 'c' }, { "version", no_argument, NULL, 'V' },
        { "timeout", required_argument, NULL, 'T' }, { NULL, 0, NULL, 0 },
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "+s:c:hV", longopts, NULL)) != -1) {
        if (opt == 's') {
            *sock = optarg;
            deferctl_socket_from = "--socket";
        } else if (opt == 'c') {
            deferctl_config_path = optarg;
            config_given = 1;
        } else if (opt == 'T') {
            if (parse_timeout(optarg) != 0)
                return -3;
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

/* A config named (-c, $DEFERD_CONFIG) without a socket (-s, $DEFERD_SOCKET): the socket
 * commands talk to that config's daemon, at its [daemon] socket. A command that needs only
 * the socket (SOCKET_ONLY) takes the default one when the config does not exist, and says
 * so: a stale DEFERD_CONFIG must not stop a put. */
static int socket_of_config(const char **sock, int socket_only)
{
    static char path[sizeof ((struct sockaddr_un *)0)->sun_path];
    struct config cfg;
    char err[512];
    if (socket_only && access(deferctl_config_path, F_OK) != 0 && errno == ENOENT) {
        ctl_errmsg("config %s does not exist: using the default socket " DEFERD_DEFAULT_SOCKET,
                   deferctl_config_path);
        return 0;
    }
    if (config_load(deferctl_config_path, NULL, 0, &cfg, err, sizeof err) != 0) {
        ctl_errmsg("%s (give -s SOCKET to use another daemon)", err);
        return -1;
    }
    snprintf(path, sizeof path, "%s", cfg.socket_path);
    config_free(&cfg);
    *sock = path;
    deferctl_socket_from = deferctl_config_path;
    return 0;
}

int main(int argc, char **argv)
{
    const char *env = getenv("DEFERD_SOCKET");
    const char *sock = env && *env ? env : NULL;
    if (sock)
        deferctl_socket_from = "DEFERD_SOCKET";
    const char *cenv = getenv("DEFERD_CONFIG");
    const char *named_config = cenv && *cenv ? cenv : NULL;
    if (named_config)
        deferctl_config_path = named_config;
    argv[0] = (char *)"deferctl"; /* getopt's messages: "deferctl: ...", not the binary's path */
    int first = parse_global(argc, argv, &sock);
    if (first == -1)
        return EXIT_OK;
    if (first < -1)
        return first == -2 ? ctl_usage_error("", NULL) : EXIT_USAGE;
    if (first >= argc)
        return ctl_usage_error("", "missing command");
    if (strcmp(argv[first], "help") == 0)
        return cmd_help(argc - first, argv + first);
    const struct command *cmd = find_command(argv[first]);
    if (cmd == NULL)
        return ctl_usage_error("", "unknown command '%s'", argv[first]);
    if (cmd->socket && !sock && (named_config || config_given) &&
        socket_of_config(&sock, cmd->socket == SOCKET_ONLY) != 0)
        return EXIT_FAIL;
    if (!sock)
        sock = DEFERD_DEFAULT_SOCKET;
    argv[first] = (char *)cmd->prog;
    optind = 0; /* glibc: start a fresh scan of the subcommand's arguments */
    return cmd->run(sock, argc - first, argv + first);
}
