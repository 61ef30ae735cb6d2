/* A consumer that leaves cleanly: UNSUB stops pushes (no JOB after its OK, held jobs stay
 * held), and NACK unrun=1 gives back a job it never started without counting an attempt:
 * the next delivery has the same attempt, under the same id (unless more than 8 deliveries
 * were counted under it), a keyed job keeps its key. */
#include "harness.h"

static struct daemon_proc d;
static char root[128];

/* inflight 3 and 5 jobs: after UNSUB the consumer's acks bring nothing more; another
 * consumer gets the other two. */
static void unsub_stops_pushes(void)
{
    deferd_client *prod = client(&d), *a = client(&d), *b = client(&d);
    char id[DEFERD_ID_SIZE];
    deferd_job held[3], job;
    for (int i = 0; i < 5; i++)
        CHECK(put_job(prod, "a", "five", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(a, "a", 3) == DEFERD_OK);
    for (int i = 0; i < 3; i++)
        CHECK(next_job_push(a, &held[i], 10000) == 0);
    CHECK(deferd_unsubscribe(a, NULL) == DEFERD_OK);
    CHECK(deferd_unsubscribe(a, "nosuch") == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(a), "UNKNOWN_QUEUE");
    for (int i = 0; i < 3; i++) {
        CHECK(deferd_ack(a, held[i].id) == DEFERD_OK); /* held jobs stay ackable */
        deferd_job_clear(&held[i]);
    }
    CHECK(next_job_push(a, &job, 1000) != 0); /* the freed slots brought nothing */
    CHECK(deferd_subscribe(b, "a", 5) == DEFERD_OK);
    for (int i = 0; i < 2; i++) {
        CHECK(next_job_push(b, &job, 10000) == 0 && job.attempt == 1);
        CHECK(deferd_ack(b, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    deferd_close(prod);
    deferd_close(a);
    deferd_close(b);
}

/* Gives JOB back unrun from C; its id from now on into NEXT. */
static int give_back(deferd_client *c, const deferd_job *job, char *next)
{
    return deferd_nack_unrun(c, job->id, next, DEFERD_ID_SIZE) == DEFERD_OK ? 0 : -1;
}

/* A client that takes one push of QUEUE and closes without answering: a crash, the lock
 * goes and that delivery counts. Returns the attempt it got, 0 for none. */
static unsigned crash_holding(const char *queue)
{
    deferd_client *c = client(&d);
    deferd_job job;
    unsigned attempt = 0;
    if (deferd_subscribe(c, queue, 1) == DEFERD_OK && next_job_push(c, &job, 10000) == 0) {
        attempt = job.attempt;
        deferd_job_clear(&job);
    }
    deferd_close(c);
    return attempt;
}

/* Attempt 1 goes back under its own id and comes back as attempt 1; a job on its second
 * and third attempts (its holders crashed) comes back as attempt 2, then 3, not one more,
 * and keeps its id: the deliveries counted under its name are made again in its new znode
 * (docs/zookeeper-layout.md). */
static void unrun_keeps_attempt(zhandle_t *zh)
{
    deferd_client *prod = client(&d), *a = client(&d);
    char id[DEFERD_ID_SIZE], next[DEFERD_ID_SIZE];
    deferd_job job;
    CHECK(put_job(prod, "b", "untouched", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(a, "b", 1) == DEFERD_OK);
    CHECK(next_job_push(a, &job, 10000) == 0 && job.attempt == 1);
    CHECK(give_back(a, &job, next) == 0);
    CHECK_STR(next, id);
    deferd_job_clear(&job);
    CHECK(next_job_push(a, &job, 10000) == 0);
    CHECK_STR(job.id, id);
    CHECK(job.attempt == 1);
    deferd_job_clear(&job);
    deferd_close(a); /* a crash: the lock goes, that delivery counts */
    for (unsigned attempt = 2; attempt <= 3; attempt++) {
        deferd_client *b = client(&d);
        CHECK(deferd_subscribe(b, "b", 1) == DEFERD_OK);
        CHECK(next_job_push(b, &job, 10000) == 0 && job.attempt == attempt);
        CHECK(give_back(b, &job, next) == 0);
        CHECK_STR(next, id); /* the same name: no a<N> */
        deferd_job_clear(&job);
        CHECK(next_job_push(b, &job, 10000) == 0);
        CHECK_STR(job.id, id);
        CHECK(job.attempt == attempt);
        CHECK(job.len == 9 && memcmp(job.payload, "untouched", 9) == 0);
        deferd_job_clear(&job);
        deferd_close(b); /* crashed again, on this attempt */
    }
    deferd_client *c = client(&d);
    CHECK(deferd_subscribe(c, "b", 1) == DEFERD_OK);
    CHECK(next_job_push(c, &job, 10000) == 0 && job.attempt == 4);
    CHECK_STR(job.id, id);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(!zk_job_exists(zh, root, id));
    CHECK(deferd_nack_unrun(c, id, NULL, 0) == DEFERD_ESERVER); /* not held any more */
    CHECK_STR(deferd_last_error_code(c), "NOT_FOUND");
    deferd_close(prod);
    deferd_close(c);
}

/* A keyed job given back keeps its key node as it was while its name stays; past
 * ATTEMPTS_REPLAY_MAX (8) deliveries under its name it moves to a new name carrying them
 * (a9), and takes its key along: the key node names it, and a put with the key is its
 * duplicate. */
static void unrun_keeps_key(zhandle_t *zh)
{
    deferd_client *prod = client(&d), *b;
    deferd_put_item it;
    char next[DEFERD_ID_SIZE], first[DEFERD_ID_SIZE], data[512];
    deferd_job job;
    keyed_item(&it, "emails", "keyed", "order-77", -1);
    CHECK(put_keyed(prod, &it) == 0 && !it.duplicate);
    snprintf(first, sizeof first, "%s", it.id);
    for (unsigned attempt = 1; attempt <= 9; attempt++)
        CHECK(crash_holding("emails") == attempt);
    b = client(&d);
    CHECK(deferd_subscribe(b, "emails", 1) == DEFERD_OK);
    CHECK(next_job_push(b, &job, 10000) == 0 && job.attempt == 10);
    CHECK_STR(job.id, first);
    CHECK(give_back(b, &job, next) == 0);
    deferd_job_clear(&job);
    CHECK(strcmp(next, first) != 0 && strstr(next, "-a9") != NULL); /* attempts in the name */
    CHECK(zk_key_data(zh, root, "emails", "order-77", data, sizeof data) > 0);
    CHECK_STR(data, strchr(next, '/') + 1);
    keyed_item(&it, "emails", "again", "order-77", -1);
    CHECK(put_keyed(prod, &it) == 0 && it.duplicate);
    CHECK_STR(it.id, next);
    CHECK(next_job_push(b, &job, 10000) == 0 && job.attempt == 10);
    CHECK_STR(job.id, next);
    CHECK(deferd_ack(b, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(prod);
    deferd_close(b);
}

int main(void)
{
    harness_init("giveback", root, sizeof root);
    if (daemon_start(&d, root, "g1", NULL) != 0)
        return 1;
    CHECK(daemon_wait_connected(&d, 15000) == 0); /* puts before it are refused */
    zhandle_t *zh = zk_connect();
    unsub_stops_pushes();
    unrun_keeps_attempt(zh);
    unrun_keeps_key(zh);
    daemon_kill(&d, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_giveback");
}
