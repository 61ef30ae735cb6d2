/* What an ack does to a key (docs/protocol.md, docs/zookeeper-layout.md, Keys): a key is
 * free again once its job is acked, unless the queue keeps it (key_retention); a stale key
 * (its job deleted by hand, or no job name) is taken over; a job acked with a successor of
 * its own key hands the key on (or, kept, the successor is a duplicate). */
#include <stdlib.h>

#include "harness_keys.h"
#include "layout.h"

static struct daemon_proc d[3];
static char root[128];
static zhandle_t *zh;

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

int main(void)
{
    if (keys_start("keys_ack", d, root, sizeof root, &zh) != 0)
        return 1;
    free_after_ack();
    self_successor();
    return keys_finish(d, zh, "it_keys_ack");
}
