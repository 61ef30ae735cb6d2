/* Put tokens (PUT idem=, zookeeper-layout.md "Put tokens"): a put sent again with the same
 * token is answered with the job its first try made, never a second job, whatever became
 * of that job since (delivered and acked, here), for jobs due now, packed far jobs and the
 * jobs of a BATCH; a token too old or malformed is refused with a clear error; the sweep
 * deletes minute directories of tokens past their use and leaves current and foreign ones
 * alone. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "harness_pack.h"
#include "httpget.h"

static char root[128];

static void token(char *buf, size_t len, int64_t ms, const char *tag)
{
    snprintf(buf, len, "%lld-%s%08x", (long long)ms, tag, (unsigned)getpid());
}

/* A job due now, delivered and acked; the same put again answers its id, and no job
 * exists afterwards. */
static void retry_after_ack(const struct daemon_proc *d)
{
    char tok[64], req[256], first[256], again[256];
    token(tok, sizeof tok, now_ms(), "ack");
    snprintf(req, sizeof req, "PUT emails 5 idem=%s\nfirst\n", tok);
    deferd_client *c = client(d);
    CHECK(deferd_subscribe(c, "emails", 1) == DEFERD_OK);
    CHECK(raw_request(d, req, 1, first, sizeof first, 10000) == 1);
    printf("first try: %s", first);
    CHECK(strncmp(first, "OK emails/", 10) == 0);
    deferd_job job;
    memset(&job, 0, sizeof job);
    CHECK(next_job_push(c, &job, 10000) == 0);
    CHECK(strncmp(first + 3, job.id, strlen(job.id)) == 0);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(raw_request(d, req, 1, again, sizeof again, 10000) == 1);
    printf("the same put after the job was acked: %s", again);
    CHECK_STR(again, first); /* the same id, and not "duplicate" */
    CHECK(deferd_next_job(c, &job, 1000) == DEFERD_ETIMEDOUT); /* nothing made again */
    zhandle_t *zh = zk_connect();
    CHECK(zk_count_jobs(zh, root, "emails") == 0);
    zookeeper_close(zh);
    deferd_close(c);
}

/* A far job (packed) and a BATCH: the same ids again. */
static void retry_packed_and_batch(const struct daemon_proc *d)
{
    char t1[64], t2[64], t3[64], req[512], first[512], again[512];
    token(t1, sizeof t1, now_ms(), "far");
    snprintf(req, sizeof req, "PUT emails 3 delay=2592000000 idem=%s\nfar\n", t1);
    CHECK(raw_request(d, req, 1, first, sizeof first, 10000) == 1);
    CHECK(raw_request(d, req, 1, again, sizeof again, 10000) == 1);
    printf("far put, twice: %s%s", first, again);
    CHECK(strncmp(first, "OK emails/p", 11) == 0); /* packed (layout 2) */
    CHECK_STR(again, first);
    token(t2, sizeof t2, now_ms(), "ba");
    token(t3, sizeof t3, now_ms(), "bb");
    snprintf(req, sizeof req, "BATCH 2\nPUT emails 2 idem=%s\nb1\nPUT a 2 delay=60000 idem=%s\nb2\n",
             t2, t3);
    CHECK(raw_request(d, req, 1, first, sizeof first, 10000) == 1);
    CHECK(raw_request(d, req, 1, again, sizeof again, 10000) == 1);
    printf("batch, twice: %s%s", first, again);
    CHECK(strncmp(first, "OK n=2 ", 7) == 0 && strstr(first, " dup=-") != NULL);
    CHECK_STR(again, first);
}

/* A BATCH of 50 jobs with tokens sent again: every job answered with its first try's id at
 * once (the tokens are read together, not one per round trip). Two far puts with one token
 * in one write (a producer sending it twice at once): both answered with one job. No retry
 * is logged as a failure. */
static void retry_many(const struct daemon_proc *d)
{
    enum { N = 50 };
    static char req[N * 128], first[N * 128], again[N * 128];
    long mark = log_mark(d);
    size_t len = (size_t)snprintf(req, sizeof req, "BATCH %d\n", N);
    int64_t ms = now_ms();
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(req + len, sizeof req - len,
                                "PUT emails 2 delay=%d idem=%lld-many%04d%x\nm%d\n",
                                i % 2 ? 0 : 2592000, (long long)ms, i, (unsigned)getpid(), i % 10);
    CHECK(raw_request(d, req, 1, first, sizeof first, 10000) == 1);
    int64_t sent = now_ms();
    CHECK(raw_request(d, req, 1, again, sizeof again, 10000) == 1);
    printf("a batch of %d with tokens sent again: answered in %lld ms, %s\n", N,
           (long long)(now_ms() - sent), strcmp(first, again) == 0 ? "the same ids" : again);
    CHECK(strncmp(first, "OK n=50 ", 8) == 0);
    CHECK_STR(again, first);
    char tok[64], out[1024];
    token(tok, sizeof tok, now_ms(), "twin");
    snprintf(req, sizeof req, "PUT emails 4 delay=2592000000 idem=%s\ntwin\n"
             "PUT emails 4 delay=2592000000 idem=%s\ntwin\n", tok, tok);
    CHECK(raw_request(d, req, 2, out, sizeof out, 10000) == 2);
    printf("one token twice in one write: %s", out);
    char *second = strchr(out, '\n');
    CHECK(strncmp(out, "OK emails/p", 11) == 0 && second &&
          strncmp(out, second + 1, (size_t)(second - out)) == 0);
    token(tok, sizeof tok, now_ms(), "pair");
    snprintf(req, sizeof req, "BATCH 2\nPUT emails 1 idem=%s\nx\nPUT emails 1 idem=%s\ny\n", tok,
             tok);
    CHECK(raw_request(d, req, 1, out, sizeof out, 10000) == 1);
    printf("one token twice in a batch: %s", out);
    CHECK(strncmp(out, "ERR BAD_REQUEST", 15) == 0 && strstr(out, "given twice"));
    /* the same across the parts of a batch too big for one transaction (2 x 500 KB) */
    enum { BIG = 500000 };
    char *big = malloc(2 * (BIG + 128) + 32);
    CHECK(big != NULL);
    if (big) {
        size_t at = (size_t)sprintf(big, "BATCH 2\n");
        for (int k = 0; k < 2; k++) {
            at += (size_t)sprintf(big + at, "PUT emails %d idem=%s\n", BIG, tok);
            memset(big + at, 'b', BIG);
            at += BIG;
            big[at++] = '\n';
        }
        big[at] = '\0';
        CHECK(raw_request(d, big, 1, out, sizeof out, 10000) == 1);
        printf("one token twice in a batch of two parts: %s", out);
        CHECK(strncmp(out, "ERR BAD_REQUEST item 2: idem token", 34) == 0);
        free(big);
    }
    CHECK(log_count(d, mark, "failed") == 0);
}

static void refused(const struct daemon_proc *d)
{
    char req[256], out[512];
    snprintf(req, sizeof req, "PUT emails 1 idem=%lld-oldtoken\nx\n",
             (long long)(now_ms() - 400000));
    CHECK(raw_request(d, req, 1, out, sizeof out, 10000) == 1);
    printf("an old token: %s", out);
    CHECK(strncmp(out, "ERR BAD_REQUEST idem token", 26) == 0 && strstr(out, "old") != NULL);
    CHECK(raw_request(d, "PUT emails 1 idem=nope\nx\n", 1, out, sizeof out, 10000) == 1);
    printf("a malformed token: %s", out);
    CHECK(strncmp(out, "ERR BAD_REQUEST bad idem token", 30) == 0);
}

/* Made by hand before the daemon starts: a minute past its use, the current minute, and a
 * foreign node. The first pass (within seconds of the start) deletes only the first. */
static void plant_tokens(zhandle_t *zh, char *old_dir, char *cur_dir, char *foreign, size_t len)
{
    char path[512];
    long long minute = (long long)(now_ms() / 60000);
    snprintf(old_dir, len, "%s/queues/a/tokens/%lld", root, minute - 20);
    snprintf(cur_dir, len, "%s/queues/a/tokens/%lld", root, minute);
    snprintf(foreign, len, "%s/queues/a/tokens/not-a-minute", root);
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/queues", root);
    zoo_create(zh, tmp, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    snprintf(tmp, sizeof tmp, "%s/queues/a", root);
    zoo_create(zh, tmp, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    snprintf(tmp, sizeof tmp, "%s/queues/a/tokens", root);
    zoo_create(zh, tmp, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    const char *made[] = {old_dir, cur_dir, foreign};
    for (int i = 0; i < 3; i++) {
        CHECK(zoo_create(zh, made[i], NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
        for (int k = 0; k < 3 && i < 2; k++) {
            snprintf(path, sizeof path, "%s/%lld-planted%03d", made[i], minute * 60000, k);
            CHECK(zoo_create(zh, path, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
        }
    }
}

/* The first pass's work in STATS and /metrics: the old minute's directory and its three
 * tokens (the current minute's and the foreign node are not this daemon's to delete). */
static void sweep_counted(const struct daemon_proc *d)
{
    CHECK(wait_stats(d, " token_sweeps=1 token_dirs_swept=1 tokens_swept=3", 1));
    CHECK(metric_in_log(d->log, "deferd_token_sweeps_total") == 1);
    CHECK(metric_in_log(d->log, "deferd_token_dirs_swept_total") == 1);
    CHECK(metric_in_log(d->log, "deferd_tokens_swept_total") == 3);
}

int main(void)
{
    harness_init("tokens", root, sizeof root);
    char old_dir[300], cur_dir[300], foreign[300];
    zhandle_t *zh = zk_connect();
    CHECK(zh != NULL && pack_marker_set(zh, root, "2") == ZOK);
    plant_tokens(zh, old_dir, cur_dir, foreign, sizeof old_dir);
    struct daemon_proc d;
    const char *const packing[] = {PACK_TEST_OVERRIDES("emails"), "daemon.max_payload=512KiB",
                                   "metrics.listen=127.0.0.1:0", NULL};
    if (daemon_start(&d, root, "t1", packing) != 0 || daemon_wait_connected(&d, 10000) != 0)
        return 1;
    int64_t deadline = now_ms() + 15000;
    while (now_ms() < deadline && zk_exists(zh, old_dir))
        usleep(100000);
    printf("token sweep: old minute %s, current %s, foreign %s\n",
           zk_exists(zh, old_dir) ? "kept" : "deleted", zk_exists(zh, cur_dir) ? "kept" : "deleted",
           zk_exists(zh, foreign) ? "kept" : "deleted");
    CHECK(!zk_exists(zh, old_dir));
    CHECK(zk_exists(zh, cur_dir) && zk_exists(zh, foreign));
    sweep_counted(&d);
    retry_after_ack(&d);
    retry_packed_and_batch(&d);
    retry_many(&d);
    refused(&d);
    zookeeper_close(zh);
    daemon_kill(&d, SIGTERM);
    return check_report("it_tokens");
}
