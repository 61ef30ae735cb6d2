/* The socket protocol (docs/protocol.md): decoding requests from a connection's input
 * buffer, staying in sync after any error, and formatting replies and pushes. */
#ifndef DEFERD_PROTOCOL_H
#define DEFERD_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "layout.h"
#include "refusal.h"

struct evbuffer;

#define PROTO_LINE_MAX CONFIG_MAX_LINE_LIMIT /* the most [daemon] max_line may allow */
#define PROTO_LINE_DEFAULT CONFIG_MAX_LINE_DEFAULT
#define PROTO_SUB_MAX 32          /* queues in one SUB */
#define PROTO_INFLIGHT_MAX CONFIG_MAX_INFLIGHT_LIMIT

#define PROTO_GROUP_MAX 1000             /* jobs in one BATCH or ACK/NACK then= */
#define PROTO_GROUP_BYTES_MAX (16u << 20) /* their payloads together */

enum proto_cmd {
    CMD_PUT, CMD_SUB, CMD_ACK, CMD_NACK, CMD_TOUCH, CMD_PING, CMD_STATS, CMD_BATCH,
    CMD_CANCEL, CMD_RESCHEDULE, CMD_UNSUB, CMD_FLOW,
};

/* When a flow's parent becomes due (FLOW on=): every child acked, or every child settled. */
enum proto_flow_on { FLOW_ON_SUCCESS, FLOW_ON_COMPLETE };

/* A request that stores jobs: PUT, BATCH, FLOW. */
static inline int proto_stores_jobs(int cmd)
{
    return cmd == CMD_PUT || cmd == CMD_BATCH || cmd == CMD_FLOW;
}

enum proto_errcode {
    PE_BAD_REQUEST, PE_UNKNOWN_QUEUE, PE_TOO_LARGE, PE_NOT_FOUND, PE_UNAVAILABLE, PE_INTERNAL,
    PE_LEASE_LOST, PE_QUEUE_FULL, PE_IN_FLIGHT, PE_PARTIAL, PE_PERMISSION_DENIED,
};

/* One job of a PUT, of a BATCH or a follow-up of ACK/NACK then=. */
struct proto_put {
    char queue[QUEUE_NAME_MAX + 1];
    char key[LAYOUT_KEY_MAX + 1];                     /* "" or the idempotency key */
    char idem[NAMES_TOKEN_MAX + 1];                   /* "" or the put token */
    char group[NAMES_GROUP_MAX + 1];                  /* "" or group= (fair turns) */
    uint32_t flow_parent;                             /* FLOW: parent=<item>, 0: none */
    int has_delay, has_at, has_prio, has_ttr;
    uint64_t delay_ms, at_ms, ttr_ms;
    uint32_t prio;
    unsigned char *payload;                           /* malloc'd */
    size_t len;
};

struct proto_request {
    enum proto_cmd cmd;
    char queue[QUEUE_NAME_MAX + 1];                   /* PUT; STATS: "" or one queue */
    char subs[PROTO_SUB_MAX][QUEUE_NAME_MAX + 1];     /* SUB; UNSUB (none: all) */
    size_t nsubs;
    uint32_t inflight;                                /* SUB, default 1 */
    int push_uid;                                     /* SUB uid=1: JOB pushes carry uid= */
    char id[LAYOUT_ID_MAX + 1];                       /* ACK, NACK, TOUCH; CANCEL,
                                                       * RESCHEDULE by id */
    char key[LAYOUT_KEY_MAX + 1];                     /* PUT; CANCEL, RESCHEDULE by key */
    char idem[NAMES_TOKEN_MAX + 1];                   /* PUT: "" or the put token */
    char group[NAMES_GROUP_MAX + 1];                  /* PUT: "" or group= (its job's group
                                                       * for fair turns; not a BATCH's) */
    uint32_t flow_parent;                             /* PUT in a FLOW: parent=<item> */
    int flow_join;                                    /* ACK join=1: follow-ups join the
                                                       * job's flow */
    int force;                                        /* CANCEL force=1 */
    int unrun;                                        /* NACK unrun=1: never started */
    uint32_t then;                                    /* BATCH n, FLOW n; ACK, NACK then=n */
    enum proto_flow_on flow_on;                       /* FLOW on= (success by default) */
    struct proto_put *items;                          /* the group's jobs, malloc'd */
    size_t nitems;
    int has_delay, has_at, has_prio, has_ttr;
    uint64_t delay_ms, at_ms, ttr_ms;
    uint32_t prio;
    unsigned char *payload;                           /* PUT: malloc'd, owned by caller */
    size_t len;
};

struct proto_error {
    enum proto_errcode code;
    struct refusal fields;      /* written before the text (refusal.h) */
    char text[200];
};

enum proto_state { PS_HEADER, PS_PAYLOAD, PS_SKIP_LINE, PS_SKIP_BYTES };

struct proto_decoder {
    enum proto_state state;
    uint64_t skip;               /* bytes still to drop in PS_SKIP_BYTES */
    uint64_t max_payload;
    size_t max_line;             /* header line limit: PROTO_LINE_DEFAULT unless set */
    struct proto_request pending; /* PUT header waiting for its payload */
    /* A BATCH or ACK/NACK then= collecting its PUTs; its first error, reported once all
     * of them have been read (so that the connection stays in sync). */
    int in_group;
    uint32_t refused_group;      /* jobs announced by a group header that was refused */
    struct proto_request group;
    size_t group_bytes, group_seen;
    int group_failed;
    struct proto_error group_err;
};

enum proto_result { PROTO_NEED_MORE, PROTO_REQUEST, PROTO_ERROR };

void proto_decoder_init(struct proto_decoder *d, uint64_t max_payload);
/* Takes what it can from IN. PROTO_REQUEST: *req is filled (free req->payload later).
 * PROTO_ERROR: *err says why; the decoder has resynchronised, keep calling. */
enum proto_result proto_decode(struct proto_decoder *d, struct evbuffer *in,
                               struct proto_request *req, struct proto_error *err);
/* Parses one header line (no '\n'); exposed for tests. */
int proto_parse_line(const char *line, size_t n, struct proto_request *req,
                     struct proto_error *err);

/* Frees what a decoded request owns (payload, group items); the request stays valid. */
void proto_request_clear(struct proto_request *req);
/* Releases what a decoder holds (a group half read) when its connection closes. */
void proto_decoder_clear(struct proto_decoder *d);

int proto_format_error(char *buf, size_t len, enum proto_errcode code, const char *text);
/* The most bytes refusal_format() writes for the daemon's fields. */
#define PROTO_FIELDS_MAX 128
/* "ERR <CODE> <fields> <text>" (docs/protocol.md, Errors); F may be NULL (no fields). */
int proto_format_refusal(char *buf, size_t len, enum proto_errcode code,
                         const struct refusal *f, const char *text);
/* One JOB push (docs/protocol.md). uid: the job's stable uid, NULL when it has none (a
 * Curator queue's item); written only for a consumer that asked for it (SUB uid=1), since a
 * version-1 client counts the header's words. */
struct proto_job {
    const char *id, *queue, *uid;
    uint32_t attempt;
    uint64_t due_ms;
    uint32_t priority;
    uint32_t ttr_ms;
    const void *payload;
    size_t len;
};
int proto_append_job(struct evbuffer *out, const struct proto_job *job, int with_uid);
int proto_append_deadline(struct evbuffer *out, const char *id, int64_t ms_left);
int proto_append_expired(struct evbuffer *out, const char *id);
int proto_append_cancelled(struct evbuffer *out, const char *id);

#define PROTO_TTR_MIN 1000
#define PROTO_TTR_MAX 604800000

#endif
