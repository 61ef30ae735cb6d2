#include "commands.h"

#include <stdio.h>
#include <string.h>

#include "access.h"
#include "cancel.h"
#include "claim_recovery.h"
#include "clock_sync.h"
#include "config.h"
#include "consumers.h"
#include "daemon.h"
#include "dispatcher.h"
#include "lease.h"
#include "log.h"
#include "packer.h"
#include "metrics_expose.h"
#include "put.h"
#include "reply.h"
#include "server.h"
#include "session.h"
#include "settle.h"
#include "tokensweep.h"
#include "unpacker.h"

#define DENIALS_LOGGED 10 /* per connection: a refused client cannot flood the log */

typedef void handler_fn(struct deferd *d, struct conn *c, struct proto_request *req,
                        struct reply *r);

struct command {
    const char *name;
    handler_fn *handle;
    int guarded;            /* checked against the access rules of the queues it names */
    int takes_on_work;      /* refused while the daemon drains */
};

/* ---- producers ---- */

static void handle_put(struct deferd *d, struct conn *c, struct proto_request *req,
                       struct reply *r)
{
    (void)c;
    put_single(d->dispatcher, req, r); /* takes the payload */
}

static void handle_batch(struct deferd *d, struct conn *c, struct proto_request *req,
                         struct reply *r)
{
    (void)c;
    put_batch(d->dispatcher, req, r);
}

static void handle_flow(struct deferd *d, struct conn *c, struct proto_request *req,
                        struct reply *r)
{
    (void)c;
    put_flow(d->dispatcher, req, r);
}

static void handle_cancel(struct deferd *d, struct conn *c, struct proto_request *req,
                          struct reply *r)
{
    (void)c;
    cancel_job(d->dispatcher, req, r);
}

static void handle_reschedule(struct deferd *d, struct conn *c, struct proto_request *req,
                              struct reply *r)
{
    (void)c;
    cancel_reschedule(d->dispatcher, req, r);
}

/* ---- consumers ---- */

/* A Curator queue is consumed only with Curator's lock path. */
static int check_sub_queues(struct dispatcher *ds, const struct proto_request *req,
                            struct reply *r)
{
    for (size_t i = 0; i < req->nsubs; i++) {
        const struct dqueue *q = dispatcher_queue(ds, req->subs[i]);
        if (!q) {
            reply_err(r, PE_UNKNOWN_QUEUE, "no queue '%s' is configured", req->subs[i]);
            return -1;
        }
        if (q->cfg->format != QF_NATIVE && !q->cfg->curator_lock_path[0]) {
            reply_err(r, PE_BAD_REQUEST, "queue '%s' is a Curator queue without "
                      "curator_lock_path: consuming it needs Curator's lockPath "
                      "(docs/curator-compat.md)", req->subs[i]);
            return -1;
        }
    }
    return 0;
}

static void handle_sub(struct deferd *d, struct conn *c, struct proto_request *req,
                       struct reply *r)
{
    struct dispatcher *ds = d->dispatcher;
    if (req->inflight > d->cfg->max_inflight) {
        reply_err(r, PE_BAD_REQUEST, "inflight %u is over this daemon's max_inflight %llu",
                  req->inflight, (unsigned long long)d->cfg->max_inflight);
        return;
    }
    if (check_sub_queues(ds, req, r) != 0)
        return;
    struct consumer *consumer = server_conn_consumer(c, 1);
    if (!consumer) {
        reply_err(r, PE_INTERNAL, "out of memory");
        return;
    }
    consumer->inflight_max = req->inflight;
    consumer->push_uid |= req->push_uid; /* once asked, for good: a reader counts words */
    for (size_t i = 0; i < req->nsubs; i++) {
        if (dispatcher_subscribe(ds, consumer, dispatcher_queue(ds, req->subs[i])) != 0) {
            reply_err(r, PE_UNAVAILABLE, "cannot follow queue '%s' in ZooKeeper", req->subs[i]);
            return;
        }
    }
    dispatcher_consumer_changed(ds, consumer); /* inflight may have grown */
    reply_ok(r, NULL);
}

/* UNSUB [QUEUES]: no more jobs of those queues (all: none named); held ones stay held. */
static void handle_unsub(struct deferd *d, struct conn *c, struct proto_request *req,
                         struct reply *r)
{
    struct dispatcher *ds = d->dispatcher;
    struct consumer *consumer = server_conn_consumer(c, 0);
    for (size_t i = 0; i < req->nsubs; i++) {
        if (!dispatcher_queue(ds, req->subs[i])) {
            reply_err(r, PE_UNKNOWN_QUEUE, "no queue '%s' is configured", req->subs[i]);
            return;
        }
    }
    for (size_t i = 0; consumer && i < req->nsubs; i++)
        dispatcher_unsubscribe(ds, consumer, dispatcher_queue(ds, req->subs[i]));
    if (consumer && req->nsubs == 0)
        dispatcher_unsubscribe(ds, consumer, NULL);
    server_conn_hold_unsub(c, r);
}

/* ACK, NACK and TOUCH: of a job this connection holds. */
static void handle_held(struct deferd *d, struct conn *c, struct proto_request *req,
                        struct reply *r)
{
    struct consumer *consumer = server_conn_consumer(c, 0);
    if (!consumer)
        reply_err(r, PE_NOT_FOUND, "job %s is not held by this connection", req->id);
    else if (req->cmd == CMD_ACK)
        settle_ack(d->dispatcher, consumer, req, r);
    else if (req->cmd == CMD_NACK)
        settle_nack(d->dispatcher, consumer, req, r);
    else
        lease_touch(d->dispatcher, consumer, req->id, r);
    proto_request_clear(req); /* follow-ups not taken */
}

/* ---- everyone ---- */

static void handle_ping(struct deferd *d, struct conn *c, struct proto_request *req,
                        struct reply *r)
{
    (void)d;
    (void)c;
    (void)req;
    reply_ok(r, "PONG");
}

static void handle_stats_queue(struct deferd *d, const char *queue, struct reply *r)
{
    char text[8192];
    if (!dispatcher_queue(d->dispatcher, queue))
        reply_err(r, PE_UNKNOWN_QUEUE, "no queue '%s' is configured", queue);
    else if (metrics_expose_queue(d->metrics, queue, text, sizeof text) != 0)
        reply_err(r, PE_INTERNAL, "out of memory");
    else
        reply_ok(r, text);
}

static void handle_stats(struct deferd *d, struct conn *c, struct proto_request *req,
                         struct reply *r)
{
    (void)c;
    char text[8192];
    size_t n;
    struct unpacker_counts uc;
    struct packer_counts pc;
    struct tokensweep_counts tc;
    if (req->queue[0]) {
        handle_stats_queue(d, req->queue, r);
        return;
    }
    session_format(d->session, text, sizeof text);
    n = strlen(text);
    dispatcher_format(d->dispatcher, text + n, sizeof text - n);
    n = strlen(text);
    unpacker_counts(d->unpacker, &uc);
    packer_counts(d->packer, &pc);
    tokensweep_report(d->tokensweep, &tc);
    struct clock_report cr;
    clock_sync_report(d->clock, &cr);
    snprintf(text + n, sizeof text - n, " clock_state=%s clock_skew_ms=%.1f clock_error_ms=%.1f"
             " clock_samples=%llu clock_jumps=%llu", clock_state_name(cr.state), cr.skew_ms,
             cr.error_ms, (unsigned long long)cr.samples, (unsigned long long)cr.jumps);
    n = strlen(text);
    snprintf(text + n, sizeof text - n, " puts_open=%zu puts_waiting=%zu packed_puts=%llu"
             " packs_created=%llu packs_rewritten=%llu pack_bytes=%llu packed_open=%zu"
             " packs_unpacked=%llu jobs_unpacked=%llu unpack_races_lost=%llu"
             " packs_unreadable=%llu", put_open_count(d->dispatcher),
             server_puts_waiting(d->server), pc.packed, pc.created, pc.rewritten, pc.bytes,
             packer_open(d->packer), uc.packs, uc.jobs, uc.lost_races, uc.unreadable);
    n = strlen(text);
    snprintf(text + n, sizeof text - n, " token_sweeps=%llu token_dirs_swept=%llu"
             " tokens_swept=%llu", (unsigned long long)tc.passes, (unsigned long long)tc.dirs,
             (unsigned long long)tc.tokens);
    n = strlen(text);
    struct flow_counts fc; /* last: fields are added at the end, for readers that cut */
    dispatcher_flow_counts(d->dispatcher, &fc);
    snprintf(text + n, sizeof text - n, " flows_opened=%llu flows_released=%llu"
             " flows_dead_lettered=%llu flow_conflicts=%llu", fc.opened, fc.released,
             fc.dead_lettered, fc.conflicts);
    n = strlen(text);
    unsigned long long cn, cj, cw;
    struct claim_recovery_counts rc;
    dispatcher_claim_counts(d->dispatcher, &cn, &cj, &cw);
    claim_recovery_counts(d->claim_recovery, &rc);
    snprintf(text + n, sizeof text - n, " layout_version=%d claims=%llu claimed_jobs=%llu"
             " claim_writes=%llu claims_recovered=%llu claim_jobs_recovered=%llu"
             " claim_recovery_races=%llu claims_unreadable=%llu", d->layout_version, cn, cj, cw,
             rc.claims, rc.jobs, rc.lost_races, rc.unreadable);
    reply_ok(r, text);
}

static const struct command commands[] = {
    [CMD_PUT] = {"PUT", handle_put, 1, 1},
    [CMD_BATCH] = {"BATCH", handle_batch, 1, 1},
    [CMD_FLOW] = {"FLOW", handle_flow, 1, 1},
    [CMD_CANCEL] = {"CANCEL", handle_cancel, 1, 0},
    [CMD_RESCHEDULE] = {"RESCHEDULE", handle_reschedule, 1, 0},
    [CMD_SUB] = {"SUB", handle_sub, 1, 1},
    [CMD_UNSUB] = {"UNSUB", handle_unsub, 0, 0},
    [CMD_ACK] = {"ACK", handle_held, 1, 0},   /* its follow-ups' queues */
    [CMD_NACK] = {"NACK", handle_held, 1, 0},
    [CMD_TOUCH] = {"TOUCH", handle_held, 0, 0},
    [CMD_PING] = {"PING", handle_ping, 0, 0},
    [CMD_STATS] = {"STATS", handle_stats, 0, 0},
};

/* ---- who may ---- */

static int denied(struct deferd *d, struct conn *c, const char *queue, int consume,
                  const char *what, struct reply *r)
{
    const struct queue_config *qc = config_queue(d->cfg, queue);
    const struct peer *peer = server_conn_peer(c);
    if (!qc || access_allows(consume ? &qc->consumers : &qc->producers, peer))
        return 0; /* an unknown queue is answered as such further on */
    if (server_conn_denial(c) < DENIALS_LOGGED)
        log_warn("permission denied: %s on queue %s for uid %ld gid %ld pid %ld (queue's %s)",
                 what, queue, peer->known ? (long)peer->uid : -1L,
                 peer->known ? (long)peer->gid : -1L, peer->known ? (long)peer->pid : -1L,
                 consume ? "consumers" : "producers");
    reply_err(r, PE_PERMISSION_DENIED, "uid %ld may not %s on queue '%s' (its %s rule)",
              peer->known ? (long)peer->uid : -1L, what, queue,
              consume ? "consumers" : "producers");
    return 1;
}

/* The queue named by a job id ("<queue>/..."). */
static void id_queue(const char *id, char *queue, size_t len)
{
    size_t n = strcspn(id, "/");
    snprintf(queue, len, "%.*s", (int)(n < len ? n : len - 1), id);
}

/* Checks every queue the request would change or consume against its rules. */
static int forbidden(struct deferd *d, struct conn *c, const struct command *cmd,
                     struct proto_request *req, struct reply *r)
{
    char queue[QUEUE_NAME_MAX + 1];
    if (!cmd->guarded)
        return 0;
    if (req->cmd == CMD_PUT)
        return denied(d, c, req->queue, 0, cmd->name, r);
    for (size_t i = 0; req->cmd == CMD_SUB && i < req->nsubs; i++)
        if (denied(d, c, req->subs[i], 1, cmd->name, r))
            return 1;
    for (size_t i = 0; i < req->nitems; i++) /* BATCH, follow-ups of ACK/NACK */
        if (denied(d, c, req->items[i].queue, 0, cmd->name, r))
            return 1;
    if (req->cmd == CMD_CANCEL || req->cmd == CMD_RESCHEDULE) {
        if (req->id[0])
            id_queue(req->id, queue, sizeof queue);
        return denied(d, c, req->id[0] ? queue : req->queue, 0, cmd->name, r);
    }
    return 0;
}

void commands_handle(struct deferd *d, struct conn *c, struct proto_request *req,
                     struct reply *r)
{
    const struct command *cmd = (size_t)req->cmd < sizeof commands / sizeof *commands
                                    ? &commands[req->cmd] : NULL;
    if (!cmd || !cmd->handle) { /* the decoder knows no other: a bug, said as such */
        proto_request_clear(req);
        reply_err(r, PE_INTERNAL, "no handler for command %d", (int)req->cmd);
        return;
    }
    if (forbidden(d, c, cmd, req, r)) {
        proto_request_clear(req);
        return;
    }
    if (cmd->takes_on_work && dispatcher_draining(d->dispatcher)) {
        /* Shutting down: held jobs may still be settled, nothing new is taken on. */
        proto_request_clear(req);
        int put = proto_stores_jobs(req->cmd);
        reply_refuse(r, PE_UNAVAILABLE, &(struct refusal){.stored = put ? RS_NO : RS_UNSAID,
                                                          .reason = RR_DRAINING},
                     "deferd is shutting down; nothing was stored");
        return;
    }
    cmd->handle(d, c, req, r);
}
