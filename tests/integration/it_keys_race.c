/* Idempotency keys under a race (docs/protocol.md, PUT key=): 30 producers spread over
 * three daemons on one root put the same key at the same moment: one job exists,
 * everyone got its id, exactly one put created it. */
#include <pthread.h>
#include <stdlib.h>

#include "harness_keys.h"
#include "layout.h"

static struct daemon_proc d[3];
static char root[128];
static zhandle_t *zh;

/* ---- same key, many producers, three daemons, one moment ---- */

#define RACERS 30

struct racer {
    deferd_client *c;
    const char *key;
    pthread_barrier_t *start;
    int rc;
    int duplicate;
    char id[DEFERD_ID_SIZE];
    char err[256];
};

static void *race_put(void *arg)
{
    struct racer *r = arg;
    deferd_put_item it;
    char payload[64];
    snprintf(payload, sizeof payload, "racer %p", (void *)r);
    keyed_item(&it, "race", payload, r->key, HOUR_MS);
    pthread_barrier_wait(r->start);
    r->rc = deferd_put_one(r->c, &it);
    snprintf(r->id, sizeof r->id, "%s", it.id);
    r->duplicate = it.duplicate;
    snprintf(r->err, sizeof r->err, "%s", deferd_last_error(r->c));
    return NULL;
}

static void same_key_race(void)
{
    static const char *const keys[] = {"race-1", "race:2", "race.3@x", "R_4"};
    struct racer rs[RACERS];
    pthread_t th[RACERS];
    pthread_barrier_t start;
    for (int i = 0; i < RACERS; i++)
        rs[i].c = client(&d[i % 3]);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        pthread_barrier_init(&start, NULL, RACERS);
        for (int i = 0; i < RACERS; i++) {
            rs[i].key = keys[k];
            rs[i].start = &start;
            rs[i].rc = -100;
            CHECK(pthread_create(&th[i], NULL, race_put, &rs[i]) == 0);
        }
        for (int i = 0; i < RACERS; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&start);
        int created = 0, same = 0;
        for (int i = 0; i < RACERS; i++) {
            if (rs[i].rc != DEFERD_OK)
                fprintf(stderr, "racer %d (daemon %d): rc %d %s\n", i, i % 3, rs[i].rc, rs[i].err);
            CHECK(rs[i].rc == DEFERD_OK);
            created += rs[i].duplicate == 0;
            same += strcmp(rs[i].id, rs[0].id) == 0;
        }
        printf("key %s: %d puts over 3 daemons, %d created, %d answered %s\n", keys[k], RACERS,
               created, same, rs[0].id);
        CHECK(created == 1);
        CHECK(same == RACERS);
        CHECK(id_has_key(rs[0].id, keys[k]));
        CHECK(zk_job_exists(zh, root, rs[0].id));
        CHECK(key_names("race", keys[k], rs[0].id));
        CHECK(zk_count_jobs(zh, root, "race") == (int)k + 1);
    }
    for (int i = 0; i < RACERS; i++)
        deferd_close(rs[i].c);
}

int main(void)
{
    return keys_run("keys_race", d, root, sizeof root, &zh, same_key_race);
}
