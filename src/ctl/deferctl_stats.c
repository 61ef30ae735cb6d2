#include "deferctl_stats.h"
#include "jsonw.h"
#include "kvline.h"
#include "units.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "deferctl_common.h"
#include "deferd/client.h"

#define FIELDS_MAX 128
#define INFO_MAX 512

/* What stats reads from ZooKeeper besides the daemon's line: the queue's dead letters, and
 * why a paused queue was paused (the flag's data, admin_pause.c). */
struct zkpart {
    struct admin *a;            /* NULL: why says why not */
    char why[INFO_MAX - 64];
    int dead_known;
    long long dead;
    char dead_why[INFO_MAX];
    char info[FIELDS_MAX][INFO_MAX]; /* paused_info values, one per pause flag */
    size_t ninfo;
};

void deferctl_stats_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] stats [QUEUE] [--all] [--json]\n"
          "Without QUEUE: the daemon's ZooKeeper state, then one line a queue of CONFIG with\n"
          "what a person asks first: pending (every job), due (due by now), in flight (held\n"
          "by this daemon's consumers), dead (dead letters), and the lateness of this\n"
          "daemon's deliveries (p50/p99 ms); pending, due and dead count every daemon's jobs\n"
          "as this daemon last counted them in ZooKeeper. --all adds the daemon's internals:\n"
          "its session, jobs it mirrors, batching counters (txn.*: jobs/ZooKeeper multi calls\n"
          "that carried them), packs, clock.\n"
          "With QUEUE: that queue's counters (put, delivered, acked, nacked, expired,\n"
          "dead-lettered, refused), its jobs and consumers, delivery lateness percentiles,\n"
          "rates over the last minute, its depth across all daemons as the daemon last read\n"
          "it from ZooKeeper (depth_*: jobs overdue, due within a minute, in the rest of the\n"
          "hour, dead letters, the oldest overdue job's age), and its dead letters counted in\n"
          "ZooKeeper now (which needs CONFIG). A paused queue's paused_info says who paused\n"
          "it, when and why (read from ZooKeeper too).\n\n"
          "  -a, --all    without QUEUE: every field of the daemon's STATS line as well\n"
          "  -j, --json   one JSON object of every field instead of a table\n"
          "  -h, --help   show this help\n", f);
}

/* "paused=1" of STATS QUEUE or "paused.<queue>=1" of STATS: the queue, else NULL. */
static const char *pause_flag(const struct kv *f, const char *queue)
{
    if (strcmp(f->value, "1") != 0)
        return NULL;
    if (queue && strcmp(f->key, "paused") == 0)
        return queue;
    return strncmp(f->key, "paused.", 7) == 0 ? f->key + 7 : NULL;
}

static void print_json(FILE *out, const struct kv *f, size_t n, const char *queue,
                       const struct zkpart *zk)
{
    struct jsonw w;
    size_t info = 0;
    char key[160];
    jsonw_init(&w, out);
    jsonw_obj_begin(&w, NULL);
    for (size_t i = 0; i < n; i++) {
        kvline_json(&w, &f[i]);
        const char *paused = pause_flag(&f[i], queue);
        if (paused && info < zk->ninfo) {
            snprintf(key, sizeof key, queue ? "paused_info" : "paused_info.%s", paused);
            jsonw_str(&w, key, zk->info[info++]);
        }
    }
    if (queue && zk->dead_known) {
        jsonw_int(&w, "dead_letters", zk->dead);
    } else if (queue) {
        jsonw_null(&w, "dead_letters");
        jsonw_str(&w, "dead_letters_error", zk->dead_why);
    }
    jsonw_obj_end(&w);
    jsonw_finish(&w);
}

static void print_table(FILE *out, const struct kv *f, size_t n, const char *queue,
                        const struct zkpart *zk)
{
    size_t info = 0;
    char key[160];
    unsigned long long items, multis;
    for (size_t i = 0; i < n; i++) {
        if (kvline_txn_pair(&f[i], &items, &multis))
            fprintf(out, "%-22s %s (items/multis)\n", f[i].key, f[i].value); /* --help */
        else
            fprintf(out, "%-22s %s\n", f[i].key, f[i].value);
        const char *paused = pause_flag(&f[i], queue);
        if (paused && info < zk->ninfo) {
            snprintf(key, sizeof key, queue ? "paused_info" : "paused_info.%s", paused);
            fprintf(out, "%-22s %s\n", key, zk->info[info++]);
        }
    }
    if (queue && zk->dead_known)
        fprintf(out, "%-22s %lld\n", "dead_letters", zk->dead);
    else if (queue)
        fprintf(out, "%-22s unknown: %s\n", "dead_letters", zk->dead_why);
}

/* Reads what the fields need from ZooKeeper: one session for all of it. */
static void read_zk(const struct kv *f, size_t n, const char *queue, struct zkpart *zk)
{
    char err[INFO_MAX - 112];
    int paused = 0;
    for (size_t i = 0; i < n; i++)
        paused += pause_flag(&f[i], queue) != NULL;
    if (!queue && !paused)
        return;
    if (ctl_admin_open(&zk->a, err, sizeof err) != 0)
        snprintf(zk->why, sizeof zk->why, "%s (give deferd.ini with -c)", err);
    for (size_t i = 0; i < n && zk->ninfo < FIELDS_MAX; i++) {
        const char *q = pause_flag(&f[i], queue);
        char *info = zk->info[zk->ninfo];
        int on = 0;
        if (!q)
            continue;
        zk->ninfo++;
        if (!zk->a)
            snprintf(info, INFO_MAX, "unknown: %s", zk->why);
        else if (admin_paused(zk->a, q, &on, info, INFO_MAX, err, sizeof err) != 0)
            snprintf(info, INFO_MAX, "unknown: %s", err);
        else if (!on)
            snprintf(info, INFO_MAX, "resumed since"); /* the flag went meanwhile */
    }
    if (queue && !zk->a)
        snprintf(zk->dead_why, sizeof zk->dead_why, "%s", zk->why);
    else if (queue && admin_dead_count(zk->a, queue, &zk->dead, err, sizeof err) == 0)
        zk->dead_known = 1;
    else if (queue)
        snprintf(zk->dead_why, sizeof zk->dead_why, "%s", err);
}

struct stats_args {
    int json, all;
    const char *queue;
};

/* -1: go on; else an exit status. */
static int parse(int argc, char **argv, struct stats_args *a)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"all", no_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "jah", longopts, NULL)) != -1) {
        if (opt == 'j') {
            a->json = 1;
        } else if (opt == 'a') {
            a->all = 1;
        } else if (opt == 'h') {
            deferctl_stats_usage(stdout);
            return EXIT_OK;
        } else {
            return ctl_usage_error("stats ", NULL);
        }
    }
    if (argc - optind > 1)
        return ctl_usage_error("stats ", "unexpected argument '%s'", argv[optind + 1]);
    a->queue = optind < argc ? argv[optind] : NULL;
    return -1;
}

/* ---- without QUEUE: the summary a person reads first ---- */

/* Its columns: a STATS QUEUE field each (docs/protocol.md), as the dashboard shows them. */
static const struct {
    const char *field, *title;
} summary_cols[] = {
    {"census_total", "PENDING"}, {"depth_overdue", "DUE"}, {"inflight", "IN-FLIGHT"},
    {"depth_dead", "DEAD"}, {"lateness_p50_ms", "LATE-P50-MS"},
    {"lateness_p99_ms", "LATE-P99-MS"},
};
#define NSUMMARY (sizeof summary_cols / sizeof summary_cols[0])

static void summary_daemon(const struct kv *f, size_t n)
{
    const char *state = kvline_get(f, n, "zk_state"), *ms = kvline_get(f, n, "zk_state_ms");
    const char *clock = kvline_get(f, n, "clock_state");
    char span[48] = "?";
    if (ms && kvline_number(ms))
        units_format_span(atoll(ms), span, sizeof span);
    printf("deferd: ZooKeeper %s for %s, clock %s%s\n", state ? state : "?", span,
           clock ? clock : "?", kvline_get(f, n, "draining") ? ", draining for shutdown" : "");
}

/* QUEUE's row; 0, or an exit status when the daemon failed (not for a queue it lacks). */
static int summary_row(deferd_client *c, const char *queue)
{
    char text[4096];
    struct kv f[FIELDS_MAX];
    int rc = deferd_stats_queue(c, queue, text, sizeof text);
    printf("%-24s", queue);
    if (rc == DEFERD_ESERVER && !strcmp(deferd_last_error_code(c), "UNKNOWN_QUEUE"))
        return printf(" not configured on this daemon\n"), 0;
    if (rc != DEFERD_OK)
        return putchar('\n'), ctl_lib_fail(c, "stats", rc);
    size_t n = kvline_split(text, f, FIELDS_MAX);
    for (size_t i = 0; i < NSUMMARY; i++) {
        const char *v = kvline_get(f, n, summary_cols[i].field);
        printf(" %11s", v ? v : "-");
    }
    const char *paused = kvline_get(f, n, "paused");
    printf("%s\n", paused && !strcmp(paused, "1") ? "  paused" : "");
    return 0;
}

/* One row a queue of deferctl's config: the config names them, the daemon counts them. */
static int summary_queues(deferd_client *c, const struct config *cfg)
{
    printf("%-24s", "QUEUE");
    for (size_t i = 0; i < NSUMMARY; i++)
        printf(" %11s", summary_cols[i].title);
    putchar('\n');
    int rc = 0;
    for (size_t i = 0; i < cfg->nqueues && rc == 0; i++)
        rc = summary_row(c, cfg->queues[i]->name);
    if (rc == 0)
        puts("pending, due, dead: every daemon's jobs as this daemon last counted them in "
             "ZooKeeper (- until it has);\nin-flight, lateness: this daemon's deliveries. "
             "More: deferctl stats QUEUE, deferctl stats --all.");
    return rc;
}

static void summary_paused(const struct kv *f, size_t n, const struct zkpart *zk)
{
    size_t info = 0;
    for (size_t i = 0; i < n && info < zk->ninfo; i++) {
        const char *q = pause_flag(&f[i], NULL);
        if (q)
            printf("queue %s: %s\n", q, zk->info[info++]);
    }
}

static int print_summary(deferd_client *c, const struct kv *f, size_t n, const struct zkpart *zk)
{
    struct config cfg;
    char err[512];
    int rc = 0;
    summary_daemon(f, n);
    if (config_load(deferctl_config_path, NULL, 0, &cfg, err, sizeof err) == 0) {
        rc = summary_queues(c, &cfg);
        config_free(&cfg);
    } else {
        printf("queues: unknown: %s (give the daemon's deferd.ini with -c)\n", err);
    }
    summary_paused(f, n, zk);
    return rc;
}

/* STATS or STATS QUEUE into TEXT over C; 0, or an exit status. */
static int stats_line(deferd_client *c, const char *queue, char *text, size_t len)
{
    int rc = deferd_stats_queue(c, queue, text, len);
    return rc == DEFERD_OK ? 0 : ctl_lib_fail(c, "stats", rc);
}

static int print_stats(deferd_client *c, const struct stats_args *a, char *text)
{
    struct kv f[FIELDS_MAX];
    size_t n = kvline_split(text, f, FIELDS_MAX);
    struct zkpart *zk = calloc(1, sizeof *zk);
    if (!zk) {
        ctl_errmsg("out of memory");
        return EXIT_FAIL;
    }
    read_zk(f, n, a->queue, zk);
    int rc = 0;
    if (a->json)
        print_json(stdout, f, n, a->queue, zk);
    else if (!a->queue && (rc = print_summary(c, f, n, zk)) == 0 && a->all)
        putchar('\n');
    if (!a->json && rc == 0 && (a->queue || a->all))
        print_table(stdout, f, n, a->queue, zk);
    admin_close(zk->a);
    free(zk);
    return rc;
}

int deferctl_stats(const char *sock, int argc, char **argv)
{
    struct stats_args a = {0};
    int rc = parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    char text[4096];
    deferd_client *c = ctl_connect(sock);
    if (!c)
        return EXIT_FAIL;
    rc = stats_line(c, a.queue, text, sizeof text);
    if (rc == 0)
        rc = print_stats(c, &a, text);
    deferd_close(c);
    return rc;
}
