/* The ZooKeeper layout codec: job znode names, bucket paths and job ids
 * (docs/zookeeper-layout.md is the contract). Pure string work, no ZooKeeper calls. */
#ifndef DEFERD_LAYOUT_H
#define DEFERD_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "names.h"

/* Jobs live in <root>/queues/<queue>/jobs/<L1>/<L2>/<L3>/<job name>, where each bucket's
 * value is the due time (epoch ms) divided by these widths. L1 is named by its value; L2 and
 * L3 by their value (the full form, layout versions 1-3) or by their own digits, the value's
 * remainder by 100 and 1000 (the short form, version 4: 14 bytes less a job's path, which
 * ZooKeeper hashes, stores and logs at every create; issue 43). */
#define LAYOUT_DEPTH 3
extern const uint64_t layout_bucket_width[LAYOUT_DEPTH + 1]; /* [1..3] used */

#define LAYOUT_UID_MAX NAMES_UID_MAX
#define LAYOUT_SHARD_MAX 24
/* A pack's name: "p<window start ms>-<window width ms>-<uid>" (layout version 2). */
#define LAYOUT_PACK_MAX 48
#define LAYOUT_KEY_MAX NAMES_KEY_MAX
#define LAYOUT_GROUP_MAX NAMES_GROUP_MAX
#define LAYOUT_NAME_MAX 152 /* with the -c field (version 4); 150 without: the same jobs fit */
#define LAYOUT_PATH_MAX 512
#define LAYOUT_ID_MAX NAMES_ID_MAX
#define LAYOUT_DUE_MAX 9999999999999ULL /* year 2286; keeps names 13 digits or less */
#define LAYOUT_LOCK "lock"
#define LAYOUT_OWNER "owner-" /* + the holding session id in hex, '-', 10-digit sequence */

/* The names in the tree, each written here only (docs/zookeeper-layout.md). Under the root: */
#define LAYOUT_QUEUES "queues"
#define LAYOUT_DAEMONS "daemons"     /* <ident>: a daemon's clock samples (ephemeral) */
#define LAYOUT_SCHEDULES "schedules" /* <name>: a schedule's state */
#define LAYOUT_FLOWS "flows"         /* <parent uid>: a flow waiting for its children */
#define LAYOUT_FLOW_PARENT "parent"  /* flows/<uid>/parent: the parent's payload */
#define LAYOUT_FLOW_CHILD "c-"       /* flows/<uid>/c-<child uid>: a child not settled yet */
/* Under <root>/queues/<queue>: */
#define LAYOUT_JOBS "jobs"
#define LAYOUT_DEAD "dead"
#define LAYOUT_KEYS "keys"
#define LAYOUT_TOKENS "tokens"
#define LAYOUT_PACKS "packs"
#define LAYOUT_COUNTS "counts"       /* <daemon uid>: a daemon's count of pending jobs */
#define LAYOUT_COUNTS_ADMIN "admin"  /* counts/admin: deferctl's */
#define LAYOUT_PAUSED "paused"       /* the queue's pause flag */
#define LAYOUT_SLOTS "slots"         /* limits' slot nodes: layout_slot_name() */

struct job_name {
    uint64_t due_ms;
    uint32_t priority;
    uint32_t prior_attempts; /* deliveries before the job was moved (nack with delay) */
    uint32_t ttr_ms;         /* time-to-run lease; 0 = the queue's default */
    char uid[LAYOUT_UID_MAX + 1];
    /* "" or the group it was put with (PUT group=): "-g<group>" after the tags, '-' written
     * as '~' (names_job_group). Fair turns and per-group limits go by it. */
    char group[LAYOUT_GROUP_MAX + 1];
    /* "" or the flow the job is a child of (FLOW): its parent's uid, "-f<uid>" after the
     * group; the flow's nodes are <root>/flows/<uid> (layout_flow_path). */
    char flow[LAYOUT_UID_MAX + 1];
    /* A released parent of an on=complete flow: how its children ended, "-r<acked>.<dead>"
     * after the flow field, so that its delivery says how many failed (has_results). */
    int has_results;
    uint32_t flow_acked, flow_dead;
    /* "" or the caller's idempotency key: while the job exists, the queue's key node
     * <root>/queues/<q>/keys/<hash>/<key> exists and names it. Last field of the name. */
    char key[LAYOUT_KEY_MAX + 1];
    /* "" or the shard directory inside the 100 ms bucket that holds the job: a writer
     * that has put many jobs into one bucket puts the rest into shards of its own, so
     * that no listing grows past a few hundred KiB. Not part of the name. */
    char shard[LAYOUT_SHARD_MAX + 1];
    /* "" or the pack that holds the job (layout version 2): a far-future job stored with
     * others in the data of one znode until its window comes near. Not part of the name;
     * a job is in a shard or in a pack, never both. */
    char pack[LAYOUT_PACK_MAX + 1];
    /* 1: the job's buckets are named in the short form (layout version 4); its name says so
     * with "-c" after the uid, so that its id alone leads to its path. */
    int short_buckets;
};

/* Shard names: 's', then 1..23 of [0-9a-z-]. Job names start with a digit. */
int layout_valid_shard(const char *name);

int layout_parse_name(const char *name, struct job_name *out);
int layout_format_name(const struct job_name *jn, char *buf, size_t len);

/* Which names a bucket path has: under a parent of value 0 (and at level 1) the two forms
 * name a bucket alike (LAYOUT_FORM_EITHER). */
enum layout_form { LAYOUT_FORM_EITHER, LAYOUT_FORM_FULL, LAYOUT_FORM_SHORT };

/* A bucket's value at level 1..3 for a due time, and the reverse: does CHILD name a valid
 * bucket at LEVEL under a parent bucket whose value is PARENT (ignored at level 1)? Its
 * value, and its form (enum layout_form, >= 0), or -1 when it names none. */
uint64_t layout_bucket_of(uint64_t due_ms, int level);
int layout_parse_bucket(const char *child, int level, uint64_t parent, uint64_t *value);
/* The form of a bucket path whose parent path has form PARENT and whose last name has form
 * CHILD, or -1 when they differ (a path of two layouts, which no id leads to). */
int layout_form_join(int parent, int child);
/* Is the job JN allowed in the level-3 bucket with value LEAF whose path has form FORM:
 * its due time in the bucket, and its name's form the path's? */
int layout_job_in_bucket(const struct job_name *jn, uint64_t leaf, int form);

/* PATH's parent (the part before its last '/') into BUF: 0, or -1 when PATH has no '/' after
 * its first byte or BUF is too short. */
int layout_parent_path(char *buf, size_t len, const char *path);
/* <root>/queues/<queue>/jobs, then the bucket at LEVEL (0 = the jobs directory itself),
 * its names in the short form when SHORT_FORM. */
int layout_bucket_path(char *buf, size_t len, const char *root, const char *queue,
                       uint64_t due_ms, int level, int short_form);
int layout_job_path(char *buf, size_t len, const char *root, const char *queue,
                    const struct job_name *jn);
/* <root>/<node>[/<child>]: the marker, a daemon's node, a schedule's state. */
int layout_root_path(char *buf, size_t len, const char *root, const char *node,
                     const char *child);
/* <root>/queues, and each further part given (a NULL ends them): <root>/queues/<queue>,
 * <root>/queues/<queue>/<node> (LAYOUT_DEAD, LAYOUT_KEYS...), .../<node>/<child>. */
int layout_queue_path(char *buf, size_t len, const char *root, const char *queue,
                      const char *node, const char *child);
/* The queue whose NODE (e.g. LAYOUT_PAUSED) PATH is: 0 and the queue, -1 if PATH is no
 * such node under ROOT, -2 if it is one but its queue's name is longer than QLEN allows. */
int layout_queue_of(const char *path, const char *root, const char *node, char *queue,
                    size_t qlen);
/* A job's lock node: <job path>/lock. */
int layout_lock_path(char *buf, size_t len, const char *job_path);
/* A job's owner node: <job path>/owner-<session hex>-<SEQ, 10 digits>; SEQ < 0 gives the
 * prefix a sequential create completes. */
int layout_owner_path(char *buf, size_t len, const char *job_path, uint64_t session,
                      int64_t seq);
/* Dead letters: <root>/queues/<queue>/dead/<L1 of the due time>/<job name>, the name's
 * a<N> field holding the attempts made. */
int layout_dead_path(char *buf, size_t len, const char *root, const char *queue,
                     const struct job_name *jn);

/* Job ids are "<queue>/<job name>", "<queue>/<shard>/<job name>" for a sharded job, or
 * "<queue>/<pack>/<job name>" for a packed one. */
int layout_format_id(char *buf, size_t len, const char *queue, const char *name);
int layout_job_id(char *buf, size_t len, const char *queue, const struct job_name *jn);
/* Both, the name formatted once (a put names every job so). */
int layout_job_path_id(char *path, size_t plen, char *id, size_t idlen, const char *root,
                       const char *queue, const struct job_name *jn);
int layout_parse_id(const char *id, char *queue, size_t qlen, struct job_name *jn);

int layout_valid_uid(const char *uid);

/* <root>/queues/<queue>/keys/<3 hex digits of the key's FNV-1a hash>/<key>: spread over
 * 4096 directories so that no listing of them grows large. */
int layout_key_path(char *buf, size_t len, const char *root, const char *queue,
                    const char *key);
/* <root>/queues/<queue>/tokens/<minute>/<token>: a put token (PUT idem=), in the directory
 * of the minute its token's time falls in (ms / LAYOUT_TOKEN_MINUTE_MS), so that old ones
 * go by whole directories. Its data is as a key node's: the job it made. -1: no token. */
#define LAYOUT_TOKEN_MINUTE_MS 60000
/* A token is taken for LAYOUT_TOKEN_USE_MS after its time (by the producer's host clock),
 * and not taken more than LAYOUT_TOKEN_AHEAD_MS before it. Its minute's directory is
 * deleted once that minute ended LAYOUT_TOKEN_KEEP_MS ago by ZooKeeper's clock: the
 * difference is the room for the two clocks to differ. */
#define LAYOUT_TOKEN_USE_MS 300000
#define LAYOUT_TOKEN_AHEAD_MS 60000
#define LAYOUT_TOKEN_KEEP_MS 600000
int layout_token_path(char *buf, size_t len, const char *root, const char *queue,
                      const char *token);
/* A key node's data names its job: the job id without "<queue>/" ([shard/]name). */
int layout_key_data(char *buf, size_t len, const struct job_name *jn);
int layout_parse_key_data(const char *data, size_t len, struct job_name *jn);
/* The job id ("<queue>/...") that a key node's or a put token's DATA names; -1 if none. */
int layout_key_data_id(char *id, size_t len, const char *queue, const char *data, int dlen);
/* A kept key (the queue's key_retention): "done <ack ms> <[shard/]name>". */
int layout_kept_key_data(char *buf, size_t len, int64_t acked_ms, const struct job_name *jn);
/* 0 and the ack time (at most LAYOUT_DUE_MAX) and job if DATA is a kept key's, else -1 (a
 * live job's key, garbage). */
int layout_parse_kept_key(const char *data, size_t len, int64_t *acked_ms, struct job_name *jn);

/* ---- layout version 2: packs ----
 * <root>/queues/<queue>/packs/<L1 of the window start>/<pack name>; a pack's window lies in
 * one L1 bucket. */
#define LAYOUT_MARKER "layout" /* <root>/layout: "2" once every daemon reads packs */
#define LAYOUT_VERSION_PACKS 2
struct pack_name {
    uint64_t start_ms, width_ms;
    char uid[LAYOUT_UID_MAX + 1];
};
int layout_parse_pack_name(const char *name, struct pack_name *out);
int layout_format_pack_name(const struct pack_name *pn, char *buf, size_t len);
/* <root>/queues/<queue>/packs, and with a pack name the pack's path. */
int layout_packs_path(char *buf, size_t len, const char *root, const char *queue);
int layout_pack_path(char *buf, size_t len, const char *root, const char *queue,
                     const char *pack);
/* The shard in a job's 100 ms bucket that unpacking gives the many jobs of one pack due in
 * that bucket: "s" and the first 22 characters of the pack's uid. */
void layout_pack_shard(char *buf, size_t len, const char *pack_uid);
/* The marker's data: the layout version it names, or -1 when it is not one. */
int layout_parse_marker(const char *data, size_t len);

/* ---- layout version 3: claims (issue 43) ----
 * <root>/queues/<queue>/claims/<session hex>-<n hex>: jobs a daemon took out of their
 * buckets in one transaction, held for its consumers (src/common/claimdata.h);
 * <root>/sessions/<session hex>: an ephemeral node of each daemon's live session, made
 * before its first claim, so that a claim whose session's node is gone is recovered. */
#define LAYOUT_CLAIMS "claims"
#define LAYOUT_SESSIONS "sessions"
#define LAYOUT_VERSION_CLAIMS 3
#define LAYOUT_CLAIM_NAME_MAX 40
int layout_claim_name(char *buf, size_t len, uint64_t session, uint64_t n);
/* 0 and the session and number of a claim's name, -1 when NAME is none. */
int layout_parse_claim_name(const char *name, uint64_t *session, uint64_t *n);

/* ---- layout version 4: short bucket names (issue 43) ----
 * New jobs' L2 and L3 buckets are named by their own digits, and their names carry "-c"
 * (job_name.short_buckets); a job keeps the form it was put with, and packed jobs stay in
 * the full form (a pack's record has no field for it). */
#define LAYOUT_VERSION_SHORT 4
/* <root>/sessions/<session hex>, or <root>/sessions alone for SESSION 0. */
int layout_session_path(char *buf, size_t len, const char *root, uint64_t session);

/* A flow (docs/flows.md): its node <root>/flows/<parent uid> holds this, as text; the
 * parent's payload is its child LAYOUT_FLOW_PARENT, each child not settled yet has a marker
 * LAYOUT_FLOW_CHILD<child uid> holding the child's id. */
struct layout_flow {
    int on_complete;               /* on=complete: due once every child settled, however */
    uint32_t pending, acked, dead; /* children not settled yet, acked, dead-lettered */
    char parent[LAYOUT_ID_MAX + 1]; /* the parent's id: it is created under that name */
};
int layout_flow_data(char *buf, size_t len, const struct layout_flow *f);
int layout_parse_flow_data(const char *data, size_t len, struct layout_flow *f);
/* <root>/flows/<flow>[/<child>] (CHILD NULL: the flow's node; FLOW NULL: the directory). */
int layout_flow_path(char *buf, size_t len, const char *root, const char *flow,
                     const char *child);
/* <root>/flows/<flow>/c-<child uid>: CHILD_UID's marker. */
int layout_flow_marker_path(char *buf, size_t len, const char *root, const char *flow,
                            const char *child_uid);

/* The slot nodes of a queue's limits, under <root>/queues/<q>/slots (docs/limits.md): */
enum layout_slot_kind {
    LAYOUT_SLOT_CONCURRENCY,       /* c-<i>: concurrency, ephemeral (engine/limit.h) */
    LAYOUT_SLOT_GROUP_CONCURRENCY, /* g-<i>-<group>: group_concurrency, ephemeral */
    LAYOUT_SLOT_RATE,              /* r-<i>: rate, persistent (engine/rate.h) */
    LAYOUT_SLOT_GROUP_RATE,        /* gr-<i>-<group>: group_rate, persistent */
};
/* The name of slot I of KIND (GROUP: its group, ignored for the queue's own kinds). */
int layout_slot_name(char *buf, size_t len, enum layout_slot_kind kind, uint32_t i,
                     const char *group);
/* A slot's name: its index, *KIND and *GROUP ("" for the queue's own kinds); -1 for a name
 * that is not a slot's. */
long layout_parse_slot(const char *name, enum layout_slot_kind *kind, const char **group);

#endif
