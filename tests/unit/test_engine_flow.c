/* A flow's child settled (src/daemon/engine/flow.c through settle.c) over the scripted
 * store: the flow read first, the child's marker deleted and the counts set by version in
 * the ack's own transaction; another daemon counting first (BadVersion: read again, sent
 * again); the last child releasing the parent (its payload read, the flow's nodes deleted,
 * the parent created); the marker gone (counted already: settled without the flow); the
 * parent's bucket missing (made, sent again); a dead child of on=success sending the parent
 * to the dead letters. */
#include <string.h>

#include "check.h"
#include "dispatcher.h"
#include "engine_harness.h"
#include "fake_zkstore.h"

#define QUEUES "[queue a]\nttr = 10s\nmax_attempts = 1\n[queue b]\n"
#define FLOW "00000000000000ff"
#define PARENT "b/1790000000000-5-00000000000000ff"

static struct flow_counts counts(void)
{
    struct flow_counts fc;
    dispatcher_flow_counts(harness_ds(), &fc);
    return fc;
}

/* Answers call I, a get of the flow's node, with its counts at VERSION. */
static void flow_read(int i, const char *on, int pending, int acked, int dead, int version)
{
    char data[300];
    snprintf(data, sizeof data, "on=%s pending=%d acked=%d dead=%d parent=" PARENT, on,
             pending, acked, dead);
    struct zk_result res = {.rc = ZOK, .has_stat = 1, .data = data,
                            .datalen = (int)strlen(data)};
    res.stat.version = version;
    fake_zk_answer(harness_zs(), i, &res);
    harness_turn();
}

static void parent_read(int i)
{
    struct zk_result res = {.rc = ZOK, .has_stat = 1, .data = "assemble", .datalen = 8};
    fake_zk_answer(harness_zs(), i, &res);
    harness_turn();
}

static const char *delivered_child(void)
{
    harness_next_in_flow(FLOW);
    return harness_delivered("a");
}

/* Not the last: marker and counts in the ack's transaction; another daemon counted first:
 * read again, sent again with the new version. */
static void test_child_counted(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = delivered_child();
    struct harness_reply *r = harness_ack(c, id);
    CHECK(harness_multis() == 0 && harness_calls() == 1 && !r->done);
    CHECK_STR(harness_call_what(0), "get flow");
    flow_read(0, "success", 3, 0, 0, 5);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, delete marker, "
                                    "set flow");
    const struct fake_multi *m = fake_zk_multi(harness_zs(), 0);
    CHECK(m && m->versions[4] == 5 && m->versions[3] == -1);
    CHECK_STR(m ? m->datas[4] : "", "on=success pending=2 acked=1 dead=0 parent=" PARENT);
    harness_multi_fails(0, 4, ZBADVERSION);
    CHECK(counts().conflicts == 1 && !r->done);
    CHECK_STR(harness_call_what(0), "get flow");
    flow_read(0, "success", 2, 1, 0, 6);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, delete marker, "
                                    "set flow");
    m = fake_zk_multi(harness_zs(), 0);
    CHECK(m && m->versions[4] == 6);
    CHECK_STR(m ? m->datas[4] : "", "on=success pending=1 acked=2 dead=0 parent=" PARENT);
    harness_multi_ok(0, 1);
    CHECK(r->done && strcmp(r->line, "OK") == 0);
    CHECK(counts().released == 0 && harness_state(id) == -1);
    harness_stop();
}

/* Children of one flow settled here one after the other: the first reads the flow, the
 * next take the version and counts the one before leaves (no read, no conflict), sent while
 * the first is still unanswered; the last reads again (the parent's payload). A failed
 * settle drops what the daemon knew: the next reads. */
static void test_cached_counts(void)
{
    harness_start("[queue a]\nttr = 10s\n[queue b]\n");
    struct conn *c = harness_consumer("a", 4);
    const char *k1 = delivered_child(), *k2 = delivered_child(), *k3 = delivered_child();
    struct harness_reply *r1 = harness_ack(c, k1);
    flow_read(0, "success", 3, 0, 0, 5);
    struct harness_reply *r2 = harness_ack(c, k2);
    CHECK(harness_calls() == 0 && harness_multis() == 2);
    const struct fake_multi *m = fake_zk_multi(harness_zs(), 1);
    CHECK(m && m->nops == 5 && m->versions[4] == 6);
    CHECK_STR(m ? m->datas[4] : "", "on=success pending=1 acked=2 dead=0 parent=" PARENT);
    harness_multi_ok(0, 1);
    harness_multi_ok(0, 1);
    CHECK(r1->done && r2->done && counts().conflicts == 0);
    struct harness_reply *r3 = harness_ack(c, k3);
    CHECK(harness_multis() == 0 && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get flow");
    flow_read(0, "success", 1, 2, 0, 7);
    parent_read(0);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, delete marker, "
                                    "delete flow parent, delete flow, create job2");
    harness_multi_ok(0, 1);
    CHECK(r3->done && counts().released == 1);
    harness_stop();
}

/* Two children acked while the flow is being read: one read; the second waits for it and
 * takes the version the first leaves. A BadVersion (another daemon counted) makes the next
 * settle read again, once for both. */
static void test_one_read_at_a_time(void)
{
    harness_start("[queue a]\nttr = 10s\n[queue b]\n");
    struct conn *c = harness_consumer("a", 4);
    const char *k1 = delivered_child(), *k2 = delivered_child(), *k3 = delivered_child();
    struct harness_reply *r1 = harness_ack(c, k1), *r2 = harness_ack(c, k2);
    CHECK(harness_calls() == 1 && harness_multis() == 0);
    flow_read(0, "success", 5, 0, 0, 5);
    /* both in one multi (txnbatch): the second's set follows the first's */
    CHECK(harness_calls() == 0 && harness_multis() == 1);
    const struct fake_multi *m = fake_zk_multi(harness_zs(), 0);
    CHECK(m && m->nops == 10 && m->versions[4] == 5 && m->versions[9] == 6);
    harness_multi_fails(0, 9, ZBADVERSION); /* another daemon counted one in between */
    CHECK(!r1->done && !r2->done);          /* k1 rolled back and sent again; k2 reads */
    CHECK(harness_multis() == 1 && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "get flow");
    harness_multi_ok(0, 1);
    CHECK(r1->done && !r2->done);
    struct harness_reply *r3 = harness_ack(c, k3);
    CHECK(harness_calls() == 1 && harness_multis() == 0); /* waits for k2's read */
    flow_read(0, "success", 3, 2, 0, 7);
    m = fake_zk_multi(harness_zs(), 0);
    CHECK(harness_multis() == 1 && m && m->nops == 10 && m->versions[4] == 7 &&
          m->versions[9] == 8);
    harness_multi_ok(0, 1);
    CHECK(r2->done && r3->done && counts().conflicts == 1);
    harness_stop();
}

/* The last child: the parent's payload read, the flow's nodes deleted and the parent
 * created as a job, all in the ack's transaction. */
static void test_last_child_releases(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = delivered_child();
    struct harness_reply *r = harness_ack(c, id);
    flow_read(0, "success", 1, 4, 0, 9);
    CHECK_STR(harness_call_what(0), "get flow parent");
    parent_read(0);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, delete marker, "
                                    "delete flow parent, delete flow, create job2");
    const struct fake_multi *m = fake_zk_multi(harness_zs(), 0);
    CHECK(m && m->nops == 7 && strstr(m->paths[6], "/queues/b/jobs/") &&
          strstr(m->paths[6], "/1790000000000-5-00000000000000ff") && m->versions[5] == 9);
    CHECK_STR(m ? m->datas[6] : "", "assemble");
    harness_multi_ok(0, 1);
    CHECK(r->done && counts().released == 1 && counts().dead_lettered == 0);
    harness_stop();
}

/* The marker is gone (the child was counted already, or the flow cancelled and made
 * again): the ack goes without the flow. */
static void test_marker_gone(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = delivered_child();
    struct harness_reply *r = harness_ack(c, id);
    flow_read(0, "success", 2, 0, 0, 1);
    harness_multi_fails(0, 3, ZNONODE);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job");
    harness_multi_ok(0, 1);
    CHECK(r->done && strcmp(r->line, "OK") == 0);
    harness_stop();
}

/* No flow node at all: settled as a plain job, no multi tried with it. */
static void test_flow_gone(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = delivered_child();
    struct harness_reply *r = harness_ack(c, id);
    harness_call_rc(0, ZNONODE);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job");
    harness_multi_ok(0, 1);
    CHECK(r->done && strcmp(r->line, "OK") == 0);
    harness_stop();
}

/* The parent's bucket does not exist yet: made, then the same transaction again. */
static void test_parent_bucket_missing(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = delivered_child();
    struct harness_reply *r = harness_ack(c, id);
    flow_read(0, "complete", 1, 0, 2, 3);
    parent_read(0);
    harness_multi_fails(0, 6, ZNONODE);
    CHECK(!r->done && harness_calls() == 1);
    CHECK_STR(harness_call_what(0), "parents job2");
    harness_call_rc(0, ZOK);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, delete marker, "
                                    "delete flow parent, delete flow, create job2");
    harness_multi_ok(0, 1);
    CHECK(r->done && counts().released == 1);
    harness_stop();
}

/* on=success: the last child dead-lettered (max_attempts 1) sends the parent to its
 * queue's dead letters, in the same transaction as its own move there. */
static void test_dead_child(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = delivered_child();
    struct harness_reply *r = harness_nack(c, id, -1);
    CHECK_STR(harness_call_what(0), "get flow");
    flow_read(0, "success", 1, 3, 0, 2);
    parent_read(0);
    CHECK_STR(harness_multi_ops(0), "delete owner, delete lock, delete job, create dead, "
                                    "delete marker, delete flow parent, delete flow, create dead");
    const struct fake_multi *m = fake_zk_multi(harness_zs(), 0);
    CHECK(m && strstr(m->paths[7], "/queues/b/dead/"));
    harness_multi_ok(0, 1);
    CHECK(r->done && counts().dead_lettered == 1 && counts().released == 0);
    harness_stop();
}

int main(void)
{
    test_child_counted();
    test_cached_counts();
    test_one_read_at_a_time();
    test_last_child_releases();
    test_marker_gone();
    test_flow_gone();
    test_parent_bucket_missing();
    test_dead_child();
    return check_report("unit.engine_flow");
}
