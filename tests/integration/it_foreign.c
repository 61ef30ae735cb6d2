/* Other ZooKeeper clients: a job written by hand following docs/zookeeper-layout.md is
 * delivered; foreign znodes are skipped, never delivered and never deleted. */
#include <stdlib.h>

#include "harness.h"
#include "layout.h"

static struct daemon_proc d;
static char root[128];

static void create_path(zhandle_t *zh, const char *path, const char *data)
{
    CHECK(zk_create_path(zh, path, data) == ZOK);
}

/* A well-named job whose data is over max_payload (4 KiB in the harness), written by another
 * client: logged once, never delivered, left in ZooKeeper unlocked; a normal job due after
 * it is delivered. */
static void oversized(zhandle_t *zh, deferd_client *c, deferd_client *p)
{
    enum { BIG = 100000 };
    static char big[BIG + 1];
    char name[64], path[700], id[DEFERD_ID_SIZE], lock[720];
    uint64_t due = (uint64_t)now_ms() + 500;
    deferd_job job;
    memset(big, 'B', BIG);
    snprintf(name, sizeof name, "%llu-1-toobig", (unsigned long long)due);
    snprintf(path, sizeof path, "%s/queues/a/jobs/%llu/%llu/%llu/%s", root,
             (unsigned long long)(due / 10000000), (unsigned long long)(due / 100000),
             (unsigned long long)(due / 100), name);
    create_path(zh, path, big);
    CHECK(put_job(p, "a", "small", 1000, -1, -1, id) == 0);
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(job.len == 5);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(log_wait(&d, 0, "toobig: its data is 100000 bytes, over max_payload 4096", 5000));
    CHECK(deferd_next_job(c, &job, 1500) == DEFERD_ETIMEDOUT);
    CHECK(log_count(&d, 0, "over max_payload") == 1);
    snprintf(lock, sizeof lock, "%s/lock", path);
    CHECK(zk_exists(zh, path) && !zk_exists(zh, lock));
}

int main(void)
{
    harness_init("foreign", root, sizeof root);
    if (daemon_start(&d, root, "f1", NULL) != 0)
        return 1;
    zhandle_t *zh = zk_connect();
    deferd_client *c = client(&d);
    CHECK(deferd_subscribe(c, "a", 1) == DEFERD_OK);

    /* Exactly what docs/zookeeper-layout.md tells a zkCli or kazoo user to do. */
    uint64_t due = (uint64_t)now_ms() + 800;
    char name[64], path[700], leaf[600], foreign[700];
    snprintf(name, sizeof name, "%llu-5-handmade", (unsigned long long)due);
    snprintf(leaf, sizeof leaf, "%s/queues/a/jobs/%llu/%llu/%llu", root,
             (unsigned long long)(due / 10000000), (unsigned long long)(due / 100000),
             (unsigned long long)(due / 100));
    snprintf(path, sizeof path, "%s/%s", leaf, name);
    /* Foreign nodes first, in the same bucket and beside the buckets. */
    snprintf(foreign, sizeof foreign, "%s/queue-0000000001", leaf);
    create_path(zh, foreign, "curator style");
    snprintf(foreign, sizeof foreign, "%s/%llu-5-wrongbucket", leaf,
             (unsigned long long)(due + 100000));
    create_path(zh, foreign, "due time outside the bucket");
    snprintf(foreign, sizeof foreign, "%s/queues/a/jobs/not-a-bucket", root);
    create_path(zh, foreign, "junk");
    create_path(zh, path, "by hand");

    deferd_job job;
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    char want[128];
    snprintf(want, sizeof want, "a/%s", name);
    CHECK_STR(job.id, want);
    CHECK(job.due_ms == (int64_t)due && job.priority == 5 && job.attempt == 1);
    CHECK(now_ms() >= (int64_t)due);
    CHECK(job.len == 7 && memcmp(job.payload, "by hand", 7) == 0);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(!zk_exists(zh, path));

    /* Nothing else arrives; the foreign nodes are still there; deferd still works. */
    CHECK(deferd_next_job(c, &job, 1500) == DEFERD_ETIMEDOUT);
    CHECK(zk_exists(zh, foreign));
    snprintf(foreign, sizeof foreign, "%s/queue-0000000001", leaf);
    CHECK(zk_exists(zh, foreign));
    char id[DEFERD_ID_SIZE];
    deferd_client *p = client(&d);
    CHECK(put_job(p, "a", "after", 0, -1, -1, id) == 0);
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(deferd_ping(p) == DEFERD_OK);
    oversized(zh, c, p);
    /* Listed again and again (each create and delete in its bucket), said once. */
    snprintf(foreign, sizeof foreign, "ignoring znode %s/queue-0000000001", leaf);
    CHECK(log_count(&d, 0, foreign) == 1);
    deferd_close(p);
    deferd_close(c);
    daemon_kill(&d, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_foreign");
}
