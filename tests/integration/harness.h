/* Integration-test harness: a real ZooKeeper (started by the ctest fixture), real deferd
 * processes, real sockets. Every wait has a deadline; nothing sleeps and hopes. */
#ifndef DEFERD_TEST_HARNESS_H
#define DEFERD_TEST_HARNESS_H

#include <deferd/client.h>
#include <signal.h>
#include <string.h>
#include <stdint.h>
#include <sys/types.h>
#include <zookeeper/zookeeper.h>

#include "check.h"

struct daemon_proc {
    pid_t pid;
    char dir[256];       /* config, socket and log live here */
    char sock[300];
    char log[300];
    char root[128];      /* ZooKeeper root of this test */
    int exit_status;     /* when it exited before it was ready; -1 for a signal */
};

extern char harness_zk_hosts[128];

/* Reads the fixture's ZooKeeper port; makes a per-test root "/it-NAME-PID". */
void harness_init(const char *name, char *root, size_t rootlen);
/* ROOT starts at layout VERSION instead of a new root's (3, claims): its marker is written
 * before the first daemon on it starts, on each ZooKeeper the test's daemons use. For
 * tests of locks (layout 2: queues with limits, keys or flows, and roots upgraded from
 * before claims, lock that way too). */
void harness_root_layout(const char *root, int version);
int64_t now_ms(void);

/* Starts deferd with a generated config (queues a, b, emails) plus extra "-o" overrides
 * (NULL-terminated); returns once it answers PING and accepts a put. */
int daemon_start(struct daemon_proc *d, const char *root, const char *tag,
                 const char *const *overrides);
/* Waits up to MS for STATS to say zk_state=CONNECTED and a clock_state other than unsynced
 * (daemon_start waits for PING only, and puts before the session is up and ZooKeeper's clock
 * read are refused as UNAVAILABLE); 0 once it does, else -1. */
int daemon_wait_connected(const struct daemon_proc *d, int ms);
/* Starts N daemons tagged d0, d1, ... as daemon_start() and waits until each is connected
 * to ZooKeeper; 0, or -1 (said) when one is not. */
int daemons_start(struct daemon_proc *d, int n, const char *root,
                  const char *const *overrides);
/* Only starts it: no wait for its socket. */
int daemon_spawn(struct daemon_proc *d, const char *root, const char *tag,
                 const char *const *overrides);
/* Only fills D and writes its config (D->dir/deferd.ini), for tests that run deferd
 * themselves; then daemon_wait_ready() once D->pid is set. */
int daemon_prepare(struct daemon_proc *d, const char *root, const char *tag);
/* Waits up to 30 s until D answers PING; -1 if it exits first (D->exit_status) or is late. */
int daemon_wait_ready(struct daemon_proc *d);
void daemon_kill(struct daemon_proc *d, int sig); /* and reaps it */
/* Waits up to MS for deferd to exit by itself; its exit status, or -1. */
int daemon_wait_exit(struct daemon_proc *d, int ms);
/* Waits up to MS for deferd to end (reaped); the signal that ended it, 0 when it exited,
 * -1 when it still runs. */
int daemon_wait_signal(struct daemon_proc *d, int ms);
int daemon_restart(struct daemon_proc *d, const char *const *overrides);

/* The end of deferd's log now, as a mark for log_wait() and log_count(). */
long log_mark(const struct daemon_proc *d);
/* Waits up to MS for a line after MARK that contains NEEDLE; 1 when one came, else 0. */
int log_wait(const struct daemon_proc *d, long mark, const char *needle, int ms);
/* Lines after MARK that contain NEEDLE. */
int log_count(const struct daemon_proc *d, long mark, const char *needle);

deferd_client *client(const struct daemon_proc *d);
/* deferd_next_event() into a cleared EV: the next push of any kind within MS. */
int next_event(deferd_client *c, deferd_event *ev, int ms);
/* The next JOB for C within MS, other pushes skipped (and freed); 0 when one came. */
int next_job_push(deferd_client *c, deferd_job *job, int ms);
/* Does D's STATS reply contain TEXT (0 also when D does not answer)? */
int stats_has(const struct daemon_proc *d, const char *text);
/* Waits up to 10 s until stats_has(D, TEXT) == WANT; 1 once it is, else 0. */
int wait_stats(const struct daemon_proc *d, const char *text, int want);
/* A plain socket connected to D (for requests libdeferd would never send); -1 if refused. */
int raw_connect(const struct daemon_proc *d);
/* Reads from FD until N lines came (or MS passed, or end of file) into OUT, terminated;
 * returns the lines read. */
int raw_read_lines(int fd, int n, char *out, size_t len, int ms);
/* Sends REQ on a new raw connection and reads N reply lines (up to MS) into OUT; returns
 * the lines read, or -1. */
int raw_request(const struct daemon_proc *d, const char *req, int n, char *out, size_t len,
                int ms);
/* Puts with retries while deferd reports UNAVAILABLE (ZooKeeper session not up yet). */
int put_job(deferd_client *c, const char *queue, const char *payload, int64_t delay_ms,
            int64_t at_ms, int prio, char *id);

/* N jobs put into QUEUE of D and nacked once each, so that a queue with max_attempts 1 has
 * N more dead letters; 0 when every step worked. */
int make_dead_letters(const struct daemon_proc *d, const char *queue, int n);

/* A ZooKeeper of the test's own (packaging/zk-sandbox), to stop and restart at will;
 * harness_zk_hosts then points at it. Returns 0 when it answers. */
int zk_private_start(const char *dir);
int zk_private(const char *verb, const char *dir); /* "stop" or "restart" */
/* packaging/zk-sandbox VERB ARG (ensemble, leader, stop, restart...); its output in OUT
 * (may be NULL). 0 when it succeeded. */
int zk_sandbox(const char *verb, const char *arg, char *out, size_t len);
/* SIGKILL to the leader of the ensemble in ENSDIR (zk-sandbox ensemble): its member number
 * (node<N>), or -1. */
int zk_kill_leader(const char *ensdir);
/* A 3-member ensemble of its own (zk-sandbox ensemble) in ENSDIR (LEN bytes, filled in:
 * /tmp/deferd-it-<pid>-ens), made harness_zk_hosts for the daemons started after: 0, or -1
 * when it did not start. */
int zk_ensemble_start(char *ensdir, size_t len);

/* A synchronous ZooKeeper session for checking what deferd wrote (tests only). */
zhandle_t *zk_connect(void);
int zk_exists(zhandle_t *zh, const char *path);
/* PATH created with DATA (NULL: none), its missing parents first, as another client would
 * write a node by hand: the node's create's result (ZNODEEXISTS when it was there). */
int zk_create_path(zhandle_t *zh, const char *path, const char *data);
/* Writes a Curator item frame (docs/curator-compat.md) of N text PARTS into BUF; its size. */
size_t curator_frame(unsigned char *buf, const char *const *parts, int n);

/* Number of QUEUE's jobs in ZooKeeper: znodes under ROOT/queues/QUEUE/jobs (walks the
 * buckets), and jobs held in its claims (layout version 3: out of their buckets). */
int zk_count_jobs(zhandle_t *zh, const char *root, const char *queue);
/* Claim nodes of QUEUE (layout version 3), 0 when it has none, -1 when they cannot be read. */
int zk_count_claims(zhandle_t *zh, const char *root, const char *queue);
/* FIELD's number in a STATS line (" FIELD=<number>"), or -1 if the line has none. */
long stats_field(const char *line, const char *field);
/* /proc/PID/stat from the field after the process's name (its state: "S 1 ..."), into BUF;
 * NULL if unreadable. */
const char *proc_stat_after_name(pid_t pid, char *buf, size_t len);
/* A number in the queue's STATS QUEUE line (docs/protocol.md), e.g. "zk_denied"; -1 if the
 * daemon does not answer or the line has no such field. */
long queue_stat(deferd_client *c, const char *queue, const char *field);
/* Waits up to MS for QUEUE's FIELD to read WANT (a count the daemon adds as answers come
 * back from ZooKeeper, after a test can see their effect); 1 when it did. */
int wait_queue_stat(deferd_client *c, const char *queue, const char *field, long want, int ms);
/* Runs deferctl with D's config and socket and ARGS; its exit status, stdout in OUT. */
int run_deferctl(const struct daemon_proc *d, const char *args, char *out, size_t len);
/* Path of a job id's znode. */
int job_path(const char *root, const char *id, char *path, size_t len);
/* Is the job with this id held in a claim of its queue (layout version 3)? */
int zk_job_claimed(zhandle_t *zh, const char *root, const char *id);
/* Does the job with this id exist in ZooKeeper? */
int zk_job_exists(zhandle_t *zh, const char *root, const char *id);
/* Data of a znode as a NUL-terminated string in BUF; its length, or -1 if it is absent. */
int zk_get(zhandle_t *zh, const char *path, char *buf, size_t len);
/* Data of the key node of KEY in QUEUE (docs/zookeeper-layout.md, Keys), as zk_get(). */
int zk_key_data(zhandle_t *zh, const char *root, const char *queue, const char *key, char *buf,
                size_t len);

/* A deferd_put_item for QUEUE with a text payload, an optional key and a delay (< 0: due
 * now). The payload is not copied. */
void keyed_item(deferd_put_item *it, const char *queue, const char *payload, const char *key,
                   int64_t delay_ms);
/* deferd_put_one() with retries while deferd reports UNAVAILABLE, as put_job(). */
int put_keyed(deferd_client *c, deferd_put_item *it);

#endif
