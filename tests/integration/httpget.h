/* A minimal HTTP/1.0 client for tests: one request, the whole answer, with a deadline. */
#ifndef DEFERD_TEST_HTTPGET_H
#define DEFERD_TEST_HTTPGET_H

#include <stddef.h>

/* Sends "METHOD PATH HTTP/1.0" to 127.0.0.1:PORT and reads until the server closes.
 * Returns the status code (and *body, malloc'd, NUL-terminated; *ctype the Content-Type
 * value, if CTYPE), or -1 when there was no well-formed answer within TIMEOUT_MS. */
int http_request(int port, const char *method, const char *path, int timeout_ms, char **body,
                 char *ctype, size_t ctlen);

/* The same with HEADERS ("Name: value\r\n" lines, or NULL; a Host: there replaces
 * 127.0.0.1:PORT) and, when FORM is not NULL,
 * that form as an application/x-www-form-urlencoded body; HDRS gets the answer's status
 * line and headers. */
int http_send(int port, const char *method, const char *path, const char *headers,
              const char *form, int timeout_ms, char **body, char *hdrs, size_t hlen);

/* The port in deferd's "metrics: serving http://127.0.0.1:PORT/metrics" line in LOG
 * (listen = 127.0.0.1:0), waiting up to 10 s for it; -1 if it does not come. */
int metrics_port_in_log(const char *log);

/* The value of one series (its name and labels as deferd writes them, e.g.
 * `deferd_schedule_occurrences_put_total{schedule="tick"}`) in GET /metrics of the daemon
 * whose log is LOG; -1 when the series or the answer is absent. */
double metric_in_log(const char *log, const char *series);

/* A TCP port on 127.0.0.1 that was free a moment ago (for servers that cannot report one). */
int free_tcp_port(void);

/* Debian's chromium (or $DEFERD_CHROMIUM), or NULL when there is none. */
const char *chromium_path(void);

#endif
