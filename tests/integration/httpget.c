#include "httpget.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int connect_local(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Everything the server sends until it closes; NULL on timeout. */
static char *read_all(int fd, long long deadline, size_t *len)
{
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        long long left = deadline - mono_ms();
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        if (n + 4096 + 1 > cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown)
                break;
            buf = grown;
        }
        ssize_t got = read(fd, buf + n, cap - n - 1);
        if (got == 0) {
            buf[n] = '\0';
            *len = n;
            return buf;
        }
        if (got < 0 && errno != EINTR)
            break;
        n += got > 0 ? (size_t)got : 0;
    }
    free(buf);
    return NULL;
}

static void header_value(const char *head, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *l = strstr(head, "\r\n"); l && out; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, name, n) == 0 && l[2 + n] == ':') {
            const char *v = l + 3 + n, *end = strstr(v, "\r\n");
            v += strspn(v, " ");
            snprintf(out, len, "%.*s", end ? (int)(end - v) : (int)strlen(v), v);
            return;
        }
    }
}

int http_send(int port, const char *method, const char *path, const char *headers,
              const char *form, int timeout_ms, char **body, char *hdrs, size_t hlen)
{
    long long deadline = mono_ms() + timeout_ms;
    char *req = NULL;
    size_t len = 0;
    int status = -1, fd = connect_local(port);
    char host[48] = ""; /* unless HEADERS name another */
    if (!headers || !strstr(headers, "Host: "))
        snprintf(host, sizeof host, "Host: 127.0.0.1:%d\r\n", port);
    int n = form ? asprintf(&req, "%s %s HTTP/1.0\r\n%s%sContent-Type: "
                            "application/x-www-form-urlencoded\r\nContent-Length: %zu\r\n"
                            "\r\n%s", method, path, host, headers ? headers : "",
                            strlen(form), form)
                 : asprintf(&req, "%s %s HTTP/1.0\r\n%s%s\r\n", method, path, host,
                            headers ? headers : "");
    char *all = fd >= 0 && n > 0 && write(fd, req, (size_t)n) == n
                    ? read_all(fd, deadline, &len) : NULL;
    char *sep = all ? strstr(all, "\r\n\r\n") : NULL;
    free(req);
    if (fd >= 0)
        close(fd);
    *body = NULL;
    if (!sep || sscanf(all, "HTTP/1.%*d %d", &status) != 1) {
        free(all);
        return -1;
    }
    *sep = '\0';
    if (hdrs)
        snprintf(hdrs, hlen, "%s", all);
    *body = strdup(sep + 4);
    free(all);
    return status;
}

int http_request(int port, const char *method, const char *path, int timeout_ms, char **body,
                 char *ctype, size_t ctlen)
{
    char hdrs[4096];
    int status = http_send(port, method, path, NULL, NULL, timeout_ms, body, hdrs, sizeof hdrs);
    if (status >= 0 && ctype) {
        *ctype = '\0';
        header_value(hdrs, "Content-Type", ctype, ctlen);
    }
    return status;
}

double metric_in_log(const char *log, const char *series)
{
    char *body = NULL, ctype[128], line[512];
    int port = metrics_port_in_log(log);
    if (port <= 0 || http_request(port, "GET", "/metrics", 10000, &body, ctype, sizeof ctype)
                         != 200 || !body) {
        free(body);
        return -1;
    }
    snprintf(line, sizeof line, "\n%s ", series);
    const char *at = strstr(body, line);
    double v = at ? strtod(at + strlen(line), NULL) : -1;
    free(body);
    return v;
}

int free_tcp_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sl = sizeof sa;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

int metrics_port_in_log(const char *log)
{
    static const char tag[] = "metrics: serving http://127.0.0.1:";
    long long deadline = mono_ms() + 10000;
    while (mono_ms() < deadline) {
        FILE *f = fopen(log, "r");
        char line[1024];
        int p = 0;
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, tag))
                p = atoi(strstr(line, tag) + strlen(tag));
        if (f)
            fclose(f);
        if (p > 0)
            return p;
        usleep(20000);
    }
    return -1;
}

const char *chromium_path(void)
{
    static const char *const bins[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
    const char *env = getenv("DEFERD_CHROMIUM");
    if (env && *env)
        return access(env, X_OK) == 0 ? env : NULL;
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++)
        if (access(bins[i], X_OK) == 0)
            return bins[i];
    return NULL;
}
