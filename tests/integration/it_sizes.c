/* Every payload size class a put may carry (0, 1, small, just under and exactly
 * max_payload, which is over what any pack holds), each put plain (no key, no token), with a
 * put token and with a key, due now, near and far (packed on layout 2), alone and in a
 * BATCH, on a root of layout 1 and of layout 2: each is answered within a deadline, stored
 * once, and delivered once with its payload byte for byte. On 4340a11 a far put of exactly
 * max_payload on layout 2 was never answered: the packer retried a job that fits no pack at
 * loop speed (issue 38). Queue "a": pack_after 6 s, windows of 5 s; max_payload 512 KiB, the
 * sample config's value. A ZooKeeper of its own with a larger heap: ZooKeeper keeps its last
 * 500 transactions in memory (commitLogCount), and a hundred of half a MiB each exhaust the
 * shared fixture's 256 MiB. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "harness_pack.h"
#include "log.h"
#include "pack.h"

#define MAXP (512 * 1024)
#define NSIZES 7
#define NKINDS 3
#define NDUES 3
#define NBATCH (NSIZES * NDUES)
#define NJOBS (2 * (NSIZES * NKINDS * NDUES + NBATCH)) /* two layouts */

/* and the largest payload a pack takes, and one more (set in main) */
static size_t sizes[NSIZES] = {0, 1, 100, MAXP - 1, MAXP};
enum kind { PLAIN, TOKEN, KEYED };
enum due { NOW, NEAR, FAR };

struct job {
    struct sent_job s;
    size_t len;
    int tag;                    /* fills its payload (fill()) */
    int layout;
    int packs;                  /* 1 when it must be stored in a pack */
};

static struct daemon_proc d;
static char root[128];
static struct job jobs[NJOBS];
static int njobs;
static unsigned char *buf;

static void fill(unsigned char *p, size_t len, int tag)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(i * 31u + (unsigned)tag * 7u);
}

static void due_opts(deferd_put_opts *o, enum due due, int64_t *at)
{
    int64_t now = now_ms();
    *at = due == NOW ? now : due == NEAR ? now + 3000 : pack_window_ahead(9000) + 1000;
    o->has_at = 1;
    o->at_ms = (uint64_t)*at;
}

static struct job *new_job(size_t len, int layout, int64_t at)
{
    struct job *j = &jobs[njobs];
    *j = (struct job){.len = len, .tag = njobs, .layout = layout};
    j->packs = 0;
    j->s.at = at;
    njobs++;
    fill(buf, len, j->tag);
    return j;
}

/* One put of KIND, answered within 10 s (the client's timeout): a hang fails the test. */
static void put_one(deferd_client *c, size_t len, enum kind kind, enum due due, int layout)
{
    deferd_put_opts o = {0};
    int64_t at;
    due_opts(&o, due, &at);
    struct job *j = new_job(len, layout, at);
    j->packs = layout == 2 && due == FAR && len <= pack_payload_max();
    char key[64];
    snprintf(key, sizeof key, "k%d-%d", layout, j->tag);
    int rc;
    if (kind == PLAIN) { /* a pipelined put carries no token */
        rc = deferd_put_send(c, "a", buf, len, &o);
        if (rc == DEFERD_OK)
            rc = deferd_put_recv(c, j->s.id, sizeof j->s.id, 10000);
    } else {
        o.key = kind == KEYED ? key : NULL;
        rc = deferd_put(c, "a", buf, len, &o, j->s.id, sizeof j->s.id);
    }
    CHECK(rc == DEFERD_OK);
    if (rc != DEFERD_OK)
        fprintf(stderr, "layout %d: put of %zu bytes (kind %d, due %d) failed: %s\n", layout,
                len, kind, due, deferd_last_error(c));
}

/* One BATCH per due class with every size, keyed and not, in parts as the library splits. */
static void put_batch(deferd_client *c, enum due due, int layout)
{
    deferd_put_item items[NSIZES];
    unsigned char *bufs[NSIZES];
    struct job *js[NSIZES];
    char keys[NSIZES][32];
    int64_t at;
    for (int i = 0; i < NSIZES; i++) {
        items[i] = (deferd_put_item){.queue = "a", .len = sizes[i]};
        due_opts(&items[i].opts, due, &at);
        js[i] = new_job(sizes[i], layout, at);
        bufs[i] = malloc(sizes[i] + 1);
        fill(bufs[i], sizes[i], js[i]->tag);
        items[i].payload = bufs[i];
        snprintf(keys[i], sizeof keys[i], "b%d-%d", layout, js[i]->tag);
        items[i].opts.key = i % 2 ? keys[i] : NULL;
        js[i]->packs = layout == 2 && due == FAR && sizes[i] <= pack_payload_max();
    }
    unsigned parts = 0;
    size_t stored = 0;
    int rc = deferd_put_batch(c, items, NSIZES, &parts, &stored);
    CHECK(rc == DEFERD_OK && stored == NSIZES);
    if (rc != DEFERD_OK)
        fprintf(stderr, "layout %d: batch due %d failed: %s\n", layout, due,
                deferd_last_error(c));
    for (int i = 0; i < NSIZES; i++) {
        snprintf(js[i]->s.id, sizeof js[i]->s.id, "%s", items[i].id);
        free(bufs[i]);
    }
}

static struct job *find(const char *id)
{
    char uid[DEFERD_UID_SIZE], u[DEFERD_UID_SIZE];
    if (deferd_job_uid(id, uid, sizeof uid) != DEFERD_OK)
        return NULL;
    for (int i = 0; i < njobs; i++)
        if (deferd_job_uid(jobs[i].s.id, u, sizeof u) == DEFERD_OK && strcmp(u, uid) == 0)
            return &jobs[i];
    return NULL;
}

/* Takes every job of this round (FROM..njobs) until all came or the deadline: each one of
 * ours, once, never early, with its payload. */
static void deliver_all(deferd_client *cons, int from)
{
    int want = njobs - from, got = 0;
    int64_t deadline = now_ms() + 40000;
    while (got < want && now_ms() < deadline) {
        deferd_job job;
        if (next_job_push(cons, &job, 1000) != DEFERD_OK)
            continue;
        struct job *j = find(job.id);
        CHECK(j != NULL);
        if (j) {
            CHECK(j->s.seen == 0);
            CHECK(now_ms() >= j->s.at - 50); /* wall clocks of one host: never early */
            fill(buf, j->len, j->tag);
            CHECK(job.len == j->len && (j->len == 0 || memcmp(job.payload, buf, j->len) == 0));
            j->s.seen++;
            got += j->s.seen == 1;
        }
        CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
        free(job.payload);
    }
    CHECK(got == want);
    if (got != want)
        fprintf(stderr, "delivered %d of %d\n", got, want);
    deferd_job extra; /* a second delivery would come now: every job was acked at once */
    if (next_job_push(cons, &extra, 1000) == DEFERD_OK) {
        CHECK(!"a job delivered twice");
        fprintf(stderr, "delivered again: %s\n", extra.id);
        free(extra.payload);
    }
}

/* Nothing of the round is left in ZooKeeper: no job znode, no pack (each was stored once,
 * and acked once). */
static void nothing_left(zhandle_t *zh)
{
    int64_t deadline = now_ms() + 10000;
    while ((zk_count_jobs(zh, root, "a") > 0 || zk_count_packs(zh, root, "a") > 0) &&
           now_ms() < deadline)
        usleep(50000);
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    CHECK(zk_count_packs(zh, root, "a") <= 0);
}

static void round_on(zhandle_t *zh, int layout)
{
    deferd_client *c = client(&d), *cons = client(&d);
    deferd_set_timeout(c, 10000);
    CHECK(deferd_subscribe(cons, "a", 16) == DEFERD_OK);
    int from = njobs;
    long packed = daemon_stat(&d, "packed_puts");
    for (int s = 0; s < NSIZES; s++)
        for (int k = 0; k < NKINDS; k++)
            for (int u = 0; u < NDUES; u++)
                put_one(c, sizes[s], (enum kind)k, (enum due)u, layout);
    for (int u = 0; u < NDUES; u++)
        put_batch(c, (enum due)u, layout);
    CHECK(deferd_ping(c) == DEFERD_OK); /* the daemon answers others after them */
    /* layout 2 packs the far ones that fit, keyed or not; the rest are job znodes */
    int want_packed = 0;
    for (int i = from; i < njobs; i++) {
        char pack[LAYOUT_PACK_MAX + 1];
        pack_of_id(jobs[i].s.id, pack, sizeof pack);
        want_packed += jobs[i].packs;
        CHECK((pack[0] != '\0') == jobs[i].packs);
        if ((pack[0] != '\0') != jobs[i].packs)
            fprintf(stderr, "job %s of %zu bytes: packed %d, expected %d\n", jobs[i].s.id,
                    jobs[i].len, pack[0] != '\0', jobs[i].packs);
    }
    long now_packed = daemon_stat(&d, "packed_puts");
    CHECK(layout == 1 ? now_packed == packed && want_packed == 0
                      : want_packed == 16 && now_packed - packed == 16);
    int stored = zk_count_jobs(zh, root, "a");
    fprintf(stderr, "layout %d: %d puts answered; %ld packed, %d job znodes\n", layout,
            njobs - from, now_packed - packed, stored);
    deliver_all(cons, from);
    nothing_left(zh);
    deferd_close(c);
    deferd_close(cons);
}

/* A pack write that cannot be built (the failpoint pack-build-fails: as if out of memory)
 * answers each of its puts with UNAVAILABLE, at once: the daemon answers others meanwhile,
 * and its complaint is written 100 times at most (log.h), whatever the number of puts. */
static void build_failures_answered(void)
{
    enum { N = 150 };
    setenv("DEFERD_FAILPOINT", "pack-build-fails", 1);
    daemon_kill(&d, SIGTERM);
    long mark = log_mark(&d);
    CHECK(daemon_restart(&d, NULL) == 0 && daemon_wait_connected(&d, 10000) == 0);
    unsetenv("DEFERD_FAILPOINT");
    /* until the marker is read, far puts are stored as job znodes, not packed */
    CHECK(log_wait(&d, mark, "layout version 2", 10000));
    deferd_client *c = client(&d);
    deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)pack_window_ahead(9000) + 1000};
    int sent = 0, refused = 0;
    int64_t start = now_ms();
    for (int i = 0; i < N; i++)
        sent += deferd_put_send(c, "a", "x", 1, &o) == DEFERD_OK;
    for (int i = 0; i < sent; i++) {
        char id[DEFERD_ID_SIZE];
        int rc = deferd_put_recv(c, id, sizeof id, 10000);
        refused += rc == DEFERD_ESERVER && strcmp(deferd_last_error_code(c), "UNAVAILABLE") == 0;
    }
    CHECK(sent == N && refused == N);
    CHECK(deferd_ping(c) == DEFERD_OK);
    deferd_close(c);
    int said = log_count(&d, mark, "was not packed: not stored (deferd is out of memory)");
    CHECK(now_ms() - start >= LOG_SITE_PERIOD_MS ? said < N : said == LOG_SITE_BURST);
    fprintf(stderr, "%d puts refused, %d log lines\n", refused, said);
}

int main(void)
{
    harness_init("sizes", root, sizeof root);
    char zkdir[128];
    snprintf(zkdir, sizeof zkdir, "/tmp/deferd-it-%d-zk", (int)getpid());
    setenv("ZK_HEAP", "1g", 1);
    if (zk_private_start(zkdir) != 0)
        return 1;
    sizes[5] = pack_payload_max();
    sizes[6] = pack_payload_max() + 1;
    buf = malloc(MAXP + 1);
    zhandle_t *zh = zk_connect();
    CHECK(pack_marker_set(zh, root, "1") == ZOK); /* an existing root of layout 1 */
    const char *over[] = {PACK_TEST_OVERRIDES("a"), "daemon.max_payload=512KiB", NULL};
    if (daemon_start(&d, root, "d0", over) != 0 || daemon_wait_connected(&d, 10000) != 0)
        return 1;
    round_on(zh, 1);
    CHECK(pack_marker_set(zh, root, "2") == ZOK);
    CHECK(log_wait(&d, 0, "layout version 2", 10000));
    round_on(zh, 2);
    build_failures_answered();
    daemon_kill(&d, SIGTERM);
    zookeeper_close(zh);
    zk_private("stop", zkdir);
    free(buf);
    return check_report("sizes");
}
