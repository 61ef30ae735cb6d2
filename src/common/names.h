/* The rules for names that clients send and the daemon checks: queue names, idempotency
 * keys and the shape of job ids. One source for deferd, deferctl and libdeferd, so that
 * the client library never accepts what the daemon refuses, nor refuses what it accepts.
 * Pure functions on bytes, libc only. */
#ifndef DEFERD_NAMES_H
#define DEFERD_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define QUEUE_NAME_MAX 64
#define NAMES_KEY_MAX 64   /* layout.h's LAYOUT_KEY_MAX */
#define NAMES_ID_MAX 240   /* layout.h's LAYOUT_ID_MAX */
#define NAMES_UID_MAX 32   /* layout.h's LAYOUT_UID_MAX */
#define NAMES_TOKEN_MAX 48 /* "<ms>-<random>": 15 digits, '-', 32 */
#define NAMES_GROUP_MAX 32 /* layout.h's LAYOUT_GROUP_MAX */

/* Queue names: 1..QUEUE_NAME_MAX of [A-Za-z0-9_.-], not starting with '.'. The _n form
 * checks the n bytes at s (a name inside a longer string). */
int names_valid_queue(const char *name);
int names_valid_queue_n(const char *s, size_t n);

/* Idempotency keys: 1..NAMES_KEY_MAX of [A-Za-z0-9_.:@-], starting with a letter or digit
 * (the queue's bytes plus ':' and '@'). */
int names_valid_key(const char *key);

/* Groups (PUT group=: fair turns, per-group limits): 1..NAMES_GROUP_MAX of the key's bytes
 * ([A-Za-z0-9_.:@-], starting with a letter or digit). */
int names_valid_group(const char *group);

/* Put tokens (PUT idem=): "<ms>-<random>", the producer's clock in ms since the epoch
 * when it first tried the put (1..15 digits) and 8..32 of [0-9a-z]. Stores the ms in *ms
 * and returns 1, or returns 0. */
int names_valid_token(const char *token, uint64_t *ms);

/* The shape every job id has, native or Curator: "<queue>/<name>" or
 * "<queue>/<shard>/<name>", at most NAMES_ID_MAX bytes, the part after the queue
 * printable ASCII without spaces. Clients check this much; the daemon also parses the
 * name (layout_parse_id, curator_valid_id_name). The _n form checks n bytes at id. */
int names_valid_job_id(const char *id);
int names_valid_job_id_n(const char *id, size_t n);

/* The stable uid of a job in deferd's own format: its name's third field
 * ("<due>-<prio>-<uid>[-...]"), kept across nacks, reschedules and redeliveries. Copies it
 * to uid (size len, NUL-terminated) and returns 0; -1 for an id without one (a Curator
 * queue's item, a malformed id) or a buffer too small. */
int names_job_uid(const char *id, char *uid, size_t len);

/* The group a job was put with (PUT group=): its name's "-g<group>" field, where '~' stands
 * for '-'. Copies it to group (size len) and returns 0; "" and 0 for a job without one; -1
 * for a malformed id or a buffer too small. */
int names_job_group(const char *id, char *group, size_t len);

/* A released parent of an on=complete flow: its name's "-r<acked>.<dead>" field, how many
 * of its children were acked and dead-lettered. 1 with both set; 0 for a job without it;
 * -1 for a malformed id or field. */
int names_job_flow_results(const char *id, uint32_t *acked, uint32_t *dead);

/* The "<acked>.<dead>" of a results field (r<acked>.<dead>, after its 'r') at P: two
 * canonical decimals of at most UINT32_MAX. Returns where they end, or NULL. */
const char *names_parse_results(const char *p, uint32_t *acked, uint32_t *dead);

#endif
