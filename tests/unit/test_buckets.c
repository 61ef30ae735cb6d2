/* Known buckets (src/daemon/engine/buckets.c): a bounded memory, the oldest added forgotten
 * first; puts counted per known bucket. */
#include "buckets.h"
#include "check.h"

int main(void)
{
    struct buckets *b = buckets_new(3);
    CHECK(b != NULL);
    CHECK(!buckets_known(b, "/q/jobs/1"));
    CHECK(buckets_count_put(b, "/q/jobs/1") == 0);
    CHECK(!buckets_known(b, "/q/jobs/1")); /* counting does not make it known */
    buckets_add(b, "/q/jobs/1");
    buckets_add(b, "/q/jobs/2");
    buckets_add(b, "/q/jobs/3");
    CHECK(buckets_known(b, "/q/jobs/1") && buckets_known(b, "/q/jobs/2") &&
          buckets_known(b, "/q/jobs/3"));
    CHECK(buckets_count_put(b, "/q/jobs/2") == 0);
    CHECK(buckets_count_put(b, "/q/jobs/2") == 1);
    CHECK(buckets_count_put(b, "/q/jobs/2") == 2);
    buckets_add(b, "/q/jobs/1"); /* known: no second entry, no new age */
    buckets_add(b, "/q/jobs/4"); /* over capacity: the oldest, 1, is forgotten */
    CHECK(!buckets_known(b, "/q/jobs/1"));
    CHECK(buckets_known(b, "/q/jobs/2") && buckets_known(b, "/q/jobs/3") &&
          buckets_known(b, "/q/jobs/4"));
    CHECK(buckets_count_put(b, "/q/jobs/2") == 3); /* its count kept */
    buckets_add(b, "/q/jobs/5");
    buckets_add(b, "/q/jobs/6");
    CHECK(!buckets_known(b, "/q/jobs/2") && !buckets_known(b, "/q/jobs/3"));
    CHECK(buckets_known(b, "/q/jobs/4") && buckets_known(b, "/q/jobs/5") &&
          buckets_known(b, "/q/jobs/6"));
    buckets_add(b, "/q/jobs/2"); /* again after it was forgotten: a count from 0 */
    CHECK(buckets_count_put(b, "/q/jobs/2") == 0 && !buckets_known(b, "/q/jobs/4"));
    buckets_free(b);
    buckets_free(NULL);

    /* capacity 0 is taken as 1: the newest only */
    b = buckets_new(0);
    buckets_add(b, "/a");
    CHECK(buckets_known(b, "/a"));
    buckets_add(b, "/b");
    CHECK(!buckets_known(b, "/a") && buckets_known(b, "/b"));
    buckets_free(b);

    /* many: never more than the capacity, always the newest */
    b = buckets_new(100);
    char path[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(path, sizeof path, "/q/jobs/%d", i);
        buckets_add(b, path);
    }
    int known = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(path, sizeof path, "/q/jobs/%d", i);
        known += buckets_known(b, path);
    }
    CHECK(known == 100);
    CHECK(buckets_known(b, "/q/jobs/900") && buckets_known(b, "/q/jobs/999"));
    CHECK(!buckets_known(b, "/q/jobs/899"));
    buckets_free(b);
    return check_report("buckets");
}
