/* Idempotency keys, BATCH, follow-up jobs (ACK/NACK then=), CANCEL and RESCHEDULE against
 * three daemons on one ZooKeeper root (docs/protocol.md, docs/zookeeper-layout.md, Keys):
 *  - 30 producers spread over the three daemons put the same key at the same moment: one
 *    job exists, everyone got its id, exactly one put created it;
 *  - a key is free again once its job is acked, unless the queue keeps it (key_retention);
 *    a stale key (its job deleted by hand, or no job name) is taken over; a nack with a
 *    delay, a reschedule and a nack with follow-ups move the key with the job;
 *  - CANCEL by id and by key of a pending and of a due job removes job and key; a held job
 *    is not cancelled (IN_FLIGHT) unless forced, and then its holder's ack fails (LEASE_LOST);
 *  - RESCHEDULE earlier is delivered promptly, later is not delivered at the old due time;
 *  - BATCH is all or none: an invalid item names itself and nothing is stored (not even the
 *    other items' keys), also when only the daemon sees it (raw wire); a taken key, or a
 *    key twice in the batch, is answered as a duplicate and the rest is created; a batch
 *    over one ZooKeeper packet goes in parts, in order;
 *  - ACK then= creates the follow-ups only with the ack: when the lease was lost (forced
 *    cancel, expiry) or the job is not held, none of them exists; a job acked with a
 *    successor of its own key hands the key on (or, kept, the successor is a duplicate);
 *  - deferctl put --key, put --batch and cancel --key. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "layout.h"
#include "names.h"

static struct daemon_proc d[3];
static char root[128];
static zhandle_t *zh;

#define HOUR_MS 3600000LL

/* The queues of this test, each for one part, so that no part sees another's jobs. */
static const char *const overrides[] = {
    "queue race.priority=5", "queue free.priority=5", "queue kept.key_retention=60s",
    "queue nq.priority=5",   "queue cq.priority=5",   "queue rq.priority=5",
    "queue bq1.priority=5",  "queue bq2.priority=5",  "queue fq.priority=5",
    "queue fq2.priority=5",  NULL};

/* The key node of KEY names job ID (the id without "<queue>/"). */
static int key_names(const char *queue, const char *key, const char *id)
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

static int key_absent(const char *queue, const char *key)
{
    char data[512];
    if (zk_key_data(zh, root, queue, key, data, sizeof data) < 0)
        return 1;
    fprintf(stderr, "key node of %s/%s exists, naming '%s'\n", queue, key, data);
    return 0;
}

/* The job id carries the key as its last field. */
static int id_has_key(const char *id, const char *key)
{
    char queue[80];
    struct job_name jn;
    return layout_parse_id(id, queue, sizeof queue, &jn) == 0 && strcmp(jn.key, key) == 0;
}

static int err_is(deferd_client *c, int rc, const char *code)
{
    if (rc == DEFERD_ESERVER && strcmp(deferd_last_error_code(c), code) == 0)
        return 1;
    fprintf(stderr, "want ERR %s, got rc %d: %s\n", code, rc, deferd_last_error(c));
    return 0;
}

static int cancel_id(deferd_client *c, const char *id, int force, char *out)
{
    return deferd_cancel(c, id, NULL, NULL, force, out, DEFERD_ID_SIZE);
}

static int cancel_key(deferd_client *c, const char *queue, const char *key, int force, char *out)
{
    return deferd_cancel(c, NULL, queue, key, force, out, DEFERD_ID_SIZE);
}

/* Waits up to MS for the next job; checks it is WANT with attempt ATTEMPT, then acks it. */
static void take_and_ack(deferd_client *c, const char *want, uint32_t attempt, int ms)
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

/* ---- same key, many producers, three daemons, one moment ---- */

#define RACERS 30

struct racer {
    deferd_client *c;
    const char *key;
    pthread_barrier_t *start;
    int rc;
    int duplicate;
    char id[DEFERD_ID_SIZE];
    char err[256];
};

static void *race_put(void *arg)
{
    struct racer *r = arg;
    deferd_put_item it;
    char payload[64];
    snprintf(payload, sizeof payload, "racer %p", (void *)r);
    keyed_item(&it, "race", payload, r->key, HOUR_MS);
    pthread_barrier_wait(r->start);
    r->rc = deferd_put_one(r->c, &it);
    snprintf(r->id, sizeof r->id, "%s", it.id);
    r->duplicate = it.duplicate;
    snprintf(r->err, sizeof r->err, "%s", deferd_last_error(r->c));
    return NULL;
}

static void same_key_race(void)
{
    static const char *const keys[] = {"race-1", "race:2", "race.3@x", "R_4"};
    struct racer rs[RACERS];
    pthread_t th[RACERS];
    pthread_barrier_t start;
    for (int i = 0; i < RACERS; i++)
        rs[i].c = client(&d[i % 3]);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        pthread_barrier_init(&start, NULL, RACERS);
        for (int i = 0; i < RACERS; i++) {
            rs[i].key = keys[k];
            rs[i].start = &start;
            rs[i].rc = -100;
            CHECK(pthread_create(&th[i], NULL, race_put, &rs[i]) == 0);
        }
        for (int i = 0; i < RACERS; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&start);
        int created = 0, same = 0;
        for (int i = 0; i < RACERS; i++) {
            if (rs[i].rc != DEFERD_OK)
                fprintf(stderr, "racer %d (daemon %d): rc %d %s\n", i, i % 3, rs[i].rc, rs[i].err);
            CHECK(rs[i].rc == DEFERD_OK);
            created += rs[i].duplicate == 0;
            same += strcmp(rs[i].id, rs[0].id) == 0;
        }
        printf("key %s: %d puts over 3 daemons, %d created, %d answered %s\n", keys[k], RACERS,
               created, same, rs[0].id);
        CHECK(created == 1);
        CHECK(same == RACERS);
        CHECK(id_has_key(rs[0].id, keys[k]));
        CHECK(zk_job_exists(zh, root, rs[0].id));
        CHECK(key_names("race", keys[k], rs[0].id));
        CHECK(zk_count_jobs(zh, root, "race") == (int)k + 1);
    }
    for (int i = 0; i < RACERS; i++)
        deferd_close(rs[i].c);
}

/* ---- a key is free after the ack, or kept with key_retention ---- */

static void free_after_ack(void)
{
    deferd_client *p = client(&d[0]), *p2 = client(&d[2]), *cons = client(&d[1]);
    deferd_put_item it, again;
    keyed_item(&it, "free", "first", "once", -1);
    CHECK(put_keyed(p, &it) == 0 && it.duplicate == 0);
    CHECK(id_has_key(it.id, "once"));
    keyed_item(&again, "free", "second", "once", -1);
    CHECK(put_keyed(p2, &again) == 0);
    CHECK(again.duplicate == 1);
    CHECK_STR(again.id, it.id);
    CHECK(deferd_subscribe(cons, "free", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, it.id);
    CHECK(job.len == 5 && memcmp(job.payload, "first", 5) == 0); /* the duplicate changed nothing */
    CHECK(key_names("free", "once", it.id)); /* held: still taken */
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(!zk_job_exists(zh, root, it.id));
    CHECK(key_absent("free", "once"));
    keyed_item(&again, "free", "third", "once", -1);
    CHECK(put_keyed(p2, &again) == 0);
    CHECK(again.duplicate == 0);
    CHECK(strcmp(again.id, it.id) != 0);
    CHECK(key_names("free", "once", again.id));
    take_and_ack(cons, again.id, 1, 10000);
    CHECK(key_absent("free", "once"));
    CHECK(zk_count_jobs(zh, root, "free") == 0);

    /* a stale key: its job deleted by hand, or its data no job name; a put takes it over */
    keyed_item(&it, "free", "stale", "stale", HOUR_MS);
    CHECK(put_keyed(p, &it) == 0 && it.duplicate == 0);
    char path[LAYOUT_PATH_MAX];
    CHECK(job_path(root, it.id, path, sizeof path) == 0 && zoo_delete(zh, path, -1) == ZOK);
    keyed_item(&again, "free", "fresh", "stale", HOUR_MS);
    CHECK(put_keyed(p2, &again) == 0);
    CHECK(again.duplicate == 0 && strcmp(again.id, it.id) != 0);
    CHECK(key_names("free", "stale", again.id) && zk_job_exists(zh, root, again.id));
    CHECK(job_path(root, again.id, path, sizeof path) == 0 && zoo_delete(zh, path, -1) == ZOK);
    CHECK(layout_key_path(path, sizeof path, root, "free", "stale") == 0 &&
          zoo_set(zh, path, "garbage", 7, -1) == ZOK);
    keyed_item(&again, "free", "fresh", "stale", HOUR_MS);
    CHECK(put_keyed(p, &again) == 0);
    CHECK(again.duplicate == 0 && key_names("free", "stale", again.id));
    char out[DEFERD_ID_SIZE];
    CHECK(cancel_key(p, "free", "stale", 0, out) == DEFERD_OK && strcmp(out, again.id) == 0);
    CHECK(zk_count_jobs(zh, root, "free") == 0 && key_absent("free", "stale"));

    /* queue kept: key_retention = 60s */
    keyed_item(&it, "kept", "kept", "seen-1", -1);
    CHECK(put_keyed(p, &it) == 0 && it.duplicate == 0);
    CHECK(deferd_subscribe(cons, "kept", 1) == DEFERD_OK);
    int64_t before = now_ms();
    take_and_ack(cons, it.id, 1, 10000);
    int64_t after = now_ms();
    CHECK(!zk_job_exists(zh, root, it.id));
    char data[512], name[300];
    long long ms = 0;
    CHECK(zk_key_data(zh, root, "kept", "seen-1", data, sizeof data) > 0);
    CHECK(sscanf(data, "done %lld %299s", &ms, name) == 2);
    CHECK(strcmp(name, it.id + strlen("kept/")) == 0);
    CHECK(ms >= before - 1000 && ms <= after + 1000); /* ZooKeeper's and our clocks: one host */
    printf("kept key node after the ack: '%s'\n", data);
    for (int i = 0; i < 3; i++) { /* from every daemon */
        deferd_client *c = client(&d[i]);
        keyed_item(&again, "kept", "again", "seen-1", -1);
        CHECK(put_keyed(c, &again) == 0);
        CHECK(again.duplicate == 1);
        CHECK_STR(again.id, it.id); /* the acked job's id, from the kept key node */
        deferd_close(c);
    }
    CHECK(zk_count_jobs(zh, root, "kept") == 0);
    CHECK(zk_key_data(zh, root, "kept", "seen-1", data, sizeof data) > 0 &&
          strncmp(data, "done ", 5) == 0);
    CHECK(deferd_next_job(cons, &job, 300) == DEFERD_ETIMEDOUT); /* nothing was created */
    deferd_close(p);
    deferd_close(p2);
    deferd_close(cons);
}

/* ---- a nack with a delay, a reschedule and a nack with follow-ups move the key ---- */

static void nack_keeps_key(void)
{
    deferd_client *p = client(&d[0]), *p2 = client(&d[2]), *cons = client(&d[1]);
    deferd_put_item it, again;
    keyed_item(&it, "nq", "nacked", "nk", -1);
    CHECK(put_keyed(p, &it) == 0 && it.duplicate == 0);
    CHECK(deferd_subscribe(cons, "nq", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, it.id);
    CHECK(deferd_nack(cons, job.id, 60000) == DEFERD_OK);
    deferd_job_clear(&job);
    char data[200], moved[DEFERD_ID_SIZE];
    CHECK(zk_key_data(zh, root, "nq", "nk", data, sizeof data) > 0);
    snprintf(moved, sizeof moved, "nq/%s", data);
    CHECK(strcmp(moved, it.id) != 0);
    CHECK(!zk_job_exists(zh, root, it.id));
    CHECK(zk_job_exists(zh, root, moved));
    char q[80];
    struct job_name jn;
    CHECK(layout_parse_id(moved, q, sizeof q, &jn) == 0 && strcmp(jn.key, "nk") == 0 &&
          jn.prior_attempts == 1 && jn.due_ms > (uint64_t)now_ms() + 50000);
    keyed_item(&again, "nq", "again", "nk", -1);
    CHECK(put_keyed(p2, &again) == 0);
    CHECK(again.duplicate == 1);
    CHECK_STR(again.id, moved);

    /* back to now by key: delivered promptly, as its second attempt */
    char now_id[DEFERD_ID_SIZE];
    CHECK(deferd_reschedule(p, NULL, "nq", "nk", 0, 0, 0, now_id, sizeof now_id) == DEFERD_OK);
    CHECK(key_names("nq", "nk", now_id));
    CHECK(deferd_next_job(cons, &job, 5000) == DEFERD_OK);
    CHECK_STR(job.id, now_id);
    CHECK(job.attempt == 2);

    /* nack with a follow-up: the key follows the job's new id, the follow-up exists */
    deferd_put_item f;
    keyed_item(&f, "nq", "follow", "nk-f", HOUR_MS);
    char new_id[DEFERD_ID_SIZE] = "x";
    CHECK(deferd_nack_then(cons, job.id, 60000, &f, 1, new_id, sizeof new_id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(new_id[0] != '\0' && strcmp(new_id, now_id) != 0);
    CHECK(key_names("nq", "nk", new_id));
    CHECK(zk_job_exists(zh, root, new_id));
    CHECK(!zk_job_exists(zh, root, now_id));
    CHECK(f.duplicate == 0 && zk_job_exists(zh, root, f.id) && key_names("nq", "nk-f", f.id));
    char out[DEFERD_ID_SIZE];
    CHECK(cancel_key(p, "nq", "nk", 0, out) == DEFERD_OK);
    CHECK_STR(out, new_id);
    CHECK(cancel_key(p, "nq", "nk-f", 0, out) == DEFERD_OK);
    CHECK_STR(out, f.id);
    CHECK(zk_count_jobs(zh, root, "nq") == 0);
    deferd_close(p);
    deferd_close(p2);
    deferd_close(cons);
}

/* ---- CANCEL ---- */

static void cancel(void)
{
    deferd_client *p = client(&d[0]), *p2 = client(&d[1]);
    char out[DEFERD_ID_SIZE];
    static const struct {
        const char *key;
        int64_t delay;
        int by_key;
    } cases[] = {{"c-pend-id", HOUR_MS, 0}, {"c-pend-key", HOUR_MS, 1},
                 {"c-due-id", 0, 0},        {"c-due-key", 0, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        deferd_put_item it;
        keyed_item(&it, "cq", "cancel me", cases[i].key, cases[i].delay);
        CHECK(put_keyed(p, &it) == 0 && it.duplicate == 0);
        CHECK(key_names("cq", cases[i].key, it.id));
        out[0] = '\0';
        int rc = cases[i].by_key ? cancel_key(p2, "cq", cases[i].key, 0, out)
                                 : cancel_id(p2, it.id, 0, out);
        if (rc != DEFERD_OK)
            fprintf(stderr, "cancel %s: %s\n", cases[i].key, deferd_last_error(p2));
        CHECK(rc == DEFERD_OK);
        CHECK_STR(out, it.id);
        CHECK(!zk_job_exists(zh, root, it.id));
        CHECK(key_absent("cq", cases[i].key));
        CHECK(err_is(p2, cancel_id(p2, it.id, 0, out), "NOT_FOUND"));
        CHECK(err_is(p2, cancel_key(p2, "cq", cases[i].key, 0, out), "NOT_FOUND"));
    }
    CHECK(err_is(p, cancel_key(p, "cq", "never-put", 0, out), "NOT_FOUND"));
    CHECK(err_is(p, cancel_key(p, "cq", "never-put", 1, out), "NOT_FOUND"));
    CHECK(zk_count_jobs(zh, root, "cq") == 0);

    /* held by a consumer on daemon 3: not cancelled, not moved, unless forced */
    deferd_client *cons = client(&d[2]);
    deferd_put_item it;
    keyed_item(&it, "cq", "held", "c-held", -1);
    CHECK(put_keyed(p, &it) == 0);
    CHECK(deferd_subscribe(cons, "cq", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, it.id);
    char path[LAYOUT_PATH_MAX], lock[LAYOUT_PATH_MAX + 8];
    CHECK(job_path(root, it.id, path, sizeof path) == 0);
    snprintf(lock, sizeof lock, "%s/lock", path);
    CHECK(zk_exists(zh, lock));
    CHECK(err_is(p, cancel_id(p, it.id, 0, out), "IN_FLIGHT"));
    CHECK(err_is(p2, cancel_key(p2, "cq", "c-held", 0, out), "IN_FLIGHT"));
    CHECK(err_is(p, deferd_reschedule(p, it.id, NULL, NULL, 0, 0, HOUR_MS, out, sizeof out),
                 "IN_FLIGHT"));
    CHECK(err_is(p2, deferd_reschedule(p2, NULL, "cq", "c-held", 0, 0, 0, out, sizeof out),
                 "IN_FLIGHT"));
    CHECK(zk_exists(zh, path) && zk_exists(zh, lock));
    CHECK(key_names("cq", "c-held", it.id));
    out[0] = '\0';
    CHECK(cancel_key(p, "cq", "c-held", 1, out) == DEFERD_OK);
    CHECK_STR(out, it.id);
    CHECK(!zk_exists(zh, path));
    CHECK(key_absent("cq", "c-held"));
    CHECK(err_is(cons, deferd_ack(cons, job.id), "LEASE_LOST"));
    deferd_job_clear(&job);
    /* forced by id, the holder's nack fails the same way */
    keyed_item(&it, "cq", "held", "c-held2", -1);
    CHECK(put_keyed(p, &it) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, it.id);
    CHECK(cancel_id(p2, it.id, 1, out) == DEFERD_OK);
    CHECK_STR(out, it.id);
    CHECK(!zk_job_exists(zh, root, it.id) && key_absent("cq", "c-held2"));
    CHECK(err_is(cons, deferd_nack(cons, job.id, 1000), "LEASE_LOST"));
    deferd_job_clear(&job);
    CHECK(zk_count_jobs(zh, root, "cq") == 0);
    CHECK(deferd_next_job(cons, &job, 300) == DEFERD_ETIMEDOUT);
    deferd_close(cons);
    deferd_close(p);
    deferd_close(p2);
}

/* ---- RESCHEDULE ---- */

static void reschedule(void)
{
    deferd_client *p = client(&d[0]), *p2 = client(&d[2]), *cons = client(&d[1]);
    CHECK(deferd_subscribe(cons, "rq", 4) == DEFERD_OK);
    char nid[DEFERD_ID_SIZE];
    deferd_job job;

    /* earlier: an hour out to now, by id and by key; delivered at once */
    for (int by_key = 0; by_key < 2; by_key++) {
        deferd_put_item it;
        const char *key = by_key ? "r-early-key" : "r-early-id";
        keyed_item(&it, "rq", "earlier", key, HOUR_MS);
        CHECK(put_keyed(p, &it) == 0);
        int64_t t0 = now_ms();
        int rc = by_key
                     ? deferd_reschedule(p2, NULL, "rq", key, 1, (uint64_t)t0, 0, nid, sizeof nid)
                     : deferd_reschedule(p2, it.id, NULL, NULL, 0, 0, 0, nid, sizeof nid);
        if (rc != DEFERD_OK)
            fprintf(stderr, "reschedule %s: %s\n", key, deferd_last_error(p2));
        CHECK(rc == DEFERD_OK);
        CHECK(strcmp(nid, it.id) != 0 && id_has_key(nid, key));
        CHECK(!zk_job_exists(zh, root, it.id));
        CHECK(key_names("rq", key, nid));
        rc = deferd_next_job(cons, &job, 5000);
        int64_t took = now_ms() - t0;
        CHECK(rc == DEFERD_OK);
        if (rc != DEFERD_OK)
            continue;
        printf("rescheduled %s from an hour out to now: delivered %lld ms later\n",
               by_key ? "by key" : "by id", (long long)took);
        CHECK_STR(job.id, nid);
        CHECK(job.attempt == 1);
        CHECK(took <= 3000);
        CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
        CHECK(key_absent("rq", key));
        CHECK(err_is(p2, deferd_reschedule(p2, it.id, NULL, NULL, 0, 0, 0, nid, sizeof nid),
                     "NOT_FOUND"));
    }

    /* later: due in 1.5 s, moved an hour out, by id and by key; not delivered at 1.5 s */
    deferd_put_item late[2];
    char moved[2][DEFERD_ID_SIZE];
    int64_t latest_due = 0;
    for (int by_key = 0; by_key < 2; by_key++) {
        const char *key = by_key ? "r-late-key" : "r-late-id";
        keyed_item(&late[by_key], "rq", "later", key, 1500);
        CHECK(put_keyed(p, &late[by_key]) == 0);
        latest_due = now_ms() + 1500;
        uint64_t at = (uint64_t)(now_ms() + HOUR_MS);
        int rc = by_key ? deferd_reschedule(p2, NULL, "rq", key, 1, at, 0, moved[by_key],
                                            DEFERD_ID_SIZE)
                        : deferd_reschedule(p2, late[by_key].id, NULL, NULL, 0, 0, HOUR_MS,
                                            moved[by_key], DEFERD_ID_SIZE);
        CHECK(rc == DEFERD_OK);
        CHECK(key_names("rq", key, moved[by_key]));
        CHECK(!zk_job_exists(zh, root, late[by_key].id) && zk_job_exists(zh, root, moved[by_key]));
        char q[80];
        struct job_name jn;
        CHECK(layout_parse_id(moved[by_key], q, sizeof q, &jn) == 0 &&
              jn.due_ms >= (uint64_t)(now_ms() + HOUR_MS - 60000));
    }
    int64_t until = latest_due + 1500;
    int delivered = 0;
    while (now_ms() < until) { /* the consumer waits past the old due times */
        if (deferd_next_job(cons, &job, (int)(until - now_ms())) == DEFERD_OK) {
            fprintf(stderr, "delivered after a reschedule to later: %s\n", job.id);
            delivered++;
            deferd_job_clear(&job);
        }
    }
    CHECK(delivered == 0);
    for (int i = 0; i < 2; i++)
        CHECK(zk_job_exists(zh, root, moved[i]));
    char out[DEFERD_ID_SIZE];
    CHECK(cancel_key(p, "rq", "r-late-key", 0, out) == DEFERD_OK && strcmp(out, moved[1]) == 0);
    CHECK(cancel_id(p, moved[0], 0, out) == DEFERD_OK);
    CHECK(key_absent("rq", "r-late-id") && key_absent("rq", "r-late-key"));
    CHECK(err_is(p, deferd_reschedule(p, NULL, "rq", "never-put", 0, 0, 0, out, sizeof out),
                 "NOT_FOUND"));
    CHECK(zk_count_jobs(zh, root, "rq") == 0);
    deferd_close(p);
    deferd_close(p2);
    deferd_close(cons);
}

/* ---- BATCH ---- */

#define NB 6

static void batch_items(deferd_put_item *items, char payloads[][32], char keys[][32])
{
    for (int i = 0; i < NB; i++) {
        snprintf(payloads[i], 32, "batch item %d", i + 1);
        snprintf(keys[i], 32, "bi-%d", i + 1);
        keyed_item(&items[i], i % 2 ? "bq2" : "bq1", payloads[i], keys[i], HOUR_MS + i * 1000);
    }
}

/* A batch with one bad item at POS (from 1) fails naming it, and stores nothing: not the
 * other items, nor their keys. An item the client can judge (a bad key) it may refuse
 * itself, sending nothing. Each on a connection of its own, from daemon DP; what a failed
 * check left behind is cancelled, so that the next parts start clean. */
static void batch_refused(const struct daemon_proc *dp, deferd_put_item *items, int pos,
                          const char *what)
{
    deferd_client *c = client(dp);
    unsigned parts = 99;
    size_t stored = 99;
    int rc = deferd_put_batch(c, items, NB, &parts, &stored);
    char item[32];
    snprintf(item, sizeof item, "item %d", pos);
    printf("batch with %s at %d: rc %d, %s\n", what, pos, rc, deferd_last_error(c));
    int client_judges = items[pos - 1].opts.key && !names_valid_key(items[pos - 1].opts.key);
    CHECK(rc == DEFERD_ESERVER || (client_judges && rc == DEFERD_EARG));
    CHECK_CONTAINS(deferd_last_error(c), item); /* the daemon's reply, or the client's */
    CHECK(stored == 0);
    int ping = deferd_ping(c); /* the connection is in step */
    if (ping != DEFERD_OK)
        fprintf(stderr, "PING after the refused batch: rc %d, %s\n", ping, deferd_last_error(c));
    CHECK(ping == DEFERD_OK);
    deferd_close(c);
    CHECK(zk_count_jobs(zh, root, "bq1") == 0 && zk_count_jobs(zh, root, "bq2") == 0);
    c = client(dp);
    for (int i = 0; i < NB; i++)
        if (i + 1 != pos && items[i].opts.key && !key_absent(items[i].queue, items[i].opts.key)) {
            CHECK(!"a refused batch stored a job");
            cancel_key(c, items[i].queue, items[i].opts.key, 1, NULL);
        }
    deferd_close(c);
}

/* On the wire, whatever a client checks first: a BATCH whose item has a bad option (a bad
 * key) is one error naming it; the daemon reads the item's payload and the remaining
 * items, so the next request (PING) gets the next reply, and nothing is stored. */
static void batch_bad_option_raw(void)
{
    static const char req[] = "BATCH 3\n"
                              "PUT bq1 2 delay=3600000 key=raw-1\nr1\n"
                              "PUT bq1 2 delay=3600000 key=-raw-2\nr2\n"
                              "PUT bq2 2 delay=3600000 key=raw-3\nr3\n"
                              "PING\n";
    int fd = raw_connect(&d[0]);
    CHECK(fd >= 0 && write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1));
    char in[1024] = "";
    size_t n = 0;
    int64_t deadline = now_ms() + 10000;
    while (n + 1 < sizeof in && !strstr(in, "PONG\n")) { /* until PONG, or the deadline */
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - now_ms());
        ssize_t got;
        if (left <= 0 || poll(&pf, 1, left) <= 0 || (got = read(fd, in + n, 1)) <= 0)
            break;
        in[++n] = '\0';
    }
    in[n] = '\0';
    close(fd);
    char first[256] = "";
    sscanf(in, "%255[^\n]", first);
    printf("raw BATCH with a bad key at 2: '%s'\n", first);
    CHECK(strncmp(first, "ERR BAD_REQUEST item 2", 22) == 0);
    CHECK(strstr(in, "\nOK PONG\n") == in + strlen(first)); /* the very next reply */
    if (strstr(in, "\nOK PONG\n") != in + strlen(first))
        fprintf(stderr, "replies to BATCH 3 + PING: '%s'\n", in);
    CHECK(key_absent("bq1", "raw-1") && key_absent("bq2", "raw-3"));
    deferd_client *c = client(&d[0]);
    cancel_key(c, "bq1", "raw-1", 1, NULL); /* what a failure left behind */
    cancel_key(c, "bq2", "raw-3", 1, NULL);
    deferd_close(c);
}

static void batch(void)
{
    deferd_client *p = client(&d[0]), *p2 = client(&d[1]);
    deferd_put_item items[NB];
    char payloads[NB][32], keys[NB][32];
    static char big[5000]; /* over the harness's max_payload of 4 KiB */
    memset(big, 'x', sizeof big - 1);

    batch_items(items, payloads, keys);
    items[3].queue = "nosuchqueue";
    batch_refused(&d[0], items, 4, "an unknown queue");
    batch_items(items, payloads, keys);
    items[1].payload = big;
    items[1].len = strlen(big);
    batch_refused(&d[0], items, 2, "a payload too large");
    batch_items(items, payloads, keys);
    items[4].opts.key = "-bad"; /* a key must start with a letter or a digit */
    batch_refused(&d[0], items, 5, "a bad key");
    batch_bad_option_raw();

    /* valid, across two queues, the same keys as above: all created, ids in order */
    batch_items(items, payloads, keys);
    unsigned parts = 0;
    size_t stored = 99;
    int rc = deferd_put_batch(p, items, NB, &parts, &stored);
    if (rc != DEFERD_OK)
        fprintf(stderr, "batch: %s\n", deferd_last_error(p));
    CHECK(rc == DEFERD_OK);
    CHECK(parts == 1);
    char first[NB][DEFERD_ID_SIZE];
    for (int i = 0; i < NB; i++) {
        char data[64], path[LAYOUT_PATH_MAX];
        size_t ql = strlen(items[i].queue);
        snprintf(first[i], sizeof first[i], "%s", items[i].id);
        CHECK(items[i].duplicate == 0);
        CHECK(strncmp(items[i].id, items[i].queue, ql) == 0 && items[i].id[ql] == '/');
        CHECK(id_has_key(items[i].id, keys[i]));
        CHECK(key_names(items[i].queue, keys[i], items[i].id));
        CHECK(job_path(root, items[i].id, path, sizeof path) == 0);
        CHECK(zk_get(zh, path, data, sizeof data) >= 0 && strcmp(data, payloads[i]) == 0);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(items[i].id, items[j].id) != 0);
    }
    CHECK(zk_count_jobs(zh, root, "bq1") == 3 && zk_count_jobs(zh, root, "bq2") == 3);

    /* a taken key in a batch (from another daemon): that one a duplicate, the rest created */
    deferd_put_item mix[4];
    keyed_item(&mix[0], "bq1", "m1", "bd-1", HOUR_MS);
    keyed_item(&mix[1], "bq1", "m2", "bi-1", HOUR_MS); /* taken by the batch above */
    keyed_item(&mix[2], "bq2", "m3", "bd-3", HOUR_MS);
    keyed_item(&mix[3], "bq2", "m4", NULL, HOUR_MS);
    rc = deferd_put_batch(p2, mix, 4, &parts, &stored);
    CHECK(rc == DEFERD_OK);
    CHECK(mix[1].duplicate == 1);
    CHECK_STR(mix[1].id, first[0]);
    CHECK(mix[0].duplicate == 0 && mix[2].duplicate == 0 && mix[3].duplicate == 0);
    CHECK(zk_job_exists(zh, root, mix[0].id) && zk_job_exists(zh, root, mix[2].id) &&
          zk_job_exists(zh, root, mix[3].id));
    CHECK(key_names("bq1", "bd-1", mix[0].id) && key_names("bq2", "bd-3", mix[2].id));
    CHECK(zk_count_jobs(zh, root, "bq1") == 4 && zk_count_jobs(zh, root, "bq2") == 5);

    /* every key taken: all duplicates, nothing created, not an error */
    batch_items(items, payloads, keys);
    rc = deferd_put_batch(p2, items, NB, &parts, &stored);
    CHECK(rc == DEFERD_OK);
    for (int i = 0; i < NB; i++) {
        CHECK(items[i].duplicate == 1);
        CHECK_STR(items[i].id, first[i]);
    }
    CHECK(zk_count_jobs(zh, root, "bq1") == 4 && zk_count_jobs(zh, root, "bq2") == 5);

    /* larger than one ZooKeeper packet: parts, all stored, ids in order of the items */
    enum { NBIG = 300 };
    static deferd_put_item big_items[NBIG];
    static char big_payload[4000];
    memset(big_payload, 'p', sizeof big_payload - 1);
    for (int i = 0; i < NBIG; i++)
        keyed_item(&big_items[i], "bq2", big_payload, NULL, HOUR_MS + i);
    parts = 0;
    rc = deferd_put_batch(p, big_items, NBIG, &parts, &stored);
    printf("batch of %d x %zu bytes: rc %d, parts=%u %s\n", NBIG, sizeof big_payload - 1, rc,
           parts, rc ? deferd_last_error(p) : "");
    CHECK(rc == DEFERD_OK && parts >= 2 && stored == NBIG);
    uint64_t last_due = 0;
    int ordered = 1;
    for (int i = 0; i < NBIG; i++) {
        char q[80];
        struct job_name jn;
        ordered &= layout_parse_id(big_items[i].id, q, sizeof q, &jn) == 0 && jn.due_ms > last_due;
        last_due = jn.due_ms;
    }
    CHECK(ordered); /* item i was put with delay HOUR_MS + i */
    CHECK(zk_count_jobs(zh, root, "bq2") == 5 + NBIG);

    /* one key twice in a batch: the first creates the job, the second is its duplicate */
    deferd_put_item tw[3];
    keyed_item(&tw[0], "bq1", "t1", "twice", HOUR_MS);
    keyed_item(&tw[1], "bq1", "t2", "other", HOUR_MS);
    keyed_item(&tw[2], "bq1", "t3", "twice", HOUR_MS);
    CHECK(deferd_put_batch(p2, tw, 3, &parts, &stored) == DEFERD_OK);
    CHECK(tw[0].duplicate == 0 && tw[1].duplicate == 0 && tw[2].duplicate == 1);
    CHECK_STR(tw[2].id, tw[0].id);
    CHECK(key_names("bq1", "twice", tw[0].id) && key_names("bq1", "other", tw[1].id));
    CHECK(zk_count_jobs(zh, root, "bq1") == 6 && zk_count_jobs(zh, root, "bq2") == 5 + NBIG);

    /* one 64-character key 50 times (the reply repeats the longest ids: its buffer once
     * overflowed, found by review of the fuzzing helper) */
    enum { NREP = 50 };
    static deferd_put_item rep[NREP];
    char longkey[65];
    memset(longkey, 'K', 64);
    longkey[64] = '\0';
    for (int i = 0; i < NREP; i++)
        keyed_item(&rep[i], "bq1", "rep", longkey, HOUR_MS);
    CHECK(deferd_put_batch(p2, rep, NREP, &parts, &stored) == DEFERD_OK);
    int same = rep[0].duplicate == 0;
    for (int i = 1; i < NREP; i++)
        same &= rep[i].duplicate == 1 && strcmp(rep[i].id, rep[0].id) == 0;
    CHECK(same);
    CHECK(zk_count_jobs(zh, root, "bq1") == 7);
    deferd_close(p);
    deferd_close(p2);
}

/* ---- ACK then=: follow-ups only with the ack ---- */

#define NF 3

static void follow_items(deferd_put_item *f, const char *prefix, char keys[][32])
{
    for (int i = 0; i < NF; i++) {
        snprintf(keys[i], 32, "%s-%d", prefix, i + 1);
        keyed_item(&f[i], "fq2", "follow-up", keys[i], HOUR_MS);
    }
}

static int none_exist(char keys[][32], int fq2_jobs)
{
    int ok = zk_count_jobs(zh, root, "fq2") == fq2_jobs;
    for (int i = 0; i < NF; i++)
        ok &= key_absent("fq2", keys[i]);
    return ok;
}

static int set_paused(const char *queue, int on)
{
    char path[LAYOUT_PATH_MAX];
    snprintf(path, sizeof path, "%s/queues/%s/paused", root, queue);
    int rc = on ? zoo_create(zh, path, "it_keys", 7, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0)
                : zoo_delete(zh, path, -1);
    return rc == ZOK ? 0 : -1;
}

static int wait_stats(const struct daemon_proc *dp, const char *text)
{
    int64_t deadline = now_ms() + 10000;
    while (now_ms() < deadline) {
        deferd_client *c = client(dp);
        char buf[4096] = "";
        int ok = deferd_stats(c, buf, sizeof buf) == DEFERD_OK && strstr(buf, text);
        deferd_close(c);
        if (ok)
            return 1;
        usleep(20000);
    }
    return 0;
}

static void ack_then(void)
{
    deferd_client *p = client(&d[0]), *cons = client(&d[1]);
    deferd_put_item src, f[NF];
    char keys[NF][32];
    deferd_job job;
    CHECK(deferd_subscribe(cons, "fq", 1) == DEFERD_OK);

    /* success, one follow-up's key already taken */
    deferd_put_item taken;
    keyed_item(&taken, "fq2", "taken", "ft-2", HOUR_MS);
    CHECK(put_keyed(p, &taken) == 0);
    keyed_item(&src, "fq", "source", NULL, -1);
    CHECK(put_keyed(p, &src) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, src.id);
    follow_items(f, "ft", keys);
    int rc = deferd_ack_then(cons, job.id, f, NF);
    if (rc != DEFERD_OK)
        fprintf(stderr, "ack then: %s\n", deferd_last_error(cons));
    CHECK(rc == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(!zk_job_exists(zh, root, src.id));
    CHECK(f[0].duplicate == 0 && f[1].duplicate == 1 && f[2].duplicate == 0);
    CHECK_STR(f[1].id, taken.id);
    CHECK(key_names("fq2", "ft-1", f[0].id) && key_names("fq2", "ft-3", f[2].id));
    CHECK(zk_job_exists(zh, root, f[0].id) && zk_job_exists(zh, root, f[2].id));
    CHECK(zk_count_jobs(zh, root, "fq2") == 3);

    /* an item error: nothing changes, the job is still held and can be acked */
    keyed_item(&src, "fq", "source", NULL, -1);
    CHECK(put_keyed(p, &src) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    follow_items(f, "fi", keys);
    f[2].queue = "nosuchqueue";
    rc = deferd_ack_then(cons, job.id, f, NF);
    printf("ack then with an unknown queue at 3: rc %d, %s\n", rc, deferd_last_error(cons));
    CHECK(rc == DEFERD_ESERVER);
    if (rc == DEFERD_ESERVER)
        CHECK_CONTAINS(deferd_last_error(cons), "item 3");
    CHECK(none_exist(keys, 3));
    CHECK(zk_job_exists(zh, root, src.id));
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);

    /* not held by this connection: NOT_FOUND, nothing created */
    keyed_item(&src, "fq", "other's", NULL, HOUR_MS);
    CHECK(put_keyed(p, &src) == 0);
    follow_items(f, "fn", keys);
    CHECK(err_is(cons, deferd_ack_then(cons, src.id, f, NF), "NOT_FOUND"));
    CHECK(none_exist(keys, 3));
    CHECK(cancel_id(p, src.id, 0, NULL) == DEFERD_OK);

    /* lease lost by a forced cancel */
    keyed_item(&src, "fq", "source", NULL, -1);
    CHECK(put_keyed(p, &src) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, src.id);
    CHECK(cancel_id(p, job.id, 1, NULL) == DEFERD_OK);
    follow_items(f, "fl", keys);
    CHECK(err_is(cons, deferd_ack_then(cons, job.id, f, NF), "LEASE_LOST"));
    deferd_job_clear(&job);
    CHECK(none_exist(keys, 3));

    /* lease expired (ttr 1 s), the queue paused meanwhile so that the job is not handed
     * to this connection again before the ack is tried */
    keyed_item(&src, "fq", "short lease", "fx", -1);
    src.opts.has_ttr = 1;
    src.opts.ttr_ms = DEFERD_TTR_MIN_MS;
    CHECK(put_keyed(p, &src) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, src.id);
    CHECK(job.ttr_ms == DEFERD_TTR_MIN_MS);
    deferd_job_clear(&job);
    CHECK(set_paused("fq", 1) == 0);
    CHECK(wait_stats(&d[1], "paused.fq=1"));
    int expired = 0;
    int64_t deadline = now_ms() + 10000;
    while (!expired && now_ms() < deadline) {
        deferd_event ev;
        if (deferd_next_event(cons, &ev, 200) != DEFERD_OK)
            continue;
        expired = ev.kind == DEFERD_EV_EXPIRED && strcmp(ev.job.id, src.id) == 0;
        CHECK(ev.kind != DEFERD_EV_JOB);
        deferd_job_clear(&ev.job);
    }
    CHECK(expired);
    follow_items(f, "fe", keys);
    CHECK(err_is(cons, deferd_ack_then(cons, src.id, f, NF), "LEASE_LOST"));
    CHECK(none_exist(keys, 3));
    CHECK(zk_job_exists(zh, root, src.id) && key_names("fq", "fx", src.id));
    /* resumed: delivered again, and this ack creates them */
    CHECK(set_paused("fq", 0) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, src.id);
    CHECK(job.attempt == 2);
    follow_items(f, "fe", keys);
    CHECK(deferd_ack_then(cons, job.id, f, NF) == DEFERD_OK);
    deferd_job_clear(&job);
    for (int i = 0; i < NF; i++)
        CHECK(f[i].duplicate == 0 && key_names("fq2", keys[i], f[i].id));
    CHECK(key_absent("fq", "fx"));
    CHECK(zk_count_jobs(zh, root, "fq") == 0 && zk_count_jobs(zh, root, "fq2") == 6);
    deferd_close(p);
    deferd_close(cons);
}

/* A job that puts its own successor with its own key (a periodic job) as it is acked: the
 * ack frees the key in the same transaction, so the successor is created and holds it;
 * with key_retention the key stays taken, so the successor is a duplicate of the acked
 * job (as a crawler's link back to a page it is crawling). */
static void self_successor(void)
{
    deferd_client *p = client(&d[0]), *cons = client(&d[1]);
    CHECK(deferd_subscribe(cons, "free", 1) == DEFERD_OK);
    deferd_put_item it, next;
    keyed_item(&it, "free", "tick", "periodic", -1);
    CHECK(put_keyed(p, &it) == 0 && it.duplicate == 0);
    deferd_job job;
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, it.id);
    keyed_item(&next, "free", "tock", "periodic", HOUR_MS);
    int rc = deferd_ack_then(cons, job.id, &next, 1);
    deferd_job_clear(&job);
    printf("ack then its own key: rc %d %s, follow-up %s duplicate=%d\n", rc,
           rc ? deferd_last_error(cons) : "", next.id, next.duplicate);
    CHECK(rc == DEFERD_OK);
    CHECK(!zk_job_exists(zh, root, it.id));
    CHECK(next.duplicate == 0 && strcmp(next.id, it.id) != 0);
    CHECK(zk_job_exists(zh, root, next.id) && key_names("free", "periodic", next.id));
    char out[DEFERD_ID_SIZE];
    CHECK(cancel_key(p, "free", "periodic", 0, out) == DEFERD_OK);
    CHECK(zk_count_jobs(zh, root, "free") == 0);

    CHECK(deferd_subscribe(cons, "kept", 1) == DEFERD_OK);
    keyed_item(&it, "kept", "tick", "periodic", -1);
    CHECK(put_keyed(p, &it) == 0 && it.duplicate == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, it.id);
    keyed_item(&next, "kept", "tock", "periodic", HOUR_MS);
    CHECK(deferd_ack_then(cons, job.id, &next, 1) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(next.duplicate == 1);
    CHECK_STR(next.id, it.id);
    char data[200];
    CHECK(zk_key_data(zh, root, "kept", "periodic", data, sizeof data) > 0 &&
          strncmp(data, "done ", 5) == 0);
    CHECK(zk_count_jobs(zh, root, "kept") == 0);
    deferd_close(p);
    deferd_close(cons);
}

/* ---- deferctl ---- */

static int job_payload_is(const char *id, const char *want)
{
    char path[LAYOUT_PATH_MAX], data[256];
    if (job_path(root, id, path, sizeof path) != 0 || zk_get(zh, path, data, sizeof data) < 0)
        return 0;
    if (strcmp(data, want) == 0)
        return 1;
    fprintf(stderr, "%s holds '%s', want '%s'\n", id, data, want);
    return 0;
}

/* put --key (a duplicate from another daemon), put --batch FILE (all or none, ids in file
 * order, a taken key printed as a duplicate), cancel --key; deferctl reads the daemon's
 * base config, so queues emails and b, which the other parts do not use. */
static void deferctl_keys(void)
{
    char out[8192], id1[DEFERD_ID_SIZE] = "", id2[DEFERD_ID_SIZE] = "",
                    id3[DEFERD_ID_SIZE] = "", dup[DEFERD_ID_SIZE] = "", word[32] = "";
    CHECK(run_deferctl(&d[0], "put -q emails --delay 1h --key ctl-1 'first one'", out,
                       sizeof out) == 0);
    CHECK(sscanf(out, "%255s", id1) == 1 && id_has_key(id1, "ctl-1"));
    CHECK(key_names("emails", "ctl-1", id1) && job_payload_is(id1, "first one"));
    CHECK(run_deferctl(&d[1], "put -q emails --key ctl-1 --json second 2>/dev/null", out,
                       sizeof out) == 0);
    CHECK_CONTAINS(out, id1);
    CHECK_CONTAINS(out, "\"duplicate\":true");
    CHECK(job_payload_is(id1, "first one"));

    char file[400], args[512];
    snprintf(file, sizeof file, "%s/batch.txt", d[0].dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "queue=emails key=ctl-2 delay=1h payload=two words\n"
               "# a comment, then a blank line\n\n"
               "queue=b key=ctl-3 delay=1h prio=3 payload64=aGVsbG8Kd29ybGQ=\n"
               "queue=emails key=ctl-1 delay=1h payload=taken\n");
    fclose(f);
    snprintf(args, sizeof args, "put --batch %s", file);
    CHECK(run_deferctl(&d[2], args, out, sizeof out) == 0);
    printf("deferctl put --batch:\n%s", out);
    CHECK(sscanf(out, "%255s %255s %255s %31s", id2, id3, dup, word) == 4);
    CHECK(id_has_key(id2, "ctl-2") && key_names("emails", "ctl-2", id2));
    CHECK(id_has_key(id3, "ctl-3") && key_names("b", "ctl-3", id3));
    CHECK_STR(dup, id1);
    CHECK_STR(word, "duplicate");
    CHECK(job_payload_is(id2, "two words") && job_payload_is(id3, "hello\nworld"));
    CHECK(zk_count_jobs(zh, root, "emails") == 2 && zk_count_jobs(zh, root, "b") == 1);

    /* a batch file with an unknown queue: nothing stored, the taken key not even read */
    f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "queue=emails key=ctl-4 payload=x\nqueue=nosuchqueue payload=y\n");
        fclose(f);
    }
    snprintf(args, sizeof args, "put --batch %s 2>/dev/null", file);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) != 0);
    CHECK(key_absent("emails", "ctl-4") && zk_count_jobs(zh, root, "emails") == 2);

    CHECK(run_deferctl(&d[1], "cancel --key ctl-2 emails", out, sizeof out) == 0);
    CHECK(strncmp(out, "cancelled ", 10) == 0 && strstr(out, id2));
    CHECK(!zk_job_exists(zh, root, id2) && key_absent("emails", "ctl-2"));
    CHECK(run_deferctl(&d[1], "cancel --key ctl-2 emails 2>/dev/null", out, sizeof out) == 3);
    CHECK(run_deferctl(&d[0], "cancel --key ctl-1 emails", out, sizeof out) == 0);
    CHECK(run_deferctl(&d[0], "cancel --key ctl-3 b", out, sizeof out) == 0);
    CHECK(zk_count_jobs(zh, root, "emails") == 0 && zk_count_jobs(zh, root, "b") == 0);
    CHECK(key_absent("emails", "ctl-1") && key_absent("b", "ctl-3"));
}

int main(void)
{
    harness_init("keys", root, sizeof root);
    static const char *const tags[] = {"k1", "k2", "k3"};
    for (int i = 0; i < 3; i++)
        if (daemon_start(&d[i], root, tags[i], overrides) != 0)
            return 1;
    zh = zk_connect();
    for (int i = 0; i < 3; i++) { /* every daemon's ZooKeeper session is up before the race */
        deferd_client *c = client(&d[i]);
        char id[DEFERD_ID_SIZE];
        CHECK(put_job(c, "a", "warm-up", HOUR_MS, -1, -1, id) == 0);
        deferd_close(c);
    }
    same_key_race();
    free_after_ack();
    nack_keeps_key();
    cancel();
    reschedule();
    batch();
    ack_then();
    self_successor();
    deferctl_keys();
    for (int i = 0; i < 3; i++)
        daemon_kill(&d[i], SIGTERM);
    zookeeper_close(zh);
    return check_report("it_keys");
}
