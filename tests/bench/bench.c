/* deferd benchmark: N jobs due over a window W, C consumers; prints lateness percentiles
 * (delivery time minus due time) and rates. The same workload as the Curator peer bench:
 * due = t0 + 1 s + U(0, W), payload P bytes, every job acked. Not a test: it prints.
 *
 * Producers keep up to DEPTH puts in flight on their connection (deferd_put_send /
 * deferd_put_recv). Consumers ack each job with deferd_ack (one round trip each) or, with
 * -A, with deferd_ack_send, collecting the results lazily (deferd_ack_recv). -C 0 only
 * puts, -P 0 only consumes (jobs put earlier by this bench), -L puts a backlog of jobs due
 * in days first. See tests/bench/README.md. */
#include <deferd/client.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define DAY_MS 86400000LL
#define MAX_THREADS 256

#define MAX_SOCKETS 8

struct bench {
    const char *sock, *late_file;
    char *socks[MAX_SOCKETS];     /* -s A,B,C: daemons on one root; producers use the first,
                                   * consumers take them in turn */
    int nsocks;
    _Atomic int next_sock;
    int n, window_ms, consumers, producers, payload, inflight, timeout_s, depth;
    int preload, preload_days;
    int ack_pipe;                 /* -A: consumers pipeline their acks */
    int keyed;                    /* -K: every measured job carries an idempotency key */
    int hold_ms;                  /* -H: a consumer holds each job this long before its ack */
    int lead_ms;                  /* -l: the window starts this long after t0 (1 s) */
    int small_groups;             /* -g K: the last 10K jobs in K groups of 10 ("s<k>"), put
                                   * after the others, which are in group "big";
                                   * small_late_max_ms reported */
    int no_group_names;           /* -N: the same jobs measured, but put without groups */
    _Atomic int64_t small_late_max;
    int blocking;                 /* -T 1: blocking deferd_put (libdeferd's put token and
                                   * retry); -T 2: the same without (deferd_set_put_retry 0) */
    int batch;                    /* -b K: each put request a batch of K jobs (1: single puts) */
    int64_t t0;                   /* epoch ms: start of the measured phase */
    int64_t preload_base;         /* epoch ms: preload jobs are due from here + 1 day */
    int64_t *due;                 /* per job */
    int64_t *late;                /* per delivery, in delivery order */
    int64_t *put_us;              /* per put: send to its reply */
    _Atomic int64_t *stored;      /* per put: epoch ms its OK was read (0: not yet) */
    int64_t *late_stored;         /* per delivery: after the later of due and stored */
    _Atomic int *seen;            /* deliveries per job */
    _Atomic int delivered, dups, put_fail, next_put, next_preload, preload_fail, ack_fail;
    _Atomic int64_t first_delivery, last_delivery, last_put;
};

struct phase {
    struct bench *b;
    int preload;                  /* 1: the backlog, 0: the measured jobs */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* splitmix64: a reproducible random number per job index, from any thread. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static deferd_client *connect_to(const char *sock)
{
    char err[256];
    deferd_client *c = deferd_connect(sock, err, sizeof err);
    if (!c) {
        fprintf(stderr, "bench: %s\n", err);
        exit(1);
    }
    return c;
}

static deferd_client *connect_or_die(const struct bench *b) { return connect_to(b->socks[0]); }

/* A consumer's connection: the daemons of -s in turn. */
static deferd_client *connect_consumer(struct bench *b)
{
    return connect_to(b->socks[atomic_fetch_add(&b->next_sock, 1) % b->nsocks]);
}

/* A put in flight on one producer connection. */
struct slot {
    int i;                        /* job index */
    int64_t sent_us;              /* first send (retries keep it) */
    int64_t last_us;              /* latest send */
    int64_t give_up_ms;           /* retry UNAVAILABLE until then */
};

/* Builds job i's payload (at least b->payload bytes) and due time; returns the length. */
static size_t make_job(const struct phase *ph, int i, char *buf, deferd_put_opts *o)
{
    const struct bench *b = ph->b;
    int len;
    memset(o, 0, sizeof *o);
    o->has_at = 1;
    if (ph->preload) {
        /* Not "<index>:": a consumer must never take these for measured jobs. */
        len = snprintf(buf, 32, "preload");
        uint64_t span = (uint64_t)(b->preload_days - 1) * DAY_MS;
        uint64_t r = span ? mix64((uint64_t)i) % (span + 1) : 0;
        o->at_ms = (uint64_t)(b->preload_base + DAY_MS) + r;
    } else {
        len = snprintf(buf, 32, "%d:", i);
        o->at_ms = (uint64_t)b->due[i];
        if (b->keyed) { /* read by deferd_put_send before the next job is made */
            static _Thread_local char key[24];
            snprintf(key, sizeof key, "bench-%d", i);
            o->key = key;
        }
        if (b->small_groups && !b->no_group_names) {
            static _Thread_local char group[16];
            int first_small = b->n - b->small_groups * 10;
            if (i >= first_small)
                snprintf(group, sizeof group, "s%d", (i - first_small) / 10);
            else
                snprintf(group, sizeof group, "big");
            o->group = group;
        }
    }
    buf[len] = 'x';
    return (size_t)(b->payload > len ? b->payload : len);
}

static int unavailable(deferd_client *c, int rc)
{
    return rc == DEFERD_ESERVER && strcmp(deferd_last_error_code(c), "UNAVAILABLE") == 0;
}

/* One producer connection: up to b->depth puts in flight, taking job indexes from the
 * phase's shared counter; a put answered UNAVAILABLE (deferd may still be opening its
 * ZooKeeper session) is sent again, for up to 10 s. deferd sends nothing but replies to a
 * producer connection, and libdeferd reads them while it waits to write, so any number of
 * producers and any depth make progress. */
static void *producer(void *arg)
{
    const struct phase *ph = arg;
    struct bench *b = ph->b;
    _Atomic int *next = ph->preload ? &b->next_preload : &b->next_put;
    _Atomic int *failures = ph->preload ? &b->preload_fail : &b->put_fail;
    int total = ph->preload ? b->preload : b->n;
    deferd_client *c = connect_or_die(b);
    char *payload = malloc((size_t)b->payload + 32), id[DEFERD_ID_SIZE];
    struct slot *ring = calloc((size_t)b->depth, sizeof *ring);
    if (!payload || !ring) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    memset(payload, 'x', (size_t)b->payload + 32);
    int head = 0, count = 0, dead = 0;
    int64_t paused_us = 0;        /* end of the last pause before a retry */
    struct slot retry = {.i = -1};
    for (;;) {
        /* Fill the window: a retry first, then new jobs. */
        while (!dead && count < b->depth) {
            struct slot s = retry;
            retry.i = -1;
            if (s.i < 0) {
                int i = atomic_fetch_add(next, 1);
                if (i >= total)
                    break;
                s = (struct slot){.i = i, .sent_us = mono_us(), .give_up_ms = now_ms() + 10000};
            }
            s.last_us = mono_us();
            deferd_put_opts o;
            size_t len = make_job(ph, s.i, payload, &o);
            if (deferd_put_send(c, "bench", payload, len, &o) != DEFERD_OK) {
                fprintf(stderr, "bench: put failed: %s\n", deferd_last_error(c));
                atomic_fetch_add(failures, 1);
                dead = 1; /* the connection is unusable: the window is lost too */
                break;
            }
            ring[(head + count) % b->depth] = s;
            count++;
        }
        if (count == 0)
            break;
        /* A put unanswered for -t seconds counts as failed, and so does the rest. */
        int rc = dead ? DEFERD_EIO : deferd_put_recv(c, id, sizeof id, b->timeout_s * 1000);
        struct slot s = ring[head];
        head = (head + 1) % b->depth;
        count--;
        if (unavailable(c, rc) && now_ms() < s.give_up_ms) {
            /* One pause per wave of refusals, not one per refused put. */
            if (s.last_us >= paused_us) {
                sleep_ms(20);
                paused_us = mono_us();
            }
            retry = s;
            continue;
        }
        if (!ph->preload) {
            b->put_us[s.i] = mono_us() - s.sent_us;
            atomic_store(&b->stored[s.i], now_ms());
        }
        if (rc != DEFERD_OK) {
            atomic_fetch_add(failures, 1);
            if (!dead)
                fprintf(stderr, "bench: put failed: %s\n", deferd_last_error(c));
            if (rc != DEFERD_ESERVER)
                dead = 1;
        }
    }
    if (!ph->preload)
        atomic_store(&b->last_put, now_ms());
    free(ring);
    free(payload);
    deferd_close(c);
    return NULL;
}

/* "<index>:..." as written by make_job(); -1 for anything else. */
static int job_index(const deferd_job *job, int n)
{
    const char *p = (const char *)job->payload;
    char *end;
    if (job->len == 0 || *p < '0' || *p > '9')
        return -1;
    errno = 0;
    long i = strtol(p, &end, 10);
    if (errno || *end != ':' || i >= n)
        return -1;
    return (int)i;
}

/* Counts a failed ack (its result came back, or never will). */
static void ack_failed(struct bench *b, deferd_client *c, int rc, const char *id)
{
    atomic_fetch_add(&b->ack_fail, 1);
    fprintf(stderr, "bench: ack%s%s failed: %s: %s\n", id ? " of " : "", id ? id : "",
            deferd_strerror(rc), deferd_last_error(c));
}

/* -A: takes the results of pipelined acks while more than KEEP are outstanding, waiting up
 * to timeout_ms for each (0: only those already answered). Returns 0, or -1 when the
 * results stopped coming (timeout): those still outstanding are then counted as failed. */
static int collect_acks(struct bench *b, deferd_client *c, int keep, int timeout_ms)
{
    char id[DEFERD_ID_SIZE];
    while (deferd_acks_outstanding(c) > keep) {
        int rc = deferd_ack_recv(c, id, sizeof id, timeout_ms);
        if (rc == DEFERD_ETIMEDOUT) {
            if (timeout_ms == 0)
                return 0;
            int left = deferd_acks_outstanding(c);
            atomic_fetch_add(&b->ack_fail, left);
            fprintf(stderr, "bench: %d acks unanswered after %d ms\n", left, timeout_ms);
            return -1;
        }
        if (rc != DEFERD_OK)
            ack_failed(b, c, rc, id);
    }
    return 0;
}

static void *consumer(void *arg)
{
    struct bench *b = arg;
    deferd_client *c = connect_consumer(b);
    if (deferd_subscribe(c, "bench", (unsigned)b->inflight) != DEFERD_OK) {
        fprintf(stderr, "bench: subscribe failed: %s\n", deferd_last_error(c));
        exit(1);
    }
    int64_t stop = b->t0 + b->lead_ms + b->window_ms + b->timeout_s * 1000LL;
    while (atomic_load(&b->delivered) < b->n && now_ms() < stop) {
        deferd_job job;
        int rc = deferd_next_job(c, &job, 200);
        if (rc == DEFERD_ETIMEDOUT)
            continue;
        if (rc != DEFERD_OK)
            break;
        int64_t at = now_ms();
        int i = job_index(&job, b->n);
        if (i >= 0 && atomic_fetch_add(&b->seen[i], 1) == 0) {
            if (b->producers == 0)
                b->due[i] = job.due_ms; /* consume-only: learn it from the job */
            int k = atomic_fetch_add(&b->delivered, 1);
            b->late[k] = at - job.due_ms;
            /* a job stored after its due time cannot be on time: the delivery's own part of
             * its lateness counts from its put's OK (or its due time, if the producer has
             * not read that OK yet: then the OK came before this) */
            int64_t ok = atomic_load(&b->stored[i]);
            b->late_stored[k] = at - (ok > job.due_ms ? ok : job.due_ms);
            int64_t m = atomic_load(&b->small_late_max);
            while (i >= b->n - b->small_groups * 10 && b->late[k] > m &&
                   !atomic_compare_exchange_weak(&b->small_late_max, &m, b->late[k]))
                ;
            int64_t first = 0;
            atomic_compare_exchange_strong(&b->first_delivery, &first, at);
            atomic_store(&b->last_delivery, at);
        } else {
            atomic_fetch_add(&b->dups, 1);
        }
        if (b->hold_ms)
            sleep_ms(b->hold_ms); /* the job's work */
        if (b->ack_pipe) {
            /* Written by the next deferd_next_job() (or the collecting deferd_ack_recv). */
            rc = deferd_ack_send(c, job.id);
            if (rc != DEFERD_OK)
                ack_failed(b, c, rc, job.id);
            else
                collect_acks(b, c, b->inflight, 0);
        } else {
            rc = deferd_ack(c, job.id);
            if (rc != DEFERD_OK)
                ack_failed(b, c, rc, job.id);
        }
        deferd_job_clear(&job);
    }
    collect_acks(b, c, 0, b->timeout_s * 1000);
    deferd_close(c);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int write_lateness(const struct bench *b, int n)
{
    FILE *f = fopen(b->late_file, "w");
    if (!f) {
        fprintf(stderr, "bench: %s: %s\n", b->late_file, strerror(errno));
        return -1;
    }
    for (int k = 0; k < n; k++)
        fprintf(f, "%lld\n", (long long)b->late[k]);
    if (fclose(f) != 0) {
        fprintf(stderr, "bench: %s: %s\n", b->late_file, strerror(errno));
        return -1;
    }
    return 0;
}

static void report(struct bench *b, int64_t put_ms, double preload_rate)
{
    int n = atomic_load(&b->delivered);
    qsort(b->late, (size_t)n, sizeof b->late[0], cmp_i64);
    qsort(b->late_stored, (size_t)n, sizeof b->late_stored[0], cmp_i64);
    int64_t last_due = 0;
    int stored_late = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->due[i] > last_due)
            last_due = b->due[i];
        stored_late += atomic_load(&b->stored[i]) > b->due[i];
    }
    qsort(b->put_us, (size_t)b->n, sizeof b->put_us[0], cmp_i64);
    int64_t first = atomic_load(&b->first_delivery), last = atomic_load(&b->last_delivery);
    int64_t span = last - first;
    double e2e = span > 0 ? 1000.0 * n / (double)span : 0;
    int puts = b->producers > 0 ? b->n : 0;
    struct rusage ru; /* this whole run's CPU: a load generator on the same cores takes its share */
    double cpu = getrusage(RUSAGE_SELF, &ru) == 0
                 ? (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6 : -1;
    printf("{\"n\":%d,\"window_ms\":%d,\"consumers\":%d,\"inflight\":%d,\"payload\":%d,"
           "\"producers\":%d,\"depth\":%d,\"preload\":%d,\"preload_rate\":%.0f,\"preload_fail\":%d,"
           "\"put_rate\":%.0f,\"put_fail\":%d,\"delivered\":%d,\"duplicates\":%d,\"missing\":%d,"
           "\"lateness_ms_p50\":%lld,\"lateness_ms_p99\":%lld,\"lateness_ms_max\":%lld,"
           "\"e2e_rate\":%.0f,\"drain_ms\":%lld,\"put_us_p50\":%lld,\"put_us_p99\":%lld,"
           "\"t0_ms\":%lld,\"first_delivery_ms\":%lld,\"ack_pipelined\":%d,\"ack_fail\":%d,\"keyed\":%d,\"blocking\":%d,"
           "\"hold_ms\":%d,\"small_groups\":%d,\"small_late_max_ms\":%lld,"
           "\"stored_late\":%d,\"lateness_stored_ms_p50\":%lld,\"lateness_stored_ms_p99\":%lld,"
           "\"lateness_stored_ms_max\":%lld,\"cpu_s\":%.3f}\n",
           b->n, b->window_ms, b->consumers, b->inflight, b->payload, b->producers, b->depth,
           b->preload, preload_rate, atomic_load(&b->preload_fail),
           puts && put_ms > 0 ? 1000.0 * puts / (double)put_ms : 0, atomic_load(&b->put_fail),
           n, atomic_load(&b->dups), b->n - n, n ? (long long)b->late[n / 2] : -1,
           n ? (long long)b->late[(n * 99) / 100] : -1, n ? (long long)b->late[n - 1] : -1, e2e,
           n ? (long long)(last - last_due) : -1,
           (long long)b->put_us[b->n / 2], (long long)b->put_us[(b->n * 99) / 100],
           (long long)b->t0, (long long)first, b->ack_pipe, atomic_load(&b->ack_fail), b->keyed, b->blocking,
           b->hold_ms, b->small_groups,
           b->small_groups ? (long long)atomic_load(&b->small_late_max) : -1LL, stored_late,
           n ? (long long)b->late_stored[n / 2] : -1,
           n ? (long long)b->late_stored[(n * 99) / 100] : -1,
           n ? (long long)b->late_stored[n - 1] : -1, cpu);
}

/* -T: one blocking deferd_put at a time, as a plain producer calls it: with the library's
 * put token (-T 1) or without it (-T 2, deferd_set_put_retry(c, 0)), to weigh the token. */
static void *producer_blocking(void *arg)
{
    const struct phase *ph = arg;
    struct bench *b = ph->b;
    _Atomic int *next = ph->preload ? &b->next_preload : &b->next_put;
    _Atomic int *failures = ph->preload ? &b->preload_fail : &b->put_fail;
    int total = ph->preload ? b->preload : b->n, i;
    deferd_client *c = connect_or_die(b);
    char *payload = malloc((size_t)b->payload + 32), id[DEFERD_ID_SIZE];
    if (!payload) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    memset(payload, 'x', (size_t)b->payload + 32);
    if (b->blocking == 2)
        deferd_set_put_retry(c, 0);
    while ((i = atomic_fetch_add(next, 1)) < total) {
        deferd_put_opts o;
        size_t len = make_job(ph, i, payload, &o);
        int64_t sent = mono_us();
        int rc = deferd_put(c, "bench", payload, len, &o, id, sizeof id);
        if (!ph->preload) {
            b->put_us[i] = mono_us() - sent;
            atomic_store(&b->stored[i], now_ms());
        }
        if (rc != DEFERD_OK) {
            atomic_fetch_add(failures, 1);
            fprintf(stderr, "bench: put failed: %s\n", deferd_last_error(c));
        }
    }
    if (!ph->preload)
        atomic_store(&b->last_put, now_ms());
    free(payload);
    deferd_close(c);
    return NULL;
}

/* -b K: each request a batch of K jobs (deferd_put_batch, all or none), one batch in
 * flight per producer: the client side of zk-ceiling's multis of 100 creates, -P batches
 * in flight as it keeps -w / 100 multis. A batch answered UNAVAILABLE stored=no is sent
 * again for up to 10 s; a job not stored counts as a failed put. */
static void *producer_batch(void *arg)
{
    const struct phase *ph = arg;
    struct bench *b = ph->b;
    _Atomic int *next = ph->preload ? &b->next_preload : &b->next_put;
    _Atomic int *failures = ph->preload ? &b->preload_fail : &b->put_fail;
    int total = ph->preload ? b->preload : b->n, from;
    size_t stride = (size_t)b->payload + 32;
    deferd_client *c = connect_or_die(b);
    deferd_put_item *items = calloc((size_t)b->batch, sizeof *items);
    char *bufs = malloc((size_t)b->batch * stride);
    if (!items || !bufs) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    memset(bufs, 'x', (size_t)b->batch * stride);
    while ((from = atomic_fetch_add(next, b->batch)) < total) {
        int n = total - from < b->batch ? total - from : b->batch;
        for (int j = 0; j < n; j++) {
            items[j] = (deferd_put_item){.queue = "bench", .payload = bufs + (size_t)j * stride};
            items[j].len = make_job(ph, from + j, bufs + (size_t)j * stride, &items[j].opts);
        }
        int64_t sent = mono_us(), give_up = now_ms() + 10000;
        size_t stored = 0;
        int rc;
        /* sent again only when nothing was stored: a BATCH carries no put token */
        while ((rc = deferd_put_batch(c, items, (size_t)n, NULL, &stored)) != DEFERD_OK &&
               unavailable(c, rc) && deferd_last_error_stored(c) == DEFERD_STORED_NO &&
               now_ms() < give_up)
            sleep_ms(20);
        if (rc == DEFERD_OK)
            stored = (size_t)n;
        for (int j = 0; !ph->preload && j < n; j++) { /* as the other producers: failed too */
            b->put_us[from + j] = mono_us() - sent;
            if ((size_t)j < stored)
                atomic_store(&b->stored[from + j], now_ms());
        }
        if (stored < (size_t)n) {
            atomic_fetch_add(failures, n - (int)stored);
            fprintf(stderr, "bench: batch put failed: %s\n", deferd_last_error(c));
        }
    }
    if (!ph->preload)
        atomic_store(&b->last_put, now_ms());
    free(bufs);
    free(items);
    deferd_close(c);
    return NULL;
}

/* Runs b->producers producer threads over one phase and waits for them. */
static void run_producers(struct bench *b, int preload, pthread_t *th, int *nth)
{
    static struct phase phases[2];
    phases[preload] = (struct phase){.b = b, .preload = preload};
    int from = *nth;
    for (int i = 0; i < b->producers; i++)
        pthread_create(&th[(*nth)++], NULL,
                       b->batch > 1 ? producer_batch : b->blocking ? producer_blocking : producer,
                       &phases[preload]);
    if (preload) {
        for (int i = from; i < *nth; i++)
            pthread_join(th[i], NULL);
        *nth = from;
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: bench -s SOCKET[,SOCKET...] [-n N] [-w WINDOW_MS] [-C CONSUMERS] "
                    "[-P PRODUCERS] [-D DEPTH] [-p PAYLOAD] [-i INFLIGHT] [-t TIMEOUT_S] "
                    "[-L PRELOAD [-B DAYS]] [-o LATENESS_FILE] [-A] [-K] [-T 1|2] [-H HOLD_MS] "
                    "[-g SMALL_GROUPS [-N]] [-l LEAD_MS] [-b BATCH]\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct bench b = {.sock = getenv("DEFERD_SOCKET"), .n = 10000, .window_ms = 5000,
                      .consumers = 4, .producers = 4, .payload = 100, .inflight = 1,
                      .timeout_s = 120, .depth = 1, .preload_days = 30, .lead_ms = 1000,
                      .batch = 1};
    int ch;
    while ((ch = getopt(argc, argv, "s:n:w:C:P:p:i:t:D:L:B:o:AKT:H:g:Nl:b:")) != -1) {
        switch (ch) {
        case 's': b.sock = optarg; break;
        case 'n': b.n = atoi(optarg); break;
        case 'w': b.window_ms = atoi(optarg); break;
        case 'C': b.consumers = atoi(optarg); break;
        case 'P': b.producers = atoi(optarg); break;
        case 'p': b.payload = atoi(optarg); break;
        case 'i': b.inflight = atoi(optarg); break;
        case 't': b.timeout_s = atoi(optarg); break;
        case 'D': b.depth = atoi(optarg); break;
        case 'L': b.preload = atoi(optarg); break;
        case 'B': b.preload_days = atoi(optarg); break;
        case 'o': b.late_file = optarg; break;
        case 'A': b.ack_pipe = 1; break;
        case 'K': b.keyed = 1; break;
        case 'T': b.blocking = atoi(optarg); break;
        case 'H': b.hold_ms = atoi(optarg); break;
        case 'g': b.small_groups = atoi(optarg); break;
        case 'N': b.no_group_names = 1; break;
        case 'l': b.lead_ms = atoi(optarg); break;
        case 'b': b.batch = atoi(optarg); break;
        default: return usage();
        }
    }
    if (optind != argc)
        return usage();
    for (char *save = NULL, *s = b.sock ? strtok_r(strdup(b.sock), ",", &save) : NULL;
         s && b.nsocks < MAX_SOCKETS; s = strtok_r(NULL, ",", &save))
        b.socks[b.nsocks++] = s;
    if (b.sock && !b.nsocks)
        return usage();
    if (!b.sock || b.n <= 0 || b.consumers < 0 || b.producers < 0 || b.inflight <= 0 ||
        b.depth <= 0 || b.payload < 0 || b.window_ms < 0 || b.preload < 0 ||
        b.preload_days < 1 || b.blocking < 0 || b.blocking > 2) {
        fprintf(stderr, "bench: need -s SOCKET, positive -n -i -D -B, and no negative "
                        "count\n");
        return 2;
    }
    if (b.batch < 1 || b.batch > DEFERD_BATCH_MAX ||
        (b.batch > 1 && (b.keyed || b.small_groups || b.blocking))) {
        fprintf(stderr, "bench: -b takes 1..%d, and not with -K, -g or -T (a batch's jobs "
                        "would share one key or group buffer)\n", DEFERD_BATCH_MAX);
        return 2;
    }
    if (b.consumers == 0 && b.producers == 0) {
        fprintf(stderr, "bench: -C 0 and -P 0: nothing to do\n");
        return 2;
    }
    if (b.preload > 0 && b.producers == 0) {
        fprintf(stderr, "bench: -L needs producers (-P)\n");
        return 2;
    }
    if (b.consumers + b.producers > MAX_THREADS) {
        fprintf(stderr, "bench: at most %d consumers and producers together\n", MAX_THREADS);
        return 2;
    }
    b.due = calloc((size_t)b.n, sizeof *b.due);
    b.late = calloc((size_t)b.n, sizeof *b.late);
    b.seen = calloc((size_t)b.n, sizeof *b.seen);
    b.put_us = calloc((size_t)b.n, sizeof *b.put_us);
    b.stored = calloc((size_t)b.n, sizeof *b.stored);
    b.late_stored = calloc((size_t)b.n, sizeof *b.late_stored);
    if (!b.due || !b.late || !b.seen || !b.put_us || !b.stored || !b.late_stored) {
        fprintf(stderr, "bench: out of memory\n");
        return 1;
    }
    pthread_t th[MAX_THREADS];
    int nth = 0;
    double preload_rate = 0;
    if (b.preload > 0) {
        int64_t start = mono_us();
        b.preload_base = now_ms();
        run_producers(&b, 1, th, &nth);
        int64_t us = mono_us() - start;
        preload_rate = us > 0 ? 1e6 * b.preload / (double)us : 0;
        if (atomic_load(&b.preload_fail))
            fprintf(stderr, "bench: %d preload puts failed\n", atomic_load(&b.preload_fail));
    }
    srand(1);
    b.t0 = now_ms();
    for (int i = 0; i < b.n && b.producers > 0; i++)
        b.due[i] = b.t0 + b.lead_ms + (b.window_ms ? rand() % b.window_ms : 0);
    for (int i = 0; i < b.consumers; i++)
        pthread_create(&th[nth++], NULL, consumer, &b);
    if (b.producers > 0)
        run_producers(&b, 0, th, &nth);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    int delivered = atomic_load(&b.delivered);
    int file_ok = b.late_file ? write_lateness(&b, delivered) == 0 : 1;
    report(&b, atomic_load(&b.last_put) - b.t0, preload_rate);
    int ok = b.consumers == 0 ? atomic_load(&b.put_fail) == 0 : delivered == b.n;
    free(b.due);
    free(b.late);
    free(b.seen);
    free(b.put_us);
    free(b.stored);
    free(b.late_stored);
    return ok && file_ok && atomic_load(&b.preload_fail) == 0 ? 0 : 1;
}
