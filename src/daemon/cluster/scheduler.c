#include "scheduler.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "dispatcher.h"
#include "layout.h"
#include "log.h"
#include "metrics.h"
#include "putset.h"
#include "schedule.h"
#include "cluster_time.h"
#include "units.h"
#include "zkstore.h"

#define YIELD_RECHECK_MS 5000  /* a daemon whose section differs looks again this often */
#define YIELD_LOG_MS 60000
#define MISFIRE_AFTER_MS 1000  /* an occurrence this far past when first handled is missed */
#define PASS_JOBS_MAX 100      /* jobs one pass puts; a longer catch-up takes more passes */
#define MISSED_SCAN_MAX 100000 /* missed occurrences counted one by one */

/* One schedule; allocated on its own, since calls in flight point at it. */
struct sched {
    struct scheduler *owner;
    const struct schedule_config *sc; /* NULL: removed from the config, freed when idle */
    char fp[SCHEDULE_FP_LEN + 1];
    char path[LAYOUT_PATH_MAX];
    int claim;                  /* section loaded since this daemon last wrote its fp */
    int busy;                   /* a call in flight */
    int failing;                /* errors in a row, logged at the first */
    int64_t yield_logged;       /* monotonic ms */
    struct event *timer;
    struct schedule_state st;   /* as read, at VERSION */
    int version;
    /* the pass being written */
    struct schedule_state next;
    struct putset *ps;
    unsigned long long nput, missed, overlap_skipped; /* its plan's, counted once applied */
};

struct scheduler {
    struct deferd *d;
    struct sched **v;
    size_t n;
};

/* A plan: what one pass puts and passes over. */
struct plan {
    struct proto_put items[PASS_JOBS_MAX];
    size_t n;
    int64_t last;               /* latest occurrence handled */
    unsigned long long missed;  /* occurrences that were due and not put in time */
    unsigned long long overlap_skipped; /* by overlap = skip */
    size_t missed_jobs;         /* of the items, those put for missed occurrences */
};

static void pass(struct sched *s);

static void arm(struct sched *s, int64_t in_ms)
{
    struct timeval tv = units_ms_timeval(in_ms);
    event_add(s->timer, &tv);
}

static void sched_free(struct sched *s)
{
    putset_free(s->ps);
    if (s->timer)
        event_free(s->timer);
    free(s);
}

/* A call came back: a schedule removed meanwhile goes now; else 0. */
static int gone(struct sched *s)
{
    s->busy = 0;
    if (s->sc)
        return 0;
    sched_free(s);
    return 1;
}

static void failed(struct sched *s, const char *what, int rc)
{
    if (s->failing++ == 0 && rc != ZCLOSING)
        log_warn("schedule %s: %s %s: %s; trying again every %d s", s->sc->name, what, s->path,
                 zk_reason(rc), ZK_RETRY_MS / 1000);
    arm(s, ZK_RETRY_MS);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pass(arg);
}

/* The first occurrence after AFTER, or INT64_MAX when the expression fires no more. */
static int64_t next_after(const struct schedule_config *sc, int64_t after)
{
    int64_t t;
    return schedule_next(sc, after, &t) == 0 ? t : INT64_MAX;
}

/* When the next pass is due: the next occurrence is put once the one before it passed
 * (overlap = allow) or AHEAD before its instant, whichever is first. */
static void arm_next(struct sched *s)
{
    const struct schedule_config *sc = s->sc;
    int64_t now = cluster_now_ms(), t = next_after(sc, s->st.last_ms);
    if (t == INT64_MAX) {
        log_warn("schedule %s: its expression fires no more after %" PRId64, sc->name,
                 s->st.last_ms);
        return;
    }
    int64_t at = t - (int64_t)sc->ahead_ms;
    if (sc->overlap == OVERLAP_ALLOW && s->st.last_ms + 1 < at)
        at = s->st.last_ms + 1;
    arm(s, at - now);
}

static void add_item(struct plan *p, const struct schedule_config *sc, const char *key,
                     int64_t due)
{
    struct proto_put *pp = &p->items[p->n++];
    memset(pp, 0, sizeof *pp);
    snprintf(pp->queue, sizeof pp->queue, "%s", sc->queue);
    snprintf(pp->key, sizeof pp->key, "%s", key);
    pp->has_at = 1;
    pp->at_ms = (uint64_t)(due > 0 ? due : 0);
    pp->has_prio = sc->has_prio;
    pp->prio = sc->priority;
    pp->has_ttr = sc->has_ttr;
    pp->ttr_ms = sc->ttr_ms;
    pp->len = sc->len;
}

/* Under overlap = skip what is missed is put as one job at most (the latest, under all),
 * and none while the previous job is pending or held (PREV_BUSY). */
static void plan_missed_one(struct plan *p, const struct schedule_config *sc,
                            unsigned long long in_grace, int64_t latest, int64_t now,
                            int prev_busy)
{
    char key[NAMES_KEY_MAX + 1];
    if (prev_busy) { /* the previous job is still pending: none of them is put */
        p->overlap_skipped += in_grace;
        return;
    }
    if (sc->misfire == MISFIRE_ALL)
        schedule_key(sc, latest, key, sizeof key);
    else
        schedule_catchup_key(sc, latest, in_grace, key, sizeof key);
    add_item(p, sc, key, sc->misfire == MISFIRE_ALL ? latest : now);
}

/* Occurrences after FROM that were due by NOW - MISFIRE_AFTER: the misfire rule says what
 * of them is put. Returns the latest (FROM when none). */
static int64_t plan_missed(struct plan *p, const struct schedule_config *sc, int64_t from,
                           int64_t now, int prev_busy)
{
    int64_t t = from, latest_in_grace = 0, cutoff = now - MISFIRE_AFTER_MS;
    int64_t grace = now - (int64_t)sc->misfire_grace_ms;
    unsigned long long in_grace = 0;
    int one = sc->overlap == OVERLAP_SKIP;
    char key[NAMES_KEY_MAX + 1];
    for (int64_t n; (n = next_after(sc, t)) <= cutoff && p->n < PASS_JOBS_MAX; t = n) {
        if (++p->missed > MISSED_SCAN_MAX && n < grace - 1) { /* too many to count: */
            n = grace - 1;                                    /* on to those in grace */
            continue;
        }
        if (n < grace || sc->misfire == MISFIRE_SKIP)
            continue;
        in_grace++;
        latest_in_grace = n;
        if (sc->misfire == MISFIRE_ALL && !one) {
            schedule_key(sc, n, key, sizeof key);
            add_item(p, sc, key, n);
        }
    }
    /* Under overlap = skip the one job also stands for what fell due since the cutoff:
     * put separately, each would only be skipped as overlapping it. */
    for (int64_t n; in_grace && one && (n = next_after(sc, t)) <= now; t = n) {
        in_grace++;
        latest_in_grace = n;
    }
    if (in_grace && one)
        plan_missed_one(p, sc, in_grace, latest_in_grace, now, prev_busy);
    else if (in_grace && sc->misfire == MISFIRE_ONCE) {
        schedule_catchup_key(sc, latest_in_grace, in_grace, key, sizeof key);
        add_item(p, sc, key, now);
    }
    return t;
}

/* Occurrences due from now on that are to be put by now: those within ahead, and under
 * overlap = allow the next one however far. Under skip one at a time, PREV_BUSY: the
 * previous is still pending or held, and this one is passed over. */
static void plan_ahead(struct plan *p, const struct schedule_config *sc, int64_t from,
                       int64_t now, int prev_busy)
{
    int64_t horizon = now + (int64_t)sc->ahead_ms, first = next_after(sc, now);
    char key[NAMES_KEY_MAX + 1];
    if (sc->overlap == OVERLAP_ALLOW && first != INT64_MAX && first > horizon)
        horizon = first;
    for (int64_t t; (t = next_after(sc, from)) <= horizon && p->n < PASS_JOBS_MAX; from = t) {
        p->last = t;
        if (sc->overlap == OVERLAP_SKIP && prev_busy) {
            p->overlap_skipped++;
            break;
        }
        schedule_key(sc, t, key, sizeof key);
        add_item(p, sc, key, t + (int64_t)schedule_jitter(sc, t));
        if (sc->overlap == OVERLAP_SKIP)
            break;
    }
}

static void make_plan(struct sched *s, struct plan *p, int prev_busy)
{
    const struct schedule_config *sc = s->sc;
    int64_t now = cluster_now_ms(), from = s->st.last_ms;
    if (strcmp(s->st.fp, s->fp) != 0 && from < now)
        from = now; /* a new section owes nothing missed under the old one */
    memset(p, 0, sizeof *p);
    p->last = plan_missed(p, sc, from, now, prev_busy);
    p->missed_jobs = p->n;
    if (p->n < PASS_JOBS_MAX && (sc->overlap == OVERLAP_ALLOW || p->n == 0))
        plan_ahead(p, sc, p->last, now, prev_busy);
}

static void count(struct sched *s)
{
    struct metrics *m = s->owner->d->metrics;
    metrics_schedule(m, s->sc->name, MS_PUT, s->nput);
    metrics_schedule(m, s->sc->name, MS_MISFIRED, s->missed);
    metrics_schedule(m, s->sc->name, MS_OVERLAP_SKIPPED, s->overlap_skipped);
}

static void on_written(struct sched *s, int rc)
{
    if (rc == ZOK) {
        count(s);
        s->st = s->next;
        s->version++;
        if (strcmp(s->next.fp, s->fp) == 0) /* a reload meanwhile: its section still claims */
            s->claim = 0;
        s->failing = 0;
        arm_next(s);
    } else if (rc == ZBADVERSION) { /* another daemon's pass came first: read it */
        arm(s, 0);
    } else {
        failed(s, "cannot write its occurrences and", rc);
    }
}

static void on_put(struct putset *ps, int rc, const struct zk_result *res, void *ctx)
{
    struct sched *s = ctx;
    if (res && res->nops > 0 && res->op_err[0] == ZBADVERSION)
        rc = ZBADVERSION;
    if (rc == ZOK) /* a set sent with a prefix is counted by its sender (putset.h) */
        putset_created(ps);
    putset_free(s->ps);
    s->ps = NULL;
    if (!gone(s))
        on_written(s, rc);
}

static void on_set(const struct zk_result *res, void *ctx)
{
    struct sched *s = ctx;
    int rc = res->rc;
    if (res->nops > 0 && res->op_err[0] == ZBADVERSION)
        rc = ZBADVERSION;
    if (!gone(s))
        on_written(s, rc);
}

/* The plan's jobs and the state node's new value, in one transaction. */
static int write_plan(struct sched *s, struct plan *p)
{
    struct deferd *d = s->owner->d;
    char data[SCHEDULE_STATE_MAX];
    s->next = s->st;
    s->next.last_ms = p->last;
    memcpy(s->next.fp, s->fp, sizeof s->next.fp);
    if (p->n)
        snprintf(s->next.key, sizeof s->next.key, "%s", p->items[p->n - 1].key);
    int len = schedule_state_format(&s->next, data, sizeof data);
    struct zk_txn_op set = {.kind = ZT_SET, .path = s->path, .data = data,
                            .len = (size_t)len, .version = s->version};
    if (p->n == 0)
        return zkstore_multi(d->zs, &set, 1, on_set, s);
    enum proto_errcode code;
    char text[256];
    if (!(s->ps = putset_new(dispatcher_put_env(d->dispatcher), p->n)))
        return ZSYSTEMERROR;
    for (size_t i = 0; i < p->n; i++) {
        p->items[i].payload = malloc(s->sc->len ? s->sc->len : 1);
        if (!p->items[i].payload)
            return ZSYSTEMERROR;
        if (s->sc->len) /* no payload: NULL */
            memcpy(p->items[i].payload, s->sc->payload, s->sc->len);
        if (putset_add(s->ps, &p->items[i], &code, text, sizeof text) != 0) {
            if (s->failing == 0)
                log_error("schedule %s: occurrence %s refused: %s; trying again every %d s "
                          "(what falls meanwhile follows the misfire rule)", s->sc->name,
                          p->items[i].key, text, ZK_RETRY_MS / 1000);
            free(p->items[i].payload);
            return ZBADARGUMENTS;
        }
    }
    return putset_send(s->ps, dispatcher_puts(d->dispatcher), &set, 1, on_put, s);
}

static void log_missed(const struct sched *s, const struct plan *p)
{
    char put[48];
    if (p->missed_jobs)
        snprintf(put, sizeof put, "put as %zu job(s)", p->missed_jobs);
    log_warn("schedule %s: %llu occurrence(s) missed: %s (misfire = %s, misfire_grace%s)",
             s->sc->name, p->missed, p->missed_jobs ? put : "none put",
             schedule_misfire_names[s->sc->misfire],
             s->sc->overlap == OVERLAP_SKIP ? ", overlap = skip" : "");
}

static void put_plan(struct sched *s, int prev_busy)
{
    struct plan p;
    make_plan(s, &p, prev_busy);
    if (p.n == 0 && p.last == s->st.last_ms && strcmp(s->st.fp, s->fp) == 0) {
        arm_next(s);
        return;
    }
    s->nput = p.n;
    s->missed = p.missed;
    s->overlap_skipped = p.overlap_skipped;
    if (p.overlap_skipped)
        log_info("schedule %s: occurrence %" PRId64 " skipped: the previous one (key %s) is "
                 "still pending or held (overlap = skip)", s->sc->name, p.last, s->st.key);
    if (p.missed)
        log_missed(s, &p);
    s->busy = 1;
    int rc = write_plan(s, &p);
    if (rc != ZOK) {
        putset_free(s->ps);
        s->ps = NULL;
        s->busy = 0;
        if (rc == ZBADARGUMENTS) { /* a job refused (a full queue): logged with its reason */
            s->failing++;
            arm(s, ZK_RETRY_MS);
        } else {
            failed(s, "cannot put its occurrences at", rc);
        }
    }
}

/* overlap = skip: is the latest job put still pending or held? Its key node says: a live
 * job's key names it; a kept key ("done ...") or none means it is over. */
static void on_prev_key(const struct zk_result *res, void *ctx)
{
    struct sched *s = ctx;
    int64_t acked;
    struct job_name jn;
    if (gone(s))
        return;
    if (res->rc != ZOK && res->rc != ZNONODE) {
        failed(s, "cannot read the key of its previous occurrence for", res->rc);
        return;
    }
    int busy = res->rc == ZOK &&
               layout_parse_kept_key(res->data, (size_t)(res->datalen > 0 ? res->datalen : 0),
                                     &acked, &jn) != 0;
    put_plan(s, busy);
}

static void check_prev(struct sched *s)
{
    char path[LAYOUT_PATH_MAX];
    struct deferd *d = s->owner->d;
    if (layout_key_path(path, sizeof path, d->cfg->zk_root, s->sc->queue, s->st.key) != 0) {
        put_plan(s, 0);
        return;
    }
    s->busy = 1;
    int rc = zkstore_get(d->zs, path, on_prev_key, s);
    if (rc != ZOK) {
        s->busy = 0;
        failed(s, "cannot read the key of its previous occurrence for", rc);
    }
}

/* Another daemon wrote the state with a section unlike ours, after ours: theirs rules. */
static void yield(struct sched *s)
{
    int64_t now = units_mono_ms();
    if (!s->yield_logged || now - s->yield_logged >= YIELD_LOG_MS) {
        s->yield_logged = now;
        log_warn("schedule %s: another daemon loaded a different [schedule %s] (fingerprint "
                 "%s, ours %s) after this one did: this daemon puts none of its occurrences "
                 "until its section matches (reload it, or that daemon's)", s->sc->name,
                 s->sc->name, s->st.fp, s->fp);
    }
    arm(s, YIELD_RECHECK_MS);
}

static void on_state(const struct zk_result *res, void *ctx);

static void on_created(const struct zk_result *res, void *ctx)
{
    struct sched *s = ctx;
    if (gone(s))
        return;
    int rc = res->rc;
    if (rc == ZOK || rc == ZNODEEXISTS) {
        pass(s);
        return;
    }
    if (rc == ZNONODE && !res->path) { /* no <root>/schedules yet: made, then again */
        s->busy = 1;
        if ((rc = zkstore_create_parents(s->owner->d->zs, s->path, on_created, s)) == ZOK)
            return;
        s->busy = 0;
    }
    failed(s, "cannot create", rc);
}

/* A schedule new to ZooKeeper owes nothing before now. */
static void create_state(struct sched *s)
{
    struct schedule_state st = {.last_ms = cluster_now_ms()};
    char data[SCHEDULE_STATE_MAX];
    memcpy(st.fp, s->fp, sizeof st.fp);
    int len = schedule_state_format(&st, data, sizeof data);
    s->busy = 1;
    int rc = zkstore_create(s->owner->d->zs, s->path, data, (size_t)len, 0, on_created, s);
    if (rc != ZOK) {
        s->busy = 0;
        failed(s, "cannot create", rc);
    }
}

static void on_state(const struct zk_result *res, void *ctx)
{
    struct sched *s = ctx;
    if (gone(s))
        return;
    if (res->rc == ZNONODE) {
        create_state(s);
        return;
    }
    if (res->rc != ZOK) {
        failed(s, "cannot read", res->rc);
        return;
    }
    if (schedule_state_parse(res->data, (size_t)(res->datalen > 0 ? res->datalen : 0),
                             &s->st) != 0) {
        if (s->failing++ == 0) /* a foreign node: left alone */
            log_error("schedule %s: %s does not hold a schedule's state (v1 last=... fp=... "
                      "key=...): left alone; no occurrence is put until it is fixed or "
                      "deleted", s->sc->name, s->path);
        arm(s, YIELD_RECHECK_MS);
        return;
    }
    s->version = res->stat.version;
    if (strcmp(s->st.fp, s->fp) == 0)
        s->claim = 0; /* in force already: a later section of another daemon wins */
    if (strcmp(s->st.fp, s->fp) != 0 && !s->claim)
        yield(s);
    else if (s->sc->overlap == OVERLAP_SKIP && s->st.key[0])
        check_prev(s);
    else
        put_plan(s, 0);
}

static void pass(struct sched *s)
{
    struct deferd *d = s->owner->d;
    if (s->busy || !s->sc)
        return;
    if (!zkstore_connected(d->zs) || d->drain) {
        arm(s, ZK_RETRY_MS);
        return;
    }
    s->busy = 1;
    int rc = zkstore_get(d->zs, s->path, on_state, s);
    if (rc != ZOK) {
        s->busy = 0;
        failed(s, "cannot read", rc);
    }
}

/* Takes SC on: a new schedule, or a changed section (CLAIM: its fingerprint is written). */
static void take(struct sched *s, const struct schedule_config *sc)
{
    char fp[SCHEDULE_FP_LEN + 1];
    schedule_fingerprint(sc, fp);
    if (s->sc && strcmp(fp, s->fp) != 0)
        log_info("schedule %s: changed; occurrences already put stay put (deferctl cancel "
                 "--key %s:<ms> removes one)", sc->name, sc->name);
    s->claim = s->claim || !s->sc || strcmp(fp, s->fp) != 0;
    memcpy(s->fp, fp, sizeof fp);
    s->sc = sc;
    s->failing = 0;
    if (!s->busy)
        arm(s, 0);
}

static struct sched *sched_new(struct scheduler *sr, const struct schedule_config *sc)
{
    struct sched *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->owner = sr;
    s->timer = evtimer_new(sr->d->base, on_timer, s);
    if (!s->timer ||
        layout_root_path(s->path, sizeof s->path, sr->d->cfg->zk_root, LAYOUT_SCHEDULES,
                         sc->name) != 0) {
        sched_free(s);
        return NULL;
    }
    return s;
}

static struct sched *find(struct scheduler *sr, const char *name)
{
    for (size_t i = 0; i < sr->n; i++)
        if (sr->v[i]->sc && strcmp(sr->v[i]->sc->name, name) == 0)
            return sr->v[i];
    return NULL;
}

/* A schedule no longer in the config: it stops, freed now or when its call returns. */
static void drop(struct sched *s)
{
    log_info("schedule %s: removed; occurrences already put stay put (deferctl cancel --key "
             "%s:<ms> removes one)", s->sc->name, s->sc->name);
    s->sc = NULL;
    event_del(s->timer);
    if (!s->busy)
        sched_free(s);
}

void scheduler_reload(struct scheduler *sr)
{
    const struct config *cfg = sr->d->cfg;
    size_t kept = 0;
    for (size_t i = 0; i < sr->n; i++) {
        struct sched *s = sr->v[i];
        const struct schedule_config *sc = config_schedule(cfg, s->sc->name);
        if (!sc) {
            drop(s);
            continue;
        }
        take(s, sc);
        sr->v[kept++] = s;
    }
    sr->n = kept;
    for (size_t i = 0; i < cfg->nschedules; i++) {
        const struct schedule_config *sc = cfg->schedules[i];
        if (find(sr, sc->name))
            continue;
        struct sched **grown = realloc(sr->v, (sr->n + 1) * sizeof *grown);
        struct sched *s = grown ? sched_new(sr, sc) : NULL;
        if (grown)
            sr->v = grown;
        if (!s) {
            log_error("schedule %s: not started: out of memory", sc->name);
            continue;
        }
        sr->v[sr->n++] = s;
        take(s, sc);
        log_info("schedule %s: puts its occurrences into queue %s", sc->name, sc->queue);
    }
}

void scheduler_session_up(struct scheduler *sr)
{
    for (size_t i = 0; sr && i < sr->n; i++)
        if (sr->v[i]->sc && !sr->v[i]->busy)
            arm(sr->v[i], 0);
}

struct scheduler *scheduler_new(struct deferd *d)
{
    struct scheduler *sr = calloc(1, sizeof *sr);
    if (!sr)
        return NULL;
    sr->d = d;
    scheduler_reload(sr);
    return sr;
}

void scheduler_free(struct scheduler *sr)
{
    if (!sr)
        return;
    for (size_t i = 0; i < sr->n; i++)
        sched_free(sr->v[i]); /* calls still in flight end with the store, before this */
    free(sr->v);
    free(sr);
}
