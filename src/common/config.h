/* deferd.ini: loading and validation. Every error names file and line. */
#ifndef DEFERD_CONFIG_H
#define DEFERD_CONFIG_H

#include <stddef.h>

#include <stdint.h>

#include "access.h"
#include "cron.h"

#include "log.h"
#include "names.h" /* QUEUE_NAME_MAX */
#define CURATOR_PATH_MAX 256

/* How a queue's jobs are stored: deferd's own bucket layout, or a flat Apache Curator
 * queue shared with Java services (docs/curator-compat.md). */
enum queue_format { QF_NATIVE, QF_CURATOR_DELAY, QF_CURATOR_PRIORITY };
#define CONFIG_SOCKET_PATH_MAX 107 /* a Unix socket address's sun_path, less its NUL */
#define CONFIG_MAX_PAYLOAD_LIMIT 1000000 /* stays below ZooKeeper's default jute.maxbuffer */
/* [daemon] max_line and max_inflight: the protocol's request line and SUB limits are
 * these (PROTO_LINE_MAX, PROTO_INFLIGHT_MAX). */
#define CONFIG_MAX_LINE_LIMIT 8192
#define CONFIG_MAX_LINE_DEFAULT 1024
#define CONFIG_MAX_INFLIGHT_LIMIT 10000
#define HOLD_WRITES_DEFAULT_MS 4000 /* [daemon] hold_writes, unless session_timeout is shorter */

/* [queue] concurrency: at most this many slots (engine/limit.h) */
#define QUEUE_CONCURRENCY_MAX 10000
/* [queue] group_weights: "name:N ..." (engine/turns.h): groups named, and a weight's bound */
#define QUEUE_WEIGHTS_MAX 64
#define QUEUE_WEIGHT_MAX 1000
struct group_weight {
    char group[NAMES_GROUP_MAX + 1];
    uint32_t weight;
};

struct queue_config {
    char name[QUEUE_NAME_MAX + 1];
    int line;                 /* where its section starts */
    size_t index;             /* position in config->queues: stable, queues are only added */
    uint32_t priority;        /* default for puts without prio= */
    uint64_t ttr_ms;          /* time-to-run lease */
    uint32_t max_attempts;
    uint64_t backoff_min_ms;  /* nack without delay: first redelivery delay (0 = at once) */
    uint64_t backoff_max_ms;  /* cap of the doubling delay */
    int backoff_line;         /* of the later of the two in the file (0: neither or by -o) */
    uint32_t backoff_jitter;  /* percent of the delay, spread both ways */
    uint64_t max_pending;     /* puts refused (QUEUE_FULL) at this many jobs; 0 = no limit */
    uint64_t key_retention_ms; /* an acked job's key stays taken this long; 0 = freed */
    uint32_t concurrency;     /* jobs held at once across the cluster; 0 = no limit */
    uint32_t group_concurrency; /* ... of each group (PUT group=); 0 = no limit */
    uint32_t rate_n;          /* rate = N/s|m|h: deliveries started per window; 0 = none */
    uint64_t rate_window_ms;  /* ... the window: 1 s, 1 min or 1 h */
    uint32_t group_rate_n;    /* group_rate = N/s|m|h: the same for each group; 0 = none */
    uint64_t group_rate_window_ms;
    int limit_line;           /* the line of its last limit key (concurrency, rate, ...) */
    struct group_weight weights[QUEUE_WEIGHTS_MAX]; /* turns a group takes in a row (else 1) */
    size_t nweights;
    /* Layout version 2: jobs due beyond now + pack_after go into packs, one per window of
     * pack_window (a divisor of the 10000 s L1 bucket); 0 = never pack. Line: for errors. */
    uint64_t pack_after_ms;
    uint64_t pack_window_ms;
    int pack_line;
    struct access_list producers; /* who may PUT, BATCH, CANCEL, RESCHEDULE; empty: anyone */
    struct access_list consumers; /* who may SUB */
    enum queue_format format;
    char curator_path[CURATOR_PATH_MAX];      /* Curator's queuePath ("" when native) */
    char curator_lock_path[CURATOR_PATH_MAX]; /* Curator's lockPath ("" when none) */
    int curator_delete_corrupt; /* delete undecodable items (as Curator does); else skip */
};

/* [schedule NAME]: a recurring job (docs/schedules.md). Its occurrences are the instants
 * of a cron expression in a time zone, or of a fixed interval from an anchor. */
#define SCHEDULE_NAME_MAX 40 /* its keys "<name>:<ms>[:m<count>]" stay within 64 bytes */
enum schedule_misfire { MISFIRE_SKIP, MISFIRE_ONCE, MISFIRE_ALL };
enum schedule_overlap { OVERLAP_ALLOW, OVERLAP_SKIP };
/* Their names in deferd.ini, indexed by the enums; NULL-terminated. */
extern const char *const schedule_misfire_names[];
extern const char *const schedule_overlap_names[];
struct schedule_config {
    char name[SCHEDULE_NAME_MAX + 1];
    int line;                   /* where its section starts */
    char queue[QUEUE_NAME_MAX + 1];
    unsigned char *payload;     /* malloc'd (payload or payload_file's contents) */
    size_t len;
    char *payload_file;         /* NULL: inline */
    int has_prio, has_ttr;      /* else the queue's */
    uint32_t priority;
    uint64_t ttr_ms;
    char cron[128];             /* "" when every */
    struct cron_expr cron_expr;
    uint64_t every_ms;          /* 0 when cron */
    uint64_t anchor_ms;         /* every: occurrences are anchor + k * every */
    char timezone[64];
    struct tzone *tz;           /* cron only: loaded from the tz database */
    uint64_t jitter_ms;         /* each occurrence's delay, 0 .. jitter, the same everywhere */
    enum schedule_misfire misfire;
    uint64_t misfire_grace_ms;  /* missed occurrences older than this are skipped */
    enum schedule_overlap overlap;
    uint64_t ahead_ms;          /* how long before its instant an occurrence is put */
    int has_ahead;
};

/* [zookeeper] acl: the ACL on every znode deferd and deferctl create (zkacl.h builds it).
 * open = world:anyone:cdrwa; creator = only the identity of [zookeeper] auth; list = the
 * entries given. */
enum zk_acl_mode { ZK_ACL_OPEN, ZK_ACL_CREATOR, ZK_ACL_LIST };
#define CONFIG_ACL_MAX 16
struct config_acl_entry {
    char scheme[32];
    char id[256];
    unsigned perms;           /* ZooKeeper's bits: read 1, write 2, create 4, delete 8, admin 16 */
};

/* A dashboard token (token_file, docs/web.md): NAME is who acts, in logs. */
#define WEB_TOKEN_NAME_MAX 63
#define WEB_TOKEN_MIN 16
#define WEB_TOKEN_MAX 128
struct web_token {
    char name[WEB_TOKEN_NAME_MAX + 1];
    char secret[WEB_TOKEN_MAX + 1];
};

struct config {
    char *path;
    /* [daemon] */
    char *socket_path;
    unsigned socket_mode;
    long socket_uid, socket_gid; /* socket_owner, socket_group; -1: as created */
    enum log_level log_level;
    enum log_target log_target;
    int log_facility;         /* for syslog: log_facility_parse() */
    enum log_stamps log_timestamps;
    uint64_t max_payload;
    uint64_t max_line;        /* request header line, bytes */
    uint64_t max_connections; /* client connections at once */
    uint64_t max_inflight;    /* the most a SUB may ask for with inflight= */
    uint64_t requests_per_turn; /* per connection per loop turn: fairness between clients */
    uint64_t max_open_puts;   /* PUT/BATCH being stored at once; more wait their turn */
    uint64_t lookahead_ms;
    uint64_t drain_grace_ms;  /* SIGTERM: how long held jobs may still be acked */
    int clock_local;          /* clock = local: due times by this host's clock, not ZooKeeper's */
    uint64_t clock_warn_ms;   /* host clock this far from ZooKeeper's: a warning */
    uint64_t clock_limit_ms;  /* this far: no dispatch until it is fixed; 0 = no limit */
    uint64_t hold_writes_ms;  /* writes wait this long for ZooKeeper to come back; 0 = refuse */
    /* [zookeeper] */
    char *zk_hosts;
    char *zk_root;
    uint64_t session_timeout_ms;
    char *zk_auth;            /* "scheme:credentials", e.g. "digest:user:secret"; or NULL */
    char *zk_auth_file;       /* where zk_auth was read from (auth_file); or NULL */
    char *zk_acl_text;        /* acl as written; NULL = open */
    enum zk_acl_mode zk_acl_mode;
    struct config_acl_entry *zk_acl; /* ZK_ACL_LIST: the entries */
    size_t nzk_acl;
    /* [metrics] */
    char *metrics_host;       /* HTTP listen address for /metrics; NULL = disabled */
    unsigned metrics_port;    /* 0 = any free port (logged) */
    uint64_t depth_interval_ms; /* queue depth from ZooKeeper this often; 0 = never */
    uint32_t depth_max_reads; /* ZooKeeper reads one queue's depth refresh may make */
    uint32_t census_rate;     /* reads a second of the census of every job; 0 = none */
    /* [web] */
    int web_dashboard;        /* the dashboard and its JSON API on [metrics] listen */
    int web_actions;          /* its actions (pause, cancel, kick...), each with a token */
    int web_read_token;       /* its pages and API need a token too */
    char *web_token_file;
    char *web_allowed_hosts;  /* names the dashboard answers to besides localhost and IPs */
    struct web_token *web_tokens; /* read from web_token_file at load */
    size_t web_ntokens;
    /* [queue NAME]: each allocated on its own, so that a reload can add queues without
     * moving those the daemon's parts point to */
    struct queue_config **queues;
    size_t nqueues;
    /* [schedule NAME], in file order; each allocated on its own */
    struct schedule_config **schedules;
    size_t nschedules;
};

/* [zookeeper] of SRC into DST (hosts, root, session timeout, auth, acl), replacing DST's:
 * the dashboard's session uses the daemon's running values, which a reload does not
 * change. 0, or -1 when out of memory. */
int config_copy_zookeeper(struct config *dst, const struct config *src);

/* deferd: config_load reads [web] token_file too, on this thread (off, and on every other
 * thread: deferctl, which may run as another user, and the dashboard's reader thread leave
 * it unread). */
void config_read_web_tokens(int on);

/* Loads PATH, then applies overrides "section.key=value" (e.g. "zookeeper.hosts=h:2181";
 * for a queue: "queue.NAME.priority=5" or "queue NAME.priority=5"), then validates. On error returns -1 with
 * "file:line: message" in err and leaves cfg empty. */
int config_load(const char *path, const char *const *overrides, size_t noverrides,
                struct config *cfg, char *err, size_t errlen);
void config_free(struct config *cfg);
const struct queue_config *config_queue(const struct config *cfg, const char *name);
const struct schedule_config *config_schedule(const struct config *cfg, const char *name);
/* [zookeeper] auth "scheme:credentials" split for zoo_add_auth: the scheme into SCHEME, a
 * pointer to the credentials returned (NULL when no auth is configured). */
const char *config_auth(const struct config *cfg, char *scheme, size_t len);
/* An acl value ("open", "creator" or "SCHEME:ID:PERMS,..."): 0 with the mode and, for a
 * list, a malloc'ed array of entries; or -1 with a message in ERR. */
int config_parse_acl(const char *value, enum zk_acl_mode *mode, struct config_acl_entry **out,
                     size_t *nout, char *err, size_t errlen);

#endif
