/* The schedules' page (/ui/schedules) and /api/v1/schedules: every [schedule NAME] with
 * when it fires, its next occurrences and what ZooKeeper says of it, as deferctl schedules
 * shows them (the same admin_schedule), read on the reader thread. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "daemon.h"
#include "jsonw.h"
#include "schedule.h"
#include "cluster_time.h"
#include "units.h"
#include "web_call.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_reply.h"
#include "web_state.h"

#define NEXT_SHOWN 3

struct sched_row {
    char name[SCHEDULE_NAME_MAX + 1], queue[QUEUE_NAME_MAX + 1];
    char when[200], misfire[16], overlap[16];
    char next[NEXT_SHOWN][160];
    int64_t next_ms[NEXT_SHOWN];
    int nnext;
    struct admin_schedule as;
    int fp_matches;
};

struct sched_call {
    struct web_call c;          /* first */
    struct sched_row *rows;
    size_t n;
};

/* ---- on the reader thread: the schedules of deferd.ini as last loaded ---- */

static void fill_row(struct sched_row *r, const struct schedule_config *sc)
{
    char fp[SCHEDULE_FP_LEN + 1];
    snprintf(r->name, sizeof r->name, "%s", sc->name);
    snprintf(r->queue, sizeof r->queue, "%s", sc->queue);
    schedule_describe(sc, r->when, sizeof r->when);
    snprintf(r->misfire, sizeof r->misfire, "%s", schedule_misfire_names[sc->misfire]);
    snprintf(r->overlap, sizeof r->overlap, "%s", schedule_overlap_names[sc->overlap]);
    int64_t t = cluster_now_ms();
    while (r->nnext < NEXT_SHOWN && schedule_next(sc, t, &t) == 0) {
        r->next_ms[r->nnext] = t;
        schedule_format_instant(sc, t, r->next[r->nnext], sizeof r->next[0]);
        r->nnext++;
    }
    schedule_fingerprint(sc, fp);
    r->fp_matches = strcmp(r->as.st.fp, fp) == 0;
}

static void read_schedules(struct admin *a, const char *err, void *ctx)
{
    struct sched_call *sc = ctx;
    if (web_call_no_session(&sc->c, a, err))
        return;
    const struct config *cfg = admin_config(a);
    if (cfg->nschedules && !(sc->rows = calloc(cfg->nschedules, sizeof *sc->rows))) {
        sc->c.rc = -1;
        snprintf(sc->c.err, sizeof sc->c.err, "out of memory");
        return;
    }
    for (size_t i = 0; i < cfg->nschedules && sc->c.rc == 0; i++) {
        struct sched_row *r = &sc->rows[sc->n++];
        sc->c.rc = admin_schedule(a, cfg->schedules[i], &r->as, sc->c.err, sizeof sc->c.err);
        fill_row(r, cfg->schedules[i]);
    }
}

/* ---- on the loop ---- */

static const char *last_state(const struct admin_schedule *as)
{
    return as->key == ADMIN_KEY_LIVE   ? "pending or held"
           : as->key == ADMIN_KEY_KEPT ? "acked"
           : as->key == ADMIN_KEY_GONE ? "done" : NULL;
}

static void fill(struct web_call *c, struct jsonw *jw)
{
    struct sched_call *sc = (struct sched_call *)c;
    jsonw_arr_begin(jw, NULL);
    for (size_t i = 0; i < sc->n; i++) {
        const struct sched_row *r = &sc->rows[i];
        jsonw_obj_begin(jw, NULL);
        jsonw_str(jw, "name", r->name);
        jsonw_str(jw, "queue", r->queue);
        jsonw_str(jw, "when", r->when);
        jsonw_str(jw, "misfire", r->misfire);
        jsonw_str(jw, "overlap", r->overlap);
        jsonw_arr_begin(jw, "next_ms");
        for (int k = 0; k < r->nnext; k++)
            jsonw_int(jw, NULL, r->next_ms[k]);
        jsonw_arr_end(jw);
        jsonw_bool(jw, "in_zookeeper", r->as.parsed);
        if (r->as.parsed) {
            jsonw_int(jw, "put_up_to_ms", r->as.st.last_ms);
            jsonw_str(jw, "last_key", r->as.st.key[0] ? r->as.st.key : NULL);
            jsonw_str(jw, "last_job", r->as.key == ADMIN_KEY_LIVE ? r->as.job : NULL);
            jsonw_str(jw, "last_state", last_state(&r->as));
            jsonw_bool(jw, "config_matches", r->fp_matches);
        }
        jsonw_obj_end(jw);
    }
    jsonw_arr_end(jw);
}

static void state_html(struct evbuffer *out, const struct sched_row *r)
{
    if (!r->as.present) {
        evbuffer_add_printf(out, "no state yet: no daemon has run it");
        return;
    }
    if (!r->as.parsed) {
        evbuffer_add_printf(out, "its state node holds something else: left alone");
        return;
    }
    evbuffer_add_printf(out, "put up to ");
    web_time(out, (uint64_t)r->as.st.last_ms);
    evbuffer_add_printf(out, "<br>latest: ");
    if (r->as.key == ADMIN_KEY_LIVE) {
        evbuffer_add_printf(out, "<a href=\"/ui/job?id=");
        web_urlencode(out, r->as.job);
        evbuffer_add_printf(out, "\">");
        web_escape(out, r->as.st.key);
        evbuffer_add_printf(out, "</a>");
    } else {
        evbuffer_add_printf(out, "<span class=\"key\">");
        web_escape(out, r->as.st.key[0] ? r->as.st.key : "none");
        evbuffer_add_printf(out, "</span>");
    }
    evbuffer_add_printf(out, " (%s)%s", last_state(&r->as) ? last_state(&r->as) : "none",
                        r->fp_matches ? "" : "<br><span class=\"error\">the daemons run another "
                                             "version of this section</span>");
}

static void html(struct web_call *c)
{
    struct sched_call *sc = (struct sched_call *)c;
    struct evbuffer *out = evbuffer_new();
    if (!out) {
        web_fail(c->req, 0, 500, "Internal Server Error", "out of memory");
        return;
    }
    web_page_begin(out, c->w->d, "Schedules");
    evbuffer_add_printf(out, "<p class=\"crumbs\"><a href=\"/ui/\">Queues</a> /</p>\n<h1>"
                             "Schedules</h1>\n<table id=\"schedules\" class=\"rows\"><thead><tr>"
                             "<th>Schedule</th><th>Queue</th><th>When</th><th>Next</th>"
                             "<th>Misfire, overlap</th><th>In ZooKeeper</th></tr></thead>\n"
                             "<tbody>\n");
    for (size_t i = 0; i < sc->n; i++) {
        const struct sched_row *r = &sc->rows[i];
        evbuffer_add_printf(out, "<tr data-schedule=\"");
        web_escape(out, r->name);
        evbuffer_add_printf(out, "\"><th>");
        web_escape(out, r->name);
        evbuffer_add_printf(out, "</th><td><a href=\"/ui/queues/%s\">%s</a></td><td>", r->queue,
                            r->queue); /* a queue's name: letters, digits, . _ - */
        web_escape(out, r->when);
        evbuffer_add_printf(out, "</td><td>");
        for (int k = 0; k < r->nnext; k++) {
            evbuffer_add_printf(out, "<span class=\"instant\">");
            web_escape(out, r->next[k]);
            evbuffer_add_printf(out, "</span>%s", k + 1 < r->nnext ? "<br>" : "");
        }
        evbuffer_add_printf(out, "</td><td>%s, %s</td><td class=\"state\">", r->misfire,
                            r->overlap);
        state_html(out, r);
        evbuffer_add_printf(out, "</td></tr>\n");
    }
    evbuffer_add_printf(out, "</tbody></table>\n%s", sc->n ? "" : "<p class=\"note\">No "
                        "[schedule NAME] in deferd.ini (docs/schedules.md).</p>\n");
    web_page_end(out);
    web_send_page(c->req, out);
    evbuffer_free(out);
}

static void clear(struct web_call *c) { free(((struct sched_call *)c)->rows); }

static const struct web_call kind = {.fill = fill, .html = html, .clear = clear};

void web_schedules_page(struct web *w, struct evhttp_request *req, int json)
{
    struct sched_call *sc = web_call_new(sizeof *sc, w, req, json, &kind);
    if (sc)
        web_call_start(&sc->c, read_schedules);
}
