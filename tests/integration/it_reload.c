/* SIGHUP reloads deferd.ini while a consumer stays connected:
 *  - changed queue settings (priority, ttr, max_attempts, backoff_min) hold for the next
 *    put or delivery, a job held across the reload is acked as usual, a new queue accepts
 *    puts and SUB and delivers;
 *  - an invalid file is refused with one "file:line: message" error and the daemon serves on
 *    with the settings it had;
 *  - keys that need a restart keep their running value with a warning naming each; a queue
 *    removed from the file is still served; log_level changes live. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char cfg_path[400];

#define V2_QUEUES                                                                          \
    "[queue a]\nttr = 5s\npriority = 3\nmax_attempts = 2\nbackoff_min = 0\n"               \
    "[queue b]\npriority = 7\n[queue retry]\nbackoff_min = 200ms\nbackoff_max = 800ms\n"   \
    "backoff_jitter = 0\nmax_attempts = 5\n[queue limited]\nmax_pending = 5\n"            \
    "max_attempts = 1\n[queue fresh]\nttr = 7s\n"

/* The harness's file, with our [zookeeper] tail and queues. */
static void write_file(const char *log_level, const char *max_payload, const char *zk_tail,
                       const char *queues)
{
    FILE *f = fopen(cfg_path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "[daemon]\nsocket = %s\nlog_level = %s\nmax_payload = %s\nlookahead = 2s\n"
               "[metrics]\nlisten = 127.0.0.1:0\n[zookeeper]\nhosts = %s\nroot = %s\n%s%s",
            d.sock, log_level, max_payload, harness_zk_hosts, d.root, zk_tail, queues);
    fclose(f);
}

/* SIGHUP, then the line that says the reload is over (applied or refused). */
static long hup(const char *until)
{
    long mark = log_mark(&d);
    CHECK(kill(d.pid, SIGHUP) == 0);
    CHECK(log_wait(&d, mark, until, 15000));
    return mark;
}

static int put(deferd_client *p, const char *queue, const char *payload)
{
    char id[DEFERD_ID_SIZE];
    deferd_put_opts o = {0};
    return deferd_put(p, queue, payload, strlen(payload), &o, id, sizeof id);
}

/* The next job on C, which must come from QUEUE with this priority and ttr. */
static int next_from(deferd_client *c, const char *queue, uint32_t prio, uint32_t ttr_ms,
                     deferd_job *job)
{
    int rc = deferd_next_job(c, job, 15000);
    CHECK(rc == DEFERD_OK);
    if (rc != DEFERD_OK)
        return -1;
    CHECK_STR(job->queue, queue);
    CHECK(job->priority == prio);
    CHECK(job->ttr_ms == ttr_ms);
    if (job->priority != prio || job->ttr_ms != ttr_ms)
        fprintf(stderr, "  job %s: prio %u ttr %u\n", job->id, job->priority, job->ttr_ms);
    return 0;
}

static void deliver_and_ack(deferd_client *c, deferd_client *p, const char *queue,
                            uint32_t prio, uint32_t ttr_ms)
{
    deferd_job job = {0};
    CHECK(put(p, queue, "x") == DEFERD_OK);
    if (next_from(c, queue, prio, ttr_ms, &job) == 0)
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
}

static int dead_letters(zhandle_t *zh, const char *queue)
{
    char path[300];
    struct String_vector kids;
    snprintf(path, sizeof path, "%s/queues/%s/dead", d.root, queue);
    if (zoo_get_children(zh, path, 0, &kids) != ZOK)
        return 0;
    int n = kids.count;
    deallocate_String_vector(&kids);
    return n;
}

/* Changed settings: a job held across the reload, then new ones under the new values. */
static void applied(deferd_client *c, deferd_client *p, zhandle_t *zh)
{
    deferd_job held = {0}, job = {0};
    char id[DEFERD_ID_SIZE];
    CHECK(put_job(p, "a", "held", -1, -1, -1, id) == 0); /* waits for the session */
    next_from(c, "a", 1024, 60000, &held);
    CHECK(put(p, "fresh", "too early") == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(p), "UNKNOWN_QUEUE");

    write_file("debug", "4KiB", "session_timeout = 4s\n", V2_QUEUES "[queue emails]\n");
    long mark = hup("reload: ");
    CHECK(log_wait(&d, mark, " applied;", 15000));
    CHECK(log_count(&d, mark, "queue a: priority 1024 -> 3, ttr 60000 -> 5000 ms, "
                              "max_attempts 10 -> 2, backoff_min 1000 -> 0 ms") == 1);
    CHECK(log_count(&d, mark, "reload: queue fresh added") == 1);
    CHECK(log_count(&d, mark, "reload: queue ") == 2); /* the others are as they were */
    CHECK(log_count(&d, mark, "restart needed") == 0);

    CHECK(deferd_ack(c, held.id) == DEFERD_OK); /* the connection and its lease went on */
    /* new values: default priority and ttr; max_attempts 2 with no backoff */
    CHECK(put(p, "a", "fails twice") == DEFERD_OK);
    next_from(c, "a", 3, 5000, &job);
    CHECK(job.attempt == 1);
    CHECK(deferd_nack(c, job.id, -1) == DEFERD_OK);
    deferd_job_clear(&job);
    next_from(c, "a", 3, 5000, &job);
    CHECK(job.attempt == 2);
    CHECK(deferd_nack(c, job.id, -1) == DEFERD_OK);
    int64_t deadline = now_ms() + 15000;
    while (dead_letters(zh, "a") < 1 && now_ms() < deadline)
        usleep(20000);
    CHECK(dead_letters(zh, "a") == 1);
    CHECK(log_count(&d, mark, "attempt 1 delivered") >= 1); /* debug lines, for later */
    /* the new queue: SUB on the same connection, puts, deliveries */
    CHECK(deferd_subscribe(c, "a,fresh", 4) == DEFERD_OK);
    deliver_and_ack(c, p, "fresh", 1024, 7000);
    deferd_job_clear(&held);
    deferd_job_clear(&job);
}

/* An invalid file: one error line with file:line, and the settings stay as they were. */
static void refused(deferd_client *c, deferd_client *p)
{
    write_file("debug", "4KiB", "session_timeout = 4s\n",
               "[queue a]\nttr = forever\n[queue fresh]\nttr = 9s\n");
    char needle[600];
    snprintf(needle, sizeof needle, "reload refused: %s:13: 'ttr': malformed duration", cfg_path);
    long mark = hup("reload refused: ");
    CHECK(log_count(&d, mark, needle) == 1);
    deliver_and_ack(c, p, "a", 3, 5000);
    deliver_and_ack(c, p, "fresh", 1024, 7000);
    CHECK(put(p, "emails", "still there") == DEFERD_OK);
    CHECK(log_count(&d, mark, " error: ") == 1);
    CHECK(log_count(&d, mark, " applied;") == 0);
}

/* Keys that need a restart, a queue removed, and log_level down to info. */
static void restart_keys(deferd_client *c, deferd_client *p)
{
    write_file("info", "8KiB", "session_timeout = 6s\n", V2_QUEUES);
    long mark = hup(" applied;");
    CHECK(log_count(&d, mark, "reload: zookeeper.session_timeout changed: restart needed") == 1);
    CHECK(log_count(&d, mark, "reload: daemon.max_payload changed: restart needed") == 1);
    CHECK(log_count(&d, mark, "restart needed") == 2);
    CHECK(log_count(&d, mark, "queue emails is no longer in the file") == 1);
    CHECK(put(p, "emails", "still served") == DEFERD_OK);
    long quiet = log_mark(&d);
    deliver_and_ack(c, p, "a", 3, 5000);
    CHECK(deferd_ping(c) == DEFERD_OK);
    CHECK(log_count(&d, quiet, " debug: ") == 0);
}

int main(void)
{
    char root[128];
    harness_init("reload", root, sizeof root);
    if (daemon_start(&d, root, "reload", NULL) != 0)
        return 1;
    snprintf(cfg_path, sizeof cfg_path, "%s/deferd.ini", d.dir);
    deferd_client *c = client(&d), *p = client(&d);
    zhandle_t *zh = zk_connect();
    CHECK(deferd_subscribe(c, "a", 4) == DEFERD_OK);
    applied(c, p, zh);
    refused(c, p);
    restart_keys(c, p);
    CHECK(deferd_ping(c) == DEFERD_OK); /* the consumer's connection lasted throughout */
    deferd_close(c);
    deferd_close(p);
    zookeeper_close(zh);
    daemon_kill(&d, SIGTERM);
    return check_report("integration.reload");
}
