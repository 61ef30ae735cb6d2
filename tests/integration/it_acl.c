/* [zookeeper] auth and acl with a second ZooKeeper identity: a daemon with acl = creator
 * makes znodes only its own identity may touch; another identity gets ZNOAUTH; a second
 * daemon with other credentials gets a clear error for that queue and keeps running. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc alice, mallory;
static char root[128];

/* A session of ours with digest credentials USER_PASS ("user:password"), or none. */
static zhandle_t *identity(const char *user_pass)
{
    zhandle_t *zh = zk_connect();
    if (zh && user_pass) /* answered before the calls that follow: one session, in order */
        CHECK(zoo_add_auth(zh, "digest", user_pass, (int)strlen(user_pass), NULL, NULL) == ZOK);
    return zh;
}

static void check_creator_acl(zhandle_t *zh, const char *path)
{
    struct ACL_vector acl;
    struct Stat st;
    int rc = zoo_get_acl(zh, path, &acl, &st);
    CHECK(rc == ZOK);
    if (rc != ZOK) {
        fprintf(stderr, "get_acl %s: %s\n", path, zerror(rc));
        return;
    }
    CHECK(acl.count == 1);
    if (acl.count == 1) {
        CHECK_STR(acl.data[0].id.scheme, "digest");
        CHECK(strncmp(acl.data[0].id.id, "alice:", 6) == 0);
        CHECK(acl.data[0].perms == ZOO_PERM_ALL);
    }
    deallocate_ACL_vector(&acl);
}

int main(void)
{
    harness_init("acl", root, sizeof root);
    /* ZooKeeper answers first: credentials sent while it still refuses sessions leave the
     * daemon waiting for their acceptance (a zkstore.c issue of its own) */
    zhandle_t *as_owner = identity("alice:secret");
    static const char *const as_alice[] = {"zookeeper.auth=digest:alice:secret",
                                           "zookeeper.acl=creator", NULL};
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
    check_creator_acl(as_owner, path);
    *strrchr(path, '/') = '\0';
    check_creator_acl(as_owner, path);
    snprintf(path, sizeof path, "%s/queues/a", root);
    check_creator_acl(as_owner, path);

    /* Another identity, and none at all: no reading, no deleting. */
    CHECK(job_path(root, later_id, path, sizeof path) == 0);
    const char *const others[] = {"mallory:x", NULL};
    for (int i = 0; i < 2; i++) {
        zhandle_t *zh = identity(others[i]);
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
           !strstr(deferd_last_error(m), "permission denied") && now_ms() < deadline)
        usleep(50000);
    CHECK(rc == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(m), "UNAVAILABLE");
    CHECK_CONTAINS(deferd_last_error(m), "permission denied by ZooKeeper");
    CHECK(deferd_put(m, "a", "x", 1, &o, id, sizeof id) == DEFERD_ESERVER);
    CHECK_CONTAINS(deferd_last_error(m), "permission denied by ZooKeeper");
    CHECK(log_wait(&mallory, mark, "ZooKeeper denies deferd access", 5000));
    CHECK(log_count(&mallory, mark, "ZooKeeper denies deferd access") == 1);
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
