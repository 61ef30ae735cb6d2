/* The dashboard's queue, job and dead-letter pages and its actions (docs/web.md), in a
 * real browser and over the API. Chromium, driven over the DevTools protocol by
 * browser.py, opens queue b's page and finds a job by its id with the page's form; the
 * job's payload is a <script> (and an <img onerror>) that must show as text and never run;
 * a pause without a token, and with the cookie but a wrong or missing CSRF value, changes
 * nothing; signed in, the page's buttons pause and resume the queue and kick a dead letter
 * back. What the clicks did is then checked in ZooKeeper through deferctl, the log and the
 * counters. The API: a Bearer token acts, a wrong one is refused; a bad parameter's 400
 * names it and its range, a 404 the queue; read_token = on keeps the pages from anyone
 * without one. At 1400 px (issue 38) the overview and the schedules' page do not scroll
 * sideways, lateness and rates read in people's units, the "updated" time is UTC. Skipped
 * (77) only when no chromium binary exists. */
#include <fcntl.h>
#include <regex.h>
#include <time.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "httpget.h"
#include "web_format.h"

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

/* A POST to the API answers CODE with a text that holds WANT. */
static int post_says(const char *path, const char *auth, const char *form, int code,
                     const char *want)
{
    char *body = NULL, hdr[256] = "";
    if (auth)
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\n", auth);
    int st = http_send(port, "POST", path, hdr, form ? form : "", 10000, &body, NULL, 0);
    int ok = st == code && body && strstr(body, want);
    if (!ok)
        fprintf(stderr, "POST %s: %d %s (expected %d, '%s')\n", path, st, body ? body : "",
                code, want);
    free(body);
    return ok;
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

/* GET PATH answers CODE with a text that holds WHAT (the parameter or queue named, what is
 * wrong with it) and RANGE (what it takes), and no word of another parameter. */
static void bad_param(const char *path, int code, const char *what, const char *range)
{
    char *body = NULL;
    int st = get_status(path, NULL, &body);
    const char *b = body ? body : "";
    printf("%s: %d %s", path, st, b);
    CHECK(st == code);
    CHECK_CONTAINS(b, what);
    CHECK_CONTAINS(b, range);
    /* the one parameter at fault: the others are not named */
    static const char *const names[] = {"limit=", "from=", "after="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(what, names[i], strlen(names[i])) != 0)
            CHECK(strstr(b, names[i]) == NULL);
    free(body);
}

static void api(const char *job)
{
    char path[400], *body = NULL;
    CHECK(post("/api/v1/queues/b/pause", NULL, NULL) == 401);
    CHECK(post("/api/v1/queues/b/pause", "wrong-token-0123456789", NULL) == 401);
    CHECK(post_says("/api/v1/queues/nosuch/pause", TOKEN, NULL, 400,
                    "no queue 'nosuch' in deferd.ini"));
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
    /* the lease, as deferctl show --json says it (the queue's default here) */
    CHECK(body && strstr(body, "\"ttr_ms\":60000,\"ttr_default\":true") != NULL);
    free(body);
    CHECK(get_status("/api/v1/queues/b/jobs?limit=2", NULL, &body) == 200);
    CHECK(body && strstr(body, "\"next_after\":\"b/") != NULL); /* 4 jobs: another page */
    free(body);
    bad_param("/api/v1/queues/b/jobs?limit=0", 400, "limit=0 is out of range", "1 to 500");
    bad_param("/api/v1/queues/b/jobs?limit=many", 400, "limit=many is not a number",
              "1 to 500");
    bad_param("/api/v1/queues/b/dead?limit=501", 400, "limit=501 is out of range", "1 to 500");
    bad_param("/api/v1/queues/b/jobs?from=yesterday", 400, "from=yesterday is not a time",
              "now+1h");
    bad_param("/api/v1/queues/b/jobs?after=a/1-2-3&limit=7", 400,
              "after=a/1-2-3 is not a job id of queue b", "next page");
    bad_param("/api/v1/queues/nosuch/jobs", 404, "no queue 'nosuch' in deferd.ini", "/ui/");
    bad_param("/ui/queues/nosuch", 404, "no queue &#39;nosuch&#39; in deferd.ini", "/ui/");
    CHECK(get_status("/api/v1/job?id=b/0000000000000-x", NULL, &body) == 400);
    free(body);
}

/* Numbers whose texts app.js must write as web_format.c does: each range, and where
 * rounding carries a figure into the next one. */
static const double numbers[] = {0,      0.049,   0.05,   0.4,      3.25,    9.949,
                                 9.95,   850,     999.499, 999.5,   19525.899, 59949,
                                 59950,  303500,  3599499, 3599500, 11100000, 187200000,
                                 -1500,  0.004,   0.005,  1.0 / 60, 0.35,    9.994,
                                 9.995,  12.5,    99.95,  1234.567};
#define NNUMBERS (sizeof numbers / sizeof numbers[0])

/* NUMBERS as browser.py takes them: "%.17g" each, which JavaScript reads back exactly. */
static void numbers_arg(char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < NNUMBERS && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%.17g", i ? "," : "", numbers[i]);
}

static void browser(const char *bin, const char *job, char *out, size_t len)
{
    char cmd[4096], shots[300], cwd[200], profile[300], res[300], nums[1024];
    mkdir("web-screens", 0755);
    snprintf(shots, sizeof shots, "%s/web-screens", getcwd(cwd, sizeof cwd));
    snprintf(profile, sizeof profile, "%s/profile", dir);
    snprintf(res, sizeof res, "%s/browser.json", dir);
    mkdir(profile, 0700);
    numbers_arg(nums, sizeof nums);
    snprintf(cmd, sizeof cmd, "timeout 180 python3 '%s' '%s' 'http://127.0.0.1:%d' '%s' '%s' b "
             "'%s' '%s' emails '%s' > '%s'", getenv("DEFERD_BROWSER_PY"), bin, port, TOKEN, job,
             shots, profile, nums, res);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(res, "r");
    size_t n = f ? fread(out, 1, len - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    printf("browser: %s", out);
}

/* Does S match the extended regular expression RE (whole)? */
static int matches(const char *s, const char *re)
{
    regex_t rx;
    if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0)
        return 0;
    int ok = regexec(&rx, s, 0, NULL, 0) == 0;
    regfree(&rx);
    if (!ok)
        fprintf(stderr, "'%s' does not match %s\n", s, re);
    return ok;
}

#define DURATION_RE "^(0 ms|[0-9]\\.[0-9] ms|[1-9][0-9]{0,2} ms|[1-5]?[0-9]\\.[0-9] s|" \
                    "[1-9][0-9]* min [0-5][0-9] s|[1-9][0-9]* h [0-5][0-9] min|"        \
                    "[1-9][0-9]* d [0-2][0-9] h)$"
#define RATE_RE "^(0|<0\\.01|[0-9]+(\\.[0-9]{1,2})?)/s$"

/* KEY, how far a page reaches past the window's right edge in px, is at most 0. */
static int within_window(const char *r, const char *key)
{
    char px[32];
    field(r, key, px, sizeof px);
    if (!matches(px, "^-?[0-9]+$") || atoi(px) > 0)
        fprintf(stderr, "browser: %s is '%s': the page scrolls sideways at 1400 px\n", key, px);
    return matches(px, "^-?[0-9]+$") && atoi(px) <= 0;
}

/* "updated 2026-11-28T07:55:22Z": UTC, to the second, within a minute of the test's clock. */
static int updated_utc(const char *text)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!matches(text, "^updated [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$") ||
        !strptime(text, "updated %Y-%m-%dT%H:%M:%SZ", &tm))
        return 0;
    long long at = (long long)timegm(&tm) * 1000, now = now_ms();
    if (at < now - 60000 || at > now + 1000)
        fprintf(stderr, "updated %lld ms from the test's clock\n", at - now);
    return at >= now - 60000 && at <= now + 1000;
}

/* The overview and the schedules' page at 1400 px: nothing beyond the window; queue
 * emails's figures in people's units (its p99: the job delivered 20 s late), the same in
 * the page as served and as app.js refreshed it; the times UTC; the notes without internal
 * field names, and saying what lateness counts. */
static void check_layout(const char *r)
{
    char served[64], live[64], key[64], notes[2048];
    CHECK(is(r, "overview_refreshed", "true"));
    CHECK(within_window(r, "overview_overflow_px"));
    CHECK(within_window(r, "overview_wide_overflow_px"));
    CHECK(is(r, "schedules_refreshed", "true"));
    CHECK(within_window(r, "schedules_overflow_px"));
    CHECK(is(r, "schedules_rows", "2"));
    static const char *const figures[] = {"lateness_p50_ms", "lateness_p99_ms", "put_per_s",
                                          "delivered_per_s", "acked_per_s"};
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++) {
        snprintf(key, sizeof key, "served_%s", figures[i]);
        field(r, key, served, sizeof served);
        snprintf(key, sizeof key, "live_%s", figures[i]);
        field(r, key, live, sizeof live);
        CHECK(matches(served, i < 2 ? DURATION_RE : RATE_RE));
        CHECK(matches(live, i < 2 ? DURATION_RE : RATE_RE));
        CHECK(strcmp(live, "0/s") != 0); /* deliveries were made */
        /* no delivery since: the same lateness, written by web_format.c and by app.js (a
         * young daemon's rates move each second: its window is its uptime) */
        if (i < 2)
            CHECK_STR(served, live);
    }
    field(r, "live_lateness_p99_ms", live, sizeof live);
    double p99 = atof(live);
    CHECK(matches(live, "^[0-9]+\\.[0-9] s$") && p99 >= 19.5 && p99 < 60);
    field(r, "live_depth_oldest_overdue_ms", live, sizeof live);
    CHECK_STR(live, "-"); /* none overdue */
    field(r, "served_updated", served, sizeof served);
    CHECK(updated_utc(served));
    field(r, "live_updated", live, sizeof live);
    CHECK(updated_utc(live));
    field(r, "schedules_updated", live, sizeof live);
    CHECK(updated_utc(live));
    field(r, "notes", notes, sizeof notes);
    CHECK(strstr(notes, "_ms") == NULL && strstr(notes, "census_age") == NULL);
    CHECK_CONTAINS(notes, "no consumer was connected");
}

/* web_format.c's texts of NUMBERS by FORMAT, joined by "|": app.js's must be these. */
static void c_texts(void (*format)(double, char *, size_t), char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < NNUMBERS && n < len; i++) {
        char text[48];
        format(numbers[i], text, sizeof text);
        n += (size_t)snprintf(out + n, len - n, "%s%s", i ? "|" : "", text);
    }
}

static void check_formats(const char *r)
{
    char want[2048], got[2048];
    c_texts(web_format_duration, want, sizeof want);
    field(r, "js_durations", got, sizeof got);
    CHECK_STR(got, want);
    c_texts(web_format_rate, want, sizeof want);
    field(r, "js_rates", got, sizeof got);
    CHECK_STR(got, want);
}

static void check_browser(const char *r, const char *dead_before)
{
    char kicked[256], cmd_out[4096];
    CHECK(strstr(r, "\"error\"") == NULL);
    check_layout(r);
    check_formats(r);
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
    CHECK(deferd_job_uid(dead_before, uid, sizeof uid) == 0);
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
    /* a job due 20 s ago: its delivery's lateness, seconds, is the overview's p99 */
    CHECK(put_job(c, "emails", "late", -1, now_ms() - 20000, -1, out) == 0);
    memset(&job, 0, sizeof job);
    CHECK(next_job_push(c, &job, 5000) == 0 && strcmp(job.id, out) == 0);
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
                        "schedule.hourly.every=1h", "schedule.hourly.payload=tick",
                        /* long words in every column of the schedules' page (issue 38) */
                        "schedule.nightly-customer-report.queue=emails",
                        "schedule.nightly-customer-report.cron=30 2 * * mon-fri",
                        "schedule.nightly-customer-report.timezone="
                        "America/Argentina/Buenos_Aires",
                        "schedule.nightly-customer-report.payload=report", NULL};
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
    char r[16384];
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
