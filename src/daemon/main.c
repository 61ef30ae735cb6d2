/* deferd: the daemon's entry point: options, config, wiring, signals, the loop. */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "curator_format.h"
#include "curator_listing.h"
#include "clock_sync.h"
#include "cluster_time.h"
#include "daemon.h"
#include "dispatcher.h"
#include "drain.h"
#include "errtext.h"
#include "failpoint.h"
#include "depth.h"
#include "web.h"
#include "keysweep.h"
#include "tokensweep.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"
#include "metrics_http.h"
#include "mirror.h"
#include "notify.h"
#include "claim_recovery.h"
#include "layout_marker.h"
#include "packer.h"
#include "pause.h"
#include "unpacker.h"
#include "pending.h"
#include "reload.h"
#include "schedule.h"
#include "units.h"
#include "scheduler.h"
#include "server.h"
#include "session.h"
#include "zkstore.h"

#define DEFAULT_CONFIG "/etc/deferd/deferd.ini"
#define MAX_OVERRIDES 64
#define NEXT_SHOWN 10 /* occurrences --next prints */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: deferd [-c CONFIG] [-o SECTION.KEY=VALUE]... [--check-config]\n"
            "       deferd --version\n"
            "  -c, --config PATH   configuration file (default " DEFAULT_CONFIG ")\n"
            "  -o, --set S.K=V     override one config value: daemon.KEY=V, zookeeper.KEY=V,\n"
            "                      metrics.KEY=V, web.KEY=V, queue.NAME.KEY=V (or\n"
            "                      \"queue NAME.KEY=V\"),\n"
            "                      e.g. -o zookeeper.hosts=h:2181 -o queue.emails.ttr=5m\n"
            "                      schedule.NAME.KEY=V\n"
            "      --check-config  validate the configuration and exit (0 valid, 2 invalid)\n"
            "      --next NAME     with --check-config: the next " ERRTEXT_NUM(NEXT_SHOWN)
            " occurrences of schedule NAME\n"
            "  -h, --help          this text\n"
            "  -V, --version       print the version and exit\n"
            "See deferd(8) in docs/deferd.md.\n");
}

/* Ready once a session is up and ZooKeeper's clock read (puts are refused before); the
 * socket listens already (server_new ran before the loop). */
static void announce(void *ctx)
{
    struct deferd *d = ctx;
    enum conn_state st = session_state(d->session);
    if (st == CS_CONNECTED && d->server && cluster_time_ready())
        notify_ready(d->notify, "connected to ZooKeeper, %zu queue(s)", d->cfg->nqueues);
    else
        notify_status(d->notify, "ZooKeeper session %s%s", session_state_name(st),
                      st == CS_CONNECTED ? ", reading its clock" : "");
}

static void on_session(int state, void *ctx)
{
    struct deferd *d = ctx;
    session_on_zk_state(d->session, state);
    if (state == ZOO_AUTH_FAILED_STATE)
        d->exit_status = 1;
    announce(d);
}

static void on_watch(int type, const char *path, void *ctx)
{
    struct deferd *d = ctx;
    (void)type;
    if (!mirror_on_watch(d->mirror, path) && !curator_listing_on_watch(d->dispatcher, path) &&
        !pause_on_watch(d, path) && !layout_marker_on_watch(d, path) &&
        !unpacker_on_watch(d->unpacker, path) && !dispatcher_limit_watch(d->dispatcher, path) &&
        !claim_recovery_on_watch(d->claim_recovery, path))
        lock_watch_fired(d->dispatcher, path);
}

/* The failpoint loop-busy: a callback that makes itself active again for ever, what a
 * retry without a bound would do; the test checks that SIGTERM still drains. */
static void on_busy(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_active(arg, 0, 0);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct deferd *d = arg;
    notify_stopping(d->notify);
    drain_signal(d, (int)sig);
}

struct options {
    const char *config;
    const char *overrides[MAX_OVERRIDES];
    size_t noverrides;
    int check_only;
    const char *next;           /* --next NAME */
};

/* SIGHUP reloads the file: what reload_config() needs beyond the daemon. */
struct hup {
    struct deferd *d;
    struct config *cfg;
    const struct options *o;
};

static void on_hup(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct hup *h = arg;
    log_info("signal %d: reloading %s", (int)sig, h->cfg->path);
    reload_config(h->d, h->cfg, h->o->overrides, h->o->noverrides);
}

/* --check-config --next NAME: the schedule's next occurrences, for a human to check. */
static int print_next(const struct config *cfg, const char *name)
{
    const struct schedule_config *sc = config_schedule(cfg, name);
    if (!sc) {
        fprintf(stderr, "deferd: %s: no [schedule %s]\n", cfg->path, name);
        return 2;
    }
    char text[200];
    schedule_describe(sc, text, sizeof text);
    printf("schedule %s (queue %s): %s\n", name, sc->queue, text);
    int64_t t = units_wall_ms();
    for (int i = 0; i < NEXT_SHOWN && schedule_next(sc, t, &t) == 0; i++) {
        schedule_format_instant(sc, t, text, sizeof text);
        printf("  %s", text);
        if (sc->jitter_ms)
            printf("  (due +%llu ms of jitter)", (unsigned long long)schedule_jitter(sc, t));
        printf("\n");
    }
    return 0;
}

/* Returns -1 to continue, or an exit status. */
static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"set", required_argument, NULL, 'o'},
        {"check-config", no_argument, NULL, 'C'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'}, {"next", required_argument, NULL, 'N'},
        {NULL, 0, NULL, 0},
    };
    static char name[] = "deferd";
    int ch;
    o->config = DEFAULT_CONFIG;
    /* getopt prefixes its errors with argv[0], the path deferd was started by
     * ("build/deferd: invalid option"); every other message starts "deferd:". */
    argv[0] = name;
    while ((ch = getopt_long(argc, argv, "c:o:hV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c': o->config = optarg; break;
        case 'o':
            if (o->noverrides == MAX_OVERRIDES) {
                fprintf(stderr, "deferd: too many -o options\n");
                return 2;
            }
            o->overrides[o->noverrides++] = optarg;
            break;
        case 'C': o->check_only = 1; break;
        case 'N': o->next = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("deferd %s\n", DEFERD_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (o->next && !o->check_only) {
        fprintf(stderr, "deferd: --next goes with --check-config\n");
        return 2;
    }
    if (optind != argc) {
        fprintf(stderr, "deferd: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    return -1;
}

static struct event_base *new_base(void)
{
    /* Precise timers (timerfd) so that jobs fire within a millisecond of their due time. */
    struct event_config *ec = event_config_new();
    if (!ec)
        return NULL;
    event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    /* Back to the kernel for signals and sockets after this many callbacks, even when
     * callbacks keep making others active: SIGTERM is heard whatever the loop is doing. */
    event_config_set_max_dispatch_interval(ec, NULL, 1000, 0);
    struct event_base *base = event_base_new_with_config(ec);
    event_config_free(ec);
    return base;
}

static int run(struct deferd *d, const struct options *o)
{
    struct event *sigs[2] = {
        evsignal_new(d->base, SIGINT, on_signal, d),
        evsignal_new(d->base, SIGTERM, on_signal, d),
    };
    struct event *busy = NULL;
    int rc = 1;
    if (!sigs[0] || !sigs[1] || evsignal_add(sigs[0], NULL) || evsignal_add(sigs[1], NULL))
        goto out;
    d->notify = notify_new(d->base);
    if (!d->notify)
        goto out;
    /* The store first: the others send through it. Its events wait for the loop. */
    d->metrics = metrics_new(d);
    d->zs = d->metrics ? zkstore_new(d->base, d->cfg, on_watch, on_session, d) : NULL;
    if (!d->zs)
        goto out;
    zkstore_set_metrics(d->zs, d->metrics);
    d->mirror = mirror_new(d);
    d->dispatcher = dispatcher_new(d);
    if (d->dispatcher)
        dispatcher_set_format(d->dispatcher, &curator_format);
    d->clock = d->dispatcher ? clock_sync_new(d) : NULL;
    if (d->clock)
        clock_sync_on_ready(d->clock, announce, d);
    d->session = session_new(d);
    d->pending = pending_new(d);
    d->keysweep = keysweep_new(d);
    d->tokensweep = tokensweep_new(d);
    d->depth = depth_new(d);
    d->unpacker = unpacker_new(d);
    d->claim_recovery = claim_recovery_new(d);
    d->packer = d->dispatcher ? packer_new(dispatcher_put_env(d->dispatcher)) : NULL;
    d->scheduler = d->packer ? scheduler_new(d) : NULL;
    if (!d->mirror || !d->dispatcher || !d->clock || !d->session || !d->pending || !d->keysweep || !d->tokensweep || !d->depth ||
        !d->unpacker || !d->claim_recovery || !d->packer || !d->scheduler)
        goto out;
    d->server = server_new(d, commands_handle);
    d->web = web_new(d, o->overrides, o->noverrides);
    if (!d->server || !d->web || metrics_http_new(d, &d->metrics_http) != 0)
        goto out;
    metrics_http_set_other(d->metrics_http, web_handle, d->web);
    log_info("deferd started: %zu queue(s), zookeeper %s, root %s", d->cfg->nqueues,
             d->cfg->zk_hosts, d->cfg->zk_root);
    if (failpoint_hit("loop-busy") && (busy = event_new(d->base, -1, 0, on_busy,
                                                          event_self_cbarg())))
        event_active(busy, 0, 0);
    event_base_dispatch(d->base);
    rc = d->exit_status;
out:
    web_free(d->web);         /* answers its waiting pages while the listener lives */
    metrics_http_free(d->metrics_http);
    server_free(d->server);   /* closes clients: their jobs are released first */
    d->server = NULL;         /* puts failed by the closing session have no one to tell */
    dispatcher_close(d->dispatcher);
    zkstore_free(d->zs);      /* ends the session: remaining locks vanish at once */
    packer_free(d->packer);   /* its writes answered by the store's close */
    scheduler_free(d->scheduler);
    dispatcher_free(d->dispatcher);
    mirror_free(d->mirror);
    session_free(d->session);
    clock_sync_free(d->clock);
    pending_free(d->pending);
    keysweep_free(d->keysweep);
    tokensweep_free(d->tokensweep);
    depth_free(d->depth);
    unpacker_free(d->unpacker); /* after the store: no call of it is in flight */
    claim_recovery_free(d->claim_recovery);
    drain_free(d->drain);
    notify_free(d->notify);
    metrics_free(d->metrics);
    for (int i = 0; i < 2; i++)
        if (sigs[i])
            event_free(sigs[i]);
    if (busy)
        event_free(busy);
    return rc;
}

int main(int argc, char **argv)
{
    /* First: a closed stderr or stdout (a pipe whose reader left) must cost only the line
     * written, EPIPE, never the process, not even for the first complaint about the config. */
    signal(SIGPIPE, SIG_IGN);
    struct options o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    struct config cfg;
    char err[1024];
    config_read_web_tokens(1);
    if (config_load(o.config, o.overrides, o.noverrides, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "deferd: %s\n", err);
        return 2;
    }
    if (o.check_only) {
        rc = o.next ? print_next(&cfg, o.next)
                    : (printf("%s: ok (%zu queue(s), %zu schedule(s))\n", o.config, cfg.nqueues,
                              cfg.nschedules), 0);
        config_free(&cfg);
        return rc;
    }
    log_set_level(cfg.log_level);
    log_configure("deferd", cfg.log_target, cfg.log_facility, cfg.log_timestamps);
    struct deferd d = {.cfg = &cfg, .base = new_base()};
    struct hup hup = {.d = &d, .cfg = &cfg, .o = &o};
    struct event *hup_ev = d.base ? evsignal_new(d.base, SIGHUP, on_hup, &hup) : NULL;
    if (!hup_ev || evsignal_add(hup_ev, NULL) != 0) {
        log_error("cannot create the event loop");
        if (hup_ev)
            event_free(hup_ev);
        if (d.base)
            event_base_free(d.base);
        config_free(&cfg);
        return 1;
    }
    rc = run(&d, &o);
    event_free(hup_ev);
    event_base_free(d.base);
    config_free(&cfg);
    return rc;
}
