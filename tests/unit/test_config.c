/* Config loading: the sample loads; every error names file and line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "config.h"

static char path[] = "/tmp/deferd-test-config-XXXXXX";

static int load_text(const char *text, const char *const *ov, size_t nov, struct config *cfg,
                     char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return config_load(path, ov, nov, cfg, err, errlen);
}

#define BASE "[daemon]\nsocket = /tmp/x.sock\n[zookeeper]\nhosts = 127.0.0.1:2181\n"

/* LINE 0: the error names the file only. */
static void expect_error(const char *text, int line, const char *needle)
{
    struct config cfg;
    char err[512], where[600];
    CHECK(load_text(text, NULL, 0, &cfg, err, sizeof err) != 0);
    if (line > 0)
        snprintf(where, sizeof where, "%s:%d: ", path, line);
    else /* about the whole file: no line */
        snprintf(where, sizeof where, "%s: ", path);
    CHECK_CONTAINS(err, where);
    CHECK_CONTAINS(err, needle);
}

static void curator_queue(void)
{
    struct config cfg;
    char err[512];
    CHECK(load_text(BASE "[queue r]\nformat = curator-delay\ncurator_path = /svc/r\n"
                    "curator_lock_path = /svc/r-locks\ncurator_corrupt = delete\n[queue n]\n", NULL, 0, &cfg, err,
                    sizeof err) == 0);
    const struct queue_config *r = config_queue(&cfg, "r"), *n = config_queue(&cfg, "n");
    CHECK(r && r->format == QF_CURATOR_DELAY);
    CHECK(r && strcmp(r->curator_path, "/svc/r") == 0 && strcmp(r->curator_lock_path, "/svc/r-locks") == 0);
    CHECK(n && n->format == QF_NATIVE && n->curator_path[0] == '\0');
    CHECK(r && r->curator_delete_corrupt && n && !n->curator_delete_corrupt);
    config_free(&cfg);
}

static void concurrency(void)
{
    struct config cfg;
    char err[512];
    CHECK(load_text(BASE "[queue a]\nconcurrency = 10\n[queue b]\n", NULL, 0, &cfg, err,
                    sizeof err) == 0);
    CHECK(config_queue(&cfg, "a")->concurrency == 10 && config_queue(&cfg, "b")->concurrency == 0);
    config_free(&cfg);
    CHECK(load_text(BASE "[queue a]\nrate = 100/s\n[queue b]\nrate = 30/m\n[queue c]\nrate = 2/h\n",
                    NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(config_queue(&cfg, "a")->rate_n == 100 && config_queue(&cfg, "a")->rate_window_ms == 1000);
    CHECK(config_queue(&cfg, "b")->rate_n == 30 && config_queue(&cfg, "b")->rate_window_ms == 60000);
    CHECK(config_queue(&cfg, "c")->rate_window_ms == 3600000);
    config_free(&cfg);
    CHECK(load_text(BASE "[queue a]\ngroup_rate = 5/m\n[queue b]\nrate = 7/s\n"
                    "group_rate = 3/s\n", NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(config_queue(&cfg, "a")->group_rate_n == 5 && config_queue(&cfg, "a")->rate_n == 0 &&
          config_queue(&cfg, "a")->group_rate_window_ms == 60000);
    CHECK(config_queue(&cfg, "b")->group_rate_n == 3 && config_queue(&cfg, "b")->rate_n == 7 &&
          config_queue(&cfg, "b")->group_rate_window_ms == 1000);
    config_free(&cfg);
    CHECK(load_text(BASE "[queue a]\ngroup_weights = vip:4, gold-1:2 x:1\n", NULL, 0, &cfg, err,
                    sizeof err) == 0);
    const struct queue_config *a = config_queue(&cfg, "a");
    CHECK(a->nweights == 3 && strcmp(a->weights[1].group, "gold-1") == 0 &&
          a->weights[1].weight == 2 && a->weights[0].weight == 4);
    config_free(&cfg);
}

static void sample(void)
{
    struct config cfg;
    char err[512] = "";
    int rc = config_load(SAMPLE_CONFIG, NULL, 0, &cfg, err, sizeof err);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    CHECK_STR(cfg.zk_root, "/deferd");
    CHECK(cfg.nqueues == 2);
    const struct queue_config *q = config_queue(&cfg, "emails");
    CHECK(q && q->priority == 1024 && q->ttr_ms == 60000 && q->max_attempts == 10);
    CHECK(cfg.max_payload == 512 * 1024 && cfg.socket_mode == 0660);
    CHECK(cfg.metrics_host && strcmp(cfg.metrics_host, "127.0.0.1") == 0);
    CHECK(cfg.metrics_port == 9464);
    config_free(&cfg);
}

/* The sample's commented [schedule] section loads once its ';' are removed: the example an
 * operator copies is a valid one. */
static void sample_schedule(void)
{
    FILE *in = fopen(SAMPLE_CONFIG, "r");
    CHECK(in != NULL);
    if (!in)
        return;
    char text[16384] = "", line[512];
    int in_section = 0;
    while (fgets(line, sizeof line, in) && strlen(text) + sizeof line < sizeof text) {
        if (strncmp(line, ";[schedule ", 11) == 0)
            in_section = 1;
        strcat(text, in_section && line[0] == ';' ? line + 1 : line);
    }
    fclose(in);
    struct config cfg;
    char err[512] = "";
    int rc = load_text(text, NULL, 0, &cfg, err, sizeof err);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    const struct schedule_config *sc = config_schedule(&cfg, "nightly-report");
    CHECK(cfg.nschedules == 1 && sc != NULL);
    CHECK(sc && strcmp(sc->queue, "reports") == 0 && strcmp(sc->cron, "0 3 * * *") == 0);
    config_free(&cfg);
}

static void overrides(void)
{
    struct config cfg;
    char err[512];
    const char *ov[] = {"zookeeper.hosts=127.0.0.1:9999", "queue new.priority=3",
                        "daemon.lookahead=2s"};
    CHECK(load_text(BASE "[queue a]\n", ov, 3, &cfg, err, sizeof err) == 0);
    CHECK_STR(cfg.zk_hosts, "127.0.0.1:9999");
    CHECK(config_queue(&cfg, "new") && config_queue(&cfg, "new")->priority == 3);
    CHECK(cfg.lookahead_ms == 2000);
    config_free(&cfg);
    const char *bad[] = {"daemon.lookahead=soon"};
    CHECK(load_text(BASE "[queue a]\n", bad, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "override 'daemon.lookahead=soon'");
    const char *junk[] = {"nodot"};
    CHECK(load_text(BASE "[queue a]\n", junk, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "SECTION.KEY=VALUE: daemon.KEY=VALUE, zookeeper.KEY=VALUE, "
                        "metrics.KEY=VALUE, web.KEY=VALUE, queue.NAME.KEY=VALUE or "
                        "\"queue NAME.KEY=VALUE\"");
}

/* -o queue.NAME.KEY=VALUE as well as "queue NAME.KEY=VALUE"; names may hold dots. */
static void queue_overrides(void)
{
    struct config cfg;
    char err[512];
    const char *ov[] = {"queue.emails.ttr=5s", "queue.a.b.priority=4", "queue.a.b.ttr=2s",
                        "queue new.priority=3", "queue.v1.2-x_y.max_attempts=7"};
    CHECK(load_text(BASE "[queue emails]\n[queue a.b]\n", ov, 5, &cfg, err, sizeof err) == 0);
    const struct queue_config *e = config_queue(&cfg, "emails"), *ab = config_queue(&cfg, "a.b");
    const struct queue_config *n = config_queue(&cfg, "new");
    const struct queue_config *v = config_queue(&cfg, "v1.2-x_y");
    CHECK(e && e->ttr_ms == 5000 && ab && ab->priority == 4 && ab->ttr_ms == 2000);
    CHECK(n && n->priority == 3 && v && v->max_attempts == 7 && cfg.nqueues == 4);
    CHECK(!config_queue(&cfg, "a") && !config_queue(&cfg, "queue.emails"));
    config_free(&cfg);
    const char *bad[] = {"queues.emails.ttr=5s"};
    CHECK(load_text(BASE "[queue emails]\n", bad, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "override 'queues.emails.ttr=5s': unknown section [queues.emails]; -o "
                        "takes daemon.KEY=VALUE");
    CHECK_CONTAINS(err, "queue.NAME.KEY=VALUE");
    const char *bare[] = {"queue.ttr=5s"};
    CHECK(load_text(BASE "[queue emails]\n", bare, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "unknown section [queue]");
}

/* [zookeeper] hosts: what zookeeper_init would refuse is refused at load, with the line. */
static void connect_string(void)
{
    static const char *const good[] = {
        "127.0.0.1:2181", "zk1:2181,zk2.example.com:2182,zk_3:65535/deferd/chroot",
        "::1:2181", "fe80::1%lo:2181,10.0.0.1:1", "zk1:2181, zk2:2181",
    };
    static const struct { const char *hosts, *why; } bad[] = {
        {"not a host list!!", "'not a host list!!': no :PORT"},
        {"zk1", "'zk1': no :PORT"},
        {"zk1:2181,zk2", "'zk2': no :PORT"},
        {"zk1:0", "port not 1 .. 65535"},
        {"zk1:65536", "port not 1 .. 65535"},
        {"zk1:02181", "port not 1 .. 65535"},
        {"zk1:21x", "port not 1 .. 65535"},
        {"zk1:", "port not 1 .. 65535"},
        {":2181", "no host before the port"},
        {"[::1]:2181", "without brackets"},
        {"1::2::3:2181", "not an IPv6 address"},
        {"a b:2181", "bad host name"},
        {"-zk:2181", "bad host name"},
        {"zk1:2181,,zk2:2181", "empty pair"},
        {"zk1:2181,", "empty pair"},
        {"/chroot", "empty pair"},
        {"zk1:2181/", "chroot '/' is not an absolute znode path"},
        {"zk1:2181/a//b", "chroot '/a//b'"},
    };
    struct config cfg;
    char text[300], err[512];
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        snprintf(text, sizeof text, "[daemon]\nsocket = /s\n[zookeeper]\nhosts = %s\n[queue a]\n",
                 good[i]);
        CHECK(load_text(text, NULL, 0, &cfg, err, sizeof err) == 0);
        if (cfg.zk_hosts)
            CHECK_STR(cfg.zk_hosts, good[i]);
        config_free(&cfg);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(text, sizeof text, "[daemon]\nsocket = /s\n[zookeeper]\nhosts = %s\n[queue a]\n",
                 bad[i].hosts);
        expect_error(text, 4, bad[i].why);
        expect_error(text, 4, "expected HOST:PORT[,HOST:PORT...][/CHROOT]");
    }
    const char *ov[] = {"zookeeper.hosts=not a host list!!"};
    CHECK(load_text(BASE "[queue a]\n", ov, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "'hosts': 'not a host list!!': no :PORT");
    expect_error("[zookeeper]\nhosts =\n[queue a]\n", 2, "'hosts' must not be empty");
    const char *stripped = "[daemon]\nsocket = /s\n[zookeeper]\nhosts = zk1:2181 \n[queue a]\n";
    CHECK(load_text(stripped, NULL, 0, &cfg, err, sizeof err) == 0); /* inih strips blanks */
    config_free(&cfg);
}

/* Loads BASE + TEXT + a queue with one override (or none); checks the listen address
 * (HOST NULL: disabled). */
static void expect_listen(const char *text, const char *ov, const char *host, unsigned port)
{
    struct config cfg;
    char buf[256], err[512];
    snprintf(buf, sizeof buf, BASE "%s[queue a]\n", text);
    CHECK(load_text(buf, &ov, ov ? 1 : 0, &cfg, err, sizeof err) == 0);
    if (host)
        CHECK(cfg.metrics_host && strcmp(cfg.metrics_host, host) == 0 &&
              cfg.metrics_port == port);
    else
        CHECK(cfg.metrics_host == NULL);
    config_free(&cfg);
}

/* [metrics] listen: default on loopback, host:port forms, off, and what is refused. */
static void metrics_listen(void)
{
    expect_listen("", NULL, "127.0.0.1", 9464);
    expect_listen("[metrics]\nlisten = [::1]:0\n", NULL, "::1", 0);
    expect_listen("", "metrics.listen=localhost:9100", "localhost", 9100);
    expect_listen("[metrics]\nlisten = off\n", NULL, NULL, 0);
    expect_listen("[metrics]\nlisten =\n", NULL, NULL, 0);
    expect_listen("[metrics]\nlisten = 127.0.0.1:80\n", "metrics.listen=off", NULL, 0);
    expect_error(BASE "[metrics]\nlisten = 127.0.0.1\n[queue a]\n", 6, "HOST:PORT");
    expect_error(BASE "[metrics]\nlisten = 127.0.0.1:65536\n[queue a]\n", 6, "HOST:PORT");
    expect_error(BASE "[metrics]\nlisten = :9464\n[queue a]\n", 6, "HOST:PORT");
    expect_error(BASE "[metrics]\nlisten = 127.0.0.1:-1\n[queue a]\n", 6, "HOST:PORT");
    expect_error(BASE "[metrics]\nlisten = ::1:9464\n[queue a]\n", 6, "IPv6 goes in brackets");
    expect_error(BASE "[metrics]\nlisten = a b:9464\n[queue a]\n", 6, "bad host");
    expect_error(BASE "[metrics]\nport = 9464\n[queue a]\n", 6, "unknown key 'port'");
}

/* Logging keys: the defaults, every accepted word, and (in main) the rejected ones. */
static void logging(void)
{
    struct config cfg;
    char err[512];
    int local3 = -1, daemon = -1;
    CHECK(log_facility_parse("local3", &local3) == 0 && log_facility_parse("daemon", &daemon) == 0);
    CHECK(local3 != daemon);
    CHECK(load_text(BASE "[queue a]\n", NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(cfg.log_target == LOG_TO_STDERR && cfg.log_timestamps == LOG_STAMPS_AUTO);
    CHECK(cfg.log_facility == daemon);
    config_free(&cfg);
    CHECK(load_text("[daemon]\nsocket = /s\nlog_target = syslog\nlog_facility = local3\n"
                    "log_timestamps = no\n[zookeeper]\nhosts = h:2181\n[queue a]\n", NULL, 0, &cfg,
                    err, sizeof err) == 0);
    CHECK(cfg.log_target == LOG_TO_SYSLOG && cfg.log_timestamps == LOG_STAMPS_NO);
    CHECK(cfg.log_facility == local3);
    CHECK_STR(log_facility_name(cfg.log_facility), "local3");
    config_free(&cfg);
    const char *ov[] = {"daemon.log_timestamps=yes", "daemon.log_target=stderr",
                        "daemon.log_facility=local7"};
    CHECK(load_text(BASE "[queue a]\n", ov, 3, &cfg, err, sizeof err) == 0);
    CHECK(cfg.log_timestamps == LOG_STAMPS_YES && cfg.log_target == LOG_TO_STDERR);
    CHECK_STR(log_facility_name(cfg.log_facility), "local7");
    config_free(&cfg);
}

/* [daemon] clock, clock_warn, clock_limit: defaults, overrides and errors. */
static void clock_keys(void)
{
    struct config cfg;
    char err[512];
    CHECK(load_text(BASE "[queue a]\n", NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(!cfg.clock_local && cfg.clock_warn_ms == 1000 && cfg.clock_limit_ms == 60000);
    config_free(&cfg);
    const char *ov[] = {"daemon.clock=local", "daemon.clock_warn=250ms", "daemon.clock_limit=0"};
    CHECK(load_text(BASE "[queue a]\n", ov, 3, &cfg, err, sizeof err) == 0);
    CHECK(cfg.clock_local && cfg.clock_warn_ms == 250 && cfg.clock_limit_ms == 0);
    config_free(&cfg);
    expect_error(BASE "[queue a]\n[daemon]\nclock = ntp\n", 7,
                 "'clock': 'ntp' is not zookeeper or local");
    expect_error(BASE "[queue a]\n[daemon]\nclock_warn = 0\n", 7, "clock_warn");
    expect_error(BASE "[queue a]\n[daemon]\nclock_limit = 2d\n", 7, "clock_limit");
    expect_error(BASE "[queue a]\n[daemon]\nclock_warn = 5s\nclock_limit = 2s\n", 0,
                 "clock_limit (2000 ms) is below clock_warn (5000 ms)");
    expect_error(BASE "[queue a]\n[daemon]\nclock_limt = 5s\n", 7, "clock_limit");
}

/* hold_writes: 4 s, or the session timeout when that is shorter; never beyond it. */
static void hold_writes(void)
{
    struct config cfg;
    char err[512];
    CHECK(load_text(BASE "[queue a]\n", NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(cfg.hold_writes_ms == 4000);
    config_free(&cfg);
    const char *short_session[] = {"zookeeper.session_timeout=3s"};
    CHECK(load_text(BASE "[queue a]\n", short_session, 1, &cfg, err, sizeof err) == 0);
    CHECK(cfg.hold_writes_ms == 3000);
    config_free(&cfg);
    const char *off[] = {"daemon.hold_writes=0"};
    CHECK(load_text(BASE "[queue a]\n", off, 1, &cfg, err, sizeof err) == 0);
    CHECK(cfg.hold_writes_ms == 0);
    config_free(&cfg);
    expect_error(BASE "[queue a]\n[daemon]\nhold_writes = 11s\n", 0,
                 "hold_writes (11000 ms) is longer than [zookeeper] session_timeout (10000 ms)");
    expect_error(BASE "[queue a]\n[daemon]\nhold_writes = soon\n", 7, "hold_writes");
}

/* An unknown key names the known one a typo away, if exactly one is, or its section. */
static void unknown_keys(void)
{
    struct config cfg;
    char err[512];
    expect_error(BASE "sesion_timeout = 5s\n[queue a]\n", 5,
                 "unknown key 'sesion_timeout' in section [zookeeper]; did you mean "
                 "'session_timeout'?");
    expect_error(BASE "[queue a]\nttl = 5s\n", 6,
                 "unknown key 'ttl' in section [queue a]; did you mean 'ttr'?");
    expect_error(BASE "[queue a]\n[daemon]\nlogleve = info\n", 7, "did you mean 'log_level'?");
    expect_error(BASE "[queue a]\n[daemon]\nhosts = h:1\n", 7,
                 "unknown key 'hosts' in section [daemon]; it belongs in [zookeeper]");
    expect_error(BASE "[queue a]\n[metrics]\nttr = 5s\n", 7, "it belongs in [queue NAME]");
    static const char *const far[] = {"colour", "backoff_mix", "pri", "x"}; /* none, or two */
    for (size_t i = 0; i < sizeof far / sizeof *far; i++) {
        char text[200];
        snprintf(text, sizeof text, BASE "[queue a]\n%s = 1\n", far[i]);
        CHECK(load_text(text, NULL, 0, &cfg, err, sizeof err) != 0);
        CHECK_CONTAINS(err, "unknown key");
        CHECK(!strstr(err, "did you mean") && !strstr(err, "belongs"));
    }
    const char *ov[] = {"queue a.prioirty=3"};
    CHECK(load_text(BASE "[queue a]\n", ov, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "did you mean 'priority'?");
}

/* A value out of range says the range. */
static void ranges(void)
{
    expect_error("[daemon]\ndrain_grace = 2h\n", 2,
                 "'drain_grace': duration '2h' is out of range (0 .. 1h)");
    expect_error("[daemon]\nlookahead = 50ms\n", 2, "(100ms .. 1h)");
    expect_error(BASE "session_timeout = 1s\n[queue a]\n", 5, "(2s .. 10m)");
    expect_error(BASE "[queue a]\nttr = 8d\n", 6, "'ttr': duration '8d' is out of range (1s .. 7d)");
    expect_error(BASE "[queue a]\nbackoff_min = 2d\n", 6, "(0 .. 1d)");
    expect_error(BASE "[queue a]\nbackoff_max = 31d\n", 6, "(0 .. 30d)");
    expect_error(BASE "[queue a]\nkey_retention = 3651d\n", 6, "(0 .. 3650d)");
    expect_error(BASE "[queue a]\nmax_attempts = 0\n", 6,
                 "'max_attempts': '0' is not a number from 1 to 4294967295");
    expect_error(BASE "[queue a]\nmax_pending = 1000000000001\n", 6,
                 "'max_pending': '1000000000001' is not a number from 0 to 1000000000000");
    expect_error(BASE "[queue a]\nbackoff_jitter = 101\n", 6,
                 "'backoff_jitter': '101' is not a number from 0 to 100");
    expect_error(BASE "[queue a]\n[daemon]\nmax_inflight = 0\n", 7,
                 "'max_inflight': '0' is not a number from 1 to 10000");
}

/* backoff_min above backoff_max is refused at the later of the two, naming both. */
static void backoff_order(void)
{
    struct config cfg;
    char err[512];
    expect_error(BASE "[queue a]\nbackoff_max = 5s\npriority = 1\nbackoff_min = 10s\n", 8,
                 "[queue a]: backoff_min 10s is above backoff_max 5s");
    expect_error(BASE "[queue a]\nbackoff_min = 2s\nbackoff_max = 1500ms\n[queue b]\n", 7,
                 "backoff_min 2s is above backoff_max 1500ms");
    expect_error(BASE "[queue a]\n[queue b]\nbackoff_min = 20m\n", 7, /* the default max */
                 "[queue b]: backoff_min 20m is above backoff_max 10m");
    CHECK(load_text(BASE "[queue a]\nbackoff_min = 5s\nbackoff_max = 5s\n", NULL, 0, &cfg, err,
                    sizeof err) == 0);
    config_free(&cfg);
    const char *ov[] = {"queue a.backoff_max=1s"};
    CHECK(load_text(BASE "[queue a]\nbackoff_min = 5s\n", ov, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "backoff_min 5s is above backoff_max 1s");
}

/* '#' after a blank starts a comment, as ';' does, for every key; one right after a
 * character stays in the value. */
static void hash_comments(void)
{
    struct config cfg;
    char err[512];
    CHECK(load_text("# a whole-line comment\n[daemon] # the daemon\nsocket = /s # the socket\n"
                    "[zookeeper]\nhosts = h:2181\t# local\nauth = digest:u:p #secret\n"
                    "[queue a] ; inih's own\nttr = 5s # five seconds\npriority = 3 ; three\n",
                    NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(cfg.socket_path && strcmp(cfg.socket_path, "/s") == 0);
    CHECK(cfg.zk_hosts && strcmp(cfg.zk_hosts, "h:2181") == 0);
    CHECK(cfg.zk_auth && strcmp(cfg.zk_auth, "digest:u:p") == 0);
    CHECK(cfg.nqueues == 1 && cfg.queues[0]->ttr_ms == 5000 && cfg.queues[0]->priority == 3);
    config_free(&cfg);
    expect_error(BASE "root = /a#b\n[queue a]\n", 5, "'root': '/a#b'");
    expect_error(BASE "[queue a]\nttr = 5s#x\n", 6, "malformed duration '5s#x'");
}

/* [daemon] socket defaults to where deferctl and libdeferd look. */
static void default_socket(void)
{
    struct config cfg;
    char err[512];
    CHECK(load_text("[zookeeper]\nhosts = h:2181\n[queue a]\n", NULL, 0, &cfg, err,
                    sizeof err) == 0);
    CHECK(cfg.socket_path && strcmp(cfg.socket_path, "/run/deferd/deferd.sock") == 0);
    config_free(&cfg);
    CHECK(load_text(BASE "[queue a]\n", NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(cfg.socket_path && strcmp(cfg.socket_path, "/tmp/x.sock") == 0);
    config_free(&cfg);
}

/* Queue names up to 64 bytes: inih cuts section names at 49, keys must still reach theirs. */
static void long_queue_name(void)
{
    struct config cfg;
    char err[512];
    static const char name[] = "q123456789012345678901234567890123456789012345678901234567890123";
    CHECK(load_text(BASE "[queue q123456789012345678901234567890123456789012345678901234567890123]\n"
                    "priority = 5\n", NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(cfg.nqueues == 1 && strcmp(cfg.queues[0]->name, name) == 0);
    CHECK(cfg.queues[0]->priority == 5);
    config_free(&cfg);
}

/* producers/consumers rules: names resolved, ids taken as they are, bad entries refused. */
static void access_rules(void)
{
    struct access_list l = {0};
    char err[200];
    struct peer nobody = {.known = 1, .uid = 65534, .gid = 65534};
    struct peer other = {.known = 1, .uid = 1234, .gid = 99, .groups = {7}, .ngroups = 1};
    struct peer root = {.known = 1, .uid = 0, .gid = 0}, unknown = {0};
    CHECK(access_parse("user:nobody, gid:7", &l, err, sizeof err) == 0 && l.n == 2);
    CHECK(access_allows(&l, &nobody) && access_allows(&l, &other) && access_allows(&l, &root));
    CHECK(!access_allows(&l, &unknown));
    CHECK(access_parse("group:nogroup uid:1", &l, err, sizeof err) == 0 && l.n == 2);
    CHECK(access_allows(&l, &nobody) && !access_allows(&l, &other));
    CHECK(access_parse("user:no-such-user-xyz", &l, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "no such user");
    CHECK(l.n == 2); /* a refused value leaves the list as it was */
    CHECK(access_parse("nobody", &l, err, sizeof err) != 0);
    CHECK(access_parse("uid:-1", &l, err, sizeof err) != 0);
    CHECK(access_parse("", &l, err, sizeof err) == 0 && l.n == 0);
    CHECK(access_allows(&l, &unknown)); /* no rules: anyone */
    access_free(&l);
    expect_error(BASE "[queue a]\nproducers = group:no-such-group-xyz\n", 6, "no such group");
}

#define HASH "x/pDbNPXXtVwwGM+O0c2nBBJ0Lg=" /* any 28-character base64 SHA-1 */

static void acl(void)
{
    struct config cfg;
    char err[512] = "";
    CHECK(load_text(BASE "[queue a]\n", NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(cfg.zk_acl_mode == ZK_ACL_OPEN && cfg.nzk_acl == 0 && !cfg.zk_acl_text);
    config_free(&cfg);
    static const char *const creator[] = {"zookeeper.acl=creator", "zookeeper.auth=digest:u:p"};
    CHECK(load_text(BASE "[queue a]\n", creator, 2, &cfg, err, sizeof err) == 0);
    CHECK(cfg.zk_acl_mode == ZK_ACL_CREATOR);
    config_free(&cfg);
    CHECK(load_text(BASE "acl = digest:bob:" HASH ":cdrwa, world:anyone:r,ip:::1:ra\n[queue a]\n",
                    NULL, 0, &cfg, err, sizeof err) == 0);
    CHECK(cfg.zk_acl_mode == ZK_ACL_LIST && cfg.nzk_acl == 3);
    if (cfg.nzk_acl == 3) {
        CHECK_STR(cfg.zk_acl[0].scheme, "digest");
        CHECK_STR(cfg.zk_acl[0].id, "bob:" HASH);
        CHECK(cfg.zk_acl[0].perms == 31);
        CHECK_STR(cfg.zk_acl[1].id, "anyone");
        CHECK(cfg.zk_acl[1].perms == 1);
        CHECK_STR(cfg.zk_acl[2].id, "::1");
        CHECK(cfg.zk_acl[2].perms == 17);
    }
    config_free(&cfg);
    expect_error(BASE "acl = creator\n[queue a]\n", 3, "acl = creator needs auth");
    expect_error(BASE "acl = closed\n[queue a]\n", 5, "'closed' is not SCHEME:ID:PERMS");
    expect_error(BASE "acl = world:anyone:rx\n[queue a]\n", 5, "not distinct letters of cdrwa");
    expect_error(BASE "acl = world:anyone:rr\n[queue a]\n", 5, "not distinct letters");
    expect_error(BASE "acl = world:anyone:\n[queue a]\n", 5, "not SCHEME:ID:PERMS");
    expect_error(BASE "acl = world:all:r\n[queue a]\n", 5, "only id is anyone");
    expect_error(BASE "acl = world::r\n[queue a]\n", 5, "bad scheme or id");
    expect_error(BASE "acl = Digest:a:b:r\n[queue a]\n", 5, "bad scheme or id");
    expect_error(BASE "acl = digest:alice:secret:cdrwa\n[queue a]\n", 5, "not the password");
    expect_error(BASE "acl = world:anyone:r,\n[queue a]\n", 5, "'acl'");
    expect_error(BASE "acl = \n[queue a]\n", 5, "'acl'");
}

static void write_file(const char *file, const char *text, mode_t mode)
{
    FILE *f = fopen(file, "w");
    fputs(text, f);
    fclose(f);
    chmod(file, mode);
}

static void auth_file(void)
{
    char cred[] = "/tmp/deferd-test-cred-XXXXXX", ov[128], err[512] = "";
    struct config cfg;
    int fd = mkstemp(cred);
    CHECK(fd >= 0);
    close(fd);
    snprintf(ov, sizeof ov, "zookeeper.auth_file=%s", cred);
    const char *const ovs[] = {ov, "zookeeper.acl=creator"};
    write_file(cred, "digest:alice:secret\nignored\n", 0600);
    CHECK(load_text(BASE "[queue a]\n", ovs, 2, &cfg, err, sizeof err) == 0);
    CHECK_STR(cfg.zk_auth, "digest:alice:secret");
    char scheme[16];
    const char *c = config_auth(&cfg, scheme, sizeof scheme);
    CHECK(c && strcmp(c, "alice:secret") == 0 && strcmp(scheme, "digest") == 0);
    config_free(&cfg);
    static const mode_t loose[] = {0640, 0604, 0620, 0602};
    for (size_t i = 0; i < sizeof loose / sizeof loose[0]; i++) {
        chmod(cred, loose[i]);
        CHECK(load_text(BASE "[queue a]\n", ovs, 1, &cfg, err, sizeof err) != 0);
        CHECK_CONTAINS(err, cred);
        CHECK_CONTAINS(err, "accessible by group or others");
    }
    write_file(cred, "no colon here\n", 0600);
    CHECK(load_text(BASE "[queue a]\n", ovs, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "SCHEME:CREDENTIALS");
    const char *const both[] = {ov, "zookeeper.auth=digest:a:b"};
    write_file(cred, "digest:alice:secret\n", 0600);
    CHECK(load_text(BASE "[queue a]\n", both, 2, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "mutually exclusive");
    /* someone else's file: as root, give it away; otherwise root's own */
    if (geteuid() == 0)
        CHECK(chown(cred, 65534, 65534) == 0);
    else
        snprintf(ov, sizeof ov, "zookeeper.auth_file=/etc/hostname");
    CHECK(load_text(BASE "[queue a]\n", ovs, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "not owned by");
    unlink(cred);
    snprintf(ov, sizeof ov, "zookeeper.auth_file=%s", cred);
    CHECK(load_text(BASE "[queue a]\n", ovs, 1, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "cannot open");
}

/* [web] token_file: NAME:TOKEN lines, read at load like auth_file, every mistake named. */
static void web_tokens(void)
{
    config_read_web_tokens(1);
    char file[] = "/tmp/deferd-test-tokens-XXXXXX", ov[128], err[512] = "";
    struct config cfg;
    int fd = mkstemp(file);
    CHECK(fd >= 0);
    close(fd);
    snprintf(ov, sizeof ov, "web.token_file=%s", file);
    const char *const ovs[] = {ov, "web.actions=on"};
    write_file(file, "# who:token\nops:0123456789abcdef\n\nci:ABCDEFGHIJKLMNOP+/=~._-\n", 0600);
    CHECK(load_text(BASE "[queue a]\n", ovs, 2, &cfg, err, sizeof err) == 0);
    CHECK(cfg.web_actions == 1 && cfg.web_ntokens == 2);
    CHECK_STR(cfg.web_tokens[0].name, "ops");
    CHECK_STR(cfg.web_tokens[1].secret, "ABCDEFGHIJKLMNOP+/=~._-");
    config_free(&cfg);
    static const struct { const char *text, *why; } bad[] = {
        {"ops 0123456789abcdef\n", "line 1 is not NAME:TOKEN"},
        {"ops:short\n", "line 1 has a token shorter than 16"},
        {"op s:0123456789abcdef\n", "line 1 has a name with other characters"},
        {"ops:0123456789abcdef;x\n", "line 1 has a token with other characters"},
        {"a:0123456789abcdef\na:fedcba9876543210\n", "line 2 repeats a name"},
        {"# nothing\n", "holds no token"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(file, bad[i].text, 0600);
        CHECK(load_text(BASE "[queue a]\n", ovs, 2, &cfg, err, sizeof err) != 0);
        CHECK_CONTAINS(err, bad[i].why);
        CHECK_CONTAINS(err, file);
    }
    write_file(file, "ops:0123456789abcdef\n", 0640);
    CHECK(load_text(BASE "[queue a]\n", ovs, 2, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "accessible by group or others");
    expect_error(BASE "[queue a]\n[web]\nactions = on\n", 0, "actions = on needs token_file");
    expect_error(BASE "[queue a]\n[web]\nread_token = on\n", 0, "read_token = on needs");
    expect_error(BASE "[queue a]\n[web]\nactions = maybe\n", 7, "not on or off");
    /* deferctl, as another user: the file is not read, so it may be anyone's */
    config_read_web_tokens(0);
    write_file(file, "ops:0123456789abcdef\n", 0640);
    CHECK(load_text(BASE "[queue a]\n", ovs, 2, &cfg, err, sizeof err) == 0);
    CHECK(cfg.web_ntokens == 0);
    config_free(&cfg);
    unlink(file);
}

/* [schedule NAME]: what a daemon runs, and every mistake named at its line. */
static void schedules(void)
{
    struct config cfg;
    char err[512];
    CHECK(load_text(BASE "[queue r]\n[schedule nightly]\nqueue = r\ncron = 30 2 * * *\n"
                    "timezone = Europe/Berlin\npayload = go\n[schedule feeds]\nqueue = r\n"
                    "every = 5m\nanchor = 2026-01-01T00:00Z\noverlap = skip\n", NULL, 0, &cfg,
                    err, sizeof err) == 0);
    CHECK(cfg.nschedules == 2);
    const struct schedule_config *n = config_schedule(&cfg, "nightly");
    const struct schedule_config *f = config_schedule(&cfg, "feeds");
    CHECK(n && f && n->len == 2 && n->misfire == MISFIRE_ONCE && n->ahead_ms == 10000);
    CHECK(f && f->every_ms == 300000 && f->anchor_ms == 1767225600000ULL && f->ahead_ms == 250);
    config_free(&cfg);
    static const char *const ov[] = {"schedule.x.queue=r", "schedule.x.every=1s"};
    CHECK(load_text(BASE "[queue r]\n", ov, 2, &cfg, err, sizeof err) == 0);
    CHECK(cfg.nschedules == 1 && config_schedule(&cfg, "x")->every_ms == 1000);
    config_free(&cfg);
    expect_error(BASE "[queue r]\n[schedule s]\nqueue = r\n", 6, "exactly one of cron");
    expect_error(BASE "[queue r]\n[schedule s]\nqueue = r\ncron = * * *\n", 8, "'cron':");
    expect_error(BASE "[queue r]\n[schedule s]\nqueue = q\nevery = 1s\n", 6,
                 "no [queue q] is configured");
    expect_error(BASE "[queue r]\n[schedule s]\nqueue = r\ncron = 0 3 * * *\n"
                 "timezone = Mars/Base\n", 9, "'timezone':");
    expect_error(BASE "[queue r]\n[schedule s]\nqueue = r\nevery = 1s\ntimezone = UTC\n", 6,
                 "timezone applies to cron only");
    expect_error(BASE "[queue r]\n[schedule s]\nqueue = r\nevery = 1s\noverlap = skip\n"
                 "ahead = 800ms\n", 6, "at most half the interval");
    expect_error(BASE "[queue r]\n[schedule _s]\n", 6, "bad schedule name");
    expect_error(BASE "[queue r]\n[schedule s]\nqueue = r\nmisfire = twice\n", 8,
                 "not skip, once or all");
    expect_error(BASE "[queue r]\n[schedule s]\nqueue = r\nmisfir = once\n", 8,
                 "did you mean 'misfire'?");
    expect_error(BASE "[queue r]\n[schedule s]\nqueue = r\npayload_file = /nonexistent\n", 8,
                 "'payload_file': /nonexistent");
}

int main(void)
{
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    sample();
    sample_schedule();
    schedules();
    curator_queue();
    concurrency();
    overrides();
    queue_overrides();
    connect_string();
    metrics_listen();
    logging();
    clock_keys();
    hold_writes();
    default_socket();
    unknown_keys();
    ranges();
    backoff_order();
    hash_comments();
    long_queue_name();
    access_rules();
    acl();
    auth_file();
    web_tokens();
    expect_error(BASE "[queue a]\n[daemon]\nlog_target = file\n", 7, "not stderr or syslog");
    expect_error(BASE "[queue a]\n[daemon]\nlog_facility = local8\n", 7,
                 "not daemon or local0 .. local7");
    expect_error(BASE "[queue a]\n[daemon]\nlog_facility = user\n", 7, "'log_facility'");
    expect_error(BASE "[queue a]\n[daemon]\nlog_timestamps = maybe\n", 7,
                 "not auto, yes or no");
    expect_error(BASE "[queue a]\n[bogus]\n", 6, "unknown section [bogus]");
    expect_error(BASE "[queue a]\ncolour = red\n", 6, "unknown key 'colour'");
    expect_error("[daemon]\nsocket = /s\nlookahead = 5 s\n", 3, "malformed duration");
    expect_error("[daemon]\ndrain_grace = 2h\n", 2, "drain_grace");
    expect_error(BASE "[queue a]\npriority = high\n", 6,
                 "'priority': 'high' is not a number from 0 to 4294967295");
    expect_error(BASE "[queue a]\nmax_attempts = 0\n", 6, "max_attempts");
    expect_error("[daemon]\nsocket = /s\n[zookeeper]\nroot = /x\n[queue a]\n", 3,
                 "missing required key 'hosts'");
    expect_error(BASE, 0, "missing section [queue NAME]: at least one queue is needed");
    expect_error("[daemon]\nsocket = /s\n[queue a]\n", 0,
                 "missing section [zookeeper] (it needs hosts = HOST:PORT,...)");
    expect_error(BASE "[queue a]\n[queue a]\n", 6, "duplicate section");
    expect_error(BASE "[queue a]\npriority = 1\npriority = 2\n", 7, "duplicate key");
    expect_error(BASE "[queue a b]\n", 5, "bad queue name");
    expect_error(BASE "[queue a]\n[daemon]\nmax_payload = 2MiB\n", 7, "max_payload");
    expect_error("socket = /s\n" BASE, 1, "outside of any section");
    expect_error(BASE "[queue a]\nthis is not a pair\n", 6, "syntax error");
    expect_error(BASE "[queue a]\n[zookeeper]\nroot = deferd/\n", 7, "'root'");
    expect_error(BASE "[queue a]\n[daemon]\nsocket_mode = 999\n", 7, "octal");
    expect_error(BASE "[queue a]\n[daemon]\nlog_level = loud\n", 7, "log_level");
    expect_error(BASE "[queue a]\nformat = kafka\n", 6, "not native, curator-delay");
    expect_error(BASE "[queue a]\nrate = 5\n", 6, "'rate': '5' is not N/s, N/m or N/h");
    expect_error(BASE "[queue a]\nrate = 0/s\n", 6, "'rate': '0/s' is not N/s");
    expect_error(BASE "[queue a]\nrate = 10001/s\n", 6, "with N from 1 to 10000");
    expect_error(BASE "[queue a]\nrate = 5/d\n", 6, "'rate': '5/d'");
    expect_error(BASE "[queue a]\ngroup_rate = 1/x\n", 6, "'group_rate': '1/x' is not N/s");
    expect_error(BASE "[queue a]\nformat = curator-delay\ncurator_path = /q\ngroup_rate = 4/s\n",
                 8, "concurrency and rate apply to deferd's own queues only");
    expect_error(BASE "[queue a]\nformat = curator-delay\ncurator_path = /q\nrate = 4/s\n", 8,
                 "concurrency and rate apply to deferd's own queues only");
    expect_error(BASE "[queue a]\ngroup_weights = vip\n", 6, "'vip' is not GROUP:WEIGHT");
    expect_error(BASE "[queue a]\ngroup_weights = vip:0\n", 6, "weight of vip must be 1..1000");
    expect_error(BASE "[queue a]\ngroup_weights = a:1 a:2\n", 6, "group a given twice");
    expect_error(BASE "[queue a]\ngroup_weights = -x:1\n", 6, "bad group '-x'");
    expect_error(BASE "[queue a]\nconcurrency = 10001\n", 6,
                 "'concurrency': '10001' is not a number from 0 to 10000");
    expect_error(BASE "[queue a]\nconcurrency = some\n", 6, "'concurrency'");
    expect_error(BASE "[queue a]\nformat = curator-delay\ncurator_path = /q\nconcurrency = 4\n",
                 8, "concurrency and rate apply to deferd's own queues only");
    expect_error(BASE "[queue a]\ncurator_corrupt = maybe\n", 6, "not skip or delete");
    expect_error(BASE "[queue a]\nformat = curator-delay\ncurator_path = /q\n"
                 "[queue b]\nformat = curator-priority\ncurator_path = /q\n", 8,
                 "already the path of queue a");
    expect_error(BASE "[queue a]\ncurator_path = rel/path\n", 6, "absolute znode path");
    expect_error(BASE "[queue a]\ncurator_path = /q\n", 5, "need format = curator");
    expect_error(BASE "[queue a]\nformat = curator-delay\n", 5, "key 'curator_path'");
    expect_error(BASE "[queue a]\nformat = curator-priority\ncurator_path = /q\n"
                 "curator_lock_path = /q/locks\n", 5, "must not be curator_path or inside");
    expect_error(BASE "[queue a\n", 5, "without ']'");
    struct config cfg;
    char err[512];
    CHECK(config_load("/nonexistent/deferd.ini", NULL, 0, &cfg, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "/nonexistent/deferd.ini: cannot open");
    unlink(path);
    return check_report("config");
}
