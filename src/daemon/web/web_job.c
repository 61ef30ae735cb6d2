/* A job's page (/ui/job?id=) and /api/v1/job?id=: the job pending, packed or dead, with its
 * payload, read on the reader thread by the code deferctl show runs (admin_show); the
 * actions it allows a token holder. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "admin_flow_json.h"
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

struct job_call {
    struct web_call c;          /* first */
    int curator;                /* a Curator queue's: only its dead letters have such ids */
    char id[LAYOUT_ID_MAX + 1];
    struct admin_job job;
    int can_act;
};

static void show_job(struct admin *a, const char *err, void *ctx)
{
    struct job_call *jc = ctx;
    if (web_call_no_session(&jc->c, a, err))
        return;
    jc->c.rc = jc->curator ? admin_dead_read(a, jc->id, &jc->job, CONFIG_MAX_PAYLOAD_LIMIT,
                                             jc->c.err, sizeof jc->c.err)
                           : admin_show(a, jc->id, &jc->job, jc->c.err, sizeof jc->c.err);
}

static const char *state_of(const struct admin_job *j)
{
    return j->dead ? "dead" : j->waiting ? "waiting-for-children" : j->locked ? "held"
                                                                           : "pending";
}

static void fill(struct web_call *c, struct jsonw *jw)
{
    const struct admin_job *j = &((struct job_call *)c)->job;
    jsonw_obj_begin(jw, NULL);
    jsonw_str(jw, "id", j->id);
    jsonw_str(jw, "uid", j->jn.uid);
    jsonw_str(jw, "state", state_of(j));
    jsonw_uint(jw, "due_ms", j->jn.due_ms);
    jsonw_uint(jw, "priority", j->jn.priority);
    jsonw_uint(jw, "attempts", j->attempts);
    if (j->ttr_ms) { /* the lease a delivery gets, as deferctl show --json says it */
        jsonw_uint(jw, "ttr_ms", j->ttr_ms);
        jsonw_bool(jw, "ttr_default", j->ttr_default);
    } else {
        jsonw_str(jw, "ttr_ms", NULL); /* a Curator dead letter: no lease of its own */
    }
    jsonw_str(jw, "key", j->jn.key[0] ? j->jn.key : NULL);
    jsonw_str(jw, "holder", j->holder[0] ? j->holder : NULL);
    jsonw_bool(jw, "packed", j->jn.pack[0] != '\0');
    jsonw_int(jw, "bytes", j->len);
    jsonw_strn(jw, "payload", j->payload ? j->payload : "", (size_t)j->len);
    jsonw_base64(jw, "payload_base64", j->payload ? j->payload : "", (size_t)j->len);
    admin_flow_json(jw, j);
    jsonw_obj_end(jw);
}

/* A link to job ID's page. */
static void job_link(struct evbuffer *out, const char *id)
{
    evbuffer_add_printf(out, "<a href=\"/ui/job?id=");
    web_escape(out, id); /* ids hold no character a query needs escaped but & and # */
    evbuffer_add_printf(out, "\">");
    web_escape(out, id);
    evbuffer_add_printf(out, "</a>");
}

/* The flow's part of the page: a child's parent; a waiting parent's counts and children. */
static void flow_html(struct evbuffer *out, const struct admin_job *j)
{
    if (j->flow_parent[0]) {
        evbuffer_add_printf(out, "<p class=\"flow\" data-flow-parent=\"");
        web_escape(out, j->flow_parent);
        evbuffer_add_printf(out, "\">A child in a flow: its parent ");
        job_link(out, j->flow_parent);
        evbuffer_add_printf(out, " waits for it.</p>\n");
    }
    if (j->jn.has_results)
        evbuffer_add_printf(out, "<p class=\"flow\" data-flow-acked=\"%u\" data-flow-dead="
                            "\"%u\">Released by its children: %u acked, %u dead.</p>\n",
                            j->jn.flow_acked, j->jn.flow_dead, j->jn.flow_acked,
                            j->jn.flow_dead);
    if (!j->waiting)
        return;
    evbuffer_add_printf(out, "<h2>Flow</h2>\n<p class=\"flow\" data-pending=\"%u\" "
                        "data-acked=\"%u\" data-dead=\"%u\">Waits until every child is %s: "
                        "%u pending, %u acked, %u dead.</p>\n<table id=\"children\">\n",
                        j->flow.pending, j->flow.acked, j->flow.dead,
                        j->flow.on_complete ? "acked or dead-lettered" : "acked",
                        j->flow.pending, j->flow.acked, j->flow.dead);
    for (size_t i = 0; i < j->nchildren; i++) {
        evbuffer_add_printf(out, "<tr><td>");
        job_link(out, j->children[i].id);
        evbuffer_add_printf(out, "</td><td>%s</td></tr>\n",
                            j->children[i].held ? "held" : "pending");
    }
    evbuffer_add_printf(out, "</table>\n");
}

static void field(struct evbuffer *out, const char *name, const char *value)
{
    evbuffer_add_printf(out, "<tr><th>%s</th><td data-field=\"%s\">", name, name);
    web_escape(out, value);
    evbuffer_add_printf(out, "</td></tr>\n");
}

static void action_form(struct job_call *jc, struct evbuffer *out, const char *action,
                        const char *label, const char *extra)
{
    evbuffer_add_printf(out, "<form method=\"post\" class=\"act\" action=\"/ui/job/%s\">"
                             "<input type=\"hidden\" name=\"id\" value=\"", action);
    web_escape(out, jc->id);
    evbuffer_add_printf(out, "\">");
    web_csrf_input(jc->c.w, jc->c.req, out);
    evbuffer_add_printf(out, "%s<button type=\"submit\" id=\"%s\">%s</button></form>\n",
                        extra, action, label);
}

static void actions(struct job_call *jc, struct evbuffer *out)
{
    if (jc->job.dead) {
        action_form(jc, out, "kick", "Kick back to the queue", "");
        action_form(jc, out, "delete", "Delete", "");
    } else {
        action_form(jc, out, "cancel", "Cancel", "");
        action_form(jc, out, "reschedule", "Reschedule",
                    "<label>to <input name=\"due\" placeholder=\"now+10m or "
                    "2026-12-01T09:00Z\" required></label> ");
    }
}

static void html(struct web_call *c)
{
    struct job_call *jc = (struct job_call *)c;
    const struct admin_job *j = &jc->job;
    char num[64], queue[QUEUE_NAME_MAX + 1];
    struct evbuffer *out = evbuffer_new();
    if (!out) {
        web_fail(jc->c.req, 0, 500, "Internal Server Error", "out of memory");
        return;
    }
    snprintf(queue, sizeof queue, "%.*s", (int)strcspn(j->id, "/"), j->id);
    web_page_begin(out, jc->c.w->d, j->jn.uid);
    evbuffer_add_printf(out, "<p class=\"crumbs\"><a href=\"/ui/\">Queues</a> / <a href=\""
                             "/ui/queues/%s\">%s</a> /</p>\n<h1>Job ", queue, queue);
    web_escape(out, j->jn.uid);
    evbuffer_add_printf(out, "</h1>\n<table class=\"fields\" id=\"job\">\n");
    field(out, "id", j->id);
    field(out, "state", state_of(j));
    evbuffer_add_printf(out, "<tr><th>due</th><td data-field=\"due\">");
    web_time(out, j->jn.due_ms);
    evbuffer_add_printf(out, "</td></tr>\n");
    snprintf(num, sizeof num, "%u", j->jn.priority);
    field(out, "priority", num);
    snprintf(num, sizeof num, "%u", j->attempts);
    field(out, "attempts", num);
    field(out, "key", j->jn.key);
    field(out, "holder", j->holder);
    field(out, "packed", j->jn.pack[0] ? "yes" : "no");
    snprintf(num, sizeof num, "%d", j->len);
    field(out, "bytes", num);
    evbuffer_add_printf(out, "</table>\n");
    flow_html(out, j);
    evbuffer_add_printf(out, "<h2>Payload</h2>\n<pre id=\"payload\">");
    web_escape_bytes(out, j->payload ? j->payload : "", (size_t)j->len);
    evbuffer_add_printf(out, "</pre>\n");
    if (jc->can_act)
        actions(jc, out);
    web_page_end(out);
    web_send_page(jc->c.req, out);
    evbuffer_free(out);
}

static void clear(struct web_call *c) { admin_job_clear(&((struct job_call *)c)->job); }

static const struct web_call kind = {.fill = fill, .html = html, .clear = clear};

void web_job_page(struct web *w, struct evhttp_request *req, int json)
{
    struct evkeyvalq q;
    struct job_name jn;
    char queue[QUEUE_NAME_MAX + 1];
    struct job_call *jc = web_call_new(sizeof *jc, w, req, json, &kind);
    if (!jc)
        return;
    const char *id = web_params(req, &q) == 0 ? evhttp_find_header(&q, "id") : NULL;
    int bad = !id || snprintf(jc->id, sizeof jc->id, "%s", id) >= (int)sizeof jc->id ||
              layout_parse_id(jc->id, queue, sizeof queue, &jn) != 0;
    evhttp_clear_headers(&q);
    if (bad) {
        web_call_refuse(&jc->c, 400, "Bad Request", "id= is a job id: QUEUE/NAME, as "
                        "deferctl list and the queue's page show it");
        return;
    }
    const struct queue_config *qc = config_queue(w->d->cfg, queue);
    if (!qc) {
        web_call_refuse(&jc->c, 404, "Not Found", "the id names a queue that is not in "
                        "deferd.ini");
        return;
    }
    jc->curator = qc->format != QF_NATIVE;
    jc->can_act = web_can_act(w, req);
    web_call_start(&jc->c, show_job);
}
