/* A key moves with its job (docs/protocol.md, Keys): a nack with a delay, a reschedule
 * back to now and a nack with follow-ups each give the job a new id, and the key node
 * follows it. */
#include <stdlib.h>

#include "harness_keys.h"
#include "layout.h"

static struct daemon_proc d[3];
static char root[128];
static zhandle_t *zh;

/* ---- a nack with a delay, a reschedule and a nack with follow-ups move the key ---- */

static void nack_keeps_key(void)
{
    deferd_client *p = client(&d[0]), *p2 = client(&d[2]), *cons = client(&d[1]);
    deferd_put_item it, again;
    keyed_item(&it, "nq", "nacked", "nk", -1);
    CHECK(put_keyed(p, &it) == 0 && it.duplicate == 0);
    CHECK(deferd_subscribe(cons, "nq", 1) == DEFERD_OK);
    deferd_job job;
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, it.id);
    CHECK(deferd_nack(cons, job.id, 60000) == DEFERD_OK);
    deferd_job_clear(&job);
    char data[200], moved[DEFERD_ID_SIZE];
    CHECK(zk_key_data(zh, root, "nq", "nk", data, sizeof data) > 0);
    snprintf(moved, sizeof moved, "nq/%s", data);
    CHECK(strcmp(moved, it.id) != 0);
    CHECK(!zk_job_exists(zh, root, it.id));
    CHECK(zk_job_exists(zh, root, moved));
    char q[80];
    struct job_name jn;
    CHECK(layout_parse_id(moved, q, sizeof q, &jn) == 0 && strcmp(jn.key, "nk") == 0 &&
          jn.prior_attempts == 1 && jn.due_ms > (uint64_t)now_ms() + 50000);
    keyed_item(&again, "nq", "again", "nk", -1);
    CHECK(put_keyed(p2, &again) == 0);
    CHECK(again.duplicate == 1);
    CHECK_STR(again.id, moved);

    /* back to now by key: delivered promptly, as its second attempt */
    char now_id[DEFERD_ID_SIZE];
    CHECK(deferd_reschedule(p, NULL, "nq", "nk", 0, 0, 0, now_id, sizeof now_id) == DEFERD_OK);
    CHECK(key_names("nq", "nk", now_id));
    CHECK(deferd_next_job(cons, &job, 5000) == DEFERD_OK);
    CHECK_STR(job.id, now_id);
    CHECK(job.attempt == 2);

    /* nack with a follow-up: the key follows the job's new id, the follow-up exists */
    deferd_put_item f;
    keyed_item(&f, "nq", "follow", "nk-f", HOUR_MS);
    char new_id[DEFERD_ID_SIZE] = "x";
    CHECK(deferd_nack_then(cons, job.id, 60000, &f, 1, new_id, sizeof new_id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(new_id[0] != '\0' && strcmp(new_id, now_id) != 0);
    CHECK(key_names("nq", "nk", new_id));
    CHECK(zk_job_exists(zh, root, new_id));
    CHECK(!zk_job_exists(zh, root, now_id));
    CHECK(f.duplicate == 0 && zk_job_exists(zh, root, f.id) && key_names("nq", "nk-f", f.id));
    char out[DEFERD_ID_SIZE];
    CHECK(cancel_key(p, "nq", "nk", 0, out) == DEFERD_OK);
    CHECK_STR(out, new_id);
    CHECK(cancel_key(p, "nq", "nk-f", 0, out) == DEFERD_OK);
    CHECK_STR(out, f.id);
    CHECK(zk_count_jobs(zh, root, "nq") == 0);
    deferd_close(p);
    deferd_close(p2);
    deferd_close(cons);
}

int main(void)
{
    return keys_run("keys_nack", d, root, sizeof root, &zh, nack_keeps_key);
}
