/* Short bucket names (layout version 4, issue 43) against a real ZooKeeper: on a root at
 * version 3 the daemon puts jobs in the full form; `deferctl layout --short-names --yes`
 * writes 4 and its next puts are short (the name's "-c", L2 and L3 named by their own
 * digits). Jobs of both forms side by side are listed by deferctl (paged one job at a time
 * through windows that hold both forms: each job once, in due order), counted in the queue's
 * depth, found by their ids (cancel), delivered, and keep their form when a nack moves them.
 * A path of two forms, or a "-c" job in full-form buckets, is foreign: logged once, never
 * delivered, never deleted. */
#include <zookeeper/zookeeper.h>

#include "harness.h"
#include "layout.h"

static struct daemon_proc d;
static char root[128];

static int is_short(const char *id)
{
    char queue[80];
    struct job_name jn;
    return layout_parse_id(id, queue, sizeof queue, &jn) == 0 && jn.short_buckets;
}

static uint64_t due_of(const char *id)
{
    char queue[80];
    struct job_name jn;
    return layout_parse_id(id, queue, sizeof queue, &jn) == 0 ? jn.due_ms : 0;
}

/* The bucket path of queue a at DUE, named as the test expects each form to be. */
static void leaf_path(char *buf, size_t len, uint64_t due, int short_l2, int short_l3)
{
    uint64_t l2 = due / 100000, l3 = due / 100;
    snprintf(buf, len, "%s/queues/a/jobs/%llu/%llu/%llu", root,
             (unsigned long long)(due / 10000000), (unsigned long long)(short_l2 ? l2 % 100 : l2),
             (unsigned long long)(short_l3 ? l3 % 1000 : l3));
}

/* The job's znode is where the test expects its form to put it. */
static void check_path(zhandle_t *zh, const char *id, int short_form)
{
    char want[LAYOUT_PATH_MAX], got[LAYOUT_PATH_MAX];
    leaf_path(want, sizeof want, due_of(id), short_form, short_form);
    size_t n = strlen(want);
    snprintf(want + n, sizeof want - n, "/%s", strchr(id, '/') + 1);
    CHECK(job_path(root, id, got, sizeof got) == 0);
    CHECK_STR(got, want);
    CHECK(zk_exists(zh, want));
}

/* Two jobs no id leads to, due with DUE: one under a full L3 in a short L2, and a "-c" name
 * in full buckets. Their paths into FOREIGN, and what the daemon names foreign into LOGGED:
 * the full L3 itself, and the "-c" job. */
static void make_foreign(zhandle_t *zh, uint64_t due, char foreign[2][LAYOUT_PATH_MAX],
                         char logged[2][LAYOUT_PATH_MAX])
{
    char leaf[LAYOUT_PATH_MAX - 64];
    leaf_path(leaf, sizeof leaf, due, 1, 0);
    snprintf(logged[0], LAYOUT_PATH_MAX, "%s", leaf);
    snprintf(foreign[0], LAYOUT_PATH_MAX, "%s/%llu-0-mixedforms", leaf, (unsigned long long)due);
    leaf_path(leaf, sizeof leaf, due, 0, 0);
    snprintf(foreign[1], LAYOUT_PATH_MAX, "%s/%llu-0-wrongform-c", leaf,
             (unsigned long long)due);
    snprintf(logged[1], LAYOUT_PATH_MAX, "%s", foreign[1]);
    for (int i = 0; i < 2; i++)
        CHECK(zk_create_path(zh, foreign[i], "x") == ZOK);
}

/* Takes the pushes of C until N arrived (or 20 s); each one's id into IDS and its attempt. */
static int take(deferd_client *c, int n, char ids[][DEFERD_ID_SIZE], int *attempts)
{
    int got = 0;
    int64_t deadline = now_ms() + 20000;
    while (got < n && now_ms() < deadline) {
        deferd_job job;
        if (next_job_push(c, &job, 200) != 0)
            continue;
        snprintf(ids[got], DEFERD_ID_SIZE, "%s", job.id);
        attempts[got++] = (int)job.attempt;
        deferd_job_clear(&job);
    }
    return got;
}

/* Jobs of both forms in the same 100-second and 100 ms windows: T + 10, 30 and 250 ms put
 * full (before the upgrade), T + 20, 40 and 260 short (after it). */
enum { INTERLEAVED = 6 };
static const int64_t offsets[INTERLEAVED] = {10, 30, 250, 20, 40, 260};

/* deferctl list one job a page from T: every job of both forms once, in due order. */
static void pages_in_order(int64_t t)
{
    char args[400], out[4096], last[DEFERD_ID_SIZE] = "";
    int64_t seen[INTERLEAVED + 1];
    int n = 0;
    for (int page = 0; page <= INTERLEAVED; page++) {
        int k = snprintf(args, sizeof args, "list a --limit 1 --from %lld --until %lld",
                         (long long)t, (long long)t + 999);
        if (last[0])
            snprintf(args + k, sizeof args - (size_t)k, " --after %s", last);
        CHECK(run_deferctl(&d, args, out, sizeof out) == 0);
        char *row = strchr(out, '\n'); /* after the header */
        if (!row || !row[1])
            break;
        sscanf(row + 1, "%199s", last);
        seen[n++] = (int64_t)due_of(last) - t;
    }
    CHECK(n == INTERLEAVED);
    for (int i = 0; i < n; i++)
        if (i > 0)
            CHECK(seen[i] > seen[i - 1]);
    if (n != INTERLEAVED)
        fprintf(stderr, "paged %d of %d jobs\n", n, INTERLEAVED);
}

static int index_of(char ids[][DEFERD_ID_SIZE], int n, const char *uid_of)
{
    char want[DEFERD_UID_SIZE], uid[DEFERD_UID_SIZE];
    if (deferd_job_uid(uid_of, want, sizeof want) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (deferd_job_uid(ids[i], uid, sizeof uid) == 0 && strcmp(uid, want) == 0)
            return i;
    return -1;
}

int main(void)
{
    harness_init("short_names", root, sizeof root);
    zhandle_t *zh = zk_connect();
    char marker[160], out[8192];
    snprintf(marker, sizeof marker, "%s/layout", root);
    CHECK(zoo_create(zh, root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
    CHECK(zoo_create(zh, marker, "3", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
    static const char *const often[] = {"metrics.depth_interval=1s", NULL};
    if (daemon_start(&d, root, "d0", often) != 0)
        return 1;
    CHECK(wait_stats(&d, " layout_version=3 ", 1));

    /* full: F[0] and F[1] due soon, F[2] in ten minutes */
    enum { SOON = 3000, LATER = 600000 };
    char full[3][DEFERD_ID_SIZE], shrt[3][DEFERD_ID_SIZE], mixed[INTERLEAVED][DEFERD_ID_SIZE];
    int64_t t = (now_ms() + 1200000) / 100000 * 100000; /* 20-21 minutes ahead */
    deferd_client *prod = client(&d);
    for (int i = 0; i < 3; i++)
        CHECK(put_job(prod, "a", "full", i < 2 ? SOON : LATER, -1, -1, full[i]) == 0);
    for (int i = 0; i < INTERLEAVED / 2; i++)
        CHECK(put_job(prod, "a", "m", -1, t + offsets[i], -1, mixed[i]) == 0);
    long mark = log_mark(&d);
    CHECK(run_deferctl(&d, "layout --short-names --yes", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "layout version 4 (changed)");
    CHECK(log_wait(&d, mark, "layout version 4", 10000));
    for (int i = 0; i < 3; i++)
        CHECK(put_job(prod, "a", "short", i < 2 ? SOON : LATER, -1, -1, shrt[i]) == 0);
    for (int i = INTERLEAVED / 2; i < INTERLEAVED; i++)
        CHECK(put_job(prod, "a", "m", -1, t + offsets[i], -1, mixed[i]) == 0);
    for (int i = 0; i < INTERLEAVED; i++)
        CHECK(is_short(mixed[i]) == (i >= INTERLEAVED / 2));
    pages_in_order(t);
    for (int i = 0; i < 3; i++) {
        CHECK(!is_short(full[i]) && is_short(shrt[i]));
        check_path(zh, full[i], 0);
        check_path(zh, shrt[i], 1);
    }
    char foreign[2][LAYOUT_PATH_MAX], logged[2][LAYOUT_PATH_MAX];
    make_foreign(zh, due_of(shrt[0]), foreign, logged);

    /* both forms listed and counted; the foreign ones neither */
    CHECK(run_deferctl(&d, "list a --limit 100", out, sizeof out) == 0);
    for (int i = 0; i < 3; i++) {
        CHECK_CONTAINS(out, full[i]);
        CHECK_CONTAINS(out, shrt[i]);
    }
    CHECK(!strstr(out, "mixedforms") && !strstr(out, "wrongform"));
    CHECK(wait_queue_stat(prod, "a", "depth_hour", 2 + INTERLEAVED, 15000));

    /* found by their ids */
    CHECK(deferd_cancel(prod, full[2], NULL, NULL, 0, NULL, 0) == DEFERD_OK);
    CHECK(deferd_cancel(prod, shrt[2], NULL, NULL, 0, NULL, 0) == DEFERD_OK);
    CHECK(!zk_job_exists(zh, root, full[2]) && !zk_job_exists(zh, root, shrt[2]));

    /* delivered; a nack with a delay moves each to a name of its own form */
    deferd_client *cons = client(&d);
    CHECK(deferd_subscribe(cons, "a", 8) == DEFERD_OK);
    char got[8][DEFERD_ID_SIZE];
    int attempts[8];
    CHECK(take(cons, 4, got, attempts) == 4);
    for (int i = 0; i < 4; i++)
        CHECK(deferd_nack(cons, got[i], 200) == DEFERD_OK);
    CHECK(take(cons, 4, got + 4, attempts + 4) == 4);
    const char *first[] = {full[0], full[1], shrt[0], shrt[1]};
    for (int k = 0; k < 4; k++) {
        int at = index_of(got, 4, first[k]), again = index_of(got + 4, 4, first[k]);
        CHECK(at >= 0 && again >= 0);
        if (at < 0 || again < 0)
            continue;
        CHECK(strcmp(got[at], first[k]) == 0 && attempts[at] == 1);
        CHECK(attempts[4 + again] == 2 && is_short(got[4 + again]) == (k >= 2));
        CHECK(strcmp(got[4 + again], first[k]) != 0); /* moved: a new name */
        CHECK(deferd_ack(cons, got[4 + again]) == DEFERD_OK);
    }
    CHECK(wait_queue_stat(prod, "a", "depth_overdue", 0, 15000));

    /* the foreign ones: logged once each, still there */
    for (int i = 0; i < 2; i++) {
        char line[LAYOUT_PATH_MAX + 40];
        snprintf(line, sizeof line, "ignoring znode %s:", logged[i]);
        CHECK(log_count(&d, 0, line) == 1);
        CHECK(zk_exists(zh, foreign[i]));
    }
    deferd_close(cons);
    deferd_close(prod);
    daemon_kill(&d, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_short_names");
}
