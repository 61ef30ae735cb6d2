/* deferctl schedules [--json]: every [schedule NAME] of the config with its next
 * occurrences and what ZooKeeper says of it; deferctl schedule run NAME: one extra
 * occurrence now (docs/schedules.md). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "deferctl.h"
#include "jsonw.h"
#include "schedule.h"
#include "tzone.h"
#include "units.h"

#define NEXT_SHOWN 3

void ctl_schedules_usage(FILE *f)
{
    fputs("Usage: deferctl [-c CONFIG] schedules [--json]\n"
          "       deferctl [-s PATH] [-c CONFIG] schedule run NAME [--json]\n"
          "List every [schedule NAME] of the config: when it fires, its next occurrences (in\n"
          "its time zone and in UTC), the latest occurrence a daemon put and whether that\n"
          "job is still pending or held or was acked. 'schedule run' puts one extra\n"
          "occurrence of NAME now (key NAME:<now ms>:run), beside the regular ones.\n\n"
          "  -j, --json   print JSON\n", f);
}

static const char *key_state(const struct admin_schedule *as)
{
    switch (as->key) {
    case ADMIN_KEY_LIVE: return "pending or held";
    case ADMIN_KEY_KEPT: return "acked";
    case ADMIN_KEY_GONE: return "done (acked, cancelled or dead-lettered; no kept key)";
    default: return "none";
    }
}

static void text_next(const struct schedule_config *sc)
{
    int64_t t = units_wall_ms();
    for (int i = 0; i < NEXT_SHOWN && schedule_next(sc, t, &t) == 0; i++) {
        char text[160];
        schedule_format_instant(sc, t, text, sizeof text);
        printf("  %s %s\n", i ? "    " : "next", text);
    }
}

static void text_one(const struct schedule_config *sc, const struct admin_schedule *as,
                     const char *fp)
{
    char when[200];
    schedule_describe(sc, when, sizeof when);
    printf("schedule %s: queue %s, %s, misfire %s, overlap %s\n", sc->name, sc->queue, when,
           schedule_misfire_names[sc->misfire], schedule_overlap_names[sc->overlap]);
    text_next(sc);
    if (!as->present) {
        printf("  no state in ZooKeeper yet: no daemon has run it\n");
        return;
    }
    if (!as->parsed) {
        printf("  its state node holds something else: daemons leave it alone and put nothing\n");
        return;
    }
    char utc[40];
    units_format_time(as->st.last_ms, utc, sizeof utc);
    printf("  put up to %s; latest job: %s, %s\n", utc, as->st.key[0] ? as->st.key : "none",
           key_state(as));
    if (strcmp(as->st.fp, fp) != 0)
        printf("  the section in force on the daemons differs from this config's "
               "(fingerprint %s, here %s)\n", as->st.fp, fp);
}

static void json_one(struct jsonw *w, const struct schedule_config *sc,
                     const struct admin_schedule *as, const char *fp)
{
    jsonw_obj_begin(w, NULL);
    jsonw_str(w, "name", sc->name);
    jsonw_str(w, "queue", sc->queue);
    jsonw_str(w, "cron", sc->cron[0] ? sc->cron : NULL);
    jsonw_uint(w, "every_ms", sc->every_ms);
    jsonw_str(w, "timezone", sc->timezone);
    jsonw_arr_begin(w, "next");
    int64_t t = units_wall_ms();
    for (int i = 0; i < NEXT_SHOWN && schedule_next(sc, t, &t) == 0; i++) {
        char local[96];
        tzone_format(sc->tz, t / 1000, local, sizeof local);
        jsonw_obj_begin(w, NULL);
        jsonw_int(w, "ms", t);
        jsonw_str(w, "local", local);
        jsonw_obj_end(w);
    }
    jsonw_arr_end(w);
    jsonw_bool(w, "in_zookeeper", as->parsed);
    if (as->parsed) {
        jsonw_int(w, "put_up_to_ms", as->st.last_ms);
        jsonw_str(w, "last_key", as->st.key[0] ? as->st.key : NULL);
        jsonw_str(w, "last_state", as->key == ADMIN_KEY_LIVE ? "pending" :
                  as->key == ADMIN_KEY_KEPT ? "acked" : as->key == ADMIN_KEY_GONE ? "done" : NULL);
        jsonw_bool(w, "config_matches", strcmp(as->st.fp, fp) == 0);
    }
    jsonw_obj_end(w);
}

static int parse_json_flag(const char *cmd, int argc, char **argv, int *json)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
        if (opt == 'h')
            return ctl_schedules_usage(stdout), -1;
        if (opt != 'j')
            return ctl_usage_error(cmd, NULL);
        *json = 1;
    }
    return 0;
}

int ctl_cmd_schedules(const char *sock, int argc, char **argv)
{
    (void)sock;
    int json = 0, rc = parse_json_flag("schedules ", argc, argv, &json);
    if (rc != 0 || optind < argc)
        return rc < 0 ? EXIT_OK : rc ? rc : ctl_usage_error("schedules ", "unexpected "
                                                            "argument '%s'", argv[optind]);
    char err[512];
    struct admin *a;
    if (ctl_admin_open(&a, err, sizeof err) != 0)
        return ctl_admin_exit(-1, err);
    const struct config *cfg = admin_config(a);
    struct jsonw w;
    jsonw_init(&w, stdout);
    if (json)
        jsonw_arr_begin(&w, NULL);
    for (size_t i = 0; i < cfg->nschedules && rc == 0; i++) {
        const struct schedule_config *sc = cfg->schedules[i];
        struct admin_schedule as;
        char fp[SCHEDULE_FP_LEN + 1];
        schedule_fingerprint(sc, fp);
        if ((rc = admin_schedule(a, sc, &as, err, sizeof err)) == 0)
            json ? json_one(&w, sc, &as, fp) : text_one(sc, &as, fp);
    }
    if (json && rc == 0) {
        jsonw_arr_end(&w);
        jsonw_finish(&w);
    } else if (rc == 0 && cfg->nschedules == 0) {
        printf("no [schedule NAME] in %s\n", cfg->path);
    }
    admin_close(a);
    return ctl_admin_exit(rc, err);
}

/* schedule run NAME: the schedule's job, due now, under a key of its own. */
static int run_now(const char *sock, const struct schedule_config *sc, int json)
{
    deferd_put_item it = {.queue = sc->queue, .payload = sc->payload, .len = sc->len};
    char key[NAMES_KEY_MAX + 1];
    schedule_run_key(sc, units_wall_ms(), key, sizeof key);
    it.opts.key = key;
    it.opts.has_priority = sc->has_prio;
    it.opts.priority = sc->priority;
    it.opts.has_ttr = sc->has_ttr;
    it.opts.ttr_ms = sc->ttr_ms;
    deferd_client *c = ctl_connect(sock);
    if (!c)
        return EXIT_FAIL;
    int err = ctl_put_one(c, &it);
    int rc = err == DEFERD_OK ? EXIT_OK : ctl_lib_fail(c, "schedule run", err);
    if (err == DEFERD_OK && json)
        printf("{\"id\":\"%s\",\"key\":\"%s\"}\n", it.id, key);
    else if (err == DEFERD_OK)
        printf("%s\n", it.id);
    deferd_close(c);
    return rc;
}

int ctl_cmd_schedule(const char *sock, int argc, char **argv)
{
    int json = 0, rc = parse_json_flag("schedule ", argc, argv, &json);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    if (optind + 2 != argc || strcmp(argv[optind], "run") != 0)
        return ctl_usage_error("schedule ", "expected: schedule run NAME");
    struct config cfg;
    char err[1024];
    if (config_load(deferctl_config_path, NULL, 0, &cfg, err, sizeof err) != 0) {
        ctl_errmsg("%s", err);
        return EXIT_USAGE;
    }
    const struct schedule_config *sc = config_schedule(&cfg, argv[optind + 1]);
    if (!sc) {
        ctl_errmsg("no [schedule %s] in %s", argv[optind + 1], cfg.path);
        rc = EXIT_NOT_FOUND;
    } else {
        rc = run_now(sock, sc, json);
    }
    config_free(&cfg);
    return rc;
}
