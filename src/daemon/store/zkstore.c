#include "zkstore.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "log.h"
#include "loopq.h"
#include "metrics.h"
#include "zkacl.h"
#include "zklog.h"
#include "zalloc.h"

/* Watch and session events name the handle they came from: after a renewal, the old
 * handle's events are dropped (its call results still arrive, so contexts are freed). */
struct handle_ctx {
    struct zkstore *zs;
    unsigned gen;
    /* [zookeeper] auth: the session is not reported CONNECTED before the server accepted
     * the credentials, so that nothing is sent on a session about to fail (AUTH_FAILED
     * closes it, and the client then drops calls in flight without completing them). */
    int auth_waiting;
    int auth_resend;            /* credentials to send again at the next CONNECTED */
    int held_connected;         /* CONNECTED came while auth_waiting */
};

/* MSG_SESSION states of our own, after ZKSTORE_HANDLE_FAILED in zkerr.h's range for them */
enum {
    AUTH_ACCEPTED = ZK_OWN_STATE_FIRST - 1,
    AUTH_RETRY = ZK_OWN_STATE_FIRST - 2, /* the answer to our credentials was lost: again */
};

struct zkstore {
    zhandle_t *zh;
    struct handle_ctx *hctx;
    unsigned gen;
    const struct config *cfg;
    struct ACL_vector acl;  /* [zookeeper] acl: on every znode created */
    struct loopq *q;
    zk_watch_fn on_watch;
    zk_session_fn on_session;
    void *ctx;
    struct metrics *metrics;
    int connected;
    _Atomic int64_t heard_ns;  /* zkstore_heard_age_ms: written on the client's threads */
    int touching;
    int closing; /* no new calls; late completions arrive with ZCLOSING */
    int early_state;   /* a session event of the new handle that came before the handle */
    int early_auth;    /* and its credentials' acceptance */
    int early_retry;   /* or the loss of that answer */
    /* Calls sent and not completed (loop thread only). The client library drops some at
     * close (requests of a handle closed while not connected): they are completed as
     * expired once a renewal's new handle arrives, with ZCLOSING by zkstore_free. */
    struct zk_msg *outstanding;
};

/* Everything that crosses from ZooKeeper's threads to the loop. */
struct zk_msg {
    struct loopq_item link;
    enum { MSG_RESULT, MSG_WATCH, MSG_SESSION, MSG_HANDLE } kind;
    struct zkstore *zs;
    /* MSG_RESULT */
    zk_done_fn done;
    void *ctx;
    struct zk_result res;
    enum metrics_zk_op op;
    int64_t sent_ns, done_ns;          /* CLOCK_MONOTONIC: the call, its completion */
    struct zk_msg *out_next, *out_prev; /* zkstore->outstanding, while the call is out */
    zoo_op_t *ops;                     /* multi */
    zoo_op_result_t *op_res;
    struct Stat *stats;                /* multi: one per op, for set operations */
    /* MSG_WATCH / MSG_SESSION / MSG_HANDLE */
    unsigned gen;
    zhandle_t *zh;                     /* MSG_HANDLE: the new handle, NULL if it failed */
    struct handle_ctx *hctx;
    int type, state;
    char *path;
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void free_msg(struct zk_msg *m)
{
    free(m->res.data);
    free(m->res.children); /* the names too: one block (copy_children) */
    free(m->ops);
    free(m->op_res);
    free(m->stats);
    free(m->res.op_err);
    for (int i = 0; m->res.op_path && i < m->res.nops; i++)
        free(m->res.op_path[i]);
    free(m->res.op_path);
    free(m->path);
    free(m);
}

static void install_handle(struct zkstore *zs, struct zk_msg *m);

/* Session states to the daemon, CONNECTED held back until the credentials are accepted. */
static void auth_again(struct zkstore *zs);

static void session_event(struct zkstore *zs, int state)
{
    struct handle_ctx *hc = zs->hctx;
    if (state == AUTH_RETRY) {
        auth_again(zs);
        return;
    }
    if (state == ZOO_CONNECTED_STATE && hc->auth_resend) {
        hc->auth_resend = 0; /* the client refused them while it had no connection */
        auth_again(zs);
    }
    if (state == AUTH_ACCEPTED) {
        hc->auth_waiting = 0;
        if (!hc->held_connected)
            return;
        hc->held_connected = 0;
        state = ZOO_CONNECTED_STATE;
    } else if (hc->auth_waiting) {
        hc->held_connected = state == ZOO_CONNECTED_STATE;
        if (hc->held_connected)
            return;
    }
    zs->connected = state == ZOO_CONNECTED_STATE;
    zklog_set_quiet(!zs->connected);
    zs->on_session(state, zs->ctx);
}

static void outstanding_remove(struct zkstore *zs, struct zk_msg *m)
{
    if (m->out_prev)
        m->out_prev->out_next = m->out_next;
    else if (zs->outstanding == m)
        zs->outstanding = m->out_next;
    if (m->out_next)
        m->out_next->out_prev = m->out_prev;
    m->out_next = m->out_prev = NULL;
}

static void on_loop(struct loopq_item *item, void *unused)
{
    (void)unused;
    struct zk_msg *m = (struct zk_msg *)item;
    struct zkstore *zs = m->zs;
    if (m->kind == MSG_HANDLE) {
        install_handle(zs, m);
        free_msg(m);
        return;
    }
    if ((zs->closing || m->gen != zs->gen) && m->kind != MSG_RESULT) {
        free_msg(m);
        return;
    }
    if (m->kind == MSG_SESSION && !zs->zh) { /* its handle is still on its way to us */
        if (m->state == AUTH_ACCEPTED)
            zs->early_auth = 1;
        else if (m->state == AUTH_RETRY)
            zs->early_retry = 1;
        else
            zs->early_state = m->state;
        free_msg(m);
        return;
    }
    switch (m->kind) {
    case MSG_RESULT:
        outstanding_remove(zs, m);
        metrics_zk_request(zs->metrics, m->op, m->done_ns - m->sent_ns);
        if (m->done)
            m->done(&m->res, m->ctx);
        break;
    case MSG_WATCH:
        zs->on_watch(m->type, m->path, zs->ctx);
        break;
    case MSG_SESSION:
        session_event(zs, m->state);
        break;
    case MSG_HANDLE:
        break; /* handled above */
    }
    free_msg(m);
}

static struct zk_msg *new_result(struct zkstore *zs, enum metrics_zk_op op, zk_done_fn done,
                                 void *ctx)
{
    if (zs->closing || !zs->zh)
        return NULL; /* callers see ZSYSTEMERROR and give up their context */
    struct zk_msg *m = zalloc(1, sizeof *m);
    if (m) {
        m->kind = MSG_RESULT;
        m->zs = zs;
        m->done = done;
        m->ctx = ctx;
        m->op = op;
        m->sent_ns = mono_ns();
    }
    return m;
}

/* ---- completions: these run on the ZooKeeper client's completion thread ---- */

/* Answers that only a live session gets (not a lost connection, expiry, or closing). */
static int answered_by_server(int rc)
{
    switch (rc) {
    case ZOK: case ZNONODE: case ZNOAUTH: case ZBADVERSION: case ZNOCHILDRENFOREPHEMERALS:
    case ZNODEEXISTS: case ZNOTEMPTY: case ZINVALIDACL: case ZRUNTIMEINCONSISTENCY:
        return 1;
    default:
        return 0;
    }
}

static void heard(struct zkstore *zs, int64_t at_ns)
{
    int64_t old = atomic_load(&zs->heard_ns);
    while (old < at_ns && !atomic_compare_exchange_weak(&zs->heard_ns, &old, at_ns))
        ;
}

static void finish(int rc, const void *data)
{
    struct zk_msg *m = (struct zk_msg *)data;
    m->res.rc = rc;
    m->done_ns = mono_ns(); /* here, not on the loop: a busy loop is not ZooKeeper's time */
    m->res.sent_ns = m->sent_ns;
    m->res.done_ns = m->done_ns;
    if (answered_by_server(rc))
        heard(m->zs, m->sent_ns);
    loopq_push(m->zs->q, &m->link);
}

static void on_void(int rc, const void *data) { finish(rc, data); }

static void on_string(int rc, const char *value, const void *data)
{
    (void)value;
    finish(rc, data);
}

static void on_stat(int rc, const struct Stat *stat, const void *data)
{
    struct zk_msg *m = (struct zk_msg *)data;
    if (rc == ZOK && stat) {
        m->res.stat = *stat;
        m->res.has_stat = 1;
    }
    finish(rc, data);
}

static void on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
    struct zk_msg *m = (struct zk_msg *)data;
    if (rc == ZOK && len > 0 && value) {
        m->res.data = malloc((size_t)len);
        if (!m->res.data)
            rc = ZK_ENOMEM;
        else {
            memcpy(m->res.data, value, (size_t)len);
            m->res.datalen = len;
        }
    }
    on_stat(rc, stat, data);
}

/* SV's names into RES: the pointers and the names in one allocation (a listing may hold
 * thousands: a malloc and a free each was most of a listing's cost here); 0 or -1. */
static int copy_children(struct zk_result *res, const struct String_vector *sv)
{
    size_t n = (size_t)sv->count, bytes = n * sizeof(char *);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(sv->data[i]) + 1;
    char **names = malloc(bytes), *at = (char *)(names + n), *end = (char *)names + bytes;
    if (!names)
        return -1;
    for (size_t i = 0; i < n; i++) { /* memccpy: the copy finds the end, no second strlen */
        names[i] = at;
        at = memccpy(at, sv->data[i], '\0', (size_t)(end - at));
    }
    res->children = names;
    res->nchildren = (int)n;
    return 0;
}

/* Listings come with the parent's Stat: its ctime tells a fresh bucket from an old one. */
static void on_strings(int rc, const struct String_vector *sv, const struct Stat *stat,
                       const void *data)
{
    struct zk_msg *m = (struct zk_msg *)data;
    if (rc == ZOK && stat) {
        m->res.stat = *stat;
        m->res.has_stat = 1;
    }
    if (rc == ZOK && sv && sv->count > 0 && copy_children(&m->res, sv) != 0)
        rc = ZK_ENOMEM;
    finish(rc, data);
}

static void on_multi(int rc, const void *data)
{
    struct zk_msg *m = (struct zk_msg *)data;
    for (int i = 0; i < m->res.nops; i++)
        m->res.op_err[i] = m->op_res[i].err;
    finish(rc, data);
}

static void on_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    const struct handle_ctx *hc = ctx;
    struct zkstore *zs = hc->zs;
    struct zk_msg *m = calloc(1, sizeof *m);
    if (!m)
        return; /* nothing sane to do on this thread; the next event resyncs */
    m->zs = zs;
    m->gen = hc->gen;
    m->type = type;
    m->state = state;
    if (type == ZOO_SESSION_EVENT) {
        m->kind = MSG_SESSION;
        if (state == ZOO_CONNECTED_STATE)
            heard(zs, mono_ns()); /* the server has just taken the session on */
    } else {
        m->kind = MSG_WATCH;
        m->path = strdup(path ? path : "");
    }
    loopq_push(zs->q, &m->link);
}

/* ---- loop thread ---- */

static int sent(struct zk_msg *m, int rc)
{
    if (rc != ZOK) {
        free_msg(m);
        return rc;
    }
    /* On the loop thread, before its completion can be handled there. */
    m->out_next = m->zs->outstanding;
    if (m->out_next)
        m->out_next->out_prev = m;
    m->zs->outstanding = m;
    return rc;
}

int zkstore_create(struct zkstore *zs, const char *path, const void *data, size_t len,
                   int ephemeral, zk_done_fn done, void *ctx)
{
    struct zk_msg *m = new_result(zs, ZOP_CREATE, done, ctx);
    if (!m)
        return ZSYSTEMERROR;
    return sent(m, zoo_acreate(zs->zh, path, data, (int)len, &zs->acl,
                               ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT,
                               on_string, m));
}

int zkstore_delete(struct zkstore *zs, const char *path, int version, zk_done_fn done, void *ctx)
{
    struct zk_msg *m = new_result(zs, ZOP_DELETE, done, ctx);
    if (!m)
        return ZSYSTEMERROR;
    return sent(m, zoo_adelete(zs->zh, path, version, on_void, m));
}

int zkstore_set(struct zkstore *zs, const char *path, const void *data, size_t len,
                zk_done_fn done, void *ctx)
{
    struct zk_msg *m = new_result(zs, ZOP_SET, done, ctx);
    if (!m)
        return ZSYSTEMERROR;
    return sent(m, zoo_aset(zs->zh, path, data, (int)len, -1, on_stat, m));
}

int zkstore_get(struct zkstore *zs, const char *path, zk_done_fn done, void *ctx)
{
    struct zk_msg *m = new_result(zs, ZOP_GET, done, ctx);
    if (!m)
        return ZSYSTEMERROR;
    return sent(m, zoo_aget(zs->zh, path, 0, on_data, m));
}

int zkstore_exists(struct zkstore *zs, const char *path, int watch, zk_done_fn done, void *ctx)
{
    struct zk_msg *m = new_result(zs, ZOP_EXISTS, done, ctx);
    if (!m)
        return ZSYSTEMERROR;
    return sent(m, zoo_aexists(zs->zh, path, watch, on_stat, m));
}

int zkstore_children(struct zkstore *zs, const char *path, int watch, zk_done_fn done,
                     void *ctx)
{
    struct zk_msg *m = new_result(zs, ZOP_CHILDREN, done, ctx);
    if (!m)
        return ZSYSTEMERROR;
    return sent(m, zoo_aget_children2(zs->zh, path, watch, on_strings, m));
}

int zkstore_multi(struct zkstore *zs, const struct zk_txn_op *ops, int nops, zk_done_fn done,
                  void *ctx)
{
    if (nops < 1 || nops > ZK_MULTI_MAX)
        return ZK_EINVAL;
    struct zk_msg *m = new_result(zs, ZOP_MULTI, done, ctx);
    if (!m)
        return ZSYSTEMERROR;
    m->ops = calloc((size_t)nops, sizeof *m->ops);
    m->op_res = calloc((size_t)nops, sizeof *m->op_res);
    m->stats = calloc((size_t)nops, sizeof *m->stats);
    m->res.op_err = calloc((size_t)nops, sizeof *m->res.op_err);
    m->res.op_path = calloc((size_t)nops, sizeof *m->res.op_path);
    if (!m->ops || !m->op_res || !m->stats || !m->res.op_err ||
        !m->res.op_path)
        return sent(m, ZSYSTEMERROR);
    m->res.nops = nops;
    for (int i = 0; i < nops; i++) {
        /* zoo_amulti encodes the request before it returns: paths and data are read
         * here, not copied; only the results' buffers must last until the answer */
        const struct zk_txn_op *o = &ops[i];
        const char *path = o->path, *data = o->data ? (const char *)o->data : "";
        size_t namelen = o->sequential ? strlen(o->path) + 16 : 0;
        char *name = m->res.op_path[i] = namelen ? calloc(1, namelen) : NULL;
        if (namelen && !name)
            return sent(m, ZSYSTEMERROR);
        int flags = (o->ephemeral ? ZOO_EPHEMERAL : 0) | (o->sequential ? ZOO_SEQUENCE : 0);
        if (o->kind == ZT_CREATE)
            zoo_create_op_init(&m->ops[i], path, data, (int)o->len, &zs->acl,
                               flags, name, (int)namelen);
        else if (o->kind == ZT_DELETE)
            zoo_delete_op_init(&m->ops[i], path, o->version);
        else if (o->kind == ZT_SET)
            zoo_set_op_init(&m->ops[i], path, data, (int)o->len, o->version, &m->stats[i]);
        else
            zoo_check_op_init(&m->ops[i], path, o->version);
    }
    return sent(m, zoo_amulti(zs->zh, nops, m->ops, m->op_res, on_multi, m));
}

/* A zkstore_create_parents with a DONE: its creates answered so far. */
struct parents {
    zk_done_fn done;            /* NULL once the caller was told the send failed */
    void *ctx;
    int left, rc;
    size_t failed_len;          /* path[..failed_len]: the directory of rc */
    char path[1024];
    struct parent_level {
        struct parents *p;
        size_t len;
    } level[];
};

/* Answers come in the order of the creates (one session). ZooKeeper checks the parent's
 * ACL before it looks for the node, so a directory that exists may still answer NoAuth; a
 * level that exists (created, or NodeExists) proves every level above it, and NoNode is
 * only the echo of a missing level above. The cause is the deepest other error. */
static void on_parent_made(const struct zk_result *res, void *ctx)
{
    struct parent_level *lv = ctx;
    struct parents *p = lv->p;
    if (res->rc == ZOK || res->rc == ZNODEEXISTS) {
        p->rc = ZOK;
    } else if (res->rc != ZNONODE || p->rc == ZOK) {
        p->rc = res->rc;
        p->failed_len = lv->len;
    }
    if (--p->left > 0)
        return;
    p->path[p->failed_len] = '\0';
    struct zk_result r = {.rc = p->rc, .path = p->rc == ZOK ? NULL : p->path};
    if (p->done)
        p->done(&r, p->ctx);
    free(p);
}

int zkstore_create_parents(struct zkstore *zs, const char *path, zk_done_fn done, void *ctx)
{
    size_t n = strlen(path), levels = 0;
    for (const char *c = path + 1; *c; c++)
        levels += *c == '/';
    struct parents *p = calloc(1, sizeof *p + levels * sizeof p->level[0]);
    if (!p)
        return ZSYSTEMERROR;
    if (n >= sizeof p->path || levels == 0) {
        free(p);
        return n >= sizeof p->path || done ? ZK_ETOOLONG : ZOK;
    }
    memcpy(p->path, path, n + 1);
    p->done = done;
    p->ctx = ctx;
    /* Creates are applied in order on one session: parents always before children. */
    char *slash = strchr(p->path + 1, '/');
    for (size_t i = 0; i < levels; i++, slash = strchr(slash + 1, '/')) {
        p->level[i] = (struct parent_level){.p = p, .len = (size_t)(slash - p->path)};
        *slash = '\0';
        int rc = zkstore_create(zs, p->path, NULL, 0, 0, on_parent_made, &p->level[i]);
        *slash = '/';
        if (rc != ZOK) {
            p->done = NULL; /* the caller hears it now; the answers still due free p */
            if (p->left == 0)
                free(p);
            return rc;
        }
        p->left++;
    }
    return ZOK;
}

int zkstore_parents_missing(struct zkstore *zs, const char *path, int *tries, zk_done_fn done,
                            void *ctx)
{
    int ask = (*tries)++ > 0;
    int rc = zkstore_create_parents(zs, path, ask ? done : NULL, ask ? ctx : NULL);
    return rc != ZOK ? rc : ask ? ZK_PARENTS_ASKED : ZK_PARENTS_RESEND;
}

int zkstore_connected(const struct zkstore *zs) { return zs->connected; }

int64_t zkstore_heard_age_ms(const struct zkstore *zs)
{
    return (mono_ns() - atomic_load(&((struct zkstore *)zs)->heard_ns)) / 1000000;
}

static void on_touched(const struct zk_result *res, void *ctx)
{
    (void)res;
    ((struct zkstore *)ctx)->touching = 0;
}

void zkstore_touch(struct zkstore *zs)
{
    if (!zs->touching && zs->connected &&
        zkstore_exists(zs, "/", 0, on_touched, zs) == ZOK)
        zs->touching = 1;
}

void zkstore_set_metrics(struct zkstore *zs, struct metrics *m) { zs->metrics = m; }

int64_t zkstore_session_id(const struct zkstore *zs)
{
    const clientid_t *id = zs->zh ? zoo_client_id(zs->zh) : NULL;
    return id ? id->client_id : 0;
}

int zkstore_session_password(const struct zkstore *zs, char passwd[16])
{
    const clientid_t *id = zs->zh ? zoo_client_id(zs->zh) : NULL;
    if (!id)
        return -1;
    memcpy(passwd, id->passwd, 16);
    return 0;
}

int zkstore_negotiated_timeout(const struct zkstore *zs)
{
    return zs->zh ? zoo_recv_timeout(zs->zh) : (int)zs->cfg->session_timeout_ms;
}

/* On a client thread: the server's answer to our credentials. A refusal arrives as the
 * AUTH_FAILED session state as well; acceptance is passed on to release CONNECTED. Any
 * other error (the connection broke before the answer: the client calls this once and
 * forgets it) has the loop send the credentials again, or CONNECTED would wait forever. */
static void on_auth(int rc, const void *data)
{
    const struct handle_ctx *hc = data;
    struct zk_msg *m = rc != ZAUTHFAILED ? calloc(1, sizeof *m) : NULL;
    if (!m)
        return;
    m->zs = hc->zs;
    m->gen = hc->gen;
    m->kind = MSG_SESSION;
    m->state = rc == ZOK ? AUTH_ACCEPTED : AUTH_RETRY;
    loopq_push(hc->zs->q, &m->link);
}

/* The loop thread: our credentials again on the current handle, for a new answer. */
static void auth_again(struct zkstore *zs)
{
    char scheme[64];
    const char *cred = config_auth(zs->cfg, scheme, sizeof scheme);
    if (!cred || !zs->zh || !zs->hctx->auth_waiting)
        return;
    log_debug("zookeeper: the answer to our %s credentials was lost; sending them again",
              scheme);
    int rc = zoo_add_auth(zs->zh, scheme, cred, (int)strlen(cred), on_auth, zs->hctx);
    if (rc == ZINVALIDSTATE) /* not connected at the moment: at the next CONNECTED */
        zs->hctx->auth_resend = 1;
    else if (rc != ZOK)
        log_error("zookeeper: cannot add %s credentials: %s", scheme, zk_strerror(rc));
}

/* Safe on any thread: touches nothing of the store's. */
static zhandle_t *create_handle(const struct config *cfg, struct handle_ctx *hc)
{
    zhandle_t *zh = zookeeper_init2(cfg->zk_hosts, on_watcher, (int)cfg->session_timeout_ms,
                                    NULL, hc, 0, zklog_line);
    if (!zh) {
        log_error("zookeeper: cannot create a handle for '%s': %s", cfg->zk_hosts,
                  strerror(errno));
        return NULL;
    }
    /* By default the client resolves the host list every time it polls its socket, which
     * costs a netlink round trip per request under load; once a minute notices DNS
     * changes well enough (and it resolves again on connection loss anyway). */
    zoo_set_servers_resolution_delay(zh, 60000);
    /* Credentials go with every new session; the server answers a bad scheme or secret
     * with AUTH_FAILED, which is fatal (session.c). */
    char scheme[64];
    const char *cred = config_auth(cfg, scheme, sizeof scheme);
    if (cred) {
        hc->auth_waiting = 1; /* before the answer can arrive */
        int rc = zoo_add_auth(zh, scheme, cred, (int)strlen(cred), on_auth, hc);
        if (rc == ZINVALIDSTATE) { /* the client takes them only while connected */
            hc->auth_resend = 1;
        } else if (rc != ZOK) { /* no answer will come: do not wait for one */
            hc->auth_waiting = 0;
            log_error("zookeeper: cannot add %s credentials: %s", scheme, zk_strerror(rc));
        }
    }
    return zh;
}

static struct handle_ctx *new_hctx(struct zkstore *zs)
{
    struct handle_ctx *hc = calloc(1, sizeof *hc);
    if (hc) {
        hc->zs = zs;
        hc->gen = ++zs->gen;
    }
    zs->connected = 0;
    return hc;
}

/* At start, before the loop runs. */
static int open_handle(struct zkstore *zs)
{
    struct handle_ctx *hc = new_hctx(zs);
    zklog_set_quiet(1); /* attempts before the first connection are not errors either */
    if (!hc || !(zs->zh = create_handle(zs->cfg, hc))) {
        free(hc);
        return -1;
    }
    zs->hctx = hc;
    return 0;
}

struct zkstore *zkstore_new(struct event_base *base, const struct config *cfg,
                            zk_watch_fn on_watch, zk_session_fn on_session, void *ctx)
{
    struct zkstore *zs = calloc(1, sizeof *zs);
    if (!zs)
        return NULL;
    zs->cfg = cfg;
    zs->on_watch = on_watch;
    zs->on_session = on_session;
    zs->ctx = ctx;
    zs->q = loopq_new(base, on_loop, NULL);
    zklog_set_level(cfg->log_level);
    if (!zs->q || zkacl_build(cfg, &zs->acl) != 0 || open_handle(zs) != 0) {
        if (zs->q)
            loopq_free(zs->q);
        zkacl_free(&zs->acl);
        free(zs);
        return NULL;
    }
    return zs;
}

/* A renewal in progress: the old handle to close, then the new one to create, both off
 * the loop thread (closing waits for the server; creating resolves host names). */
struct renewal {
    struct zkstore *zs;
    const struct config *cfg;
    zhandle_t *old;
    struct handle_ctx *old_hctx, *hctx;
};

/* Renewal threads still running; zkstore_free waits for them, as they push to the loop
 * queue it is about to free. */
static pthread_mutex_t renewers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t renewers_done = PTHREAD_COND_INITIALIZER;
static int renewers;

static void *renew_thread(void *arg)
{
    struct renewal *rn = arg;
    if (rn->old)
        zookeeper_close(rn->old);
    free(rn->old_hctx);
    struct zk_msg *m = calloc(1, sizeof *m);
    zhandle_t *zh = create_handle(rn->cfg, rn->hctx);
    if (m) {
        m->kind = MSG_HANDLE;
        m->zs = rn->zs;
        m->gen = rn->hctx->gen;
        m->zh = zh;
        m->hctx = rn->hctx;
        loopq_push(rn->zs->q, &m->link);
    } else {
        if (zh)
            zookeeper_close(zh);
        free(rn->hctx);
    }
    free(rn);
    pthread_mutex_lock(&renewers_lock);
    renewers--;
    pthread_cond_broadcast(&renewers_done);
    pthread_mutex_unlock(&renewers_lock);
    return NULL;
}

/* Completes with RC the calls still out that the client library will never complete. */
static void complete_dropped(struct zkstore *zs, int rc)
{
    struct zk_msg *dropped = zs->outstanding;
    zs->outstanding = NULL; /* what their owners send now is new, and theirs to wait for */
    while (dropped) {
        struct zk_msg *m = dropped;
        dropped = m->out_next;
        m->out_next = m->out_prev = NULL;
        m->res.rc = rc;
        if (m->done)
            m->done(&m->res, m->ctx);
        free_msg(m);
    }
}

/* A renewal's new handle. The old one is closed by now, and every completion it gave went
 * through the loop queue before this message: calls still out were dropped by the client
 * library at its close (sent while it was not connected). Their session is gone, so they
 * complete as expired, and their owners carry on (or free their contexts) now rather
 * than at exit. No call is sent between a renewal and its new handle (no handle then). */
static void install_handle(struct zkstore *zs, struct zk_msg *m)
{
    int fresh = m->gen == zs->gen && !zs->closing;
    if (!fresh || !m->zh) {
        if (m->zh)
            zookeeper_close(m->zh); /* only at exit: nothing else supersedes a renewal */
        free(m->hctx);
        if (fresh) {
            complete_dropped(zs, ZSESSIONEXPIRED);
            zs->on_session(ZKSTORE_HANDLE_FAILED, zs->ctx);
        }
        return;
    }
    zs->zh = m->zh;
    zs->hctx = m->hctx;
    complete_dropped(zs, ZSESSIONEXPIRED);
    if (zs->early_state) {
        int state = zs->early_state;
        zs->early_state = 0;
        session_event(zs, state);
    }
    if (zs->early_auth) {
        zs->early_auth = 0;
        session_event(zs, AUTH_ACCEPTED);
    }
    if (zs->early_retry) {
        zs->early_retry = 0;
        session_event(zs, AUTH_RETRY);
    }
}

int zkstore_renew(struct zkstore *zs)
{
    struct renewal *rn = calloc(1, sizeof *rn);
    struct handle_ctx *hc = rn ? new_hctx(zs) : NULL;
    if (!hc) {
        free(rn);
        return -1;
    }
    *rn = (struct renewal){.zs = zs, .cfg = zs->cfg, .old = zs->zh, .old_hctx = zs->hctx,
                           .hctx = hc};
    zs->zh = NULL;
    zs->hctx = NULL;
    zs->early_state = 0;
    pthread_mutex_lock(&renewers_lock);
    renewers++;
    pthread_mutex_unlock(&renewers_lock);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, renew_thread, rn) != 0)
        renew_thread(rn); /* cannot start a thread: do it here, blocking, rather than never */
    pthread_attr_destroy(&attr);
    return 0;
}

void zkstore_free(struct zkstore *zs)
{
    if (!zs)
        return;
    /* Closing ends the session at once, so our ephemeral locks vanish now rather than
     * after the session timeout. Completions still queued are handed to the loop queue. */
    zs->closing = 1;
    /* Blocks up to a few seconds if ZooKeeper is unreachable: only ever at exit. Every
     * call still pending completes (ZCLOSING) during the drain below, so that each
     * owner frees its context. */
    if (zs->zh)
        zookeeper_close(zs->zh);
    zs->zh = NULL;
    free(zs->hctx);
    pthread_mutex_lock(&renewers_lock);
    while (renewers > 0)
        pthread_cond_wait(&renewers_done, &renewers_lock);
    pthread_mutex_unlock(&renewers_lock);
    loopq_free(zs->q);
    complete_dropped(zs, ZCLOSING); /* dropped by the client library: never coming now */
    zkacl_free(&zs->acl);
    free(zs);
}
