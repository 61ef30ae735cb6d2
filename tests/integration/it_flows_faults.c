/* Flows under faults (issue 41): a 3-member ensemble, three daemons, two consumers on each.
 * 100 flows of 100 children (queue a), their parents in queue b, every other one on=complete
 * (its parent delivered with its results: 100 acked, none dead). Meanwhile a consumer is cut
 * while it holds jobs (a worker killed), daemon 0 is killed with SIGKILL (its consumers go
 * with it) and the ZooKeeper leader is killed (an election). Judged from the consumers' own
 * stamps: every parent delivered and acked; none delivered before the last ack that settled
 * one of its children was sent (every ack sent counts but those answered as failed: an ack
 * whose answer was lost may have settled its child); a parent's first delivery once (a
 * second only as a redelivery after a fault); none stuck: at the end no job and no flow's
 * node is left. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NDAEMONS 3
#define NCONS (2 * NDAEMONS)
#define FLOWS 100
#define CHILDREN 100
#define HELD_MAX 64

static struct daemon_proc d[NDAEMONS];
static char root[128], ensdir[256];

struct flow {
    char parent[DEFERD_ID_SIZE + 8]; /* + "-r100.0" */
    int64_t last_ack_sent;      /* the latest ack of a child that may have settled it */
    int64_t first_delivery;     /* the parent's, 0: not yet */
    int first_attempts;         /* deliveries of the parent with attempt 1 */
    int acked;                  /* the parent's ack answered OK */
    int ack_unknown;            /* its ack unanswered when its connection went: it may have
                                 * settled it (then its job is gone from ZooKeeper) */
};
static struct flow flows[FLOWS];

struct cons {
    deferd_client *c;
    int daemon;
    struct { char id[DEFERD_ID_SIZE]; int flow; int64_t sent; int parent; } acks[HELD_MAX * 4];
    int nacks;
};
static struct cons cons[NCONS];

static void connect_cons(struct cons *k, int daemon)
{
    *k = (struct cons){.c = client(&d[daemon]), .daemon = daemon};
    CHECK(k->c && deferd_subscribe(k->c, "a,b", 16) == DEFERD_OK);
}

/* The connection goes: acks sent and not answered may have settled their jobs. */
static void drop_cons(struct cons *k)
{
    deferd_close(k->c);
    k->c = NULL;
    k->nacks = 0;
}

static int flow_of(const deferd_job *job)
{
    int f = atoi((const char *)job->payload);
    return f >= 0 && f < FLOWS ? f : 0;
}

static void count_unanswered(struct cons *k);

/* Answers of acks: a failed one did not settle its job; UNAVAILABLE (ZooKeeper away:
 * nothing changed, the job still held) is sent again, as a worker does; after any other
 * the job comes again. */
static void collect(struct cons *k)
{
    char id[DEFERD_ID_SIZE];
    int rc;
    while (k->c && deferd_acks_outstanding(k->c) > 0 &&
           (rc = deferd_ack_recv(k->c, id, sizeof id, 0)) != DEFERD_ETIMEDOUT) {
        for (int i = 0; i < k->nacks; i++) {
            if (strcmp(k->acks[i].id, id) != 0)
                continue;
            if (rc == DEFERD_ESERVER &&
                strcmp(deferd_last_error_code(k->c), "UNAVAILABLE") == 0 &&
                deferd_ack_send(k->c, id) == DEFERD_OK) {
                k->acks[i].sent = now_ms();
                break;
            }
            struct flow *f = &flows[k->acks[i].flow];
            if (rc == DEFERD_OK && k->acks[i].parent)
                f->acked = 1;
            else if (rc == DEFERD_OK && k->acks[i].sent > f->last_ack_sent)
                f->last_ack_sent = k->acks[i].sent;
            k->acks[i] = k->acks[--k->nacks];
            break;
        }
        if (rc != DEFERD_OK && rc != DEFERD_ESERVER) { /* the connection broke */
            count_unanswered(k);
            drop_cons(k);
            return;
        }
    }
}

/* Acks not answered when their connection went: each may have settled its job. */
static void count_unanswered(struct cons *k)
{
    for (int i = 0; i < k->nacks; i++) {
        struct flow *f = &flows[k->acks[i].flow];
        if (k->acks[i].parent)
            f->ack_unknown = 1;
        else if (k->acks[i].sent > f->last_ack_sent)
            f->last_ack_sent = k->acks[i].sent;
    }
}

static void take(struct cons *k)
{
    deferd_job job;
    if (!k->c || k->nacks >= HELD_MAX || deferd_next_job(k->c, &job, 1) != DEFERD_OK)
        return;
    int f = flow_of(&job), parent = strcmp(job.queue, "b") == 0;
    int64_t now = now_ms();
    if (parent) {
        CHECK_STR(job.id, flows[f].parent);
        if (!flows[f].first_delivery)
            flows[f].first_delivery = now;
        flows[f].first_attempts += job.attempt == 1;
        if (now < flows[f].last_ack_sent)
            printf("faults: flow %d: parent delivered %lld ms before its last child's ack\n",
                   f, (long long)(flows[f].last_ack_sent - now));
        CHECK(now >= flows[f].last_ack_sent);
    }
    snprintf(k->acks[k->nacks].id, DEFERD_ID_SIZE, "%s", job.id);
    k->acks[k->nacks].flow = f;
    k->acks[k->nacks].parent = parent;
    k->acks[k->nacks].sent = now;
    if (deferd_ack_send(k->c, job.id) == DEFERD_OK)
        k->nacks++;
    deferd_job_clear(&job);
}

static int flows_left(zhandle_t *zh)
{
    char dir[300];
    struct String_vector sv = {0};
    snprintf(dir, sizeof dir, "%s/flows", root);
    if (zoo_get_children(zh, dir, 0, &sv) != ZOK)
        return -1;
    int n = sv.count;
    deallocate_String_vector(&sv);
    return n;
}

static void put_flows(deferd_client *p)
{
    static deferd_put_item items[CHILDREN + 1];
    static char payloads[FLOWS][8];
    for (int f = 0; f < FLOWS; f++) {
        snprintf(payloads[f], sizeof payloads[f], "%d", f);
        for (int i = 0; i <= CHILDREN; i++)
            items[i] = (deferd_put_item){.queue = i ? "a" : "b", .payload = payloads[f],
                                         .len = strlen(payloads[f])};
        int rc = deferd_put_flow(p, items, CHILDREN + 1, f % 2 ? "complete" : "success");
        if (rc != DEFERD_OK)
            printf("faults: flow %d: %s\n", f, deferd_last_error(p));
        CHECK(rc == DEFERD_OK);
        /* on=complete: released with how its children ended (none dead here) */
        snprintf(flows[f].parent, sizeof flows[f].parent, "%s%s", items[0].id, f % 2 ? "-r100.0" : "");
    }
}

int main(void)
{
    harness_init("flows_faults", root, sizeof root);
    if (zk_ensemble_start(ensdir, sizeof ensdir) != 0)
        return 1;
    /* a delivery whose ack went nowhere comes again after its lease: 10 s, as the sessions */
    const char *const ov[] = {"zookeeper.session_timeout=10s", "queue.a.ttr=10s",
                              "queue.b.ttr=10s", NULL};
    if (daemons_start(d, NDAEMONS, root, ov) != 0)
        return 1;
    deferd_client *p = client(&d[1]);
    put_flows(p);
    deferd_close(p);
    for (int k = 0; k < NCONS; k++)
        connect_cons(&cons[k], k % NDAEMONS);
    zhandle_t *zh = zk_connect();
    int64_t t0 = now_ms(), deadline = t0 + 60000, next_count = t0 + 2000;
    int stage = 0, done = 0, member = -1;
    while (!done && now_ms() < deadline) {
        for (int k = 0; k < NCONS; k++) {
            for (int j = 0; j < 8; j++)
                take(&cons[k]);
            collect(&cons[k]);
        }
        int64_t t = now_ms() - t0;
        if (stage == 0 && t > 1000) { /* a worker killed: the one with most acks unanswered */
            int v = 1;
            for (int k = 1; k < NCONS; k++)
                if (cons[k].c && cons[k].nacks > cons[v].nacks)
                    v = k;
            printf("faults: consumer %d cut with %d acks unanswered at %lld ms\n", v,
                   cons[v].nacks, (long long)t);
            count_unanswered(&cons[v]);
            drop_cons(&cons[v]);
            connect_cons(&cons[v], cons[v].daemon == 0 ? 1 : cons[v].daemon);
            stage = 1;
        } else if (stage == 1 && t > 2500) { /* daemon 0 killed: its consumers go */
            daemon_kill(&d[0], SIGKILL);
            for (int k = 0; k < NCONS; k++)
                if (cons[k].daemon == 0 && cons[k].c) {
                    count_unanswered(&cons[k]);
                    drop_cons(&cons[k]);
                }
            printf("faults: daemon 0 killed at %lld ms\n", (long long)t);
            stage = 2;
        } else if (stage == 2 && t > 4500) {
            member = zk_kill_leader(ensdir);
            char dir[300];
            CHECK(member >= 0);
            snprintf(dir, sizeof dir, "%s/node%d", ensdir, member);
            CHECK(zk_sandbox("restart", dir, NULL, 0) == 0);
            printf("faults: leader (member %d) killed and restarted at %lld ms\n", member,
                   (long long)(now_ms() - t0));
            stage = 3;
        }
        if (stage == 3 && now_ms() >= next_count) {
            int all = 1; /* an unknown ack's parent must be gone, as every job (below) */
            for (int f = 0; f < FLOWS && all; f++)
                all = flows[f].acked || flows[f].ack_unknown;
            int fl = flows_left(zh), ja = zk_count_jobs(zh, root, "a"),
                jb = zk_count_jobs(zh, root, "b");
            if (fl < 0 || ja < 0 || jb < 0) { /* this test's own session, cut by the election */
                zookeeper_close(zh);
                zh = zk_connect();
            }
            done = all && fl == 0 && ja == 0 && jb == 0;
            next_count = now_ms() + 500;
        }
    }
    int delivered = 0, acked = 0, unknown = 0, twice = 0;
    for (int f = 0; f < FLOWS; f++) {
        delivered += flows[f].first_delivery != 0;
        acked += flows[f].acked;
        unknown += !flows[f].acked && flows[f].ack_unknown;
        twice += flows[f].first_attempts > 1;
        if (!flows[f].acked)
            printf("faults: flow %d: parent %s not acked here (%s), %d first deliveries\n", f,
                   flows[f].parent, flows[f].ack_unknown ? "an ack unanswered at a cut" :
                   "no ack answered", flows[f].first_attempts);
    }
    printf("faults: %d flows of %d children in %lld ms: %d parents delivered, %d acked, %d "
           "acked at a cut, %d delivered twice as a first attempt\n", FLOWS, CHILDREN,
           (long long)(now_ms() - t0), delivered, acked, unknown, twice);
    printf("faults: left: %d flows, %d jobs in a, %d in b\n", flows_left(zh),
           zk_count_jobs(zh, root, "a"), zk_count_jobs(zh, root, "b"));
    CHECK(stage == 3 && done);
    CHECK(delivered == FLOWS && acked + unknown == FLOWS && twice == 0);
    CHECK(flows_left(zh) == 0);
    for (int k = 0; k < NCONS; k++)
        if (cons[k].c)
            drop_cons(&cons[k]);
    for (int i = 0; i < NDAEMONS; i++) /* daemon 0 too, when a failure came before its kill */
        daemon_kill(&d[i], SIGTERM);
    zookeeper_close(zh);
    zk_sandbox("stop", ensdir, NULL, 0);
    return check_report("it_flows_faults");
}
