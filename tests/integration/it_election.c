/* Leader elections under load: a 3-member ensemble on loopback, three daemons, a producer
 * putting steadily through each, and the leader killed with -9 again and again (the member
 * restarted after each election). Every daemon is SUSPENDED for the election and gets the
 * same session back; its writes wait for it ([daemon] hold_writes) instead of failing, and a
 * put whose answer the election cut off is found out after it. So: no put answered with an
 * error, and every put stored exactly once (jobs counted by payload in ZooKeeper).
 *
 * ELECTION_KILLS (default 3) sets the number of kills; tests/bench/election runs 10 and
 * reports the figures (put latency during elections against the elections' length).
 * ELECTION_HOLD_WRITES sets [daemon] hold_writes (0: the behaviour before the hold, for
 * comparison; the checks on failures are then reported, not enforced). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <uthash.h>

#include "harness.h"

#define NDAEMONS 3
#define MAX_PUTS 50000

static struct daemon_proc d[NDAEMONS];
static char root[128], ensdir[256];

struct put_rec {
    int64_t start, ms;   /* when it was sent, how long its answer took */
    int ok;
    char why[120];       /* the error, when not ok */
};

struct producer {
    pthread_t thread;
    int n;               /* which daemon */
    int count;           /* puts made */
    struct put_rec *recs;
};

static volatile int stopping;

/* The daemon's answers as they are: libdeferd's own retry (deferd_set_put_retry) off, so
 * that what is checked is the daemon's hold, not the library's second try. */
static deferd_client *bare_client(const struct daemon_proc *dp)
{
    deferd_client *c = client(dp);
    if (c)
        deferd_set_put_retry(c, 0);
    return c;
}

static void *produce(void *arg)
{
    struct producer *p = arg;
    deferd_client *c = bare_client(&d[p->n]);
    deferd_put_opts o = {.has_delay = 1, .delay_ms = 600000}; /* due later: never consumed */
    while (c && !stopping && p->count < MAX_PUTS) {
        struct put_rec *r = &p->recs[p->count];
        char payload[48], id[DEFERD_ID_SIZE];
        int len = snprintf(payload, sizeof payload, "e-%d-%d", p->n, p->count);
        r->start = now_ms();
        int rc = deferd_put(c, "a", payload, (size_t)len, &o, id, sizeof id);
        r->ms = now_ms() - r->start;
        r->ok = rc == DEFERD_OK;
        if (!r->ok)
            snprintf(r->why, sizeof r->why, "%s", deferd_last_error(c));
        p->count++;
        if (rc == DEFERD_EIO) { /* the connection is unusable: a new one */
            deferd_close(c);
            c = bare_client(&d[p->n]);
        }
    }
    deferd_close(c);
    return NULL;
}

/* Kills the leader with -9; returns its member number, or -1. */

/* The longest "SUSPENDED -> RECONNECTED after N ms" of the daemons since MARKS; -1 when a
 * daemon did not come back with its session within 15 s. */
static int64_t wait_reconnected(const long *marks)
{
    int64_t longest = 0;
    for (int i = 0; i < NDAEMONS; i++) {
        if (!log_wait(&d[i], marks[i], "SUSPENDED -> RECONNECTED after", 15000))
            return -1;
        FILE *f = fopen(d[i].log, "r");
        char line[512];
        if (!f)
            return -1;
        fseek(f, marks[i], SEEK_SET);
        while (fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "SUSPENDED -> RECONNECTED after ");
            long long ms = p ? atoll(p + 31) : 0;
            longest = ms > longest ? ms : longest;
        }
        fclose(f);
    }
    return longest;
}

/* payload -> times stored, from every job znode of queue a. */
struct stored {
    UT_hash_handle hh;
    char payload[64];
    int n;
};

/* Every znode under PATH whose data is one of our payloads (jobs), counted by payload. */
static void count_payloads(zhandle_t *zh, const char *path, int depth, struct stored **set)
{
    struct String_vector kids;
    if (depth > 8 || zoo_get_children(zh, path, 0, &kids) != ZOK)
        return;
    for (int i = 0; i < kids.count; i++) {
        char sub[600], data[64];
        snprintf(sub, sizeof sub, "%s/%s", path, kids.data[i]);
        if (zk_get(zh, sub, data, sizeof data) > 0 && strncmp(data, "e-", 2) == 0) {
            struct stored *st;
            HASH_FIND_STR(*set, data, st);
            if (!st) {
                st = calloc(1, sizeof *st);
                snprintf(st->payload, sizeof st->payload, "%s", data);
                HASH_ADD_STR(*set, payload, st);
            }
            st->n++;
        } else {
            count_payloads(zh, sub, depth + 1, set);
        }
    }
    deallocate_String_vector(&kids);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Put latencies (ms) of the puts sent in [FROM, TO): their p99 and max, and how many. */
static void latency(struct producer *ps, int64_t from, int64_t to, int64_t *p99, int64_t *max,
                    int *n)
{
    int cap = 0;
    for (int i = 0; i < NDAEMONS; i++)
        cap += ps[i].count;
    int64_t *xs = calloc((size_t)cap + 1, sizeof *xs);
    *n = 0;
    for (int i = 0; xs && i < NDAEMONS; i++)
        for (int k = 0; k < ps[i].count; k++)
            if (ps[i].recs[k].start >= from && ps[i].recs[k].start < to)
                xs[(*n)++] = ps[i].recs[k].ms;
    qsort(xs, (size_t)*n, sizeof *xs, cmp64);
    *p99 = *n ? xs[*n * 99 / 100] : 0;
    *max = *n ? xs[*n - 1] : 0;
    free(xs);
}

/* One election: the leader killed, every daemon back with its session, the member
 * restarted. Returns the election's length as the producers saw it, from the kill until
 * the last daemon was back (to 20 ms), or -1. */
static int64_t one_election(int round, int64_t *killed_at)
{
    long marks[NDAEMONS];
    for (int i = 0; i < NDAEMONS; i++)
        marks[i] = log_mark(&d[i]);
    *killed_at = now_ms();
    int member = zk_kill_leader(ensdir);
    if (member < 0)
        return -1;
    int64_t longest = wait_reconnected(marks), back = now_ms() - *killed_at;
    char dir[400];
    snprintf(dir, sizeof dir, "%s/node%d", ensdir, member);
    int restarted = zk_sandbox("restart", dir, NULL, 0) == 0;
    printf("election %d: leader (member %d) killed; every daemon back with its session %lld ms "
           "later (suspended at most %lld ms); member %s\n", round + 1, member, (long long)back,
           (long long)longest, restarted ? "restarted" : "NOT restarted");
    return restarted && longest >= 0 ? back : -1;
}

int main(void)
{
    harness_init("election", root, sizeof root);
    int kills = getenv("ELECTION_KILLS") ? atoi(getenv("ELECTION_KILLS")) : 3;
    if (zk_ensemble_start(ensdir, sizeof ensdir) != 0)
        return 1;
    char hold[64] = "daemon.log_level=debug";
    const char *hold_env = getenv("ELECTION_HOLD_WRITES");
    if (hold_env)
        snprintf(hold, sizeof hold, "daemon.hold_writes=%s", hold_env);
    const char *const ov[] = {"zookeeper.session_timeout=10s", hold, NULL};
    if (daemons_start(d, NDAEMONS, root, ov) != 0)
        return 1;
    struct producer ps[NDAEMONS];
    for (int i = 0; i < NDAEMONS; i++) {
        ps[i] = (struct producer){.n = i, .recs = calloc(MAX_PUTS, sizeof(struct put_rec))};
        if (!ps[i].recs || pthread_create(&ps[i].thread, NULL, produce, &ps[i]) != 0)
            return 1;
    }
    int64_t elections[32][2]; /* kill time, length */
    int done = 0;
    usleep(2000000); /* steady load before the first kill (the load, not a wait for a result) */
    for (int k = 0; k < kills && k < 32; k++, done++) {
        elections[k][1] = one_election(k, &elections[k][0]);
        CHECK(elections[k][1] >= 0);
        if (elections[k][1] < 0)
            break;
        usleep(1500000); /* steady load between elections */
    }
    stopping = 1;
    int total = 0, failed = 0;
    for (int i = 0; i < NDAEMONS; i++) {
        pthread_join(ps[i].thread, NULL);
        total += ps[i].count;
        for (int k = 0; k < ps[i].count; k++)
            if (!ps[i].recs[k].ok && failed++ < 5)
                printf("put e-%d-%d failed after %lld ms: %s\n", i, k,
                       (long long)ps[i].recs[k].ms, ps[i].recs[k].why);
    }
    int64_t p99, max, longest = 0;
    int n, in_elections = 0;
    for (int k = 0; k < done; k++) {
        int64_t e99, emax;
        int en;
        latency(ps, elections[k][0], elections[k][0] + elections[k][1], &e99, &emax, &en);
        in_elections += en;
        printf("election %d: %lld ms; %d puts sent during it: p99 %lld ms, max %lld ms\n",
               k + 1, (long long)elections[k][1], en, (long long)e99, (long long)emax);
        longest = elections[k][1] > longest ? elections[k][1] : longest;
    }
    latency(ps, 0, INT64_MAX, &p99, &max, &n);
    zhandle_t *zh = zk_connect();
    struct stored *set = NULL, *st, *tmp;
    char path[300];
    snprintf(path, sizeof path, "%s/queues/a/jobs", root);
    count_payloads(zh, path, 0, &set);
    int once = 0, twice = 0;
    HASH_ITER(hh, set, st, tmp) {
        once += st->n == 1;
        twice += st->n > 1;
        if (st->n > 1 && twice <= 5)
            printf("stored %d times: %s\n", st->n, st->payload);
    }
    printf("%d elections (longest %lld ms); %d puts, %d failed; latency p99 %lld ms, max %lld "
           "ms; %d sent during elections; %d payloads stored once, %d more than once\n",
           done, (long long)longest, total, failed, (long long)p99, (long long)max,
           in_elections, once, twice);
    CHECK(done == kills);
    int holding = !hold_env || atoi(hold_env) > 0;
    CHECK(failed == 0 || !holding);
    CHECK(twice == 0);
    CHECK(once >= total - failed && once <= total); /* every put answered OK is there, once */
    CHECK(in_elections > 0);       /* the elections happened under load */
    zookeeper_close(zh);
    HASH_ITER(hh, set, st, tmp) {
        HASH_DEL(set, st);
        free(st);
    }
    for (int i = 0; i < NDAEMONS; i++) {
        free(ps[i].recs);
        daemon_kill(&d[i], SIGTERM);
    }
    zk_sandbox("stop", ensdir, NULL, 0);
    return check_report("it_election");
}
