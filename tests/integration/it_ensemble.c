/* A 3-node ensemble on loopback: the leader is killed under a steady load of puts and
 * deliveries; work goes on and every stored job is delivered and acked. */
#include <stdlib.h>
#include <unistd.h>
#include <uthash.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128], ensdir[256];

struct seen {
    UT_hash_handle hh;
    char id[DEFERD_ID_SIZE];
    int put, acked;
};
static struct seen *ledger;

static struct seen *entry(const char *id)
{
    struct seen *e;
    HASH_FIND_STR(ledger, id, e);
    if (!e) {
        e = calloc(1, sizeof *e);
        snprintf(e->id, sizeof e->id, "%s", id);
        HASH_ADD_STR(ledger, id, e);
    }
    return e;
}

static void consume_some(deferd_client *c, int wait_ms)
{
    deferd_job job;
    while (deferd_next_job(c, &job, wait_ms) == DEFERD_OK) {
        if (deferd_ack(c, job.id) == DEFERD_OK)
            entry(job.id)->acked++;
        deferd_job_clear(&job);
        wait_ms = 0;
    }
}

int main(void)
{
    harness_init("ensemble", root, sizeof root);
    if (zk_ensemble_start(ensdir, sizeof ensdir) != 0)
        return 1;
    char leader[16], member[300];
    static const char *const ov[] = {"zookeeper.session_timeout=10s", NULL};
    if (daemon_start(&d, root, "e1", ov) != 0)
        return 1;
    deferd_client *prod = client(&d), *cons = client(&d);
    CHECK(deferd_subscribe(cons, "a", 4) == DEFERD_OK);
    char id[DEFERD_ID_SIZE];
    int puts = 0, killed = 0;
    int64_t t0 = now_ms();
    while (now_ms() < t0 + 8000) {
        if (put_job(prod, "a", "steady", rand() % 500, -1, -1, id) == 0) {
            entry(id)->put++;
            puts++;
        }
        consume_some(cons, 5);
        if (!killed && now_ms() > t0 + 3000) {
            CHECK(zk_sandbox("leader", ensdir, leader, sizeof leader) == 0);
            snprintf(member, sizeof member, "%s/node%d", ensdir, atoi(leader));
            CHECK(zk_sandbox("stop", member, NULL, 0) == 0);
            printf("killed leader (member %d) after %d puts\n", atoi(leader), puts);
            killed = 1;
        }
    }
    int64_t deadline = now_ms() + 30000;
    int missing;
    do {
        consume_some(cons, 200);
        missing = 0;
        struct seen *e, *tmp;
        HASH_ITER(hh, ledger, e, tmp) missing += e->put && !e->acked;
    } while (missing && now_ms() < deadline);
    int extra = 0, twice = 0;
    struct seen *e, *tmp;
    HASH_ITER(hh, ledger, e, tmp) {
        extra += !e->put;
        twice += e->acked > 1;
    }
    char stats[512];
    CHECK(deferd_stats(cons, stats, sizeof stats) == DEFERD_OK);
    printf("%d puts answered OK, %d not acked, %d acked jobs whose put was not answered OK, "
           "%d acked twice\nstats: %s\n", puts, missing, extra, twice, stats);
    CHECK(missing == 0);
    CHECK(twice == 0);
    CHECK(puts > 100);
    CHECK_CONTAINS(stats, "zk_state=CONNECTED");
    deferd_close(prod);
    deferd_close(cons);
    daemon_kill(&d, SIGTERM);
    zk_sandbox("stop", ensdir, NULL, 0);
    return check_report("it_ensemble");
}
