#include "deferctl_stats.h"
#include "jsonw.h"

#include <getopt.h>
#include <string.h>

#include "admin.h"
#include "deferd/client.h"

#define FIELDS_MAX 128

struct field {
    const char *key, *value;
};

/* Dead letters counted in ZooKeeper, or why they could not be. */
struct dead {
    int known;
    long long count;
    char why[512];
};

void deferctl_stats_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] stats [QUEUE] [--json]\n"
          "Print the daemon's status: ZooKeeper connection state, time in it, transitions,\n"
          "session, jobs known, batching counters. With QUEUE: that queue's counters (put,\n"
          "delivered, acked, nacked, expired, dead-lettered, refused), its jobs and consumers,\n"
          "delivery lateness percentiles, rates over the last minute, and its dead letters\n"
          "counted in ZooKeeper (which needs CONFIG).\n\n"
          "  -j, --json   one JSON object instead of a table\n"
          "  -h, --help   show this help\n", f);
}

/* Splits "k=v k=v ..." in place. */
static size_t split_fields(char *text, struct field *f, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(text, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(t, '=');
        if (eq)
            *eq = '\0';
        f[n++] = (struct field){t, eq ? eq + 1 : ""};
    }
    return n;
}

/* A JSON number as the daemon writes them: -?(0|[1-9][0-9]*)(.[0-9]+)? */
static int json_number(const char *s)
{
    s += *s == '-';
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        s += strspn(s, "0123456789");
    else
        return 0;
    if (*s == '.') {
        size_t d = strspn(s + 1, "0123456789");
        if (d == 0)
            return 0;
        s += 1 + d;
    }
    return *s == '\0';
}

static void print_json(FILE *out, const struct field *f, size_t n, const struct dead *dead)
{
    struct jsonw w;
    jsonw_init(&w, out);
    jsonw_obj_begin(&w, NULL);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(f[i].value, "-") == 0)
            jsonw_null(&w, f[i].key); /* no samples yet */
        else if (json_number(f[i].value))
            jsonw_raw(&w, f[i].key, f[i].value);
        else
            jsonw_str(&w, f[i].key, f[i].value);
    }
    if (dead && dead->known) {
        jsonw_int(&w, "dead_letters", dead->count);
    } else if (dead) {
        jsonw_null(&w, "dead_letters");
        jsonw_str(&w, "dead_letters_error", dead->why);
    }
    jsonw_obj_end(&w);
    jsonw_finish(&w);
}

static void print_table(FILE *out, const struct field *f, size_t n, const struct dead *dead)
{
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%-22s %s\n", f[i].key, f[i].value);
    if (dead && dead->known)
        fprintf(out, "%-22s %lld\n", "dead_letters", dead->count);
    else if (dead)
        fprintf(out, "%-22s unknown: %s\n", "dead_letters", dead->why);
}

static void count_dead(const char *config, const char *queue, struct dead *dead)
{
    struct admin *a;
    char err[400];
    if (admin_open(config, &a, err, sizeof err) != 0) {
        snprintf(dead->why, sizeof dead->why, "%s (give deferd.ini with -c)", err);
        return;
    }
    if (admin_dead_count(a, queue, &dead->count, err, sizeof err) == 0)
        dead->known = 1;
    else
        snprintf(dead->why, sizeof dead->why, "%s", err);
    admin_close(a);
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
            return 0;
        } else {
            fputs("Try 'deferctl stats --help'.\n", stderr);
            return 2;
        }
    }
    if (argc - optind > 1) {
        fprintf(stderr, "deferctl: stats: unexpected argument '%s'\n", argv[optind + 1]);
        return 2;
    }
    *queue = optind < argc ? argv[optind] : NULL;
    return -1;
}

int deferctl_stats(const char *sock, const char *config, int argc, char **argv)
{
    int json = 0;
    const char *queue = NULL;
    int rc = parse(argc, argv, &json, &queue);
    if (rc >= 0)
        return rc;
    char err[256], text[4096];
    deferd_client *c = deferd_connect(sock, err, sizeof err);
    if (!c) {
        fprintf(stderr, "deferctl: %s\n", err);
        return 1;
    }
    rc = deferd_stats_queue(c, queue, text, sizeof text);
    if (rc != DEFERD_OK) {
        fprintf(stderr, "deferctl: stats: %s\n", deferd_last_error(c));
        deferd_close(c);
        return rc == DEFERD_EARG ? 2 : 1;
    }
    deferd_close(c);
    struct field f[FIELDS_MAX];
    size_t n = split_fields(text, f, FIELDS_MAX);
    struct dead dead = {0};
    if (queue)
        count_dead(config, queue, &dead);
    if (json)
        print_json(stdout, f, n, queue ? &dead : NULL);
    else
        print_table(stdout, f, n, queue ? &dead : NULL);
    return 0;
}
