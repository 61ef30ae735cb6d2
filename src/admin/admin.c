#include "admin_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "config.h"
#include "curator.h"
#include "layout.h"
#include "names.h"
#include "cluster_time.h"
#include "units.h"
#include "zkacl.h"
#include "zklog.h"

const struct config *admin_config(const struct admin *a) { return &a->cfg; }

int admin_failed(char *err, size_t errlen, const char *what, const char *path, int rc)
{
    if (rc == ZNOAUTH)
        snprintf(err, errlen, "%s %s: permission denied by ZooKeeper (check [zookeeper] auth "
                 "and the ACL of the znode or, for a create or delete, of its parent)", what,
                 path);
    else
        snprintf(err, errlen, "%s %s: %s", what, path, zk_strerror(rc));
    return -1;
}

static void on_auth(int rc, const void *data)
{
    struct admin *a = (struct admin *)data;
    a->auth_rc = rc;
}

/* [zookeeper] auth, as the daemons send it: needed where the ensemble demands it. */
static int add_auth(struct admin *a)
{
    char scheme[64];
    const char *cred = config_auth(&a->cfg, scheme, sizeof scheme);
    if (!cred) {
        a->auth_rc = ZOK;
        return ZOK;
    }
    a->auth_rc = AUTH_WAITING;
    return zoo_add_auth(a->zh, scheme, cred, (int)strlen(cred), on_auth, a);
}

/* Waits for the session (and the answer to the credentials), telling once when it is slow. */
static void wait_session(struct admin *a, const struct admin_wait *w)
{
    int64_t start = units_mono_ms(), waited = 0;
    int told = 0;
    while ((zoo_state(a->zh) != ZOO_CONNECTED_STATE || a->auth_rc == AUTH_WAITING) &&
           zoo_state(a->zh) != ZOO_AUTH_FAILED_STATE && waited < w->timeout_ms) {
        if (!told && w->notice && waited >= w->notice_ms) {
            w->notice(a->cfg.zk_hosts);
            told = 1;
        }
        usleep(10000);
        waited = units_mono_ms() - start;
    }
}

static void span_text(int64_t ms, char *buf, size_t len)
{
    if (ms % 1000 == 0)
        snprintf(buf, len, "%lld s", (long long)(ms / 1000));
    else
        snprintf(buf, len, "%lld ms", (long long)ms);
}

int admin_open(const char *config_path, const struct admin_wait *w, struct admin **out,
               char *err, size_t errlen)
{
    struct admin_source src = {config_path, NULL, 0, 0, NULL};
    return admin_open_from(&src, w, out, err, errlen);
}

/* The client's errors only, as deferctl's own lines: a terminal is no place for its
 * chatter. Its error per failed connection attempt is left out too: one line says that it
 * could not connect. deferd keeps its own log setup. */
static void quiet_logs(const struct admin *a, const struct admin_source *src, int quiet)
{
    if (src->keep_logs)
        return;
    if (quiet) {
        log_configure("deferctl", LOG_TO_STDERR, a->cfg.log_facility, LOG_STAMPS_NO);
        log_set_level(LOG_ERROR);
        zklog_set_level(LOG_ERROR);
    }
    zklog_set_quiet(quiet);
}

int admin_open_from(const struct admin_source *src, const struct admin_wait *w,
                    struct admin **out, char *err, size_t errlen)
{
    struct admin *a = calloc(1, sizeof *a);
    if (!a || config_load(src->config_path, src->overrides, src->noverrides, &a->cfg, err,
                          errlen) != 0) {
        free(a);
        return -1;
    }
    if ((src->zookeeper && config_copy_zookeeper(&a->cfg, src->zookeeper) != 0) ||
        zkacl_build(&a->cfg, &a->acl) != 0) {
        snprintf(err, errlen, "out of memory");
        admin_close(a);
        return -1;
    }
    quiet_logs(a, src, 1);
    a->zh = zookeeper_init2(a->cfg.zk_hosts, NULL, (int)a->cfg.session_timeout_ms, NULL, NULL,
                            0, zklog_line);
    int rc = a->zh ? add_auth(a) : ZSYSTEMERROR;
    if (rc == ZOK)
        wait_session(a, w);
    quiet_logs(a, src, 0);
    if (rc == ZOK && (zoo_state(a->zh) == ZOO_AUTH_FAILED_STATE ||
                      (a->auth_rc != ZOK && a->auth_rc != AUTH_WAITING))) {
        snprintf(err, errlen, "ZooKeeper at %s refused the credentials of [zookeeper] auth",
                 a->cfg.zk_hosts);
        admin_close(a);
        return -1;
    }
    if (rc != ZOK || zoo_state(a->zh) != ZOO_CONNECTED_STATE || a->auth_rc == AUTH_WAITING) {
        char span[32];
        span_text(w->timeout_ms, span, sizeof span);
        snprintf(err, errlen, "cannot connect to ZooKeeper at %s within %s: is it running, "
                 "and are [zookeeper] hosts in %s right? (--timeout DUR waits longer)",
                 a->cfg.zk_hosts, span, src->config_path);
        admin_close(a);
        return -1;
    }
    *out = a;
    return 0;
}

int admin_expired(const struct admin *a)
{
    int state = zoo_state(a->zh);
    return state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE;
}

void admin_close(struct admin *a)
{
    if (!a)
        return;
    if (a->zh)
        zookeeper_close(a->zh);
    zkacl_free(&a->acl);
    config_free(&a->cfg);
    free(a);
}

/* qsort hands the comparator pointers to the elements: char **, not the strings. */
static int name_cmp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

int admin_sorted_children(struct admin *a, const char *path, struct String_vector *kids)
{
    int rc = zoo_get_children(a->zh, path, 0, kids);
    if (rc == ZOK && kids->count > 1)
        qsort(kids->data, (size_t)kids->count, sizeof kids->data[0], name_cmp);
    return rc;
}

static void print_dead(struct admin *a, const char *queue, const char *path, const char *name,
                       FILE *out)
{
    struct job_name jn;
    struct Stat st;
    if (layout_parse_name(name, &jn) != 0 || zoo_exists(a->zh, path, 0, &st) != ZOK)
        return;
    time_t due = (time_t)(jn.due_ms / 1000);
    struct tm tm;
    char when[32];
    gmtime_r(&due, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(out, "%s/%s\t%u\t%u\t%s\t%d\n", queue, name, jn.prior_attempts, jn.priority, when,
            st.dataLength);
}

int admin_dead_list(struct admin *a, const char *queue, FILE *out, char *err, size_t errlen)
{
    char dir[LAYOUT_PATH_MAX];
    if (!admin_queue(a, queue, err, errlen))
        return -1;
    layout_queue_path(dir, sizeof dir, a->cfg.zk_root, queue, LAYOUT_DEAD, NULL);
    struct String_vector buckets;
    int rc = admin_sorted_children(a, dir, &buckets);
    if (rc != ZOK && rc != ZNONODE)
        return admin_failed(err, errlen, "listing", dir, rc);
    /* the header even when empty: a script (or a person) sees that the queue was read */
    fprintf(out, "ID\tATTEMPTS\tPRIORITY\tDUE\tBYTES\n");
    if (rc == ZNONODE)
        return 0; /* nothing was ever dead-lettered */
    for (int i = 0; i < buckets.count; i++) {
        char bucket[LAYOUT_PATH_MAX + 32], path[LAYOUT_PATH_MAX + 128];
        snprintf(bucket, sizeof bucket, "%s/%s", dir, buckets.data[i]);
        struct String_vector jobs;
        if (admin_sorted_children(a, bucket, &jobs) != ZOK)
            continue;
        for (int k = 0; k < jobs.count; k++) {
            snprintf(path, sizeof path, "%s/%s", bucket, jobs.data[k]);
            print_dead(a, queue, path, jobs.data[k], out);
        }
        deallocate_String_vector(&jobs);
    }
    deallocate_String_vector(&buckets);
    return 0;
}

/* AFTER's place in the dead letters' order: its bucket's name and its own. */
static int dead_cursor(const char *queue, const char *after, char *bucket, size_t blen,
                       const char **name)
{
    char q[QUEUE_NAME_MAX + 1];
    struct job_name jn;
    if (!after)
        return 0;
    if (layout_parse_id(after, q, sizeof q, &jn) != 0 || strcmp(q, queue) != 0 ||
        strchr(after + strlen(q) + 1, '/'))
        return -1;
    snprintf(bucket, blen, "%llu", (unsigned long long)layout_bucket_of(jn.due_ms, 1));
    *name = after + strlen(q) + 1;
    return 0;
}

int admin_dead_each(struct admin *a, const char *queue, const char *after,
                    int (*fn)(const char *id, void *ctx), void *ctx, char *err, size_t errlen)
{
    char dir[LAYOUT_PATH_MAX], bucket[LAYOUT_PATH_MAX + 32], id[LAYOUT_ID_MAX + 1], cb[24] = "";
    const char *cn = NULL;
    struct job_name jn;
    if (!admin_queue(a, queue, err, errlen))
        return -1;
    if (dead_cursor(queue, after, cb, sizeof cb, &cn) != 0)
        return snprintf(err, errlen, "'%s' is not a dead letter's id of queue %s", after,
                        queue), -1;
    layout_queue_path(dir, sizeof dir, a->cfg.zk_root, queue, LAYOUT_DEAD, NULL);
    struct String_vector buckets;
    int rc = admin_sorted_children(a, dir, &buckets), stop = 0;
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK)
        return admin_failed(err, errlen, "listing", dir, rc);
    for (int i = 0; i < buckets.count && !stop; i++) {
        struct String_vector jobs;
        int at_cursor = cn && strcmp(buckets.data[i], cb) == 0;
        if (cn && strcmp(buckets.data[i], cb) < 0)
            continue; /* the same order as listed: strcmp of the names */
        snprintf(bucket, sizeof bucket, "%s/%s", dir, buckets.data[i]);
        if ((rc = admin_sorted_children(a, bucket, &jobs)) == ZNONODE)
            continue;
        if (rc != ZOK) {
            deallocate_String_vector(&buckets);
            return admin_failed(err, errlen, "listing", bucket, rc);
        }
        for (int k = 0; k < jobs.count && !stop; k++)
            if ((!at_cursor || strcmp(jobs.data[k], cn) > 0) &&
                layout_parse_name(jobs.data[k], &jn) == 0 &&
                snprintf(id, sizeof id, "%s/%s", queue, jobs.data[k]) < (int)sizeof id)
                stop = fn(id, ctx);
        deallocate_String_vector(&jobs);
    }
    deallocate_String_vector(&buckets);
    return 0;
}

/* Resolves a dead job's id to its znode. */
static int dead_path(struct admin *a, const char *id, char *queue, struct job_name *jn,
                     char *path, char *err, size_t errlen)
{
    if (layout_parse_id(id, queue, QUEUE_NAME_MAX + 1, jn) != 0 ||
        layout_dead_path(path, LAYOUT_PATH_MAX, a->cfg.zk_root, queue, jn) != 0)
        return snprintf(err, errlen, "'%s' is not a valid job id", id), -1;
    return admin_queue(a, queue, err, errlen) ? 0 : -1;
}

static int dead_not_found(char *err, size_t errlen, const char *id, const char *queue)
{
    snprintf(err, errlen, "no dead job %s: kicked back, deleted, or never dead-lettered "
             "('deferctl dead list %s' lists the dead letters)", id, queue);
    return ADMIN_NOT_FOUND;
}

static int read_dead(struct admin *a, const char *path, char **data, int *len, struct Stat *st,
                     char *err, size_t errlen)
{
    *len = (int)CONFIG_MAX_PAYLOAD_LIMIT + 1;
    *data = malloc((size_t)*len);
    int rc = *data ? zoo_get(a->zh, path, 0, *data, len, st) : ZSYSTEMERROR;
    if (rc == ZOK && st->dataLength > *len)
        rc = ZMARSHALLINGERROR; /* larger than any job deferd writes: not cut silently */
    if (rc != ZOK) {
        free(*data);
        *data = NULL;
        return rc == ZNONODE ? ZNONODE : admin_failed(err, errlen, "reading", path, rc);
    }
    if (*len < 0)
        *len = 0;
    return 0;
}

/* A dead job found by its id, with its payload read (free data). */
struct dead_job {
    char queue[QUEUE_NAME_MAX + 1];
    char path[LAYOUT_PATH_MAX];
    struct job_name jn;
    struct Stat st;
    char *data;
    int len;
};

static int load_dead(struct admin *a, const char *id, struct dead_job *dj, char *err,
                     size_t errlen)
{
    if (dead_path(a, id, dj->queue, &dj->jn, dj->path, err, errlen) != 0)
        return -1;
    int rc = read_dead(a, dj->path, &dj->data, &dj->len, &dj->st, err, errlen);
    return rc == ZNONODE ? dead_not_found(err, errlen, id, dj->queue) : rc;
}

int admin_dead_read(struct admin *a, const char *id, struct admin_job *out, size_t preview,
                    char *err, size_t errlen)
{
    char queue[QUEUE_NAME_MAX + 1], path[LAYOUT_PATH_MAX];
    struct Stat st;
    memset(out, 0, sizeof *out);
    if (dead_path(a, id, queue, &out->jn, path, err, errlen) != 0)
        return -1;
    int len = (int)preview;
    if (!(out->payload = malloc(preview + 1)))
        return snprintf(err, errlen, "out of memory"), -1;
    int rc = zoo_get(a->zh, path, 0, out->payload, &len, &st);
    if (rc != ZOK) {
        admin_job_clear(out);
        return rc == ZNONODE ? dead_not_found(err, errlen, id, queue)
                             : admin_failed(err, errlen, "reading", path, rc);
    }
    snprintf(out->id, sizeof out->id, "%s", id);
    out->len = len > 0 ? len : 0;
    out->bytes = st.dataLength;
    out->attempts = out->jn.prior_attempts; /* a<N> of a dead job counts them all */
    out->dead = 1;
    return 0;
}

int admin_dead_show(struct admin *a, const char *id, FILE *out, char *err, size_t errlen)
{
    struct dead_job dj;
    int rc = load_dead(a, id, &dj, err, errlen);
    if (rc != 0)
        return rc;
    fprintf(out, "id: %s\nqueue: %s\nattempts: %u\npriority: %u\ndue_ms: %llu\nbytes: %d\n\n",
            id, dj.queue, dj.jn.prior_attempts, dj.jn.priority,
            (unsigned long long)dj.jn.due_ms, dj.len);
    fwrite(dj.data, 1, (size_t)dj.len, out);
    free(dj.data);
    return 0;
}

/* ZooKeeper checks the parent's ACL before it looks for the node: a directory that exists
 * may answer NoAuth, which the next level's existence disproves (NoNode there is only the
 * echo of a missing level above). What counts is the deepest other error. */
int admin_create_parents(struct admin *a, const char *path)
{
    char buf[LAYOUT_PATH_MAX];
    int cause = ZOK;
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = strchr(buf + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        int rc = zoo_create(a->zh, buf, NULL, -1, &a->acl, 0, NULL, 0);
        *p = '/';
        if (rc == ZOK || rc == ZNODEEXISTS)
            cause = ZOK;
        else if (rc == ZNOAUTH || (rc == ZNONODE && cause == ZOK))
            cause = rc;
        else if (rc != ZNONODE)
            return rc; /* the connection, not a directory */
    }
    return cause;
}

/* A kicked job is pending again, a cancelled one is not: for a queue with max_pending, the
 * same transaction moves the "admin" counter (see docs/zookeeper-layout.md, Pending counts). */
int admin_counter(struct admin *a, const char *queue, int delta, char *path, size_t len,
                  char *value, size_t vlen, int *version)
{
    const struct queue_config *qc = config_queue(&a->cfg, queue);
    struct Stat st;
    char buf[32];
    int blen = sizeof buf - 1;
    if (!qc || !qc->max_pending)
        return 0;
    layout_queue_path(path, len, a->cfg.zk_root, queue, LAYOUT_COUNTS, LAYOUT_COUNTS_ADMIN);
    int rc = zoo_get(a->zh, path, 0, buf, &blen, &st);
    if (rc == ZNONODE && (rc = admin_create_parents(a, path)) == ZOK) {
        rc = zoo_create(a->zh, path, "0", 1, &a->acl, 0, NULL, 0);
        if (rc == ZOK || rc == ZNODEEXISTS) {
            blen = sizeof buf - 1;
            rc = zoo_get(a->zh, path, 0, buf, &blen, &st);
        }
    }
    if (rc != ZOK)
        return -1;
    buf[blen > 0 ? blen : 0] = '\0';
    snprintf(value, vlen, "%lld", strtoll(buf, NULL, 10) + delta);
    *version = st.version;
    return 1;
}

/* A Curator queue's dead letter holds a Curator frame: it goes back as a Curator item,
 * due now (delay queues) or with its priority (priority queues), in one transaction. */
static int kick_curator(struct admin *a, const struct queue_config *qc, struct dead_job *dj,
                        char *new_id, size_t idlen, char *err, size_t errlen)
{
    char prefix[CURATOR_PREFIX_MAX], next[CURATOR_PATH_MAX + CURATOR_PREFIX_MAX + 2],
        made[CURATOR_PATH_MAX + CURATOR_PREFIX_MAX + 16];
    int delay = qc->format == QF_CURATOR_DELAY;
    int64_t value = delay ? cluster_now_ms() : (int32_t)(dj->jn.priority ^ 0x80000000u);
    if (curator_name_prefix(delay ? CURATOR_DELAY : CURATOR_PRIORITY, value, prefix,
                            sizeof prefix) != 0)
        return admin_failed(err, errlen, "naming the Curator item for", dj->path, ZK_ETOOLONG);
    snprintf(next, sizeof next, "%s/%s", qc->curator_path, prefix);
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    zoo_delete_op_init(&ops[0], dj->path, dj->st.version);
    zoo_create_op_init(&ops[1], next, dj->data, dj->len, &a->acl, ZOO_SEQUENCE,
                       made, sizeof made);
    int rc = zoo_multi(a->zh, 2, ops, res);
    if (rc != ZOK)
        return admin_failed(err, errlen, "kicking", dj->path, rc);
    snprintf(new_id, idlen, "%s/%s", qc->name, strrchr(made, '/') + 1);
    return 0;
}

/* The new job of a kick: its name, path, and (keyed) its key node and the key node's data. */
struct kicked {
    struct job_name jn;
    char name[LAYOUT_NAME_MAX + 1];
    char path[LAYOUT_PATH_MAX];
    char key_path[LAYOUT_PATH_MAX];
    char key_data[LAYOUT_ID_MAX + 1];
};

static int name_kicked(struct admin *a, const char *queue, struct kicked *k)
{
    if (layout_job_path(k->path, sizeof k->path, a->cfg.zk_root, queue, &k->jn) != 0 ||
        layout_format_name(&k->jn, k->name, sizeof k->name) != 0)
        return ZK_ETOOLONG;
    int rc = admin_create_parents(a, k->path);
    if (rc != ZOK || !k->jn.key[0])
        return rc;
    if (layout_key_path(k->key_path, sizeof k->key_path, a->cfg.zk_root, queue, k->jn.key) != 0 ||
        layout_key_data(k->key_data, sizeof k->key_data, &k->jn) != 0)
        return ZK_ETOOLONG;
    return admin_create_parents(a, k->key_path);
}

/* One multi: delete the dead node, create the job (and its key node), move the counter.
 * *key_taken: the key node's create failed because another job took the key meanwhile;
 * *moved: the counter moved under us. Either is worth another try. */
static int kick_once(struct admin *a, const struct dead_job *dj, const struct kicked *k,
                     int *key_taken, int *moved)
{
    char cpath[LAYOUT_PATH_MAX], cvalue[32];
    int cversion = -1, n = 0, key_op = -1;
    int counted = admin_counter(a, dj->queue, 1, cpath, sizeof cpath, cvalue, sizeof cvalue,
                                &cversion);
    zoo_op_t ops[4];
    zoo_op_result_t res[4];
    *key_taken = *moved = 0;
    if (counted < 0)
        return ZSYSTEMERROR;
    zoo_delete_op_init(&ops[n++], dj->path, dj->st.version);
    if (k->jn.key[0]) {
        key_op = n;
        zoo_create_op_init(&ops[n++], k->key_path, k->key_data, (int)strlen(k->key_data),
                           &a->acl, 0, NULL, 0);
    }
    zoo_create_op_init(&ops[n++], k->path, dj->data, dj->len, &a->acl, 0, NULL, 0);
    if (counted > 0)
        zoo_set_op_init(&ops[n++], cpath, cvalue, (int)strlen(cvalue), cversion, NULL);
    int rc = zoo_multi(a->zh, n, ops, res);
    *key_taken = rc == ZNODEEXISTS && key_op >= 0 && res[key_op].err == ZNODEEXISTS;
    *moved = rc == ZBADVERSION && counted > 0 && res[n - 1].err == ZBADVERSION;
    return rc;
}

/* Back to the queue, due now, with a fresh attempt count: one transaction. A keyed job
 * takes its key back; if another job took the key meanwhile, it goes back without it. */
int admin_dead_kick(struct admin *a, const char *id, char *new_id, size_t idlen,
                    int *unkeyed, char *err, size_t errlen)
{
    struct dead_job dj;
    *unkeyed = 0;
    int rc = load_dead(a, id, &dj, err, errlen);
    if (rc != 0)
        return rc;
    const struct queue_config *qc = config_queue(&a->cfg, dj.queue);
    if (qc && qc->format != QF_NATIVE) {
        rc = kick_curator(a, qc, &dj, new_id, idlen, err, errlen);
        free(dj.data);
        return rc;
    }
    struct kicked k = {.jn = dj.jn}; /* its uid kept: the same job, given another run */
    k.jn.due_ms = (uint64_t)cluster_now_ms();
    k.jn.prior_attempts = 0;
    int key_taken = 0, moved = 1;
    for (int tries = 0; tries < 5 && (moved || key_taken); tries++) {
        if (key_taken) { /* the same name without "-k<key>" */
            k.jn.key[0] = '\0';
            *unkeyed = 1;
        }
        rc = name_kicked(a, dj.queue, &k);
        if (rc == ZOK)
            rc = kick_once(a, &dj, &k, &key_taken, &moved);
        else
            moved = key_taken = 0;
    }
    free(dj.data);
    if (rc != ZOK)
        return admin_failed(err, errlen, "kicking", dj.path, rc);
    layout_format_id(new_id, idlen, dj.queue, k.name);
    return 0;
}

int admin_dead_delete(struct admin *a, const char *id, char *err, size_t errlen)
{
    char queue[QUEUE_NAME_MAX + 1], path[LAYOUT_PATH_MAX];
    struct job_name jn;
    if (dead_path(a, id, queue, &jn, path, err, errlen) != 0)
        return -1;
    int rc = zoo_delete(a->zh, path, -1);
    if (rc == ZNONODE)
        return dead_not_found(err, errlen, id, queue);
    return rc == ZOK ? 0 : admin_failed(err, errlen, "deleting", path, rc);
}

const struct queue_config *admin_queue(struct admin *a, const char *queue, char *err,
                                       size_t errlen)
{
    const struct queue_config *qc = config_queue(&a->cfg, queue);
    if (!qc)
        snprintf(err, errlen, "no queue '%s' in %s (configure [queue %s] there, or check the "
                 "name)", queue, a->cfg.path, queue);
    return qc;
}

int admin_sum_children(struct admin *a, const char *dir, long long *count, char *err,
                       size_t errlen)
{
    char sub[LAYOUT_PATH_MAX + 32];
    struct String_vector kids;
    *count = 0;
    int rc = zoo_get_children(a->zh, dir, 0, &kids);
    if (rc == ZNONODE)
        return 0; /* never made */
    if (rc != ZOK)
        return admin_failed(err, errlen, "listing", dir, rc);
    for (int i = 0; i < kids.count && rc == ZOK; i++) {
        struct Stat st;
        snprintf(sub, sizeof sub, "%s/%s", dir, kids.data[i]);
        rc = zoo_exists(a->zh, sub, 0, &st);
        if (rc == ZOK)
            *count += st.numChildren;
        else if (rc == ZNONODE) /* emptied and removed meanwhile */
            rc = ZOK;
    }
    deallocate_String_vector(&kids);
    return rc == ZOK ? 0 : admin_failed(err, errlen, "reading", sub, rc);
}

int admin_dead_count(struct admin *a, const char *queue, long long *count, char *err,
                     size_t errlen)
{
    char dir[LAYOUT_PATH_MAX];
    *count = 0;
    if (!names_valid_queue(queue))
        return snprintf(err, errlen, "bad queue name '%s'", queue), -1;
    layout_queue_path(dir, sizeof dir, a->cfg.zk_root, queue, LAYOUT_DEAD, NULL);
    return admin_sum_children(a, dir, count, err, errlen);
}
