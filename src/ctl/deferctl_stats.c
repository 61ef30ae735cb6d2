#include "deferctl_stats.h"
#include "jsonw.h"
#include "kvline.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
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
    fputs("Usage: deferctl [-c CONFIG] stats [QUEUE] [--json]\n"
          "Print the daemon's status: ZooKeeper connection state, time in it, transitions,\n"
          "session, jobs known, batching counters (txn.*: jobs/ZooKeeper multi calls that\n"
          "carried them). With QUEUE: that queue's counters (put, delivered, acked, nacked,\n"
          "expired, dead-lettered, refused), its jobs and consumers, delivery lateness\n"
          "percentiles, rates over the last minute, its depth across all daemons as the\n"
          "daemon last read it from ZooKeeper (depth_*: jobs overdue, due within a minute,\n"
          "in the rest of the hour, dead letters, the oldest overdue job's age), and its\n"
          "dead letters counted in ZooKeeper now (which needs CONFIG). A paused queue's\n"
          "paused_info says who paused it, when and why (read from ZooKeeper too).\n\n"
          "  -j, --json   one JSON object instead of a table\n"
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

/* -1: go on; else an exit status. */
static int parse(int argc, char **argv, int *json, const char **queue)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
        if (opt == 'j') {
            *json = 1;
        } else if (opt == 'h') {
            deferctl_stats_usage(stdout);
            return EXIT_OK;
        } else {
            return ctl_usage_error("stats ", NULL);
        }
    }
    if (argc - optind > 1)
        return ctl_usage_error("stats ", "unexpected argument '%s'", argv[optind + 1]);
    *queue = optind < argc ? argv[optind] : NULL;
    return -1;
}

int deferctl_stats(const char *sock, int argc, char **argv)
{
    int json = 0;
    const char *queue = NULL;
    int rc = parse(argc, argv, &json, &queue);
    if (rc >= 0)
        return rc;
    char err[256], text[4096];
    deferd_client *c = deferd_connect(sock, err, sizeof err);
    if (!c) {
        ctl_errmsg("%s", err);
        return EXIT_FAIL;
    }
    rc = deferd_stats_queue(c, queue, text, sizeof text);
    if (rc != DEFERD_OK) {
        rc = ctl_lib_fail(c, "stats", rc);
        deferd_close(c);
        return rc;
    }
    deferd_close(c);
    struct kv f[FIELDS_MAX];
    size_t n = kvline_split(text, f, FIELDS_MAX);
    struct zkpart *zk = calloc(1, sizeof *zk);
    if (!zk) {
        ctl_errmsg("out of memory");
        return EXIT_FAIL;
    }
    read_zk(f, n, queue, zk);
    if (json)
        print_json(stdout, f, n, queue, zk);
    else
        print_table(stdout, f, n, queue, zk);
    admin_close(zk->a);
    free(zk);
    return EXIT_OK;
}
