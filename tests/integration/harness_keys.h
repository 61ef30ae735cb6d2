/* The keys suite (it_keys_*.c): idempotency keys, BATCH, follow-ups, CANCEL and RESCHEDULE
 * against three daemons on one ZooKeeper root, each file one feature. keys_start() makes
 * the root, starts the daemons (side by side) and remembers the root and the ZooKeeper
 * session that the checks below read. */
#ifndef DEFERD_TEST_HARNESS_KEYS_H
#define DEFERD_TEST_HARNESS_KEYS_H

#include "harness.h"

#define HOUR_MS 3600000LL

/* Starts three deferds on a new root (queues of every part of the suite), then one put
 * through each, so that every daemon's ZooKeeper session is up; 0, or -1 (none left
 * running). ZH gets a session of the test's own for what the checks read. */
int keys_start(const char *name, struct daemon_proc d[3], char *root, size_t rootlen,
               zhandle_t **zh);
/* keys_start(), PART, keys_finish(): main of a file with one part. */
int keys_run(const char *name, struct daemon_proc d[3], char *root, size_t rootlen,
             zhandle_t **zh, void (*part)(void));
/* Stops the daemons (SIGTERM: a daemon that does not exit cleanly is a failure), closes
 * ZH; check_report(NAME) as main's exit status. */
int keys_finish(struct daemon_proc d[3], zhandle_t *zh, const char *name);

/* The key node of KEY names job ID (the id without "<queue>/"). */
int key_names(const char *queue, const char *key, const char *id);
int key_absent(const char *queue, const char *key);
/* The job id carries the key as its last field. */
int id_has_key(const char *id, const char *key);
/* RC is an ERR reply with CODE (else says what came). */
int err_is(deferd_client *c, int rc, const char *code);
int cancel_id(deferd_client *c, const char *id, int force, char *out);
int cancel_key(deferd_client *c, const char *queue, const char *key, int force, char *out);
/* Waits up to MS for the next job; checks it is WANT with attempt ATTEMPT, then acks it. */
void take_and_ack(deferd_client *c, const char *want, uint32_t attempt, int ms);

#endif
