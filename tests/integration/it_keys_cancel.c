/* CANCEL (docs/protocol.md): by id and by key, of a pending and of a due job, removes job
 * and key; a held job is not cancelled (IN_FLIGHT), nor rescheduled, unless forced, and
 * then its holder's ack or nack fails (LEASE_LOST). */
#include <stdlib.h>

#include "harness_keys.h"
#include "layout.h"

static struct daemon_proc d[3];
static char root[128];
static zhandle_t *zh;

/* ---- CANCEL ---- */

static void cancel(void)
{
    deferd_client *p = client(&d[0]), *p2 = client(&d[1]);
    char out[DEFERD_ID_SIZE];
    static const struct {
        const char *key;
        int64_t delay;
        int by_key;
    } cases[] = {{"c-pend-id", HOUR_MS, 0}, {"c-pend-key", HOUR_MS, 1},
                 {"c-due-id", 0, 0},        {"c-due-key", 0, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        deferd_put_item it;
        keyed_item(&it, "cq", "cancel me", cases[i].key, cases[i].delay);
        CHECK(put_keyed(p, &it) == 0 && it.duplicate == 0);
        CHECK(key_names("cq", cases[i].key, it.id));
        out[0] = '\0';
        int rc = cases[i].by_key ? cancel_key(p2, "cq", cases[i].key, 0, out)
                                 : cancel_id(p2, it.id, 0, out);
        if (rc != DEFERD_OK)
            fprintf(stderr, "cancel %s: %s\n", cases[i].key, deferd_last_error(p2));
        CHECK(rc == DEFERD_OK);
        CHECK_STR(out, it.id);
        CHECK(!zk_job_exists(zh, root, it.id));
        CHECK(key_absent("cq", cases[i].key));
        CHECK(err_is(p2, cancel_id(p2, it.id, 0, out), "NOT_FOUND"));
        CHECK(err_is(p2, cancel_key(p2, "cq", cases[i].key, 0, out), "NOT_FOUND"));
    }
    CHECK(err_is(p, cancel_key(p, "cq", "never-put", 0, out), "NOT_FOUND"));
    CHECK(err_is(p, cancel_key(p, "cq", "never-put", 1, out), "NOT_FOUND"));
    CHECK(zk_count_jobs(zh, root, "cq") == 0);

    /* held by a consumer on daemon 3: not cancelled, not moved, unless forced */
    deferd_client *cons = client(&d[2]);
    deferd_put_item it;
    keyed_item(&it, "cq", "held", "c-held", -1);
    CHECK(put_keyed(p, &it) == 0);
    CHECK(deferd_subscribe(cons, "cq", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, it.id);
    char path[LAYOUT_PATH_MAX], lock[LAYOUT_PATH_MAX + 8];
    CHECK(job_path(root, it.id, path, sizeof path) == 0);
    snprintf(lock, sizeof lock, "%s/lock", path);
    CHECK(zk_exists(zh, lock));
    CHECK(err_is(p, cancel_id(p, it.id, 0, out), "IN_FLIGHT"));
    CHECK(err_is(p2, cancel_key(p2, "cq", "c-held", 0, out), "IN_FLIGHT"));
    CHECK(err_is(p, deferd_reschedule(p, it.id, NULL, NULL, 0, 0, HOUR_MS, out, sizeof out),
                 "IN_FLIGHT"));
    CHECK(err_is(p2, deferd_reschedule(p2, NULL, "cq", "c-held", 0, 0, 0, out, sizeof out),
                 "IN_FLIGHT"));
    CHECK(zk_exists(zh, path) && zk_exists(zh, lock));
    CHECK(key_names("cq", "c-held", it.id));
    out[0] = '\0';
    CHECK(cancel_key(p, "cq", "c-held", 1, out) == DEFERD_OK);
    CHECK_STR(out, it.id);
    CHECK(!zk_exists(zh, path));
    CHECK(key_absent("cq", "c-held"));
    CHECK(err_is(cons, deferd_ack(cons, job.id), "LEASE_LOST"));
    deferd_job_clear(&job);
    /* forced by id, the holder's nack fails the same way */
    keyed_item(&it, "cq", "held", "c-held2", -1);
    CHECK(put_keyed(p, &it) == 0);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, it.id);
    CHECK(cancel_id(p2, it.id, 1, out) == DEFERD_OK);
    CHECK_STR(out, it.id);
    CHECK(!zk_job_exists(zh, root, it.id) && key_absent("cq", "c-held2"));
    CHECK(err_is(cons, deferd_nack(cons, job.id, 1000), "LEASE_LOST"));
    deferd_job_clear(&job);
    CHECK(zk_count_jobs(zh, root, "cq") == 0);
    CHECK(deferd_next_job(cons, &job, 300) == DEFERD_ETIMEDOUT);
    deferd_close(cons);
    deferd_close(p);
    deferd_close(p2);
}

int main(void)
{
    return keys_run("keys_cancel", d, root, sizeof root, &zh, cancel);
}
