/* The engine under test (engine_harness.h): a struct deferd with the loop's base, a config,
 * the fake store, real metrics and stand-ins for the mirror and put sets; a test clock. */
#include "engine_harness.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cancel.h"
#include "check.h"
#include "claimdata.h"
#include "cluster_time.h"
#include "config.h"
#include "daemon.h"
#include "jobs.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"
#include "mirror.h"
#include "putset.h"
#include "settle.h"
#include "stash.h"

#define JOBS_MAX 64
#define REPLIES_MAX 64
#define CONNS_MAX 8
#define STEPS_MAX 512

static struct {
    struct deferd d;
    struct config cfg;
    struct dispatcher *ds;
    int64_t mono_us;            /* the test clock; wall = mono + WALL_BASE */
    char ids[JOBS_MAX][LAYOUT_ID_MAX + 1], paths[JOBS_MAX][LAYOUT_PATH_MAX];
    struct job_name names[JOBS_MAX];
    struct dqueue *queues[JOBS_MAX];
    int njobs;
    struct harness_reply *replies[REPLIES_MAX];
    int nreplies;
    struct conn *conns[CONNS_MAX];
    int nconns;
    int64_t suspended_at;
    char next_flow[LAYOUT_UID_MAX + 1]; /* the next job listed is this flow's child */
    char text[512];
    struct step {               /* a transition seen (job_transition_observe) */
        char id[LAYOUT_ID_MAX + 1];
        enum job_state from;
        enum job_event ev;
    } steps[STEPS_MAX];
    int nsteps;
} h;

#define WALL_BASE_US 1700000000000000LL /* Nov 2023, in µs, minus the monotonic start */

static void *must(void *p)
{
    if (!p) {
        fprintf(stderr, "engine_harness: out of memory\n");
        abort();
    }
    return p;
}

/* ---- the test clock (cluster_time_set_source) ---- */

static int64_t test_clock(clockid_t which)
{
    return which == CLOCK_REALTIME ? WALL_BASE_US + h.mono_us : h.mono_us;
}

int64_t harness_now(void) { return cluster_now_ms(); }

void harness_turn(void)
{
    for (int i = 0; i < 4; i++) /* what a kick or flush activates runs in the next pass */
        event_base_loop(h.d.base, EVLOOP_NONBLOCK);
}

void harness_clock(int64_t ms) { h.mono_us += ms * 1000; }

void harness_run_real(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(h.d.base, &tv);
    event_base_dispatch(h.d.base);
}

void harness_advance(int64_t ms)
{
    h.mono_us += ms * 1000;
    dispatcher_tick(h.ds);
    harness_turn();
}

/* ---- transitions seen ---- */

static void on_transition(const struct job *job, enum job_event ev)
{
    if (h.nsteps == STEPS_MAX)
        abort();
    struct step *st = &h.steps[h.nsteps++];
    snprintf(st->id, sizeof st->id, "%s", job->id);
    st->from = job->state;
    st->ev = ev;
}

int harness_saw(const char *id, enum job_state from, enum job_event ev)
{
    int n = 0;
    for (int i = 0; i < h.nsteps; i++)
        n += h.steps[i].from == from && h.steps[i].ev == ev && strcmp(h.steps[i].id, id) == 0;
    return n;
}

/* ---- start and stop ---- */

static void load_config(const char *queues_ini)
{
    char path[] = "/tmp/engine_harness_XXXXXX", err[512];
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        abort();
    fprintf(f, "[daemon]\nsocket = /tmp/engine-harness.sock\n[zookeeper]\nhosts = "
               "127.0.0.1:1\nroot = /t\n%s", queues_ini);
    fclose(f);
    int rc = config_load(path, NULL, 0, &h.cfg, err, sizeof err);
    unlink(path);
    if (rc != 0) {
        fprintf(stderr, "engine_harness: %s\n", err);
        abort();
    }
}

int harness_in_child(const char *failpoint, void (*body)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv("DEFERD_FAILPOINT", failpoint, 1);
        log_set_level(LOG_ERROR); /* the failpoint's own warning is expected */
        body();
        _exit(check_report(failpoint) != 0);
    }
    int status = -1;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void harness_start(const char *queues_ini)
{
    memset(&h, 0, sizeof h);
    log_set_level(getenv("ENGINE_TEST_LOG") ? LOG_DEBUG : LOG_ERROR);
    h.mono_us = 1000000000; /* 1000 s after boot */
    cluster_time_set_source(test_clock);
    job_transition_observe(on_transition);
    load_config(queues_ini);
    h.d.cfg = &h.cfg;
    h.d.base = must(event_base_new());
    h.d.zs = fake_zk_new(HARNESS_SESSION);
    h.d.session_id = HARNESS_SESSION;
    h.d.mirror = must(calloc(1, 1)); /* the stand-in keeps nothing */
    h.d.metrics = must(metrics_new(&h.d));
    h.ds = h.d.dispatcher = must(dispatcher_new(&h.d));
}

void harness_stop(void)
{
    for (int i = 0; i < h.nconns; i++) { /* as the server drops a connection */
        struct conn *conn = h.conns[i];
        consumer_unsubscribe_all(conn->c, dispatcher_ring);
        dispatcher_consumer_gone(h.ds, conn->c);
        consumer_free(conn->c);
        free(conn);
    }
    dispatcher_close(h.ds);
    fake_zk_free(h.d.zs);
    dispatcher_free(h.ds);
    free(h.d.mirror);
    metrics_free(h.d.metrics);
    for (int i = 0; i < h.nreplies; i++)
        free(h.replies[i]);
    config_free(&h.cfg);
    event_base_free(h.d.base);
    cluster_time_set_source(NULL);
    job_transition_observe(NULL);
}

struct dispatcher *harness_ds(void) { return h.ds; }
struct zkstore *harness_zs(void) { return h.d.zs; }
int64_t harness_session(void) { return h.d.session_id; }

/* ---- the mirror's report ---- */

const char *harness_listed(const char *queue, int64_t due_in, uint32_t prio, int with_payload)
{
    return harness_listed_group(queue, due_in, prio, with_payload, "");
}

const char *harness_listed_group(const char *queue, int64_t due_in, uint32_t prio,
                                 int with_payload, const char *group)
{
    struct dqueue *q = dispatcher_queue(h.ds, queue);
    if (!q || h.njobs == JOBS_MAX)
        abort();
    struct job_name *jn = &h.names[h.njobs];
    *jn = (struct job_name){.due_ms = (uint64_t)(harness_now() + due_in), .priority = prio};
    snprintf(jn->group, sizeof jn->group, "%s", group);
    snprintf(jn->uid, sizeof jn->uid, "%016x", h.njobs + 1);
    memcpy(jn->flow, h.next_flow, sizeof jn->flow);
    h.next_flow[0] = '\0';
    char *path = h.paths[h.njobs], *id = h.ids[h.njobs];
    h.queues[h.njobs] = q;
    if (layout_job_path(path, LAYOUT_PATH_MAX, h.cfg.zk_root, queue, jn) != 0 ||
        layout_job_id(id, LAYOUT_ID_MAX + 1, queue, jn) != 0)
        abort();
    h.njobs++;
    if (with_payload && stash_put(h.ds->stash, path, (unsigned char *)must(strdup("payload")), 7,
                                  harness_now() + 60000, harness_now()) != 0)
        abort();
    harness_listed_again(id);
    return id;
}

void harness_listed_again(const char *id)
{
    int i = 0;
    while (i < h.njobs && strcmp(h.ids[i], id) != 0)
        i++;
    if (i == h.njobs)
        abort();
    struct dqueue *q = h.queues[i];
    h.ds->listings.seen(h.ds->listings.ctx, q, h.paths[i], &h.names[i], NULL);
    h.ds->listings.listed(h.ds->listings.ctx, q); /* as the mirror ends a listing */
    harness_turn();
}

const char *harness_delivered(const char *queue)
{
    const char *id = harness_listed(queue, 0, 0, 1);
    harness_multi_ok(harness_multis() - 1, 1);
    return id;
}

void harness_next_in_flow(const char *flow_uid)
{
    snprintf(h.next_flow, sizeof h.next_flow, "%s", flow_uid);
}

void harness_unlisted(const char *id)
{
    struct job *job = harness_job(id);
    if (job)
        h.ds->listings.vanished(h.ds->listings.ctx, &job->listed);
    harness_turn();
}

struct job *harness_job(const char *id) { return job_find(h.ds, id); }

int harness_state(const char *id)
{
    struct job *job = harness_job(id);
    return job ? (int)job->state : -1;
}

void harness_pause(const char *queue, int paused)
{
    dispatcher_set_paused(h.ds, dispatcher_queue(h.ds, queue), paused);
    harness_turn();
}

/* ---- fake consumers ---- */

static int on_job(struct conn *conn, const struct proto_job *p)
{
    if (conn->njobs == HARNESS_PUSHES_MAX)
        abort();
    snprintf(conn->jobs[conn->njobs].id, sizeof conn->jobs[0].id, "%s", p->id);
    conn->jobs[conn->njobs].attempt = p->attempt;
    conn->jobs[conn->njobs].ttr_ms = p->ttr_ms;
    conn->njobs++;
    return 0;
}

static int on_deadline(struct conn *conn, const char *id, int64_t ms_left)
{
    snprintf(conn->deadline, sizeof conn->deadline, "%s", id);
    conn->deadline_left = ms_left;
    conn->ndeadlines++;
    return 0;
}

static int on_expired(struct conn *conn, const char *id)
{
    snprintf(conn->expired, sizeof conn->expired, "%s", id);
    conn->nexpired++;
    return 0;
}

static int on_cancelled(struct conn *conn, const char *id)
{
    snprintf(conn->cancelled, sizeof conn->cancelled, "%s", id);
    conn->ncancelled++;
    return 0;
}

static void on_quiet(struct conn *conn) { (void)conn; }

static const struct consumer_ops fake_ops = {on_job, on_deadline, on_expired, on_cancelled,
                                             on_quiet};

struct conn *harness_consumer(const char *queue, uint32_t inflight)
{
    struct conn *conn = must(calloc(1, sizeof *conn));
    if (h.nconns == CONNS_MAX)
        abort();
    h.conns[h.nconns++] = conn;
    conn->c = must(consumer_new(conn, &fake_ops));
    conn->c->inflight_max = inflight;
    if (dispatcher_subscribe(h.ds, conn->c, dispatcher_queue(h.ds, queue)) != 0)
        abort();
    dispatcher_consumer_changed(h.ds, conn->c);
    harness_turn();
    return conn;
}

void harness_consumer_gone(struct conn *conn)
{
    for (int i = 0; i < h.nconns; i++)
        if (h.conns[i] == conn)
            h.conns[i] = h.conns[--h.nconns];
    consumer_unsubscribe_all(conn->c, dispatcher_ring);
    dispatcher_consumer_gone(h.ds, conn->c);
    consumer_free(conn->c);
    free(conn);
    harness_turn();
}

/* ---- requests of a consumer ---- */

static void on_reply(struct reply *r, char *line)
{
    struct harness_reply *hr = (struct harness_reply *)r;
    hr->done++;
    snprintf(hr->line, sizeof hr->line, "%s", line ? line : "(no memory)");
    free(line);
}

static struct harness_reply *new_reply(void)
{
    if (h.nreplies == REPLIES_MAX)
        abort();
    struct harness_reply *hr = must(calloc(1, sizeof *hr));
    hr->r.complete = on_reply;
    return h.replies[h.nreplies++] = hr;
}

static struct harness_reply *settle(struct conn *conn, const char *id, enum proto_cmd cmd,
                                    int64_t delay_ms, int unrun)
{
    struct harness_reply *hr = new_reply();
    struct proto_request req = {.cmd = cmd, .has_delay = delay_ms >= 0,
                                .delay_ms = delay_ms >= 0 ? (uint64_t)delay_ms : 0,
                                .unrun = unrun};
    snprintf(req.id, sizeof req.id, "%s", id);
    if (cmd == CMD_ACK)
        settle_ack(h.ds, conn->c, &req, &hr->r);
    else
        settle_nack(h.ds, conn->c, &req, &hr->r);
    harness_turn();
    return hr;
}

struct harness_reply *harness_ack(struct conn *conn, const char *id)
{
    return settle(conn, id, CMD_ACK, -1, 0);
}

struct harness_reply *harness_nack(struct conn *conn, const char *id, int64_t delay_ms)
{
    return settle(conn, id, CMD_NACK, delay_ms, 0);
}

struct harness_reply *harness_nack_unrun(struct conn *conn, const char *id)
{
    return settle(conn, id, CMD_NACK, -1, 1);
}

struct harness_reply *harness_cancel(const char *id, int force)
{
    struct harness_reply *hr = new_reply();
    struct proto_request req = {.cmd = CMD_CANCEL, .force = force};
    snprintf(req.id, sizeof req.id, "%s", id);
    cancel_job(h.ds, &req, &hr->r);
    harness_turn();
    return hr;
}

struct harness_reply *harness_reschedule(const char *id)
{
    struct harness_reply *hr = new_reply();
    struct proto_request req = {.cmd = CMD_RESCHEDULE, .has_delay = 1, .delay_ms = 1000};
    snprintf(req.id, sizeof req.id, "%s", id);
    cancel_reschedule(h.ds, &req, &hr->r);
    harness_turn();
    return hr;
}

struct harness_reply *harness_touch(struct conn *conn, const char *id)
{
    struct harness_reply *hr = new_reply();
    lease_touch(h.ds, conn->c, id, &hr->r);
    harness_turn();
    return hr;
}

/* ---- the session, as session.c tells the engine ---- */

void harness_suspended(void)
{
    fake_zk_set_connected(h.d.zs, 0);
    h.suspended_at = h.mono_us / 1000;
}

void harness_reconnected(void)
{
    fake_zk_set_connected(h.d.zs, 1);
    lease_shift_all(h.ds, h.mono_us / 1000 - h.suspended_at);
    lock_verify_held(h.ds);
    dispatcher_session_up(h.ds);
    harness_turn();
}

void harness_lost(void)
{
    fake_zk_set_connected(h.d.zs, 0);
    dispatcher_revoke_all(h.ds);
    h.d.session_id = 0;
    harness_turn();
}

void harness_new_session(void)
{
    int64_t id = zkstore_session_id(h.d.zs) + 1;
    fake_zk_set_session(h.d.zs, id);
    fake_zk_set_connected(h.d.zs, 1);
    h.d.session_id = id;
    dispatcher_session_up(h.ds);
    harness_turn();
}

/* ---- ZooKeeper's side ---- */

/* What PATH is to the jobs this test listed. */
static const char *role(const char *path)
{
    size_t n = strlen(path);
    for (int i = 0; i < h.njobs; i++)
        if (strcmp(path, h.paths[i]) == 0)
            return "job";
    if (n > 5 && strcmp(path + n - 5, "/lock") == 0)
        return "lock";
    if (strstr(path, "/owner-"))
        return "owner";
    if (strstr(path, "/dead/"))
        return "dead";
    if (strstr(path, "/claims/"))
        return "claim";
    if (n > 7 && strcmp(path + n - 7, "/claims") == 0)
        return "claims";
    if (strstr(path, "/keys/"))
        return "key";
    if (strstr(path, "/flows/")) { /* "flow", "flow parent", "marker" */
        const char *last = strrchr(path, '/') + 1;
        return strncmp(last, "c-", 2) == 0 ? "marker"
               : strcmp(last, "parent") == 0 ? "flow parent" : "flow";
    }
    const char *slot = strstr(path, "/slots/");
    if (slot) { /* "slot c-<i>" */
        static char name[32];
        snprintf(name, sizeof name, "slot %s", slot + 7);
        return name;
    }
    if (n > 6 && strcmp(path + n - 6, "/slots") == 0)
        return "slots";
    return "job2";
}

int harness_multis(void) { return fake_zk_pending(h.d.zs); }

const char *harness_multi_ops(int i)
{
    static const char *const kinds[] = {"create", "delete", "check", "set"};
    const struct fake_multi *m = fake_zk_multi(h.d.zs, i);
    size_t n = 0;
    h.text[0] = '\0';
    for (int k = 0; m && k < m->nops && n < sizeof h.text; k++)
        n += (size_t)snprintf(h.text + n, sizeof h.text - n, "%s%s%s %s", k ? ", " : "",
                              kinds[m->kinds[k]], m->sequential[k] ? "-seq" : "",
                              role(m->paths[k]));
    return m ? h.text : "(none)";
}

void harness_multi_ok(int i, uint32_t attempt)
{
    fake_zk_set_seq(h.d.zs, 2 * (attempt - 1) + 1); /* the owner node of that delivery */
    fake_zk_ok(h.d.zs, i);
    harness_turn();
}

void harness_multi_fails(int i, int op, int err)
{
    fake_zk_op_fails(h.d.zs, i, op, err);
    harness_turn();
}

void harness_multi_lost(int i, int rc)
{
    fake_zk_lost(h.d.zs, i, rc);
    harness_turn();
}

int harness_calls(void) { return fake_zk_calls(h.d.zs); }

const char *harness_call_what(int i)
{
    static const char *const kinds[] = {"exists", "get", "children", "parents", "create",
                                        "delete", "set"};
    const struct fake_call *c = fake_zk_call(h.d.zs, i);
    if (!c)
        return "(none)";
    snprintf(h.text, sizeof h.text, "%s%s %s", kinds[c->kind], c->watch ? "+watch" : "",
             role(c->path));
    return h.text;
}

const char *harness_call_path(int i)
{
    const struct fake_call *c = fake_zk_call(h.d.zs, i);
    return c ? c->path : "(none)";
}

void harness_call_rc(int i, int rc)
{
    fake_zk_answer_rc(h.d.zs, i, rc);
    harness_turn();
}

void harness_exists_ok(int i, int64_t owner)
{
    struct zk_result res = {.rc = ZOK, .has_stat = 1};
    res.stat.ephemeralOwner = owner;
    fake_zk_answer(h.d.zs, i, &res);
    harness_turn();
}

void harness_claims_on(void)
{
    h.d.layout_version = LAYOUT_VERSION_CLAIMS;
    dispatcher_claims_session(h.ds, h.d.session_id);
    harness_turn();
}

void harness_get_stat_ok(int i, int32_t version, int32_t cversion, int32_t children)
{
    char data[] = "payload";
    struct zk_result res = {.rc = ZOK, .has_stat = 1, .data = data, .datalen = 7};
    res.stat.version = version;
    res.stat.cversion = cversion;
    res.stat.numChildren = children;
    fake_zk_answer(h.d.zs, i, &res);
    harness_turn();
}

void harness_exists_version(int i, int32_t version)
{
    struct zk_result res = {.rc = ZOK, .has_stat = 1};
    res.stat.version = version;
    fake_zk_answer(h.d.zs, i, &res);
    harness_turn();
}

void harness_get_ok(int i) { harness_get_stat_ok(i, 0, 0, 0); }

void harness_get_claim(int i, int32_t version, const char *const *ids, int n)
{
    struct claim_record recs[CLAIM_JOBS_MAX];
    static unsigned char data[CLAIM_BYTES_MAX];
    for (int k = 0; k < n && k < CLAIM_JOBS_MAX; k++) {
        const struct job *job = job_find(h.ds, ids[k]);
        const char *rel = job ? strstr(job->path, "/jobs/") + 1 : "jobs/x";
        recs[k] = (struct claim_record){.path = rel, .path_len = strlen(rel), .deliveries = 1,
                                        .payload = (const unsigned char *)"p", .len = 1};
    }
    long len = claimdata_write(data, sizeof data, recs, (uint32_t)n);
    struct zk_result res = {.rc = ZOK, .has_stat = 1, .data = (char *)data, .datalen = (int)len};
    res.stat.version = version;
    fake_zk_answer(h.d.zs, i, &res);
    harness_turn();
}

void harness_get_written(int i, int32_t version)
{
    size_t len;
    const unsigned char *data = fake_zk_last_set(h.d.zs, &len);
    struct zk_result res = {.rc = ZOK, .has_stat = 1, .data = (char *)data, .datalen = (int)len};
    res.stat.version = version;
    fake_zk_answer(h.d.zs, i, &res);
    harness_turn();
}

void harness_claims_poked(void)
{
    dispatcher_claims_poked(h.ds);
    harness_turn();
}

/* ---- stand-ins: the mirror (jobs enter through harness_listed) ---- */

void mirror_set_report(struct mirror *m, const struct mirror_report *report)
{
    (void)m;
    (void)report; /* the harness calls the dispatcher's report table itself */
}

int mirror_start(struct mirror *m, struct dqueue *q)
{
    (void)m;
    (void)q;
    return 0;
}

int64_t mirror_tick(struct mirror *m, int64_t wall_now)
{
    (void)m;
    (void)wall_now;
    return INT64_MAX;
}

int64_t mirror_next(const struct mirror *m)
{
    (void)m;
    return INT64_MAX;
}

void mirror_entry_unlink(struct mirror_entry *e) { (void)e; }

struct mirror_entry *mirror_job_created(struct mirror *m, struct dqueue *q, const char *path,
                                        const struct job_name *jn, const char *id)
{
    (void)m, (void)q, (void)path, (void)jn, (void)id; /* no put of these tests stores a job */
    return NULL;
}

size_t mirror_listing_max(const struct mirror *m)
{
    (void)m;
    return 0;
}

void mirror_counts(const struct mirror *m, unsigned long long *listings,
                   unsigned long long *names, unsigned long long *unchanged)
{
    (void)m;
    *listings = *names = *unchanged = 0;
}

/* ---- stand-ins: put sets (no settle of these tests has follow-up jobs) ---- */

static void not_reached(const char *what)
{
    fprintf(stderr, "engine_harness: %s is not part of the engine tests\n", what);
    abort();
}

struct putset *putset_new(const struct put_env *env, size_t max_jobs)
{
    (void)env;
    (void)max_jobs;
    not_reached("putset_new");
    return NULL;
}

void putset_free(struct putset *ps)
{
    if (ps)
        not_reached("putset_free");
}

/* the dispatcher makes and frees a pool of spare sets; no set is ever made here */
struct putset_pool *putset_pool_new(void) { return malloc(1); }

void putset_pool_free(struct putset_pool *pool) { free(pool); }

int putset_add(struct putset *ps, struct proto_put *pp, enum proto_errcode *code, char *text,
               size_t tlen)
{
    (void)ps, (void)pp, (void)code, (void)text, (void)tlen;
    not_reached("putset_add");
    return -1;
}

void putset_flow_join(struct putset *ps, const char *flow_uid)
{
    (void)ps, (void)flow_uid;
    not_reached("putset_flow_join");
}

size_t putset_bytes(const struct putset *ps)
{
    (void)ps;
    not_reached("putset_bytes");
    return 0;
}

int putset_send(struct putset *ps, struct txnbatch *b, const struct zk_txn_op *prefix,
                int nprefix, putset_done_fn done, void *ctx)
{
    (void)ps, (void)b, (void)prefix, (void)nprefix, (void)done, (void)ctx;
    not_reached("putset_send");
    return ZK_EINVAL;
}

void putset_created(struct putset *ps)
{
    (void)ps;
    not_reached("putset_created");
}

int putset_format(struct putset *const *parts, size_t nparts, int with_parts, char **line)
{
    (void)parts, (void)nparts, (void)with_parts, (void)line;
    not_reached("putset_format");
    return -1;
}
