/* The bulk operator commands (docs/deferctl.md): dead kick --all QUEUE, dead delete --all
 * QUEUE and purge QUEUE --until TIME. Each first lists what it matches; only with --yes does
 * it act, one job at a time through the single-job path (admin_dead_kick, admin_dead_delete,
 * admin_cancel), so that a job that changed meanwhile (kicked, acked, taken by a consumer)
 * is counted and left alone, never half done. --dry-run lists and stops. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "deferctl.h"
#include "jsonw.h"
#include "layout.h"

enum action { BA_KICK, BA_DELETE, BA_PURGE };
static const char *const verbs[] = {"kick", "delete", "cancel"};
static const char *const done_words[] = {"kicked", "deleted", "cancelled"};

struct bulk_opts {
    enum action act;
    const char *cmd;            /* "dead kick --all", "dead delete --all", "purge" */
    const char *queue;
    int dry_run, yes, json;
    uint64_t from_ms, until_ms;
};

struct ids {
    char (*v)[LAYOUT_ID_MAX + 1];
    size_t n, cap;
    int oom;
};

struct tally {
    size_t done, gone, held, failed;
};

static int ids_add(const char *id, void *ctx)
{
    struct ids *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        void *grown = realloc(l->v, cap * sizeof *l->v);
        if (!grown)
            return (l->oom = 1);
        l->v = grown;
        l->cap = cap;
    }
    snprintf(l->v[l->n++], sizeof l->v[0], "%s", id);
    return 0;
}

static void ids_add_job(const struct admin_job *job, void *ctx) { ids_add(job->id, ctx); }

/* Every pending job of the queue due in [from, until], page by page. */
static int collect_pending(struct admin *a, const struct bulk_opts *o, struct ids *ids,
                           char *err, size_t errlen)
{
    struct admin_list_opts lo = {.from_ms = o->from_ms, .until_ms = o->until_ms, .limit = 1000};
    char after[LAYOUT_ID_MAX + 1] = "", next[LAYOUT_ID_MAX + 1];
    for (int more = 1; more;) {
        lo.after = after[0] ? after : NULL;
        if (admin_list(a, o->queue, &lo, ids_add_job, ids, &more, next, sizeof next, err,
                       errlen) != 0)
            return -1;
        memcpy(after, next, sizeof after);
    }
    return 0;
}

static int collect(struct admin *a, const struct bulk_opts *o, struct ids *ids, char *err,
                   size_t errlen)
{
    int rc = o->act == BA_PURGE ? collect_pending(a, o, ids, err, errlen)
                                : admin_dead_each(a, o->queue, NULL, ids_add, ids, err, errlen);
    if (rc == 0 && ids->oom)
        return snprintf(err, errlen, "out of memory listing the jobs"), -1;
    return rc;
}

static void act_one(struct admin *a, const struct bulk_opts *o, const char *id,
                    struct tally *t, struct ids *done)
{
    char err[512], new_id[LAYOUT_ID_MAX + 1];
    int unkeyed = 0, rc;
    struct admin_which w = {.id = id};
    if (o->act == BA_KICK)
        rc = admin_dead_kick(a, id, new_id, sizeof new_id, &unkeyed, err, sizeof err);
    else if (o->act == BA_DELETE)
        rc = admin_dead_delete(a, id, err, sizeof err);
    else
        rc = admin_cancel(a, &w, 0, err, sizeof err);
    if (rc == 0) {
        t->done++;
        ids_add(id, done);
        if (unkeyed)
            ctl_errmsg("%s: its key was taken by another job meanwhile: %s went back without "
                       "its key", id, new_id);
        if (!o->json && o->act == BA_KICK)
            printf("%s %s\n", id, new_id);
        else if (!o->json)
            printf("%s\n", id);
    } else if (rc == ADMIN_NOT_FOUND) {
        t->gone++; /* kicked, deleted, acked or cancelled by someone else meanwhile */
    } else if (rc == ADMIN_IN_FLIGHT) {
        t->held++; /* a consumer holds it: its ack or nack decides */
    } else {
        t->failed++;
        ctl_errmsg("%s: %s", id, err);
    }
}

static void report_json(const struct bulk_opts *o, const struct ids *jobs, size_t matched,
                        const struct tally *t)
{
    struct jsonw w;
    jsonw_init(&w, stdout);
    jsonw_obj_begin(&w, NULL);
    jsonw_str(&w, "queue", o->queue);
    jsonw_str(&w, "action", verbs[o->act]);
    jsonw_bool(&w, "dry_run", o->dry_run);
    jsonw_uint(&w, "matched", matched);
    jsonw_uint(&w, "done", t->done);
    jsonw_uint(&w, "gone", t->gone);
    jsonw_uint(&w, "held", t->held);
    jsonw_uint(&w, "failed", t->failed);
    jsonw_arr_begin(&w, "jobs");
    for (size_t i = 0; i < jobs->n; i++)
        jsonw_str(&w, NULL, jobs->v[i]);
    jsonw_arr_end(&w);
    jsonw_obj_end(&w);
    jsonw_finish(&w);
}

static const char *what_of(const struct bulk_opts *o)
{
    return o->act == BA_PURGE ? "pending job(s)" : "dead letter(s)";
}

/* The summary on stderr. Only a pending job can be held by a consumer: the dead letters'
 * summary leaves that count out. */
static void report_text(const struct bulk_opts *o, size_t matched, const struct tally *t)
{
    char held[64] = "";
    if (o->act == BA_PURGE)
        snprintf(held, sizeof held, ", %zu held by a consumer (left alone)", t->held);
    fprintf(stderr, "deferctl: %s %s: %zu of %zu %s %s, %zu gone meanwhile%s, %zu failed\n",
            o->cmd, o->queue, t->done, matched, what_of(o), done_words[o->act], t->gone, held,
            t->failed);
}

static int run(struct admin *a, const struct bulk_opts *o)
{
    char err[512];
    struct ids ids = {0}, done = {0};
    struct tally t = {0};
    if (collect(a, o, &ids, err, sizeof err) != 0) {
        free(ids.v);
        return ctl_admin_exit(-1, err);
    }
    const char *what = what_of(o);
    int rc = EXIT_OK;
    if (!o->dry_run && !o->yes) {
        rc = ctl_usage_error(o->act == BA_PURGE ? "purge " : "dead ", "%s %s would %s %zu %s: add --yes to do it, or --dry-run "
                             "to list them", o->cmd, o->queue, verbs[o->act], ids.n, what);
    } else if (o->dry_run) {
        for (size_t i = 0; i < ids.n && !o->json; i++)
            printf("%s\n", ids.v[i]);
        if (o->json)
            report_json(o, &ids, ids.n, &t);
        fprintf(stderr, "deferctl: %s %s --dry-run: %zu %s would be %s\n", o->cmd, o->queue,
                ids.n, what, done_words[o->act]);
    } else {
        for (size_t i = 0; i < ids.n; i++)
            act_one(a, o, ids.v[i], &t, &done);
        if (o->json)
            report_json(o, &done, ids.n, &t);
        report_text(o, ids.n, &t);
        rc = t.failed ? EXIT_FAIL : EXIT_OK;
    }
    free(ids.v);
    free(done.v);
    return rc;
}

static int open_and_run(const struct bulk_opts *o)
{
    char err[512];
    struct admin *a;
    if (ctl_admin_open(&a, err, sizeof err) != 0)
        return ctl_admin_exit(-1, err);
    int rc = run(a, o);
    admin_close(a);
    return rc;
}

void ctl_bulk_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] dead kick --all QUEUE [--dry-run | --yes] [--json]\n"
          "       deferctl [-c CONFIG] dead delete --all QUEUE [--dry-run | --yes] [--json]\n"
          "       deferctl [-c CONFIG] purge QUEUE --until TIME [--from TIME]\n"
          "                              [--dry-run | --yes] [--json]\n"
          "Every dead letter of QUEUE kicked back (due now, attempts from zero) or deleted;\n"
          "every pending job of QUEUE due in [--from, --until] cancelled (its key freed).\n"
          "Without --yes nothing changes: the command says how many jobs it would touch.\n"
          "One job at a time: one that changed meanwhile is counted as gone, one a consumer\n"
          "holds is left alone (its ack or nack decides). Prints each job acted on (kick:\n"
          "old and new id), then a summary on standard error; exit status 1 if any failed.\n\n"
          "  -n, --dry-run     list what would be touched, change nothing\n"
          "  -y, --yes         do it\n"
          "  -f, --from TIME   purge: jobs due at or after TIME (default: any)\n"
          "  -u, --until TIME  purge: jobs due at or before TIME (required)\n"
          "  -j, --json        one JSON object: queue, action, dry_run, matched, done, gone,\n"
          "                    held, failed, jobs (ids matched, or acted on)\n"
          "TIME: " TIME_FORMS ".\n", f);
}

/* ARGV[0] is the command's last word ("kick", "delete", "purge"). -1: go on. */
static int parse(int argc, char **argv, struct bulk_opts *o)
{
    static const struct option longopts[] = {
        {"all", no_argument, NULL, 'a'},        {"dry-run", no_argument, NULL, 'n'},
        {"yes", no_argument, NULL, 'y'},        {"json", no_argument, NULL, 'j'},
        {"from", required_argument, NULL, 'f'}, {"until", required_argument, NULL, 'u'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    int opt, all = 0, until = 0;
    const char *cmd = o->act == BA_PURGE ? "purge " : "dead ";
    while ((opt = getopt_long(argc, argv, "anyjf:u:h", longopts, NULL)) != -1) {
        if (opt == 'h')
            return ctl_bulk_usage(stdout), EXIT_OK;
        if (opt == 'a' && o->act != BA_PURGE)
            all = 1;
        else if (opt == 'n' || opt == 'y' || opt == 'j')
            *(opt == 'n' ? &o->dry_run : opt == 'y' ? &o->yes : &o->json) = 1;
        else if ((opt == 'f' || opt == 'u') && o->act == BA_PURGE) {
            if (ctl_parse_time_arg(cmd, opt == 'f' ? "--from" : "--until", optarg,
                                   opt == 'f' ? &o->from_ms : &o->until_ms) != 0)
                return EXIT_USAGE;
            until |= opt == 'u';
        } else
            return ctl_usage_error(cmd, NULL);
    }
    if (o->act != BA_PURGE && !all)
        return ctl_usage_error(cmd, "dead %s of one job takes its JOB_ID",
                               o->act == BA_KICK ? "kick" : "delete");
    if (o->act == BA_PURGE && !until)
        return ctl_usage_error(cmd, "purge needs --until TIME: the jobs due by then go");
    if (o->dry_run && o->yes)
        return ctl_usage_error(cmd, "--dry-run or --yes, not both");
    if (argc - optind != 1)
        return ctl_usage_error(cmd, "expected one QUEUE");
    if (o->from_ms > o->until_ms)
        return ctl_usage_error(cmd, "--from is after --until");
    o->queue = argv[optind];
    return ctl_check_queue_name(cmd, o->queue) ? EXIT_USAGE : -1;
}

int ctl_dead_all(int argc, char **argv)
{
    struct bulk_opts o = {.act = strcmp(argv[0], "kick") == 0 ? BA_KICK : BA_DELETE,
                          .until_ms = LAYOUT_DUE_MAX};
    o.cmd = o.act == BA_KICK ? "dead kick --all" : "dead delete --all";
    char prog[32];
    snprintf(prog, sizeof prog, "deferctl: dead %s", argv[0]);
    argv[0] = prog; /* getopt's messages name it */
    int rc = parse(argc, argv, &o);
    return rc >= 0 ? rc : open_and_run(&o);
}

int ctl_cmd_purge(const char *sock, int argc, char **argv)
{
    (void)sock;
    struct bulk_opts o = {.act = BA_PURGE, .cmd = "purge", .until_ms = LAYOUT_DUE_MAX};
    int rc = parse(argc, argv, &o);
    return rc >= 0 ? rc : open_and_run(&o);
}
