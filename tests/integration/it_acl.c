/* [zookeeper] auth and acl with a second ZooKeeper identity: a daemon with acl = creator
 * makes znodes only its own identity may touch; another identity gets ZNOAUTH; a second
 * daemon with other credentials gets a clear error for that queue and keeps running.
 * Then the first daemon's own znodes are made to deny it part of what it needs (setAcl by a
 * session of the same identity, behind its back): a lock, an ack, a dead-lettering, new
 * directories for puts, keys and a reschedule, a cancel, the pending counters. Each is
 * refused with "permission denied by ZooKeeper" to the client (if any), logged once per
 * queue, counted, retried no faster than once a second, and loses or repeats nothing. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "harness_acl.h"

static struct daemon_proc alice, mallory;
static char root[128];

/* The queue's zk_denied in STATS QUEUE: ZooKeeper's NoAuth answers counted so far. */
static long denied(deferd_client *c, const char *queue)
{
    return queue_stat(c, queue, "zk_denied");
}

/* Waits up to MS for the queue's zk_denied to pass AT; its value. */
static long denied_past(deferd_client *c, const char *queue, long at, int ms)
{
    long now = denied(c, queue);
    for (int64_t deadline = now_ms() + ms; now <= at && now_ms() < deadline;)
        if ((now = denied(c, queue)) <= at)
            usleep(50000);
    return now;
}

/* The parent directory of PATH (a job's bucket) into BUF. */
static void parent(const char *path, char *buf, size_t len)
{
    snprintf(buf, len, "%s", path);
    *strrchr(buf, '/') = '\0';
}

static void check_denied_reply(deferd_client *c, const char *what)
{
    CHECK_STR(deferd_last_error_code(c), "UNAVAILABLE");
    CHECK_CONTAINS(deferd_last_error(c), "permission denied by ZooKeeper");
    CHECK_STR(deferd_last_error_reason(c), "permission");
    if (!strstr(deferd_last_error(c), "permission denied by ZooKeeper"))
        fprintf(stderr, "%s: %s\n", what, deferd_last_error(c));
}

/* A job whose lock ZooKeeper refuses (its ACL lets deferd do all but create children) is
 * not delivered: the refusal is logged once for the queue with the job's path and counted,
 * the lock is tried again about once a second, not in a loop; with the ACL back the job is
 * delivered as attempt 1. Then its ack is refused (the bucket denies delete): the consumer
 * is told and still holds it; with the ACL back the ack deletes it. */
static void lock_and_ack_denied(zhandle_t *owner, deferd_client *c)
{
    deferd_client *ce = client(&alice);
    char id[DEFERD_ID_SIZE], path[512], bucket[512];
    deferd_job job = {0};
    CHECK(put_job(c, "emails", "locked out", 1000, -1, -1, id) == 0);
    CHECK(job_path(root, id, path, sizeof path) == 0);
    CHECK(set_perms(owner, path, ZOO_PERM_ALL & ~ZOO_PERM_CREATE) == ZOK);
    long mark = log_mark(&alice), before = denied(c, "emails");
    CHECK(deferd_subscribe(ce, "emails", 1) == DEFERD_OK);
    CHECK(deferd_next_job(ce, &job, 4000) == DEFERD_ETIMEDOUT);
    long tries = denied(c, "emails") - before;
    fprintf(stderr, "lock refused %ld times in 4 s\n", tries);
    CHECK(tries >= 2 && tries <= 8); /* due after 1 s, then one try a second */
    char line[600];
    snprintf(line, sizeof line, "queue emails: %s: ZooKeeper denies deferd access as "
             "digest:alice", path);
    CHECK(log_count(&alice, mark, line) == 1);

    CHECK(set_perms(owner, path, ZOO_PERM_ALL) == ZOK);
    CHECK(deferd_next_job(ce, &job, 5000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(job.attempt == 1); /* refused locks left no trace in its attempt count */
    parent(path, bucket, sizeof bucket);
    CHECK(set_perms(owner, bucket, ZOO_PERM_ALL & ~ZOO_PERM_DELETE) == ZOK);
    before = denied(c, "emails");
    CHECK(deferd_ack(ce, id) == DEFERD_ESERVER);
    check_denied_reply(ce, "ack");
    CHECK_CONTAINS(deferd_last_error(ce), "still held");
    CHECK(denied(c, "emails") > before);
    CHECK(zk_job_exists(owner, root, id) == 1);
    CHECK(deferd_touch(ce, id) == DEFERD_OK);
    CHECK(set_perms(owner, bucket, ZOO_PERM_ALL) == ZOK);
    CHECK(deferd_ack(ce, id) == DEFERD_OK);
    CHECK(zk_job_exists(owner, root, id) == 0);
    CHECK(log_count(&alice, mark, "ZooKeeper denies deferd access") == 1);
    deferd_job_clear(&job);
    deferd_close(ce);
}

/* The last attempt's nack moves the job to the dead letters, whose directory the queue's
 * ACL keeps deferd from making: the consumer is told so and still holds the job (not "lease
 * lost", not redelivered); with the ACL back the nack buries it. */
static void dead_letter_denied(zhandle_t *owner, deferd_client *c)
{
    deferd_client *cl = client(&alice);
    char id[DEFERD_ID_SIZE], qpath[256], dead[300];
    deferd_job job = {0};
    snprintf(qpath, sizeof qpath, "%s/queues/limited", root);
    snprintf(dead, sizeof dead, "%s/dead", qpath);
    CHECK(put_job(c, "limited", "dies", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(cl, "limited", 1) == DEFERD_OK);
    CHECK(deferd_next_job(cl, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(zk_exists(owner, dead) == 0);
    CHECK(set_perms(owner, qpath, ZOO_PERM_ALL & ~ZOO_PERM_CREATE) == ZOK);
    CHECK(deferd_nack(cl, id, -1) == DEFERD_ESERVER); /* max_attempts = 1: to the dead */
    check_denied_reply(cl, "nack to the dead letters");
    CHECK(zk_job_exists(owner, root, id) == 1);
    CHECK(zk_exists(owner, dead) == 0);
    CHECK(set_perms(owner, qpath, ZOO_PERM_ALL) == ZOK);
    CHECK(deferd_nack(cl, id, -1) == DEFERD_OK);
    CHECK(zk_job_exists(owner, root, id) == 0);
    struct String_vector kids = {0};
    CHECK(zoo_get_children(owner, dead, 0, &kids) == ZOK && kids.count == 1);
    deallocate_String_vector(&kids);
    deferd_job_clear(&job);
    CHECK(deferd_next_job(cl, &job, 300) == DEFERD_ETIMEDOUT); /* not delivered again */
    deferd_close(cl);
}

/* Directories deferd must make and may not: a bucket of a new 2.8-hour window (jobs/ denies
 * create), a key's hash directory (the queue denies create), the bucket of a reschedule;
 * and a cancel whose bucket denies delete. Each is answered "permission denied by
 * ZooKeeper" and changes nothing; the queue's denial is logged once. */
static void directories_denied(zhandle_t *owner, deferd_client *c)
{
    char id[DEFERD_ID_SIZE], qpath[256], jobs[300], path[512], bucket[512], out[DEFERD_ID_SIZE];
    int64_t later = now_ms() + 3600000, far = now_ms() + 40LL * 86400000;
    CHECK(put_job(c, "b", "first", -1, later, -1, id) == 0); /* jobs/ and its buckets */
    snprintf(qpath, sizeof qpath, "%s/queues/b", root);
    snprintf(jobs, sizeof jobs, "%s/jobs", qpath);
    long mark = log_mark(&alice), before = denied(c, "b");
    CHECK(set_perms(owner, qpath, ZOO_PERM_ALL & ~ZOO_PERM_CREATE) == ZOK);
    CHECK(set_perms(owner, jobs, ZOO_PERM_ALL & ~ZOO_PERM_CREATE) == ZOK);
    deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)far};
    CHECK(deferd_put(c, "b", "far", 3, &o, out, sizeof out) == DEFERD_ESERVER);
    check_denied_reply(c, "put into a new window");
    deferd_put_opts k = {.has_at = 1, .at_ms = (uint64_t)later, .key = "k1"};
    CHECK(deferd_put(c, "b", "keyed", 5, &k, out, sizeof out) == DEFERD_ESERVER);
    check_denied_reply(c, "put with a key");
    CHECK(deferd_reschedule(c, id, NULL, NULL, 1, (uint64_t)far, 0, out, sizeof out) ==
          DEFERD_ESERVER);
    check_denied_reply(c, "reschedule into a new window");
    CHECK(job_path(root, id, path, sizeof path) == 0);
    parent(path, bucket, sizeof bucket);
    CHECK(set_perms(owner, bucket, ZOO_PERM_ALL & ~ZOO_PERM_DELETE) == ZOK);
    CHECK(deferd_cancel(c, id, NULL, NULL, 0, out, sizeof out) == DEFERD_ESERVER);
    check_denied_reply(c, "cancel");
    CHECK(zk_count_jobs(owner, root, "b") == 1);
    CHECK(zk_job_exists(owner, root, id) == 1);
    CHECK(denied(c, "b") >= before + 4);
    char line[400];
    snprintf(line, sizeof line, "queue b: %s/", jobs); /* the new window's bucket, not jobs/ */
    CHECK(log_count(&alice, mark, line) == 1);
    CHECK(log_count(&alice, mark, "ZooKeeper denies deferd access") == 1);

    CHECK(set_perms(owner, bucket, ZOO_PERM_ALL) == ZOK);
    CHECK(set_perms(owner, jobs, ZOO_PERM_ALL) == ZOK);
    CHECK(set_perms(owner, qpath, ZOO_PERM_ALL) == ZOK);
    CHECK(deferd_put(c, "b", "far", 3, &o, out, sizeof out) == DEFERD_OK);
    CHECK(deferd_put(c, "b", "keyed", 5, &k, out, sizeof out) == DEFERD_OK);
    CHECK(deferd_cancel(c, id, NULL, NULL, 0, out, sizeof out) == DEFERD_OK);
    CHECK(zk_count_jobs(owner, root, "b") == 2);
}

/* The pending counters of a queue with max_pending, unreadable: counted as denials every
 * second (the sum is read once a second), and the daemon goes on. */
static void counters_denied(zhandle_t *owner, deferd_client *c)
{
    char counts[300];
    snprintf(counts, sizeof counts, "%s/queues/limited/counts", root);
    long before = denied(c, "limited");
    CHECK(set_perms(owner, counts, ZOO_PERM_ALL & ~ZOO_PERM_READ) == ZOK);
    CHECK(denied_past(c, "limited", before + 1, 5000) >= before + 2);
    CHECK(set_perms(owner, counts, ZOO_PERM_ALL) == ZOK);
    CHECK(deferd_ping(c) == DEFERD_OK);
}

/* A Curator queue ("cur"): a put whose queue directory may not be made, a lock the lock
 * directory refuses (not delivered until allowed), a settle the queue directory refuses
 * (retried once a second; answered once allowed, within its ten tries). */
static void curator_denied(zhandle_t *owner, deferd_client *c)
{
    char id[DEFERD_ID_SIZE], out[DEFERD_ID_SIZE], dir[200], locks[200];
    deferd_put_opts none = {0};
    deferd_job job = {0};
    snprintf(dir, sizeof dir, "%s/cur", root);
    snprintf(locks, sizeof locks, "%s/cur-locks", root);
    CHECK(set_perms(owner, root, ZOO_PERM_ALL & ~ZOO_PERM_CREATE) == ZOK);
    CHECK(deferd_put(c, "cur", "x", 1, &none, out, sizeof out) == DEFERD_ESERVER);
    check_denied_reply(c, "put into a Curator queue");
    CHECK(set_perms(owner, root, ZOO_PERM_ALL) == ZOK);
    CHECK(put_job(c, "cur", "item", 1500, -1, -1, id) == 0);

    deferd_client *cc = client(&alice);
    CHECK(deferd_subscribe(cc, "cur", 1) == DEFERD_OK);
    for (int64_t deadline = now_ms() + 5000; !zk_exists(owner, locks) && now_ms() < deadline;)
        usleep(20000);
    CHECK(set_perms(owner, locks, ZOO_PERM_ALL & ~ZOO_PERM_CREATE) == ZOK);
    long before = denied(c, "cur");
    CHECK(deferd_next_job(cc, &job, 3000) == DEFERD_ETIMEDOUT);
    CHECK(denied(c, "cur") > before);
    CHECK(denied(c, "cur") - before <= 6); /* one try a second, not a tight loop */
    CHECK(set_perms(owner, locks, ZOO_PERM_ALL) == ZOK);
    CHECK(deferd_next_job(cc, &job, 5000) == DEFERD_OK);
    CHECK(job.attempt == 1);

    CHECK(set_perms(owner, dir, ZOO_PERM_ALL & ~ZOO_PERM_DELETE) == ZOK);
    before = denied(c, "cur");
    CHECK(deferd_ack_send(cc, job.id) == DEFERD_OK);
    CHECK(deferd_ack_recv(cc, out, sizeof out, 100) == DEFERD_ETIMEDOUT); /* sent, waiting */
    CHECK(denied_past(c, "cur", before, 5000) > before);
    CHECK(set_perms(owner, dir, ZOO_PERM_ALL) == ZOK);
    CHECK(deferd_ack_recv(cc, out, sizeof out, 5000) == DEFERD_OK);
    struct String_vector kids = {0};
    CHECK(zoo_get_children(owner, dir, 0, &kids) == ZOK && kids.count == 0);
    deallocate_String_vector(&kids);
    deferd_job_clear(&job);
    deferd_close(cc);
}

int main(void)
{
    harness_init("acl", root, sizeof root);
    /* ZooKeeper answers first: credentials sent while it still refuses sessions leave the
     * daemon waiting for their acceptance (a zkstore.c issue of its own) */
    zhandle_t *as_owner = zk_identity("alice:secret");
    CHECK(as_owner != NULL);
    if (!as_owner)
        return check_report("it_acl");
    char cur[2][200], marker[160];
    /* a root at layout 2, alice's own: the denials checked include a lock's (claims take
     * none) */
    snprintf(marker, sizeof marker, "%s/layout", root);
    CHECK(zoo_create(as_owner, root, "", 0, &ZOO_CREATOR_ALL_ACL, 0, NULL, 0) == ZOK);
    CHECK(zoo_create(as_owner, marker, "2", 1, &ZOO_CREATOR_ALL_ACL, 0, NULL, 0) == ZOK);
    snprintf(cur[0], sizeof cur[0], "queue cur.curator_path=%s/cur", root);
    snprintf(cur[1], sizeof cur[1], "queue cur.curator_lock_path=%s/cur-locks", root);
    const char *const as_alice[] = {"zookeeper.auth=digest:alice:secret", "zookeeper.acl=creator",
                                    "queue cur.format=curator-delay", cur[0], cur[1], NULL};
    if (daemon_start(&alice, root, "alice", as_alice) != 0)
        return 1;
    deferd_client *c = client(&alice), *cons = client(&alice);
    char now_id[DEFERD_ID_SIZE], later_id[DEFERD_ID_SIZE];
    int64_t later = now_ms() + 3600000;
    CHECK(put_job(c, "a", "for alice", 0, -1, -1, now_id) == 0);
    CHECK(put_job(c, "a", "kept", -1, later, -1, later_id) == 0);
    if (check_failures) {
        daemon_kill(&alice, SIGTERM);
        return check_report("it_acl");
    }

    /* The jobs' znodes and their buckets carry alice's digest only. */
    char path[512], buf[64];
    CHECK(job_path(root, later_id, path, sizeof path) == 0);
    CHECK(is_creator_acl(as_owner, path, "alice"));
    *strrchr(path, '/') = '\0';
    CHECK(is_creator_acl(as_owner, path, "alice"));
    snprintf(path, sizeof path, "%s/queues/a", root);
    CHECK(is_creator_acl(as_owner, path, "alice"));

    /* Another identity, and none at all: no reading, no deleting. */
    CHECK(job_path(root, later_id, path, sizeof path) == 0);
    const char *const others[] = {"mallory:x", NULL};
    for (int i = 0; i < 2; i++) {
        zhandle_t *zh = zk_identity(others[i]);
        CHECK(zh != NULL);
        if (!zh)
            continue;
        int len = (int)sizeof buf;
        CHECK(zoo_get(zh, path, 0, buf, &len, NULL) == ZNOAUTH);
        CHECK(zoo_delete(zh, path, -1) == ZNOAUTH);
        zookeeper_close(zh);
    }
    CHECK(zk_job_exists(as_owner, root, later_id) == 1);

    /* The first daemon's consumer still gets its job. */
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK);
    deferd_job job = {0};
    CHECK(deferd_next_job(cons, &job, 20000) == DEFERD_OK);
    CHECK_STR(job.id, now_id);
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);

    /* Znodes of alice's that deny alice herself part of what deferd needs. */
    lock_and_ack_denied(as_owner, c);
    dead_letter_denied(as_owner, c);
    directories_denied(as_owner, c);
    counters_denied(as_owner, c);
    curator_denied(as_owner, c);

    /* A daemon with mallory's credentials on the same root: its puts to the queue fail
     * with a clear error, the denial is logged once, and it goes on running. */
    static const char *const as_mallory[] = {"zookeeper.auth=digest:mallory:x", NULL};
    CHECK(daemon_start(&mallory, root, "mallory", as_mallory) == 0);
    long mark = log_mark(&mallory);
    deferd_client *m = client(&mallory);
    deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)later};
    char id[DEFERD_ID_SIZE];
    int64_t deadline = now_ms() + 20000;
    int rc;
    /* until its session is up, UNAVAILABLE says so instead */
    while ((rc = deferd_put(m, "a", "x", 1, &o, id, sizeof id)) == DEFERD_ESERVER &&
           strcmp(deferd_last_error_reason(m), "permission") != 0 && now_ms() < deadline)
        usleep(50000);
    CHECK(rc == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(m), "UNAVAILABLE");
    CHECK_CONTAINS(deferd_last_error(m), "permission denied by ZooKeeper");
    CHECK(deferd_last_error_stored(m) == DEFERD_STORED_NO);
    CHECK(deferd_put(m, "a", "x", 1, &o, id, sizeof id) == DEFERD_ESERVER);
    CHECK_CONTAINS(deferd_last_error(m), "permission denied by ZooKeeper");
    /* its put's first znode in queue a: its put token's directory (libdeferd gives the put
     * a token), else its job's (its pending counter in queue limited) */
    char line[300];
    snprintf(line, sizeof line, "queue a: %s/queues/a/", root);
    CHECK(log_wait(&mallory, mark, line, 5000));
    CHECK(log_count(&mallory, mark, line) == 1);
    CHECK(log_count(&mallory, mark, "ZooKeeper denies deferd access as digest:mallory") >= 1);
    CHECK(deferd_ping(m) == DEFERD_OK);
    CHECK(zk_job_exists(as_owner, root, later_id) == 1);
    CHECK(zk_count_jobs(as_owner, root, "a") == 1);

    deferd_close(m);
    deferd_close(cons);
    deferd_close(c);
    zookeeper_close(as_owner);
    daemon_kill(&mallory, SIGTERM);
    daemon_kill(&alice, SIGTERM);
    return check_report("it_acl");
}
