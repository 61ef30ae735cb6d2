/* Metrics: puts, deliveries, acks, nacks, an expired lease, a dead letter and a refused put
 * against a real daemon, then GET /metrics scraped over TCP and parsed: exact counters per
 * queue, lateness histogram counts and cumulative buckets, session state; other paths and
 * methods refused; STATS QUEUE through the library and deferctl stats --json. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "httpget.h"

static struct daemon_proc d;
static char root[128];
static int port;

static char *scrape(void)
{
    char *body = NULL, ctype[128] = "";
    int status = http_request(port, "GET", "/metrics", 10000, &body, ctype, sizeof ctype);
    CHECK(status == 200);
    CHECK_STR(ctype, "text/plain; version=0.0.4; charset=utf-8");
    if (!body)
        body = strdup("");
    return body;
}

/* The value of SERIES ("name{labels}" exactly as written), or -1 when absent. */
static double value(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, series, n) == 0 && l[n] == ' ')
            return strtod(l + n + 1, NULL);
    return -1;
}

#define CHECK_VALUE(text, series, want)                                                    \
    do {                                                                                   \
        double got_ = value((text), (series));                                             \
        CHECK(got_ == (want));                                                             \
        if (got_ != (want))                                                                \
            fprintf(stderr, "  %s is %g, want %g\n", (series), got_, (double)(want));      \
    } while (0)

/* Buckets of one histogram series rise (cumulative) and end at +Inf with _count. */
static void check_buckets(const char *text, const char *name, const char *labels)
{
    char prefix[256], count[256];
    snprintf(prefix, sizeof prefix, "%s_bucket{%s,le=\"", name, labels);
    snprintf(count, sizeof count, "%s_count{%s}", name, labels);
    double last = -1, inf = -1;
    int buckets = 0;
    for (const char *l = strstr(text, prefix); l; l = strstr(l + 1, prefix)) {
        const char *sp = strchr(l, ' ');
        double v = sp ? strtod(sp + 1, NULL) : -1;
        CHECK(v >= last);
        last = v;
        buckets++;
        if (strncmp(l + strlen(prefix), "+Inf\"", 5) == 0)
            inf = v;
    }
    CHECK(buckets >= 10);
    CHECK(inf == value(text, count) && inf == last);
}

static deferd_event next_job(deferd_client *c)
{
    deferd_event ev;
    memset(&ev, 0, sizeof ev);
    int rc = deferd_next_event(c, &ev, 10000);
    CHECK(rc == DEFERD_OK && ev.kind == DEFERD_EV_JOB);
    return ev;
}

/* emails: 3 puts, 3 deliveries, 2 acks, a nack with delay 0 (moved: due again now), its
 * redelivery (attempt 2, lateness observed) acked. */
static void emails(deferd_client *prod, deferd_client *cons)
{
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < 3; i++)
        CHECK(put_job(prod, "emails", "hello", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(cons, "emails", 10) == DEFERD_OK);
    char ids[3][DEFERD_ID_SIZE];
    for (int i = 0; i < 3; i++) {
        deferd_event ev = next_job(cons);
        snprintf(ids[i], sizeof ids[i], "%s", ev.job.id);
        CHECK(ev.job.attempt == 1);
        deferd_job_clear(&ev.job);
    }
    CHECK(deferd_ack(cons, ids[0]) == DEFERD_OK);
    CHECK(deferd_ack(cons, ids[1]) == DEFERD_OK);
    CHECK(deferd_nack(cons, ids[2], 0) == DEFERD_OK);
    deferd_event ev = next_job(cons);
    CHECK(ev.job.attempt == 2);
    CHECK(deferd_ack(cons, ev.job.id) == DEFERD_OK);
    deferd_job_clear(&ev.job);
}

/* b: a 1 s lease runs out; the release delivers it again (attempt 2) with its old due time,
 * which the lateness histogram leaves out. */
static void expiry(deferd_client *prod, deferd_client *cons)
{
    char id[DEFERD_ID_SIZE];
    deferd_put_opts o = {.has_ttr = 1, .ttr_ms = 1000};
    CHECK(deferd_put(prod, "b", "slow", 4, &o, id, sizeof id) == DEFERD_OK);
    CHECK(deferd_subscribe(cons, "b", 1) == DEFERD_OK);
    deferd_event ev = next_job(cons);
    deferd_job_clear(&ev.job);
    int expired = 0;
    int64_t deadline = now_ms() + 10000;
    while (!expired && now_ms() < deadline) {
        memset(&ev, 0, sizeof ev);
        if (deferd_next_event(cons, &ev, 1000) == DEFERD_OK)
            expired = ev.kind == DEFERD_EV_EXPIRED;
        deferd_job_clear(&ev.job);
    }
    CHECK(expired);
    CHECK(deferd_ack(cons, id) == DEFERD_ESERVER); /* answered: its slot is free again */
    CHECK_STR(deferd_last_error_code(cons), "LEASE_LOST");
    ev = next_job(cons);
    CHECK(ev.job.attempt == 2);
    CHECK(deferd_ack(cons, ev.job.id) == DEFERD_OK);
    deferd_job_clear(&ev.job);
}

/* limited (max_attempts 1, max_pending 5): a nack dead-letters; then delayed puts until the
 * first QUEUE_FULL. Returns the puts that succeeded. */
static int limited(deferd_client *prod, deferd_client *cons)
{
    char id[DEFERD_ID_SIZE];
    CHECK(put_job(prod, "limited", "doomed", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(cons, "limited", 1) == DEFERD_OK);
    deferd_event ev = next_job(cons);
    CHECK(deferd_nack(cons, ev.job.id, -1) == DEFERD_OK);
    deferd_job_clear(&ev.job);
    int ok = 1, full = 0;
    deferd_put_opts o = {.has_delay = 1, .delay_ms = 3600000};
    for (int i = 0; i < 40 && !full; i++) {
        int rc = deferd_put(prod, "limited", "later", 5, &o, id, sizeof id);
        ok += rc == DEFERD_OK;
        full = rc == DEFERD_ESERVER && strcmp(deferd_last_error_code(prod), "QUEUE_FULL") == 0;
        if (!full && i >= 5)
            usleep(100000); /* the cluster-wide count is summed once a second */
    }
    CHECK(full);
    return ok;
}

static void check_exposition(const char *m, int limited_puts)
{
    CHECK_CONTAINS(m, "# TYPE deferd_jobs_acked_total counter\n");
    CHECK_CONTAINS(m, "# TYPE deferd_delivery_lateness_seconds histogram\n");
    CHECK_CONTAINS(m, "deferd_build_info{version=\"");
    CHECK_VALUE(m, "deferd_jobs_put_total{queue=\"emails\"}", 3);
    CHECK_VALUE(m, "deferd_jobs_delivered_total{queue=\"emails\",redelivery=\"false\"}", 3);
    CHECK_VALUE(m, "deferd_jobs_delivered_total{queue=\"emails\",redelivery=\"true\"}", 1);
    CHECK_VALUE(m, "deferd_jobs_acked_total{queue=\"emails\"}", 3);
    CHECK_VALUE(m, "deferd_jobs_nacked_total{queue=\"emails\"}", 1);
    CHECK_VALUE(m, "deferd_jobs_expired_total{queue=\"emails\"}", 0);
    CHECK_VALUE(m, "deferd_delivery_lateness_seconds_count{queue=\"emails\"}", 4);
    CHECK_VALUE(m, "deferd_jobs_inflight{queue=\"emails\"}", 0);
    CHECK_VALUE(m, "deferd_consumers{queue=\"emails\"}", 1);
    CHECK_VALUE(m, "deferd_jobs_put_total{queue=\"b\"}", 1);
    CHECK_VALUE(m, "deferd_jobs_expired_total{queue=\"b\"}", 1);
    CHECK_VALUE(m, "deferd_jobs_delivered_total{queue=\"b\",redelivery=\"true\"}", 1);
    CHECK_VALUE(m, "deferd_jobs_acked_total{queue=\"b\"}", 1);
    CHECK_VALUE(m, "deferd_delivery_lateness_seconds_count{queue=\"b\"}", 1);
    CHECK_VALUE(m, "deferd_jobs_put_total{queue=\"limited\"}", limited_puts);
    CHECK_VALUE(m, "deferd_jobs_nacked_total{queue=\"limited\"}", 1);
    CHECK_VALUE(m, "deferd_jobs_dead_lettered_total{queue=\"limited\"}", 1);
    CHECK_VALUE(m, "deferd_puts_refused_total{queue=\"limited\",reason=\"queue_full\"}", 1);
    CHECK_VALUE(m, "deferd_jobs_mirrored{queue=\"limited\"}", 0); /* due in an hour */
    /* the old name stays as an alias of the same value */
    CHECK_CONTAINS(m, "# TYPE deferd_jobs_mirrored gauge\n");
    CHECK_CONTAINS(m, "# TYPE deferd_jobs_pending gauge\n");
    static const char *const qs[] = {"emails", "b", "limited", "a"};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        char mirrored[96], pending[96];
        snprintf(mirrored, sizeof mirrored, "deferd_jobs_mirrored{queue=\"%s\"}", qs[i]);
        snprintf(pending, sizeof pending, "deferd_jobs_pending{queue=\"%s\"}", qs[i]);
        CHECK(value(m, mirrored) >= 0 && value(m, mirrored) == value(m, pending));
    }
    CHECK_VALUE(m, "deferd_jobs_put_total{queue=\"a\"}", 0);
    CHECK_VALUE(m, "deferd_zookeeper_state{state=\"connected\"}", 1);
    CHECK_VALUE(m, "deferd_zookeeper_state{state=\"suspended\"}", 0);
    CHECK_VALUE(m, "deferd_zookeeper_transitions_total{to=\"connected\"}", 1);
    CHECK_VALUE(m, "deferd_zookeeper_transitions_total{to=\"lost\"}", 0);
    CHECK(value(m, "deferd_zookeeper_request_seconds_count{op=\"multi\"}") >= 10);
    CHECK(value(m, "deferd_zookeeper_request_seconds_count{op=\"children\"}") >= 1);
    check_buckets(m, "deferd_delivery_lateness_seconds", "queue=\"emails\"");
    check_buckets(m, "deferd_zookeeper_request_seconds", "op=\"multi\"");
}

static void http_refusals(void)
{
    char *body = NULL;
    CHECK(http_request(port, "GET", "/", 10000, &body, NULL, 0) == 404);
    free(body);
    CHECK(http_request(port, "GET", "/metrics/x", 10000, &body, NULL, 0) == 404);
    free(body);
    CHECK(http_request(port, "POST", "/metrics", 10000, &body, NULL, 0) == 405);
    free(body);
    CHECK(http_request(port, "HEAD", "/metrics", 10000, &body, NULL, 0) == 200);
    CHECK(body && *body == '\0');
    free(body);
}

static void stats_queue(deferd_client *c)
{
    char buf[4096];
    CHECK(deferd_stats_queue(c, "emails", buf, sizeof buf) == DEFERD_OK);
    printf("STATS emails: %s\n", buf);
    CHECK_CONTAINS(buf, "queue=emails put=3 delivered=4 redelivered=1 acked=3 nacked=1 ");
    CHECK_CONTAINS(buf, " consumers=1 ");
    CHECK_CONTAINS(buf, " lateness_samples=4 lateness_p50_ms=");
    CHECK_CONTAINS(buf, " zk_state=CONNECTED");
    CHECK(deferd_stats_queue(c, "nope", buf, sizeof buf) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(c), "UNKNOWN_QUEUE");
    CHECK(deferd_stats(c, buf, sizeof buf) == DEFERD_OK); /* plain STATS as before */
    CHECK_CONTAINS(buf, "zk_state=CONNECTED");
    CHECK_CONTAINS(buf, "jobs_known=");
}

/* deferctl's output, whole. */
static char *stats_of(const char *config, const char *args)
{
    char cmd[1024];
    static char out[8192];
    snprintf(cmd, sizeof cmd, "%s -s %s -c %s stats %s", getenv("DEFERCTL_BIN"), d.sock,
             config, args);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && pclose(p) == 0);
    return out;
}

/* The number after "KEY": in a JSON object, or -1 (null or absent: -2). */
static double json_num(const char *json, const char *key)
{
    char k[128];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *at = strstr(json, k);
    if (!at)
        return -1;
    at += strlen(k);
    return strncmp(at, "null", 4) == 0 ? -2 : strtod(at, NULL);
}

static void deferctl_stats(void)
{
    char cfg[400];
    snprintf(cfg, sizeof cfg, "%s/deferd.ini", d.dir);
    char *j = stats_of(cfg, "emails --json");
    printf("deferctl stats emails --json: %s", j);
    CHECK(j[0] == '{' && strstr(j, "}\n"));
    CHECK_CONTAINS(j, "\"queue\":\"emails\"");
    CHECK_CONTAINS(j, "\"zk_state\":\"CONNECTED\"");
    CHECK(json_num(j, "acked") == 3 && json_num(j, "delivered") == 4);
    CHECK(json_num(j, "lateness_samples") == 4 && json_num(j, "lateness_p99_ms") >= 0);
    CHECK(json_num(j, "dead_letters") == 0);
    j = stats_of(cfg, "limited --json");
    CHECK(json_num(j, "dead_lettered") == 1 && json_num(j, "dead_letters") == 1);
    j = stats_of("/nonexistent/deferd.ini", "--json limited");
    CHECK(json_num(j, "dead_letters") == -2);
    CHECK_CONTAINS(j, "\"dead_letters_error\":\"/nonexistent/deferd.ini: cannot open");
    j = stats_of("/nonexistent/deferd.ini", "emails");
    CHECK_CONTAINS(j, "\nacked                  3\n");
    CHECK_CONTAINS(j, "\ndead_letters           unknown: ");
    j = stats_of(cfg, "--json");
    CHECK(json_num(j, "jobs_known") >= 0 && !strstr(j, "dead_letters"));
}

int main(void)
{
    harness_init("metrics", root, sizeof root);
    const char *ov[] = {"metrics.listen=127.0.0.1:0", NULL};
    CHECK(daemon_start(&d, root, "metrics", ov) == 0);
    port = metrics_port_in_log(d.log);
    CHECK(port > 0);
    if (port > 0) {
        deferd_client *prod = client(&d), *c1 = client(&d), *c2 = client(&d),
                      *c3 = client(&d);
        emails(prod, c1);
        expiry(prod, c2);
        int puts = limited(prod, c3);
        char *m = scrape();
        check_exposition(m, puts);
        free(m);
        http_refusals();
        stats_queue(prod);
        deferctl_stats();
        deferd_close(prod);
        deferd_close(c1);
        deferd_close(c2);
        deferd_close(c3);
    }
    daemon_kill(&d, SIGTERM);
    return check_report("it_metrics");
}
