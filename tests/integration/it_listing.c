/* A bucket a daemon follows (a consumer of the queue is subscribed to it) and lists again
 * after its own puts: when nothing but those puts changed
 * it (the child version moved by exactly them), the listing is not walked name by name
 * (STATS listings_unchanged); a job another daemon puts into the same bucket moves the
 * version further, and the daemon walks the next listing and learns it. */
#include <stdlib.h>
#include <signal.h>
#include <unistd.h>

#include "harness.h"

enum { N = 300 };

static struct daemon_proc d[2];
static char root[128];

static void put_many(deferd_client *prod, int64_t due)
{
    char id[DEFERD_ID_SIZE];
    int ok = 0;
    for (int i = 0; i < N; i++) {
        deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)due};
        CHECK(deferd_put_send(prod, "a", "own", 3, &o) == DEFERD_OK);
        while (deferd_puts_outstanding(prod) > (i + 1 < N ? 32 : 0))
            ok += deferd_put_recv(prod, id, sizeof id, 10000) == DEFERD_OK;
    }
    CHECK(ok == N);
}

/* D's STATS field KEY as a number, or -1. */
static long long stat_of(const struct daemon_proc *dp, const char *key)
{
    static char buf[16384];
    deferd_client *c = client(dp);
    long v = c && deferd_stats(c, buf, sizeof buf) == DEFERD_OK ? stats_field(buf, key) : -1;
    deferd_close(c);
    return v;
}

static int wait_stat_at_least(const struct daemon_proc *dp, const char *key, long long want,
                              int ms)
{
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        if (stat_of(dp, key) >= want)
            return 1;
        usleep(50000);
    }
    return 0;
}

int main(void)
{
    harness_init("listing", root, sizeof root);
    if (daemons_start(d, 2, root, NULL) != 0)
        return 1;
    int64_t due = now_ms() + 1500; /* one bucket, within the harness's lookahead (2 s) */
    deferd_client *a = client(&d[0]), *b = client(&d[1]), *cons = client(&d[0]);
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK); /* d0 follows queue a */
    /* one job first: its bucket is made and d0 lists it (the first listing is walked) */
    deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)due};
    deferd_put_item first = {.queue = "a", .payload = "first", .len = 5, .opts = o};
    CHECK(put_keyed(a, &first) == DEFERD_OK);
    CHECK(wait_stat_at_least(&d[0], "jobs_known", 1, 10000));
    long long before = stat_of(&d[0], "listings_unchanged");
    put_many(a, due);
    CHECK(wait_stat_at_least(&d[0], "jobs_known", N + 1, 10000));
    /* its own puts fired its watch on the bucket: listed again, and not walked */
    CHECK(wait_stat_at_least(&d[0], "listings_unchanged", before + 1, 10000));
    deferd_put_item it = {.queue = "a", .payload = "foreign", .len = 7, .opts = o};
    CHECK(put_keyed(b, &it) == DEFERD_OK);
    /* the other daemon's job moved the version by one more than d0's own: walked, learnt */
    CHECK(wait_stat_at_least(&d[0], "jobs_known", N + 2, 10000));
    printf("d0: listings_unchanged %lld -> %lld, jobs_known %lld\n", before,
           stat_of(&d[0], "listings_unchanged"), stat_of(&d[0], "jobs_known"));
    deferd_close(a);
    deferd_close(b);
    deferd_close(cons);
    daemon_kill(&d[0], SIGTERM);
    daemon_kill(&d[1], SIGTERM);
    return check_report("listing");
}
