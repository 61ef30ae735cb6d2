/* The overview page and /api/v1/overview: one row a queue, from the same STATS QUEUE line
 * that deferctl stats prints (metrics_expose_queue), so that the dashboard, the socket and
 * deferctl never disagree about a number. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "jsonw.h"
#include "kvline.h"
#include "metrics.h"
#include "metrics_expose.h"
#include "session.h"
#include "cluster_time.h"
#include "units.h"
#include "log.h"
#include "web_format.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_reply.h"
#include "web_state.h"

#ifndef DEFERD_VERSION
#define DEFERD_VERSION "unknown"
#endif

#define FIELDS_MAX 96
#define LINE_MAX_ 2048

/* How a column shows its STATS QUEUE field; app.js shows each the same way (data-kind).
 * AGE: a duration, "-" when 0 (none overdue); DURATION: milliseconds, fractions too; RATE:
 * a second. */
enum kind { K_TEXT, K_PAUSED, K_AGE, K_DURATION, K_RATE };
static const char *const kind_names[] = {"text", "paused", "age", "duration", "rate"};

/* Lateness counts from the due time, so a job that waited for a consumer (none connected,
 * or all busy) or behind a pause counts that wait: said where the figure is. */
#define LATENESS_HINT "how long after its due time a job was pushed to a consumer, over this " \
                      "daemon's last 1024 deliveries; time a due job waited with no free "    \
                      "consumer or a paused queue counts too"

/* The columns: a STATS QUEUE field each, under two groups (all daemons', this daemon's).
 * No-break spaces keep "1 min" whole where a narrow window wraps a title. */
static const struct {
    const char *field, *title, *hint;
    enum kind kind;
    int group;
} columns[] = {
    {"paused", "State", "paused: no deliveries (deferctl pause)", K_PAUSED, 0},
    {"depth_overdue", "Overdue", "due by the last depth refresh, held ones too", K_TEXT, 0},
    {"depth_minute", "\u2264\u00a01\u00a0min", "due within the next 60 s", K_TEXT, 0},
    {"depth_hour", "1\u00a0min\u20131\u00a0h", "due later within the next hour", K_TEXT, 0},
    {"depth_day", "1\u00a0h\u20131\u00a0d", "due later within a day (census, by 100 s bucket)",
     K_TEXT, 0},
    {"depth_week", "1\u20137\u00a0d", "due later within a week (census)", K_TEXT, 0},
    {"depth_later", "Later", "due in more than a week (census)", K_TEXT, 0},
    {"census_total", "All", "every job, due at any time, at the last census pass", K_TEXT, 0},
    {"depth_dead", "Dead", "dead letters", K_TEXT, 0},
    {"depth_oldest_overdue_ms", "Oldest overdue", "how long the most overdue job was due",
     K_AGE, 0},
    {"consumers", "Consumers", "connections subscribed on this daemon", K_TEXT, 1},
    {"inflight", "In flight", "pushed by this daemon, not yet settled", K_TEXT, 1},
    {"put_per_s", "Puts", "puts through this daemon a second, over the last minute", K_RATE, 1},
    {"delivered_per_s", "Deliveries", "pushes by this daemon a second, over the last minute",
     K_RATE, 1},
    {"acked_per_s", "Acks", "acks on this daemon a second, over the last minute", K_RATE, 1},
    {"lateness_p50_ms", "Lateness p50", "median lateness: " LATENESS_HINT, K_DURATION, 1},
    {"lateness_p99_ms", "Lateness p99", "99th percentile lateness: " LATENESS_HINT, K_DURATION,
     1},
};
#define NCOLUMNS (sizeof columns / sizeof columns[0])

/* QUEUE's STATS QUEUE line, split into F (pointing into LINE); how many fields. ALL: every
 * queue's job counts, read once for the page. */
static size_t queue_fields(struct deferd *d, const char *queue, const struct queue_counts *all,
                           char *line, struct kv *f)
{
    if (!all || metrics_expose_queue_counted(d->metrics, queue, all, line, LINE_MAX_) != 0)
        return 0;
    return kvline_split(line, f, FIELDS_MAX);
}

/* Every queue's job counts (one walk of the mirrored jobs), or NULL when out of memory. */
static struct queue_counts *counts_of(struct deferd *d)
{
    struct queue_counts *all = calloc(d->cfg->nqueues + 1, sizeof *all);
    if (all && d->dispatcher)
        dispatcher_queue_counts(d->dispatcher, all);
    return all;
}

/* A cell's text for people: V (a STATS value, NULL when absent) as KIND shows it, into BUF. */
static const char *cell_text(enum kind kind, const char *v, char *buf, size_t len)
{
    int number = v && kvline_number(v);
    switch (kind) {
    case K_PAUSED:
        return v && strcmp(v, "1") == 0 ? "paused" : "";
    case K_AGE:
        if (!number || strtod(v, NULL) <= 0)
            return "-"; /* none overdue */
        web_format_duration(strtod(v, NULL), buf, len);
        return buf;
    case K_DURATION:
    case K_RATE:
        if (!number)
            return "-"; /* no sample yet */
        (kind == K_RATE ? web_format_rate : web_format_duration)(strtod(v, NULL), buf, len);
        return buf;
    case K_TEXT:
        break;
    }
    return v ? v : "-";
}

static void row_html(struct evbuffer *out, const char *queue, const struct kv *f, size_t n)
{
    evbuffer_add_printf(out, "<tr data-queue=\"");
    web_escape(out, queue);
    evbuffer_add_printf(out, "\"><th scope=\"row\"><a href=\"/ui/queues/");
    web_escape(out, queue); /* a queue's name is letters, digits and . _ - */
    evbuffer_add_printf(out, "\">");
    web_escape(out, queue);
    evbuffer_add_printf(out, "</a></th>");
    for (size_t c = 0; c < NCOLUMNS; c++) {
        char buf[48];
        const char *v = cell_text(columns[c].kind, kvline_get(f, n, columns[c].field), buf,
                                  sizeof buf);
        evbuffer_add_printf(out, "<td data-field=\"%s\" data-kind=\"%s\">", columns[c].field,
                            kind_names[columns[c].kind]);
        web_escape(out, v);
        evbuffer_add_printf(out, "</td>");
    }
    evbuffer_add_printf(out, "</tr>\n");
}

static int overview_html(struct deferd *d, struct evbuffer *out)
{
    const struct config *cfg = d->cfg;
    char *line = malloc(LINE_MAX_);
    struct kv *f = calloc(FIELDS_MAX, sizeof *f);
    if (!line || !f) {
        free(line);
        free(f);
        return -1;
    }
    struct queue_counts *all = counts_of(d);
    web_page_begin(out, d, "Queues");
    evbuffer_add_printf(out, "<h1>Queues</h1>\n<table id=\"queues\"><thead><tr><td></td>"
                             "<th scope=\"colgroup\" colspan=\"10\" class=\"group\">In "
                             "ZooKeeper: every daemon's jobs</th><th scope=\"colgroup\" "
                             "colspan=\"7\" class=\"group\">This daemon</th></tr>\n<tr>"
                             "<th scope=\"col\">Queue</th>");
    for (size_t c = 0; c < NCOLUMNS; c++)
        evbuffer_add_printf(out, "<th scope=\"col\" title=\"%s\">%s</th>", columns[c].hint,
                            columns[c].title);
    evbuffer_add_printf(out, "</tr></thead>\n<tbody>\n");
    for (size_t i = 0; i < cfg->nqueues; i++) {
        size_t n = queue_fields(d, cfg->queues[i]->name, all, line, f);
        row_html(out, cfg->queues[i]->name, f, n);
    }
    char every[48];
    web_format_duration((double)cfg->depth_interval_ms, every, sizeof every);
    evbuffer_add_printf(out, "</tbody></table>\n<p class=\"note\">Jobs due within the hour and "
                             "dead letters are read from ZooKeeper every %s ([metrics] "
                             "depth_interval). Those due later, and All, are counted by the "
                             "census, which reads %u jobs a second ([metrics] census_rate): on "
                             "a big backlog they are as old as its last pass, which each "
                             "queue's page dates.</p>\n<p class=\"note\" id=\"lateness-note\">"
                             "Lateness is how long after its due time a job was pushed to a "
                             "consumer, over this daemon's last 1024 deliveries. It counts the "
                             "whole wait: a job that fell due while no consumer was connected, "
                             "all were busy or the queue was paused shows that time too, so a "
                             "large lateness after consumers were away is their absence, not "
                             "a slow deferd.</p>\n<p class=\"note\">The figures refresh every "
                             "2 s with JavaScript; without it, reload the page.</p>\n",
                        every, cfg->census_rate);
    web_page_end(out);
    free(all);
    free(line);
    free(f);
    return 0;
}

static void daemon_json(struct jsonw *w, struct deferd *d)
{
    jsonw_obj_begin(w, "daemon");
    jsonw_str(w, "version", DEFERD_VERSION);
    jsonw_str(w, "zk_state",
              d->session ? session_state_name(session_state(d->session)) : "CONNECTING");
    jsonw_int(w, "now_ms", cluster_now_ms());
    jsonw_uint(w, "depth_interval_ms", d->cfg->depth_interval_ms);
    jsonw_obj_end(w);
}

static int overview_json(struct deferd *d, struct evbuffer *out)
{
    const struct config *cfg = d->cfg;
    char *line = malloc(LINE_MAX_), *text = NULL;
    struct kv *f = calloc(FIELDS_MAX, sizeof *f);
    size_t len = 0;
    FILE *mem = line && f ? open_memstream(&text, &len) : NULL;
    if (!mem) {
        free(line);
        free(f);
        return -1;
    }
    struct jsonw w;
    jsonw_init(&w, mem);
    jsonw_obj_begin(&w, NULL);
    daemon_json(&w, d);
    jsonw_arr_begin(&w, "queues");
    struct queue_counts *all = counts_of(d);
    for (size_t i = 0; i < cfg->nqueues; i++) {
        size_t n = queue_fields(d, cfg->queues[i]->name, all, line, f);
        jsonw_obj_begin(&w, NULL);
        if (n == 0) /* out of memory for its line: the row stays, its figures unknown */
            jsonw_str(&w, "queue", cfg->queues[i]->name);
        for (size_t k = 0; k < n; k++)
            kvline_json(&w, &f[k]);
        jsonw_obj_end(&w);
    }
    jsonw_arr_end(&w);
    jsonw_obj_end(&w);
    jsonw_finish(&w);
    free(all);
    int rc = fclose(mem) == 0 ? evbuffer_add(out, text, len) : -1;
    free(text);
    free(line);
    free(f);
    return rc;
}

/* Built whole on the loop: the figures are the daemon's own, no read waits. */
void web_overview_page(struct web *w, struct evhttp_request *req, int json)
{
    struct evbuffer *body = evbuffer_new();
    if (!body || (json ? overview_json : overview_html)(w->d, body) != 0) {
        log_warn("web: %s: cannot build the answer: out of memory",
                 evhttp_request_get_uri(req));
        web_send_text(req, 500, "Internal Server Error", "out of memory");
    } else {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
        web_reply(req, 200, "OK", json ? "application/json" : "text/html; charset=utf-8", body);
    }
    if (body)
        evbuffer_free(body);
}
