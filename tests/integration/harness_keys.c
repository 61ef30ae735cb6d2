/* Harness helpers for keyed puts (docs/protocol.md, PUT key=). An object of its own in the
 * harness library, so that only the tests that use them link the client's key calls. */
#include <unistd.h>

#include "harness.h"
#include "harness_keys.h"
#include "layout.h"

void keyed_item(deferd_put_item *it, const char *queue, const char *payload, const char *key,
                   int64_t delay_ms)
{
    memset(it, 0, sizeof *it);
    it->queue = queue;
    it->payload = payload;
    it->len = strlen(payload);
    it->opts.key = key;
    if (delay_ms >= 0) {
        it->opts.has_delay = 1;
        it->opts.delay_ms = (uint64_t)delay_ms;
    }
}

int put_keyed(deferd_client *c, deferd_put_item *it)
{
    int64_t deadline = now_ms() + 20000;
    for (;;) {
        int rc = deferd_put_one(c, it);
        if (rc == DEFERD_OK)
            return 0;
        if (rc != DEFERD_ESERVER || strcmp(deferd_last_error_code(c), "UNAVAILABLE") != 0 ||
            now_ms() > deadline) {
            fprintf(stderr, "put of key %s failed: %s\n", it->opts.key ? it->opts.key : "-",
                    deferd_last_error(c));
            return -1;
        }
        usleep(50000);
    }
}

/* ---- the keys suite (harness_keys.h) ---- */

/* The queues of the suite, each for one part, so that no part sees another's jobs. */
static const char *const overrides[] = {
    "queue race.priority=5", "queue free.priority=5", "queue kept.key_retention=60s",
    "queue nq.priority=5",   "queue cq.priority=5",   "queue rq.priority=5",
    "queue bq1.priority=5",  "queue bq2.priority=5",  "queue fq.priority=5",
    "queue fq2.priority=5",  NULL};

/* What keys_start() made, for the checks below. */
static const char *root;
static zhandle_t *zh;

int keys_start(const char *name, struct daemon_proc d[3], char *root_out, size_t rootlen,
               zhandle_t **zh_out)
{
    static const char *const tags[] = {"k1", "k2", "k3"};
    int ok = 1;
    harness_init(name, root_out, rootlen);
    /* spawned together, then waited for: one start-up's time, not three */
    for (int i = 0; i < 3; i++)
        ok = ok && daemon_spawn(&d[i], root_out, tags[i], overrides) == 0;
    root = root_out;
    *zh_out = zh = zk_connect(); /* while they start */
    /* the session up before the warm-up put, which would otherwise retry at 50 ms */
    for (int i = 0; i < 3; i++)
        ok = ok && daemon_wait_ready(&d[i]) == 0 && daemon_wait_connected(&d[i], 20000) == 0;
    if (!ok) {
        for (int i = 0; i < 3; i++)
            daemon_kill(&d[i], SIGKILL);
        zookeeper_close(zh);
        return -1;
    }
    for (int i = 0; i < 3; i++) { /* every daemon's ZooKeeper session is up before a part */
        deferd_client *c = client(&d[i]);
        char id[DEFERD_ID_SIZE];
        CHECK(put_job(c, "a", "warm-up", HOUR_MS, -1, -1, id) == 0);
        deferd_close(c);
    }
    return 0;
}

int keys_finish(struct daemon_proc d[3], zhandle_t *zh_, const char *name)
{
    for (int i = 0; i < 3; i++)
        daemon_kill(&d[i], SIGTERM);
    zookeeper_close(zh_);
    return check_report(name);
}

int keys_run(const char *name, struct daemon_proc d[3], char *root_out, size_t rootlen,
             zhandle_t **zh_out, void (*part)(void))
{
    char report[64];
    if (keys_start(name, d, root_out, rootlen, zh_out) != 0)
        return 1;
    part();
    snprintf(report, sizeof report, "it_%s", name);
    return keys_finish(d, *zh_out, report);
}

int key_names(const char *queue, const char *key, const char *id)
{
    char data[512];
    size_t ql = strlen(queue);
    if (zk_key_data(zh, root, queue, key, data, sizeof data) < 0) {
        fprintf(stderr, "key node of %s/%s missing (want %s)\n", queue, key, id);
        return 0;
    }
    if (strncmp(id, queue, ql) != 0 || id[ql] != '/' || strcmp(data, id + ql + 1) != 0) {
        fprintf(stderr, "key node of %s/%s holds '%s', want job %s\n", queue, key, data, id);
        return 0;
    }
    return 1;
}

int key_absent(const char *queue, const char *key)
{
    char data[512];
    if (zk_key_data(zh, root, queue, key, data, sizeof data) < 0)
        return 1;
    fprintf(stderr, "key node of %s/%s exists, naming '%s'\n", queue, key, data);
    return 0;
}

int id_has_key(const char *id, const char *key)
{
    char queue[80];
    struct job_name jn;
    return layout_parse_id(id, queue, sizeof queue, &jn) == 0 && strcmp(jn.key, key) == 0;
}

int err_is(deferd_client *c, int rc, const char *code)
{
    if (rc == DEFERD_ESERVER && strcmp(deferd_last_error_code(c), code) == 0)
        return 1;
    fprintf(stderr, "want ERR %s, got rc %d: %s\n", code, rc, deferd_last_error(c));
    return 0;
}

int cancel_id(deferd_client *c, const char *id, int force, char *out)
{
    return deferd_cancel(c, id, NULL, NULL, force, out, DEFERD_ID_SIZE);
}

int cancel_key(deferd_client *c, const char *queue, const char *key, int force, char *out)
{
    return deferd_cancel(c, NULL, queue, key, force, out, DEFERD_ID_SIZE);
}

void take_and_ack(deferd_client *c, const char *want, uint32_t attempt, int ms)
{
    deferd_job job;
    int rc = deferd_next_job(c, &job, ms);
    CHECK(rc == DEFERD_OK);
    if (rc != DEFERD_OK)
        return;
    CHECK_STR(job.id, want);
    CHECK(job.attempt == attempt);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
}
