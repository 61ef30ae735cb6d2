/* Pipelined puts (deferd_put_send / deferd_put_recv): replies come back in order, an ERR in
 * the middle costs only its own put, other requests are refused while puts are
 * outstanding, and pushes and put replies on one connection are kept apart. */
#include <stdlib.h>

#include "harness.h"
#include "layout.h"

static struct daemon_proc d;
static char root[128];

/* The job id carries the put's priority: it tells which put a reply belongs to. */
static int id_priority(const char *id)
{
    char queue[80];
    struct job_name jn;
    if (layout_parse_id(id, queue, sizeof queue, &jn) != 0)
        return -1;
    return (int)jn.priority;
}

/* 500 puts in flight on one connection, the 250th to a queue that does not exist: it alone
 * fails, at its position; a consumer then gets exactly the 499 others. */
static void five_hundred(zhandle_t *zh)
{
    enum { N = 500, BAD = 250, PAYLOAD = 1000 };
    deferd_client *prod = client(&d), *cons = client(&d);
    static char payload[PAYLOAD + 1];
    char id[DEFERD_ID_SIZE];
    static char ids[N][DEFERD_ID_SIZE];

    CHECK(deferd_put_recv(prod, id, sizeof id, 1000) == DEFERD_EARG); /* none outstanding */
    CHECK_CONTAINS(deferd_last_error(prod), "no pipelined put");
    /* 1000 byte payloads: half a megabyte, more than the socket buffers hold, so sending
     * has to wait for deferd and read its replies meanwhile. */
    for (int i = 0; i < N; i++) {
        memset(payload, 'x', PAYLOAD);
        int n = snprintf(payload, sizeof payload, "%d:", i);
        payload[n] = 'x';
        deferd_put_opts o = {.has_priority = 1, .priority = (uint32_t)i};
        int rc = deferd_put_send(prod, i == BAD ? "nosuchqueue" : "a", payload, PAYLOAD, &o);
        CHECK(rc == DEFERD_OK);
        CHECK(deferd_puts_outstanding(prod) == i + 1);
        if (i == 10) {
            /* Blocking requests are refused, and nothing is sent. */
            CHECK(deferd_ping(prod) == DEFERD_EARG);
            CHECK_CONTAINS(deferd_last_error(prod), "11 pipelined puts outstanding");
            CHECK_CONTAINS(deferd_last_error(prod), "deferd_put_recv first");
            CHECK(deferd_ack(prod, "a/1-1-x") == DEFERD_EARG);
            CHECK(deferd_put(prod, "a", "z", 1, NULL, id, sizeof id) == DEFERD_EARG);
            CHECK(deferd_subscribe(prod, "a", 1) == DEFERD_EARG);
        }
    }
    CHECK(deferd_put_send(prod, "bad name!", "x", 1, NULL) == DEFERD_EARG); /* not queued */
    CHECK(deferd_puts_outstanding(prod) == N);

    int ok = 0, failed_at = -1, in_order = 0;
    for (int i = 0; i < N; i++) {
        int rc = deferd_put_recv(prod, id, sizeof id, 20000);
        CHECK(deferd_puts_outstanding(prod) == N - 1 - i);
        if (rc == DEFERD_OK) {
            ok++;
            in_order += id_priority(id) == i;
            snprintf(ids[i], sizeof ids[i], "%s", id);
        } else {
            CHECK(rc == DEFERD_ESERVER);
            CHECK_STR(deferd_last_error_code(prod), "UNKNOWN_QUEUE");
            failed_at = i;
        }
    }
    CHECK(ok == N - 1);
    CHECK(in_order == N - 1);
    CHECK(failed_at == BAD);
    CHECK(deferd_put_recv(prod, id, sizeof id, 1000) == DEFERD_EARG);
    CHECK(deferd_ping(prod) == DEFERD_OK); /* usable again for everything */
    CHECK(zk_count_jobs(zh, root, "a") == N - 1);

    static int seen[N];
    int distinct = 0, dups = 0;
    CHECK(deferd_subscribe(cons, "a", 64) == DEFERD_OK);
    while (distinct < N - 1) {
        deferd_job job;
        int rc = deferd_next_job(cons, &job, 20000);
        CHECK(rc == DEFERD_OK);
        if (rc != DEFERD_OK)
            break;
        int i = atoi((const char *)job.payload);
        CHECK(i >= 0 && i < N && i != BAD && job.len == PAYLOAD);
        if (i >= 0 && i < N) {
            CHECK_STR(job.id, ids[i]);
            if (seen[i]++ == 0)
                distinct++;
            else
                dups++;
        }
        CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    deferd_job extra;
    CHECK(deferd_next_job(cons, &extra, 1000) == DEFERD_ETIMEDOUT);
    CHECK(distinct == N - 1);
    CHECK(dups == 0);
    printf("pipelined %d puts: %d ok, ERR at %d; consumer got %d distinct jobs\n", N, ok,
           failed_at, distinct);
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    deferd_close(prod);
    deferd_close(cons);
}

/* One connection that consumes and produces: waiting for a push writes the queued puts
 * and keeps their replies (also an ERR) for deferd_put_recv, in order. */
static void mixed_with_pushes(void)
{
    enum { N = 20 };
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE], first[DEFERD_ID_SIZE] = "";
    CHECK(deferd_subscribe(c, "b", N) == DEFERD_OK);
    for (int i = 0; i < N; i++) {
        deferd_put_opts o = {.has_priority = 1, .priority = (uint32_t)i};
        CHECK(deferd_put_send(c, i == 3 ? "nosuchqueue" : "b", "mixed", 5, &o) == DEFERD_OK);
    }
    /* Nothing is written yet (a few hundred bytes); next_job writes them, the jobs come
     * back to this very connection, and the replies are set aside. */
    int got = 0;
    deferd_job job;
    while (got < N - 1 && deferd_next_job(c, &job, 10000) == DEFERD_OK) {
        got++;
        CHECK(job.len == 5 && memcmp(job.payload, "mixed", 5) == 0);
        deferd_job_clear(&job);
    }
    CHECK(got == N - 1);
    CHECK(deferd_puts_outstanding(c) == N);
    CHECK(deferd_touch(c, "b/1-1-x") == DEFERD_EARG); /* still refused */
    for (int i = 0; i < N; i++) {
        int rc = deferd_put_recv(c, id, sizeof id, 10000);
        if (i == 3) {
            CHECK(rc == DEFERD_ESERVER);
            CHECK_STR(deferd_last_error_code(c), "UNKNOWN_QUEUE");
            continue;
        }
        CHECK(rc == DEFERD_OK);
        CHECK(id_priority(id) == i);
        if (i == 0)
            snprintf(first, sizeof first, "%s", id);
    }
    CHECK(deferd_puts_outstanding(c) == 0);
    CHECK(deferd_ack(c, first) == DEFERD_OK);
    deferd_close(c); /* the other held jobs are released; nobody needs them */
}

/* More puts in flight than deferd takes before it answers (it stops reading a connection
 * with 1024 replies owed), with big payloads: the socket buffers fill, and sending must
 * read replies meanwhile instead of waiting for deferd forever. */
static void socket_full(zhandle_t *zh)
{
    enum { N = 3000, PAYLOAD = 3000 };
    deferd_client *c = client(&d);
    static char payload[PAYLOAD];
    char id[DEFERD_ID_SIZE];
    memset(payload, 'p', sizeof payload);
    int64_t t0 = now_ms();
    for (int i = 0; i < N; i++) {
        deferd_put_opts o = {.has_delay = 1, .delay_ms = 86400000, .has_priority = 1,
                             .priority = (uint32_t)i};
        CHECK(deferd_put_send(c, "emails", payload, sizeof payload, &o) == DEFERD_OK);
    }
    int ok = 0;
    for (int i = 0; i < N; i++) {
        int rc = deferd_put_recv(c, id, sizeof id, 20000);
        ok += rc == DEFERD_OK && id_priority(id) == i;
    }
    CHECK(ok == N);
    CHECK(deferd_puts_outstanding(c) == 0);
    printf("%d pipelined puts of %d bytes in %lld ms\n", N, PAYLOAD,
           (long long)(now_ms() - t0));
    CHECK(zk_count_jobs(zh, root, "emails") == N + 1); /* and the warm-up job */
    deferd_close(c);
}

int main(void)
{
    harness_init("pipeline", root, sizeof root);
    if (daemon_start(&d, root, "d1", NULL) != 0)
        return 1;
    zhandle_t *zh = zk_connect();
    /* One plain put first: it waits while deferd's ZooKeeper session is still coming up. */
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE];
    CHECK(put_job(c, "emails", "warm-up", 3600000, -1, -1, id) == 0);
    deferd_close(c);
    five_hundred(zh);
    mixed_with_pushes();
    socket_full(zh);
    daemon_kill(&d, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_pipeline");
}
