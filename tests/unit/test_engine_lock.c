/* The lock (src/daemon/engine/lock.c) over the scripted store: its transaction, the payload
 * read after it, a job gone (NoNode), a lock another daemon holds (NodeExists: CHECKING
 * with a watch, then HELD until the watch fires), our own lock found by that check, a lost
 * answer, and locks taken ahead of the due time (ARMED) given back by a pause. */
#include "check.h"
#include "engine_harness.h"

#define QUEUES "[queue a]\nttr = 10s\n"

/* A due job and a consumer with room: one multi, then the push. */
static void test_lock_then_push(void)
{
    harness_start(QUEUES);
    struct conn *c = harness_consumer("a", 1);
    const char *id = harness_listed("a", 0, 0, 1);
    CHECK(harness_state(id) == JS_LOCKING);
    CHECK(harness_multis() == 1);
    CHECK_STR(harness_multi_ops(0), "check job, create lock, create-seq owner");
    CHECK(c->njobs == 0);
    harness_multi_ok(0, 1);
    CHECK(harness_state(id) == JS_INFLIGHT);
    CHECK(c->njobs == 1);
    CHECK_STR(c->jobs[0].id, id);
    CHECK(c->jobs[0].attempt == 1 && c->jobs[0].ttr_ms == 10000);
    harness_stop();
}

int main(void)
{
    test_lock_then_push();
    return check_report("unit.engine_lock");
}
