/* Packs (layout version 2): far-future puts go many to a znode once the root's marker says
 * 2, pipelined puts of a window share one pack, lone ones join the window's open pack; as
 * a window comes within pack_after one daemon turns its packs into job znodes; three
 * daemons racing for the same packs deliver every job once, none early; a packed job is
 * cancelled and rescheduled inside its pack, and by its packed id after it was unpacked
 * (from its bucket or its pack's shard); an unreadable pack or a foreign name is logged
 * once and left alone; deferctl shows, changes and lists packed jobs. Queue "a": pack_after
 * 6 s, windows of 5 s (the harness' lookahead is 2 s). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "harness_pack.h"
#include "layout.h"
#include "pack.h"

#define NDAEMONS 3

static struct daemon_proc d[NDAEMONS];
static char root[128];
static const char *const packing[] = {PACK_TEST_OVERRIDES("a"), "queue.b.pack_after=1h", NULL};

static int pack_exists(zhandle_t *zh, const char *pack)
{
    return pack_jobs(zh, root, "a", pack) >= 0;
}

static int pack_count(zhandle_t *zh, const char *pack) { return pack_jobs(zh, root, "a", pack); }

static int pack_unpacked(zhandle_t *zh, const char *pack, int ms)
{
    return pack_gone_within(zh, root, "a", pack, ms);
}

static int same_uid(const char *a, const char *b)
{
    char ua[DEFERD_UID_SIZE], ub[DEFERD_UID_SIZE];
    return deferd_job_uid(a, ua, sizeof ua) == DEFERD_OK &&
           deferd_job_uid(b, ub, sizeof ub) == DEFERD_OK && strcmp(ua, ub) == 0;
}

static int cancel_answer(deferd_client *c, const char *id)
{
    int rc = deferd_cancel(c, id, NULL, NULL, 0, NULL, 0);
    if (rc == DEFERD_ESERVER && strcmp(deferd_last_error_code(c), "NOT_FOUND") == 0)
        return 3;
    return rc == DEFERD_OK ? 0 : 1;
}




/* On a root an older deferd made (no marker) nothing is packed, and deferctl layout says
 * why and when to upgrade; --upgrade without --yes writes nothing; once the marker says 2,
 * the daemon packs from then on. Queue "b" packs with the defaults (after 1 h, windows of
 * 10000 s): due in 5 h. */
static void marker_switches_packing(zhandle_t *zh)
{
    deferd_client *c = client(&d[0]);
    char id[DEFERD_ID_SIZE], pack[LAYOUT_PACK_MAX + 1];
    long mark = log_mark(&d[0]);
    int64_t at = now_ms() + 5 * 3600 * 1000;
    CHECK(put_job(c, "b", "plain", -1, at, -1, id) == 0);
    pack_of_id(id, pack, sizeof pack);
    CHECK_STR(pack, "");
    CHECK(zk_job_exists(zh, root, id));
    char out[2048];
    CHECK(run_deferctl(&d[0], "layout", out, sizeof out) == 0 &&
          strstr(out, "layout version 1: no packing") && strstr(out, "queue b: 0 packs") &&
          strstr(out, "deferctl layout --upgrade --yes"));
    char marker[LAYOUT_PATH_MAX];
    snprintf(marker, sizeof marker, "%s/" LAYOUT_MARKER, root);
    CHECK(run_deferctl(&d[0], "layout --upgrade", out, sizeof out) == 2 &&
          strstr(out, "then add --yes") && !zk_exists(zh, marker));
    CHECK(run_deferctl(&d[0], "layout --yes", out, sizeof out) == 2);
    CHECK(run_deferctl(&d[0], "layout --upgrade --yes", out, sizeof out) == 0 &&
          strstr(out, "layout version 2 (changed)"));
    CHECK(log_wait(&d[0], mark, "layout version 2", 10000));
    CHECK(put_job(c, "b", "packed", -1, at, -1, id) == 0);
    pack_of_id(id, pack, sizeof pack);
    CHECK(pack[0] == 'p' && !zk_job_exists(zh, root, id));
    char path[LAYOUT_PATH_MAX];
    CHECK(layout_pack_path(path, sizeof path, root, "b", pack) == 0 && zk_exists(zh, path));
    CHECK(run_deferctl(&d[0], "layout --json", out, sizeof out) == 0 &&
          strstr(out, "\"version\":2,\"changed\":false") && strstr(out, "\"b\":1"));
    deferd_close(c);
}

/* 50 pipelined puts of one window: one pack; 5 lone puts of another: one pack, rewritten;
 * all delivered once their time comes, from job znodes the packs were turned into. */
static void pack_and_unpack(zhandle_t *zh)
{
    deferd_client *prod = client(&d[0]), *cons = client(&d[0]);
    static struct sent_job s[55];
    char first[LAYOUT_PACK_MAX + 1], pack[LAYOUT_PACK_MAX + 1];
    int64_t w1 = pack_window_ahead(9000), w2 = w1 + 5000;
    CHECK(put_sent_pipelined(prod, "a", s, 50, w1, 4) == 0);
    pack_of_id(s[0].id, first, sizeof first);
    CHECK(first[0] == 'p');
    for (int i = 1; i < 50; i++) {
        pack_of_id(s[i].id, pack, sizeof pack);
        CHECK_STR(pack, first);
    }
    for (int i = 50; i < 55; i++) { /* each waits for its reply: joins the open pack */
        CHECK(put_job(prod, "a", "lone", -1, s[i].at = w2 + i, -1, s[i].id) == 0);
        pack_of_id(s[i].id, pack, sizeof pack);
        if (i == 50)
            snprintf(first, sizeof first, "%s", pack);
        CHECK(pack[0] == 'p');
        CHECK_STR(pack, first);
    }
    CHECK(pack_exists(zh, first));
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    CHECK(deferd_subscribe(cons, "a", 64) == DEFERD_OK);
    CHECK(collect_jobs(&cons, 1, s, 55, 40000) == 55);
    CHECK(!pack_exists(zh, first));
    /* two packs turned into 55 jobs, each by one daemon; the writer counted its pack writes */
    CHECK(daemon_stat_sum(d, NDAEMONS, "packs_unpacked") == 2 && daemon_stat_sum(d, NDAEMONS, "jobs_unpacked") == 55);
    CHECK(daemon_stat(&d[0], "packs_created") == 3 && daemon_stat(&d[0], "packs_rewritten") == 4);
    deferd_close(prod);
    deferd_close(cons);
}

/* Inside its pack: a cancel rewrites the pack without the job; a reschedule takes it out
 * into a job znode (same uid) at its new time, near or far; the last job's cancel deletes
 * the pack. The near one is delivered at its new time, attempt 1. */
static void edit_in_pack(zhandle_t *zh)
{
    deferd_client *prod = client(&d[0]), *cons = client(&d[0]);
    static struct sent_job s[4], lone;
    char pack[LAYOUT_PACK_MAX + 1], other[LAYOUT_PACK_MAX + 1], id[DEFERD_ID_SIZE];
    int64_t w = pack_window_ahead(9000), near = now_ms() + 3000, far = w + 3600 * 1000;
    CHECK(put_sent_pipelined(prod, "a", s, 4, w, 4) == 0);
    pack_of_id(s[0].id, pack, sizeof pack);
    CHECK(pack[0] == 'p' && pack_count(zh, pack) == 4);
    CHECK(deferd_cancel(prod, s[0].id, NULL, NULL, 0, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, s[0].id);
    CHECK(pack_count(zh, pack) == 3 && cancel_answer(prod, s[0].id) == 3);
    CHECK(deferd_reschedule(prod, s[1].id, NULL, NULL, 1, (uint64_t)near, 0, id, sizeof id) ==
          DEFERD_OK);
    pack_of_id(id, other, sizeof other);
    CHECK(other[0] == '\0' && same_uid(id, s[1].id) && zk_job_exists(zh, root, id));
    CHECK(pack_count(zh, pack) == 2);
    CHECK(deferd_reschedule(prod, s[2].id, NULL, NULL, 1, (uint64_t)far, 0, s[2].id,
                            sizeof s[2].id) == DEFERD_OK);
    pack_of_id(s[2].id, other, sizeof other);
    CHECK(other[0] == '\0' && zk_job_exists(zh, root, s[2].id) && pack_count(zh, pack) == 1);
    s[1].at = near;
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK);
    CHECK(collect_jobs(&cons, 1, s + 1, 1, 10000) == 1);
    deferd_close(cons); /* s[3] waits for its unpacking, undelivered (no consumer) */
    CHECK(pack_unpacked(zh, pack, 20000));
    CHECK(cancel_answer(prod, s[3].id) == 0); /* its packed id finds it in its bucket */
    CHECK(cancel_answer(prod, s[2].id) == 0 && zk_count_jobs(zh, root, "a") == 0);
    CHECK(put_job(prod, "a", "lone", -1, w + 7777, -1, lone.id) == 0);
    pack_of_id(lone.id, pack, sizeof pack);
    CHECK(pack_count(zh, pack) == 1 && cancel_answer(prod, lone.id) == 0);
    CHECK(!pack_exists(zh, pack));
    deferd_close(prod);
}

/* A pack's 20 jobs due in one 100 ms bucket are unpacked into the pack's shard: their
 * packed ids still cancel them, each found there. */
static void cancel_from_shard(zhandle_t *zh)
{
    deferd_client *prod = client(&d[0]);
    static struct sent_job s[20];
    char pack[LAYOUT_PACK_MAX + 1];
    CHECK(put_sent_pipelined(prod, "a", s, 20, pack_window_ahead(9000), 4) == 0); /* 4 ms apart: one bucket */
    pack_of_id(s[0].id, pack, sizeof pack);
    CHECK(pack_count(zh, pack) == 20 && pack_unpacked(zh, pack, 20000));
    CHECK(zk_count_jobs(zh, root, "a") == 20 && !zk_job_exists(zh, root, s[0].id)); /* shard */
    for (int i = 0; i < 20; i++)
        CHECK(cancel_answer(prod, s[i].id) == 0);
    CHECK(zk_count_jobs(zh, root, "a") == 0 && cancel_answer(prod, s[0].id) == 3);
    deferd_close(prod);
}

/* One page of `deferctl list a` from FROM: the ids of IDS in this order, and no other;
 * the page's last id into LAST. */
static int page_is(int64_t from, const char *after, const char *const *ids, int n, char *last,
                   size_t llen)
{
    static char out[16384];
    char args[600];
    const char *at = out;
    snprintf(args, sizeof args, "list a --from %lld --until %lld --limit 2 --json%s%s",
             (long long)from, (long long)from + 60000, after ? " --after " : "",
             after ? after : "");
    if (run_deferctl(&d[0], args, out, sizeof out) != 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (!(at = strstr(at, ids[i])))
            return 0;
    int rows = 0;
    for (at = out; (at = strstr(at, "\"id\":")); at++)
        rows++;
    snprintf(last, llen, "%s", n ? ids[n - 1] : "");
    return rows == n;
}

/* deferctl finds packed jobs too: show reads one in its pack, reschedule takes one out,
 * cancel rewrites the pack, list pages through packed and unpacked jobs in due order. */
static void deferctl_on_packs(zhandle_t *zh)
{
    deferd_client *prod = client(&d[0]);
    static struct sent_job s[6];
    char out[4096], args[600], moved[DEFERD_ID_SIZE] = "", pack[LAYOUT_PACK_MAX + 1], last[200];
    int64_t w = pack_window_ahead(9000);
    CHECK(put_sent_pipelined(prod, "a", s, 6, w, 4) == 0); /* due w, w+4, ... w+20: one pack */
    snprintf(args, sizeof args, "show %s", s[0].id);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 0 && strstr(out, "packed") &&
          strstr(out, "\n\np"));
    snprintf(args, sizeof args, "reschedule %s --at %lld", s[2].id, (long long)w + 10);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 0 && sscanf(out, "%199s", moved) == 1);
    pack_of_id(moved, pack, sizeof pack);
    CHECK(pack[0] == '\0' && same_uid(moved, s[2].id) && zk_job_exists(zh, root, moved));
    snprintf(args, sizeof args, "cancel %s", s[4].id);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 0);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 3);
    pack_of_id(s[0].id, pack, sizeof pack);
    CHECK(pack_count(zh, pack) == 4);
    const char *p1[] = {s[0].id, s[1].id}, *p2[] = {moved, s[3].id}, *p3[] = {s[5].id};
    CHECK(page_is(w, NULL, p1, 2, last, sizeof last));
    CHECK(page_is(w, last, p2, 2, last, sizeof last));
    CHECK(page_is(w, last, p3, 1, last, sizeof last));
    const char *left[] = {s[0].id, s[1].id, moved, s[3].id, s[5].id};
    for (int i = 0; i < 5; i++)
        CHECK(cancel_answer(prod, left[i]) == 0);
    deferd_close(prod);
}

/* Three daemons follow the same packs: every job delivered once, none early. */
static void three_daemons_race(void)
{
    enum { N = 600 };
    static struct sent_job s[N];
    deferd_client *prod = client(&d[0]), *cons[NDAEMONS];
    int64_t w = pack_window_ahead(9000);
    memset(s, 0, sizeof s);
    for (int k = 0; k < NDAEMONS; k++) {
        cons[k] = client(&d[k]);
        CHECK(deferd_subscribe(cons[k], "a", 64) == DEFERD_OK);
    }
    CHECK(put_sent_pipelined(prod, "a", s, N / 3, w, 4) == 0); /* three windows, several packs */
    CHECK(put_sent_pipelined(prod, "a", s + N / 3, N / 3, w + 5000, 4) == 0);
    CHECK(put_sent_pipelined(prod, "a", s + 2 * N / 3, N / 3, w + 10000, 4) == 0);
    CHECK(collect_jobs(cons, NDAEMONS, s, N, 60000) == N);
    for (int i = 0; i < N; i++)
        CHECK(s[i].seen == 1);
    for (int k = 0; k < NDAEMONS; k++)
        deferd_close(cons[k]);
    deferd_close(prod);
}

/* A pack with damaged bytes and a name that is no pack's, both in a ripe window: logged
 * once by each daemon, never deleted, and the daemons go on unpacking others. */
static void unreadable_left_alone(zhandle_t *zh)
{
    char dir[LAYOUT_PATH_MAX], bad[LAYOUT_PATH_MAX + 64], odd[LAYOUT_PATH_MAX + 64];
    int64_t start = now_ms() - now_ms() % 5000;
    long mark = log_mark(&d[1]);
    snprintf(dir, sizeof dir, "%s/queues/a/packs/%lld", root, (long long)(start / 10000000));
    snprintf(bad, sizeof bad, "%s/p%lld-5000-damaged", dir, (long long)start);
    snprintf(odd, sizeof odd, "%s/notapack", dir);
    zoo_create(zh, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CHECK(zoo_create(zh, bad, "DFPK\001 not really", 17, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) ==
          ZOK);
    CHECK(zoo_create(zh, odd, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
    CHECK(log_wait(&d[1], mark, "damaged: unreadable", 15000));
    CHECK(log_wait(&d[1], mark, "notapack: not a pack name", 15000));
    /* a later pack in the same directory is unpacked; the two are still there, once logged */
    deferd_client *prod = client(&d[0]), *cons = client(&d[1]);
    static struct sent_job s[1];
    CHECK(put_sent_pipelined(prod, "a", s, 1, pack_window_ahead(9000), 4) == 0);
    CHECK(deferd_subscribe(cons, "a", 4) == DEFERD_OK);
    CHECK(collect_jobs(&cons, 1, s, 1, 30000) == 1);
    CHECK(zk_exists(zh, bad) && zk_exists(zh, odd));
    CHECK(log_count(&d[1], mark, "damaged: unreadable") == 1);
    CHECK(log_count(&d[1], mark, "notapack: not a pack name") == 1);
    deferd_close(prod);
    deferd_close(cons);
}

/* A root no deferd has stored in starts at layout 4 (claims, short bucket names), once,
 * whichever daemon comes first: they race to create it, and the one transaction that makes
 * queues/ and the marker wins. */
static void new_root_packs(zhandle_t *zh)
{
    char fresh[160], out[2048], id[DEFERD_ID_SIZE], pack[LAYOUT_PACK_MAX + 1];
    struct daemon_proc n[2];
    snprintf(fresh, sizeof fresh, "%s-new/x/y", root); /* its parents missing too */
    for (int k = 0; k < 2; k++) /* tags of their own: d0.. are the main daemons' */
        CHECK(daemon_spawn(&n[k], fresh, k ? "n1" : "n0", packing) == 0);
    for (int k = 0; k < 2; k++)
        CHECK(daemon_wait_ready(&n[k]) == 0 && daemon_wait_connected(&n[k], 20000) == 0);
    for (int k = 0; k < 2; k++)
        CHECK(log_wait(&n[k], 0, "layout version 4", 10000));
    CHECK(log_count(&n[0], 0, "layout version 4 (a new root)") +
              log_count(&n[1], 0, "layout version 4 (a new root)") == 1); /* one claim won */
    CHECK(run_deferctl(&n[0], "layout", out, sizeof out) == 0 &&
          strstr(out, "layout version 4: far-future jobs are packed, due jobs claimed, new "
                      "jobs' buckets named short") &&
          !strstr(out, "--upgrade"));
    deferd_client *c = client(&n[0]);
    CHECK(put_job(c, "b", "far", -1, now_ms() + 5 * 3600 * 1000, -1, id) == 0);
    pack_of_id(id, pack, sizeof pack);
    CHECK(pack[0] == 'p');
    deferd_close(c);
    /* a restart reads the marker, and does not make the root anew */
    daemon_kill(&n[1], SIGTERM);
    long mark = log_mark(&n[1]);
    char read_it[200];
    snprintf(read_it, sizeof read_it, "layout version 4 (%s/layout)", fresh);
    CHECK(daemon_restart(&n[1], packing) == 0);
    CHECK(log_wait(&n[1], mark, read_it, 10000));
    CHECK(log_count(&n[1], mark, "(a new root)") == 0);
    for (int k = 0; k < 2; k++)
        daemon_kill(&n[k], SIGTERM);
    (void)zh;
}

int main(void)
{
    harness_init("pack", root, sizeof root);
    zhandle_t *zh = zk_connect();
    CHECK(pack_root_of_old(zh, root) == ZOK);
    char tag[8];
    for (int k = 0; k < NDAEMONS; k++) {
        snprintf(tag, sizeof tag, "d%d", k);
        if (daemon_start(&d[k], root, tag, packing) != 0 ||
            daemon_wait_connected(&d[k], 20000) != 0) {
            fprintf(stderr, "deferd %s did not start\n", tag);
            return 1;
        }
    }
    marker_switches_packing(zh);
    for (int k = 1; k < NDAEMONS; k++) /* they read the marker too */
        CHECK(log_wait(&d[k], 0, "layout version 2", 10000));
    pack_and_unpack(zh);
    edit_in_pack(zh);
    cancel_from_shard(zh);
    deferctl_on_packs(zh);
    three_daemons_race();
    unreadable_left_alone(zh);
    new_root_packs(zh);
    zookeeper_close(zh);
    for (int k = 0; k < NDAEMONS; k++)
        daemon_kill(&d[k], SIGTERM);
    return check_report("pack");
}
