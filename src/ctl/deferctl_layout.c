/* deferctl layout [--upgrade | --claims | --short-names | --downgrade]: shows or sets the
 * root's layout version (the marker every daemon watches, docs/zookeeper-layout.md "Rolling
 * upgrade") and counts the packs each queue still holds. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "deferctl.h"
#include "jsonw.h"

void ctl_layout_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] layout [--upgrade | --claims | --short-names |\n"
          "                --downgrade] [--yes] [--json]\n"
          "Show the ZooKeeper layout version of the config's root and the packs each queue\n"
          "holds, or change it. Version 2 lets daemons store far-future jobs many to a znode\n"
          "(packs); version 3 also claims due jobs many to a transaction; version 4 also\n"
          "names new jobs' buckets short (14 bytes less a path); version 1 (no marker) is\n"
          "the layout of deferd 0.2 and earlier. A root that this deferd creates starts at\n"
          "version 4.\n\n"
          "  --upgrade    write the marker <root>/layout = 2: every daemon starts packing.\n"
          "               Only once every daemon on the root runs deferd 0.3 or later:\n"
          "               older daemons do not read packs\n"
          "  --claims     write the marker = 3 (a new root's): every daemon claims\n"
          "               due jobs many to a transaction instead of locking each\n"
          "               (docs/zookeeper-layout.md, Claims). Only once every daemon on the\n"
          "               root recovers claims (this version); --upgrade goes back to 2,\n"
          "               once no daemon holds a claim\n"
          "  --short-names  write the marker = 4: daemons name the buckets of new jobs by\n"
          "               their own digits (docs/zookeeper-layout.md, Short bucket names).\n"
          "               Only once every daemon on the root reads them (this version);\n"
          "               --claims goes back to 3 at any time: jobs keep their paths\n"
          "  --downgrade  delete the marker: new packs stop; packs already written are still\n"
          "               unpacked by daemons of 0.3 or later. Go back to older daemons only\n"
          "               when this command counts no pack left\n"
          "  -y, --yes    change it: without --yes, --upgrade and --downgrade only say what\n"
          "               they would do and exit 2 (with --json: the state, \"changed\":\n"
          "               false, and exit 2)\n"
          "  -j, --json   print {\"root\", \"version\", \"changed\", \"queues\": {Q: packs}}\n", f);
}

struct layout_out {
    struct jsonw w;
    int json;
};

static void print_head(struct layout_out *o, const char *root, const struct admin_layout *l,
                       int changed, int set)
{
    if (o->json) {
        jsonw_obj_begin(&o->w, NULL);
        jsonw_str(&o->w, "root", root);
        if (l->version > 0)
            jsonw_int(&o->w, "version", l->version);
        else
            jsonw_str(&o->w, "marker", l->marker);
        jsonw_bool(&o->w, "changed", changed);
        jsonw_obj_begin(&o->w, "queues");
        return;
    }
    if (l->version < 0)
        printf("root %s: layout marker holds '%s', not a version: daemons do not pack\n", root,
               l->marker);
    else
        printf("root %s: layout version %d%s%s\n", root, l->version,
               set ? (changed ? " (changed)" : " (already)") : "",
               l->version >= LAYOUT_VERSION_SHORT ? ": far-future jobs are packed, due jobs "
                                                    "claimed, new jobs' buckets named short"
               : l->version == LAYOUT_VERSION_CLAIMS ? ": far-future jobs are packed, due jobs "
                                                       "claimed"
               : l->version == LAYOUT_VERSION_PACKS ? ": far-future jobs are packed"
                                                    : ": no packing (no marker)");
}

/* Each native queue's packs; 0, or -1 with err. */
static int print_packs(struct layout_out *o, struct admin *a, const struct config *cfg,
                       char *err, size_t errlen)
{
    for (size_t i = 0; i < cfg->nqueues; i++) {
        const struct queue_config *q = cfg->queues[i];
        long long packs;
        if (q->format != QF_NATIVE)
            continue;
        if (admin_pack_count(a, q->name, &packs, err, errlen) != 0)
            return -1;
        if (o->json)
            jsonw_int(&o->w, q->name, packs);
        else
            printf("queue %s: %lld pack%s\n", q->name, packs, packs == 1 ? "" : "s");
    }
    return 0;
}

/* -1 after --help; else 0 with *set (0 show, 1 or 2) and *json, or EXIT_USAGE. */
static int parse_layout(int argc, char **argv, int *set, int *json, int *yes)
{
    static const struct option longopts[] = {
        {"upgrade", no_argument, NULL, 'u'}, {"downgrade", no_argument, NULL, 'd'},
        {"claims", no_argument, NULL, 'c'}, {"short-names", no_argument, NULL, 's'},
        {"yes", no_argument, NULL, 'y'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "yjh", longopts, NULL)) != -1) {
        if (opt == 'h')
            return ctl_layout_usage(stdout), -1;
        if (opt == 'j')
            *json = 1;
        else if (opt == 'y')
            *yes = 1;
        else if (strchr("udcs", opt) && !*set)
            *set = opt == 'u'   ? LAYOUT_VERSION_PACKS
                   : opt == 'c' ? LAYOUT_VERSION_CLAIMS
                   : opt == 's' ? LAYOUT_VERSION_SHORT
                                : 1;
        else
            return ctl_usage_error("layout ", strchr("udcs", opt)
                                                  ? "give one of --upgrade, --claims, "
                                                    "--short-names and --downgrade"
                                                  : NULL);
    }
    if (optind < argc)
        return ctl_usage_error("layout ", "unexpected argument '%s'", argv[optind]);
    if (*yes && !*set)
        return ctl_usage_error("layout ", "--yes confirms --upgrade, --claims, --short-names "
                                          "or --downgrade");
    return 0;
}

/* Why and when to upgrade a root still at version 1 (figures: docs/performance.md, 1M far
 * jobs), or what a change would do, before it is confirmed. */
static void advise(const char *root, const struct admin_layout *l, int set)
{
    if (set == LAYOUT_VERSION_SHORT)
        printf("--short-names writes %s/layout = 4: every daemon on the root names the buckets "
               "of new jobs by their own digits.\nRun it only once every daemon on the root "
               "reads them (deferd of this version); then add --yes.\n", root);
    else if (set == LAYOUT_VERSION_CLAIMS)
        printf("--claims writes %s/layout = 3: every daemon on the root claims due jobs instead "
               "of locking them (docs/zookeeper-layout.md, Claims).\nRun it only "
               "once every daemon on the root recovers claims; then add --yes.\n", root);
    else if (set == LAYOUT_VERSION_PACKS)
        printf("--upgrade writes %s/layout = 2: every daemon on the root starts packing jobs "
               "due beyond their queue's pack_after.\nRun it only once every daemon on the root "
               "runs deferd 0.3 or later (older ones do not read packs); then add --yes.\n",
               root);
    else if (set)
        printf("--downgrade deletes %s/layout: new packs stop; daemons of 0.3 or later still "
               "unpack the packs above. Add --yes to do it.\n", root);
    else if (l->version == 1)
        printf("A job due beyond pack_after costs ZooKeeper about 2 znodes and 4 KB of memory "
               "here, against 0.06 znodes and 0.8 KB packed. Once every daemon on the root runs "
               "deferd 0.3 or later: deferctl layout --upgrade --yes\n");
}

int ctl_cmd_layout(const char *sock, int argc, char **argv)
{
    (void)sock;
    int set = 0, json = 0, changed = 0, yes = 0;
    int rc = parse_layout(argc, argv, &set, &json, &yes);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    char err[512];
    struct admin *a;
    struct admin_layout l;
    if (ctl_admin_open(&a, err, sizeof err) != 0)
        return ctl_admin_exit(-1, err);
    const struct config *cfg = admin_config(a);
    rc = set && yes ? admin_layout_set(a, set, &changed, err, sizeof err) : 0;
    if (rc == 0)
        rc = admin_layout(a, &l, err, sizeof err);
    if (rc == 0) {
        struct layout_out o = {.json = json};
        jsonw_init(&o.w, stdout);
        print_head(&o, cfg->zk_root, &l, changed, set && yes);
        rc = print_packs(&o, a, cfg, err, sizeof err);
        if (json && rc == 0) {
            jsonw_obj_end(&o.w);
            jsonw_obj_end(&o.w);
            jsonw_finish(&o.w);
        }
    }
    int unconfirmed = rc == 0 && set && !yes && l.version != set;
    if (rc == 0 && !json && (unconfirmed || !set))
        advise(cfg->zk_root, &l, unconfirmed ? set : 0);
    admin_close(a);
    return unconfirmed ? EXIT_USAGE : ctl_admin_exit(rc, err);
}
