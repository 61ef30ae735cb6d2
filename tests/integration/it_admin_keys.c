/* deferctl's operator commands on keyed jobs, against a real ZooKeeper. The jobs and key
 * nodes are written here by hand, as docs/zookeeper-layout.md (Keys) describes them, so
 * that only deferctl is under test:
 *  - cancel and reschedule by key read the key node and act on the job it names; cancel
 *    deletes the key node, reschedule points it at the new name, both in the same multi;
 *  - by id, a keyed job's key node is kept in step too; a key node naming another job is
 *    left alone; a kept key ("done ...") or a key naming a missing job is "no such job";
 *  - a key node whose version keeps changing never ends up naming a job that is gone;
 *  - a held job (lock and owner children) is refused (exit 4) unless --force, which
 *    deletes the children with the job and its key;
 *  - dead kick takes the key back, or goes back without it when the key was taken;
 *  - put --batch refuses a bad file (exit 2) before it talks to the daemon. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "layout.h"

static struct daemon_proc d1;
static char root[128];
static zhandle_t *zh;

#define QUEUE "retry" /* nobody consumes it here: the hand-made jobs stay put */

static void create(const char *path, const char *data)
{
    CHECK(zk_create_path(zh, path, data) == ZOK);
}

static void key_path(const char *key, char *path)
{
    CHECK(layout_key_path(path, LAYOUT_PATH_MAX, root, QUEUE, key) == 0);
}

/* The key node's data, "" when there is none. */
static void key_data(const char *key, char *data, size_t len)
{
    char path[LAYOUT_PATH_MAX];
    int n = (int)len - 1;
    key_path(key, path);
    if (zoo_get(zh, path, 0, data, &n, NULL) != ZOK || n < 0)
        n = 0;
    data[n] = '\0';
}

/* A pending job due in an hour, named ...-k<key>, and (with_key) its key node. */
static void keyed_job(const char *key, const char *uid, int with_key, char *id)
{
    struct job_name jn = {.due_ms = (uint64_t)now_ms() + 3600 * 1000, .priority = 5};
    char path[LAYOUT_PATH_MAX], data[LAYOUT_ID_MAX + 1];
    snprintf(jn.uid, sizeof jn.uid, "%s", uid);
    snprintf(jn.key, sizeof jn.key, "%s", key);
    CHECK(layout_job_path(path, sizeof path, root, QUEUE, &jn) == 0);
    create(path, "payload");
    CHECK(layout_job_id(id, DEFERD_ID_SIZE, QUEUE, &jn) == 0);
    if (!with_key)
        return;
    CHECK(layout_key_data(data, sizeof data, &jn) == 0);
    key_path(key, path);
    create(path, data);
}

static int job_exists(const char *id)
{
    char path[LAYOUT_PATH_MAX];
    return job_path(root, id, path, sizeof path) == 0 && zk_exists(zh, path);
}

static int ctl(const char *args, char *out, size_t len)
{
    return run_deferctl(&d1, args, out, len);
}

static void cancel_by_key(void)
{
    char id[DEFERD_ID_SIZE], out[4096], data[256];
    keyed_job("order-17", "c1", 1, id);
    CHECK(ctl("cancel --key order-17 " QUEUE " --json", out, sizeof out) == 0);
    CHECK_CONTAINS(out, id);
    CHECK_CONTAINS(out, "\"result\":\"cancelled\"");
    CHECK(!job_exists(id));
    key_data("order-17", data, sizeof data);
    CHECK_STR(data, "");
    CHECK(ctl("cancel --key order-17 " QUEUE, out, sizeof out) == 3);
    CHECK(ctl("cancel --key -bad " QUEUE, out, sizeof out) == 1); /* not a key at all */
    CHECK(ctl("cancel --key x nosuchqueue", out, sizeof out) == 1);
    /* by id: the key node goes in the same multi */
    keyed_job("order-18", "c2", 1, id);
    char args[512];
    snprintf(args, sizeof args, "cancel %s", id);
    CHECK(ctl(args, out, sizeof out) == 0);
    CHECK(!job_exists(id));
    key_data("order-18", data, sizeof data);
    CHECK_STR(data, "");
}

/* Kept keys and key nodes naming missing jobs are no such job; a key node that names
 * another job is not the job's to delete. */
static void stale_keys(void)
{
    char id[DEFERD_ID_SIZE], other[DEFERD_ID_SIZE], out[4096], data[256], path[LAYOUT_PATH_MAX];
    key_path("kept", path);
    create(path, "done 1763769605123 1763769605000-5-abc-kkept");
    CHECK(ctl("cancel --key kept " QUEUE, out, sizeof out) == 3);
    CHECK(ctl("reschedule --key kept " QUEUE " --delay 1m", out, sizeof out) == 3);
    CHECK(zk_exists(zh, path));
    key_path("ghost", path);
    create(path, "1763769605000-5-gone-kghost");
    CHECK(ctl("cancel --key ghost " QUEUE, out, sizeof out) == 3);
    CHECK(ctl("reschedule --key ghost " QUEUE " --delay 1m", out, sizeof out) == 3);
    CHECK(zk_exists(zh, path));
    keyed_job("shared", "s1", 1, other);
    keyed_job("shared", "s2", 0, id); /* named for the key, but the key names s1 */
    char args[512];
    snprintf(args, sizeof args, "cancel %s", id);
    CHECK(ctl(args, out, sizeof out) == 0);
    key_data("shared", data, sizeof data);
    CHECK_STR(data, strchr(other, '/') + 1);
    CHECK(ctl("cancel --key shared " QUEUE, out, sizeof out) == 0);
    CHECK(!job_exists(other));
}

static void reschedule_by_key(void)
{
    char id[DEFERD_ID_SIZE], moved[DEFERD_ID_SIZE], again[DEFERD_ID_SIZE], out[4096],
        data[256], args[512];
    keyed_job("user:42@x", "r1", 1, id);
    CHECK(ctl("reschedule --key user:42@x " QUEUE " --delay 2h --json", out, sizeof out) == 0);
    char *nid = strstr(out, "\"new_id\":\"");
    CHECK(nid && sscanf(nid + 10, "%255[^\"]", moved) == 1);
    CHECK_CONTAINS(out, id); /* "id": the job the key named */
    CHECK(strcmp(moved, id) != 0 && !job_exists(id) && job_exists(moved));
    CHECK(strstr(moved, "-kuser:42@x") != NULL);
    key_data("user:42@x", data, sizeof data);
    CHECK_STR(data, strchr(moved, '/') + 1);
    /* by id: repointed again */
    snprintf(args, sizeof args, "reschedule %s --delay 3h", moved);
    CHECK(ctl(args, out, sizeof out) == 0);
    CHECK(sscanf(out, "%255s", again) == 1 && job_exists(again) && !job_exists(moved));
    key_data("user:42@x", data, sizeof data);
    CHECK_STR(data, strchr(again, '/') + 1);
    CHECK(ctl("cancel --key user:42@x " QUEUE, out, sizeof out) == 0 && !job_exists(again));
}

/* Bumps the key node's version (same data, compare-and-set) every 20 ms while deferctl
 * works on it: a multi that fails on the version is tried again, and nothing ever leaves
 * the key naming a job that is gone. */
struct toucher {
    char path[LAYOUT_PATH_MAX];
    volatile int stop;
    int touches;
};

static void *touch_key(void *arg)
{
    struct toucher *t = arg;
    while (!t->stop) {
        char data[256];
        int n = sizeof data;
        struct Stat st;
        if (zoo_get(zh, t->path, 0, data, &n, &st) == ZOK &&
            zoo_set(zh, t->path, data, n, st.version) == ZOK)
            t->touches++;
        usleep(20000);
    }
    return NULL;
}

static void version_conflicts(void)
{
    char id[DEFERD_ID_SIZE], out[4096], data[256];
    struct toucher t = {.stop = 0};
    pthread_t th;
    keyed_job("busy", "v1", 1, id);
    key_path("busy", t.path);
    CHECK(pthread_create(&th, NULL, touch_key, &t) == 0);
    int ok = 0, gave_up = 0;
    for (int i = 0; i < 6; i++) {
        int rc = ctl("reschedule --key busy " QUEUE " --delay 90m", out, sizeof out);
        ok += rc == 0;
        gave_up += rc == 1;
    }
    t.stop = 1;
    pthread_join(th, NULL);
    printf("key node touched %d times; reschedules done %d, given up %d\n", t.touches, ok,
           gave_up);
    CHECK(ok + gave_up == 6 && ok > 0);
    key_data("busy", data, sizeof data);
    char named[DEFERD_ID_SIZE + 16];
    snprintf(named, sizeof named, QUEUE "/%s", data);
    CHECK(job_exists(named)); /* whatever won, the key names the job that exists */
    CHECK(ctl("cancel --key busy " QUEUE, out, sizeof out) == 0 && !job_exists(named));
}

/* A held job: lock and owner-<session>-<seq> children, as a daemon makes them. */
static void hold(const char *id)
{
    char path[LAYOUT_PATH_MAX], child[LAYOUT_PATH_MAX + 64];
    CHECK(job_path(root, id, path, sizeof path) == 0);
    snprintf(child, sizeof child, "%s/lock", path);
    create(child, "host:1");
    snprintf(child, sizeof child, "%s/owner-1234abcd-0000000001", path);
    create(child, NULL);
}

static void force(void)
{
    char id[DEFERD_ID_SIZE], out[4096], data[256], args[512];
    keyed_job("held", "f1", 1, id);
    hold(id);
    CHECK(ctl("cancel --key held " QUEUE, out, sizeof out) == 4);
    snprintf(args, sizeof args, "cancel %s", id);
    CHECK(ctl(args, out, sizeof out) == 4);
    CHECK(ctl("reschedule --key held " QUEUE " --delay 1m", out, sizeof out) == 4);
    CHECK(job_exists(id));
    CHECK(ctl("cancel --force --key held " QUEUE, out, sizeof out) == 0);
    CHECK_CONTAINS(out, id);
    CHECK(!job_exists(id));
    key_data("held", data, sizeof data);
    CHECK_STR(data, "");
    /* by id, without a key */
    struct job_name jn = {.due_ms = (uint64_t)now_ms() + 3600 * 1000, .priority = 5,
                          .uid = "f2"};
    char path[LAYOUT_PATH_MAX];
    CHECK(layout_job_path(path, sizeof path, root, QUEUE, &jn) == 0);
    create(path, "x");
    CHECK(layout_job_id(id, sizeof id, QUEUE, &jn) == 0);
    hold(id);
    snprintf(args, sizeof args, "cancel --force %s", id);
    CHECK(ctl(args, out, sizeof out) == 0);
    CHECK(!job_exists(id));
}

/* A dead job named ...-a3-k<key>. */
static void dead_job(const char *key, const char *uid, char *id)
{
    struct job_name jn = {.due_ms = (uint64_t)now_ms() - 60000, .priority = 5,
                          .prior_attempts = 3};
    char path[LAYOUT_PATH_MAX];
    snprintf(jn.uid, sizeof jn.uid, "%s", uid);
    snprintf(jn.key, sizeof jn.key, "%s", key);
    CHECK(layout_dead_path(path, sizeof path, root, QUEUE, &jn) == 0);
    create(path, "dead");
    CHECK(layout_job_id(id, DEFERD_ID_SIZE, QUEUE, &jn) == 0);
}

static void kick(void)
{
    char id[DEFERD_ID_SIZE], kicked[DEFERD_ID_SIZE], out[4096], data[256], args[512];
    dead_job("again", "d1", id);
    snprintf(args, sizeof args, "dead kick %s", id);
    CHECK(ctl(args, out, sizeof out) == 0);
    CHECK(sscanf(out, "%255s", kicked) == 1 && job_exists(kicked));
    CHECK(strstr(kicked, "-kagain") != NULL);
    char uid[DEFERD_UID_SIZE];
    CHECK(deferd_job_uid(kicked, uid, sizeof uid) == DEFERD_OK);
    CHECK_STR(uid, "d1"); /* the same job, given another run: its uid kept */
    key_data("again", data, sizeof data);
    CHECK_STR(data, strchr(kicked, '/') + 1);
    /* the key is taken (by the job just kicked): the second goes back without it */
    dead_job("again", "d2", id);
    snprintf(args, sizeof args, "dead kick %s 2>&1", id);
    CHECK(ctl(args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "without its key");
    char plain[DEFERD_ID_SIZE] = "";
    const char *at = strstr(out, "\n" QUEUE "/"); /* stderr's note came first, unbuffered */
    CHECK(at && sscanf(at + 1, "%255s", plain) == 1 && job_exists(plain) && !strstr(plain, "-k"));
    key_data("again", data, sizeof data);
    CHECK_STR(data, strchr(kicked, '/') + 1);
    snprintf(args, sizeof args, "cancel %s", plain);
    CHECK(ctl(args, out, sizeof out) == 0);
    CHECK(ctl("cancel --key again " QUEUE, out, sizeof out) == 0 && !job_exists(kicked));
}

static void bad_batch_file(void)
{
    char out[4096];
    CHECK(ctl("put --batch /nonexistent/file", out, sizeof out) == 1);
    CHECK(ctl("put --batch - 2>&1 <<'EOF'\nqueue=a payload=fine\n\nqueue=a prio=x payload=y\nEOF",
              out, sizeof out) == 2);
    CHECK_CONTAINS(out, "<stdin>:3:");
    CHECK(ctl("put --batch - --queue a </dev/null", out, sizeof out) == 2);
    CHECK(ctl("put --key 'no way' --queue a x", out, sizeof out) == 2);
}

int main(void)
{
    harness_init("admin_keys", root, sizeof root);
    if (daemon_start(&d1, root, "k1", NULL) != 0)
        return 1;
    zh = zk_connect();
    cancel_by_key();
    stale_keys();
    reschedule_by_key();
    version_conflicts();
    force();
    kick();
    bad_batch_file();
    CHECK(zk_count_jobs(zh, root, QUEUE) == 0);
    daemon_kill(&d1, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_admin_keys");
}
