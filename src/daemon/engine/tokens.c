#include "tokens.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buckets.h"
#include "config.h"
#include "failpoint.h"
#include "layout.h"
#include "log.h"
#include "names.h"
#include "queue.h"
#include "units.h"
#include "zkstore.h"

/* The answer to a put whose token is taken but unreadable (docs/protocol.md, UNAVAILABLE). */
#define UNREAD_FMT "the job may have been stored: its put token is taken but could not be " \
                   "read (%s)"

static int bad_token(enum proto_errcode *code, char *text, size_t tlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int bad_token(enum proto_errcode *code, char *text, size_t tlen, const char *fmt, ...)
{
    va_list ap;
    *code = PE_BAD_REQUEST;
    va_start(ap, fmt);
    vsnprintf(text, tlen, fmt, ap);
    va_end(ap);
    return -1;
}

int tokens_path(char *path, size_t len, const char *root, const char *queue, const char *token,
                enum proto_errcode *code, char *text, size_t tlen)
{
    uint64_t ms = 0;
    int64_t now = units_wall_ms();
    names_valid_token(token, &ms);
    if ((int64_t)ms + LAYOUT_TOKEN_USE_MS < now)
        return bad_token(code, text, tlen, "idem token %s is %lld s old, more than %d s: its "
                         "put may have been stored; look for the job before putting it again",
                         token, (long long)(now - (int64_t)ms) / 1000,
                         LAYOUT_TOKEN_USE_MS / 1000);
    if ((int64_t)ms > now + LAYOUT_TOKEN_AHEAD_MS)
        return bad_token(code, text, tlen, "idem token %s is %lld s ahead of this host's clock",
                         token, (long long)((int64_t)ms - now) / 1000);
    if (layout_token_path(path, len, root, queue, token) != 0)
        return bad_token(code, text, tlen, "bad idem token '%s'", token);
    return 0;
}

int tokens_prepare_dir(struct zkstore *zs, struct buckets *known, const char *path)
{
    char dir[LAYOUT_PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= sizeof dir)
        return ZK_ETOOLONG;
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    if (buckets_known(known, dir))
        return ZOK;
    int rc = zkstore_create_parents(zs, path, NULL, NULL);
    if (rc == ZOK)
        buckets_add(known, dir);
    return rc;
}

int tokens_create_op(struct zk_txn_op *op, const char *path, const struct job_name *jn,
                     const char *pack, char *data, size_t dlen)
{
    struct job_name named = *jn;
    if (pack && pack[0])
        snprintf(named.pack, sizeof named.pack, "%s", pack);
    if (layout_key_data(data, dlen, &named) != 0)
        return ZK_ETOOLONG;
    *op = (struct zk_txn_op){.kind = ZT_CREATE, .path = path, .data = data,
                             .len = strlen(data)};
    return ZOK;
}

/* ---- resolution ---- */

struct token_read {
    struct resolution *rs;
    struct token_wait w;
};

struct resolution {
    const struct token_answers *ans;
    void *ctx;
    int out;                    /* reads on their way, plus one while they are sent */
    struct token_read reads[];
};

/* The token's time is past its use: the sweep may have deleted it (it goes by ZooKeeper's
 * clock, LAYOUT_TOKEN_KEEP_MS after the minute; this, by this host's). */
static int past_use(const char *path)
{
    const char *slash = strrchr(path, '/');
    uint64_t ms = 0;
    if (!slash || !names_valid_token(slash + 1, &ms))
        return 1;
    return (int64_t)ms + LAYOUT_TOKEN_USE_MS < units_wall_ms();
}

/* The one place a taken token that names no job is told: logged (a denial as the queue's
 * news), and its put answered stored=maybe. */
static void refuse(struct token_read *tr, int rc, const char *why)
{
    struct token_refusal out = {.f = {.stored = RS_MAYBE, .reason = zk_refusal_reason(rc)}};
    snprintf(out.text, sizeof out.text, UNREAD_FMT, why);
    if (rc == ZNOAUTH)
        queue_denied(tr->w.q, tr->w.path);
    else
        log_warn("queue %s: put token %s is taken but could not be read: %s; the put may have "
                 "been stored", tr->w.q->cfg->name, tr->w.path, why);
    tr->rs->ans->refused(tr->rs->ctx, tr->w.put, rc, &out);
}

static void read_back(struct resolution *rs)
{
    if (--rs->out > 0)
        return;
    rs->ans->done(rs->ctx);
    free(rs);
}

static void on_read(const struct zk_result *res, void *ctx)
{
    struct token_read *tr = ctx;
    int rc = failpoint_hit("token-read-fails") ? ZSYSTEMERROR : res->rc;
    char id[LAYOUT_ID_MAX + 1];
    if (rc == ZOK && layout_key_data_id(id, sizeof id, tr->w.q->cfg->name, res->data,
                                        res->datalen) == 0)
        tr->rs->ans->found(tr->rs->ctx, tr->w.put, id);
    else if (rc == ZOK)
        refuse(tr, ZBADARGUMENTS, "it names no job this deferd knows");
    else if (rc == ZNONODE && past_use(tr->w.path))
        refuse(tr, rc, "gone after its use: swept");
    else if (rc != ZNONODE) /* NoNode within its use: made again with the put */
        refuse(tr, rc, zk_reason(rc));
    read_back(tr->rs);
}

int tokens_resolve(struct zkstore *zs, const struct token_wait *waits, size_t n,
                   const struct token_answers *ans, void *ctx)
{
    struct resolution *rs = malloc(sizeof *rs + n * sizeof *rs->reads);
    if (!rs)
        return ZK_ENOMEM;
    rs->ans = ans;
    rs->ctx = ctx;
    rs->out = 1; /* held until every read is sent */
    for (size_t i = 0; i < n; i++) {
        struct token_read *tr = &rs->reads[i];
        *tr = (struct token_read){rs, waits[i]};
        rs->out++;
        int rc = zkstore_get(zs, tr->w.path, on_read, tr);
        if (rc != ZOK) {
            refuse(tr, rc, zk_reason(rc));
            rs->out--;
        }
    }
    read_back(rs);
    return ZOK;
}
