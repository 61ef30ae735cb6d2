/* Pipelined puts (deferd_put_send / deferd_put_recv) and acks (deferd_ack_send /
 * deferd_ack_recv): replies come back in order, an ERR in the middle costs only its own
 * request, other requests are refused while any are outstanding, pushes, put replies and
 * ack replies on one connection are kept apart, and a connection that fails hands out what
 * had arrived and then one DEFERD_EIO per unknown request. */
#include <stdlib.h>

#include "harness.h"
#include "layout.h"

static struct daemon_proc d;
static char root[128];

/* The job id carries the put's priority: it tells which put a reply belongs to. */
/* Receives the results of NACKS pipelined acks, the k-th sent for ACKED[k]: each names its
 * job, exactly one (an id nobody held) is NOT_FOUND, the rest OK. Returns that one's index. */
static int collect_acks(deferd_client *c, char acked[][DEFERD_ID_SIZE], int nacks)
{
    char id[DEFERD_ID_SIZE];
    int ok = 0, in_order = 0, not_found_at = -1;
    for (int k = 0; k < nacks; k++) {
        id[0] = '\0';
        int rc = deferd_ack_recv(c, id, sizeof id, 20000);
        CHECK(deferd_acks_outstanding(c) == nacks - 1 - k);
        in_order += strcmp(id, acked[k]) == 0;
        if (rc == DEFERD_OK) {
            ok++;
        } else {
            CHECK(rc == DEFERD_ESERVER);
            CHECK_STR(deferd_last_error_code(c), "NOT_FOUND");
            not_found_at = k;
        }
    }
    CHECK(ok == nacks - 1);
    CHECK(in_order == nacks);
    return not_found_at;
}

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

/* A job id in the right format that nobody holds. */
#define ID_NOT_HELD "a/1000-0-0123456789abcdef"

/* A consumer with inflight 64 acks each of 1000 jobs with deferd_ack_send and goes on
 * receiving; one ack in the middle names a job it does not hold. Then every ack's result
 * comes back in order: that one NOT_FOUND, the others OK, and ZooKeeper holds no job. */
static void pipelined_acks(zhandle_t *zh)
{
    enum { N = 1000, BOGUS = 400 };
    deferd_client *prod = client(&d), *cons = client(&d);
    char id[DEFERD_ID_SIZE], payload[32];
    static char acked[N + 1][DEFERD_ID_SIZE]; /* job id of the k-th ack sent */
    static int seen[N];

    for (int i = 0; i < N; i++) {
        int n = snprintf(payload, sizeof payload, "%d", i);
        CHECK(deferd_put_send(prod, "a", payload, (size_t)n, NULL) == DEFERD_OK);
    }
    int put_ok = 0;
    while (deferd_puts_outstanding(prod) > 0)
        put_ok += deferd_put_recv(prod, NULL, 0, 20000) == DEFERD_OK;
    CHECK(put_ok == N);
    CHECK(zk_count_jobs(zh, root, "a") == N);
    deferd_close(prod);

    CHECK(deferd_ack_recv(cons, id, sizeof id, 1000) == DEFERD_EARG); /* none outstanding */
    CHECK_CONTAINS(deferd_last_error(cons), "no pipelined ack");
    CHECK(deferd_ack_send(cons, "no slash") == DEFERD_EARG); /* not queued */
    CHECK(deferd_acks_outstanding(cons) == 0);
    CHECK(deferd_subscribe(cons, "a", 64) == DEFERD_OK);
    int64_t t0 = now_ms();
    int nacks = 0, distinct = 0, dups = 0, bogus_at = -1;
    while (distinct < N) {
        deferd_job job;
        int rc = deferd_next_job(cons, &job, 20000);
        CHECK(rc == DEFERD_OK);
        if (rc != DEFERD_OK)
            break;
        int i = atoi((const char *)job.payload);
        CHECK(i >= 0 && i < N);
        if (i >= 0 && i < N) {
            if (seen[i]++ == 0)
                distinct++;
            else
                dups++;
        }
        CHECK(deferd_ack_send(cons, job.id) == DEFERD_OK);
        snprintf(acked[nacks++], sizeof acked[0], "%s", job.id);
        if (nacks == BOGUS) {
            CHECK(deferd_ack_send(cons, ID_NOT_HELD) == DEFERD_OK);
            bogus_at = nacks;
            snprintf(acked[nacks++], sizeof acked[0], "%s", ID_NOT_HELD);
            /* Blocking requests are refused, and nothing is sent. */
            CHECK(deferd_ping(cons) == DEFERD_EARG);
            CHECK_CONTAINS(deferd_last_error(cons), "pipelined acks outstanding");
            CHECK_CONTAINS(deferd_last_error(cons), "deferd_ack_recv first");
            CHECK(deferd_ack(cons, job.id) == DEFERD_EARG);
            CHECK(deferd_nack(cons, job.id, -1) == DEFERD_EARG);
            CHECK(deferd_put_recv(cons, id, sizeof id, 0) == DEFERD_EARG); /* no put */
        }
        CHECK(deferd_acks_outstanding(cons) == nacks);
        deferd_job_clear(&job);
    }
    CHECK(distinct == N);
    CHECK(dups == 0);
    int64_t t_recv = now_ms() - t0;

    int not_found_at = collect_acks(cons, acked, nacks);
    CHECK(not_found_at == bogus_at);
    CHECK(deferd_ack_recv(cons, id, sizeof id, 1000) == DEFERD_EARG);
    CHECK(deferd_ping(cons) == DEFERD_OK); /* usable again for everything */
    printf("pipelined %d acks (inflight 64): NOT_FOUND at %d of %d; %lld ms to "
           "receive and ack, %lld ms in all\n", nacks, not_found_at, bogus_at,
           (long long)t_recv, (long long)(now_ms() - t0));
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    deferd_job extra;
    CHECK(deferd_next_job(cons, &extra, 1000) == DEFERD_ETIMEDOUT); /* none comes back */
    deferd_close(cons);
}

/* Puts and acks interleaved on one consumer connection: each recv call gets its own kind's
 * results in order, setting aside the other kind's replies it meets; an ERR of either kind
 * stays with its request. */
static void puts_and_acks(zhandle_t *zh)
{
    enum { N = 40, BAD_PUT = 7, BAD_ACK = 20 };
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE];
    static char acked[N + 1][DEFERD_ID_SIZE];
    /* b's jobs held by mixed_with_pushes's consumer are given back when it closes: counted
     * once none is in a claim any more (a job on its way from claim to bucket can be missed
     * by a count that reads the buckets, then the claims) */
    int64_t deadline = now_ms() + 10000;
    while (zk_count_claims(zh, root, "b") != 0 && now_ms() < deadline)
        usleep(20000);
    CHECK(zk_count_claims(zh, root, "b") == 0);
    int in_b = zk_count_jobs(zh, root, "b");
    CHECK(deferd_subscribe(c, "a", N) == DEFERD_OK);
    /* N jobs that come back to this very connection ... */
    for (int i = 0; i < N; i++) {
        deferd_put_opts o = {.has_priority = 1, .priority = (uint32_t)i};
        CHECK(deferd_put_send(c, "a", "now", 3, &o) == DEFERD_OK);
    }
    /* ... each acked as it arrives, with a put (due tomorrow) after each ack. */
    int nacks = 0, bad_ack_at = -1;
    for (int k = 0; k < N; k++) {
        deferd_job job;
        int rc = deferd_next_job(c, &job, 10000);
        CHECK(rc == DEFERD_OK);
        if (rc != DEFERD_OK)
            break;
        CHECK(job.len == 3 && memcmp(job.payload, "now", 3) == 0);
        CHECK(deferd_ack_send(c, job.id) == DEFERD_OK);
        snprintf(acked[nacks++], sizeof acked[0], "%s", job.id);
        if (k == BAD_ACK) {
            CHECK(deferd_ack_send(c, ID_NOT_HELD) == DEFERD_OK);
            bad_ack_at = nacks;
            snprintf(acked[nacks++], sizeof acked[0], "%s", ID_NOT_HELD);
        }
        deferd_put_opts o = {.has_delay = 1, .delay_ms = 86400000, .has_priority = 1,
                             .priority = (uint32_t)(1000 + k)};
        CHECK(deferd_put_send(c, k == BAD_PUT ? "nosuchqueue" : "b", "later", 5, &o) ==
              DEFERD_OK);
        deferd_job_clear(&job);
    }
    CHECK(deferd_puts_outstanding(c) == 2 * N);
    CHECK(deferd_acks_outstanding(c) == N + 1);
    CHECK(deferd_touch(c, "a/1-1-x") == DEFERD_EARG); /* refused, naming both */
    CHECK_CONTAINS(deferd_last_error(c), "80 pipelined puts and 41 pipelined acks");
    CHECK_CONTAINS(deferd_last_error(c), "call deferd_put_recv and deferd_ack_recv first");

    /* One put result first, then every ack (passing the put replies in between), then the
     * other puts. */
    CHECK(deferd_put_recv(c, id, sizeof id, 10000) == DEFERD_OK);
    CHECK(id_priority(id) == 0);
    CHECK(collect_acks(c, acked, nacks) == bad_ack_at);
    CHECK(deferd_acks_outstanding(c) == 0);
    CHECK(deferd_ping(c) == DEFERD_EARG); /* puts still outstanding */
    CHECK_CONTAINS(deferd_last_error(c), "79 pipelined puts outstanding");
    int put_ok = 0, put_in_order = 0, put_failed_at = -1;
    for (int i = 1; i < 2 * N; i++) {
        int rc = deferd_put_recv(c, id, sizeof id, 10000);
        int want_prio = i < N ? i : 1000 + (i - N);
        if (rc == DEFERD_OK) {
            put_ok++;
            put_in_order += id_priority(id) == want_prio;
        } else {
            CHECK(rc == DEFERD_ESERVER);
            CHECK_STR(deferd_last_error_code(c), "UNKNOWN_QUEUE");
            put_failed_at = i - N;
        }
    }
    CHECK(put_ok == 2 * N - 2);
    CHECK(put_in_order == 2 * N - 2);
    CHECK(put_failed_at == BAD_PUT);
    CHECK(deferd_puts_outstanding(c) == 0);
    CHECK(deferd_ping(c) == DEFERD_OK);
    CHECK(zk_count_jobs(zh, root, "a") == 0);
    CHECK(zk_count_jobs(zh, root, "b") == in_b + N - 1);
    deferd_close(c);
}

/* The connection fails (deferd stops) with acks and a put outstanding: the ack whose reply
 * had already arrived still gets its result; the others return DEFERD_EIO one by one, with
 * their job ids, and are no longer outstanding. Stops deferd. */
static void fails_with_acks(void)
{
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE], held[3][DEFERD_ID_SIZE];
    CHECK(deferd_subscribe(c, "a", 3) == DEFERD_OK);
    for (int i = 0; i < 3; i++)
        CHECK(put_job(c, "a", "fail", -1, -1, -1, NULL) == 0);
    for (int i = 0; i < 3; i++) {
        deferd_job job;
        CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
        snprintf(held[i], sizeof held[i], "%s", job.id);
        deferd_job_clear(&job);
    }
    /* The ack's reply comes before the put's, so it is set aside on the way. */
    deferd_put_opts later = {.has_delay = 1, .delay_ms = 86400000};
    CHECK(deferd_ack_send(c, held[0]) == DEFERD_OK);
    CHECK(deferd_put_send(c, "b", "x", 1, &later) == DEFERD_OK);
    CHECK(deferd_put_recv(c, id, sizeof id, 10000) == DEFERD_OK);
    CHECK(deferd_acks_outstanding(c) == 1);
    CHECK(deferd_ack_send(c, held[1]) == DEFERD_OK); /* these stay in the buffer */
    CHECK(deferd_put_send(c, "b", "x", 1, &later) == DEFERD_OK);
    CHECK(deferd_ack_send(c, held[2]) == DEFERD_OK);
    daemon_kill(&d, SIGTERM);

    CHECK(deferd_ack_recv(c, id, sizeof id, 5000) == DEFERD_OK);
    CHECK_STR(id, held[0]);
    CHECK(deferd_ack_recv(c, id, sizeof id, 5000) == DEFERD_EIO);
    CHECK_STR(id, held[1]);
    CHECK_CONTAINS(deferd_last_error(c), "not answered");
    CHECK(deferd_acks_outstanding(c) == 1);
    CHECK(deferd_ack_recv(c, id, sizeof id, 5000) == DEFERD_EIO);
    CHECK_STR(id, held[2]);
    CHECK_CONTAINS(deferd_last_error(c), held[2]);
    CHECK(deferd_acks_outstanding(c) == 0);
    CHECK(deferd_ack_recv(c, id, sizeof id, 5000) == DEFERD_EIO); /* unusable, none left */
    CHECK(deferd_puts_outstanding(c) == 1);
    CHECK(deferd_put_recv(c, id, sizeof id, 5000) == DEFERD_EIO);
    CHECK(deferd_puts_outstanding(c) == 0);
    CHECK(deferd_ack_send(c, held[1]) == DEFERD_EIO);
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
    pipelined_acks(zh);
    mixed_with_pushes();
    socket_full(zh);
    puts_and_acks(zh);
    fails_with_acks(); /* stops deferd */
    zookeeper_close(zh);
    return check_report("it_pipeline");
}
