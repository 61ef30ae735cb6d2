/* The dashboard (docs/web.md) in a real browser: Debian's chromium, headless, loads the
 * overview of a daemon whose queue a holds a known backlog and whose queue b is paused; the
 * numbers the page shows once its script has refreshed them from the JSON API equal
 * deferctl stats --json; a screenshot of it is saved in the build tree. Hostile HTTP: paths
 * that try to leave the static files, other methods, unknown paths, an oversized header,
 * and a hundred idle connections, none of which stalls the daemon's socket clients.
 * Skipped (77) only when no chromium binary exists. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "harness.h"
#include "httpget.h"

static struct daemon_proc d;
static char root[128], dir[] = "/tmp/deferd-web-XXXXXX";
static int port;

static const char *const ov[] = {"metrics.listen=127.0.0.1:0", "metrics.depth_interval=1s",
                                 "web.dashboard=on", NULL};

/* Runs chromium headless on URL with ARGS (--dump-dom, --screenshot=...), its stdout into
 * OUT; 0 when it exited 0 within a minute. */
static int chromium(const char *bin, const char *args, const char *url, const char *out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 60 '%s' --headless --no-sandbox --disable-gpu "
             "--hide-scrollbars --user-data-dir='%s/profile' --virtual-time-budget=5000 %s "
             "'%s' > '%s' 2>> '%s/chromium.log'", bin, dir, args, url, out, dir);
    return system(cmd);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    if (s && n > 0 && fread(s, 1, (size_t)n, f) != (size_t)n)
        s[0] = '\0';
    fclose(f);
    return s ? s : strdup("");
}

/* The text of QUEUE's cell FIELD in the page's DOM, into OUT; 0 when found. */
static int cell(const char *dom, const char *queue, const char *field, char *out, size_t len)
{
    char row[64], attr[96];
    snprintf(row, sizeof row, "<tr data-queue=\"%s\">", queue);
    snprintf(attr, sizeof attr, "data-field=\"%s\"", field);
    const char *r = strstr(dom, row), *end = r ? strstr(r, "</tr>") : NULL;
    const char *c = r ? strstr(r, attr) : NULL;
    if (!c || c > end || !(c = strchr(c, '>')))
        return -1;
    size_t n = strcspn(c + 1, "<");
    snprintf(out, len, "%.*s", (int)n, c + 1);
    return 0;
}

/* FIELD of deferctl stats QUEUE --json, as the JSON writes it (a number, or null). */
static void json_value(const char *json, const char *field, char *out, size_t len)
{
    char key[96];
    snprintf(key, sizeof key, "\"%s\":", field);
    const char *at = strstr(json, key);
    size_t n = at ? strcspn(at + strlen(key), ",}") : 0;
    snprintf(out, len, "%.*s", (int)n, at ? at + strlen(key) : "");
}

static void backlog(void)
{
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE], out[512];
    int64_t t0 = now_ms();
    for (int i = 0; i < 3; i++)
        CHECK(put_job(c, "a", "overdue", -1, t0 - 60000, -1, id) == 0);
    for (int i = 0; i < 5; i++)
        CHECK(put_job(c, "a", "soon", 40000, -1, -1, id) == 0);
    for (int i = 0; i < 7; i++)
        CHECK(put_job(c, "a", "later", 30 * 60000, -1, -1, id) == 0);
    deferd_close(c);
    CHECK(run_deferctl(&d, "pause b --reason web-test", out, sizeof out) == 0);
    int64_t done = now_ms(), deadline = done + 20000;
    while (now_ms() < deadline &&
           metric_in_log(d.log, "deferd_queue_depth_refreshed_timestamp_seconds{queue=\"a\"}") *
                   1000 < (double)done)
        usleep(100000);
    CHECK(now_ms() < deadline); /* a refresh came */
    CHECK(wait_stats(&d, "paused.b=1", 1));
    deadline = now_ms() + 20000; /* and a census pass, for the windows beyond the hour */
    while (now_ms() < deadline &&
           metric_in_log(d.log, "deferd_queue_census_timestamp_seconds{queue=\"a\"}") * 1000 <
               (double)done)
        usleep(100000);
    CHECK(now_ms() < deadline); /* and a census pass */
}

static void check_page(const char *bin)
{
    char url[128], path[300], got[64], want[64], json[8192];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/ui/", port);
    snprintf(path, sizeof path, "%s/overview.html", dir);
    CHECK(chromium(bin, "--dump-dom", url, path) == 0);
    char *dom = slurp(path);
    CHECK(strstr(dom, "<body data-refreshed=\"") != NULL); /* app.js ran and refreshed */
    CHECK(run_deferctl(&d, "stats a --json", json, sizeof json) == 0);
    static const char *const fields[] = {"depth_overdue", "depth_minute", "depth_hour",
                                         "depth_dead",    "depth_day",    "depth_week",
                                         "depth_later",   "census_total", "consumers",
                                         "inflight"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        CHECK(cell(dom, "a", fields[i], got, sizeof got) == 0);
        json_value(json, fields[i], want, sizeof want);
        if (strcmp(got, want) != 0)
            fprintf(stderr, "queue a %s: the page shows '%s', deferctl '%s'\n", fields[i], got,
                    want);
        CHECK_STR(got, want);
    }
    CHECK(cell(dom, "a", "depth_overdue", got, sizeof got) == 0 && strcmp(got, "3") == 0);
    CHECK(cell(dom, "a", "depth_minute", got, sizeof got) == 0 && strcmp(got, "5") == 0);
    CHECK(cell(dom, "a", "depth_hour", got, sizeof got) == 0 && strcmp(got, "7") == 0);
    CHECK(cell(dom, "a", "census_total", got, sizeof got) == 0 && strcmp(got, "15") == 0);
    CHECK(cell(dom, "b", "paused", got, sizeof got) == 0 && strcmp(got, "paused") == 0);
    CHECK(cell(dom, "a", "paused", got, sizeof got) == 0 && strcmp(got, "") == 0);
    CHECK(strstr(dom, "ZooKeeper: CONNECTED") != NULL);
    free(dom);
}

/* The overview as a picture, in the build tree (tests/web-screens/overview.png). */
static void screenshot(const char *bin)
{
    char url[128], args[400], png[300], sink[300];
    mkdir("web-screens", 0755);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/ui/", port);
    snprintf(png, sizeof png, "%s/web-screens/overview.png", getcwd(sink, sizeof sink));
    snprintf(args, sizeof args, "--window-size=1760,430 --screenshot='%s'", png);
    snprintf(sink, sizeof sink, "%s/screenshot.out", dir);
    unlink(png);
    CHECK(chromium(bin, args, url, sink) == 0);
    char *img = slurp(png);
    CHECK(memcmp(img, "\x89PNG", 4) == 0);
    free(img);
    printf("screenshot: %s\n", png);
}

static int status_of(const char *method, const char *path, char *body_out, size_t len)
{
    char *body = NULL, ctype[128] = "";
    int st = http_request(port, method, path, 10000, &body, ctype, sizeof ctype);
    if (body_out)
        snprintf(body_out, len, "%s", body ? body : "");
    free(body);
    return st;
}

/* A request line with a 20 KB header: refused, and the daemon goes on. */
static int oversized_header(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        return -1;
    char *req = malloc(21000), reply[256] = "";
    int n = snprintf(req, 21000, "GET /ui/ HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(req + n, 'a', 20000);
    memcpy(req + n + 20000, "\r\n\r\n", 5);
    ssize_t w = send(fd, req, strlen(req), MSG_NOSIGNAL);
    ssize_t r = recv(fd, reply, sizeof reply - 1, 0);
    free(req);
    close(fd);
    printf("a 20 KB header: sent %zd, answered '%.40s'\n", w, r > 0 ? reply : "(closed)");
    return r <= 0 || strncmp(reply, "HTTP/1.1 4", 10) == 0 ? 0 : -1;
}

static void hostile(void)
{
    char body[4096];
    static const char *const bad[] = {"/ui/static/../../../../etc/passwd",
                                      "/ui/static/%2e%2e/%2e%2e/etc/passwd",
                                      "/ui/static/..%2fapp.js", "/ui/static/", "/ui/static/app.js/",
                                      "/ui/nothing", "/api/v1/nothing", "/ui/static//etc/passwd"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int st = status_of("GET", bad[i], body, sizeof body);
        if (st != 404)
            fprintf(stderr, "%s answered %d\n", bad[i], st);
        CHECK(st == 404);
        CHECK(strstr(body, "root:") == NULL);
    }
    CHECK(status_of("GET", "/ui/static/app.js", body, sizeof body) == 200);
    CHECK(status_of("POST", "/ui/", NULL, 0) == 405);
    CHECK(status_of("DELETE", "/api/v1/overview", NULL, 0) == 405);
    CHECK(status_of("GET", "/", NULL, 0) == 302);
    CHECK(status_of("GET", "/metrics", NULL, 0) == 200);
    CHECK(oversized_header() == 0);
}

/* A hundred connections that send half a request and wait: the socket side still answers
 * at once, and so does the dashboard. */
static void idle_connections(void)
{
    int fds[100], open_n = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    for (int i = 0; i < 100; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[i] >= 0 && connect(fds[i], (struct sockaddr *)&sa, sizeof sa) == 0 &&
            send(fds[i], "GET /ui/ HTTP/1.1\r\nHo", 21, MSG_NOSIGNAL) == 21)
            open_n++;
    }
    CHECK(open_n == 100);
    int64_t t = now_ms();
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE];
    CHECK(put_job(c, "emails", "while-idle", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(c, "emails", 1) == DEFERD_OK);
    deferd_job job;
    memset(&job, 0, sizeof job);
    CHECK(next_job_push(c, &job, 5000) == 0 && deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(c);
    int64_t took = now_ms() - t;
    printf("put, delivery and ack beside 100 idle HTTP connections: %lld ms\n", (long long)took);
    CHECK(took < 2000);
    CHECK(status_of("GET", "/api/v1/overview", NULL, 0) == 200);
    for (int i = 0; i < 100; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int main(void)
{
    const char *bin = chromium_path();
    if (!bin) {
        printf("it_web: SKIP: no chromium binary (Debian package chromium; packaging/deps "
               "--test installs it)\n");
        return 77;
    }
    harness_init("web", root, sizeof root);
    CHECK(mkdtemp(dir) != NULL);
    CHECK(daemon_start(&d, root, "web", ov) == 0 && daemon_wait_connected(&d, 15000) == 0);
    port = metrics_port_in_log(d.log);
    CHECK(port > 0);
    backlog();
    check_page(bin);
    screenshot(bin);
    hostile();
    idle_connections();
    CHECK(kill(d.pid, 0) == 0); /* still there after all of it */
    daemon_kill(&d, SIGTERM);
    if (check_failures == 0) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    return check_report("it_web");
}
