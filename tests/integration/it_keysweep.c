/* Kept keys (key_retention) are swept: once older than the queue's retention an acked job's
 * key node is deleted (keysweep.c), and the key is free for a new job; a younger one, a live
 * job's key and foreign znodes under keys/ are left alone, however many passes go by.
 * Queue "kept" keeps keys 2 s (swept every 5 s), "mid" 30 s (every 7.5 s), "never" none. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "layout.h"

#define KEPT 20
#define MID 5

static struct daemon_proc d;
static char root[128];

static void put_and_ack(deferd_client *c, const char *queue, const char *prefix, int n)
{
    char key[32];
    for (int i = 0; i < n; i++) {
        deferd_put_item it;
        snprintf(key, sizeof key, "%s%d", prefix, i);
        keyed_item(&it, queue, "x", key, -1);
        CHECK(put_keyed(c, &it) == 0 && !it.duplicate);
    }
    CHECK(deferd_subscribe(c, queue, 64) == DEFERD_OK);
    for (int i = 0; i < n; i++) {
        deferd_job job;
        if (deferd_next_job(c, &job, 10000) != DEFERD_OK) {
            CHECK(!"a keyed job was not delivered");
            return;
        }
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
}

/* Key nodes of QUEUE named PREFIX0 .. PREFIX<n-1> that exist now. */
static int keys_left(zhandle_t *zh, const char *queue, const char *prefix, int n)
{
    char key[32], data[300];
    int left = 0;
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s%d", prefix, i);
        left += zk_key_data(zh, root, queue, key, data, sizeof data) >= 0;
    }
    return left;
}

static int wait_keys_left(zhandle_t *zh, const char *queue, const char *prefix, int n,
                          int want, int ms)
{
    int64_t deadline = now_ms() + ms;
    int left;
    while ((left = keys_left(zh, queue, prefix, n)) != want && now_ms() < deadline)
        usleep(50000);
    return left;
}

/* Foreign znodes under keys/ that look like kept keys long expired, and would be deleted
 * if the sweep trusted data or directory alone. */
static const char *const foreign[][2] = {
    {"foreign-a", "done 1 1-2-abc-kother"},     /* names another key */
    {"foreign-b", "garbage"},                   /* no kept key at all */
    {"foreign-c", "1-2-abc-kforeign-c"},        /* a live job's key form, job absent */
};

static void plant_foreign(zhandle_t *zh, char paths[][LAYOUT_PATH_MAX], int *n)
{
    *n = 0;
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        CHECK(layout_key_path(paths[*n], LAYOUT_PATH_MAX, root, "kept", foreign[i][0]) == 0);
        char dir[LAYOUT_PATH_MAX];
        memcpy(dir, paths[*n], sizeof dir);
        *strrchr(dir, '/') = '\0';
        zoo_create(zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        CHECK(zoo_create(zh, paths[*n], foreign[i][1], (int)strlen(foreign[i][1]),
                         &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
        (*n)++;
    }
    /* a kept key naming its own key, in a hash directory, but not its key's */
    CHECK(layout_key_path(paths[*n], LAYOUT_PATH_MAX, root, "kept", "wrongdir") == 0);
    char *hex = strrchr(paths[*n], '/') - 3, dir[LAYOUT_PATH_MAX];
    hex[2] = hex[2] == '0' ? '1' : '0';
    memcpy(dir, paths[*n], sizeof dir);
    *strrchr(dir, '/') = '\0';
    zoo_create(zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CHECK(zoo_create(zh, paths[*n], "done 1 1-2-abc-kwrongdir", 24, &ZOO_OPEN_ACL_UNSAFE, 0,
                     NULL, 0) == ZOK);
    (*n)++;
    /* a kept key of the right form, right hash, in a directory that is no hash directory */
    snprintf(paths[*n], LAYOUT_PATH_MAX, "%s/queues/kept/keys/zzz", root);
    CHECK(zoo_create(zh, paths[*n], NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
    snprintf(paths[*n], LAYOUT_PATH_MAX, "%s/queues/kept/keys/zzz/k0", root);
    CHECK(zoo_create(zh, paths[*n], "done 1 1-2-abc-kk0", 18, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                     0) == ZOK);
    (*n)++;
}

int main(void)
{
    harness_init("keysweep", root, sizeof root);
    static const char *const queues[] = {"queue kept.key_retention=2s",
                                         "queue mid.key_retention=30s", "queue never.ttr=60s",
                                         NULL};
    if (daemon_start(&d, root, "k1", queues) != 0)
        return 1;
    zhandle_t *zh = zk_connect();
    deferd_client *c = client(&d), *m = client(&d), *n = client(&d);
    deferd_put_item live;
    keyed_item(&live, "kept", "later", "live", 3600000);
    CHECK(put_keyed(c, &live) == 0);
    put_and_ack(c, "kept", "k", KEPT);
    char paths[8][LAYOUT_PATH_MAX], data[300], last[32];
    int nforeign = 0;
    plant_foreign(zh, paths, &nforeign);
    put_and_ack(m, "mid", "m", MID);
    long mark = log_mark(&d);
    /* within mid's 30 s (kept's 2 s may be over on a slow machine): a key is kept at the
     * ack as "done ...", and taken */
    CHECK(zk_key_data(zh, root, "mid", "m0", data, sizeof data) > 0 &&
          strncmp(data, "done ", 5) == 0);
    deferd_put_item again;
    keyed_item(&again, "mid", "again", "m0", 3600000);
    CHECK(put_keyed(c, &again) == 0 && again.duplicate);
    snprintf(last, sizeof last, "k%d", KEPT - 1);
    put_and_ack(n, "never", "n", 3);
    CHECK(keys_left(zh, "never", "n", 3) == 0); /* no retention: freed at the ack */

    /* 2 s retention, passes every 5 s, the first within 5 s of the start */
    CHECK(wait_keys_left(zh, "kept", "k", KEPT, 0, 30000) == 0);
    CHECK(wait_queue_stat(c, "kept", "keys_expired", KEPT, 10000)); /* counted at the pass's end */
    /* mid: two passes ended after its acks (passes go one at a time, so the second also
     * began after them), well within its 30 s, and its keys are all there */
    int64_t deadline = now_ms() + 25000;
    while (log_count(&d, mark, "queue mid: kept keys swept:") < 2 && now_ms() < deadline)
        usleep(50000);
    CHECK(log_count(&d, mark, "queue mid: kept keys swept:") >= 2);
    CHECK(keys_left(zh, "mid", "m", MID) == MID);
    /* the key is free again: a new job, not a duplicate */
    keyed_item(&again, "kept", "again", last, 3600000);
    CHECK(put_keyed(c, &again) == 0 && !again.duplicate);
    /* and mid's go once 30 s have passed */
    CHECK(wait_keys_left(zh, "mid", "m", MID, 0, 45000) == 0);
    CHECK(wait_queue_stat(c, "mid", "keys_expired", MID, 10000));
    /* many passes of kept later: the live job's key, the new job's and the foreign znodes
     * are all still there */
    CHECK(zk_key_data(zh, root, "kept", "live", data, sizeof data) > 0 && data[0] != 'd');
    CHECK(zk_key_data(zh, root, "kept", last, data, sizeof data) > 0 && data[0] != 'd');
    for (int i = 0; i < nforeign; i++)
        CHECK(zk_exists(zh, paths[i]));
    CHECK(queue_stat(c, "kept", "keys_expired") == KEPT);
    deferd_close(c);
    deferd_close(m);
    deferd_close(n);
    zookeeper_close(zh);
    daemon_kill(&d, SIGTERM);
    return check_report("it_keysweep");
}
