/* The dashboard's actions (POST, docs/web.md): pause and resume a queue; cancel or
 * reschedule a job; kick back or delete a dead letter, one or all of a queue's. Only with
 * [web] actions = on and a token; a form also needs this run's CSRF value. Each runs on
 * the reader thread through the code deferctl runs (src/admin), so that it means exactly
 * what the same deferctl command means; each is logged with the token's name and the
 * peer's address, and counted (deferd_web_actions_total). */
#include "web_actions.h"

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
#include "log.h"
#include "metrics.h"
#include "cluster_time.h"
#include "units.h"
#include "web_auth.h"
#include "web_call.h"
#include "web_params.h"
#include "web_reply.h"
#include "web_state.h"

struct act_call {
    struct web_call c;          /* first */
    enum metrics_web_action action;
    char who[WEB_TOKEN_NAME_MAX + 1];
    char peer[64];
    char queue[QUEUE_NAME_MAX + 1];
    char id[LAYOUT_ID_MAX + 1];
    uint64_t due_ms;
    /* results */
    int changed;                /* pause/resume: 0 when the queue already was so */
    char new_id[LAYOUT_ID_MAX + 1];
    long long done, gone;       /* bulk */
};

/* ---- on the reader thread ---- */

struct bulk {
    struct admin *a;
    struct act_call *ac;
};

static int bulk_each(const char *id, void *ctx)
{
    struct bulk *b = ctx;
    char err[512], new_id[LAYOUT_ID_MAX + 1];
    int unkeyed = 0;
    int rc = b->ac->action == WA_KICK_ALL
                 ? admin_dead_kick(b->a, id, new_id, sizeof new_id, &unkeyed, err, sizeof err)
                 : admin_dead_delete(b->a, id, err, sizeof err);
    if (rc == 0)
        b->ac->done++;
    else if (rc == ADMIN_NOT_FOUND)
        b->ac->gone++; /* kicked or deleted meanwhile: by someone else */
    else
        snprintf(b->ac->c.err, sizeof b->ac->c.err, "after %lld done and %lld gone: %.400s",
                 b->ac->done, b->ac->gone, err);
    if (web_worker_stopping(b->ac->c.w->worker) && !b->ac->c.err[0])
        snprintf(b->ac->c.err, sizeof b->ac->c.err, "deferd is stopping: %lld done and %lld "
                 "gone; the rest was left as it was", b->ac->done, b->ac->gone);
    return b->ac->c.err[0] != '\0'; /* stop at the first failure, or at the daemon's stop */
}

static void act(struct admin *a, const char *err, void *ctx)
{
    struct act_call *ac = ctx;
    struct admin_which which = {.id = ac->id};
    char *e = ac->c.err;
    size_t el = sizeof ac->c.err;
    int unkeyed = 0;
    if (web_call_no_session(&ac->c, a, err))
        return;
    switch (ac->action) {
    case WA_PAUSE:
        ac->c.rc = admin_pause(a, ac->queue, ac->who, &ac->changed, e, el);
        break;
    case WA_RESUME:
        ac->c.rc = admin_resume(a, ac->queue, &ac->changed, e, el);
        break;
    case WA_CANCEL:
        ac->c.rc = admin_cancel(a, &which, 0, e, el);
        break;
    case WA_RESCHEDULE:
        ac->c.rc = admin_reschedule(a, &which, ac->due_ms, ac->new_id, sizeof ac->new_id, e, el);
        break;
    case WA_KICK:
        ac->c.rc = admin_dead_kick(a, ac->id, ac->new_id, sizeof ac->new_id, &unkeyed, e, el);
        break;
    case WA_DELETE:
        ac->c.rc = admin_dead_delete(a, ac->id, e, el);
        break;
    default: {
        struct bulk b = {a, ac};
        ac->c.rc = admin_dead_each(a, ac->queue, NULL, bulk_each, &b, e, el);
        if (ac->c.rc == 0 && ac->c.err[0])
            ac->c.rc = -1; /* one kick or delete failed: the rest was not tried */
    }
    }
}

/* ---- on the loop ---- */

static void log_result(const struct act_call *ac, enum metrics_web_result r, const char *what)
{
    const char *name = metrics_web_action_names[ac->action];
    const char *target = ac->id[0] ? ac->id : ac->queue;
    if (r == WR_OK)
        log_msg(LOG_INFO, "web: %s by %s from %s: %s: %s", name, ac->who, ac->peer, target,
                what); /* the audit trail: never limited */
    else
        log_warn("web: %s by %s from %s: %s: %s: %s", name, ac->who[0] ? ac->who : "nobody",
                 ac->peer, target, r == WR_REFUSED ? "refused" : "failed", what);
    metrics_web_action(ac->c.w->d->metrics, ac->action, r);
}

static void fill(struct jsonw *jw, void *ctx)
{
    const struct act_call *ac = ctx;
    jsonw_obj_begin(jw, NULL);
    jsonw_str(jw, "action", metrics_web_action_names[ac->action]);
    jsonw_bool(jw, "ok", 1);
    if (ac->action == WA_PAUSE || ac->action == WA_RESUME)
        jsonw_bool(jw, "changed", ac->changed);
    if (ac->new_id[0])
        jsonw_str(jw, "new_id", ac->new_id);
    if (ac->action == WA_KICK_ALL || ac->action == WA_DELETE_ALL) {
        jsonw_int(jw, "done", ac->done);
        jsonw_int(jw, "gone", ac->gone);
    }
    jsonw_obj_end(jw);
}

/* A form's answer: back to the page the action changed. */
static void see_other(struct act_call *ac)
{
    struct evbuffer *to = evbuffer_new();
    char queue[QUEUE_NAME_MAX + 1];
    snprintf(queue, sizeof queue, "%.*s", (int)strcspn(ac->queue, "/"), ac->queue);
    if (!to) {
        web_fail(ac->c.req, 0, 500, "Internal Server Error", "out of memory");
        return;
    }
    if (ac->action == WA_KICK || ac->action == WA_DELETE || ac->action == WA_KICK_ALL ||
        ac->action == WA_DELETE_ALL)
        evbuffer_add_printf(to, "/ui/queues/%s/dead", queue);
    else
        evbuffer_add_printf(to, "/ui/queues/%s", queue);
    evbuffer_add(to, "", 1);
    web_see_other(ac->c.req, (const char *)evbuffer_pullup(to, -1));
    evbuffer_free(to);
}

static void answer(struct web_call *c)
{
    struct act_call *ac = (struct act_call *)c;
    char what[LAYOUT_ID_MAX + 64];
    if (c->rc != 0) {
        log_result(ac, WR_FAILED, c->err);
        web_call_fail(c);
        return;
    }
    if (ac->action == WA_KICK_ALL || ac->action == WA_DELETE_ALL)
        snprintf(what, sizeof what, "%lld done, %lld gone meanwhile", ac->done, ac->gone);
    else
        snprintf(what, sizeof what, "%s%s", ac->new_id[0] ? "now " : "",
                 ac->new_id[0] ? ac->new_id : (ac->action <= WA_RESUME && !ac->changed)
                                                  ? "no change" : "done");
    log_result(ac, WR_OK, what);
    if (c->json)
        web_send_json(c->req, fill, ac);
    else
        see_other(ac);
}

/* ---- which action, and may it be done ---- */

static const struct {
    const char *suffix;
    enum metrics_web_action action;
} queue_actions[] = {{"/pause", WA_PAUSE}, {"/resume", WA_RESUME},
                     {"/dead/kick-all", WA_KICK_ALL}, {"/dead/delete-all", WA_DELETE_ALL}},
  job_actions[] = {{"cancel", WA_CANCEL}, {"reschedule", WA_RESCHEDULE}, {"kick", WA_KICK},
                   {"delete", WA_DELETE}};

/* PATH's action and queue (queue actions); -1 when PATH names none. */
static int which_action(const char *path, struct act_call *ac)
{
    const char *rest = NULL;
    if (strncmp(path, "/ui/job/", 8) == 0 || strncmp(path, "/api/v1/job/", 12) == 0) {
        rest = strchr(path + 4, '/') + 1;
        if (strncmp(path, "/api/", 5) == 0)
            rest = path + 12;
        for (size_t i = 0; i < sizeof job_actions / sizeof job_actions[0]; i++)
            if (strcmp(rest, job_actions[i].suffix) == 0)
                return ac->action = job_actions[i].action, 0;
        return -1;
    }
    if (strncmp(path, "/ui/queues/", 11) == 0)
        rest = path + 11;
    else if (strncmp(path, "/api/v1/queues/", 15) == 0)
        rest = path + 15;
    size_t n = rest ? strcspn(rest, "/") : 0;
    if (!rest || n == 0 || n > QUEUE_NAME_MAX)
        return -1;
    for (size_t i = 0; i < sizeof queue_actions / sizeof queue_actions[0]; i++)
        if (strcmp(rest + n, queue_actions[i].suffix) == 0) {
            memcpy(ac->queue, rest, n);
            ac->queue[n] = '\0';
            return ac->action = queue_actions[i].action, 0;
        }
    return -1;
}

/* The action's own input: the queue configured, the job id, the new due time, the bulk's
 * confirmation. NULL, or what is wrong. */
static const char *check_input(struct web *w, struct act_call *ac, struct evkeyvalq *form)
{
    struct job_name jn;
    const char *id = evhttp_find_header(form, "id"), *due = evhttp_find_header(form, "due");
    const char *confirm = evhttp_find_header(form, "confirm");
    if (ac->action >= WA_CANCEL && ac->action <= WA_DELETE) {
        if (!id || snprintf(ac->id, sizeof ac->id, "%s", id) >= (int)sizeof ac->id ||
            layout_parse_id(ac->id, ac->queue, sizeof ac->queue, &jn) != 0)
            return "id= is a job id: QUEUE/NAME";
    }
    const struct queue_config *qc = config_queue(w->d->cfg, ac->queue);
    if (!qc) {
        snprintf(ac->c.err, sizeof ac->c.err, "no queue '%s' in deferd.ini", ac->queue);
        return ac->c.err;
    }
    if (qc->format != QF_NATIVE && (ac->action == WA_CANCEL || ac->action == WA_RESCHEDULE))
        return "a Curator queue's items are cancelled and rescheduled by Curator, not here";
    if (ac->action == WA_RESCHEDULE &&
        (!due || units_parse_time_ms(due, cluster_now_ms(), &ac->due_ms) != 0))
        return "due= is a time: epoch ms, 2026-12-01T09:00Z, or now+10m";
    if ((ac->action == WA_KICK_ALL || ac->action == WA_DELETE_ALL) &&
        (!confirm || strcmp(confirm, "yes") != 0))
        return "confirm=yes is needed: this acts on every dead letter of the queue";
    return NULL;
}

static void refuse(struct act_call *ac, int code, const char *reason, const char *why)
{
    log_result(ac, WR_REFUSED, why);
    if (code == 401)
        evhttp_add_header(evhttp_request_get_output_headers(ac->c.req), "WWW-Authenticate",
                          "Bearer realm=\"deferd\"");
    web_fail(ac->c.req, ac->c.json, code, reason, why);
}

/* NULL when the asker may act, else the answer's code (*CODE) and why. */
static const char *may_act(struct web *w, struct evhttp_request *req, struct act_call *ac,
                           struct evkeyvalq *form, int *code)
{
    struct web_who who;
    web_who(w, req, &who);
    snprintf(ac->peer, sizeof ac->peer, "%s", who.peer);
    snprintf(ac->who, sizeof ac->who, "%s", who.name ? who.name : "");
    if (!w->d->cfg->web_actions)
        return *code = 403, "actions are off on this daemon ([web] actions = on turns them on)";
    if (!who.name)
        return *code = 401, "a token of [web] token_file is needed (sign in at /ui/login, or "
                            "send Authorization: Bearer TOKEN)";
    if (!who.by_header && !web_csrf_ok(w, req, form))
        return *code = 403, "the form's CSRF value is missing or not this session's, or it "
                            "was posted by a page of another origin: reload the page and try "
                            "again";
    return NULL;
}

int web_action(struct web *w, struct evhttp_request *req, const char *path)
{
    struct evkeyvalq form;
    int code = 400;
    struct act_call *ac = calloc(1, sizeof *ac);
    if (!ac) {
        web_fail(req, 0, 500, "Internal Server Error", "out of memory");
        return 1;
    }
    *ac = (struct act_call){.c = {w, req, strncmp(path, "/api/", 5) == 0, 0, 0, "", NULL, NULL,
                                  answer, NULL}};
    if (which_action(path, ac) != 0) {
        free(ac);
        return 0;
    }
    const char *why = web_params(req, &form) != 0 ? "the form is malformed" : NULL;
    if (!why && (why = may_act(w, req, ac, &form, &code)) == NULL)
        why = check_input(w, ac, &form), code = 400;
    evhttp_clear_headers(&form);
    if (why) {
        refuse(ac, code, code == 401 ? "Unauthorized" : code == 403 ? "Forbidden"
                                                                    : "Bad Request", why);
        free(ac);
        return 1;
    }
    web_call_start(&ac->c, act);
    return 1;
}
