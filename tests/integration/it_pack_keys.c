/* Packs with keys, batches and follow-ups (layout version 2): a keyed far put goes into a
 * pack and its key node names "p.../name"; the same key again is its duplicate; a BATCH's
 * far jobs share one pack created in the batch's own transaction (duplicates left out of
 * it); the far follow-up of ACK then= is packed too. Cancel and reschedule by key of a
 * packed job cost 3 ZooKeeper round trips each (key, pack, one multi), counted by the
 * daemon's STATS; deferctl changes them by key too. Unpacking rewrites each key node to the job's new name in the same
 * transaction, and a key node deleted by hand does not stop the unpacking. Every job is
 * delivered once, never early. Queue "a": pack_after 6 s, windows of 5 s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "harness_pack.h"
#include "layout.h"
#include "pack.h"

static struct daemon_proc d;
static char root[128];
static const char *const packing[] = {PACK_TEST_OVERRIDES("a"), NULL};

static int pack_count(zhandle_t *zh, const char *pack) { return pack_jobs(zh, root, "a", pack); }

static int pack_unpacked(zhandle_t *zh, const char *pack, int ms)
{
    return pack_gone_within(zh, root, "a", pack, ms);
}

/* The key node of KEY names ID (an id is "a/" + the key node's data). */
static int key_names(zhandle_t *zh, const char *key, const char *id)
{
    char data[DEFERD_ID_SIZE];
    return zk_key_data(zh, root, "a", key, data, sizeof data) >= 0 &&
           strncmp(id, "a/", 2) == 0 && strcmp(data, id + 2) == 0;
}

static int key_gone(zhandle_t *zh, const char *key)
{
    char data[DEFERD_ID_SIZE];
    return zk_key_data(zh, root, "a", key, data, sizeof data) < 0;
}

static void far_item(deferd_put_item *it, const char *payload, const char *key, int64_t at)
{
    memset(it, 0, sizeof *it);
    it->queue = "a";
    it->payload = payload;
    it->len = strlen(payload);
    it->opts = (deferd_put_opts){.has_at = 1, .at_ms = (uint64_t)at, .key = key};
}

/* One CANCEL or RESCHEDULE by key: the round trips it cost, from STATS. */
struct trips {
    long changes, trips;
};

static void trips_mark(struct trips *t)
{
    t->changes = daemon_stat(&d, "changes");
    t->trips = daemon_stat(&d, "change_round_trips");
}

static long trips_since(const struct trips *t)
{
    long changes = daemon_stat(&d, "changes"), trips = daemon_stat(&d, "change_round_trips");
    if (changes != t->changes + 1) {
        fprintf(stderr, "expected one change since the mark, STATS says %ld\n",
                changes - t->changes);
        return -1;
    }
    return trips - t->trips;
}

static struct sent_job s[8]; /* every job that must be delivered */
static int ns;

static void keep(const char *id, int64_t at)
{
    memset(&s[ns], 0, sizeof s[ns]);
    snprintf(s[ns].id, sizeof s[ns].id, "%s", id);
    s[ns++].at = at;
}

static void keyed_puts_and_batch(zhandle_t *zh, char *pack1, char *pack2)
{
    deferd_client *prod = client(&d);
    deferd_put_item one, dup, items[6];
    int64_t w = pack_window_ahead(9000), near = now_ms() + 4000;
    far_item(&one, "one", "k1", w + 100);
    CHECK(put_keyed(prod, &one) == 0 && !one.duplicate);
    pack_of_id(one.id, pack1, LAYOUT_PACK_MAX + 1);
    CHECK(pack1[0] == 'p' && pack_count(zh, pack1) == 1 && key_names(zh, "k1", one.id));
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    far_item(&dup, "again", "k1", w + 200);
    CHECK(put_keyed(prod, &dup) == 0 && dup.duplicate);
    CHECK_STR(dup.id, one.id);
    keep(one.id, w + 100);

    far_item(&items[0], "b0", "k2", w + 300);
    far_item(&items[1], "b1", "k3", w + 400);
    far_item(&items[2], "b2", NULL, w + 500);
    far_item(&items[3], "b3", "k1", w + 600);     /* the packed job's key: a duplicate */
    far_item(&items[4], "b4", NULL, near);        /* near: a job znode */
    far_item(&items[5], "b5", "k2", w + 700);     /* k2 again in the batch */
    size_t stored = 0;
    CHECK(deferd_put_batch(prod, items, 6, NULL, &stored) == DEFERD_OK && stored == 6);
    pack_of_id(items[0].id, pack2, LAYOUT_PACK_MAX + 1);
    CHECK(pack2[0] == 'p' && strcmp(pack2, pack1) != 0 && pack_count(zh, pack2) == 3);
    char p[LAYOUT_PACK_MAX + 1];
    pack_of_id(items[2].id, p, sizeof p);
    CHECK_STR(p, pack2);
    CHECK(items[3].duplicate && strcmp(items[3].id, one.id) == 0);
    CHECK(items[5].duplicate && strcmp(items[5].id, items[0].id) == 0);
    CHECK(!items[0].duplicate && !items[4].duplicate && zk_job_exists(zh, root, items[4].id));
    CHECK(key_names(zh, "k2", items[0].id) && key_names(zh, "k3", items[1].id));

    struct trips t;
    char id[DEFERD_ID_SIZE];
    trips_mark(&t);
    CHECK(deferd_cancel(prod, NULL, "a", "k2", 0, id, sizeof id) == DEFERD_OK);
    long cancel_trips = trips_since(&t);
    CHECK_STR(id, items[0].id);
    CHECK(key_gone(zh, "k2") && pack_count(zh, pack2) == 2);
    trips_mark(&t);
    int64_t moved = now_ms() + 5000;
    CHECK(deferd_reschedule(prod, NULL, "a", "k3", 1, (uint64_t)moved, 0, id, sizeof id) ==
          DEFERD_OK);
    long resched_trips = trips_since(&t);
    printf("round trips of a packed job by key: cancel %ld, reschedule %ld\n", cancel_trips,
           resched_trips);
    CHECK(cancel_trips >= 1 && cancel_trips <= 3 && resched_trips >= 1 && resched_trips <= 3);
    CHECK(zk_job_exists(zh, root, id) && key_names(zh, "k3", id) && pack_count(zh, pack2) == 1);
    keep(id, moved);
    keep(items[2].id, w + 500);
    keep(items[4].id, near);
    deferd_close(prod);
}

/* The packs are unpacked: k1's key node now names the job's znode; every job comes once. */
static void unpacked_keys_delivered(zhandle_t *zh, const char *pack1, const char *pack2)
{
    CHECK(pack_unpacked(zh, pack1, 20000) && pack_unpacked(zh, pack2, 20000));
    char data[DEFERD_ID_SIZE], id[DEFERD_ID_SIZE + 2];
    CHECK(zk_key_data(zh, root, "a", "k1", data, sizeof data) > 0 && data[0] != 'p');
    snprintf(id, sizeof id, "a/%s", data);
    CHECK(zk_job_exists(zh, root, id));
    deferd_client *cons = client(&d);
    CHECK(deferd_subscribe(cons, "a", 4) == DEFERD_OK);
    CHECK(collect_jobs(&cons, 1, s, ns, 30000) == ns);
    for (int i = 0; i < ns; i++)
        CHECK(s[i].seen == 1);
    CHECK(key_gone(zh, "k1") && key_gone(zh, "k3") && zk_count_jobs(zh, root, "a") == 0);
    deferd_close(cons);
}

/* ACK then= with a far keyed follow-up: the follow-up is packed in the ack's transaction. */
static void follow_up_packed(zhandle_t *zh)
{
    deferd_client *prod = client(&d), *cons = client(&d);
    char id[DEFERD_ID_SIZE], pack[LAYOUT_PACK_MAX + 1];
    deferd_job job;
    deferd_put_item next;
    CHECK(put_job(prod, "a", "first", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK);
    CHECK(next_job_push(cons, &job, 10000) == 0);
    far_item(&next, "next", "k4", pack_window_ahead(9000) + 10);
    CHECK(deferd_ack_then(cons, job.id, &next, 1) == DEFERD_OK && !next.duplicate);
    deferd_job_clear(&job);
    pack_of_id(next.id, pack, sizeof pack);
    CHECK(pack[0] == 'p' && pack_count(zh, pack) == 1 && key_names(zh, "k4", next.id));
    CHECK(!zk_job_exists(zh, root, id));
    CHECK(deferd_cancel(prod, NULL, "a", "k4", 0, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, next.id);
    CHECK(key_gone(zh, "k4") && pack_count(zh, pack) < 0);
    deferd_close(cons);
    deferd_close(prod);
}

/* deferctl follows a key node into a pack as the daemon does: it reschedules the packed
 * job by key (the key node then names the job's znode), then cancels it by key. */
static void deferctl_by_key(zhandle_t *zh)
{
    deferd_client *prod = client(&d);
    deferd_put_item it;
    char pack[LAYOUT_PACK_MAX + 1], out[2048], data[DEFERD_ID_SIZE];
    far_item(&it, "ctl", "k6", pack_window_ahead(9000) + 30);
    CHECK(put_keyed(prod, &it) == 0);
    pack_of_id(it.id, pack, sizeof pack);
    CHECK(pack_count(zh, pack) == 1);
    CHECK(run_deferctl(&d, "reschedule --key k6 a --delay 2h", out, sizeof out) == 0);
    CHECK(pack_count(zh, pack) < 0);
    CHECK(zk_key_data(zh, root, "a", "k6", data, sizeof data) > 0 && data[0] != 'p' &&
          strstr(out, data) != NULL);
    CHECK(run_deferctl(&d, "cancel --key k6 a", out, sizeof out) == 0);
    CHECK(key_gone(zh, "k6") && zk_count_jobs(zh, root, "a") == 0);
    deferd_close(prod);
}

/* A key node deleted by hand: the unpacking says so and creates the job without it. */
static void missing_key_node(zhandle_t *zh)
{
    deferd_client *prod = client(&d), *cons = client(&d);
    deferd_put_item it;
    char path[LAYOUT_PATH_MAX], pack[LAYOUT_PACK_MAX + 1];
    int64_t at = pack_window_ahead(9000) + 20;
    long mark = log_mark(&d);
    far_item(&it, "lonely", "k5", at);
    CHECK(put_keyed(prod, &it) == 0);
    pack_of_id(it.id, pack, sizeof pack);
    CHECK(layout_key_path(path, sizeof path, root, "a", "k5") == 0 &&
          zoo_delete(zh, path, -1) == ZOK);
    CHECK(pack_unpacked(zh, pack, 20000));
    CHECK(log_count(&d, mark, "is missing; job") == 1);
    ns = 0;
    keep(it.id, at);
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK);
    CHECK(collect_jobs(&cons, 1, s, ns, 20000) == 1 && s[0].seen == 1);
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    deferd_close(cons);
    deferd_close(prod);
}

int main(void)
{
    harness_init("pack_keys", root, sizeof root);
    zhandle_t *zh = zk_connect();
    CHECK(pack_marker_set(zh, root, "2") == ZOK);
    if (daemon_start(&d, root, "d0", packing) != 0 || daemon_wait_connected(&d, 20000) != 0) {
        fprintf(stderr, "deferd did not start\n");
        return 1;
    }
    CHECK(log_wait(&d, 0, "layout version 2", 10000));
    char pack1[LAYOUT_PACK_MAX + 1], pack2[LAYOUT_PACK_MAX + 1];
    keyed_puts_and_batch(zh, pack1, pack2);
    unpacked_keys_delivered(zh, pack1, pack2);
    follow_up_packed(zh);
    deferctl_by_key(zh);
    missing_key_node(zh);
    zookeeper_close(zh);
    daemon_kill(&d, SIGTERM);
    return check_report("pack_keys");
}
