/* A real Prometheus server scrapes deferd: started on a free loopback port with its own
 * storage and a generated scrape config (every second), it must come to report the acks
 * the test made, a known backlog's depth (deferd_queue_jobs) and the process_* families
 * through its query API. Skipped (77) only when no prometheus binary exists. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "httpget.h"

static struct daemon_proc d;
static char root[128];

/* DEFERD_PROMETHEUS, else "prometheus" on PATH; NULL when there is none. */
static const char *find_prometheus(char *buf, size_t len)
{
    const char *env = getenv("DEFERD_PROMETHEUS"), *path = getenv("PATH");
    if (env && *env)
        return access(env, X_OK) == 0 ? env : NULL;
    for (const char *p = path; p && *p;) {
        size_t n = strcspn(p, ":");
        snprintf(buf, len, "%.*s/prometheus", (int)n, p);
        if (n && access(buf, X_OK) == 0)
            return buf;
        p += n + (p[n] == ':');
    }
    return NULL;
}

static pid_t start_prometheus(const char *bin, const char *dir, int web_port, int target)
{
    char cfg[512], data[512], listen[64], logp[512], a1[600], a2[600];
    snprintf(cfg, sizeof cfg, "%s/prometheus.yml", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(logp, sizeof logp, "%s/prometheus.log", dir);
    FILE *f = fopen(cfg, "w");
    if (!f)
        return -1;
    fprintf(f, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
               "scrape_configs:\n  - job_name: deferd\n    static_configs:\n"
               "      - targets: ['127.0.0.1:%d']\n", target);
    fclose(f);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", web_port);
    snprintf(a1, sizeof a1, "--config.file=%s", cfg);
    snprintf(a2, sizeof a2, "--storage.tsdb.path=%s", data);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(bin, bin, a1, a2, listen, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Polls PATH on Prometheus until it answers 200 and, if WANT, the body contains it. */
static int wait_for(int port, const char *path, const char *want, int ms, pid_t pid)
{
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        char *body = NULL;
        int status = http_request(port, "GET", path, 5000, &body, NULL, 0);
        int ok = status == 200 && (!want || (body && strstr(body, want)));
        free(body);
        if (ok)
            return 0;
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            fprintf(stderr, "prometheus exited early\n");
            return -1;
        }
        usleep(200000);
    }
    return -1;
}

static void acks(int n)
{
    deferd_client *prod = client(&d), *cons = client(&d);
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < n; i++)
        CHECK(put_job(prod, "emails", "scraped", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(cons, "emails", 10) == DEFERD_OK);
    for (int i = 0; i < n; i++) {
        deferd_job job;
        memset(&job, 0, sizeof job);
        CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
        CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    deferd_close(prod);
    deferd_close(cons);
}

static void run(const char *bin, const char *dir)
{
    int target = metrics_port_in_log(d.log), web = free_tcp_port();
    CHECK(target > 0 && web > 0);
    pid_t pid = target > 0 && web > 0 ? start_prometheus(bin, dir, web, target) : -1;
    CHECK(pid > 0);
    if (pid <= 0)
        return;
    CHECK(wait_for(web, "/-/ready", NULL, 60000, pid) == 0);
    acks(5);
    /* The value arrives as a string: ..."value":[<time>,"5"]} */
    const char *q = "/api/v1/query?query=deferd_jobs_acked_total%7Bqueue%3D%22emails%22%7D";
    int rc = wait_for(web, q, ",\"5\"]", 30000, pid);
    CHECK(rc == 0);
    if (rc != 0) {
        char *body = NULL;
        http_request(web, "GET", q, 5000, &body, NULL, 0);
        fprintf(stderr, "last answer: %s\nsee %s/prometheus.log\n", body ? body : "(none)", dir);
        free(body);
    }
    CHECK(wait_for(web, "/api/v1/query?query=up%7Bjob%3D%22deferd%22%7D", ",\"1\"]", 10000,
                   pid) == 0);
    /* Queue a: 3 jobs due in half an hour, nothing else; depth refreshed every second. */
    char id[DEFERD_ID_SIZE];
    deferd_client *prod = client(&d);
    for (int i = 0; i < 3; i++)
        CHECK(put_job(prod, "a", "later", 30 * 60000, -1, -1, id) == 0);
    deferd_close(prod);
    CHECK(wait_for(web, "/api/v1/query?query=deferd_queue_jobs%7Bqueue%3D%22a%22%2C"
                   "window%3D%22hour%22%7D", ",\"3\"]", 30000, pid) == 0);
    CHECK(wait_for(web, "/api/v1/query?query=process_open_fds%3E0", "\"process_open_fds\"",
                   10000, pid) == 0);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

int main(void)
{
    char buf[1024], dir[] = "/tmp/deferd-prom-XXXXXX", cmd[128];
    const char *bin = find_prometheus(buf, sizeof buf);
    if (!bin) {
        printf("it_prometheus: SKIP: no prometheus binary (Debian package prometheus; "
               "packaging/deps --test installs it)\n");
        return 77;
    }
    harness_init("prometheus", root, sizeof root);
    const char *ov[] = {"metrics.listen=127.0.0.1:0", "metrics.depth_interval=1s", NULL};
    CHECK(mkdtemp(dir) != NULL);
    CHECK(daemon_start(&d, root, "prometheus", ov) == 0);
    if (d.pid > 0)
        run(bin, dir);
    daemon_kill(&d, SIGTERM);
    if (check_failures == 0) { /* else kept for a look */
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    return check_report("it_prometheus");
}
