/* A bucket a daemon follows (a consumer of the queue is subscribed to it) and lists again
 * after its own puts: when nothing but those puts changed
 * it (the child version moved by exactly them), the listing is not walked name by name
 * (STATS listings_unchanged); a job another daemon puts into the same bucket moves the
 * version further, and the daemon walks the next listing and learns it. A change that
 * keeps the count (another writer deletes one job and creates one, in one transaction)
 * moves only the version: the listing is walked too, and the new job is delivered. First:
 * a bucket due later is not listed again until shortly before it is due, and another
 * daemon's job in it is still delivered on time. */
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "layout.h"

enum { N = 300 };

static struct daemon_proc d[2];
static char root[128];

static void put_many(deferd_client *prod, int64_t due)
{
    char id[DEFERD_ID_SIZE];
    int ok = 0;
    for (int i = 0; i < N; i++) {
        deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)due};
        CHECK(deferd_put_send(prod, "a", "own", 3, &o) == DEFERD_OK);
        while (deferd_puts_outstanding(prod) > (i + 1 < N ? 32 : 0))
            ok += deferd_put_recv(prod, id, sizeof id, 10000) == DEFERD_OK;
    }
    CHECK(ok == N);
}

/* D's STATS field KEY as a number, or -1. */
static long long stat_of(const struct daemon_proc *dp, const char *key)
{
    static char buf[16384];
    deferd_client *c = client(dp);
    long v = c && deferd_stats(c, buf, sizeof buf) == DEFERD_OK ? stats_field(buf, key) : -1;
    deferd_close(c);
    return v;
}

static int wait_stat_at_least(const struct daemon_proc *dp, const char *key, long long want,
                              int ms)
{
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        if (stat_of(dp, key) >= want)
            return 1;
        usleep(50000);
    }
    return 0;
}

/* The bucket holding queue a's jobs (one due time: one leaf, LAYOUT_DEPTH levels down). */
static int leaf_of(zhandle_t *zh, char *out, size_t len)
{
    snprintf(out, len, "%s/queues/a/jobs", root);
    for (int level = 0; level < 3; level++) {
        struct String_vector sv;
        if (zoo_get_children(zh, out, 0, &sv) != ZOK)
            return -1;
        int one = sv.count == 1;
        size_t n = strlen(out);
        if (one)
            snprintf(out + n, len - n, "/%s", sv.data[0]);
        deallocate_String_vector(&sv);
        if (!one)
            return -1;
    }
    return 0;
}

/* Y: a job name of LEAF made most urgent (priority 0) with another uid; then one of LEAF's
 * jobs not held (a held one has its lock child) deleted and Y created in one multi, as
 * another writer would: the bucket's count stays. */
static int swap_one(zhandle_t *zh, const char *leaf, char *y, size_t ylen)
{
    struct String_vector sv;
    int rc = zoo_get_children(zh, leaf, 0, &sv);
    for (int i = 0; rc == ZOK && i < sv.count; i++) {
        const char *name = sv.data[i];
        struct job_name jn;
        if (layout_parse_name(name, &jn) != 0)
            continue;
        size_t u = strlen(jn.uid) - 1;
        jn.uid[u] = jn.uid[u] == 'z' ? 'y' : 'z';
        jn.priority = 0;
        if (ylen <= LAYOUT_NAME_MAX || layout_format_name(&jn, y, ylen) != 0)
            continue;
        char xpath[600], ypath[600];
        snprintf(xpath, sizeof xpath, "%s/%s", leaf, name);
        snprintf(ypath, sizeof ypath, "%s/%s", leaf, y);
        zoo_op_t ops[2];
        zoo_op_result_t res[2];
        zoo_delete_op_init(&ops[0], xpath, -1);
        zoo_create_op_init(&ops[1], ypath, "urgent", 6, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        if (zoo_multi(zh, 2, ops, res) == ZOK) {
            deallocate_String_vector(&sv);
            return 0;
        }
    }
    if (rc == ZOK)
        deallocate_String_vector(&sv);
    return -1;
}

enum { TRIES = 100 };

/* A new consumer's first push from d0: the most urgent job d0 knows. 1 when it is Y. The
 * consumer keeps what it got (*KEPT, closed at the end): giving it back (NACK unrun) may
 * rename it within the bucket, a same-count change of its own; a lock is the job's child,
 * not the bucket's, so holding changes nothing the bucket's listing shows. */
static int first_push_is(const char *y, deferd_client **kept)
{
    deferd_client *c = *kept = client(&d[0]);
    deferd_job job = {0};
    int is = c && deferd_subscribe(c, "a", 1) == DEFERD_OK &&
             deferd_next_job(c, &job, 2000) == DEFERD_OK && job.payload &&
             strcmp((const char *)job.payload, "urgent") == 0 && strstr(job.id, y);
    deferd_job_clear(&job);
    return is;
}

static void same_count_change(deferd_client *cons)
{
    deferd_job held = {0};
    CHECK(deferd_next_job(cons, &held, 10000) == DEFERD_OK); /* cons is full: inflight 1 */
    zhandle_t *zh = zk_connect();
    char leaf[512], y[256] = "";
    CHECK(zh && leaf_of(zh, leaf, sizeof leaf) == 0);
    long long l0 = stat_of(&d[0], "listings"), u0 = stat_of(&d[0], "listings_unchanged");
    CHECK(zh && swap_one(zh, leaf, y, sizeof y) == 0);
    /* d0 learns Y only by walking the listing the swap's watch brings (the count alone
     * says nothing changed); until it does, the first push is another job */
    deferd_client *kept[TRIES] = {0};
    int64_t deadline = now_ms() + 10000;
    int seen = 0, tries = 0;
    while (y[0] && !seen && tries < TRIES && now_ms() < deadline &&
           !(seen = first_push_is(y, &kept[tries++])))
        usleep(100000);
    CHECK(seen);
    printf("d0: after a same-count change, %s pushed first: %s (try %d; listings %lld -> %lld, "
           "not walked %lld -> %lld)\n", y, seen ? "yes" : "no", tries, l0,
           stat_of(&d[0], "listings"), u0, stat_of(&d[0], "listings_unchanged"));
    for (int i = 0; i < tries; i++)
        deferd_close(kept[i]);
    deferd_job_clear(&held);
    if (zh)
        zookeeper_close(zh);
}

/* A bucket due later is listed again only shortly before it is due (mirror.c,
 * RELIST_LEAD_MS), however often its watch fires meanwhile: d0's own puts and another
 * daemon's job both fire it, and d0 does not list it again until then; the other
 * daemon's job is still learnt in time and delivered on time by d0's consumer. */
static void relisted_before_due(void)
{
    deferd_client *own = client(&d[0]), *other = client(&d[1]), *cons = client(&d[0]);
    int64_t due = now_ms() + 1900; /* within the lookahead (2 s): listed at once */
    deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)due};
    char id[DEFERD_ID_SIZE], foreign[DEFERD_ID_SIZE];
    CHECK(deferd_subscribe(cons, "b", 64) == DEFERD_OK); /* d0 follows queue b */
    CHECK(deferd_put(own, "b", "first", 5, &o, id, sizeof id) == DEFERD_OK);
    CHECK(wait_stat_at_least(&d[0], "jobs_known", 1, 5000));
    long long listings = stat_of(&d[0], "listings");
    CHECK(deferd_put(other, "b", "foreign", 7, &o, foreign, sizeof foreign) == DEFERD_OK);
    for (int i = 0; i < 20; i++)
        CHECK(deferd_put(own, "b", "own", 3, &o, id, sizeof id) == DEFERD_OK);
    int quiet = 1;
    while (now_ms() < due - 250 - 100) { /* RELIST_LEAD_MS, and a margin for the clocks */
        quiet &= stat_of(&d[0], "listings") == listings;
        usleep(20000);
    }
    CHECK(quiet);
    int64_t got = 0;
    deferd_job job;
    for (int n = 0; n < 22 && now_ms() < due + 5000;) {
        memset(&job, 0, sizeof job);
        if (next_job_push(cons, &job, 100) != 0)
            continue;
        n++;
        if (strcmp(job.id, foreign) == 0)
            got = now_ms();
        CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    printf("bucket due in 1.9 s: d0 listed it %lld more times; the other daemon's job came "
           "%lld ms after its due time\n", stat_of(&d[0], "listings") - listings,
           (long long)(got - due));
    /* learnt before it was due: on time, give or take the acks before it and a loaded machine */
    CHECK(got && got - due < 500);
    deferd_close(own);
    deferd_close(other);
    deferd_close(cons);
}

int main(void)
{
    harness_init("listing", root, sizeof root);
    if (daemons_start(d, 2, root, NULL) != 0)
        return 1;
    relisted_before_due();
    int64_t due = now_ms() + 1500; /* one bucket, within the harness's lookahead (2 s) */
    deferd_client *a = client(&d[0]), *b = client(&d[1]), *cons = client(&d[0]);
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK); /* d0 follows queue a */
    /* one job first: its bucket is made and d0 lists it (the first listing is walked) */
    deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)due};
    deferd_put_item first = {.queue = "a", .payload = "first", .len = 5, .opts = o};
    CHECK(put_keyed(a, &first) == DEFERD_OK);
    long long known = stat_of(&d[0], "jobs_known");
    CHECK(wait_stat_at_least(&d[0], "jobs_known", known + 1, 10000));
    long long before = stat_of(&d[0], "listings_unchanged");
    put_many(a, due);
    CHECK(wait_stat_at_least(&d[0], "jobs_known", known + N + 1, 10000));
    /* its own puts fired its watch on the bucket: listed again, and not walked */
    CHECK(wait_stat_at_least(&d[0], "listings_unchanged", before + 1, 10000));
    deferd_put_item it = {.queue = "a", .payload = "foreign", .len = 7, .opts = o};
    CHECK(put_keyed(b, &it) == DEFERD_OK);
    /* the other daemon's job moved the version by one more than d0's own: walked, learnt */
    CHECK(wait_stat_at_least(&d[0], "jobs_known", known + N + 2, 10000));
    printf("d0: listings_unchanged %lld -> %lld, jobs_known %lld\n", before,
           stat_of(&d[0], "listings_unchanged"), stat_of(&d[0], "jobs_known"));
    same_count_change(cons);
    deferd_close(a);
    deferd_close(b);
    deferd_close(cons);
    daemon_kill(&d[0], SIGTERM);
    daemon_kill(&d[1], SIGTERM);
    return check_report("listing");
}
