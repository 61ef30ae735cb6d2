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
    struct token_reads *rs;
    struct token_wait w;
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
static void refuse(struct token_reads *rs, const struct token_wait *w, int rc, const char *why)
{
    struct token_refusal out = {.f = {.stored = RS_MAYBE, .reason = zk_refusal_reason(rc)}};
    snprintf(out.text, sizeof out.text, UNREAD_FMT, why);
    if (rc == ZNOAUTH)
        queue_denied(w->q, w->path);
    else
        log_warn("queue %s: put token %s is taken but could not be read: %s; the put may have "
                 "been stored", w->q->cfg->name, w->path, why);
    rs->ans->refused(rs->ctx, w->put, rc, &out);
}

static void read_back(struct token_reads *rs)
{
    if (--rs->out == 0)
        rs->ans->done(rs->ctx);
}

static void on_read(const struct zk_result *res, void *ctx)
{
    struct token_read *tr = ctx;
    struct token_reads *rs = tr->rs;
    int rc = failpoint_hit("token-read-fails") ? ZSYSTEMERROR : res->rc;
    char id[LAYOUT_ID_MAX + 1];
    if (rc == ZOK && layout_key_data_id(id, sizeof id, tr->w.q->cfg->name, res->data,
                                        res->datalen) == 0)
        rs->ans->found(rs->ctx, tr->w.put, id);
    else if (rc == ZOK)
        refuse(rs, &tr->w, ZBADARGUMENTS, "it names no job this deferd knows");
    else if (rc == ZNONODE && past_use(tr->w.path))
        refuse(rs, &tr->w, rc, "gone after its use: swept");
    else if (rc != ZNONODE) /* NoNode within its use: made again with the put */
        refuse(rs, &tr->w, rc, zk_reason(rc));
    free(tr);
    read_back(rs);
}

void tokens_reads_start(struct token_reads *rs, const struct token_answers *ans, void *ctx)
{
    *rs = (struct token_reads){ans, ctx, 1};
}

void tokens_read(struct token_reads *rs, struct zkstore *zs, const struct token_wait *w)
{
    struct token_read *tr = malloc(sizeof *tr);
    int rc = tr ? ZOK : ZK_ENOMEM;
    if (tr) {
        *tr = (struct token_read){rs, *w};
        rc = zkstore_get(zs, w->path, on_read, tr);
    }
    if (rc == ZOK) {
        rs->out++;
        return;
    }
    free(tr);
    refuse(rs, w, rc, zk_reason(rc));
}

void tokens_reads_sent(struct token_reads *rs)
{
    read_back(rs);
}
