/* The lock-ahead window (src/daemon/engine/ahead.c): nothing before a consumer answered
 * and a lock was measured; then the answer rate times AHEAD_RTTS round trips (Little's
 * law), at least one; capped by the credits; forgotten two buckets after the answers stop. */
#include "ahead.h"
#include "check.h"

/* N answers spread evenly over [FROM, FROM + SPAN) ms. */
static void answers(struct ahead *a, int64_t from, int64_t span, int n)
{
    for (int i = 0; i < n; i++)
        ahead_answered(a, from + span * i / n);
}

static void test_nothing_unmeasured(void)
{
    struct ahead a = {0};
    CHECK(ahead_window(&a, 1000, 64) == 0); /* no answer, no round trip */
    answers(&a, 1000, 100, 50);
    CHECK(ahead_window(&a, 1100, 64) == 0); /* answers, but no lock measured yet */
    ahead_lock_rtt(&a, 0);                  /* an instant answer is a measure */
    CHECK(ahead_window(&a, 1100, 64) == 1);
}

static void test_little(void)
{
    struct ahead a = {0};
    ahead_lock_rtt(&a, 20000); /* 20 ms */
    answers(&a, 1000, 200, 2000); /* 10 a ms over 200 ms */
    /* at 1200: buckets [1100, 1200) and [1200, ...): 1,000 answers over 100 ms, 10 a ms;
     * 10/ms x 4 x 20 ms = 800, plus the one */
    uint64_t w = ahead_window(&a, 1200, 1000);
    CHECK(w >= 790 && w <= 810);
    CHECK(ahead_window(&a, 1200, 32) == 32 * AHEAD_PER_CREDIT); /* the credits cap it */
    /* a slow consumer (8 threads, 10 ms a job): 80 answers in 100 ms, a 3 ms lock: about
     * 10 jobs ahead, not its 16 credits' worth */
    struct ahead slow = {0};
    ahead_lock_rtt(&slow, 3000);
    answers(&slow, 5000, 100, 80);
    CHECK(ahead_window(&slow, 5100, 16) == 10);
}

static void test_rtt_average(void)
{
    struct ahead a = {0};
    ahead_lock_rtt(&a, 8000);
    CHECK(a.rtt_us == 8000);
    ahead_lock_rtt(&a, 16000); /* one slow multi moves it an eighth of the way */
    CHECK(a.rtt_us == 9000);
    ahead_lock_rtt(&a, -5); /* a clock that went back: ignored */
    CHECK(a.rtt_us == 9000);
}

static void test_answers_stop(void)
{
    struct ahead a = {0};
    ahead_lock_rtt(&a, 10000);
    answers(&a, 1000, 100, 100);
    CHECK(ahead_window(&a, 1150, 100) > 0);
    CHECK(ahead_window(&a, 1000 + 3 * AHEAD_BUCKET_MS, 100) == 0); /* none lately */
    CHECK(ahead_window(&a, 500, 100) == 0); /* the clock stepped back: a fresh count */
}

int main(void)
{
    test_nothing_unmeasured();
    test_little();
    test_rtt_average();
    test_answers_stop();
    return check_report("unit.ahead");
}
