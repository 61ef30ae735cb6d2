/* Packs (layout version 2, docs/zookeeper-layout.md) in integration tests: the root's
 * marker, packed job ids, far windows, a daemon's STATS counters, and a consumer loop that
 * checks every job of a test is delivered once, first attempt, never early. For queues
 * whose pack_window is PACK_TEST_WINDOW_MS (pack_after 6 s: every test runs in a minute). */
#ifndef DEFERD_TEST_HARNESS_PACK_H
#define DEFERD_TEST_HARNESS_PACK_H

#include "harness.h"
#include "layout.h"

#define PACK_TEST_WINDOW_MS 5000
/* "-o" overrides that make queue Q pack after 6 s in windows of 5 s (the harness' lookahead
 * is 2 s): a put is packed from 8 s ahead on. */
#define PACK_TEST_OVERRIDES(q) "queue." q ".pack_after=6s", "queue." q ".pack_window=5s"

/* Writes ROOT's layout marker (creating ROOT when missing) with VALUE, or deletes it when
 * VALUE is NULL; ZOK (ZNONODE for a delete of none). */
int pack_marker_set(zhandle_t *zh, const char *root, const char *value);
/* Makes ROOT as deferd 0.2 left it (the root and its queues/ directory, no marker): a root
 * that keeps layout version 1 until an operator upgrades it. A root deferd itself creates
 * starts at version 2. ZOK, or the first error. */
int pack_root_of_old(zhandle_t *zh, const char *root);
/* The pack named by a packed job id ("a/p.../name") into PACK; "" for any other id. */
void pack_of_id(const char *id, char *pack, size_t len);
/* Packs under ROOT/queues/QUEUE/packs (all windows); -1 when packs/ is absent. */
int zk_count_packs(zhandle_t *zh, const char *root, const char *queue);
/* The jobs in PACK of QUEUE as ZooKeeper holds it; -1 when it is absent or unreadable. */
int pack_jobs(zhandle_t *zh, const char *root, const char *queue, const char *pack);
/* Waits up to MS until PACK of QUEUE is gone (unpacked by some daemon); 1 once it is. */
int pack_gone_within(zhandle_t *zh, const char *root, const char *queue, const char *pack,
                     int ms);
/* The start of a window that begins at least AHEAD_MS from now, as an "at". */
int64_t pack_window_ahead(int64_t ahead_ms);
/* A number in D's STATS line, e.g. "packs_unpacked"; -1 when D does not answer or the
 * line has no such field. */
long daemon_stat(const struct daemon_proc *d, const char *field);
/* The sum of daemon_stat() over the N daemons of D. */
long daemon_stat_sum(const struct daemon_proc *d, int n, const char *field);
/* Waits up to MS until daemon_stat(D, FIELD) == WANT; 1 once it is, else 0 (said). */
int wait_daemon_stat(const struct daemon_proc *d, const char *field, long want, int ms);

/* A job a test put, for collect_jobs(). */
struct sent_job {
    char id[DEFERD_ID_SIZE];
    int64_t at;                 /* its due time */
    int seen;                   /* deliveries */
    int64_t late_ms;            /* of its (first) delivery */
};

/* Puts a job into QUEUE due at AT, with KEY unless it is NULL, into S, waiting for the
 * reply (retried while deferd says UNAVAILABLE); 0 once it is stored. */
int put_sent(deferd_client *c, const char *queue, const char *key, int64_t at,
             struct sent_job *s);
/* N puts into QUEUE pipelined (all sent, then all answers read), due from START one per
 * STEP_MS; 0 when every one was stored. */
int put_sent_pipelined(deferd_client *c, const char *queue, struct sent_job *s, int n,
                       int64_t start, int step_ms);
/* Takes and acks every job pushed to the NCONS consumers until N were taken or MS passed;
 * each must be one of S (by uid: a packed job's id changes when it is unpacked), due at its
 * time, delivered on time or late but never early, once, attempt 1. Returns the jobs
 * taken. */
int collect_jobs(deferd_client **cons, int ncons, struct sent_job *s, int n, int ms);
/* The largest late_ms of the N jobs of S. */
int64_t sent_latest(const struct sent_job *s, int n);

#endif
