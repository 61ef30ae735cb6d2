/* deferd benchmark: N jobs due over a window W, C consumers; prints lateness percentiles
 * (delivery time minus due time) and rates. The same workload as the Curator peer bench:
 * due = t0 + 1 s + U(0, W), payload P bytes, every job acked. Not a test: it prints. */
#include <deferd/client.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bench {
    const char *sock;
    int n, window_ms, consumers, producers, payload, inflight, timeout_s;
    int64_t t0;
    int64_t *due;                 /* per job */
    int64_t *late;                /* per delivery */
    int64_t *put_us;              /* per put: request to reply */
    _Atomic int *seen;            /* deliveries per job */
    _Atomic int delivered, dups, put_fail, next_put;
    _Atomic int64_t first_delivery, last_delivery, last_put;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static deferd_client *connect_or_die(const struct bench *b)
{
    char err[256];
    deferd_client *c = deferd_connect(b->sock, err, sizeof err);
    if (!c) {
        fprintf(stderr, "bench: %s\n", err);
        exit(1);
    }
    return c;
}

static void *producer(void *arg)
{
    struct bench *b = arg;
    deferd_client *c = connect_or_die(b);
    char *payload = malloc((size_t)b->payload + 32), id[DEFERD_ID_SIZE];
    memset(payload, 'x', (size_t)b->payload + 32);
    int i;
    while ((i = atomic_fetch_add(&b->next_put, 1)) < b->n) {
        int len = snprintf(payload, 32, "%d:", i);
        payload[len] = 'x';
        deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)b->due[i]};
        int plen = b->payload > len ? b->payload : len;
        struct timespec t1, t2;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int rc;
        int64_t give_up = now_ms() + 10000; /* deferd may still be opening its session */
        while ((rc = deferd_put(c, "bench", payload, (size_t)plen, &o, id, sizeof id)) ==
                   DEFERD_ESERVER &&
               strcmp(deferd_last_error_code(c), "UNAVAILABLE") == 0 && now_ms() < give_up)
            nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t2);
        b->put_us[i] = (t2.tv_sec - t1.tv_sec) * 1000000LL + (t2.tv_nsec - t1.tv_nsec) / 1000;
        if (rc != DEFERD_OK) {
            atomic_fetch_add(&b->put_fail, 1);
            fprintf(stderr, "bench: put failed: %s\n", deferd_last_error(c));
        }
    }
    atomic_store(&b->last_put, now_ms());
    free(payload);
    deferd_close(c);
    return NULL;
}

static void *consumer(void *arg)
{
    struct bench *b = arg;
    deferd_client *c = connect_or_die(b);
    if (deferd_subscribe(c, "bench", (unsigned)b->inflight) != DEFERD_OK) {
        fprintf(stderr, "bench: subscribe failed: %s\n", deferd_last_error(c));
        exit(1);
    }
    int64_t stop = b->t0 + 1000 + b->window_ms + b->timeout_s * 1000LL;
    while (atomic_load(&b->delivered) < b->n && now_ms() < stop) {
        deferd_job job;
        int rc = deferd_next_job(c, &job, 200);
        if (rc == DEFERD_ETIMEDOUT)
            continue;
        if (rc != DEFERD_OK)
            break;
        int64_t at = now_ms();
        int i = atoi((const char *)job.payload);
        if (i >= 0 && i < b->n && atomic_fetch_add(&b->seen[i], 1) == 0) {
            int k = atomic_fetch_add(&b->delivered, 1);
            b->late[k] = at - job.due_ms;
            int64_t first = 0;
            atomic_compare_exchange_strong(&b->first_delivery, &first, at);
            atomic_store(&b->last_delivery, at);
        } else {
            atomic_fetch_add(&b->dups, 1);
        }
        if (deferd_ack(c, job.id) != DEFERD_OK)
            fprintf(stderr, "bench: ack failed: %s\n", deferd_last_error(c));
        deferd_job_clear(&job);
    }
    deferd_close(c);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(struct bench *b, int64_t put_ms)
{
    int n = atomic_load(&b->delivered);
    qsort(b->late, (size_t)n, sizeof b->late[0], cmp_i64);
    int64_t last_due = 0;
    for (int i = 0; i < b->n; i++)
        if (b->due[i] > last_due)
            last_due = b->due[i];
    qsort(b->put_us, (size_t)b->n, sizeof b->put_us[0], cmp_i64);
    int64_t span = atomic_load(&b->last_delivery) - atomic_load(&b->first_delivery);
    double e2e = span > 0 ? 1000.0 * n / (double)span : 0;
    printf("{\"n\":%d,\"window_ms\":%d,\"consumers\":%d,\"inflight\":%d,\"payload\":%d,"
           "\"put_rate\":%.0f,\"put_fail\":%d,\"delivered\":%d,\"duplicates\":%d,\"missing\":%d,"
           "\"lateness_ms_p50\":%lld,\"lateness_ms_p99\":%lld,\"lateness_ms_max\":%lld,"
           "\"e2e_rate\":%.0f,\"drain_ms\":%lld,\"put_us_p50\":%lld,\"put_us_p99\":%lld}\n",
           b->n, b->window_ms, b->consumers, b->inflight, b->payload,
           put_ms > 0 ? 1000.0 * b->n / (double)put_ms : 0, atomic_load(&b->put_fail), n,
           atomic_load(&b->dups), b->n - n, n ? (long long)b->late[n / 2] : -1,
           n ? (long long)b->late[(n * 99) / 100] : -1, n ? (long long)b->late[n - 1] : -1, e2e,
           (long long)(atomic_load(&b->last_delivery) - last_due),
           (long long)b->put_us[b->n / 2], (long long)b->put_us[(b->n * 99) / 100]);
}

int main(int argc, char **argv)
{
    struct bench b = {.sock = getenv("DEFERD_SOCKET"), .n = 10000, .window_ms = 5000,
                      .consumers = 4, .producers = 4, .payload = 100, .inflight = 1,
                      .timeout_s = 120};
    int ch;
    while ((ch = getopt(argc, argv, "s:n:w:C:P:p:i:t:")) != -1) {
        switch (ch) {
        case 's': b.sock = optarg; break;
        case 'n': b.n = atoi(optarg); break;
        case 'w': b.window_ms = atoi(optarg); break;
        case 'C': b.consumers = atoi(optarg); break;
        case 'P': b.producers = atoi(optarg); break;
        case 'p': b.payload = atoi(optarg); break;
        case 'i': b.inflight = atoi(optarg); break;
        case 't': b.timeout_s = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: bench -s SOCKET [-n N] [-w WINDOW_MS] [-C CONSUMERS] "
                            "[-P PRODUCERS] [-p PAYLOAD] [-i INFLIGHT] [-t TIMEOUT_S]\n");
            return 2;
        }
    }
    if (!b.sock || b.n <= 0 || b.consumers < 0 || b.producers <= 0 || b.inflight <= 0) {
        fprintf(stderr, "bench: need -s SOCKET and positive counts\n");
        return 2;
    }
    b.due = calloc((size_t)b.n, sizeof *b.due);
    b.late = calloc((size_t)b.n, sizeof *b.late);
    b.seen = calloc((size_t)b.n, sizeof *b.seen);
    b.put_us = calloc((size_t)b.n, sizeof *b.put_us);
    srand(1);
    b.t0 = now_ms();
    for (int i = 0; i < b.n; i++)
        b.due[i] = b.t0 + 1000 + (b.window_ms ? rand() % b.window_ms : 0);
    pthread_t th[256];
    int nth = 0;
    for (int i = 0; i < b.consumers && nth < 256; i++)
        pthread_create(&th[nth++], NULL, consumer, &b);
    for (int i = 0; i < b.producers && nth < 256; i++)
        pthread_create(&th[nth++], NULL, producer, &b);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    report(&b, atomic_load(&b.last_put) - b.t0);
    return atomic_load(&b.delivered) == b.n ? 0 : 1;
}
