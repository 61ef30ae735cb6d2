/* A dense bucket: 6000 jobs due at the same millisecond, put pipelined through one daemon.
 * Past 2048 of them the daemon writes into shard directories of its own, so that no
 * ZooKeeper listing holds them all; every job is still delivered exactly once, by a second
 * daemon that only reads ZooKeeper (sharded ids ack like any other), in priority order
 * within the due time, and nothing is left behind. */
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "layout.h"

enum { N = 6000 };

static struct daemon_proc writer, reader;
static char root[128];

/* Names of the shard directories in the bucket of DUE, and the most names in one listing. */
static int count_shards(zhandle_t *zh, const char *queue, int64_t due, int *largest)
{
    char path[LAYOUT_PATH_MAX];
    struct String_vector kids;
    layout_bucket_path(path, sizeof path, root, queue, (uint64_t)due, LAYOUT_DEPTH, 1);
    if (zoo_get_children(zh, path, 0, &kids) != ZOK)
        return -1;
    int shards = 0;
    *largest = kids.count;
    for (int i = 0; i < kids.count; i++) {
        if (!layout_valid_shard(kids.data[i]))
            continue;
        shards++;
        char sub[LAYOUT_PATH_MAX + 40];
        struct String_vector jobs;
        snprintf(sub, sizeof sub, "%s/%s", path, kids.data[i]);
        if (zoo_get_children(zh, sub, 0, &jobs) == ZOK) {
            if (jobs.count > *largest)
                *largest = jobs.count;
            deallocate_String_vector(&jobs);
        }
    }
    deallocate_String_vector(&kids);
    return shards;
}

static void put_all(deferd_client *prod, int64_t due)
{
    char id[DEFERD_ID_SIZE];
    int ok = 0, sharded = 0;
    for (int i = 0; i < N; i++) {
        char payload[16];
        int n = snprintf(payload, sizeof payload, "%d", i);
        deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)due, .has_priority = 1,
                             .priority = (uint32_t)(N - i)};
        CHECK(deferd_put_send(prod, "a", payload, (size_t)n, &o) == DEFERD_OK);
        if (deferd_puts_outstanding(prod) < 256 && i + 1 < N)
            continue;
        while (deferd_puts_outstanding(prod) > (i + 1 < N ? 128 : 0)) {
            int rc = deferd_put_recv(prod, id, sizeof id, 10000);
            CHECK(rc == DEFERD_OK);
            ok += rc == DEFERD_OK;
            sharded += rc == DEFERD_OK && strchr(strchr(id, '/') + 1, '/') != NULL;
        }
    }
    printf("put %d jobs due at one millisecond, %d of them with a shard in their id\n", ok,
           sharded);
    CHECK(ok == N);
    CHECK(sharded >= N - 2048 - 16 && sharded <= N - 2048); /* the first 2048 go directly */
}

int main(void)
{
    harness_init("shards", root, sizeof root);
    zhandle_t *zh = zk_connect();
    CHECK(zh != NULL);
    CHECK(daemon_start(&writer, root, "w", NULL) == 0);
    CHECK(daemon_wait_connected(&writer, 10000) == 0);
    deferd_client *prod = client(&writer);
    int64_t due = now_ms() + 4000;
    put_all(prod, due);

    int largest = 0, shards = count_shards(zh, "a", due, &largest);
    printf("bucket: %d shard directories, largest listing %d names\n", shards, largest);
    CHECK(shards == (N - 2048 + 2047) / 2048);
    CHECK(largest <= 2048 + shards);
    CHECK(zk_count_jobs(zh, root, "a") == N);

    /* A daemon that did not write them finds them through the listings alone. */
    CHECK(daemon_start(&reader, root, "r", NULL) == 0);
    deferd_client *cons = client(&reader);
    CHECK(deferd_subscribe(cons, "a", 64) == DEFERD_OK);
    static unsigned char seen[N];
    int got = 0, dups = 0, early = 0, disorder = 0;
    uint32_t last_prio = 0;
    char id[DEFERD_ID_SIZE];
    while (got < N) {
        deferd_job job;
        int rc = deferd_next_job(cons, &job, 20000);
        CHECK(rc == DEFERD_OK);
        if (rc != DEFERD_OK)
            break;
        int i = atoi((const char *)job.payload);
        early += now_ms() < job.due_ms;
        disorder += job.priority < last_prio;
        last_prio = job.priority;
        if (i >= 0 && i < N && !seen[i]++)
            got++;
        else
            dups++;
        CHECK(deferd_ack_send(cons, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
        while (deferd_acks_outstanding(cons) > 32) {
            CHECK(deferd_ack_recv(cons, id, sizeof id, 10000) == DEFERD_OK);
        }
    }
    while (deferd_acks_outstanding(cons) > 0)
        CHECK(deferd_ack_recv(cons, id, sizeof id, 10000) == DEFERD_OK);
    printf("delivered %d, duplicates %d, early %d, out of priority order %d\n", got, dups, early,
           disorder);
    CHECK(got == N && dups == 0 && early == 0);
    CHECK(disorder == 0); /* all were listed long before they fell due */
    int64_t deadline = now_ms() + 10000;
    while (zk_count_jobs(zh, root, "a") > 0 && now_ms() < deadline)
        nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL); /* acks still landing */
    CHECK(zk_count_jobs(zh, root, "a") == 0);

    char stats[1024];
    CHECK(deferd_stats(cons, stats, sizeof stats) == DEFERD_OK);
    const char *lm = strstr(stats, "listing_max_bytes=");
    long bytes = lm ? atol(lm + strlen("listing_max_bytes=")) : -1;
    printf("reader's largest listing: %ld bytes\n", bytes);
    CHECK(bytes > 0 && bytes < 150000);
    deferd_close(prod);
    deferd_close(cons);
    daemon_kill(&writer, SIGTERM);
    daemon_kill(&reader, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_shards");
}
