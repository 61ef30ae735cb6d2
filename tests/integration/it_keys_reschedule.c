/* RESCHEDULE (docs/protocol.md): by id and by key; earlier is delivered promptly, later is
 * not delivered at the old due time; the key follows the job's new id. */
#include <stdlib.h>

#include "harness_keys.h"
#include "layout.h"

static struct daemon_proc d[3];
static char root[128];
static zhandle_t *zh;

/* ---- RESCHEDULE ---- */

static void reschedule(void)
{
    deferd_client *p = client(&d[0]), *p2 = client(&d[2]), *cons = client(&d[1]);
    CHECK(deferd_subscribe(cons, "rq", 4) == DEFERD_OK);
    char nid[DEFERD_ID_SIZE];
    deferd_job job;

    /* earlier: an hour out to now, by id and by key; delivered at once */
    for (int by_key = 0; by_key < 2; by_key++) {
        deferd_put_item it;
        const char *key = by_key ? "r-early-key" : "r-early-id";
        keyed_item(&it, "rq", "earlier", key, HOUR_MS);
        CHECK(put_keyed(p, &it) == 0);
        int64_t t0 = now_ms();
        int rc = by_key
                     ? deferd_reschedule(p2, NULL, "rq", key, 1, (uint64_t)t0, 0, nid, sizeof nid)
                     : deferd_reschedule(p2, it.id, NULL, NULL, 0, 0, 0, nid, sizeof nid);
        if (rc != DEFERD_OK)
            fprintf(stderr, "reschedule %s: %s\n", key, deferd_last_error(p2));
        CHECK(rc == DEFERD_OK);
        CHECK(strcmp(nid, it.id) != 0 && id_has_key(nid, key));
        CHECK(!zk_job_exists(zh, root, it.id));
        CHECK(key_names("rq", key, nid));
        rc = deferd_next_job(cons, &job, 5000);
        int64_t took = now_ms() - t0;
        CHECK(rc == DEFERD_OK);
        if (rc != DEFERD_OK)
            continue;
        printf("rescheduled %s from an hour out to now: delivered %lld ms later\n",
               by_key ? "by key" : "by id", (long long)took);
        CHECK_STR(job.id, nid);
        CHECK(job.attempt == 1);
        CHECK(took <= 3000);
        CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
        CHECK(key_absent("rq", key));
        CHECK(err_is(p2, deferd_reschedule(p2, it.id, NULL, NULL, 0, 0, 0, nid, sizeof nid),
                     "NOT_FOUND"));
    }

    /* later: due in 1.5 s, moved an hour out, by id and by key; not delivered at 1.5 s */
    deferd_put_item late[2];
    char moved[2][DEFERD_ID_SIZE];
    int64_t latest_due = 0;
    for (int by_key = 0; by_key < 2; by_key++) {
        const char *key = by_key ? "r-late-key" : "r-late-id";
        keyed_item(&late[by_key], "rq", "later", key, 1500);
        CHECK(put_keyed(p, &late[by_key]) == 0);
        latest_due = now_ms() + 1500;
        uint64_t at = (uint64_t)(now_ms() + HOUR_MS);
        int rc = by_key ? deferd_reschedule(p2, NULL, "rq", key, 1, at, 0, moved[by_key],
                                            DEFERD_ID_SIZE)
                        : deferd_reschedule(p2, late[by_key].id, NULL, NULL, 0, 0, HOUR_MS,
                                            moved[by_key], DEFERD_ID_SIZE);
        CHECK(rc == DEFERD_OK);
        CHECK(key_names("rq", key, moved[by_key]));
        CHECK(!zk_job_exists(zh, root, late[by_key].id) && zk_job_exists(zh, root, moved[by_key]));
        char q[80];
        struct job_name jn;
        CHECK(layout_parse_id(moved[by_key], q, sizeof q, &jn) == 0 &&
              jn.due_ms >= (uint64_t)(now_ms() + HOUR_MS - 60000));
    }
    int64_t until = latest_due + 1500;
    int delivered = 0;
    while (now_ms() < until) { /* the consumer waits past the old due times */
        if (deferd_next_job(cons, &job, (int)(until - now_ms())) == DEFERD_OK) {
            fprintf(stderr, "delivered after a reschedule to later: %s\n", job.id);
            delivered++;
            deferd_job_clear(&job);
        }
    }
    CHECK(delivered == 0);
    for (int i = 0; i < 2; i++)
        CHECK(zk_job_exists(zh, root, moved[i]));
    char out[DEFERD_ID_SIZE];
    CHECK(cancel_key(p, "rq", "r-late-key", 0, out) == DEFERD_OK && strcmp(out, moved[1]) == 0);
    CHECK(cancel_id(p, moved[0], 0, out) == DEFERD_OK);
    CHECK(key_absent("rq", "r-late-id") && key_absent("rq", "r-late-key"));
    CHECK(err_is(p, deferd_reschedule(p, NULL, "rq", "never-put", 0, 0, 0, out, sizeof out),
                 "NOT_FOUND"));
    CHECK(zk_count_jobs(zh, root, "rq") == 0);
    deferd_close(p);
    deferd_close(p2);
    deferd_close(cons);
}

int main(void)
{
    return keys_run("keys_reschedule", d, root, sizeof root, &zh, reschedule);
}
