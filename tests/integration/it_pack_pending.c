/* max_pending with packed puts (issue 20): a packed job counts as pending from its put
 * (packer.c), not again when it is unpacked, and no more once acked. Queue "limited" of the
 * harness (max_pending 5) packs after 6 s in windows of 5 s; two daemons, so that the
 * counts are seen through ZooKeeper's counters too, not only by the daemon that put. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness_pack.h"

#define ND 2
#define LIMIT 5

static struct daemon_proc d[ND];
static char root[128];
static const char *const packing[] = {PACK_TEST_OVERRIDES("limited"), NULL};

/* A far put (and a near one) into limited through D is refused: QUEUE_FULL. */
static void refused(const struct daemon_proc *dp)
{
    deferd_client *c = client(dp);
    char id[DEFERD_ID_SIZE];
    deferd_put_opts far = {.has_at = 1, .at_ms = (uint64_t)pack_window_ahead(9000)};
    CHECK(deferd_put(c, "limited", "x", 1, &far, id, sizeof id) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(c), "QUEUE_FULL");
    CHECK(deferd_put(c, "limited", "x", 1, NULL, id, sizeof id) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(c), "QUEUE_FULL");
    deferd_close(c);
}

/* Every daemon's STATS says pending.limited=N (each reads the others' counters). */
static void pending_is(int n)
{
    char want[64];
    snprintf(want, sizeof want, "pending.limited=%d ", n);
    for (int k = 0; k < ND; k++)
        CHECK(wait_stats(&d[k], want, 1));
}

/* Waits until the daemons' jobs_unpacked add up to N. */
static int unpacked(long n, int ms)
{
    int64_t deadline = now_ms() + ms;
    while (daemon_stat_sum(d, ND, "jobs_unpacked") != n && now_ms() < deadline)
        usleep(50000);
    return daemon_stat_sum(d, ND, "jobs_unpacked") == n;
}

static void limited_packed(zhandle_t *zh)
{
    static struct sent_job s[LIMIT + 1];
    char pack[LAYOUT_PACK_MAX + 1];
    deferd_client *c = client(&d[0]);
    int64_t w = pack_window_ahead(9000);
    pending_is(0);
    for (int i = 0; i < LIMIT; i++) { /* one by one: each counted before the next */
        CHECK(put_sent(c, "limited", NULL, w + i * 100, &s[i]) == 0);
        pack_of_id(s[i].id, pack, sizeof pack);
        CHECK(pack[0] == 'p');
    }
    CHECK(daemon_stat(&d[0], "packed_puts") == LIMIT);
    CHECK(zk_count_jobs(zh, root, "limited") == 0); /* all in packs */
    refused(&d[0]);
    pending_is(LIMIT);
    refused(&d[1]);
    /* unpacked into job znodes: still LIMIT pending, not twice as many */
    CHECK(unpacked(LIMIT, 15000));
    CHECK(zk_count_packs(zh, root, "limited") == 0);
    CHECK(zk_count_jobs(zh, root, "limited") == LIMIT);
    pending_is(LIMIT);
    refused(&d[1]);
    deferd_client *cons = client(&d[1]);
    CHECK(deferd_subscribe(cons, "limited", 8) == DEFERD_OK);
    CHECK(collect_jobs(&cons, 1, s, LIMIT, 20000) == LIMIT);
    deferd_close(cons);
    pending_is(0);
    /* room again: a far put is packed and counted */
    CHECK(put_sent(c, "limited", NULL, pack_window_ahead(9000), &s[LIMIT]) == 0);
    pack_of_id(s[LIMIT].id, pack, sizeof pack);
    CHECK(pack[0] == 'p');
    pending_is(1);
    deferd_close(c);
}

int main(void)
{
    harness_init("pack_pending", root, sizeof root);
    zhandle_t *zh = zk_connect();
    CHECK(pack_marker_set(zh, root, "2") == ZOK);
    if (daemons_start(d, ND, root, packing) != 0)
        return 1;
    for (int k = 0; k < ND; k++)
        CHECK(log_wait(&d[k], 0, "layout version 2", 10000));
    limited_packed(zh);
    for (int k = 0; k < ND; k++)
        daemon_kill(&d[k], SIGTERM);
    zookeeper_close(zh);
    return check_report("pack_pending");
}
