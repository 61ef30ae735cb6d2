/* A rolling upgrade to layout version 2 (issue 20; docs/zookeeper-layout.md, Rolling
 * upgrade): a backlog put as version-1 job znodes (near and far, keyed and not) on a root
 * without the marker; the marker written (the running daemons switch at once), the daemons
 * restarted one after the other; the old jobs stay job znodes and are delivered once, on
 * time, while new far puts go into packs; the marker deleted, new far puts are job znodes
 * again while the packs written before are still unpacked and delivered. Queue "a" packs
 * after 6 s in windows of 5 s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_pack.h"

#define ND 2
#define OLD 6           /* near, near keyed, far x3, far keyed */
#define PACKED 5
#define NEW (PACKED + 2) /* and a far keyed put (its own pack), a far put without the marker */
#define LATE_MAX_MS 3000 /* "on time": the daemons prefetch 2 s ahead */

static struct daemon_proc d[ND];
static char root[128];
static zhandle_t *zh;
static const char *const packing[] = {PACK_TEST_OVERRIDES("a"), NULL};
static struct sent_job s[OLD + NEW];

/* Waits until every daemon logged NEEDLE after MARKS. */
static void all_logged(const long *marks, const char *needle)
{
    for (int k = 0; k < ND; k++)
        CHECK(log_wait(&d[k], marks[k], needle, 10000));
}

static void marks_now(long *marks)
{
    for (int k = 0; k < ND; k++)
        marks[k] = log_mark(&d[k]);
}

/* S[I] is a version-1 job znode, not a packed job. */
static int plain_znode(int i)
{
    char pack[LAYOUT_PACK_MAX + 1];
    pack_of_id(s[i].id, pack, sizeof pack);
    return pack[0] == '\0' && zk_job_exists(zh, root, s[i].id);
}

/* Without the marker: near and far, keyed and not, all version-1 job znodes. */
static void old_backlog(void)
{
    deferd_client *c = client(&d[0]);
    int64_t near = now_ms() + 7500, far = pack_window_ahead(14000);
    CHECK(put_sent(c, "a", NULL, near, &s[0]) == 0);
    CHECK(put_sent(c, "a", "old-near", near + 10, &s[1]) == 0);
    for (int i = 2; i < 5; i++)
        CHECK(put_sent(c, "a", NULL, far + i * 100, &s[i]) == 0);
    CHECK(put_sent(c, "a", "old-far", far + 700, &s[5]) == 0);
    for (int i = 0; i < OLD; i++)
        CHECK(plain_znode(i));
    CHECK(zk_count_packs(zh, root, "a") <= 0);
    deferd_close(c);
}

/* The marker written: the running daemons switch at once; then each restarted in turn
 * reads it at its start. */
static void upgrade(void)
{
    long marks[ND];
    marks_now(marks);
    CHECK(pack_marker_set(zh, root, "2") == ZOK);
    all_logged(marks, "layout version 2");
    for (int k = 0; k < ND; k++) {
        daemon_kill(&d[k], SIGTERM);
        long mark = log_mark(&d[k]);
        CHECK(daemon_restart(&d[k], packing) == 0 && daemon_wait_connected(&d[k], 20000) == 0);
        CHECK(log_wait(&d[k], mark, "layout version 2", 10000));
    }
}

/* New far puts without a key are packed (one pack: pipelined), a keyed one is not; the old
 * far jobs are job znodes still. */
static void new_puts(void)
{
    deferd_client *c = client(&d[1]);
    char pack[LAYOUT_PACK_MAX + 1], other[LAYOUT_PACK_MAX + 1];
    int64_t w = pack_window_ahead(9000);
    CHECK(put_sent_pipelined(c, "a", &s[OLD], PACKED, w + 1000, 200) == 0);
    pack_of_id(s[OLD].id, pack, sizeof pack);
    CHECK(pack[0] == 'p' && !zk_job_exists(zh, root, s[OLD].id));
    for (int i = OLD + 1; i < OLD + PACKED; i++) {
        pack_of_id(s[i].id, other, sizeof other);
        CHECK_STR(other, pack);
    }
    CHECK(put_sent(c, "a", "new-far", w + 2500, &s[OLD + PACKED]) == 0);
    pack_of_id(s[OLD + PACKED].id, other, sizeof other); /* a keyed put: a pack of its own */
    CHECK(other[0] == 'p' && strcmp(other, pack) != 0);
    CHECK(daemon_stat(&d[1], "packed_puts") == PACKED + 1);
    CHECK(daemon_stat(&d[1], "packs_created") == 2);
    CHECK(daemon_stat(&d[0], "packed_puts") == 0);
    for (int i = 0; i < OLD; i++)
        CHECK(plain_znode(i));
    CHECK(zk_count_packs(zh, root, "a") == 2);
    deferd_close(c);
}

/* The marker deleted: no new pack; the one written before is still there (unpacked later). */
static void downgrade(void)
{
    long marks[ND];
    marks_now(marks);
    CHECK(pack_marker_set(zh, root, NULL) == ZOK);
    all_logged(marks, "layout version 1");
    deferd_client *c = client(&d[1]);
    CHECK(put_sent(c, "a", NULL, pack_window_ahead(9000) + 3000, &s[OLD + NEW - 1]) == 0);
    CHECK(plain_znode(OLD + NEW - 1));
    CHECK(daemon_stat(&d[1], "packed_puts") == PACKED + 1);
    CHECK(zk_count_packs(zh, root, "a") == 2);
    deferd_close(c);
}

/* Every job, old and new, delivered once, on time; each pack unpacked by one daemon. */
static void all_delivered(deferd_client **cons)
{
    CHECK(collect_jobs(cons, ND, s, OLD + NEW, 40000) == OLD + NEW);
    for (int i = 0; i < OLD + NEW; i++)
        CHECK(s[i].seen == 1);
    int64_t late = sent_latest(s, OLD + NEW);
    fprintf(stderr, "pack_upgrade: latest delivery %lld ms after its due time\n",
            (long long)late);
    CHECK(late <= LATE_MAX_MS);
    CHECK(zk_count_packs(zh, root, "a") == 0);
    CHECK(daemon_stat_sum(d, ND, "packs_unpacked") == 2);
    CHECK(daemon_stat_sum(d, ND, "jobs_unpacked") == PACKED + 1);
    CHECK(zk_count_jobs(zh, root, "a") == 0);
}

int main(void)
{
    deferd_client *cons[ND];
    harness_init("pack_upgrade", root, sizeof root);
    zh = zk_connect();
    CHECK(pack_root_of_old(zh, root) == ZOK); /* a root deferd 0.2 filled */
    if (daemons_start(d, ND, root, packing) != 0)
        return 1;
    for (int k = 0; k < ND; k++)
        CHECK(log_wait(&d[k], 0, "layout version 1 (no layout marker)", 10000));
    old_backlog();
    upgrade();
    for (int k = 0; k < ND; k++) { /* from now on: the old near jobs are due soon */
        cons[k] = client(&d[k]);
        CHECK(deferd_subscribe(cons[k], "a", 64) == DEFERD_OK);
    }
    new_puts();
    downgrade();
    all_delivered(cons);
    for (int k = 0; k < ND; k++) {
        deferd_close(cons[k]);
        daemon_kill(&d[k], SIGTERM);
    }
    zookeeper_close(zh);
    return check_report("pack_upgrade");
}
