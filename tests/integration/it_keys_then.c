/* ACK then= (docs/protocol.md) creates the follow-ups only with the ack: when the ack
 * succeeds (a follow-up whose key is taken is a duplicate), not when an item is invalid,
 * the job is not held, or the lease was lost (forced cancel, expiry). */
#include <stdlib.h>
#include <unistd.h>

#include "harness_keys.h"
#include "layout.h"

static struct daemon_proc d[3];
static char root[128];
static zhandle_t *zh;

/* ---- ACK then=: follow-ups only with the ack ---- */

#define NF 3

static void follow_items(deferd_put_item *f, const char *prefix, char keys[][32])
{
    for (int i = 0; i < NF; i++) {
        snprintf(keys[i], 32, "%s-%d", prefix, i + 1);
        keyed_item(&f[i], "fq2", "follow-up", keys[i], HOUR_MS);
    }
}

static int none_exist(char keys[][32], int fq2_jobs)
{
    int ok = zk_count_jobs(zh, root, "fq2") == fq2_jobs;
    for (int i = 0; i < NF; i++)
        ok &= key_absent("fq2", keys[i]);
    return ok;
}

static int set_paused(const char *queue, int on)
{
    char path[LAYOUT_PATH_MAX];
    snprintf(path, sizeof path, "%s/queues/%s/paused", root, queue);
    int rc = on ? zoo_create(zh, path, "it_keys", 7, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0)
                : zoo_delete(zh, path, -1);
    return rc == ZOK ? 0 : -1;
}

static void ack_then(void)
{
    deferd_client *p = client(&d[0]), *cons = client(&d[1]);
    deferd_put_item src, f[NF];
    char keys[NF][32];
    deferd_job job;
    CHECK(deferd_subscribe(cons, "fq", 1) == DEFERD_OK);

    /* success, one follow-up's key already taken */
    deferd_put_item taken;
    keyed_item(&taken, "fq2", "taken", "ft-2", HOUR_MS);
    CHECK(put_keyed(p, &taken) == 0);
    keyed_item(&src, "fq", "source", NULL, -1);
    CHECK(put_keyed(p, &src) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, src.id);
    follow_items(f, "ft", keys);
    int rc = deferd_ack_then(cons, job.id, f, NF);
    if (rc != DEFERD_OK)
        fprintf(stderr, "ack then: %s\n", deferd_last_error(cons));
    CHECK(rc == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(!zk_job_exists(zh, root, src.id));
    CHECK(f[0].duplicate == 0 && f[1].duplicate == 1 && f[2].duplicate == 0);
    CHECK_STR(f[1].id, taken.id);
    CHECK(key_names("fq2", "ft-1", f[0].id) && key_names("fq2", "ft-3", f[2].id));
    CHECK(zk_job_exists(zh, root, f[0].id) && zk_job_exists(zh, root, f[2].id));
    CHECK(zk_count_jobs(zh, root, "fq2") == 3);

    /* an item error: nothing changes, the job is still held and can be acked */
    keyed_item(&src, "fq", "source", NULL, -1);
    CHECK(put_keyed(p, &src) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    follow_items(f, "fi", keys);
    f[2].queue = "nosuchqueue";
    rc = deferd_ack_then(cons, job.id, f, NF);
    printf("ack then with an unknown queue at 3: rc %d, %s\n", rc, deferd_last_error(cons));
    CHECK(rc == DEFERD_ESERVER);
    if (rc == DEFERD_ESERVER)
        CHECK_CONTAINS(deferd_last_error(cons), "item 3");
    CHECK(none_exist(keys, 3));
    CHECK(zk_job_exists(zh, root, src.id) || zk_job_claimed(zh, root, src.id)); /* still held */
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);

    /* not held by this connection: NOT_FOUND, nothing created */
    keyed_item(&src, "fq", "other's", NULL, HOUR_MS);
    CHECK(put_keyed(p, &src) == 0);
    follow_items(f, "fn", keys);
    CHECK(err_is(cons, deferd_ack_then(cons, src.id, f, NF), "NOT_FOUND"));
    CHECK(none_exist(keys, 3));
    CHECK(cancel_id(p, src.id, 0, NULL) == DEFERD_OK);

    /* lease lost by a forced cancel */
    keyed_item(&src, "fq", "source", NULL, -1);
    CHECK(put_keyed(p, &src) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, src.id);
    CHECK(cancel_id(p, job.id, 1, NULL) == DEFERD_OK);
    follow_items(f, "fl", keys);
    CHECK(err_is(cons, deferd_ack_then(cons, job.id, f, NF), "LEASE_LOST"));
    deferd_job_clear(&job);
    CHECK(none_exist(keys, 3));

    /* lease expired (ttr 1 s), the queue paused meanwhile so that the job is not handed
     * to this connection again before the ack is tried */
    keyed_item(&src, "fq", "short lease", "fx", -1);
    src.opts.has_ttr = 1;
    src.opts.ttr_ms = DEFERD_TTR_MIN_MS;
    CHECK(put_keyed(p, &src) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, src.id);
    CHECK(job.ttr_ms == DEFERD_TTR_MIN_MS);
    deferd_job_clear(&job);
    CHECK(set_paused("fq", 1) == 0);
    CHECK(wait_stats(&d[1], "paused.fq=1", 1));
    int expired = 0;
    int64_t deadline = now_ms() + 10000;
    while (!expired && now_ms() < deadline) {
        deferd_event ev;
        if (deferd_next_event(cons, &ev, 200) != DEFERD_OK)
            continue;
        expired = ev.kind == DEFERD_EV_EXPIRED && strcmp(ev.job.id, src.id) == 0;
        CHECK(ev.kind != DEFERD_EV_JOB);
        deferd_job_clear(&ev.job);
    }
    CHECK(expired);
    follow_items(f, "fe", keys);
    CHECK(err_is(cons, deferd_ack_then(cons, src.id, f, NF), "LEASE_LOST"));
    CHECK(none_exist(keys, 3));
    CHECK(zk_job_exists(zh, root, src.id) && key_names("fq", "fx", src.id));
    /* resumed: delivered again, and this ack creates them */
    CHECK(set_paused("fq", 0) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, src.id);
    CHECK(job.attempt == 2);
    follow_items(f, "fe", keys);
    CHECK(deferd_ack_then(cons, job.id, f, NF) == DEFERD_OK);
    deferd_job_clear(&job);
    for (int i = 0; i < NF; i++)
        CHECK(f[i].duplicate == 0 && key_names("fq2", keys[i], f[i].id));
    CHECK(key_absent("fq", "fx"));
    CHECK(zk_count_jobs(zh, root, "fq") == 0 && zk_count_jobs(zh, root, "fq2") == 6);
    deferd_close(p);
    deferd_close(cons);
}

int main(void)
{
    return keys_run("keys_then", d, root, sizeof root, &zh, ack_then);
}
