/* A queue's dead letters (/ui/queues/Q/dead, /api/v1/queues/Q/dead): a page of them in
 * bucket order, each with its payload's first bytes, read on the reader thread by the code
 * deferctl dead runs; kick and delete, one or all, for a token holder. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "daemon.h"
#include "jsonw.h"
#include "web_auth.h"
#include "web_call.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_params.h"
#include "web_reply.h"
#include "web_state.h"

struct dead_call {
    struct web_call c;          /* first */
    char queue[QUEUE_NAME_MAX + 1];
    char after[LAYOUT_ID_MAX + 1];
    size_t limit;
    char (*ids)[LAYOUT_ID_MAX + 1];
    size_t nids;                /* up to limit + 1: the last only says "more" */
    struct admin_job *rows;
    size_t n;
    long long total;
    int can_act;
};

/* ---- on the reader thread ---- */

static int take_id(const char *id, void *ctx)
{
    struct dead_call *dc = ctx;
    snprintf(dc->ids[dc->nids++], sizeof dc->ids[0], "%s", id);
    return dc->nids > dc->limit;
}

static void read_dead(struct admin *a, const char *err, void *ctx)
{
    struct dead_call *dc = ctx;
    char *e = dc->c.err;
    size_t el = sizeof dc->c.err;
    if (web_call_no_session(&dc->c, a, err))
        return;
    dc->c.rc = admin_dead_count(a, dc->queue, &dc->total, e, el);
    if (dc->c.rc == 0)
        dc->c.rc = admin_dead_each(a, dc->queue, dc->after[0] ? dc->after : NULL, take_id, dc,
                                   e, el);
    size_t shown = dc->nids < dc->limit ? dc->nids : dc->limit;
    for (size_t i = 0; dc->c.rc == 0 && i < shown; i++) {
        int rc = admin_dead_read(a, dc->ids[i], &dc->rows[dc->n], WEB_PREVIEW_BYTES, e, el);
        if (rc == 0)
            dc->n++;
        else if (rc != ADMIN_NOT_FOUND) /* NOT_FOUND: kicked or deleted since it was listed */
            dc->c.rc = rc;
    }
}

/* ---- on the loop ---- */

static void fill(struct web_call *c, struct jsonw *jw)
{
    struct dead_call *dc = (struct dead_call *)c;
    jsonw_obj_begin(jw, NULL);
    jsonw_str(jw, "queue", dc->queue);
    jsonw_int(jw, "total", dc->total);
    jsonw_arr_begin(jw, "dead");
    for (size_t i = 0; i < dc->n; i++) {
        const struct admin_job *r = &dc->rows[i];
        jsonw_obj_begin(jw, NULL);
        jsonw_str(jw, "id", r->id);
        jsonw_str(jw, "uid", r->jn.uid);
        jsonw_uint(jw, "due_ms", r->jn.due_ms);
        jsonw_uint(jw, "priority", r->jn.priority);
        jsonw_uint(jw, "attempts", r->attempts);
        jsonw_str(jw, "key", r->jn.key[0] ? r->jn.key : NULL);
        jsonw_int(jw, "bytes", r->bytes);
        jsonw_strn(jw, "preview", r->payload ? r->payload : "", (size_t)r->len);
        jsonw_obj_end(jw);
    }
    jsonw_arr_end(jw);
    jsonw_str(jw, "next_after", dc->nids > dc->limit ? dc->ids[dc->limit - 1] : NULL);
    jsonw_obj_end(jw);
}

static void row_form(struct dead_call *dc, struct evbuffer *out, const char *id,
                     const char *action, const char *label)
{
    evbuffer_add_printf(out, "<form method=\"post\" class=\"inline\" action=\"/ui/job/%s\">"
                             "<input type=\"hidden\" name=\"id\" value=\"", action);
    web_escape(out, id);
    evbuffer_add_printf(out, "\">");
    web_csrf_input(dc->c.w, dc->c.req, out);
    evbuffer_add_printf(out, "<button type=\"submit\" class=\"%s\">%s</button></form>",
                        action, label);
}

static void row_html(struct dead_call *dc, struct evbuffer *out, const struct admin_job *r)
{
    evbuffer_add_printf(out, "<tr data-id=\"");
    web_escape(out, r->id);
    evbuffer_add_printf(out, "\"><td class=\"id\"><a href=\"/ui/job?id=");
    web_urlencode(out, r->id);
    evbuffer_add_printf(out, "\">");
    web_escape(out, r->jn.uid);
    evbuffer_add_printf(out, "</a></td><td>");
    web_time(out, r->jn.due_ms);
    evbuffer_add_printf(out, "</td><td>%u</td><td>%u</td><td>", r->jn.priority, r->attempts);
    web_escape(out, r->jn.key);
    evbuffer_add_printf(out, "</td><td>%d</td><td class=\"payload\"><code>", r->bytes);
    web_escape_bytes(out, r->payload ? r->payload : "", (size_t)r->len);
    evbuffer_add_printf(out, "%s</code></td>", r->bytes > r->len ? "\u2026" : "");
    if (dc->can_act) {
        evbuffer_add_printf(out, "<td>");
        row_form(dc, out, r->id, "kick", "Kick");
        row_form(dc, out, r->id, "delete", "Delete");
        evbuffer_add_printf(out, "</td>");
    }
    evbuffer_add_printf(out, "</tr>\n");
}

static void bulk_forms(struct dead_call *dc, struct evbuffer *out)
{
    static const char *const what[2][2] = {{"kick-all", "Kick every dead letter back"},
                                           {"delete-all", "Delete every dead letter"}};
    for (int i = 0; i < 2; i++) {
        evbuffer_add_printf(out, "<form method=\"post\" class=\"act\" action=\"/ui/queues/%s/"
                                 "dead/%s\">", dc->queue, what[i][0]);
        web_csrf_input(dc->c.w, dc->c.req, out);
        evbuffer_add_printf(out, "<label><input type=\"checkbox\" name=\"confirm\" value="
                                 "\"yes\" required> all %lld of them</label> <button type="
                                 "\"submit\" id=\"%s\">%s</button></form>\n", dc->total,
                            what[i][0], what[i][1]);
    }
}

static void html(struct web_call *c)
{
    struct dead_call *dc = (struct dead_call *)c;
    struct evbuffer *out = evbuffer_new();
    if (!out) {
        web_fail(dc->c.req, 0, 500, "Internal Server Error", "out of memory");
        return;
    }
    web_page_begin(out, dc->c.w->d, "Dead letters");
    evbuffer_add_printf(out, "<p class=\"crumbs\"><a href=\"/ui/\">Queues</a> / <a href=\""
                             "/ui/queues/%s\">%s</a> /</p>\n<h1>Dead letters of %s: "
                             "<span id=\"dead-total\">%lld</span></h1>\n", dc->queue,
                        dc->queue, dc->queue, dc->total);
    if (dc->can_act && dc->total > 0)
        bulk_forms(dc, out);
    evbuffer_add_printf(out, "<table id=\"dead\" class=\"rows\"><thead><tr><th>Job (uid)</th>"
                             "<th>Due (UTC)</th><th>Priority</th><th>Attempts</th><th>Key</th>"
                             "<th>Bytes</th><th>Payload</th>%s</tr></thead>\n<tbody>\n",
                        dc->can_act ? "<th></th>" : "");
    for (size_t i = 0; i < dc->n; i++)
        row_html(dc, out, &dc->rows[i]);
    evbuffer_add_printf(out, "</tbody></table>\n<p class=\"pager\">%zu shown", dc->n);
    if (dc->nids > dc->limit) {
        evbuffer_add_printf(out, " \u00b7 <a id=\"next\" href=\"/ui/queues/%s/dead?limit=%zu"
                                 "&amp;after=", dc->queue, dc->limit);
        web_urlencode(out, dc->ids[dc->limit - 1]);
        evbuffer_add_printf(out, "\">next page</a>");
    }
    evbuffer_add_printf(out, "</p>\n");
    web_page_end(out);
    web_send_page(dc->c.req, out);
    evbuffer_free(out);
}

static void clear(struct web_call *c)
{
    struct dead_call *dc = (struct dead_call *)c;
    for (size_t i = 0; i < dc->n; i++)
        admin_job_clear(&dc->rows[i]);
    free(dc->rows);
    free(dc->ids);
}

/* ?after=ID, ?limit=N: 0; -1 with C's error naming the bad one (400); -2 out of memory. */
static int parse(struct dead_call *dc, struct evkeyvalq *q)
{
    const char *after = evhttp_find_header(q, "after");
    char queue[QUEUE_NAME_MAX + 1], why[QUEUE_NAME_MAX + 128];
    struct job_name jn;
    if (after && after[0] &&
        (snprintf(dc->after, sizeof dc->after, "%s", after) >= (int)sizeof dc->after ||
         layout_parse_id(dc->after, queue, sizeof queue, &jn) != 0 ||
         strcmp(queue, dc->queue) != 0 || strchr(dc->after + strlen(queue) + 1, '/'))) {
        /* a dead letter's id has no shard */
        snprintf(why, sizeof why, "is not a dead letter's id of queue %s: after= is the "
                 "previous page's last id, as its \"next page\" link sets it", dc->queue);
        web_bad_param(dc->c.err, sizeof dc->c.err, "after", after, why);
        return -1;
    }
    if (web_limit(q, WEB_PAGE_DEFAULT, WEB_PAGE_MAX, &dc->limit, dc->c.err,
                  sizeof dc->c.err) != 0)
        return -1;
    dc->ids = calloc(dc->limit + 1, sizeof *dc->ids);
    dc->rows = calloc(dc->limit, sizeof *dc->rows);
    return dc->ids && dc->rows ? 0 : -2;
}

static const struct web_call kind = {.fill = fill, .html = html, .clear = clear};

void web_dead_page(struct web *w, struct evhttp_request *req, const char *queue, int json)
{
    struct evkeyvalq q;
    struct dead_call *dc = web_call_new(sizeof *dc, w, req, json, &kind);
    if (!dc)
        return;
    snprintf(dc->queue, sizeof dc->queue, "%s", queue);
    int rc = web_call_params(&dc->c, &q) != 0 ? -1 : parse(dc, &q);
    evhttp_clear_headers(&q);
    if (rc == -2) {
        web_call_refuse(&dc->c, 500, "Internal Server Error", "out of memory");
        return;
    }
    if (rc != 0) {
        web_call_refuse(&dc->c, 400, "Bad Request", dc->c.err);
        return;
    }
    dc->can_act = web_can_act(w, req);
    web_call_start(&dc->c, read_dead);
}
