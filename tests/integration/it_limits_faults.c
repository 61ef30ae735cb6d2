/* Cluster-wide limits under faults (issue 40): a 3-member ensemble, three daemons, two
 * consumers on each. Queue a: concurrency = 4 and group_concurrency = 2 (jobs in groups g0,
 * g1, g2), each job worked 60 ms; queue b: rate = 10/s and group_rate = 4/s (groups g0, g1,
 * g2 too). Meanwhile a consumer connection is
 * cut while it holds jobs (a worker killed), daemon 0 is killed with SIGKILL (its consumers
 * stop their jobs at once, as deferctl work --kill-on-expiry and the Python worker do), and
 * the ZooKeeper leader is killed (an election). Judged from the consumers' own start and
 * finish stamps: never more than 4 of a's jobs at once, nor 2 of one group's; by ZooKeeper's
 * own stamps (each b lock's ctime, from the multi that started its rate slot), no window of
 * a second holds more than 10 of b's starts, nor 4 of one group's; every job done. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define NDAEMONS 3
#define NCONS (2 * NDAEMONS)
#define A_JOBS 150
#define B_JOBS 40
#define HOLD_MS 60
#define LIMIT 4
#define GROUP_LIMIT 2
#define RATE 10
#define GROUP_RATE 4
#define SPANS_MAX 4096

static struct daemon_proc d[NDAEMONS];
static char root[128], ensdir[256];

struct span { /* one delivery as its consumer saw it */
    int64_t start, end; /* end: its ack sent, or the moment its worker stopped */
    int64_t zk_start;   /* b: its lock's ctime, ZooKeeper's stamp of the lock's multi */
    int queue_b, group;
};
static zhandle_t *zh;
static int unread; /* b's deliveries whose lock was gone before it could be read */
static struct span spans[SPANS_MAX];
static int nspans;

struct cons {
    deferd_client *c;
    int daemon;
    struct { char id[DEFERD_ID_SIZE]; int span; } held[8];
    int nheld;
};
static struct cons cons[NCONS];

static void connect_cons(struct cons *k, int daemon)
{
    *k = (struct cons){.c = client(&d[daemon]), .daemon = daemon};
    CHECK(k->c && deferd_subscribe(k->c, "a,b", 4) == DEFERD_OK);
}

/* Every job K holds ends now, unacked (its worker stopped); the connection goes. */
static void drop_cons(struct cons *k)
{
    for (int i = 0; i < k->nheld; i++)
        spans[k->held[i].span].end = now_ms();
    k->nheld = 0;
    deferd_close(k->c);
    k->c = NULL;
}

static void take(struct cons *k)
{
    deferd_job job;
    if (!k->c || k->nheld == 8 || deferd_next_job(k->c, &job, 2) != DEFERD_OK)
        return;
    int b = strcmp(job.queue, "b") == 0;
    char group[DEFERD_GROUP_MAX + 1] = "";
    deferd_job_group(job.id, group, sizeof group);
    if (nspans < SPANS_MAX) {
        spans[nspans] = (struct span){.start = now_ms(), .end = INT64_MAX, .queue_b = b,
                                      .group = group[0] ? group[1] - '0' : -1};
        /* the rate slot was started in the same multi as the lock: the lock's ctime is the
         * start by ZooKeeper's clock (the job is still held: b's are acked after this) */
        char path[600], lock[620];
        struct Stat st;
        if (b && job_path(root, job.id, path, sizeof path) == 0) {
            snprintf(lock, sizeof lock, "%s/lock", path);
            int rc, tries = 0; /* the election may cut this read: then again */
            while ((rc = zoo_exists(zh, lock, 0, &st)) != ZOK && rc != ZNONODE && tries++ < 100) {
                if (rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE) { /* this test's own */
                    zookeeper_close(zh);
                    zh = zk_connect();
                }
                usleep(100000);
            }
            /* gone: its daemon was killed meanwhile, or lost its session; its next delivery
             * is judged instead (counted, and few) */
            if (rc != ZOK) {
                unread++;
                printf("faults: the lock of %s: %s\n", job.id, zerror(rc));
            }
            spans[nspans].zk_start = rc == ZOK ? st.ctime : -1;
        }
        snprintf(k->held[k->nheld].id, DEFERD_ID_SIZE, "%s", job.id);
        k->held[k->nheld++].span = nspans++;
    }
    deferd_job_clear(&job);
}

/* Jobs worked long enough are acked, pipelined (deferd_ack_send), so that reading the next
 * push never waits for an ack's round trip: pushes are stamped as they arrive. */
static void finish_due(struct cons *k)
{
    char id[DEFERD_ID_SIZE];
    while (k->c && deferd_acks_outstanding(k->c) > 0 &&
           deferd_ack_recv(k->c, id, sizeof id, 0) == DEFERD_OK)
        ;
    for (int i = 0; k->c && i < k->nheld; i++) {
        struct span *s = &spans[k->held[i].span];
        if (now_ms() - s->start < (s->queue_b ? 0 : HOLD_MS))
            continue;
        s->end = now_ms(); /* stamped before the ack is sent: the slot is still held */
        CHECK(deferd_ack_send(k->c, k->held[i].id) == DEFERD_OK);
        k->held[i--] = k->held[--k->nheld];
    }
}

/* Every job acked: both queues empty in ZooKeeper (no nack, no dead letter here). */
static int all_done(void)
{
    return zk_count_jobs(zh, root, "a") == 0 && zk_count_jobs(zh, root, "b") == 0;
}

/* The most of a's spans (of GROUP, or every one for -1) overlapping at any instant; an end
 * at the same ms as a start comes first. */
static int most_at_once(int group)
{
    int most = 0;
    for (int i = 0; i < nspans; i++) {
        if (spans[i].queue_b || (group >= 0 && spans[i].group != group))
            continue;
        int n = 0;
        for (int j = 0; j < nspans; j++)
            n += !spans[j].queue_b && (group < 0 || spans[j].group == group) &&
                 spans[j].start <= spans[i].start && spans[j].end > spans[i].start;
        most = n > most ? n : most;
    }
    return most;
}

/* b's starts (of GROUP, or every one for -1) by ZooKeeper's clock in any window of a
 * second. */
static int most_b_in_window(int group)
{
    int most = 0;
    for (int i = 0; i < nspans; i++) {
        int n = 0;
        for (int j = 0; spans[i].queue_b && spans[i].zk_start >= 0 && j < nspans; j++)
            n += spans[j].queue_b && (group < 0 || spans[j].group == group) &&
                 spans[j].zk_start >= spans[i].zk_start &&
                 spans[j].zk_start - spans[i].zk_start < 1000;
        most = n > most ? n : most;
    }
    return most;
}

static void kill_leader(void)
{
    int member = zk_kill_leader(ensdir);
    char dir[300];
    CHECK(member >= 0);
    snprintf(dir, sizeof dir, "%s/node%d", ensdir, member);
    CHECK(zk_sandbox("restart", dir, NULL, 0) == 0);
    printf("faults: leader (member %d) killed and restarted\n", member);
}

int main(void)
{
    harness_init("limits_faults", root, sizeof root);
    if (zk_ensemble_start(ensdir, sizeof ensdir) != 0)
        return 1;
    /* sessions outlast an election on a loaded machine (as in integration.election) */
    const char *const ov[] = {"queue.a.concurrency=4", "queue.a.group_concurrency=2",
                              "queue.b.rate=10/s", "queue.b.group_rate=4/s",
                              "zookeeper.session_timeout=10s", NULL};
    if (daemons_start(d, NDAEMONS, root, ov) != 0)
        return 1;
    for (int k = 0; k < NCONS; k++)
        connect_cons(&cons[k], k % NDAEMONS);
    zh = zk_connect();
    deferd_client *p = client(&d[1]);
    char id[DEFERD_ID_SIZE], payload[16], group[4];
    /* all due once every put is stored and the consumers are being read: a push that
     * waited in a client's buffer would be stamped late */
    uint64_t due = (uint64_t)now_ms() + 4000;
    for (int i = 0; i < A_JOBS + B_JOBS; i++) {
        int b = i >= A_JOBS;
        snprintf(payload, sizeof payload, "%d", b ? i - A_JOBS : i);
        snprintf(group, sizeof group, "g%d", i % 3);
        deferd_put_opts o = {.group = group, .has_at = 1, .at_ms = due};
        CHECK(deferd_put(p, b ? "b" : "a", payload, strlen(payload), &o, id, sizeof id) ==
              DEFERD_OK);
    }
    deferd_close(p);
    CHECK(now_ms() < (int64_t)due);
    while (now_ms() < (int64_t)due) /* the consumers are read from before the due time */
        for (int k = 0; k < NCONS; k++)
            take(&cons[k]);
    int64_t t0 = now_ms(), deadline = t0 + 90000, next_count = t0 + 2000;
    int stage = 0, done = 0;
    while (!done && now_ms() < deadline) {
        if (now_ms() >= next_count) { /* a few reads, twice a second */
            done = stage == 3 && all_done();
            next_count = now_ms() + 500;
        }
        for (int k = 0; k < NCONS; k++) {
            take(&cons[k]);
            finish_due(&cons[k]);
        }
        int64_t t = now_ms() - t0;
        if (stage == 0 && t > 700 && cons[3].nheld) { /* a worker killed while it holds */
            printf("faults: consumer 3 cut holding %d jobs at %lld ms\n", cons[3].nheld,
                   (long long)t);
            drop_cons(&cons[3]);
            connect_cons(&cons[3], 1);
            stage = 1;
        } else if (stage == 1 && t > 1500) { /* daemon 0 killed: its workers stop at once */
            daemon_kill(&d[0], SIGKILL);
            for (int k = 0; k < NCONS; k++)
                if (cons[k].daemon == 0)
                    drop_cons(&cons[k]);
            printf("faults: daemon 0 killed at %lld ms\n", (long long)t);
            stage = 2;
        } else if (stage == 2 && t > 3000) {
            kill_leader();
            stage = 3;
        }
    }
    int most = most_at_once(-1), most_b = most_b_in_window(-1), most_g = 0, most_bg = 0;
    for (int g = 0; g < 3; g++) {
        int m = most_at_once(g), mb = most_b_in_window(g);
        most_g = m > most_g ? m : most_g;
        most_bg = mb > most_bg ? mb : most_bg;
    }
    printf("faults: %d deliveries in %lld ms; at most %d of a at once (limit %d), %d of one "
           "group (limit %d), %d of b started in any second by ZooKeeper's clock (rate %d/s), %d "
           "of one group's (group_rate %d/s)\n", nspans, (long long)(now_ms() - t0), most, LIMIT,
           most_g, GROUP_LIMIT, most_b, RATE, most_bg, GROUP_RATE);
    if (most_b > RATE || most_bg > GROUP_RATE || getenv("LIMITS_FAULTS_TRACE"))
        for (int i = 0; i < nspans; i++)
            if (spans[i].queue_b)
                printf("b g%d start %lld zk %lld\n", spans[i].group, (long long)(spans[i].start - t0),
                       (long long)(spans[i].zk_start - t0));
    CHECK(unread <= 4);
    CHECK(stage == 3);
    CHECK(done);
    CHECK(most <= LIMIT && most_g <= GROUP_LIMIT && most_b <= RATE && most_bg <= GROUP_RATE);
    CHECK(most == LIMIT); /* the limit, not the consumers, held the work back */
    for (int k = 0; k < NCONS; k++)
        if (cons[k].c)
            drop_cons(&cons[k]);
    for (int i = 0; i < NDAEMONS; i++) /* daemon 0 too, when a failure came before its kill */
        daemon_kill(&d[i], SIGTERM);
    zookeeper_close(zh);
    zk_sandbox("stop", ensdir, NULL, 0);
    return check_report("it_limits_faults");
}
