/* A crash in the middle of unpacking (issue 20): deferd killed with SIGKILL between its read
 * of a ripe pack and the one multi that turns it into job znodes (the test-only failpoint
 * unpack-before-multi, docs/deferd.md). The pack must stay as it was, and be unpacked later
 * by the daemon restarted, or by the others while they race for the same packs: every job
 * delivered once, first attempt, never early. Queue "a" packs after 6 s in windows of 5 s. */
#include <stdio.h>
#include <stdlib.h>

#include "harness_pack.h"

#define FAILPOINT "unpack-before-multi"

static char root[128];
static const char *const packing[] = {PACK_TEST_OVERRIDES("a"), NULL};
/* 1 s ahead of the others: its tick (every second) reaches a ripe window before theirs */
static const char *const ahead[] = {"queue.a.pack_after=7s", "queue.a.pack_window=5s", NULL};

/* Starts (or, with RESTART, restarts) D with the failpoint armed when ARMED; 0 once it is
 * connected to ZooKeeper. */
static int start(struct daemon_proc *d, const char *tag, const char *const *ov, int armed,
                 int restart)
{
    if (armed)
        setenv("DEFERD_FAILPOINT", FAILPOINT, 1);
    int rc = restart ? daemon_restart(d, ov) : daemon_start(d, root, tag, ov);
    unsetenv("DEFERD_FAILPOINT");
    if (rc != 0 || daemon_wait_connected(d, 20000) != 0) {
        fprintf(stderr, "deferd %s did not start\n", tag);
        return -1;
    }
    return 0;
}

/* The pack's data and version, to see it untouched; its length, or -1. */
static int pack_read(zhandle_t *zh, const char *pack, char *buf, int len, int *version)
{
    char path[LAYOUT_PATH_MAX];
    struct Stat st;
    if (layout_pack_path(path, sizeof path, root, "a", pack) != 0 ||
        zoo_get(zh, path, 0, buf, &len, &st) != ZOK)
        return -1;
    *version = st.version;
    return len;
}

/* Every job of S in one pack (pipelined puts of one window): its name into PACK. */
static void one_pack(const struct sent_job *s, int n, char *pack, size_t len)
{
    char other[LAYOUT_PACK_MAX + 1];
    pack_of_id(s[0].id, pack, len);
    CHECK(pack[0] == 'p');
    for (int i = 1; i < n; i++) {
        pack_of_id(s[i].id, other, sizeof other);
        CHECK_STR(other, pack);
    }
}

/* A alone: it reads the ripe pack and dies at the failpoint; the pack is as it was and no
 * job znode was made. Restarted without the failpoint, A unpacks it: each job once. */
static void crash_then_restart(struct daemon_proc *a, zhandle_t *zh)
{
    enum { N = 40 };
    static struct sent_job s[N];
    static char before[65536], after[65536];
    char pack[LAYOUT_PACK_MAX + 1];
    int vbefore = -1, vafter = -2;
    deferd_client *prod = client(a);
    CHECK(put_sent_pipelined(prod, "a", s, N, pack_window_ahead(9000), 50) == 0);
    deferd_close(prod);
    one_pack(s, N, pack, sizeof pack);
    int len = pack_read(zh, pack, before, sizeof before, &vbefore);
    CHECK(len > 0);
    int sig = daemon_wait_signal(a, 20000);
    CHECK(sig == SIGKILL);
    if (sig < 0) /* still running: the failpoint never fired */
        daemon_kill(a, SIGKILL);
    CHECK(log_count(a, 0, "failpoint " FAILPOINT " fires") == 1);
    CHECK(pack_read(zh, pack, after, sizeof after, &vafter) == len);
    CHECK(vafter == vbefore && len > 0 && memcmp(before, after, (size_t)len) == 0);
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    long mark = log_mark(a);
    if (start(a, "a", packing, 0, 1) != 0)
        return;
    deferd_client *cons = client(a);
    CHECK(deferd_subscribe(cons, "a", 64) == DEFERD_OK);
    CHECK(collect_jobs(&cons, 1, s, N, 30000) == N);
    deferd_close(cons);
    CHECK(zk_count_packs(zh, root, "a") == 0);
    CHECK(daemon_stat(a, "packs_unpacked") == 1 && daemon_stat(a, "jobs_unpacked") == N);
    CHECK(log_count(a, mark, "failpoint") == 0);
}

/* X, with the failpoint and a second's lead, reads the first ripe pack and dies; Y and Z
 * race for the same packs (the one X held among them): no job lost, none twice. */
static void crash_in_race(struct daemon_proc *x, zhandle_t *zh)
{
    enum { N = 300, NWIN = 2 };
    static struct sent_job s[N];
    struct daemon_proc yz[2];
    deferd_client *cons[2];
    daemon_kill(x, SIGTERM);
    if (start(x, "a", ahead, 1, 1) != 0 || start(&yz[0], "y", packing, 0, 0) != 0 ||
        start(&yz[1], "z", packing, 0, 0) != 0)
        return;
    CHECK(log_wait(&yz[0], 0, "layout version 2", 10000));
    for (int k = 0; k < 2; k++) {
        cons[k] = client(&yz[k]);
        CHECK(deferd_subscribe(cons[k], "a", 64) == DEFERD_OK);
    }
    deferd_client *prod = client(&yz[0]);
    int64_t w = pack_window_ahead(9000);
    for (int i = 0; i < NWIN; i++) /* 30 ms apart: 4.5 s of each window */
        CHECK(put_sent_pipelined(prod, "a", s + i * (N / NWIN), N / NWIN,
                                 w + i * PACK_TEST_WINDOW_MS, 30) == 0);
    deferd_close(prod);
    int sig = daemon_wait_signal(x, 20000);
    CHECK(sig == SIGKILL);
    if (sig < 0)
        daemon_kill(x, SIGKILL);
    CHECK(collect_jobs(cons, 2, s, N, 40000) == N);
    for (int i = 0; i < N; i++)
        CHECK(s[i].seen == 1);
    CHECK(zk_count_packs(zh, root, "a") == 0);
    CHECK(daemon_stat_sum(yz, 2, "packs_unpacked") == daemon_stat(&yz[0], "packs_created"));
    CHECK(daemon_stat_sum(yz, 2, "jobs_unpacked") == N);
    for (int k = 0; k < 2; k++) {
        deferd_close(cons[k]);
        daemon_kill(&yz[k], SIGTERM);
    }
}

int main(void)
{
    struct daemon_proc a;
    harness_init("pack_crash", root, sizeof root);
    zhandle_t *zh = zk_connect();
    CHECK(pack_marker_set(zh, root, "2") == ZOK);
    if (start(&a, "a", packing, 1, 0) != 0)
        return 1;
    CHECK(log_wait(&a, 0, "layout version 2", 10000));
    crash_then_restart(&a, zh);
    crash_in_race(&a, zh);
    zookeeper_close(zh);
    return check_report("pack_crash");
}
