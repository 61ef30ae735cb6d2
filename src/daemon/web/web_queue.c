/* A queue's page (/ui/queues/Q) and its jobs (/api/v1/queues/Q/jobs): the timeline of due
 * times ahead, from the census's tally (no read), and one page of jobs in due order, read
 * from ZooKeeper on the reader thread by the code deferctl list runs (admin_list): only
 * the buckets the page needs, with each job's first bytes. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "daemon.h"
#include "depth.h"
#include "dispatcher.h"
#include "jsonw.h"
#include "limit.h"
#include "cluster_time.h"
#include "rate.h"
#include "units.h"
#include "web_auth.h"
#include "web_call.h"
#include "web_format.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_params.h"
#include "web_reply.h"
#include "web_state.h"

struct jobs_call {
    struct web_call c;          /* first */
    char queue[QUEUE_NAME_MAX + 1];
    char after[LAYOUT_ID_MAX + 1];
    struct admin_list_opts o;
    struct admin_job *rows;
    size_t n, cap;
    int more;
    char cursor[LAYOUT_ID_MAX + 1];
    struct evbuffer *top;       /* HTML: what the loop knows, built before the read */
};

/* ---- on the reader thread ---- */

static void keep_row(const struct admin_job *job, void *ctx)
{
    struct jobs_call *jc = ctx;
    if (jc->n == jc->cap) {
        size_t cap = jc->cap ? jc->cap * 2 : 64;
        struct admin_job *rows = realloc(jc->rows, cap * sizeof *rows);
        if (!rows)
            return; /* the page is short; it says how many it shows */
        jc->rows = rows;
        jc->cap = cap;
    }
    struct admin_job *r = &jc->rows[jc->n];
    *r = *job;
    r->payload = NULL;
    if (job->payload && (r->payload = malloc((size_t)job->len + 1)) != NULL)
        memcpy(r->payload, job->payload, (size_t)job->len);
    else
        r->len = 0;
    jc->n++;
}

static void list_jobs(struct admin *a, const char *err, void *ctx)
{
    struct jobs_call *jc = ctx;
    if (web_call_no_session(&jc->c, a, err))
        return;
    jc->c.rc = admin_list(a, jc->queue, &jc->o, keep_row, jc, &jc->more, jc->cursor,
                          sizeof jc->cursor, jc->c.err, sizeof jc->c.err);
}

/* ---- on the loop ---- */

static void job_json(struct jsonw *jw, const struct admin_job *r)
{
    jsonw_obj_begin(jw, NULL);
    jsonw_str(jw, "id", r->id);
    jsonw_str(jw, "uid", r->jn.uid);
    jsonw_uint(jw, "due_ms", r->jn.due_ms);
    jsonw_uint(jw, "priority", r->jn.priority);
    jsonw_uint(jw, "attempts", r->attempts);
    jsonw_str(jw, "key", r->jn.key[0] ? r->jn.key : NULL);
    jsonw_bool(jw, "held", r->locked);
    jsonw_str(jw, "holder", r->holder[0] ? r->holder : NULL);
    jsonw_bool(jw, "packed", r->jn.pack[0] != '\0');
    jsonw_int(jw, "bytes", r->bytes);
    jsonw_strn(jw, "preview", r->payload ? r->payload : "", (size_t)r->len);
    jsonw_obj_end(jw);
}

static void fill(struct web_call *c, struct jsonw *jw)
{
    struct jobs_call *jc = (struct jobs_call *)c;
    jsonw_obj_begin(jw, NULL);
    jsonw_str(jw, "queue", jc->queue);
    jsonw_arr_begin(jw, "jobs");
    for (size_t i = 0; i < jc->n; i++)
        job_json(jw, &jc->rows[i]);
    jsonw_arr_end(jw);
    jsonw_str(jw, "next_after", jc->more ? jc->cursor : NULL);
    jsonw_obj_end(jw);
}

static void job_link(struct evbuffer *out, const char *id, const char *text)
{
    evbuffer_add_printf(out, "<a href=\"/ui/job?id=");
    web_urlencode(out, id);
    evbuffer_add_printf(out, "\">");
    web_escape(out, text);
    evbuffer_add_printf(out, "</a>");
}

static void row_html(struct evbuffer *out, const struct admin_job *r)
{
    evbuffer_add_printf(out, "<tr data-id=\"");
    web_escape(out, r->id);
    evbuffer_add_printf(out, "\"><td class=\"id\">");
    job_link(out, r->id, r->jn.uid);
    evbuffer_add_printf(out, "</td><td>");
    web_time(out, r->jn.due_ms);
    evbuffer_add_printf(out, "</td><td>%u</td><td>%u</td><td>", r->jn.priority, r->attempts);
    web_escape(out, r->jn.key);
    evbuffer_add_printf(out, "</td><td>");
    web_escape(out, r->locked ? (r->holder[0] ? r->holder : "held") : "");
    evbuffer_add_printf(out, "</td><td>%d%s</td><td class=\"payload\"><code>", r->bytes,
                        r->jn.pack[0] ? " (packed)" : "");
    web_escape_bytes(out, r->payload ? r->payload : "", (size_t)r->len);
    evbuffer_add_printf(out, "%s</code></td></tr>\n", r->bytes > r->len ? "\u2026" : "");
}

static void html(struct web_call *c)
{
    struct jobs_call *jc = (struct jobs_call *)c;
    struct evbuffer *out = jc->top;
    evbuffer_add_printf(out, "<h2>Jobs by due time</h2>\n<table id=\"jobs\" class=\"rows\">"
                             "<thead><tr><th>Job (uid)</th><th>Due (UTC)</th><th>Priority</th>"
                             "<th>Attempts</th><th>Key</th><th>Held by</th><th>Bytes</th>"
                             "<th>Payload</th></tr></thead>\n<tbody>\n");
    for (size_t i = 0; i < jc->n; i++)
        row_html(out, &jc->rows[i]);
    evbuffer_add_printf(out, "</tbody></table>\n<p class=\"pager\">%zu job(s) shown",
                        jc->n);
    if (jc->more) {
        evbuffer_add_printf(out, " \u00b7 <a id=\"next\" href=\"/ui/queues/%s?limit=%zu&amp;"
                                 "after=", jc->queue, jc->o.limit);
        web_urlencode(out, jc->cursor);
        evbuffer_add_printf(out, "\">next page</a>");
    }
    if (jc->after[0])
        evbuffer_add_printf(out, " \u00b7 <a href=\"/ui/queues/%s\">first page</a>", jc->queue);
    evbuffer_add_printf(out, "</p>\n");
    web_page_end(out);
    web_send_page(jc->c.req, out);
}

static void clear(struct web_call *c)
{
    struct jobs_call *jc = (struct jobs_call *)c;
    for (size_t i = 0; i < jc->n; i++)
        admin_job_clear(&jc->rows[i]);
    free(jc->rows);
    if (jc->top)
        evbuffer_free(jc->top);
}

/* ---- the top of the page: what the loop knows without a read ---- */

static const struct horizon {
    const char *title, *bar;
    int64_t width_ms;
    size_t n;
} horizons[] = {
    {"Next hour", "5 minutes", 300000, 12},
    {"Next day", "hour", 3600000, 24},
    {"Next 30 days", "day", 86400000, 30},
};

static void chart(struct evbuffer *out, const struct horizon *h, const uint64_t *bars,
                  int64_t now)
{
    uint64_t max = 1, total = 0;
    for (size_t i = 0; i < h->n; i++) {
        max = bars[i] > max ? bars[i] : max;
        total += bars[i];
    }
    evbuffer_add_printf(out, "<figure class=\"chart\"><figcaption>%s: %llu job(s), a bar a "
                             "%s</figcaption><svg viewBox=\"0 0 %zu 64\" role=\"img\" "
                             "data-total=\"%llu\" preserveAspectRatio=\"none\">",
                        h->title, (unsigned long long)total, h->bar, h->n * 10,
                        (unsigned long long)total);
    for (size_t i = 0; i < h->n; i++) {
        unsigned height = bars[i] ? (unsigned)(1 + bars[i] * 59 / max) : 0;
        evbuffer_add_printf(out, "<rect x=\"%zu\" y=\"%u\" width=\"8\" height=\"%u\" "
                                 "data-jobs=\"%llu\"><title>from ", i * 10, 64 - height,
                            height, (unsigned long long)bars[i]);
        web_time(out, (uint64_t)(now + (int64_t)i * h->width_ms));
        evbuffer_add_printf(out, ": %llu</title></rect>", (unsigned long long)bars[i]);
    }
    evbuffer_add_printf(out, "</svg></figure>\n");
}

static void timeline(struct evbuffer *out, struct deferd *d, const char *queue)
{
    uint64_t bars[32];
    int64_t now = cluster_now_ms(), began = 0;
    evbuffer_add_printf(out, "<section id=\"timeline\"><h2>Due ahead</h2>\n");
    for (size_t i = 0; i < sizeof horizons / sizeof horizons[0]; i++) {
        if (depth_census_bars(d->depth, queue, now, horizons[i].width_ms, horizons[i].n, bars,
                              &began) != 0) {
            evbuffer_add_printf(out, "<p class=\"note\">No census pass of this queue has "
                                     "ended yet ([metrics] census_rate): the timeline "
                                     "appears once one has.</p>\n");
            break;
        }
        chart(out, &horizons[i], bars, now);
    }
    if (began) {
        char ago[48];
        web_format_duration((double)(now - began), ago, sizeof ago);
        evbuffer_add_printf(out, "<p class=\"note\">Counted by the census pass that began "
                                 "%s ago, by the 100-second bucket each job is due in.</p>",
                            ago);
    }
    evbuffer_add_printf(out, "</section>\n");
}

static void pause_form(struct web *w, struct evhttp_request *req, struct evbuffer *out,
                       const char *queue, int paused)
{
    evbuffer_add_printf(out, "<form method=\"post\" class=\"act\" action=\"/ui/queues/%s/%s\">",
                        queue, paused ? "resume" : "pause");
    web_csrf_input(w, req, out);
    evbuffer_add_printf(out, "<button type=\"submit\" id=\"%s\">%s</button></form>\n",
                        paused ? "resume" : "pause", paused ? "Resume" : "Pause");
}

/* "per second", "per minute", "per hour": the windows rate = N/s|m|h allows. */
static const char *window_name(uint64_t ms)
{
    return ms >= 3600000 ? "hour" : ms >= 60000 ? "minute" : "second";
}

/* A queue with a rate (docs/limits.md): the rates and the starts this daemon knows of. */
static void rate_line(struct evbuffer *out, const struct dqueue *dq)
{
    struct rate_stats rs;
    rate_get_stats(dq ? dq->rate : NULL, &rs);
    if (!rs.n && !rs.group_n)
        return;
    evbuffer_add_printf(out, "<p class=\"rate\" data-rate=\"%u\" data-rate-window-ms=\"%llu\" "
                        "data-rate-started=\"%u\" data-group-rate=\"%u\">", rs.n,
                        (unsigned long long)rs.window_ms, rs.started, rs.group_n);
    if (rs.n)
        evbuffer_add_printf(out, "At most %u started per %s across the cluster; %u in the last "
                            "window, as this daemon knows. ", rs.n, window_name(rs.window_ms),
                            rs.started);
    if (rs.group_n)
        evbuffer_add_printf(out, "At most %u per %s for each group; %u group%s started here "
                            "within a window.", rs.group_n, window_name(rs.group_window_ms),
                            rs.groups, rs.groups == 1 ? "" : "s");
    evbuffer_add_printf(out, "</p>\n");
}

/* A queue with concurrency (docs/limits.md): the limit, its slots and who waits for one. */
static void limit_line(struct evbuffer *out, const struct dqueue *dq)
{
    struct limit_stats st;
    limit_get_stats(dq ? dq->limit : NULL, &st);
    rate_line(out, dq);
    if (!st.max && !st.group_max)
        return;
    evbuffer_add_printf(out, "<p class=\"limit\" data-concurrency=\"%u\" data-slots-taken=\"%u\" "
                        "data-limit-waiting=\"%zu\" data-group-concurrency=\"%u\">", st.max,
                        st.taken, st.waiting, st.group_max);
    if (st.max)
        evbuffer_add_printf(out, "Concurrency %u: %u slot%s held across the cluster. ", st.max,
                            st.taken, st.taken == 1 ? "" : "s");
    if (st.group_max)
        evbuffer_add_printf(out, "At most %u of each group; %u group%s hold slots. ",
                            st.group_max, st.groups, st.groups == 1 ? "" : "s");
    evbuffer_add_printf(out, "This daemon's consumers hold %u; %zu due job%s wait for a slot "
                        "here.", st.ours, st.waiting, st.waiting == 1 ? "" : "s");
    for (int k = 0; k < LIMIT_TOP_GROUPS && st.top[k].taken; k++) {
        evbuffer_add_printf(out, "%s", k ? ", " : " Busiest groups: ");
        web_escape(out, st.top[k].group);
        evbuffer_add_printf(out, " (%u)", st.top[k].taken);
    }
    evbuffer_add_printf(out, "</p>\n");
}

static int build_top(struct jobs_call *jc)
{
    struct web *w = jc->c.w;
    struct dqueue *dq = w->d->dispatcher ? dispatcher_queue(w->d->dispatcher, jc->queue) : NULL;
    int paused = dq && dq->paused;
    if (!(jc->top = evbuffer_new()))
        return -1;
    web_page_begin(jc->top, w->d, jc->queue);
    evbuffer_add_printf(jc->top, "<p class=\"crumbs\"><a href=\"/ui/\">Queues</a> /</p>\n"
                                 "<h1>Queue %s%s</h1>\n<nav class=\"tabs\"><a href=\"/ui/"
                                 "queues/%s/dead\">Dead letters</a></nav>\n", jc->queue,
                        paused ? " <span class=\"paused\">paused</span>" : "", jc->queue);
    if (web_can_act(w, jc->c.req))
        pause_form(w, jc->c.req, jc->top, jc->queue, paused);
    limit_line(jc->top, dq);
    timeline(jc->top, w->d, jc->queue);
    evbuffer_add_printf(jc->top, "<form method=\"get\" action=\"/ui/job\" class=\"find\">"
                                 "<label>Find a job by id <input name=\"id\" size=\"60\" "
                                 "placeholder=\"%s/...\"></label><button type=\"submit\">"
                                 "Show</button></form>\n", jc->queue);
    return 0;
}

/* ?after=ID (the previous page's last), ?from=TIME (due from), ?limit=N; -1 with C's error
 * naming the first bad one. */
static int parse(struct jobs_call *jc, struct evkeyvalq *q)
{
    const char *after = evhttp_find_header(q, "after"), *from = evhttp_find_header(q, "from");
    char *err = jc->c.err, why[QUEUE_NAME_MAX + 128];
    jc->o = (struct admin_list_opts){0, UINT64_MAX, WEB_PAGE_DEFAULT, NULL, WEB_PREVIEW_BYTES};
    char queue[QUEUE_NAME_MAX + 1];
    struct job_name jn;
    if (after && after[0] &&
        (snprintf(jc->after, sizeof jc->after, "%s", after) >= (int)sizeof jc->after ||
         layout_parse_id(jc->after, queue, sizeof queue, &jn) != 0 ||
         strcmp(queue, jc->queue) != 0)) {
        snprintf(why, sizeof why, "is not a job id of queue %s: after= is the previous "
                 "page's last id, as its \"next page\" link sets it", jc->queue);
        web_bad_param(err, sizeof jc->c.err, "after", after, why);
        return -1;
    }
    jc->o.after = jc->after[0] ? jc->after : NULL;
    if (from && units_parse_time_ms(from, cluster_now_ms(), &jc->o.from_ms) != 0) {
        web_bad_param(err, sizeof jc->c.err, "from", from, "is not a time: from= is epoch "
                      "ms, 2026-11-27T10:00Z or now+1h");
        return -1;
    }
    return web_limit(q, WEB_PAGE_DEFAULT, WEB_PAGE_MAX, &jc->o.limit, err, sizeof jc->c.err);
}

static const struct web_call kind = {.fill = fill, .html = html, .clear = clear};

void web_queue_page(struct web *w, struct evhttp_request *req, const char *queue, int json)
{
    const struct queue_config *qc = config_queue(w->d->cfg, queue);
    struct evkeyvalq q;
    struct jobs_call *jc = web_call_new(sizeof *jc, w, req, json, &kind);
    if (!jc)
        return;
    snprintf(jc->queue, sizeof jc->queue, "%s", queue);
    int bad = web_call_params(&jc->c, &q) != 0 || parse(jc, &q) != 0;
    evhttp_clear_headers(&q);
    if (bad) {
        web_call_refuse(&jc->c, 400, "Bad Request", jc->c.err);
        return;
    }
    if (qc->format != QF_NATIVE) {
        web_call_refuse(&jc->c, 404, "Not Found", "a Curator queue's items are not "
                        "listed here (the dashboard lists deferd's own layout)");
        return;
    }
    if (!json && build_top(jc) != 0) {
        web_call_refuse(&jc->c, 500, "Internal Server Error", "out of memory");
        return;
    }
    web_call_start(&jc->c, list_jobs);
}
