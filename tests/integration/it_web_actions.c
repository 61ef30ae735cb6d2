/* The dashboard's queue, job and dead-letter pages and its actions (docs/web.md), in a
 * real browser and over the API. Chromium, driven over the DevTools protocol by
 * browser.py, opens queue b's page and finds a job by its id with the page's form; the
 * job's payload is a <script> (and an <img onerror>) that must show as text and never run;
 * a pause without a token, and with the cookie but a wrong or missing CSRF value, changes
 * nothing; signed in, the page's buttons pause and resume the queue and kick a dead letter
 * back. What the clicks did is then checked in ZooKeeper through deferctl, the log and the
 * counters. The API: a Bearer token acts, a wrong one is refused; read_token = on keeps
 * the pages from anyone without one. Skipped (77) only when no chromium binary exists. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "httpget.h"

#define TOKEN "s3cret-token-0123456789abcdef"
#define SCRIPT_PAYLOAD "<script>window.__pwned=1;document.title='pwned'</script>" \
                       "<img src=x onerror=\"window.__pwned=2\">"

static struct daemon_proc d;
static char root[128], dir[] = "/tmp/deferd-webact-XXXXXX", tokens[200], tokopt[256];
static int port;

static int write_tokens(void)
{
    snprintf(tokens, sizeof tokens, "%s/tokens", dir);
    int fd = open(tokens, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const char text[] = "# who:token\nops:" TOKEN "\n";
    int ok = fd >= 0 && write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1);
    if (fd >= 0)
        close(fd);
    snprintf(tokopt, sizeof tokopt, "web.token_file=%s", tokens);
    return ok ? 0 : -1;
}

/* A POST to the API; the status. */
static int post(const char *path, const char *auth, const char *form)
{
    char *body = NULL, hdr[256] = "";
    if (auth)
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\n", auth);
    int st = http_send(port, "POST", path, hdr, form ? form : "", 10000, &body, NULL, 0);
    free(body);
    return st;
}

static int get_status(const char *path, const char *auth, char **body)
{
    char hdr[256] = "";
    if (auth)
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\n", auth);
    return http_send(port, "GET", path, hdr, NULL, 10000, body, NULL, 0);
}

/* The value after "KEY": in the browser's JSON answer (a number, true/false, or a
 * quoted string without its quotes) into OUT. */
static void field(const char *json, const char *key, char *out, size_t len)
{
    char k[96];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *at = strstr(json, k);
    out[0] = '\0';
    if (!at)
        return;
    at += strlen(k);
    if (*at == '"')
        snprintf(out, len, "%.*s", (int)strcspn(at + 1, "\""), at + 1);
    else
        snprintf(out, len, "%.*s", (int)strcspn(at, ",}"), at);
}

static int is(const char *json, const char *key, const char *want)
{
    char got[512];
    field(json, key, got, sizeof got);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "browser: %s is '%s', expected '%s'\n", key, got, want);
    return strcmp(got, want) == 0;
}

static void api(const char *job)
{
    char path[400], *body = NULL;
    CHECK(post("/api/v1/queues/b/pause", NULL, NULL) == 401);
    CHECK(post("/api/v1/queues/b/pause", "wrong-token-0123456789", NULL) == 401);
    CHECK(post("/api/v1/queues/nosuch/pause", TOKEN, NULL) == 400);
    CHECK(post("/api/v1/queues/b/dead/delete-all", TOKEN, NULL) == 400); /* no confirm=yes */
    CHECK(post("/api/v1/job/reschedule", TOKEN, "id=b/nonsense&due=now") == 400);
    CHECK(stats_has(&d, "paused.b=1") == 0);
    CHECK(post("/api/v1/queues/b/pause", TOKEN, NULL) == 200);
    CHECK(wait_stats(&d, "paused.b=1", 1));
    CHECK(post("/api/v1/queues/b/resume", TOKEN, NULL) == 200);
    CHECK(wait_stats(&d, "paused.b=1", 0));
    snprintf(path, sizeof path, "/api/v1/job?id=%s", job);
    CHECK(get_status(path, NULL, &body) == 200);
    CHECK(body && strstr(body, "\"payload\":\"<script>window.__pwned=1;") != NULL);
    free(body);
    CHECK(get_status("/api/v1/queues/b/jobs?limit=2", NULL, &body) == 200);
    CHECK(body && strstr(body, "\"next_after\":\"b/") != NULL); /* 4 jobs: another page */
    free(body);
    CHECK(get_status("/api/v1/queues/b/jobs?limit=0", NULL, &body) == 400);
    free(body);
    CHECK(get_status("/api/v1/job?id=b/0000000000000-x", NULL, &body) == 400);
    free(body);
}

static void browser(const char *bin, const char *job, char *out, size_t len)
{
    char cmd[2048], shots[300], cwd[200], profile[300], res[300];
    mkdir("web-screens", 0755);
    snprintf(shots, sizeof shots, "%s/web-screens", getcwd(cwd, sizeof cwd));
    snprintf(profile, sizeof profile, "%s/profile", dir);
    snprintf(res, sizeof res, "%s/browser.json", dir);
    mkdir(profile, 0700);
    snprintf(cmd, sizeof cmd, "timeout 180 python3 '%s' '%s' 'http://127.0.0.1:%d' '%s' '%s' b "
             "'%s' '%s' > '%s'", getenv("DEFERD_BROWSER_PY"), bin, port, TOKEN, job, shots,
             profile, res);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(res, "r");
    size_t n = f ? fread(out, 1, len - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    printf("browser: %s", out);
}

static void check_browser(const char *r, const char *dead_before)
{
    char kicked[256], cmd_out[4096];
    CHECK(strstr(r, "\"error\"") == NULL);
    CHECK(is(r, "queue_lists_job", "true"));
    CHECK(is(r, "pause_offered_before_login", "false"));
    /* the census's timeline: next hour, day, 30 days (the dead letter is not pending) */
    CHECK(is(r, "charts", "1 4 4"));
    /* the payload as the page's text, exactly (JSON escapes only its quotes) */
    CHECK(strstr(r, "\"payload_text\": \"<script>window.__pwned=1;document.title='pwned'"
                    "</script><img src=x onerror=\\\"window.__pwned=2\\\">\"") != NULL);
    CHECK(is(r, "payload_elements", "0")); /* text, not elements */
    CHECK(is(r, "pwned", "null"));         /* neither the script nor the onerror ran */
    CHECK(strstr(r, "\"title\": \"pwned\"") == NULL);
    CHECK(is(r, "no_token_status", "401"));
    CHECK(is(r, "after_login_path", "/ui/"));
    CHECK(is(r, "wrong_csrf_status", "403"));
    CHECK(is(r, "no_csrf_status", "403"));
    CHECK(is(r, "paused_after_forgeries", "0"));
    CHECK(is(r, "paused_after_pause", "true"));
    CHECK(is(r, "badge_after_pause", "true"));
    CHECK(is(r, "resumed", "true"));
    CHECK(is(r, "dead_rows_before", "2"));
    CHECK(is(r, "dead_rows_after", "1"));
    CHECK(is(r, "after_kick_path", "/ui/queues/b/dead"));
    field(r, "kicked_id", kicked, sizeof kicked);
    CHECK_STR(kicked, dead_before);
    /* in ZooKeeper: the kicked letter is no longer dead, and its job is back in the queue
     * (a new id: the same uid) */
    CHECK(run_deferctl(&d, "dead list b", cmd_out, sizeof cmd_out) == 0);
    if (strstr(cmd_out, dead_before))
        fprintf(stderr, "kicked %s; deferctl dead list b: %s\n", dead_before, cmd_out);
    CHECK(strstr(cmd_out, dead_before) == NULL);
    char uid[64] = "?"; /* b/<due>-<priority>-<uid>-a<attempts> */
    CHECK(sscanf(dead_before, "b/%*[0-9]-%*[0-9]-%16[0-9a-f]", uid) == 1);
    CHECK(run_deferctl(&d, "list b", cmd_out, sizeof cmd_out) == 0);
    CHECK(strstr(cmd_out, uid) != NULL);
    CHECK(stats_has(&d, "paused.b=1") == 0);
}

static void check_counted(void)
{
    CHECK(metric_in_log(d.log, "deferd_web_actions_total{action=\"pause\",result=\"ok\"}") == 3);
    CHECK(metric_in_log(d.log, "deferd_web_actions_total{action=\"resume\",result=\"ok\"}") == 4);
    CHECK(metric_in_log(d.log, "deferd_web_actions_total{action=\"delete\",result=\"ok\"}") == 1);
    CHECK(metric_in_log(d.log, "deferd_web_actions_total{action=\"kick\",result=\"ok\"}") == 1);
    CHECK(metric_in_log(d.log, "deferd_web_actions_total{action=\"login\",result=\"ok\"}") == 2);
    CHECK(metric_in_log(d.log, "deferd_web_actions_total{action=\"login\",result=\"refused\"}") ==
          1);
    /* API: none, wrong token, no such queue; session: same-site, other origin; browser: no
     * token, wrong and no CSRF */
    CHECK(metric_in_log(d.log, "deferd_web_actions_total{action=\"pause\",result=\"refused\"}") ==
          8);
    CHECK(log_count(&d, 0, ": b: done") == 6); /* "web: pause by ops from 127.0.0.1:PORT: b: done" */
    CHECK(log_count(&d, 0, "web: kick by ops from 127.0.0.1:") == 1);
}

/* A browser's session as a script plays it: sign in, read the CSRF value of a page, then
 * forms that come from elsewhere are refused, one from this origin acts; after sign-out the
 * cookie acts no more. Host names that are not loopback are refused (DNS rebinding). */
static void session(void)
{
    char hdrs[4096], cookie[160], hdr[600], form[200], *body = NULL, *at;
    CHECK(http_send(port, "POST", "/ui/login", "Origin: http://evil.example\r\n",
                    "token=" TOKEN, 10000, &body, NULL, 0) == 401); /* posted from elsewhere */
    free(body);
    CHECK(http_send(port, "POST", "/ui/login", "Sec-Fetch-Site: same-origin\r\n",
                    "token=" TOKEN, 10000, &body, hdrs, sizeof hdrs) == 303);
    free(body);
    at = strstr(hdrs, "Set-Cookie: deferd_session=");
    CHECK(at != NULL && strstr(hdrs, TOKEN) == NULL); /* the cookie is not the token */
    if (!at)
        return;
    snprintf(cookie, sizeof cookie, "Cookie: %.*s\r\n", (int)strcspn(at + 12, ";\r"), at + 12);
    CHECK(http_send(port, "GET", "/ui/queues/b", cookie, NULL, 10000, &body, NULL, 0) == 200);
    at = body ? strstr(body, "name=\"csrf\" value=\"") : NULL;
    CHECK(at != NULL);
    snprintf(form, sizeof form, "csrf=%.32s", at ? at + 19 : "");
    free(body);
    snprintf(hdr, sizeof hdr, "%sSec-Fetch-Site: same-site\r\n", cookie); /* another port */
    CHECK(http_send(port, "POST", "/ui/queues/b/pause", hdr, form, 10000, &body, NULL, 0) == 403);
    free(body);
    snprintf(hdr, sizeof hdr, "%sOrigin: http://127.0.0.1:1\r\n", cookie);
    CHECK(http_send(port, "POST", "/ui/queues/b/pause", hdr, form, 10000, &body, NULL, 0) == 403);
    free(body);
    CHECK(stats_has(&d, "paused.b=1") == 0); /* neither acted */
    snprintf(hdr, sizeof hdr, "%sSec-Fetch-Site: same-origin\r\n", cookie);
    CHECK(http_send(port, "POST", "/ui/queues/b/pause", hdr, form, 10000, &body, NULL, 0) == 303);
    free(body);
    CHECK(wait_stats(&d, "paused.b=1", 1));
    snprintf(hdr, sizeof hdr, "%sSec-Fetch-Site: same-site\r\n", cookie);
    CHECK(http_send(port, "POST", "/ui/logout", hdr, "", 10000, &body, NULL, 0) == 303);
    free(body); /* from another port: the session goes on */
    snprintf(hdr, sizeof hdr, "%sSec-Fetch-Site: same-origin\r\n", cookie);
    CHECK(http_send(port, "POST", "/ui/queues/b/resume", hdr, form, 10000, &body, NULL, 0) ==
          303);
    free(body);
    CHECK(wait_stats(&d, "paused.b=1", 0));
    CHECK(http_send(port, "POST", "/ui/logout", hdr, "", 10000, &body, NULL, 0) == 303);
    free(body);
    CHECK(http_send(port, "POST", "/ui/queues/b/resume", hdr, form, 10000, &body, NULL, 0) ==
          401); /* the session ended */
    free(body);
    CHECK(post("/api/v1/queues/b/resume", TOKEN, NULL) == 200); /* no change: still ok */
    CHECK(http_send(port, "GET", "/api/v1/overview", "Host: evil.example\r\n", NULL, 10000,
                    &body, NULL, 0) == 403);
    free(body);
    static const char *const fine[] = {"localhost", "LocalHost:9464", "127.0.0.1:1", "[::1]",
                                        "10.1.2.3:80"};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        snprintf(hdr, sizeof hdr, "Host: %s\r\n", fine[i]);
        CHECK(http_send(port, "GET", "/api/v1/overview", hdr, NULL, 10000, &body, NULL, 0) ==
              200);
        free(body);
    }
    CHECK(http_send(port, "GET", "/api/v1/overview", "Host: 127.0.0.1.evil.example\r\n", NULL,
                    10000, &body, NULL, 0) == 403);
    free(body);
}

/* The dead letters a page at a time, while they go: L1 and L2 on the first page of two;
 * L2 deleted; the page after L2 is L3 alone (from the start it would be L1 again). */
static void dead_pages(void)
{
    char *body = NULL, second[256] = "", path[400], form[300];
    CHECK(get_status("/api/v1/queues/b/dead?limit=2", NULL, &body) == 200);
    const char *at = body ? strstr(body, "\"next_after\":\"") : NULL;
    CHECK(at != NULL);
    if (at)
        snprintf(second, sizeof second, "%.*s", (int)strcspn(at + 14, "\""), at + 14);
    free(body);
    snprintf(form, sizeof form, "id=%s", second);
    CHECK(post("/api/v1/job/delete", TOKEN, form) == 200);
    char list[4096], third[256] = "";
    CHECK(run_deferctl(&d, "dead list b", list, sizeof list) == 0);
    const char *l3 = strstr(list, "\nb/"); /* ID\t...: L1, then L3 */
    l3 = l3 ? strstr(l3 + 1, "\nb/") : NULL;
    CHECK(l3 != NULL);
    if (l3)
        snprintf(third, sizeof third, "%.*s", (int)strcspn(l3 + 1, "\t"), l3 + 1);
    snprintf(path, sizeof path, "/api/v1/queues/b/dead?limit=2&after=%s", second);
    CHECK(get_status(path, NULL, &body) == 200);
    char want[400];
    snprintf(want, sizeof want, "\"dead\":[{\"id\":\"%s\"", third);
    if (!body || !strstr(body, want) || strstr(body, "},{"))
        fprintf(stderr, "dead letters after %s: %s\n", second, body ? body : "");
    CHECK(body && strstr(body, want) != NULL && strstr(body, "},{") == NULL);
    free(body);
    CHECK(get_status("/api/v1/queues/b/dead?after=a/1-2-3", NULL, &body) == 400);
    free(body);
}

/* Cancel and reschedule over the API, and a held job's holder in the queue's listing. */
static void edits(void)
{
    deferd_client *c = client(&d);
    char keep[DEFERD_ID_SIZE], gone[DEFERD_ID_SIZE], held[DEFERD_ID_SIZE], form[300];
    char *body = NULL, out[4096];
    CHECK(put_job(c, "emails", "moved", 3600000, -1, -1, keep) == 0);
    CHECK(put_job(c, "emails", "cancelled", 3600000, -1, -1, gone) == 0);
    CHECK(put_job(c, "emails", "held", 0, -1, -1, held) == 0);
    CHECK(deferd_subscribe(c, "emails", 1) == DEFERD_OK);
    deferd_job job;
    memset(&job, 0, sizeof job);
    CHECK(next_job_push(c, &job, 5000) == 0 && strcmp(job.id, held) == 0);
    snprintf(form, sizeof form, "id=%s", gone);
    CHECK(post("/api/v1/job/cancel", TOKEN, form) == 200);
    snprintf(form, sizeof form, "id=%s&due=now%%2B2h", keep);
    CHECK(post("/api/v1/job/reschedule", TOKEN, form) == 200);
    snprintf(form, sizeof form, "id=%s", held);
    CHECK(post("/api/v1/job/cancel", TOKEN, form) == 409); /* its consumer decides */
    CHECK(run_deferctl(&d, "list emails", out, sizeof out) == 0);
    CHECK(strstr(out, gone) == NULL && strstr(out, keep) == NULL); /* moved: a new id */
    CHECK(strstr(out, strrchr(keep, '-') + 1) != NULL);              /* the same uid */
    CHECK(get_status("/api/v1/queues/emails/jobs", NULL, &body) == 200);
    const char *at = body ? strstr(body, held) : NULL, *end = at ? strchr(at, '}') : NULL;
    const char *h = at ? strstr(at, "\"held\":true,\"holder\":\"") : NULL;
    CHECK(h != NULL && h < end); /* in the held job's own object */
    free(body);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(c);
}

/* The schedules' page and API: schedule hourly (every 1h from the epoch) with its next
 * occurrences, the first at the next whole hour. */
static void schedules(void)
{
    char *body = NULL;
    long long now = now_ms(); /* before the daemon reads its clock */
    CHECK(get_status("/api/v1/schedules", NULL, &body) == 200);
    const char *at = body ? strstr(body, "\"name\":\"hourly\",\"queue\":\"a\"") : NULL;
    const char *next = at ? strstr(at, "\"next_ms\":[") : NULL;
    long long first = next ? atoll(next + 11) : 0;
    CHECK(next != NULL && first % 3600000 == 0 && first > now - 1000 &&
          first <= now + 3600000 + 1000);
    CHECK(next && atoll(strchr(next + 11, ',') + 1) == first + 3600000);
    free(body);
    CHECK(get_status("/ui/schedules", NULL, &body) == 200);
    CHECK(body && strstr(body, "<tr data-schedule=\"hourly\">") != NULL);
    free(body);
}

/* read_token = on: no page without a token; the login form and the static files are open. */
static void read_token(void)
{
    const char *ov[] = {"metrics.listen=127.0.0.1:0", "web.dashboard=on", tokopt,
                        "web.read_token=on", "queue b.max_attempts=1",
                        "web.allowed_hosts=deferd.example, other.example", NULL};
    char *body = NULL;
    daemon_kill(&d, SIGTERM);
    CHECK(daemon_restart(&d, ov) == 0 && daemon_wait_connected(&d, 15000) == 0);
    port = metrics_port_in_log(d.log);
    CHECK(get_status("/api/v1/overview", NULL, &body) == 401);
    free(body);
    CHECK(get_status("/ui/queues/b", NULL, &body) == 401);
    CHECK(body && strstr(body, "name=\"token\"") != NULL); /* the login form instead */
    free(body);
    CHECK(get_status("/api/v1/overview", TOKEN, &body) == 200);
    free(body);
    const char *proxied = "Host: DEFERD.example:443\r\nAuthorization: Bearer " TOKEN "\r\n";
    CHECK(http_send(port, "GET", "/api/v1/overview", proxied, NULL, 10000, &body, NULL, 0) ==
          200); /* a name of allowed_hosts, in any case */
    free(body);
    CHECK(http_send(port, "GET", "/api/v1/overview", "Host: third.example\r\n", NULL, 10000,
                    &body, NULL, 0) == 403);
    free(body);
    CHECK(get_status("/ui/static/app.css", NULL, &body) == 200);
    free(body);
}

int main(void)
{
    const char *bin = chromium_path();
    if (!bin) {
        printf("it_web_actions: SKIP: no chromium binary (Debian package chromium; "
               "packaging/deps --test installs it)\n");
        return 77;
    }
    harness_init("web_actions", root, sizeof root);
    CHECK(mkdtemp(dir) != NULL && write_tokens() == 0);
    const char *ov[] = {"metrics.listen=127.0.0.1:0", "metrics.census_rate=1000",
                        "metrics.depth_interval=1s", "web.dashboard=on", "web.actions=on",
                        tokopt, "queue b.max_attempts=1", "schedule.hourly.queue=a",
                        "schedule.hourly.every=1h", "schedule.hourly.payload=tick", NULL};
    CHECK(daemon_start(&d, root, "webact", ov) == 0 && daemon_wait_connected(&d, 15000) == 0);
    port = metrics_port_in_log(d.log);
    CHECK(port > 0);
    deferd_client *c = client(&d);
    char job[DEFERD_ID_SIZE], other[DEFERD_ID_SIZE], dead[4096];
    CHECK(put_job(c, "b", SCRIPT_PAYLOAD, 1800000, -1, -1, job) == 0);
    for (int i = 0; i < 3; i++)
        CHECK(put_job(c, "b", "plain", 7200000, -1, -1, other) == 0);
    deferd_close(c);
    CHECK(make_dead_letters(&d, "b", 3) == 0);
    int64_t done = now_ms(), deadline = done + 20000; /* a census pass after the puts */
    while (now_ms() < deadline &&
           metric_in_log(d.log, "deferd_queue_census_timestamp_seconds{queue=\"b\"}") * 1000 <
               (double)done)
        usleep(100000);
    CHECK(now_ms() < deadline);
    CHECK(run_deferctl(&d, "dead list b", dead, sizeof dead) == 0);
    api(job);
    edits();
    schedules();
    session();
    dead_pages(); /* deletes the first dead letter: two are left */
    CHECK(run_deferctl(&d, "dead list b", dead, sizeof dead) == 0);
    char *id = strstr(dead, "b/"); /* ID\tATTEMPTS...: the first dead letter's id */
    CHECK(id != NULL);
    if (id)
        id[strcspn(id, "\t")] = '\0';
    char r[8192];
    browser(bin, job, r, sizeof r);
    check_browser(r, id ? id : "");
    check_counted();
    read_token();
    daemon_kill(&d, SIGTERM);
    if (check_failures == 0) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    return check_report("it_web_actions");
}
